"""fastgrad.scipy.stats.dirichlet: logpdf and pdf differentiable w.r.t. ``x`` and
``alpha``; ``rvs`` (random samples) without gradient.

``x`` holds the components along its first axis, as in SciPy (shape (k,) or (k, n)); a
``x`` with k - 1 components gets the last one filled in as 1 - sum (differentiably)."""

import scipy.stats as _st
import numpy as onp

from ...numpy import numpy_wrapper as anp
from ...tracer import getval, isbox, notrace_primitive, primitive
from ..special import digamma
from ...core import defjvp, defvjp_direct
from ...numpy._shapes import match, unbroadcast


def _raw(method):
    f = getattr(_st.dirichlet, method)

    def raw(x, alpha):
        return f(x, alpha)

    raw.__name__ = raw.__qualname__ = method
    return primitive(raw)


_logpdf = _raw("logpdf")
_pdf = _raw("pdf")


def _col(alpha, x):
    """``alpha`` shaped to broadcast along the first axis of ``x``."""
    extra = onp.ndim(getval(x)) - 1
    return anp.reshape(alpha, onp.shape(getval(alpha)) + (1,) * extra) if extra > 0 else alpha


def _dx(ans, x, alpha):
    return (_col(alpha, x) - 1.0) / x


def _dalpha(ans, x, alpha):
    return anp.log(x) + digamma(anp.sum(_col(alpha, x), axis=0, keepdims=True)) - digamma(_col(alpha, x))


def _rules(prim, scale):
    """``scale(ans)``: 1 for logpdf, the pdf for pdf."""

    def vjp_x(g, ans, x, alpha):
        return unbroadcast(g * scale(ans) * _dx(ans, x, alpha), x)

    def vjp_alpha(g, ans, x, alpha):
        d = g * scale(ans) * _dalpha(ans, x, alpha)
        if onp.ndim(getval(x)) > 1:
            d = anp.sum(anp.reshape(d, (onp.shape(getval(x))[0], -1)), axis=1)
        return unbroadcast(d, alpha)

    def jvp_x(t, ans, x, alpha):
        return match(scale(ans) * anp.sum(t * _dx(ans, x, alpha), axis=0), ans)

    def jvp_alpha(t, ans, x, alpha):
        return match(scale(ans) * anp.sum(_col(t, x) * _dalpha(ans, x, alpha), axis=0), ans)

    defvjp_direct(prim, vjp_x, vjp_alpha)
    defjvp(prim, jvp_x, jvp_alpha)


_rules(_logpdf, lambda ans: 1.0)
_rules(_pdf, lambda ans: ans)


def _complete(x, alpha):
    """Fill in the last component when ``x`` has one fewer than ``alpha``."""
    k = onp.shape(getval(alpha))[-1]
    if isbox(x) and onp.shape(getval(x))[0] == k - 1:
        last = 1.0 - anp.sum(x, axis=0, keepdims=True)
        x = anp.concatenate([x, last], axis=0)
    return x


def logpdf(x, alpha):
    """Log of the Dirichlet density at ``x`` (components along the first axis)."""
    return _logpdf(_complete(x, alpha), alpha)


def pdf(x, alpha):
    """The Dirichlet density at ``x`` (components along the first axis)."""
    return _pdf(_complete(x, alpha), alpha)


rvs = notrace_primitive(_st.dirichlet.rvs)
__all__ = ["logpdf", "pdf", "rvs"]
