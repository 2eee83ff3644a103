"""fastgrad.scipy.special: SciPy's special functions with VJP and JVP rules.

Every function is a primitive around the SciPy function of the same name.  The rules are
partial derivatives written with traced functions (this module's and fastgrad.numpy's), so
they can be differentiated again.  Arguments SciPy gives no derivative for (the parameters
``a``/``b`` of the incomplete beta and gamma functions, the orders of the Bessel functions,
integer orders) have no rule: differentiating w.r.t. them raises NotImplementedError.

The SciPy ufuncs are also registered with fastgrad.numpy, so calling the plain SciPy ufunc
(``scipy.special.erf(x)``) on a traced value is traced too.
"""

import math

import numpy as onp
import scipy.special as _sps

from .. import _backends
from ..core import defjvp, defvjp_direct
from ..numpy import numpy_wrapper as anp
from ..numpy._shapes import match, unbroadcast
from ..tracer import getval, primitive
from ._util import MISSING, def_elementwise, make_wrapper

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)

__all__ = """beta betainc betaln polygamma psi digamma gamma gammaln gammainc gammaincc
gammasgn rgamma multigammaln j0 y0 j1 y1 jn yn i0 i1 iv ive erf erfc erfinv erfcinv logit
expit logsumexp xlogy xlog1py entr ndtr log_ndtr ndtri softmax log_softmax erfcx
log_expit""".split()


def _wrap(name):
    f = getattr(_sps, name)
    p = primitive(f)
    if isinstance(f, onp.ufunc):
        anp.ufunc_wrappers[f] = p
    return p


# ---------------------------------------------------------------------------------------
# Gamma, beta and related functions

gamma = _wrap("gamma")
gammaln = _wrap("gammaln")
gammasgn = _wrap("gammasgn")
rgamma = _wrap("rgamma")
digamma = _wrap("digamma")
psi = digamma if _sps.psi is _sps.digamma else _wrap("psi")


def _polygamma_raw(n, x):
    # SciPy's polygamma is Python code that converts x to a NumPy array: another library's
    # array gets the same formula in SciPy's ufuncs, which reach that library by dispatch
    if not _backends.is_foreign(x):
        return _sps.polygamma(n, x)
    if type(n) is int:
        return _sps.digamma(x) if n == 0 else (-1.0) ** (n + 1) * math.factorial(n) * _sps.zeta(n + 1, x)
    if not _backends.is_foreign(n):
        n = _backends.backend_of(x).from_numpy(onp.asarray(n))
    return onp.where(n == 0, _sps.digamma(x), (-1.0) ** (n + 1) * _sps.gamma(n + 1.0) * _sps.zeta(n + 1, x))


_polygamma_raw.__name__ = _polygamma_raw.__qualname__ = "polygamma"
_polygamma_raw.__module__ = __name__
_polygamma = primitive(_polygamma_raw)
_multigammaln = _wrap("multigammaln")
# Python functions in SciPy, so their arguments can be given by keyword: keep them traced
polygamma = make_wrapper("polygamma", ["n", "x"], (), _polygamma, _sps.polygamma.__doc__)
multigammaln = make_wrapper("multigammaln", ["a", "d"], (), _multigammaln, _sps.multigammaln.__doc__)
beta = _wrap("beta")
betaln = _wrap("betaln")
betainc = _wrap("betainc")
gammainc = _wrap("gammainc")
gammaincc = _wrap("gammaincc")

def_elementwise(gamma, lambda ans, x: ans * digamma(x))
def_elementwise(gammaln, lambda ans, x: digamma(x))
def_elementwise(gammasgn, None)
def_elementwise(rgamma, lambda ans, x: -ans * digamma(x))
def_elementwise(digamma, lambda ans, x: _polygamma(1, x))
if psi is not digamma:
    def_elementwise(psi, lambda ans, x: _polygamma(1, x))
def_elementwise(_polygamma, MISSING, lambda ans, n, x: _polygamma(n + 1, x))


def _multigammaln_partial(ans, a, d):
    total = digamma(a)
    for j in range(1, int(d)):
        total = total + digamma(a - 0.5 * j)
    return total


def_elementwise(_multigammaln, _multigammaln_partial, MISSING)


def _beta_partial_a(ans, a, b):
    return ans * (digamma(a) - digamma(a + b))


def _beta_partial_b(ans, a, b):
    return ans * (digamma(b) - digamma(a + b))


def_elementwise(beta, _beta_partial_a, _beta_partial_b)
def_elementwise(betaln, lambda ans, a, b: digamma(a) - digamma(a + b), lambda ans, a, b: digamma(b) - digamma(a + b))


