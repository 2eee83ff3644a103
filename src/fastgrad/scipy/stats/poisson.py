"""fastgrad.scipy.stats.poisson: the Poisson distribution (pmf, logpmf, cdf, logcdf, sf,
logsf), differentiable w.r.t. ``mu``.  ``k`` and ``loc`` are integers: no derivative."""

import scipy.stats as _st
import numpy as onp

from ...numpy import numpy_wrapper as anp
from ...tracer import getval, primitive
from .._util import MISSING, def_elementwise
from ..special import gammaln, xlogy
from ._base import make_wrapper

_METHODS = ("pmf", "logpmf", "cdf", "logcdf", "sf", "logsf")


def _primitive(method):
    f = getattr(_st.poisson, method)

    def raw(k, mu, loc):
        return f(k, mu, loc=loc)

    raw.__name__ = raw.__qualname__ = method
    return primitive(raw)


_prims = {m: _primitive(m) for m in _METHODS}


def _shifted(k, loc):
    return onp.asarray(getval(k)) - onp.asarray(getval(loc))


def _logpmf_at_floor(k, mu, loc):
    """log pmf(floor(k - loc); mu) (the term the cdf loses or gains as mu moves)."""
    m = onp.floor(_shifted(k, loc))
    return xlogy(m, mu) - mu - gammaln(m + 1), m


def _d_logpmf(ans, k, mu, loc):
    return _shifted(k, loc) / mu - 1.0


def _d_pmf(ans, k, mu, loc):
    return ans * (_shifted(k, loc) / mu - 1.0)


def _d_cdf(sign, is_log):
    def d(ans, k, mu, loc):
        lp, m = _logpmf_at_floor(k, mu, loc)
        val = anp.exp(lp - ans) if is_log else anp.exp(lp)
        val = sign * val
        if onp.any(m < 0):
            val = anp.where3(m >= 0, val, 0.0)
        return val

    return d


def_elementwise(_prims["logpmf"], MISSING, _d_logpmf, MISSING)
def_elementwise(_prims["pmf"], MISSING, _d_pmf, MISSING)
def_elementwise(_prims["cdf"], MISSING, _d_cdf(-1.0, False), MISSING)
def_elementwise(_prims["logcdf"], MISSING, _d_cdf(-1.0, True), MISSING)
def_elementwise(_prims["sf"], MISSING, _d_cdf(1.0, False), MISSING)
def_elementwise(_prims["logsf"], MISSING, _d_cdf(1.0, True), MISSING)

for _m in _METHODS:
    globals()[_m] = make_wrapper(
        _m, ["k", "mu", "loc"], (0,), _prims[_m], "poisson.{}(k, mu, loc=0) with gradients w.r.t. mu".format(_m)
    )
__all__ = list(_METHODS)
