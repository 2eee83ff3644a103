"""Reverse-mode rules of fastgrad.numpy.

Each rule is ``rule(g, ans, *args, **kwargs) -> cotangent`` (``defvjp_direct``), applied in
the backward pass: nothing is prepared while recording.  Rules compute with fastgrad.numpy
primitives and operators, so that when ``g``, ``ans`` or the arguments are themselves
traced (higher-order derivatives) the rule is recorded too; shapes and dtypes are read
from the plain values.

``unbroadcast(g, x)`` turns the cotangent of a broadcast result into one for ``x``: it sums
over the broadcast axes and casts to ``x``'s dtype (a float32 input gets a float32
cotangent whatever it was combined with).
"""
import math

import numpy as onp

from ..core import defvjp_argnums, defvjp_direct, vspace
from ..tracer import Box, getval, primitive
from . import numpy_wrapper as anp
from .numpy_vspaces import array_vspace

_ndarray = onp.ndarray
_float64 = onp.float64
_F64 = onp.dtype(onp.float64)
_C128 = onp.dtype(onp.complex128)
_LOG2 = math.log(2.0)
_LOG10 = math.log(10.0)
_PI = math.pi

# primitives used by the rules, bound once
_sum, _reshape, _broadcast_to = anp.sum, anp.reshape, anp.broadcast_to
_transpose, _swapaxes, _expand_dims, _squeeze = anp.transpose, anp.swapaxes, anp.expand_dims, anp.squeeze
_dot, _matmul, _tensordot, _outer = anp.dot, anp.matmul, anp.tensordot, anp.outer
_where, _getitem, _untake, _astype = anp.where3, anp.getitem, anp.untake, anp.astype_method
_real, _conj, _sign, _floor, _trunc = anp.real, anp.conjugate, anp.sign, anp.floor, anp.trunc
_cos, _sin, _cosh, _sinh, _sqrt, _log, _exp = anp.cos, anp.sin, anp.cosh, anp.sinh, anp.sqrt, anp.log, anp.exp
_isfinite, _mean, _flip, _cumsum = anp.isfinite, anp.mean, anp.flip, anp.cumsum
_prod, _diagonal, _moveaxis = anp.prod, anp.diagonal, anp.moveaxis


# ---------------------------------------------------------------------------------------
# Shapes, dtypes, broadcasting

def _meta(x):
    """(shape, dtype) of an array, NumPy scalar, Python scalar or box."""
    t = type(x)
    if t is _ndarray or t is _float64:
        return x.shape, x.dtype
    if t is float:
        return (), _F64
    if t is complex:
        return (), _C128
    if isinstance(x, Box):
        return _meta(getval(x))
    try:
        return x.shape, x.dtype
    except AttributeError:
        a = onp.asarray(x)
        return a.shape, a.dtype


def _shape(x):
    return _meta(x)[0]


def _ndim(x):
    return len(_meta(x)[0])


def _is_complex(x):
    return _meta(x)[1].kind == "c"


def unbroadcast(g, target):
    """``g`` summed down to ``target``'s shape and cast to its dtype."""
    tg, tt = type(g), type(target)
    if tg is _float64:
        if tt is _float64 or tt is float:
            return g
    elif tg is _ndarray:
        if tt is _ndarray:
            if g.dtype is target.dtype and g.shape == target.shape:
                return g
        elif (tt is _float64 or tt is float) and g.dtype is _F64 and not g.shape:
            return g
    return _unbroadcast(g, target)


def _unbroadcast(g, target):
    tshape, tdtype = _meta(target)
    gshape, gdtype = _meta(g)
    if gshape != tshape:
        g = _sum_to_shape(g, gshape, tshape)
    if gdtype != tdtype:
        g = _cast(g, gdtype, tdtype)
    return g


def _sum_to_shape(g, gshape, tshape):
    lead = len(gshape) - len(tshape)
    if lead < 0 or any(t != 1 and t != s for t, s in zip(tshape, gshape[lead:])):
        # g is smaller than the target somewhere: broadcast it up first
        full = onp.broadcast_shapes(gshape, tshape)
        g = _broadcast_to(g, full)
        gshape, lead = full, len(full) - len(tshape)
    axes = tuple(range(lead)) + tuple(lead + i for i, t in enumerate(tshape)
                                      if t == 1 and gshape[lead + i] != 1)
    if axes:
        if type(g) is _ndarray:
            g = g.sum(axis=axes)
        else:
            g = _sum(g, axis=axes)
    if _shape(g) != tshape:
        g = g.reshape(tshape) if type(g) is _ndarray else _reshape(g, tshape)
    return g


