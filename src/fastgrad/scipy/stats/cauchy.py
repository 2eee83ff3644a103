"""fastgrad.scipy.stats.cauchy: the Cauchy distribution, differentiable w.r.t. x, loc and
scale (pdf, logpdf, cdf, logcdf, sf, logsf)."""

import scipy.stats as _st

from ._base import LocScaleFamily, install

family = LocScaleFamily(_st.cauchy, [], dz=lambda z: -2.0 * z / (1.0 + z * z))
__all__ = install(globals(), family)
