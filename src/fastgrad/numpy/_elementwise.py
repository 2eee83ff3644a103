"""Rules of NumPy's elementwise functions (ufuncs and their kin), both modes in one entry.

Each entry gives a function's products ``product(t, ans, *args) = t * d ans / d args[i]``
(``_registration.def_elementwise``): the reverse rule multiplies the cotangent, the
forward rule the tangent, by the same derivative.  That is autograd's convention for
complex numbers: the cotangent of a real function L at a complex z is dL/dx - i dL/dy, so a
holomorphic f pulls ``g`` back to ``g * f'(z)`` (no conjugation), as its tangent is
``f'(z) dz``.  Non-holomorphic functions (abs, real, imag, angle) give each mode its own.

The operator primitives (``x * y`` on a box) share their ufunc's entry.  Products compute
with fastgrad.numpy primitives and operators, so that they can be differentiated again;
the compiled engine replaces the commonest ones by C kernels on float64 scalars
(``_scalar_kernels.REVERSE`` names their expressions, which must stay these).

Conventions where the derivative does not exist: ties of maximum/minimum/fmax/fmin share
the cotangent evenly; abs, hypot and angle at 0 have the subgradient 0; power's derivative
w.r.t. the exponent where the base is <= 0 (real) is 0.
"""

import math

import numpy as onp

from ..tracer import getval
from .._engine import engine as _engine
from . import numpy_wrapper as anp
from ._registration import ANS, ANS_ARGS, ARGS, NOTHING, def_elementwise, def_rules, def_unary
from ._shapes import (
    arrays_for_lists,
    as_dtype,
    data_of,
    dtype_of,
    fit,
    is_complex,
    may_hold_true,
    real_dtype,
    shape_of,
    traced_sequence,
    unbroadcast,
)

_ndarray = onp.ndarray
_float64 = onp.float64
_same_layout = _engine.same_layout
# NumPy's log of the base, as autograd's rules take it (the C library's may differ by an ulp
# from a NumPy whose SIMD log is not correctly rounded there: NumPy 1.25 with AVX-512, log(10))
_LOG2 = float(onp.log(2.0))
_LOG10 = float(onp.log(10.0))
_PI = math.pi

# primitives used by the rules, bound once
_where, _real, _imag, _conj, _sign = anp.where3, anp.real, anp.imag, anp.conjugate, anp.sign
_floor, _trunc, _isfinite = anp.floor, anp.trunc, anp.isfinite
_cos, _sin, _cosh, _sinh, _sqrt, _log, _exp = anp.cos, anp.sin, anp.cosh, anp.sinh, anp.sqrt, anp.log, anp.exp


# A product's temporary (an array it has just made) can take its last operation in place
# when the other operand is a plain array of the same shape and dtype: the same values
# (the operation commutes or keeps its order), one large allocation fewer (W4).
def _fresh(d, t):
    return type(d) is _ndarray and type(t) is _ndarray and _same_layout(d, t)


def _times_t(d, t):
    """``t * d`` for a fresh array d."""
    if type(d) is _ndarray and type(t) is _ndarray and _same_layout(d, t):  # (_fresh, inline: sin, tanh)
        d *= t
        return d
    return t * d


def _t_over(t, d):
    """``t / d`` for a fresh array d."""
    if _fresh(d, t):
        return onp.divide(t, d, out=d)
    return t / d


def _one_minus_square(ans):
    """``1 - ans * ans``."""
    d = ans * ans
    if type(d) is _ndarray:
        return onp.subtract(1, d, out=d)
    return 1 - d


def _nonzero_or_one(ans):
    """``ans`` with its zeros replaced by 1 (a divisor for ``x / |x|``-like factors, whose
    numerator is 0 where ``ans`` is), or ``ans`` itself when it has no zero."""
    zero = getval(ans) == 0
    if may_hold_true(zero):
        return _where(zero, 1.0, ans)
    return ans


# ---------------------------------------------------------------------------------------
# Functions of one argument: the result has the argument's shape.  A product serves as
# both rules as it is (``def_unary``), so it takes the call's other arguments (a ufunc's
# out=, where=, ...), which do not change the derivative.