def _cast(g, gdtype, tdtype):
    if tdtype.kind not in "fc":
        return g   # an integer target (e.g. through astype): leave the cotangent alone
    if gdtype.kind == "c" and tdtype.kind != "c":
        g = _real(g)
        gdtype = _meta(g)[1]
    if gdtype != tdtype:
        g = _astype(g, tdtype)
    return g


def _axes(axis, ndim):
    """``axis`` (None, int or tuple, negatives allowed) as a sorted tuple of axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, onp.integer)):
        return (int(axis) % ndim,) if ndim else ()
    return tuple(sorted(int(a) % ndim for a in axis))


def _expand_reduced(g, shape, axis, keepdims):
    """The cotangent of a reduction over ``axis``, repeated back to the input ``shape``."""
    if axis is not None and not keepdims:
        axes = _axes(axis, len(shape))
        kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
        if kept != _shape(g):
            g = _reshape(g, kept)
    if _shape(g) != shape:
        g = _broadcast_to(g, shape)
    return g


def _reduced_size(shape, axis):
    return math.prod(shape[i] for i in _axes(axis, len(shape)))


def _vs(x):
    return array_vspace(x) if type(x) is _ndarray else vspace(x)


def _defvjp(fun, *rules):
    """Register ``rules`` for the primitive ``fun`` and for the box-operator primitive of
    the same ufunc (numpy_wrapper.OPERATOR_PRIMITIVES), if it has one."""
    defvjp_direct(fun, *rules)
    op = anp.OPERATOR_PRIMITIVES.get(fun.fun)
    if op is not None:
        defvjp_direct(op, *rules)


# ---------------------------------------------------------------------------------------
# Elementwise unary functions

def _unary(fun, rule):
    _defvjp(fun, rule)


_unary(anp.negative, lambda g, ans, x, *a, **k: -g)
_unary(anp.positive, lambda g, ans, x, *a, **k: g)
_unary(anp.exp, lambda g, ans, x, *a, **k: g * ans)
_unary(anp.exp2, lambda g, ans, x, *a, **k: g * ans * _LOG2)
_unary(anp.expm1, lambda g, ans, x, *a, **k: g * (ans + 1))
_unary(anp.log, lambda g, ans, x, *a, **k: g / x)
_unary(anp.log2, lambda g, ans, x, *a, **k: g / (x * _LOG2))
_unary(anp.log10, lambda g, ans, x, *a, **k: g / (x * _LOG10))
_unary(anp.log1p, lambda g, ans, x, *a, **k: g / (x + 1))
_unary(anp.sin, lambda g, ans, x, *a, **k: g * _cos(x))
_unary(anp.cos, lambda g, ans, x, *a, **k: -g * _sin(x))
_unary(anp.tan, lambda g, ans, x, *a, **k: g / _cos(x) ** 2)
_unary(anp.arcsin, lambda g, ans, x, *a, **k: g / _sqrt(1 - x ** 2))
_unary(anp.arccos, lambda g, ans, x, *a, **k: -g / _sqrt(1 - x ** 2))
_unary(anp.arctan, lambda g, ans, x, *a, **k: g / (1 + x ** 2))
_unary(anp.sinh, lambda g, ans, x, *a, **k: g * _cosh(x))
_unary(anp.cosh, lambda g, ans, x, *a, **k: g * _sinh(x))
_unary(anp.tanh, lambda g, ans, x, *a, **k: g * (1 - ans * ans))
_unary(anp.arcsinh, lambda g, ans, x, *a, **k: g / _sqrt(x ** 2 + 1))
_unary(anp.arccosh, lambda g, ans, x, *a, **k: g / _sqrt(x ** 2 - 1))
_unary(anp.arctanh, lambda g, ans, x, *a, **k: g / (1 - x ** 2))
_unary(anp.sqrt, lambda g, ans, x, *a, **k: g * 0.5 / ans)
_unary(anp.cbrt, lambda g, ans, x, *a, **k: g / (3 * ans ** 2))
_unary(anp.square, lambda g, ans, x, *a, **k: g * 2 * x)
_unary(anp.reciprocal, lambda g, ans, x, *a, **k: -g * ans ** 2)
for _f in (anp.rad2deg, anp.degrees):
    _unary(_f, lambda g, ans, x, *a, **k: g * (180.0 / _PI))
for _f in (anp.deg2rad, anp.radians):
    _unary(_f, lambda g, ans, x, *a, **k: g * (_PI / 180.0))
_unary(anp.conjugate, lambda g, ans, x, *a, **k: _conj(g))


def _abs_vjp(g, ans, x, *args, **kwargs):
    if _is_complex(x):
        # conj(x)/|x|, and 0 at x = 0
        return g * _conj(x) / _where(ans == 0, 1.0, ans)
    return g * _sign(x)


_unary(anp.absolute, _abs_vjp)
_unary(anp.fabs, _abs_vjp)


def _sinc_vjp(g, ans, x):
    # sinc'(x) = (cos(pi x) - sinc(x)) / x, which cancels badly near 0: there (|x| < 0.01)
    # its Taylor polynomial, exact to round-off and with the right higher derivatives
    near_0 = onp.abs(getval(x)) < 0.01
    away = (_cos(_PI * x) - ans) / _where(near_0, 1.0, x)
    if not onp.any(near_0):
        return g * away
    x2 = x * x
    near = x * (x2 * (_PI ** 4 / 30.0 - x2 * (_PI ** 6 / 840.0)) - _PI ** 2 / 3.0)
    return g * _where(near_0, near, away)


_unary(anp.sinc, _sinc_vjp)
_unary(anp.nan_to_num, lambda g, ans, x, *a, **k: _where(_isfinite(x), g, 0.0))


def _real_vjp(g, ans, x):
    return unbroadcast(g, x)   # a complex x gets g + 0j


def _imag_vjp(g, ans, x):
    return -1j * g if _is_complex(x) else None


_unary(anp.real, _real_vjp)
_unary(anp.imag, _imag_vjp)


# ---------------------------------------------------------------------------------------
# Elementwise binary functions, with broadcasting

_defvjp(anp.add,
              lambda g, ans, x, y, *a, **k: unbroadcast(g, x),
              lambda g, ans, x, y, *a, **k: unbroadcast(g, y))
_defvjp(anp.subtract,
              lambda g, ans, x, y, *a, **k: unbroadcast(g, x),
              lambda g, ans, x, y, *a, **k: unbroadcast(-g, y))
_defvjp(anp.multiply,
              lambda g, ans, x, y, *a, **k: unbroadcast(g * y, x),
              lambda g, ans, x, y, *a, **k: unbroadcast(x * g, y))
_defvjp(anp.true_divide,
              lambda g, ans, x, y, *a, **k: unbroadcast(g / y, x),
              lambda g, ans, x, y, *a, **k: unbroadcast(-g * x / y ** 2, y))
_defvjp(anp.remainder,
              lambda g, ans, x, y, *a, **k: unbroadcast(g, x),
              lambda g, ans, x, y, *a, **k: unbroadcast(-g * _floor(x / y), y))
defvjp_direct(anp.fmod,
              lambda g, ans, x, y, *a, **k: unbroadcast(g, x),
              lambda g, ans, x, y, *a, **k: unbroadcast(-g * _trunc(x / y), y))


def _power_vjp_base(g, ans, x, y, *args, **kwargs):
    # y x**(y-1); where x == 0 and y == 0 (x**0 is constant) it is 0, not 0 * inf
    if type(y) is float or type(y) is int:
        if y == 0:
            return None
        if y == 2:
            return unbroadcast(g * x * 2.0, x)   # (g * 2) * x exactly, one array op fewer
        return unbroadcast(g * y * x ** (y - 1), x)
    both_0 = onp.logical_and(getval(x) == 0, getval(y) == 0)
    xs = _where(both_0, 1.0, x) if onp.any(both_0) else x
    return unbroadcast(g * y * xs ** (y - 1), x)


def _power_vjp_exponent(g, ans, x, y, *args, **kwargs):
    # x**y log(x): log is taken only where x > 0 (elsewhere the real derivative does not
    # exist, or is 0 at x == 0 for y > 0)
    if _is_complex(x):
        logx = _log(_where(x == 0, 1.0, x))
    else:
        logx = _log(_where(x > 0, x, 1.0))
    return unbroadcast(g * ans * logx, y)


_defvjp(anp.power, _power_vjp_base, _power_vjp_exponent)


def _float_power_vjp_base(g, ans, x, y, *args, **kwargs):
    both_0 = onp.logical_and(getval(x) == 0, getval(y) == 0)
    xs = _where(both_0, 1.0, x) if onp.any(both_0) else x
    return unbroadcast(g * y * anp.float_power(xs, y - 1), x)


defvjp_direct(anp.float_power, _float_power_vjp_base, _power_vjp_exponent)


def _balanced_weight(x, other, ans):
    """Where x is the selected value (ties with ``other`` share it evenly), as x's dtype."""
    xv, ov, av = getval(x), getval(other), getval(ans)
    dtype = _meta(x)[1]
    if dtype.kind not in "fc":
        dtype = _F64
    w = onp.asarray(xv == av, dtype=dtype)
    w = w / (1 + onp.asarray(xv == ov, dtype=dtype))
    return w


