"""fastgrad.scipy.stats.multivariate_normal: logpdf and pdf differentiable w.r.t. ``x``,
``mean`` and ``cov``; entropy w.r.t. ``cov`` (it does not depend on ``mean``).

``x`` holds points along its last axis, as in SciPy (for a 1-dimensional distribution a
1-d ``x`` is a list of points).  A scalar or 1-d ``cov`` (a multiple of the identity, a
diagonal) is accepted as in SciPy.  With ``allow_singular=True`` and a singular ``cov``
the values are SciPy's, the derivatives w.r.t. ``x`` and ``mean`` use the pseudo-inverse
(SciPy's quadratic form on the support), and a derivative w.r.t. ``cov`` is a
NotImplementedError (the density is not differentiable there; autograd raises it for every
``cov`` once ``allow_singular=True``)."""

import scipy.stats as _st
import numpy as onp

from ...core import defjvp, defvjp_direct
from ...numpy import linalg as _linalg, numpy_wrapper as anp
from ...numpy._shapes import match, unbroadcast
from ...tracer import getval, isbox, primitive
from ..linalg import inv, T

_mvn = _st.multivariate_normal


def _logpdf_raw(x, mean, cov, allow_singular):
    return _mvn.logpdf(x, mean, cov, allow_singular=allow_singular)


def _pdf_raw(x, mean, cov, allow_singular):
    return _mvn.pdf(x, mean, cov, allow_singular=allow_singular)


def _entropy_raw(mean, cov):
    return _mvn.entropy(mean, cov)


_logpdf_raw.__name__ = "logpdf"
_pdf_raw.__name__ = "pdf"
_entropy_raw.__name__ = "entropy"
_logpdf = primitive(_logpdf_raw)
_pdf = primitive(_pdf_raw)
_entropy = primitive(_entropy_raw)


def _dim(cov):
    return onp.shape(getval(cov))[-1]


def _parts(x, mean, cov, allow_singular):
    """(r, sol, Cinv, rshape): r = x - mean as (N, d) rows, sol = rows of Cinv r.  With
    allow_singular, Cinv is the pseudo-inverse, as in SciPy's density on the support of a
    singular cov (the quadratic form it uses)."""
    d = _dim(cov)
    r = x if mean is None else x - mean
    rshape = onp.shape(getval(r))
    r = anp.reshape(r, (-1, d))
    Cinv = _linalg.pinv(cov, hermitian=True) if allow_singular else inv(cov)
    return r, anp.matmul(r, T(Cinv)), Cinv, rshape


def _require_nonsingular(cov):
    c = onp.asarray(getval(cov))
    if onp.linalg.matrix_rank(c, hermitian=True) < c.shape[-1]:
        raise NotImplementedError(
            "multivariate_normal: no derivative w.r.t. a singular covariance matrix "
            "(allow_singular=True): the density is not differentiable there; derivatives "
            "w.r.t. x and mean are available"
        )


def _weights(g, ans, scaled):
    w = g * ans if scaled else g
    return anp.reshape(w, (-1, 1))


def _rules(prim, scaled):
    def vjp_x(g, ans, x, mean, cov, allow_singular):
        r, sol, Cinv, rshape = _parts(x, mean, cov, allow_singular)
        return unbroadcast(anp.reshape(-_weights(g, ans, scaled) * sol, rshape), x)

    def vjp_mean(g, ans, x, mean, cov, allow_singular):
        r, sol, Cinv, rshape = _parts(x, mean, cov, allow_singular)
        return unbroadcast(anp.reshape(_weights(g, ans, scaled) * sol, rshape), mean)

    def vjp_cov(g, ans, x, mean, cov, allow_singular):
        if allow_singular:
            _require_nonsingular(cov)
        r, sol, Cinv, rshape = _parts(x, mean, cov, allow_singular)
        w = _weights(g, ans, scaled)
        return -0.5 * (anp.sum(w) * T(Cinv) - anp.matmul(T(w * sol), sol))

    def _out(v, ans):
        if scaled:
            v = v * anp.reshape(ans, (-1,))
        return match(anp.reshape(v, onp.shape(getval(ans))), ans)

    def jvp_x(t, ans, x, mean, cov, allow_singular):
        r, sol, Cinv, rshape = _parts(x, mean, cov, allow_singular)
        t = anp.reshape(anp.broadcast_to(t, rshape), (-1, _dim(cov)))
        return _out(-anp.sum(t * sol, axis=-1), ans)

    def jvp_mean(t, ans, x, mean, cov, allow_singular):
        r, sol, Cinv, rshape = _parts(x, mean, cov, allow_singular)
        t = anp.reshape(anp.broadcast_to(t, rshape), (-1, _dim(cov)))
        return _out(anp.sum(t * sol, axis=-1), ans)

    def jvp_cov(t, ans, x, mean, cov, allow_singular):
        if allow_singular:
            _require_nonsingular(cov)
        r, sol, Cinv, rshape = _parts(x, mean, cov, allow_singular)
        quad = anp.sum(sol * anp.matmul(sol, T(t)), axis=-1)
        return _out(-0.5 * (anp.sum(T(Cinv) * t) - quad), ans)

    defvjp_direct(prim, vjp_x, vjp_mean, vjp_cov, None)
    defjvp(prim, jvp_x, jvp_mean, jvp_cov, None)


_rules(_logpdf, False)
_rules(_pdf, True)
defvjp_direct(_entropy, None, lambda g, ans, mean, cov: 0.5 * g * T(inv(cov)))
defjvp(_entropy, None, lambda t, ans, mean, cov: match(0.5 * anp.sum(T(inv(cov)) * t), ans))


def _dims(mean, cov):
    if mean is not None and onp.ndim(getval(mean)) > 0:
        return onp.shape(getval(mean))[-1]
    if onp.ndim(getval(cov)) > 0:
        return onp.shape(getval(cov))[-1]
    return 1


def _as_matrix(mean, cov):
    """A traced scalar or 1-d ``cov`` as the matrix SciPy means by it."""
    nd = onp.ndim(getval(cov))
    if nd == 2:
        return cov
    d = _dims(mean, cov)
    if nd == 0:
        return cov * onp.eye(d)
    return anp.reshape(cov, (-1, 1)) * onp.eye(d)


def _prep(x, mean, cov):
    if isbox(cov) and onp.ndim(getval(cov)) < 2:
        cov = _as_matrix(mean, cov)
    elif (isbox(x) or isbox(mean)) and onp.ndim(getval(cov)) < 2:
        cov = _as_matrix(mean, onp.asarray(cov, dtype=float))
    return cov


def logpdf(x, mean=None, cov=1, allow_singular=False):
    """Log density of the multivariate normal at the points ``x`` (last axis)."""
    return _logpdf(x, mean, _prep(x, mean, cov), allow_singular)


def pdf(x, mean=None, cov=1, allow_singular=False):
    """Density of the multivariate normal at the points ``x`` (last axis)."""
    return _pdf(x, mean, _prep(x, mean, cov), allow_singular)


def entropy(mean=None, cov=1):
    """Differential entropy of the multivariate normal (depends on ``cov`` only)."""
    if isbox(cov) and onp.ndim(getval(cov)) < 2:
        cov = _as_matrix(mean, cov)
    return _entropy(mean, cov)


__all__ = ["logpdf", "pdf", "entropy"]