def_unary(anp.negative, lambda t, ans, x, *args, **kwargs: -t, NOTHING)
def_unary(anp.positive, lambda t, ans, x, *args, **kwargs: t, NOTHING)
def_unary(anp.exp, lambda t, ans, x, *args, **kwargs: t * ans, ANS)
def_unary(anp.exp2, lambda t, ans, x, *args, **kwargs: t * ans * _LOG2, ANS)
def_unary(anp.expm1, lambda t, ans, x, *args, **kwargs: t * (ans + 1), ANS)
def_unary(anp.log, lambda t, ans, x, *args, **kwargs: t / x)
# (t / x / log(b), autograd's order and bits: t / (x * log(b)) would underflow for x below
# about 3e-308, and NumPy would report it)
def_unary(anp.log2, lambda t, ans, x, *args, **kwargs: t / x / _LOG2)
def_unary(anp.log10, lambda t, ans, x, *args, **kwargs: t / x / _LOG10)
def_unary(anp.log1p, lambda t, ans, x, *args, **kwargs: _t_over(t, x + 1))


def _sin_product(t, ans, x, *args, **kwargs):
    return _times_t(_cos(x), t)


def _cos_product(t, ans, x, *args, **kwargs):
    d = _sin(x)
    if _fresh(d, t):  # -t * sin(x) == -(t * sin(x)), bit for bit
        d *= t
        return onp.negative(d, out=d)
    return -t * d


def_unary(anp.sin, _sin_product)
def_unary(anp.cos, _cos_product)
def_unary(anp.tan, lambda t, ans, x, *args, **kwargs: t / _cos(x) ** 2)
def_unary(anp.arcsin, lambda t, ans, x, *args, **kwargs: t / _sqrt(1 - x**2))
def_unary(anp.arccos, lambda t, ans, x, *args, **kwargs: -t / _sqrt(1 - x**2))
def_unary(anp.arctan, lambda t, ans, x, *args, **kwargs: t / (1 + x**2))
def_unary(anp.sinh, lambda t, ans, x, *args, **kwargs: t * _cosh(x))
def_unary(anp.cosh, lambda t, ans, x, *args, **kwargs: t * _sinh(x))
def_unary(anp.tanh, lambda t, ans, x, *args, **kwargs: _times_t(_one_minus_square(ans), t), ANS)
def_unary(anp.arcsinh, lambda t, ans, x, *args, **kwargs: t / _sqrt(x**2 + 1))
# sqrt(x-1) sqrt(x+1) rather than sqrt(x**2-1): the same for real x >= 1, and the right
# branch for complex x
def_unary(anp.arccosh, lambda t, ans, x, *args, **kwargs: t / (_sqrt(x - 1) * _sqrt(x + 1)))
def_unary(anp.arctanh, lambda t, ans, x, *args, **kwargs: t / (1 - x**2))
def_unary(anp.sqrt, lambda t, ans, x, *args, **kwargs: t * 0.5 / ans, ANS)
def_unary(anp.cbrt, lambda t, ans, x, *args, **kwargs: t / (3 * ans**2), ANS)
def_unary(anp.square, lambda t, ans, x, *args, **kwargs: t * 2 * x)
def_unary(anp.reciprocal, lambda t, ans, x, *args, **kwargs: -t * ans**2, ANS)
for _f in (anp.rad2deg, anp.degrees):
    def_unary(_f, lambda t, ans, x, *args, **kwargs: t * (180.0 / _PI), NOTHING)
for _f in (anp.deg2rad, anp.radians):
    def_unary(_f, lambda t, ans, x, *args, **kwargs: t * (_PI / 180.0), NOTHING)
def_unary(anp.conjugate, lambda t, ans, x, *args, **kwargs: _conj(t), NOTHING)


def _sinc_deriv(ans, x):
    # sinc'(x) = (cos(pi x) - sinc(x)) / x, which cancels badly near 0: there (|x| < 0.01)
    # its Taylor polynomial, exact to round-off and with the right higher derivatives
    near_0 = onp.abs(getval(x)) < 0.01
    away = (_cos(_PI * x) - ans) / _where(near_0, 1.0, x)
    if not may_hold_true(near_0):
        return away
    x2 = x * x
    near = x * (x2 * (_PI**4 / 30.0 - x2 * (_PI**6 / 840.0)) - _PI**2 / 3.0)
    return _where(near_0, near, away)


def_unary(anp.sinc, lambda t, ans, x: t * _sinc_deriv(ans, x), ANS_ARGS)
def_unary(anp.nan_to_num, lambda t, ans, x, *args, **kwargs: _where(_isfinite(x), t, 0.0))


# abs: the derivative of |z| along a complex dz is Re(conj(z) dz) / |z| (0 at z = 0); the
# cotangent of z is g conj(z) / |z|, not the same product
def _abs_reverse(g, ans, x, *args, **kwargs):
    if is_complex(x):
        return g * _conj(x) / _nonzero_or_one(ans)
    return g * _sign(x)


def _abs_forward(t, ans, x, *args, **kwargs):
    if is_complex(x):
        return _real(_conj(x) * t) / _nonzero_or_one(ans)
    return t * _sign(x)


