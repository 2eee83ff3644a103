"""fastgrad.scipy.stats.expon: the exponential distribution, differentiable w.r.t. x, loc
and scale (pdf, logpdf, cdf, logcdf, sf, logsf)."""

import scipy.stats as _st

from ._base import LocScaleFamily, install

family = LocScaleFamily(_st.expon, [], dz=lambda z: -1.0 + 0.0 * z)
__all__ = install(globals(), family)
