"""fastgrad.scipy.stats.laplace: the Laplace distribution, differentiable w.r.t. x, loc and
scale (pdf, logpdf, cdf, logcdf, sf, logsf); at x == loc the derivative of the density
is taken as 0 (the mean of the one-sided ones)."""

import scipy.stats as _st

from ...numpy import numpy_wrapper as anp
from ._base import LocScaleFamily, install

family = LocScaleFamily(_st.laplace, [], dz=lambda z: -anp.sign(z))
__all__ = install(globals(), family)
