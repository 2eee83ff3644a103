"""fastgrad.scipy.stats.t: Student's t distribution.

pdf/logpdf: differentiable w.r.t. x, df, loc, scale.  cdf/logcdf/sf/logsf: w.r.t. x, loc
and scale; not w.r.t. ``df`` (SciPy has no derivative of the incomplete beta function with
respect to its parameters)."""

import scipy.stats as _st

from ...numpy import numpy_wrapper as anp
from ..special import digamma
from ._base import LocScaleFamily, install


def _dz(z, df):
    return -(df + 1.0) * z / (df + z * z)


def _ddf(z, df):
    z2 = z * z
    return (
        0.5 * (digamma(0.5 * (df + 1.0)) - digamma(0.5 * df))
        - 0.5 / df
        - 0.5 * anp.log1p(z2 / df)
        + (df + 1.0) * z2 / (2.0 * df * (df + z2))
    )


family = LocScaleFamily(_st.t, ["df"], dz=_dz, dshapes=[_ddf])
__all__ = install(globals(), family)