def _maxmin_vjp(argnum):
    def rule(g, ans, x, y, *args, **kwargs):
        this, other = (x, y) if argnum == 0 else (y, x)
        return unbroadcast(g * _balanced_weight(this, other, ans), this)
    return rule


for _f in (anp.maximum, anp.minimum, anp.fmax, anp.fmin):
    defvjp_direct(_f, _maxmin_vjp(0), _maxmin_vjp(1))

defvjp_direct(anp.logaddexp,
              lambda g, ans, x, y, *a, **k: unbroadcast(g * _exp(x - ans), x),
              lambda g, ans, x, y, *a, **k: unbroadcast(g * _exp(y - ans), y))
defvjp_direct(anp.logaddexp2,
              lambda g, ans, x, y, *a, **k: unbroadcast(g * 2.0 ** (x - ans), x),
              lambda g, ans, x, y, *a, **k: unbroadcast(g * 2.0 ** (y - ans), y))
defvjp_direct(anp.arctan2,
              lambda g, ans, x, y, *a, **k: unbroadcast(g * y / (x ** 2 + y ** 2), x),
              lambda g, ans, x, y, *a, **k: unbroadcast(g * -x / (x ** 2 + y ** 2), y))
defvjp_direct(anp.hypot,
              lambda g, ans, x, y, *a, **k: unbroadcast(g * x / ans, x),
              lambda g, ans, x, y, *a, **k: unbroadcast(g * y / ans, y))


