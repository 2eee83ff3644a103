"""fastgrad.scipy.stats.chi2: the chi-squared distribution.

pdf/logpdf: differentiable w.r.t. x, df, loc, scale.  cdf/logcdf/sf/logsf: w.r.t. x, loc
and scale; not w.r.t. ``df`` (SciPy has no derivative of the incomplete gamma function with
respect to its parameter)."""

import math

import scipy.stats as _st

from ...numpy import numpy_wrapper as anp
from ..special import digamma
from ._base import LocScaleFamily, install

_HALF_LOG2 = 0.5 * math.log(2.0)
family = LocScaleFamily(
    _st.chi2,
    ["df"],
    dz=lambda z, df: (0.5 * df - 1.0) / z - 0.5,
    dshapes=[lambda z, df: 0.5 * anp.log(z) - _HALF_LOG2 - 0.5 * digamma(0.5 * df)],
)
__all__ = install(globals(), family)
