"""fastgrad.scipy.stats.lognorm: the log-normal distribution, differentiable w.r.t. x, s,
loc and scale in every method (pdf, logpdf, cdf, logcdf, sf, logsf)."""

import math

import scipy.stats as _st

from ...numpy import numpy_wrapper as anp
from ._base import LocScaleFamily, install

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _dz(z, s):
    return -(1.0 + anp.log(z) / (s * s)) / z


def _ds(z, s):
    lz = anp.log(z)
    return -1.0 / s + lz * lz / (s * s * s)


def _dcdf_ds(z, s):
    u = anp.log(z) / s  # cdf = Phi(u)
    return -anp.exp(-0.5 * u * u - _LOG_SQRT_2PI) * u / s


family = LocScaleFamily(_st.lognorm, ["s"], dz=_dz, dshapes=[_ds], dcdf_shapes=[_dcdf_ds])
__all__ = install(globals(), family)