# ---------------------------------------------------------------------------------------
# Reductions

def _sum_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
             where=True):
    shape = _shape(x)
    r = _expand_reduced(g, shape, axis, keepdims)
    if where is not True:
        r = _where(where, r, 0.0)
    return unbroadcast(r, x)


defvjp_direct(anp.sum, _sum_vjp)


def _no_where(name, where):
    if where is not True:
        raise NotImplementedError("VJP of {} with a where= mask is not implemented".format(name))


def _mean_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    _no_where("mean", where)
    shape = _shape(x)
    r = _expand_reduced(g, shape, axis, keepdims) / _reduced_size(shape, axis)
    return unbroadcast(r, x)


defvjp_direct(anp.mean, _mean_vjp)


def _prod_others_raw(x, axes):
    """For every entry, the product of the other entries of its reduction group (the
    groups are the slices along ``axes``), without dividing: exact with zeros."""
    x = onp.asarray(x)
    nd = x.ndim
    if not axes:
        return onp.ones_like(x)
    kept = [i for i in range(nd) if i not in axes]
    perm = kept + list(axes)
    xt = x.transpose(perm)
    kshape = xt.shape[:len(kept)]
    flat = xt.reshape(kshape + (-1,))
    left = onp.ones_like(flat)
    right = onp.ones_like(flat)
    if flat.shape[-1] > 1:
        onp.cumprod(flat[..., :-1], axis=-1, out=left[..., 1:])
        right[..., :-1] = onp.cumprod(flat[..., :0:-1], axis=-1)[..., ::-1]
    others = (left * right).reshape(xt.shape)
    return others.transpose(onp.argsort(perm))


_prod_others_raw.__name__ = _prod_others_raw.__qualname__ = "prod_others"
prod_others = primitive(_prod_others_raw)


def _prod_others_vjp(g, ans, x, axes):
    # d others_i / d x_j = others_i / x_j for j != i: needs x != 0 (second order only)
    return (_sum(g * ans, axis=axes, keepdims=True) - g * ans) / x


