"""fastgrad.scipy.stats.logistic: the logistic distribution, differentiable w.r.t. x, loc
and scale (pdf, logpdf, cdf, logcdf, sf, logsf)."""

import scipy.stats as _st

from ...numpy import numpy_wrapper as anp
from ._base import LocScaleFamily, install

family = LocScaleFamily(_st.logistic, [], dz=lambda z: -anp.tanh(0.5 * z))
__all__ = install(globals(), family)