def _betainc_partial_x(ans, a, b, x):
    # the integrand of the regularized incomplete beta function
    return anp.exp(xlogy(a - 1, x) + xlog1py(b - 1, -x) - betaln(a, b))


def_elementwise(betainc, MISSING, MISSING, _betainc_partial_x)


def _gammainc_partial_x(ans, a, x):
    return anp.exp(xlogy(a - 1, x) - x - gammaln(a))


def_elementwise(gammainc, MISSING, _gammainc_partial_x)
def_elementwise(gammaincc, MISSING, lambda ans, a, x: -_gammainc_partial_x(ans, a, x))

# ---------------------------------------------------------------------------------------
# Bessel functions (derivatives w.r.t. x only: SciPy has no derivative w.r.t. the order)

j0, y0, j1, y1 = _wrap("j0"), _wrap("y0"), _wrap("j1"), _wrap("y1")
jn, yn = _wrap("jn"), _wrap("yn")
i0, i1, iv, ive = _wrap("i0"), _wrap("i1"), _wrap("iv"), _wrap("ive")

def_elementwise(j0, lambda ans, x: -j1(x))
def_elementwise(y0, lambda ans, x: -y1(x))
def_elementwise(j1, lambda ans, x: 0.5 * (j0(x) - jn(2, x)))
def_elementwise(y1, lambda ans, x: 0.5 * (y0(x) - yn(2, x)))
def_elementwise(jn, MISSING, lambda ans, n, x: 0.5 * (jn(n - 1, x) - jn(n + 1, x)))
def_elementwise(yn, MISSING, lambda ans, n, x: 0.5 * (yn(n - 1, x) - yn(n + 1, x)))
def_elementwise(i0, lambda ans, x: i1(x))
def_elementwise(i1, lambda ans, x: 0.5 * (i0(x) + iv(2, x)))
def_elementwise(iv, MISSING, lambda ans, v, x: 0.5 * (iv(v - 1, x) + iv(v + 1, x)))
# ive(v, x) = iv(v, x) * exp(-|x|) for real x
def_elementwise(ive, MISSING, lambda ans, v, x: 0.5 * (ive(v - 1, x) + ive(v + 1, x)) - anp.sign(x) * ans)

# ---------------------------------------------------------------------------------------
# Error functions, logistic functions, normal distribution functions

erf, erfc, erfinv, erfcinv, erfcx = (_wrap(n) for n in ("erf", "erfc", "erfinv", "erfcinv", "erfcx"))
logit, expit, log_expit = _wrap("logit"), _wrap("expit"), _wrap("log_expit")
ndtr, log_ndtr, ndtri = _wrap("ndtr"), _wrap("log_ndtr"), _wrap("ndtri")
xlogy, xlog1py, entr = _wrap("xlogy"), _wrap("xlog1py"), _wrap("entr")

def_elementwise(erf, lambda ans, x: (2.0 / _SQRT_PI) * anp.exp(-x * x))
def_elementwise(erfc, lambda ans, x: (-2.0 / _SQRT_PI) * anp.exp(-x * x))
def_elementwise(erfinv, lambda ans, x: (_SQRT_PI / 2.0) * anp.exp(ans * ans))
def_elementwise(erfcinv, lambda ans, x: (-_SQRT_PI / 2.0) * anp.exp(ans * ans))
def_elementwise(erfcx, lambda ans, x: 2.0 * x * ans - 2.0 / _SQRT_PI)
def_elementwise(logit, lambda ans, x: 1.0 / (x * (1.0 - x)))
def_elementwise(expit, lambda ans, x: ans * (1.0 - ans))
def_elementwise(log_expit, lambda ans, x: expit(-x))
def_elementwise(ndtr, lambda ans, x: anp.exp(-0.5 * x * x - _LOG_SQRT_2PI))
def_elementwise(log_ndtr, lambda ans, x: anp.exp(-0.5 * x * x - _LOG_SQRT_2PI - ans))
def_elementwise(ndtri, lambda ans, x: anp.exp(0.5 * ans * ans + _LOG_SQRT_2PI))
def_elementwise(xlogy, lambda ans, x, y: anp.log(y), lambda ans, x, y: x / y)
def_elementwise(xlog1py, lambda ans, x, y: anp.log1p(y), lambda ans, x, y: x / (1.0 + y))
def_elementwise(entr, lambda ans, x: -(anp.log(x) + 1.0))


# ---------------------------------------------------------------------------------------
# Reductions along axes: logsumexp, softmax, log_softmax


def _kept_shape(full_shape, axis):
    nd = len(full_shape)
    if axis is None:
        axes = range(nd)
    elif isinstance(axis, (int, onp.integer)):
        axes = [int(axis) % nd] if nd else []
    else:
        axes = [int(a) % nd for a in axis]
    return tuple(1 if i in axes else n for i, n in enumerate(full_shape))