defvjp_direct(prod_others, _prod_others_vjp)


def _prod_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
              where=True):
    _no_where("prod", where)
    shape = _shape(x)
    r = _expand_reduced(g, shape, axis, keepdims)
    if initial is not None:
        r = r * initial
    return unbroadcast(r * prod_others(x, _axes(axis, len(shape))), x)


defvjp_direct(anp.prod, _prod_vjp)


def _maxmin_reduce_vjp(name):
    def rule(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=True):
        _no_where(name, where)
        shape, dtype = _meta(x)
        axes = _axes(axis, len(shape))
        kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
        xv = onp.asarray(getval(x))
        av = onp.reshape(getval(ans), kept)
        if dtype.kind not in "fc":
            dtype = _F64
        w = onp.asarray(xv == av, dtype=dtype)
        w = w / onp.maximum(w.sum(axis=axes, keepdims=True), 1)   # ties share evenly
        return unbroadcast(_expand_reduced(g, shape, axis, keepdims) * w, x)
    return rule


for _name in ("max", "min", "amax", "amin", "nanmax", "nanmin"):
    defvjp_direct(getattr(anp, _name), _maxmin_reduce_vjp(_name))


def _var_parts(x, axis, dtype, ddof, keepdims, correction):
    if correction is not None:
        ddof = correction
    shape = _shape(x)
    n = _reduced_size(shape, axis) - ddof
    centered = x - _mean(x, axis=axis, keepdims=True)
    return shape, n, centered


def _var_vjp(g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
             where=True, mean=None, correction=None):
    _no_where("var", where)
    shape, n, centered = _var_parts(x, axis, dtype, ddof, keepdims, correction)
    return unbroadcast(_expand_reduced(g, shape, axis, keepdims) * centered * (2.0 / n), x)


def _std_vjp(g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
             where=True, mean=None, correction=None):
    _no_where("std", where)
    shape, n, centered = _var_parts(x, axis, dtype, ddof, keepdims, correction)
    r = _expand_reduced(g / ans, shape, axis, keepdims)
    return unbroadcast(r * centered * (1.0 / n), x)


defvjp_direct(anp.var, _var_vjp)
defvjp_direct(anp.std, _std_vjp)


def _cumsum_vjp(g, ans, x, axis=None, dtype=None, out=None):
    if axis is None:
        return unbroadcast(_reshape(_flip(_cumsum(_flip(g, 0)), 0), _shape(x)), x)
    return unbroadcast(_flip(_cumsum(_flip(g, axis), axis), axis), x)


defvjp_direct(anp.cumsum, _cumsum_vjp)


# ---------------------------------------------------------------------------------------
# Products

def _tensordot_axes(axes, nA, nB):
    if isinstance(axes, (int, onp.integer)):
        return list(range(nA - axes, nA)), list(range(axes))
    a_axes, b_axes = axes
    a_axes = [a_axes] if isinstance(a_axes, (int, onp.integer)) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, (int, onp.integer)) else list(b_axes)
    return [int(a) % nA for a in a_axes], [int(b) % nB for b in b_axes]


def _argsort(seq):
    return sorted(range(len(seq)), key=seq.__getitem__)


def _permuted(x, perm):
    return x if perm == sorted(perm) else _transpose(x, _argsort(perm))


def _tensordot_vjp_a(g, A, B, a_axes, b_axes):
    nA, nB = _ndim(A), _ndim(B)
    A_free = [i for i in range(nA) if i not in a_axes]
    B_free = [i for i in range(nB) if i not in b_axes]
    g_B = list(range(len(A_free), len(A_free) + len(B_free)))
    r = _tensordot(g, B, axes=(g_B, B_free))
    layout = A_free + [a_axes[b_axes.index(b)] for b in sorted(b_axes)]
    return unbroadcast(_permuted(r, layout), A)


def _tensordot_vjp_b(g, A, B, a_axes, b_axes):
    nA, nB = _ndim(A), _ndim(B)
    A_free = [i for i in range(nA) if i not in a_axes]
    B_free = [i for i in range(nB) if i not in b_axes]
    g_A = list(range(len(A_free)))
    r = _tensordot(A, g, axes=(A_free, g_A))
    layout = [b_axes[a_axes.index(a)] for a in sorted(a_axes)] + B_free
    return unbroadcast(_permuted(r, layout), B)


