"""fastgrad.scipy.stats.beta: the beta distribution.

pdf/logpdf: differentiable w.r.t. x, a, b, loc, scale.  cdf/logcdf/sf/logsf: w.r.t. x, loc
and scale; not w.r.t. ``a``/``b`` (SciPy has no derivative of the incomplete beta function
with respect to its parameters)."""

import scipy.stats as _st

from ...numpy import numpy_wrapper as anp
from ..special import digamma
from ._base import LocScaleFamily, install

family = LocScaleFamily(
    _st.beta,
    ["a", "b"],
    dz=lambda z, a, b: (a - 1.0) / z - (b - 1.0) / (1.0 - z),
    dshapes=[
        lambda z, a, b: anp.log(z) - digamma(a) + digamma(a + b),
        lambda z, a, b: anp.log1p(-z) - digamma(b) + digamma(a + b),
    ],
)
__all__ = install(globals(), family)
