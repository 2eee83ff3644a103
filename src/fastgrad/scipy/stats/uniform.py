"""fastgrad.scipy.stats.uniform: the uniform distribution on [loc, loc + scale],
differentiable w.r.t. x, loc and scale (pdf, logpdf, cdf, logcdf, sf, logsf) inside the
support; the kinks at its ends get the one-sided derivative SciPy's value is continuous from."""
import scipy.stats as _st

from ._base import LocScaleFamily, install

family = LocScaleFamily(_st.uniform, [], dz=lambda z: 0.0 * z)
__all__ = install(globals(), family)