def _full_shape(a, b):
    sa = onp.shape(getval(a))
    return sa if b is None else onp.broadcast_shapes(sa, onp.shape(getval(b)))


def _keep(x, full_shape, axis):
    """A reduced result ``x`` reshaped so that it broadcasts against the unreduced input."""
    kept = _kept_shape(full_shape, axis)
    if onp.shape(getval(x)) != kept:
        x = anp.reshape(x, kept)
    return x


def _lse_sign(a, b, axis, keepdims):
    """The sign of sum(b * exp(a)) (a constant: no gradient)."""
    if b is None:
        return None
    return _sps.logsumexp(getval(a), axis=axis, b=getval(b), keepdims=True, return_sign=True)[1]


def _lse_raw(a, b, axis, keepdims):
    return _sps.logsumexp(a, axis=axis, b=b, keepdims=keepdims)


def _lse_abs_raw(a, b, axis, keepdims):
    return _sps.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)[0]


_lse_raw.__name__ = _lse_raw.__qualname__ = "logsumexp"
_lse_abs_raw.__name__ = _lse_abs_raw.__qualname__ = "logsumexp"
_logsumexp = primitive(_lse_raw)
_logsumexp_abs = primitive(_lse_abs_raw)


def _lse_weights(ans, a, b, axis, keepdims):
    """exp(a - ans) * sign, shaped like the broadcast of a and b (d ans / d b)."""
    full = _full_shape(a, b)
    e = anp.exp(a - _keep(ans, full, axis))
    s = _lse_sign(a, b, axis, keepdims)
    if s is not None:
        e = e * s
    return e, full


def _lse_vjp_a(g, ans, a, b, axis, keepdims):
    e, full = _lse_weights(ans, a, b, axis, keepdims)
    w = e if b is None else e * b
    return unbroadcast(_keep(g, full, axis) * w, a)


def _lse_vjp_b(g, ans, a, b, axis, keepdims):
    e, full = _lse_weights(ans, a, b, axis, keepdims)
    return unbroadcast(_keep(g, full, axis) * e, b)


def _lse_jvp_a(t, ans, a, b, axis, keepdims):
    e, full = _lse_weights(ans, a, b, axis, keepdims)
    w = e if b is None else e * b
    return match(anp.sum(t * w, axis=axis, keepdims=keepdims), ans)


def _lse_jvp_b(t, ans, a, b, axis, keepdims):
    e, full = _lse_weights(ans, a, b, axis, keepdims)
    return match(anp.sum(t * e, axis=axis, keepdims=keepdims), ans)


for _p in (_logsumexp, _logsumexp_abs):
    defvjp_direct(_p, _lse_vjp_a, _lse_vjp_b)
    defjvp(_p, _lse_jvp_a, _lse_jvp_b)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) along ``axis``, as scipy.special.logsumexp.

    Differentiable w.r.t. ``a`` and ``b`` (also when ``b`` is passed by keyword); with
    ``return_sign=True`` returns ``(log|sum|, sign)`` and the sign has no gradient."""
    if return_sign:
        sign = _sps.logsumexp(
            getval(a), axis=axis, b=None if b is None else getval(b), keepdims=keepdims, return_sign=True
        )[1]
        return _logsumexp_abs(a, b, axis, keepdims), sign
    return _logsumexp(a, b, axis, keepdims)


logsumexp.__doc__ = logsumexp.__doc__ + "\n\nSciPy's documentation:\n" + (_sps.logsumexp.__doc__ or "")

_softmax = _wrap("softmax")
_log_softmax = _wrap("log_softmax")
softmax = make_wrapper("softmax", ["x", "axis"], (None,), _softmax, _sps.softmax.__doc__)
log_softmax = make_wrapper("log_softmax", ["x", "axis"], (None,), _log_softmax, _sps.log_softmax.__doc__)


def _softmax_vjp(g, ans, x, axis=None):
    return ans * (g - anp.sum(g * ans, axis=axis, keepdims=True))


def _log_softmax_vjp(g, ans, x, axis=None):
    return g - anp.exp(ans) * anp.sum(g, axis=axis, keepdims=True)


def _log_softmax_jvp(t, ans, x, axis=None):
    return t - anp.sum(anp.exp(ans) * t, axis=axis, keepdims=True)


defvjp_direct(_softmax, _softmax_vjp)
defjvp(_softmax, _softmax_vjp)  # the Jacobian of softmax is symmetric
defvjp_direct(_log_softmax, _log_softmax_vjp)
defjvp(_log_softmax, _log_softmax_jvp)
