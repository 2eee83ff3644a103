"""fastgrad.scipy.stats.gamma: the gamma distribution.

pdf/logpdf: differentiable w.r.t. x, a, loc, scale.  cdf/logcdf/sf/logsf: w.r.t. x, loc
and scale; not w.r.t. ``a`` (SciPy has no derivative of the incomplete gamma function with
respect to its parameter)."""

import scipy.stats as _st

from ...numpy import numpy_wrapper as anp
from ..special import digamma
from ._base import LocScaleFamily, install

family = LocScaleFamily(
    _st.gamma, ["a"], dz=lambda z, a: (a - 1.0) / z - 1.0, dshapes=[lambda z, a: anp.log(z) - digamma(a)]
)
__all__ = install(globals(), family)