def_unary(anp.absolute, _abs_reverse, ANS_ARGS, forward=_abs_forward)
def_unary(anp.fabs, _abs_reverse, ANS_ARGS, forward=_abs_forward)


def _zero_on_reals(t):
    """Re(-i t): what the rules of imag and angle, functions constant on the reals, give
    for a real argument, as autograd's do: a zero of t's type (nan where t is not finite).
    Not None (no contribution), which would leave the gradient the type of its other
    contributions: grad's 0-d seed array, passed on by the x of imag(x) + x."""
    return _real(anp.multiply(-1j, t))


# real, imag: linear (over the reals); a complex x's cotangent is g + 0j, or -i g
def_rules(anp.real, [lambda g, ans, x: unbroadcast(g, x)], ["same"], uses=ARGS)
def_rules(
    anp.imag,
    [lambda g, ans, x: unbroadcast(-1j * g if is_complex(x) else _zero_on_reals(g), x)],
    ["same"],
    uses=ARGS,
)


# angle = Im(log z): the cotangent -i g / z, the tangent Im(dz / z) (0 at z = 0); constant
# on real arguments
def _angle_vjp(g, ans, z, deg=False):
    if not is_complex(z):
        return unbroadcast(_zero_on_reals(g), z)
    if deg:
        g = g * (180.0 / _PI)
    zero = getval(z) == 0
    if may_hold_true(zero):
        return unbroadcast(_where(zero, 0.0, -1j * g) / _where(zero, 1.0, z), z)
    return unbroadcast(-1j * g / z, z)


def _angle_jvp(t, ans, z, deg=False):
    if not is_complex(z):
        return fit(_zero_on_reals(t), ans)
    zero = getval(z) == 0
    if may_hold_true(zero):
        d = _where(zero, 0.0, _imag(t / _where(zero, 1.0, z)))
    else:
        d = _imag(t / z)
    if deg:
        d = d * (180.0 / onp.pi)
    return fit(d, ans)


def_rules(anp.angle, [_angle_vjp], [_angle_jvp], uses=ARGS)

# real_if_close: a real result of a complex x is its real part
def_rules(
    anp.real_if_close,
    [lambda g, ans, x, tol=100: unbroadcast(g, x)],
    [lambda t, ans, x, tol=100: fit(t, ans)],
    uses=ARGS,
)


# ---------------------------------------------------------------------------------------
# Functions of two arguments, with broadcasting

# (reads: the arguments each product reads the values of; nodes need only the shape and
# dtype of the others, so x + 1 and x * 2.0 over big arrays do not keep x)
def_elementwise(anp.add, lambda t, ans, x, y: t, lambda t, ans, x, y: t, reads=((), ()))
def_elementwise(anp.subtract, lambda t, ans, x, y: t, lambda t, ans, x, y: -t, reads=((), ()))
def_elementwise(anp.multiply, lambda t, ans, x, y: t * y, lambda t, ans, x, y: x * t, reads=((1,), (0,)))
def_elementwise(anp.true_divide, lambda t, ans, x, y: t / y, lambda t, ans, x, y: -t * x / y**2, reads=((1,), (0, 1)))
def_elementwise(anp.remainder, lambda t, ans, x, y: t, lambda t, ans, x, y: -t * _floor(x / y), reads=((), (0, 1)))
def_elementwise(anp.fmod, lambda t, ans, x, y: t, lambda t, ans, x, y: -t * _trunc(x / y), reads=((), (0, 1)))


def _power_deriv_base(x, y, power):
    """d(x**y)/dx = y x**(y-1); 0 where x == 0 and y == 0 (x**0 is constant), not 0 * inf.
    For a number y == 0 that is y * x, as autograd computes it (y * x**1): a zero of the
    type the other exponents give, nan where x is nan or infinite."""
    if type(y) is float or type(y) is int:
        if y == 0:
            return y * x
        if y == 2:
            return x * 2.0
        return y * power(x, y - 1)
    both_0 = onp.logical_and(getval(x) == 0, getval(y) == 0)
    xs = _where(both_0, 1.0, x) if may_hold_true(both_0) else x
    return y * power(xs, y - 1)


def _power_base(t, ans, x, y):
    x, y = arrays_for_lists((x, y))
    if type(y) is float or type(y) is int:
        if y == 0:
            return t * y * x  # (autograd's t * y * x**1, in its order)
        if y == 2:
            d = t * x  # (t * x) * 2.0, the second product in place
            if type(d) is _ndarray:
                d *= 2.0
                return d
            return d * 2.0
        return t * y * x ** (y - 1)
    return t * _power_deriv_base(x, y, anp.power)


