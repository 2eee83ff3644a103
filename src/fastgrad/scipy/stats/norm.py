"""fastgrad.scipy.stats.norm: the normal distribution, differentiable w.r.t. x, loc and scale
(pdf, logpdf, cdf, logcdf, sf, logsf)."""

import scipy.stats as _st

from ._base import LocScaleFamily, install

family = LocScaleFamily(_st.norm, [], dz=lambda z: -z)
__all__ = install(globals(), family)