def _tensordot_rule(vjp):
    def rule(g, ans, a, b, axes=2):
        a_axes, b_axes = _tensordot_axes(axes, _ndim(a), _ndim(b))
        return vjp(g, a, b, a_axes, b_axes)
    return rule


defvjp_direct(anp.tensordot, _tensordot_rule(_tensordot_vjp_a), _tensordot_rule(_tensordot_vjp_b))


def _dot_vjp_a(g, ans, A, B, out=None):
    nA, nB = _ndim(A), _ndim(B)
    if nA == 0 or nB == 0:
        return unbroadcast(g * B, A)
    if nB == 1:
        if nA == 1:
            return unbroadcast(g * B, A)
        if nA == 2:
            return unbroadcast(_outer(g, B), A)
    elif nA <= 2 and nB == 2:
        if nA == 2:
            return unbroadcast(_dot(g, _transpose(B)), A)
        return unbroadcast(_dot(B, g), A)
    return _tensordot_vjp_a(g, A, B, [nA - 1], [max(nB - 2, 0)])


def _dot_vjp_b(g, ans, A, B, out=None):
    nA, nB = _ndim(A), _ndim(B)
    if nA == 0 or nB == 0:
        return unbroadcast(A * g, B)
    if nB == 1:
        if nA == 1:
            return unbroadcast(A * g, B)
        if nA == 2:
            return unbroadcast(_dot(g, A), B)
    elif nA <= 2 and nB == 2:
        if nA == 2:
            return unbroadcast(_dot(_transpose(A), g), B)
        return unbroadcast(_outer(A, g), B)
    return _tensordot_vjp_b(g, A, B, [nA - 1], [max(nB - 2, 0)])


defvjp_direct(anp.dot, _dot_vjp_a, _dot_vjp_b)


def _inner_rule(which):
    def rule(g, ans, A, B):
        nA, nB = _ndim(A), _ndim(B)
        if nA == 0 or nB == 0:
            return unbroadcast(g * B, A) if which == 0 else unbroadcast(A * g, B)
        vjp = _tensordot_vjp_a if which == 0 else _tensordot_vjp_b
        return vjp(g, A, B, [nA - 1], [nB - 1])
    return rule


defvjp_direct(anp.inner, _inner_rule(0), _inner_rule(1))


def _mT(x):
    return _swapaxes(x, -1, -2)


def _matmul_vjp_a(g, ans, A, B, *args, **kwargs):
    nA, nB = _ndim(A), _ndim(B)
    if nB == 1:
        if nA == 1:
            return unbroadcast(g * B, A)
        return unbroadcast(_expand_dims(g, -1) * B, A)           # (..., m, k)
    if nA == 1:                                                   # A (k,), g (..., n)
        return unbroadcast(_squeeze(_matmul(B, _expand_dims(g, -1)), -1), A)
    if nB == 2 and nA == 2:
        return unbroadcast(_dot(g, _transpose(B)), A)
    return unbroadcast(_matmul(g, _mT(B)), A)


def _matmul_vjp_b(g, ans, A, B, *args, **kwargs):
    nA, nB = _ndim(A), _ndim(B)
    if nB == 1:
        if nA == 1:
            return unbroadcast(A * g, B)
        if nA == 2:
            return unbroadcast(_dot(g, A), B)
        return unbroadcast(_squeeze(_matmul(_expand_dims(g, -2), A), -2), B)
    if nA == 1:                                                   # dB (..., k, n)
        return unbroadcast(_expand_dims(A, -1) * _expand_dims(g, -2), B)
    if nA == 2 and nB == 2:
        return unbroadcast(_dot(_transpose(A), g), B)
    return unbroadcast(_matmul(_mT(A), g), B)


_defvjp(anp.matmul, _matmul_vjp_a, _matmul_vjp_b)


def _outer_vjp_a(g, ans, a, b, out=None):
    return unbroadcast(_reshape(_dot(g, anp.ravel(b)), _shape(a)), a)


def _outer_vjp_b(g, ans, a, b, out=None):
    return unbroadcast(_reshape(_dot(anp.ravel(a), g), _shape(b)), b)


defvjp_direct(anp.outer, _outer_vjp_a, _outer_vjp_b)


# ---------------------------------------------------------------------------------------
# Shapes