def _float_power_base(t, ans, x, y):
    x, y = arrays_for_lists((x, y))
    return t * _power_deriv_base(x, y, anp.float_power)


def _log_base(x):
    """log(x) where the derivative of x**y w.r.t. y exists: x > 0 (real), x != 0 (complex);
    0 elsewhere."""
    v = getval(x)
    if (type(v) is float or type(v) is int or type(v) is _float64) and v > 0:
        return _log(x)  # (a positive real number: the general branch below gives the same)
    if is_complex(x):
        return _log(_where(x == 0, 1.0, x))
    if not may_hold_true(~(data_of(x) > 0)):  # (NaN counts as not positive)
        return _log(x)
    return _log(_where(x > 0, x, 1.0))


def _power_exponent(t, ans, x, y):
    x, y = arrays_for_lists((x, y))
    return t * ans * _log_base(x)


def_elementwise(anp.power, _power_base, _power_exponent, uses=ANS_ARGS)
def_elementwise(anp.float_power, _float_power_base, _power_exponent, uses=ANS_ARGS)


def _balanced_weight(x, other, ans):
    """Where x is the selected value (ties with ``other`` share it evenly), in x's real
    dtype."""
    xv, ov, av = getval(x), getval(other), getval(ans)
    dtype = real_dtype(dtype_of(x))
    w = as_dtype(xv == av, dtype)
    w = w / (1 + as_dtype(xv == ov, dtype))
    return w


for _f in (anp.maximum, anp.minimum, anp.fmax, anp.fmin):
    def_elementwise(
        _f,
        lambda t, ans, x, y: t * _balanced_weight(x, y, ans),
        lambda t, ans, x, y: t * _balanced_weight(y, x, ans),
        uses=ANS_ARGS,
    )

def_elementwise(
    anp.logaddexp, lambda t, ans, x, y: t * _exp(x - ans), lambda t, ans, x, y: t * _exp(y - ans), uses=ANS_ARGS
)
def_elementwise(
    anp.logaddexp2, lambda t, ans, x, y: t * 2.0 ** (x - ans), lambda t, ans, x, y: t * 2.0 ** (y - ans), uses=ANS_ARGS
)


def _arctan2_first(t, ans, x, y):
    x, y = arrays_for_lists((x, y))
    return t * y / (x**2 + y**2)


def _arctan2_second(t, ans, x, y):
    x, y = arrays_for_lists((x, y))
    return t * -x / (x**2 + y**2)


def_elementwise(anp.arctan2, _arctan2_first, _arctan2_second)
# hypot: x / hypot(x, y), and 0 where both are 0
def_elementwise(
    anp.hypot,
    lambda t, ans, x, y: t * x / _nonzero_or_one(ans),
    lambda t, ans, x, y: t * y / _nonzero_or_one(ans),
    uses=ANS_ARGS,
)


def _copysign_factor(x, y):
    """d copysign(x, y) / dx = sign(x) * (sign bit of y): piecewise constant."""
    xv, yv = getval(x), getval(y)
    return as_dtype(onp.sign(xv) * onp.copysign(1.0, yv), real_dtype(dtype_of(x)))


def_elementwise(anp.copysign, lambda t, ans, x, y: t * _copysign_factor(x, y), None)
def_elementwise(anp.ldexp, lambda t, ans, x, n: anp.ldexp(t, n), None)


# ---------------------------------------------------------------------------------------
# divmod and modf: tuple results (the quotient and the integral part are constant)


def _divmod_vjp_x(g, ans, x, y, *args, **kwargs):
    return unbroadcast(g[1], x)


def _divmod_vjp_y(g, ans, x, y, *args, **kwargs):
    return unbroadcast(-g[1] * _floor(x / y), y)


def _divmod_jvp(which):
    def rule(t, ans, x, y, *args, **kwargs):
        q, r = ans[0], ans[1]
        tr = fit(t, r) if which == 0 else fit(-t * _floor(x / y), r)
        return traced_sequence(tuple, [onp.zeros(shape_of(q), dtype_of(q)), tr])

    return rule


def_rules(anp.divmod, [_divmod_vjp_x, _divmod_vjp_y], [_divmod_jvp(0), _divmod_jvp(1)])


def _modf_vjp(g, ans, x, *args, **kwargs):
    return unbroadcast(g[0], x)


def _modf_jvp(t, ans, x, *args, **kwargs):
    return traced_sequence(tuple, [fit(t, ans[0]), onp.zeros(shape_of(ans[1]), dtype_of(ans[1]))])


def_rules(anp.modf, [_modf_vjp], [_modf_jvp])
