"""fastgrad.scipy.stats.uniform: the uniform distribution on [loc, loc + scale],
differentiable w.r.t. x, loc and scale (pdf, logpdf, cdf, logcdf, sf, logsf) inside the
support (at its two ends the functions have kinks)."""

import scipy.stats as _st

from ._base import LocScaleFamily, install

family = LocScaleFamily(_st.uniform, [], dz=lambda z: 0.0 * z)
__all__ = install(globals(), family)