def _order_of(x, order):
    if order in ("C", "F"):
        return order
    if order == "A" or order == "K":
        xv = getval(x)
        flags = getattr(xv, "flags", None)
        if flags is not None and flags.f_contiguous and not flags.c_contiguous:
            return "F"
    return "C"


def _reshape_vjp(g, ans, x, *args, order="C", **kwargs):
    if len(args) > 1:
        order = args[1]
    return unbroadcast(_reshape(g, _shape(x), order=_order_of(x, order)), x)


def _ravel_vjp(g, ans, x, order="C"):
    return unbroadcast(_reshape(g, _shape(x), order=_order_of(x, order)), x)


def _same_shape_vjp(g, ans, x, *args, **kwargs):
    return unbroadcast(_reshape(g, _shape(x)), x)


defvjp_direct(anp.reshape, _reshape_vjp)
defvjp_direct(anp.ravel, _ravel_vjp)
for _f in (anp.expand_dims, anp.squeeze):
    defvjp_direct(_f, _same_shape_vjp)


def _atleast_vjp(g, ans, x, *rest):
    if rest:
        raise NotImplementedError("VJP of atleast_nd with several arguments is not defined")
    return unbroadcast(_reshape(g, _shape(x)), x)


for _f in (anp.atleast_1d, anp.atleast_2d, anp.atleast_3d):
    defvjp_direct(_f, _atleast_vjp)


def _transpose_vjp(g, ans, x, axes=None):
    if axes is None:
        return unbroadcast(_transpose(g), x)
    nd = _ndim(x)
    return unbroadcast(_transpose(g, _argsort([int(a) % nd for a in axes])), x)


defvjp_direct(anp.transpose, _transpose_vjp)
defvjp_direct(anp.swapaxes, lambda g, ans, x, axis1, axis2: unbroadcast(_swapaxes(g, axis1, axis2), x))
defvjp_direct(anp.moveaxis, lambda g, ans, x, source, destination:
              unbroadcast(_moveaxis(g, destination, source), x))
defvjp_direct(anp.matrix_transpose, lambda g, ans, x: unbroadcast(_mT(g), x))
defvjp_direct(anp.broadcast_to, lambda g, ans, x, shape, *a, **k: unbroadcast(g, x))
defvjp_direct(anp.flip, lambda g, ans, x, axis=None: unbroadcast(_flip(g, axis), x))
defvjp_direct(anp.copy, lambda g, ans, x, *a, **k: unbroadcast(g, x))
defvjp_direct(anp.astype_method, lambda g, ans, x, *a, **k: unbroadcast(g, x))
defvjp_direct(anp.astype, lambda g, ans, x, *a, **k: unbroadcast(g, x))
defvjp_direct(anp.diagonal, lambda g, ans, x, offset=0, axis1=0, axis2=1:
              unbroadcast(anp.diag_embed(g, offset, axis1 % _ndim(x), axis2 % _ndim(x), _shape(x)), x))
defvjp_direct(anp.diag_embed, lambda g, ans, d, offset, axis1, axis2, shape:
              unbroadcast(_diagonal(g, offset, axis1, axis2), d))


# ---------------------------------------------------------------------------------------
# Building arrays from traced elements, joining

def _array_from_args_vjp(argnums, ans, args, kwargs):
    return lambda g: [unbroadcast(_getitem(g, i), args[i]) for i in argnums]


defvjp_argnums(anp.array_from_args, _array_from_args_vjp)


def _along(axis, index, ndim):
    return (slice(None),) * (axis % ndim) + (index,)


def _concatenate_vjp(argnums, ans, args, kwargs):
    axis = kwargs.get("axis", 0)
    nd = _ndim(ans)
    ax = axis % nd
    bounds, start = [], 0
    for a in args:
        stop = start + _shape(a)[ax]
        bounds.append((start, stop))
        start = stop
    return lambda g: [unbroadcast(_getitem(g, _along(ax, slice(*bounds[i]), nd)), args[i])
                      for i in argnums]


defvjp_argnums(anp.concatenate_args, _concatenate_vjp)


def _stack_vjp(argnums, ans, args, kwargs):
    nd = _ndim(ans)
    ax = kwargs.get("axis", 0) % nd
    return lambda g: [unbroadcast(_getitem(g, _along(ax, i, nd)), args[i]) for i in argnums]


defvjp_argnums(anp.stack_args, _stack_vjp)


# ---------------------------------------------------------------------------------------
# Selection: where, clip, indexing

defvjp_direct(anp.where3, None,
              lambda g, ans, c, x, y: unbroadcast(_where(c, g, 0.0), x),
              lambda g, ans, c, x, y: unbroadcast(_where(c, 0.0, g), y))


def _clip_bounds(a_min, a_max, kwargs):
    lo = kwargs.get("min", a_min)
    hi = kwargs.get("max", a_max)
    return lo, hi


def _clip_vjp_x(g, ans, x, a_min=None, a_max=None, out=None, **kwargs):
    lo, hi = _clip_bounds(a_min, a_max, kwargs)
    xv = getval(x)
    inside = True   # strictly inside, as autograd: a value sitting on a bound gets no gradient
    if lo is not None:
        inside = xv > getval(lo)
    if hi is not None:
        inside = onp.logical_and(inside, xv < getval(hi))
    return unbroadcast(_where(inside, g, 0.0), x)


def _clip_vjp_min(g, ans, x, a_min=None, a_max=None, out=None, **kwargs):
    return unbroadcast(_where(getval(x) < getval(a_min), g, 0.0), a_min)


def _clip_vjp_max(g, ans, x, a_min=None, a_max=None, out=None, **kwargs):
    return unbroadcast(_where(getval(x) > getval(a_max), g, 0.0), a_max)


defvjp_direct(anp.clip, _clip_vjp_x, _clip_vjp_min, _clip_vjp_max)

def _take_index(shape, indices, axis, mode="raise"):
    """The index ``idx`` with ``a[idx] == np.take(a, indices, axis, mode=mode)``."""
    ind = onp.asarray(getval(indices))
    n = math.prod(shape) if axis is None else shape[axis]
    if mode == "wrap":
        ind = ind % n
    elif mode == "clip":
        ind = onp.clip(ind, 0, n - 1)
    if axis is None:
        return onp.unravel_index(onp.where(ind < 0, ind + n, ind), shape)
    return (slice(None),) * (axis % len(shape)) + (ind,)


def _take_vjp(g, ans, a, indices, axis=None, out=None, mode="raise"):
    return _untake(g, _take_index(_shape(a), indices, axis, mode), _vs(a))


def _compress_vjp(g, ans, condition, a, axis=None, out=None):
    indices = onp.nonzero(onp.asarray(getval(condition)))[0]
    return _untake(g, _take_index(_shape(a), indices, axis), _vs(a))


def _repeat_vjp(g, ans, a, repeats, axis=None):
    shape = _shape(a)
    n = math.prod(shape) if axis is None else shape[axis]
    indices = onp.repeat(onp.arange(n), onp.asarray(getval(repeats)))
    return _untake(g, _take_index(shape, indices, axis), _vs(a))


defvjp_direct(anp.take, _take_vjp)
defvjp_direct(anp.compress, None, _compress_vjp)
defvjp_direct(anp.repeat, _repeat_vjp)


def _trace_vjp(g, ans, x, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    shape = _shape(x)
    nd = len(shape)
    k = onp.diagonal(onp.empty(shape, dtype=bool), offset, axis1, axis2).shape[-1]
    gshape = _shape(g)
    gd = _broadcast_to(_reshape(g, gshape + (1,)), gshape + (k,))
    return unbroadcast(anp.diag_embed(gd, offset, axis1 % nd, axis2 % nd, shape), x)


defvjp_direct(anp.trace, _trace_vjp)


def _ptp_vjp(g, ans, x, axis=None, out=None, keepdims=False):
    xv = getval(x)
    hi = onp.max(xv, axis=axis, keepdims=keepdims)
    lo = onp.min(xv, axis=axis, keepdims=keepdims)
    return (_maxmin_reduce_vjp("max")(g, hi, x, axis, None, keepdims)
            - _maxmin_reduce_vjp("min")(g, lo, x, axis, None, keepdims))


defvjp_direct(anp.ptp, _ptp_vjp)


def _bincount_vjp_weights(g, ans, x, weights=None, minlength=0):
    return unbroadcast(_getitem(g, onp.asarray(getval(x))), weights)


defvjp_direct(anp.bincount, None, _bincount_vjp_weights)
defvjp_direct(anp.getitem, lambda g, ans, A, idx: _untake(g, idx, _vs(A)), None)
defvjp_direct(anp.untake, lambda g, ans, x, idx, vs: _getitem(g, idx), None, None)
