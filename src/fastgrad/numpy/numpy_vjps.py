"""Reverse-mode rules of fastgrad.numpy.

Each rule is ``rule(g, ans, *args, **kwargs) -> cotangent`` (``defvjp_direct``), applied in
the backward pass: nothing is prepared while recording.  Rules compute with fastgrad.numpy
primitives and operators, so that when ``g``, ``ans`` or the arguments are themselves
traced (higher-order derivatives) the rule is recorded too; shapes, dtypes, masks and
index arrays are read from the plain values.

``unbroadcast(g, x)`` turns the cotangent of a broadcast result into one for ``x``: it sums
over the broadcast axes and casts to ``x``'s dtype (a float32 input gets a float32
cotangent whatever it was combined with).

Complex numbers follow autograd's convention: the cotangent of a real function L at a
complex z is dL/dx - i dL/dy, so a holomorphic primitive f pulls ``g`` back to ``g * f'(z)``
(no conjugation) and linear maps use plain transposes.

A few functions (``cross``, ``average``, ``trapezoid``, ``interp``, ``diff``, ``gradient``,
``correlate``, ...) get their rules from a traced re-implementation (``impl``): the
cotangent is the VJP of ``impl`` at the same point, so it is correct to every order
wherever ``impl`` is.  The value itself always comes from NumPy.

Conventions at points where the derivative does not exist (documented here once):
* max/min (and amax, amin, nanmax, nanmin, maximum, minimum, fmax, fmin, ptp): tied
  entries share the cotangent evenly;
* abs, hypot, std, nanstd, angle at 0: the subgradient 0;
* clip: on a bound the bound gets the cotangent (the argument does not, as in autograd);
* sort, partition, median, percentile, quantile: tied values share evenly (median and
  quantiles) or follow a stable order (sort, partition);
* interp at a knot: the slope of the segment to the right (the left one at the last knot);
* power's derivative w.r.t. the exponent where the base is <= 0 (real): 0;
* prod and cumprod with zero entries: the exact products of the other entries;
* unique: duplicates share the cotangent of their value evenly.
"""

import math
import warnings

import numpy as onp

from .. import builtins as _fg_builtins
from ..builtins import make_sequence  # noqa: F401  (numpy_jvps uses it through this module)
from ..core import defvjp_argnums, defvjp_direct
from .._engine import engine as _engine
from ..tracer import getval
from . import _elementwise, _registration, _shapes
from . import numpy_wrapper as anp
from ._shapes import unbroadcast, unbroadcast_f  # noqa: F401  (autograd's names)

_ndarray = onp.ndarray
_float64 = onp.float64
_F64 = onp.dtype(onp.float64)
_C128 = onp.dtype(onp.complex128)
_LOG2 = math.log(2.0)
_LOG10 = math.log(10.0)
_PI = math.pi
_NoValue = onp._NoValue
_same_layout = _engine.same_layout  # two ndarrays of one shape and dtype
_add_reduce = onp.add.reduce

# primitives used by the rules, bound once
_sum, _reshape, _broadcast_to = anp.sum, anp.reshape, anp.broadcast_to
_transpose, _swapaxes, _expand_dims, _squeeze = anp.transpose, anp.swapaxes, anp.expand_dims, anp.squeeze
_dot, _matmul, _tensordot, _outer = anp.dot, anp.matmul, anp.tensordot, anp.outer
_where, _getitem, _untake, _astype = anp.where3, anp.getitem, anp.untake, anp.astype_method
_real, _imag, _conj, _sign, _floor, _trunc = anp.real, anp.imag, anp.conjugate, anp.sign, anp.floor, anp.trunc
_cos, _sin, _cosh, _sinh, _sqrt, _log, _exp = anp.cos, anp.sin, anp.cosh, anp.sinh, anp.sqrt, anp.log, anp.exp
_isfinite, _mean, _flip, _cumsum, _cumprod = anp.isfinite, anp.mean, anp.flip, anp.cumsum, anp.cumprod
_prod, _diagonal, _moveaxis, _einsum = anp.prod, anp.diagonal, anp.moveaxis, anp.einsum
_concat = anp.concatenate_args
_stack = anp.stack_args
_convolve = anp.convolve
_fg_tuple = _fg_builtins.tuple
_fg_list = _fg_builtins.list


# ---------------------------------------------------------------------------------------
# Shapes, dtypes, broadcasting (numpy/_shapes.py); registration (numpy/_registration.py)

_meta, _shape, _ndim, _is_complex = _shapes.shape_and_dtype, _shapes.shape_of, _shapes.ndim_of, _shapes.is_complex
_axes, _expand_reduced, _broadcast = _shapes.normalized_axes, _shapes.expand_reduced, _shapes.broadcast
_reduced_size, _vs, _real_dtype, _unset = _shapes.reduced_size, _shapes.vspace_of, _shapes.real_dtype, _shapes.unset
_along, _seq, _array_likes, _argsort = (
    _shapes.along,
    _shapes.traced_sequence,
    _shapes.arrays_for_lists,
    _shapes.inverse_permutation,
)
IMPLS, vjp_from_impl, jvp_from_impl = _registration.IMPLS, _registration.vjp_from_impl, _registration.jvp_from_impl
_ARGS = _registration.ARGS
_nonzero_or_one = _elementwise._nonzero_or_one


def _from_impl(fun, argnums=(0,)):
    def register(impl):
        _def_vjps_from_impl(fun, impl, argnums)
        IMPLS[fun] = (impl, tuple(argnums))
        return impl

    return register


def _def_vjps_from_impl(fun, impl, argnums):
    defvjp_direct(fun, *[vjp_from_impl(impl, i) for i in argnums], argnums=argnums)


def _defvjp(fun, *rules, uses=("ans", "args")):
    defvjp_direct(fun, *rules, uses=uses)
    op = anp.OPERATOR_PRIMITIVES.get(fun.fun)
    if op is not None:
        defvjp_direct(op, *rules, uses=uses)


# ---------------------------------------------------------------------------------------
# Reductions


def _sum_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    shape = _shape(x)
    r = _expand_reduced(g, shape, axis, keepdims)
    if where is not True and where is not _NoValue:
        r = _where(where, r, 0.0)
    return unbroadcast(r, x)


defvjp_direct(anp.sum, _sum_vjp)


def _has_where(where):
    return not (where is True or where is _NoValue)


def _where_count(shape, axis, where, dtype=_F64):
    """The number of selected entries of each reduction group (keepdims layout), as a
    ``dtype`` array (the real dtype of the values, so that dividing keeps their dtype)."""
    mask = onp.broadcast_to(onp.asarray(where, dtype=bool), shape)
    return onp.sum(mask, axis=_axes(axis, len(shape)), keepdims=True).astype(_real_dtype(onp.dtype(dtype)))


def _mean_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    shape = _shape(x)
    if _has_where(where):
        count = _where_count(shape, axis, where, _meta(x)[1])
        r = _where(where, _expand_reduced(g, shape, axis, keepdims), 0.0) / onp.maximum(count, 1)
        return unbroadcast(r, x)
    # divided before it is repeated: the same values, one division instead of one per entry
    r = _expand_reduced(g / _reduced_size(shape, axis), shape, axis, keepdims)
    return unbroadcast(r, x)


defvjp_direct(anp.mean, _mean_vjp)


def _group_last(x, axes):
    """``x`` with the reduced ``axes`` moved last and merged: (flat, kept_shape, restore)."""
    shape = _shape(x)
    nd = len(shape)
    kept = [i for i in range(nd) if i not in axes]
    perm = kept + list(axes)
    xt = _transpose(x, perm) if perm != list(range(nd)) else x
    tshape = tuple(shape[i] for i in perm)
    kshape = tshape[: len(kept)]
    flat = _reshape(xt, kshape + (math.prod(tshape[len(kept) :]),))

    def restore(y):
        y = _reshape(y, tshape)
        return _transpose(y, _argsort(perm)) if perm != list(range(nd)) else y

    return flat, restore


def _others_product(x, axes):
    """For every entry of ``x``, the product of the other entries of its reduction group
    (the slices along ``axes``), from exclusive prefix and suffix products: no division,
    so exact where entries are 0.  Traced."""
    if not axes or math.prod(_shape(x)[i] for i in axes) == 0:
        return onp.ones(_shape(x), dtype=_meta(x)[1])
    flat, restore = _group_last(x, axes)
    n = _shape(flat)[-1]
    if n == 1:
        return onp.ones(_shape(x), dtype=_meta(x)[1])
    one = onp.ones(_shape(flat)[:-1] + (1,), dtype=_meta(x)[1])
    left = _cumprod(_concat(one, _getitem(flat, (Ellipsis, slice(None, -1))), axis=-1), axis=-1)
    tail = _flip(_getitem(flat, (Ellipsis, slice(1, None))), -1)
    right = _flip(_cumprod(_concat(one, tail, axis=-1), axis=-1), -1)
    return restore(left * right)


def _prod_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    shape = _shape(x)
    axes = _axes(axis, len(shape))
    r = _expand_reduced(g, shape, axis, keepdims)
    if _has_where(where):
        mask = onp.broadcast_to(onp.asarray(where, dtype=bool), shape)
        xs = _where(mask, x, 1.0)
        others = _others_product(xs, axes)
        if not _unset(initial):
            others = others * initial
        return unbroadcast(_where(mask, r * others, 0.0), x)
    if not onp.any(getval(x) == 0):
        # the product of the others is ans / x (initial included in ans)
        return unbroadcast(r * _expand_reduced(ans, shape, axis, keepdims) / x, x)
    others = _others_product(x, axes)
    if not _unset(initial):
        others = others * initial
    return unbroadcast(r * others, x)


defvjp_direct(anp.prod, _prod_vjp)


def _maxmin_weights(x, ans, axis, keepdims, where=True):
    """Which entries of ``x`` are the group's max (or min) ``ans``; tied entries share
    evenly.  In x's real dtype, x's shape."""
    shape, dtype = _meta(x)
    axes = _axes(axis, len(shape))
    kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
    xv = onp.asarray(getval(x))
    av = onp.reshape(getval(ans), kept)
    hit = xv == av
    if _has_where(where):
        hit = onp.logical_and(hit, where)
    w = onp.asarray(hit, dtype=_real_dtype(dtype))
    return w / onp.maximum(w.sum(axis=axes, keepdims=True), 1)


def _maxmin_reduce_vjp(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=True):
    w = _maxmin_weights(x, ans, axis, keepdims, where)
    return unbroadcast(_expand_reduced(g, _shape(x), axis, keepdims) * w, x)


for _name in ("max", "min", "amax", "amin", "nanmax", "nanmin"):
    defvjp_direct(getattr(anp, _name), _maxmin_reduce_vjp)


def _ptp_vjp(g, ans, x, axis=None, out=None, keepdims=False):
    xv = getval(x)
    hi = onp.max(xv, axis=axis, keepdims=keepdims)
    lo = onp.min(xv, axis=axis, keepdims=keepdims)
    w = _maxmin_weights(x, hi, axis, keepdims) - _maxmin_weights(x, lo, axis, keepdims)
    return unbroadcast(_expand_reduced(g, _shape(x), axis, keepdims) * w, x)


defvjp_direct(anp.ptp, _ptp_vjp)


def _ddof(ddof, correction):
    return ddof if _unset(correction) else correction


def _centered(x, axis):
    """x minus its mean over ``axis``, conjugated for complex x (the cotangent direction
    of |x - mean|**2)."""
    c = x - _mean(x, axis=axis, keepdims=True)
    return _conj(c) if _is_complex(x) else c


def _var_vjp(
    g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None
):
    shape = _shape(x)
    n = _reduced_size(shape, axis) - _ddof(ddof, correction)
    return unbroadcast(_expand_reduced(g, shape, axis, keepdims) * _centered(x, axis) * (2.0 / n), x)


def _std_vjp(
    g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None
):
    # d std = d var / (2 std); 0 where std is 0 (every entry equal)
    shape = _shape(x)
    n = _reduced_size(shape, axis) - _ddof(ddof, correction)
    if onp.any(getval(ans) == 0):
        g = _where(ans == 0, 0.0, g) / _where(ans == 0, 1.0, ans)
    else:
        g = g / ans
    return unbroadcast(_expand_reduced(g, shape, axis, keepdims) * _centered(x, axis) * (1.0 / n), x)


def _var_impl(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """var with a where= mask, traced."""
    shape = _shape(x)
    mask = onp.broadcast_to(onp.asarray(True if _unset(where) else where, dtype=bool), shape)
    count = _where_count(shape, axis, mask, _meta(x)[1])
    m = _sum(_where(mask, x, 0.0), axis=axis, keepdims=True) / onp.maximum(count, 1)
    c = _where(mask, x - m, 0.0)
    sq = _real(c * _conj(c)) if _is_complex(x) else c * c
    n = count - _ddof(ddof, correction)
    r = _sum(sq / n, axis=axis, keepdims=True)
    if not keepdims or _unset(keepdims):
        r = _reshape(r, onp.sum(onp.zeros(shape, bool), axis=axis).shape)
    return r


def _std_impl(x, *args, **kwargs):
    v = _var_impl(x, *args, **kwargs)
    return _sqrt(v)


def _var_dispatch(plain, impl):
    def rule(g, ans, x, *args, where=True, **kwargs):
        if _has_where(where):
            return vjp_from_impl(impl, 0)(g, ans, x, *args, where=where, **kwargs)
        return plain(g, ans, x, *args, **kwargs)

    return rule


defvjp_direct(anp.var, _var_dispatch(_var_vjp, _var_impl))
defvjp_direct(anp.std, _var_dispatch(_std_vjp, _std_impl))


def _rev_cumsum(g, axis):
    return _flip(_cumsum(_flip(g, axis), axis), axis)


def _cumsum_vjp(g, ans, x, axis=None, dtype=None, out=None):
    if axis is None:
        return unbroadcast(_reshape(_rev_cumsum(g, 0), _shape(x)), x)
    return unbroadcast(_rev_cumsum(g, axis), x)


defvjp_direct(anp.cumsum, _cumsum_vjp)


def _drop_initial(g, axis, ndim):
    return _getitem(g, _along(axis, slice(1, None), ndim))


def _cumulative_sum_vjp(g, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
    ax = 0 if axis is None else axis
    if include_initial:
        g = _drop_initial(g, ax, _ndim(ans))
    return unbroadcast(_rev_cumsum(g, ax), x)


defvjp_direct(anp.cumulative_sum, _cumulative_sum_vjp)


def _slices_along(a, axis):
    n = _shape(a)[axis]
    nd = _ndim(a)
    return [_getitem(a, _along(axis, k, nd)) for k in range(n)]


def _cumprod_vjp_core(g, ans, x, axis):
    """The cotangent of ``ans = cumprod(x, axis)`` (x, g, ans of one shape)."""
    if not onp.any(getval(x) == 0):
        return _rev_cumsum(g * ans, axis) / x
    # exact with zeros: r_j = P_{j-1} S_j with P the exclusive prefix product and
    # S_j = g_j + x_{j+1} S_{j+1} (a loop along the axis, traced)
    gs, xs, ps = _slices_along(g, axis), _slices_along(x, axis), _slices_along(ans, axis)
    n = len(gs)
    s = [None] * n
    s[n - 1] = gs[n - 1]
    for j in range(n - 2, -1, -1):
        s[j] = gs[j] + xs[j + 1] * s[j + 1]
    r = [s[0]] + [ps[j - 1] * s[j] for j in range(1, n)]
    return _stack(*r, axis=axis)


def _cumprod_jvp_core(g, ans, x, axis):
    """The tangent of ``ans = cumprod(x, axis)`` along ``g`` (x, g, ans of one shape)."""
    if not onp.any(getval(x) == 0):
        return ans * _cumsum(g / x, axis)
    gs, xs, ps = _slices_along(g, axis), _slices_along(x, axis), _slices_along(ans, axis)
    d = [gs[0]]
    for k in range(1, len(gs)):
        d.append(d[k - 1] * xs[k] + ps[k - 1] * gs[k])
    return _stack(*d, axis=axis)


def _cumprod_vjp(g, ans, x, axis=None, dtype=None, out=None):
    if _shape(x) and 0 in _shape(x):
        return None
    if axis is None:
        flat = anp.ravel(x)
        return unbroadcast(_reshape(_cumprod_vjp_core(g, ans, flat, 0), _shape(x)), x)
    return unbroadcast(_cumprod_vjp_core(g, ans, x, axis), x)


def _cumulative_prod_vjp(g, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
    if _shape(x) and 0 in _shape(x):
        return None
    ax = 0 if axis is None else axis
    if include_initial:
        g = _drop_initial(g, ax, _ndim(ans))
        ans = _drop_initial(ans, ax, _ndim(ans))
    return unbroadcast(_cumprod_vjp_core(g, ans, x, ax), x)


defvjp_direct(anp.cumprod, _cumprod_vjp)
defvjp_direct(anp.cumulative_prod, _cumulative_prod_vjp)


# ---- NaN-ignoring reductions --------------------------------------------------------


def _nan_mask(x):
    """True where x is NaN (a constant)."""
    return onp.isnan(getval(x))


def _nansum_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    r = _sum_vjp(g, ans, x, axis, None, None, keepdims, None, where)
    return _where(_nan_mask(x), 0.0, r)


def _valid_mask(x, where):
    """The entries a NaN-ignoring reduction uses, or True for all of them."""
    valid = ~_nan_mask(x)
    if _has_where(where):
        valid = onp.logical_and(valid, where)
    return True if onp.all(valid) else valid


def _nanmean_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    valid = _valid_mask(x, where)
    return _mean_vjp(g, ans, x, axis, None, None, keepdims, where=valid)


def _nanprod_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    valid = _valid_mask(x, where)
    return _prod_vjp(g, ans, x, axis, None, None, keepdims, initial, where=valid)


def _nanvar_vjp(
    g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None
):
    valid = ~_nan_mask(x)
    if _has_where(where):
        valid = onp.logical_and(valid, where)
    shape = _shape(x)
    count = _where_count(shape, axis, valid, _meta(x)[1])
    n = count - _ddof(ddof, correction)
    m = _sum(_where(valid, x, 0.0), axis=axis, keepdims=True) / onp.maximum(count, 1)
    c = _where(valid, x - m, 0.0)
    if _is_complex(x):
        c = _conj(c)
    return unbroadcast(_expand_reduced(g, shape, axis, keepdims) * c * (2.0 / n), x)


def _nanstd_vjp(g, ans, x, *args, **kwargs):
    if onp.any(getval(ans) == 0):
        g = _where(ans == 0, 0.0, g) / _where(ans == 0, 1.0, ans)
    else:
        g = g / ans
    return _nanvar_vjp(g * 0.5, ans, x, *args, **kwargs)


def _nancumsum_vjp(g, ans, x, axis=None, dtype=None, out=None):
    return _where(_nan_mask(x), 0.0, _cumsum_vjp(g, ans, x, axis))


defvjp_direct(anp.nansum, _nansum_vjp)
defvjp_direct(anp.nanmean, _nanmean_vjp)
defvjp_direct(anp.nanprod, _nanprod_vjp)
defvjp_direct(anp.nanvar, _nanvar_vjp)
defvjp_direct(anp.nanstd, _nanstd_vjp)
defvjp_direct(anp.nancumsum, _nancumsum_vjp)


@_from_impl(anp.nancumprod)
def _nancumprod_impl(x, axis=None, dtype=None, out=None):
    return _cumprod(_where(_nan_mask(x), 1.0, x), axis=axis)


# ---- order statistics: median, percentile, quantile --------------------------------


def _order_stat_weights(x, axis, virtual_index):
    """Weights W with ``stat = sum(W * moved(x), -1)``, for an order statistic that
    interpolates linearly between sorted entries at virtual position(s) ``virtual_index(n)``
    (an array of shape Q, one per requested quantile).  W has shape Q + kept + (n,), in the
    layout of ``x`` with the reduced axes merged last.  Tied values share evenly."""
    xv = onp.asarray(getval(x))
    nd = xv.ndim
    axes = _axes(axis, nd)
    kept = [i for i in range(nd) if i not in axes]
    perm = kept + list(axes)
    kshape = tuple(xv.shape[i] for i in kept)
    n = math.prod(xv.shape[i] for i in axes)
    xm = xv.transpose(perm).reshape((-1, n))  # (R, n)
    v = onp.asarray(virtual_index(n), dtype=float)  # Q
    qshape = v.shape
    v = v.reshape(-1)  # (nq,)
    lo = onp.clip(onp.floor(v).astype(onp.intp), 0, n - 1)
    frac = onp.clip(v - lo, 0.0, 1.0)
    hi = onp.minimum(lo + 1, n - 1)
    nq = v.shape[0]
    ws = onp.zeros((nq, n))  # weights of sorted positions
    onp.add.at(ws, (onp.arange(nq), lo), 1.0 - frac)
    onp.add.at(ws, (onp.arange(nq), hi), frac)
    order = onp.argsort(xm, axis=-1, kind="stable")  # (R, n)
    srt = onp.take_along_axis(xm, order, axis=-1)
    R = srt.shape[0]
    # tie groups in sorted order: average the weights over each group
    new_group = onp.ones((R, n), dtype=bool)
    if n > 1:
        same = srt[:, 1:] == srt[:, :-1]
        new_group[:, 1:] = ~same
    gid = onp.cumsum(new_group, axis=1) - 1 + (onp.arange(R) * n)[:, None]  # (R, n) global ids
    W = onp.empty((nq, R, n))
    for k in range(nq):
        wk = onp.broadcast_to(ws[k], (R, n))
        sums = onp.bincount(gid.ravel(), weights=wk.ravel(), minlength=R * n)
        counts = onp.bincount(gid.ravel(), minlength=R * n)
        avg = (sums / onp.maximum(counts, 1))[gid]
        onp.put_along_axis(W[k], order, avg, axis=-1)
    dtype = _real_dtype(xv.dtype)
    return W.reshape(qshape + kshape + (n,)).astype(dtype), perm, axes, qshape


def _order_stat_vjp(g, x, keepdims, W, perm, axes, qshape):
    shape = _shape(x)
    nd = len(shape)
    kshape = W.shape[len(qshape) : -1]
    g = _reshape(g, qshape + kshape + (1,))
    r = g * W
    if qshape:
        r = _sum(r, axis=tuple(range(len(qshape))))
    r = _reshape(r, tuple(shape[i] for i in perm))
    if perm != list(range(nd)):
        r = _transpose(r, _argsort(perm))
    return unbroadcast(r, x)


def _order_stat_jvp(g, x, keepdims, W, perm, axes, qshape):
    shape = _shape(x)
    nd = len(shape)
    gm = _transpose(g, perm) if perm != list(range(nd)) else g
    n = W.shape[-1]
    gm = _reshape(gm, W.shape[len(qshape) : -1] + (n,))
    t = _sum(gm * W, axis=-1)
    if keepdims:
        t = _reshape(t, qshape + tuple(1 if i in axes else s for i, s in enumerate(shape)))
    return t


def _no_weights(name, weights):
    if weights is not None:
        raise NotImplementedError("derivative of {} with weights= is not implemented".format(name))


def _median_setup(x, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _order_stat_weights(x, axis, lambda n: (n - 1) / 2.0) + (keepdims,)


def _quantile_setup(fn):
    def setup(
        x,
        q,
        axis=None,
        out=None,
        overwrite_input=False,
        method="linear",
        keepdims=False,
        *,
        weights=None,
        interpolation=None,
    ):
        _no_weights(fn.__name__, weights)
        if interpolation is not None:
            method = interpolation
        qv = onp.asarray(getval(q))

        def virtual_index(n):
            return fn(onp.arange(n, dtype=float), qv, method=method)

        return _order_stat_weights(x, axis, virtual_index) + (keepdims,)

    return setup


ORDER_STAT_SETUPS = {
    anp.median: _median_setup,
    anp.percentile: _quantile_setup(onp.percentile),
    anp.quantile: _quantile_setup(onp.quantile),
}


def _order_stat_rule(setup):
    def rule(g, ans, x, *args, **kwargs):
        W, perm, axes, qshape, keepdims = setup(x, *args, **kwargs)
        return _order_stat_vjp(g, x, keepdims, W, perm, axes, qshape)

    return rule


for _f, _setup in ORDER_STAT_SETUPS.items():
    defvjp_direct(_f, _order_stat_rule(_setup))


# ---- average, trapezoid ------------------------------------------------------------


@_from_impl(anp.average, argnums=(0, 2))
def _average_impl(a, axis=None, weights=None, returned=False, *, keepdims=_NoValue):
    keep = False if keepdims is _NoValue else keepdims
    shape = _shape(a)
    if weights is None:
        avg = _mean(a, axis=axis, keepdims=keep)
        if not returned:
            return avg
        count = onp.broadcast_to(onp.asarray(_reduced_size(shape, axis), dtype=_meta(avg)[1]), _shape(avg))
        return _fg_tuple([avg, count])
    wshape = _shape(weights)
    w = weights
    if wshape != shape:
        ax = int(axis) % len(shape) if not isinstance(axis, tuple) else None
        if ax is None:
            raise NotImplementedError("average with 1-d weights needs an int axis")
        w = _reshape(w, tuple(wshape[0] if i == ax else 1 for i in range(len(shape))))
        w = _broadcast_to(w, shape)
    scl = _sum(w, axis=axis, keepdims=keep)
    avg = _sum(a * w, axis=axis, keepdims=keep) / scl
    if not returned:
        return avg
    if _shape(scl) != _shape(avg):
        scl = _broadcast_to(scl, _shape(avg))
    return _fg_tuple([avg, scl])


@_from_impl(anp.trapezoid, argnums=(0, 1, 2))
def _trapezoid_impl(y, x=None, dx=1.0, axis=-1):
    nd = _ndim(y)
    ax = axis % nd
    if x is None:
        d = dx
    elif _ndim(x) == 1:
        d = anp.diff(x)
        d = _reshape(d, tuple(_shape(d)[0] if i == ax else 1 for i in range(nd)))
    else:
        d = anp.diff(x, axis=axis)
    upper = _getitem(y, _along(ax, slice(1, None), nd))
    lower = _getitem(y, _along(ax, slice(None, -1), nd))
    return _sum(d * (upper + lower) / 2.0, axis=axis)


# ---------------------------------------------------------------------------------------
# Products


def _tensordot_axes(axes, nA, nB):
    if isinstance(axes, (int, onp.integer)):
        return list(range(nA - axes, nA)), list(range(axes))
    a_axes, b_axes = axes
    a_axes = [a_axes] if isinstance(a_axes, (int, onp.integer)) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, (int, onp.integer)) else list(b_axes)
    return [int(a) % nA for a in a_axes], [int(b) % nB for b in b_axes]


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
            return unbroadcast(g @ B.T, A)  # as in matmul's rule: no dispatcher, no zero fill
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
            return unbroadcast(A.T @ g, B)
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
        return unbroadcast(_expand_dims(g, -1) * B, A)  # (..., m, k)
    if nA == 1:  # A (k,), g (..., n)
        return unbroadcast(_squeeze(_matmul(B, _expand_dims(g, -1)), -1), A)
    if nB == 2 and nA == 2:
        # the @ operator and .T: no NumPy dispatcher calls, no zero-filled output (np.dot's)
        return unbroadcast(g @ B.T, A)
    return unbroadcast(_matmul(g, _mT(B)), A)


def _matmul_vjp_b(g, ans, A, B, *args, **kwargs):
    nA, nB = _ndim(A), _ndim(B)
    if nB == 1:
        if nA == 1:
            return unbroadcast(A * g, B)
        if nA == 2:
            return unbroadcast(_dot(g, A), B)
        return unbroadcast(_squeeze(_matmul(_expand_dims(g, -2), A), -2), B)
    if nA == 1:  # dB (..., k, n)
        return unbroadcast(_expand_dims(A, -1) * _expand_dims(g, -2), B)
    if nA == 2 and nB == 2:
        return unbroadcast(A.T @ g, B)
    return unbroadcast(_matmul(_mT(A), g), B)


_defvjp(anp.matmul, _matmul_vjp_a, _matmul_vjp_b, uses=_ARGS)


def _outer_vjp_a(g, ans, a, b, out=None):
    return unbroadcast(_reshape(_dot(g, anp.ravel(b)), _shape(a)), a)


def _outer_vjp_b(g, ans, a, b, out=None):
    return unbroadcast(_reshape(_dot(anp.ravel(a), g), _shape(b)), b)


defvjp_direct(anp.outer, _outer_vjp_a, _outer_vjp_b)


# vdot(a, b) = sum(conj(a) * b) over the flattened arrays: conjugate-linear in a
def _vdot_vjp_a(g, ans, a, b):
    r = g * anp.ravel(b)
    if _is_complex(a) or _is_complex(b) or _is_complex(g):
        r = _conj(r)
    return unbroadcast(_reshape(r, _shape(a)), a)


def _vdot_vjp_b(g, ans, a, b):
    ca = _conj(a) if _is_complex(a) else a
    return unbroadcast(_reshape(g * anp.ravel(ca), _shape(b)), b)


defvjp_direct(anp.vdot, _vdot_vjp_a, _vdot_vjp_b)


def _gufunc_axis(name, kwargs):
    if "axes" in kwargs and kwargs["axes"] is not _NoValue:
        raise NotImplementedError("derivative of {} with axes= is not implemented".format(name))
    axis = kwargs.get("axis", _NoValue)
    return -1 if axis is _NoValue else axis


def _vecdot_vjp_x1(g, ans, x1, x2, *args, **kwargs):
    axis = _gufunc_axis("vecdot", kwargs)
    if not kwargs.get("keepdims", False):
        g = _expand_dims(g, axis)
    r = g * x2
    if _is_complex(r) or _is_complex(x1):
        r = _conj(r)
    return unbroadcast(r, x1)


def _vecdot_vjp_x2(g, ans, x1, x2, *args, **kwargs):
    axis = _gufunc_axis("vecdot", kwargs)
    if not kwargs.get("keepdims", False):
        g = _expand_dims(g, axis)
    return unbroadcast(g * (_conj(x1) if _is_complex(x1) else x1), x2)


defvjp_direct(anp.vecdot, _vecdot_vjp_x1, _vecdot_vjp_x2)


def _plain_gufunc(name, kwargs):
    for k in ("axes", "axis"):
        if k in kwargs and kwargs[k] is not _NoValue:
            raise NotImplementedError("derivative of {} with {}= is not implemented".format(name, k))


def _matvec_vjp_x1(g, ans, x1, x2, *args, **kwargs):  # x1 (..., m, n), x2 (..., n)
    _plain_gufunc("matvec", kwargs)
    return unbroadcast(_expand_dims(g, -1) * _expand_dims(x2, -2), x1)


def _matvec_vjp_x2(g, ans, x1, x2, *args, **kwargs):
    _plain_gufunc("matvec", kwargs)
    return unbroadcast(_squeeze(_matmul(_expand_dims(g, -2), x1), -2), x2)


defvjp_direct(anp.matvec, _matvec_vjp_x1, _matvec_vjp_x2)


def _vecmat_vjp_x1(g, ans, x1, x2, *args, **kwargs):  # conj(x1) (..., n) @ x2 (..., n, m)
    _plain_gufunc("vecmat", kwargs)
    r = _squeeze(_matmul(x2, _expand_dims(g, -1)), -1)
    if _is_complex(r) or _is_complex(x1):
        r = _conj(r)
    return unbroadcast(r, x1)


def _vecmat_vjp_x2(g, ans, x1, x2, *args, **kwargs):
    _plain_gufunc("vecmat", kwargs)
    c1 = _conj(x1) if _is_complex(x1) else x1
    return unbroadcast(_expand_dims(c1, -1) * _expand_dims(g, -2), x2)


defvjp_direct(anp.vecmat, _vecmat_vjp_x1, _vecmat_vjp_x2)


# ---- einsum -------------------------------------------------------------------------

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _sublist_letters(sub):
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        else:
            out.append(_LETTERS[int(s)])
    return "".join(out)


def einsum_spec(args):
    """``(operand argnums, per-operand letter lists, output letters)`` of an einsum call
    (string or sublist form), with ellipses replaced by explicit letters."""
    if isinstance(args[0], str):
        subs = args[0].replace(" ", "")
        argnums = list(range(1, len(args)))
        if "->" in subs:
            ins, out = subs.split("->")
        else:
            ins, out = subs, None
        in_subs = ins.split(",")
    else:
        nops = len(args) // 2
        argnums = [2 * k for k in range(nops)]
        in_subs = [_sublist_letters(args[2 * k + 1]) for k in range(nops)]
        out = _sublist_letters(args[-1]) if len(args) % 2 else None
    used = set("".join(in_subs) + (out or "")) - set(".")
    free = [c for c in _LETTERS if c not in used]
    ell_dims = []
    for sub, k in zip(in_subs, argnums):
        if "..." in sub:
            ell_dims.append(_ndim(args[k]) - (len(sub) - 3))
        else:
            ell_dims.append(0)
    n_ell = max(ell_dims) if ell_dims else 0
    ell = free[:n_ell]
    ops = []
    for sub, ne in zip(in_subs, ell_dims):
        if "..." in sub:
            pre, post = sub.split("...")
            ops.append(list(pre) + ell[n_ell - ne :] + list(post))
        else:
            ops.append(list(sub))
    if out is None:
        counts = {}
        for letters in ops:
            for c in letters:
                if c not in ell:
                    counts[c] = counts.get(c, 0) + 1
        out_letters = ell + sorted(c for c, n in counts.items() if n == 1)
    elif "..." in out:
        pre, post = out.split("...")
        out_letters = list(pre) + ell + list(post)
    else:
        out_letters = list(out)
    return argnums, ops, out_letters


def _einsum_vjp_argnum(argnum, g, args, kwargs):
    argnums, ops, out_letters = einsum_spec(args)
    k = argnums.index(argnum)
    x = args[argnum]
    letters = ops[k]
    xshape = _shape(x)
    sizes = dict(zip(letters, xshape))
    unique = []
    for c in letters:
        if c not in unique:
            unique.append(c)
    elsewhere = set(out_letters)
    for j, other in enumerate(ops):
        if j != k:
            elsewhere.update(other)
    found = [c for c in unique if c in elsewhere]
    terms = ["".join(out_letters)] + ["".join(ops[j]) for j in range(len(ops)) if j != k]
    operands = [g] + [args[argnums[j]] for j in range(len(ops)) if j != k]
    r = _einsum(",".join(terms) + "->" + "".join(found), *operands, optimize=kwargs.get("optimize", False))
    rshape = _shape(r)
    rsizes = dict(zip(found, rshape))
    # letters only in x: the cotangent is constant along them
    if len(found) < len(unique):
        r = _reshape(r, tuple(rsizes[c] if c in rsizes else 1 for c in unique))
        r = _broadcast_to(r, tuple(rsizes[c] if c in rsizes else sizes[c] for c in unique))
    # repeated letters in x (a diagonal): embed with identity factors
    if len(unique) < len(letters):
        first = {}
        layout = []
        for pos, c in enumerate(letters):
            if c in first:
                layout.append(1)
            else:
                first[c] = pos
                layout.append(_shape(r)[unique.index(c)])
        r = _reshape(r, tuple(layout))
        rdt = _real_dtype(_meta(x)[1])
        for pos, c in enumerate(letters):
            if first[c] != pos:
                n = sizes[c]
                eshape = [1] * len(letters)
                eshape[first[c]] = n
                eshape[pos] = n
                r = r * onp.eye(n, dtype=rdt).reshape(eshape)
    return unbroadcast(r, x)


def _einsum_vjp(argnums, ans, args, kwargs):
    return lambda g: [_einsum_vjp_argnum(i, g, args, kwargs) for i in argnums]


defvjp_argnums(anp.einsum, _einsum_vjp)


# ---- kron, cross, convolve, correlate -----------------------------------------------


def _kron_layout(a, b):
    sa, sb = _shape(a), _shape(b)
    nd = max(len(sa), len(sb))
    sa = (1,) * (nd - len(sa)) + sa
    sb = (1,) * (nd - len(sb)) + sb
    inter = tuple(s for pair in zip(sa, sb) for s in pair)
    return nd, sa, sb, inter


def _kron_vjp_a(g, ans, a, b):
    nd, sa, sb, inter = _kron_layout(a, b)
    G = _reshape(g, inter)
    r = _tensordot(G, _reshape(b, sb), axes=(list(range(1, 2 * nd, 2)), list(range(nd))))
    return unbroadcast(_reshape(r, _shape(a)), a)


def _kron_vjp_b(g, ans, a, b):
    nd, sa, sb, inter = _kron_layout(a, b)
    G = _reshape(g, inter)
    r = _tensordot(G, _reshape(a, sa), axes=(list(range(0, 2 * nd, 2)), list(range(nd))))
    return unbroadcast(_reshape(r, _shape(b)), b)


defvjp_direct(anp.kron, _kron_vjp_a, _kron_vjp_b)


@_from_impl(anp.cross, argnums=(0, 1))
def _cross_impl(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    a = _moveaxis(a, axisa, -1)
    b = _moveaxis(b, axisb, -1)
    na, nb = _shape(a)[-1], _shape(b)[-1]
    a0, a1 = _getitem(a, (Ellipsis, 0)), _getitem(a, (Ellipsis, 1))
    b0, b1 = _getitem(b, (Ellipsis, 0)), _getitem(b, (Ellipsis, 1))
    c2 = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return c2
    a2 = _getitem(a, (Ellipsis, 2)) if na == 3 else None
    b2 = _getitem(b, (Ellipsis, 2)) if nb == 3 else None
    if a2 is None:
        c0, c1 = a1 * b2, -(a0 * b2)
    elif b2 is None:
        c0, c1 = -(a2 * b1), a2 * b0
    else:
        c0, c1 = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    shape = onp.broadcast_shapes(_shape(c0), _shape(c1), _shape(c2))
    parts = [p if _shape(p) == shape else _broadcast_to(p, shape) for p in (c0, c1, c2)]
    return _moveaxis(_stack(*parts, axis=-1), -1, axisc)


def _embed_full(g, n, m, mode):
    """A cotangent of convolve(a, v, mode) (lengths n, m) as one of mode 'full'."""
    if mode == "full":
        return g
    lo = min(n, m)
    off = (lo - 1) // 2 if mode == "same" else lo - 1
    total = n + m - 1
    dtype = _meta(g)[1]
    parts = [onp.zeros(off, dtype), g, onp.zeros(total - off - _shape(g)[0], dtype)]
    return _concat(*parts, axis=0)


def _convolve_vjp(which):
    def rule(g, ans, a, v, mode="full"):
        if isinstance(mode, int):
            mode = {0: "valid", 1: "same", 2: "full"}[mode]
        fa, fv = anp.ravel(a), anp.ravel(v)
        n, m = _shape(fa)[0], _shape(fv)[0]
        gf = _embed_full(g, n, m, mode)
        if which == 0:  # r_i = sum_j gf[i + j] v[j]
            r = _getitem(_convolve(gf, _flip(fv, 0)), slice(m - 1, m - 1 + n))
            return unbroadcast(_reshape(r, _shape(a)), a)
        r = _getitem(_convolve(gf, _flip(fa, 0)), slice(n - 1, n - 1 + m))
        return unbroadcast(_reshape(r, _shape(v)), v)

    return rule


defvjp_direct(anp.convolve, _convolve_vjp(0), _convolve_vjp(1))


@_from_impl(anp.correlate, argnums=(0, 1))
def _correlate_impl(a, v, mode="valid"):
    # NumPy correlates the longer sequence against the shorter one and reverses (and
    # conjugates) the result when a is the shorter: for 'same' with even len(a) that picks
    # a different window than convolving a with reversed v, so do exactly the same.
    if _shape(a)[0] < _shape(v)[0]:
        r = _correlate_ordered(v, a, mode)
        return _flip(_conj(r) if _is_complex(r) else r, 0)
    return _correlate_ordered(a, v, mode)


def _correlate_ordered(a, v, mode):
    fv = _flip(anp.ravel(v), 0)
    if _is_complex(v):
        fv = _conj(fv)
    return _convolve(a, fv, mode)


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


def _atleast_vjp(argnums, ans, args, kwargs):
    if len(args) == 1:
        return lambda g: [unbroadcast(_reshape(g, _shape(args[0])), args[0])]
    return lambda g: [unbroadcast(_reshape(_getitem_seq(g, i), _shape(args[i])), args[i]) for i in argnums]


def _getitem_seq(g, i):
    return g[i]


for _f in (anp.atleast_1d, anp.atleast_2d, anp.atleast_3d):
    defvjp_argnums(_f, _atleast_vjp)


def _broadcast_arrays_vjp(argnums, ans, args, kwargs):
    return lambda g: [unbroadcast(g[i], args[i]) for i in argnums]


defvjp_argnums(anp.broadcast_arrays, _broadcast_arrays_vjp)


def _transpose_vjp(g, ans, x, axes=None):
    if axes is None:
        return unbroadcast(_transpose(g), x)
    nd = _ndim(x)
    return unbroadcast(_transpose(g, _argsort([int(a) % nd for a in axes])), x)


def rollaxis_perm(nd, axis, start=0):
    """The axes permutation np.rollaxis(a, axis, start) applies to an ``nd``-dim array."""
    axis = int(axis) % nd if nd else 0
    start = int(start)
    if start < 0:
        start += nd
    if axis < start:
        start -= 1
    perm = [i for i in range(nd) if i != axis]
    perm.insert(start, axis)
    return perm


defvjp_direct(anp.transpose, _transpose_vjp)
defvjp_direct(anp.permute_dims, _transpose_vjp)
defvjp_direct(
    anp.rollaxis,
    lambda g, ans, x, axis, start=0: unbroadcast(_transpose(g, _argsort(rollaxis_perm(_ndim(x), axis, start))), x),
)
defvjp_direct(anp.swapaxes, lambda g, ans, x, axis1, axis2: unbroadcast(_swapaxes(g, axis1, axis2), x))
defvjp_direct(anp.moveaxis, lambda g, ans, x, source, destination: unbroadcast(_moveaxis(g, destination, source), x))
defvjp_direct(anp.matrix_transpose, lambda g, ans, x: unbroadcast(_mT(g), x))
defvjp_direct(anp.broadcast_to, lambda g, ans, x, shape, *a, **k: unbroadcast(g, x))
defvjp_direct(anp.flip, lambda g, ans, x, axis=None: unbroadcast(_flip(g, axis), x))
defvjp_direct(anp.flipud, lambda g, ans, x: unbroadcast(anp.flipud(g), x))
defvjp_direct(anp.fliplr, lambda g, ans, x: unbroadcast(anp.fliplr(g), x))
defvjp_direct(anp.rot90, lambda g, ans, x, k=1, axes=(0, 1): unbroadcast(anp.rot90(g, -k, axes), x))


def _neg_shift(shift):
    if isinstance(shift, (tuple, list)):
        return tuple(-int(s) for s in shift)
    if isinstance(shift, _ndarray):
        return -shift
    return -int(shift)


defvjp_direct(anp.roll, lambda g, ans, x, shift, axis=None: unbroadcast(anp.roll(g, _neg_shift(shift), axis), x), None)
defvjp_direct(anp.copy, lambda g, ans, x, *a, **k: unbroadcast(g, x))
defvjp_direct(anp.astype_method, lambda g, ans, x, *a, **k: unbroadcast(g, x))
defvjp_direct(anp.astype, lambda g, ans, x, *a, **k: unbroadcast(g, x))
defvjp_direct(
    anp.diagonal,
    lambda g, ans, x, offset=0, axis1=0, axis2=1: unbroadcast(
        anp.diag_embed(g, offset, axis1 % _ndim(x), axis2 % _ndim(x), _shape(x)), x
    ),
)
defvjp_direct(
    anp.diag_embed, lambda g, ans, d, offset, axis1, axis2, shape: unbroadcast(_diagonal(g, offset, axis1, axis2), d)
)


def _diag_vjp(g, ans, v, k=0):
    if _ndim(v) == 1:
        return unbroadcast(_diagonal(g, k), v)
    return unbroadcast(anp.diag_embed(g, k, 0, 1, _shape(v)), v)


defvjp_direct(anp.diag, _diag_vjp)
defvjp_direct(anp.tril, lambda g, ans, x, k=0: unbroadcast(anp.tril(g, k), x))
defvjp_direct(anp.triu, lambda g, ans, x, k=0: unbroadcast(anp.triu(g, k), x))


def _tile_vjp(g, ans, A, reps):
    shape = _shape(A)
    reps = tuple(reps) if isinstance(reps, (tuple, list, _ndarray)) else (reps,)
    d = max(len(reps), len(shape))
    sh = (1,) * (d - len(shape)) + shape
    rp = (1,) * (d - len(reps)) + tuple(int(r) for r in reps)
    inter = tuple(s for pair in zip(rp, sh) for s in pair)
    r = _sum(_reshape(g, inter), axis=tuple(range(0, 2 * d, 2)))
    return unbroadcast(_reshape(r, shape), A)


defvjp_direct(anp.tile, _tile_vjp)


# ---- pad --------------------------------------------------------------------------

_PAD_SELECTION_MODES = ("constant", "edge", "wrap", "empty")
_PAD_LINEAR_MODES = ("reflect", "symmetric", "linear_ramp", "mean")
PAD_STAT_MODES = ("maximum", "minimum", "median")  # through pad_stat_impl


def _pad_pairs(value, nd):
    return [tuple(int(v) for v in row) for row in onp.broadcast_to(onp.asarray(value), (nd, 2))]


def pad_linear_kwargs(mode, kwargs):
    """The kwargs of np.pad for the linear part of a padding (constants set to 0)."""
    kw = dict(kwargs)
    if mode == "constant":
        kw["constant_values"] = 0
    elif mode == "linear_ramp":
        kw["end_values"] = 0
    return kw


def _pad_is_selection(mode, kwargs):
    if mode in _PAD_SELECTION_MODES:
        return True
    return mode in ("reflect", "symmetric") and kwargs.get("reflect_type", "even") == "even"


def _pad_check(mode):
    modes = _PAD_SELECTION_MODES + _PAD_LINEAR_MODES + PAD_STAT_MODES
    if not isinstance(mode, str) or mode not in modes:
        raise NotImplementedError(
            "derivative of np.pad with mode={!r} is not implemented (supported: {})".format(mode, ", ".join(modes))
        )


def _pad_axis_matrix(n, before, after, mode, kwargs, axis, nd):
    """The matrix M (n + before + after, n) of padding one axis (linear part)."""
    kw = {}
    for key, value in pad_linear_kwargs(mode, kwargs).items():
        if key in ("stat_length", "constant_values", "end_values") and value is not None:
            pair = onp.broadcast_to(onp.asarray(value), (nd, 2))[axis]
            kw[key] = (tuple(pair), (1, 1)) if key == "stat_length" else (tuple(pair), (0, 0))
        else:
            kw[key] = value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return onp.pad(onp.eye(n), ((before, after), (0, 0)), mode, **kw)


def _pad_vjp(g, ans, x, pad_width, mode="constant", **kwargs):
    _pad_check(mode)
    if mode in PAD_STAT_MODES:
        return vjp_from_impl(pad_stat_impl, 0)(g, ans, x, pad_width, mode, **kwargs)
    shape = _shape(x)
    nd = len(shape)
    if _pad_is_selection(mode, kwargs):
        idx = onp.arange(1, math.prod(shape) + 1, dtype=onp.intp).reshape(shape)
        kw = {} if mode in ("constant", "empty") else {k: v for k, v in kwargs.items() if k == "reflect_type"}
        P = onp.pad(idx, pad_width, "constant" if mode == "empty" else mode, **kw)
        mask = P > 0
        where_from = onp.unravel_index(P[mask] - 1, shape)
        return _untake(_getitem(g, mask), where_from, _vs(x))
    widths = _pad_pairs(pad_width, nd)
    r = g
    dtype = _real_dtype(_meta(x)[1])
    for ax in range(nd):
        before, after = widths[ax]
        if before == 0 and after == 0:
            continue
        M = _pad_axis_matrix(shape[ax], before, after, mode, kwargs, ax, nd).astype(dtype)
        r = _moveaxis(_tensordot(r, M, axes=([ax], [0])), -1, ax)
    return unbroadcast(r, x)


defvjp_direct(anp.pad, _pad_vjp)


# ---- sort, partition, take_along_axis, choose ----------------------------------------


def permutation_index(x, ans, axis):
    """A NumPy index ``idx`` with ``ans == x[idx]``, for ``ans`` a permutation of ``x``
    along ``axis`` (or of the flattened x for axis None), e.g. sorted or partitioned.
    Equal values are matched in a stable order."""
    xv = onp.asarray(getval(x))
    av = onp.asarray(getval(ans))
    if axis is None:
        sx = onp.argsort(xv.ravel(), kind="stable")
        sa = onp.argsort(av, kind="stable")
        p = onp.empty_like(sx)
        p[sa] = sx
        return onp.unravel_index(p, xv.shape)
    axis = int(axis) % xv.ndim
    sx = onp.argsort(xv, axis=axis, kind="stable")
    sa = onp.argsort(av, axis=axis, kind="stable")
    p = onp.empty_like(sx)
    onp.put_along_axis(p, sa, sx, axis=axis)
    return along_axis_index(p, axis, xv.shape)


def along_axis_index(indices, axis, shape):
    """The fancy index equivalent to np.take_along_axis(a, indices, axis) for ``a`` of
    ``shape`` (axis None: ``a`` flattened)."""
    indices = onp.asarray(indices)
    if axis is None:
        n = math.prod(shape)
        return onp.unravel_index(onp.where(indices < 0, indices + n, indices), shape)
    nd = len(shape)
    axis = int(axis) % nd
    idx = []
    for d in range(nd):
        if d == axis:
            idx.append(indices)
        else:
            idx.append(onp.arange(shape[d]).reshape((1,) * d + (-1,) + (1,) * (nd - d - 1)))
    return tuple(idx)


def _sort_vjp(g, ans, x, axis=-1, *args, **kwargs):
    return _untake(g, permutation_index(x, ans, axis), _vs(x))


def _partition_vjp(g, ans, x, kth, axis=-1, *args, **kwargs):
    return _untake(g, permutation_index(x, ans, axis), _vs(x))


defvjp_direct(anp.sort, _sort_vjp)
defvjp_direct(anp.partition, _partition_vjp, None)
defvjp_direct(
    anp.take_along_axis,
    lambda g, ans, arr, indices, axis=-1: _untake(g, along_axis_index(getval(indices), axis, _shape(arr)), _vs(arr)),
    None,
)


def choose_mask(a, choices, mode="raise"):
    """One-hot selections of np.choose(a, choices): shape (n,) + broadcast shape."""
    av = onp.asarray(getval(a))
    cshape = _shape(choices)
    n = cshape[0]
    if mode == "wrap":
        av = av % n
    elif mode == "clip":
        av = onp.clip(av, 0, n - 1)
    bshape = onp.broadcast_shapes(av.shape, cshape[1:])
    av = onp.broadcast_to(av, bshape)
    return av[None] == onp.arange(n).reshape((n,) + (1,) * len(bshape))


def _choose_vjp(g, ans, a, choices, out=None, mode="raise"):
    mask = choose_mask(a, choices, mode)
    return unbroadcast(_where(mask, _expand_dims(g, 0), 0.0), choices)


defvjp_direct(anp.choose, None, _choose_vjp)


# ---- diff, gradient -------------------------------------------------------------------


@_from_impl(anp.diff)
def _diff_impl(a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
    if n == 0:
        return a  # NumPy returns a unchanged and ignores prepend/append
    nd = _ndim(a)
    ax = axis % nd
    parts = []
    for extra in (prepend, append):
        if extra is _NoValue:
            parts.append(None)
            continue
        e = onp.asarray(extra)
        if e.ndim == 0:
            shape = list(_shape(a))
            shape[ax] = 1
            e = onp.broadcast_to(e, tuple(shape))
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        items = ([parts[0]] if parts[0] is not None else []) + [a] + ([parts[1]] if parts[1] is not None else [])
        a = _concat(*items, axis=ax)
    for _ in range(n):
        a = _getitem(a, _along(ax, slice(1, None), nd)) - _getitem(a, _along(ax, slice(None, -1), nd))
    return a


def gradient_bands(n, spacing, edge_order):
    """np.gradient along one axis of length ``n`` is ``out_i = sum_r C[r, i] f[J[r, i]]``:
    the three bands (C, J) read off NumPy's own gradient applied to period-3 combs (every
    row's stencil lies in a window of 3 consecutive entries, one per residue mod 3)."""
    i = onp.arange(n)
    start = onp.clip(i - 1, 0, max(n - 3, 0))
    C = onp.empty((3, n))
    J = onp.empty((3, n), dtype=onp.intp)
    args = () if spacing is None else (spacing,)
    for r in range(3):
        comb = (i % 3 == r).astype(float)
        C[r] = onp.gradient(comb, *args, edge_order=edge_order)
        j = start + (r - start) % 3
        valid = j < n
        J[r] = onp.where(valid, j, i)
        C[r] = onp.where(valid, C[r], 0.0)
    return C, J


@_from_impl(anp.gradient)
def _gradient_impl(f, *varargs, axis=None, edge_order=1):
    shape = _shape(f)
    nd = len(shape)
    if axis is None:
        axes = list(range(nd))
    elif isinstance(axis, (int, onp.integer)):
        axes = [int(axis) % nd]
    else:
        axes = [int(a) % nd for a in axis]
    if len(varargs) == 0:
        spacings = [None] * len(axes)
    elif len(varargs) == 1 and onp.ndim(getval(varargs[0])) == 0:
        spacings = [getval(varargs[0])] * len(axes)
    else:
        spacings = [getval(v) for v in varargs]
    outs = []
    dtype = _real_dtype(_meta(f)[1])
    for ax, sp in zip(axes, spacings):
        C, J = gradient_bands(shape[ax], sp, edge_order)
        bshape = [1] * nd
        bshape[ax] = shape[ax]
        total = None
        for r in range(3):
            term = anp.take(f, J[r], axis=ax) * C[r].astype(dtype).reshape(bshape)
            total = term if total is None else total + term
        outs.append(total)
    if len(outs) == 1:
        return outs[0]
    return _fg_tuple(outs)


# ---------------------------------------------------------------------------------------
# Building arrays from traced elements, joining, splitting


def _array_from_args_vjp(argnums, ans, args, kwargs):
    return lambda g: [unbroadcast(_getitem(g, i), args[i]) for i in argnums]


defvjp_argnums(anp.array_from_args, _array_from_args_vjp)


def _concatenate_vjp(argnums, ans, args, kwargs):
    axis = kwargs.get("axis", 0)
    nd = _ndim(ans)
    ax = axis % nd
    bounds, start = [], 0
    for a in args:
        stop = start + _shape(a)[ax]
        bounds.append((start, stop))
        start = stop
    return lambda g: [unbroadcast(_getitem(g, _along(ax, slice(*bounds[i]), nd)), args[i]) for i in argnums]


defvjp_argnums(anp.concatenate_args, _concatenate_vjp)


def _stack_vjp(argnums, ans, args, kwargs):
    nd = _ndim(ans)
    ax = kwargs.get("axis", 0) % nd
    return lambda g: [unbroadcast(_getitem(g, _along(ax, i, nd)), args[i]) for i in argnums]


defvjp_argnums(anp.stack_args, _stack_vjp)


def _split_axis(name, x, kwargs, args):
    if name == "hsplit":
        return 1 if _ndim(x) > 1 else 0
    if name == "vsplit":
        return 0
    if name == "dsplit":
        return 2
    if args:
        return args[0]
    return kwargs.get("axis", 0)


def _split_rule(name):
    def rule(g, ans, x, indices_or_sections, *args, **kwargs):
        axis = _split_axis(name, x, kwargs, args)
        parts = [g[i] for i in range(len(ans))]
        return unbroadcast(anp.concatenate(parts, axis=axis), x)

    return rule


for _name in ("split", "array_split", "hsplit", "vsplit", "dsplit"):
    defvjp_direct(getattr(anp, _name), _split_rule(_name), None)
defvjp_direct(
    anp.unstack, lambda g, ans, x, *, axis=0: unbroadcast(anp.stack([g[i] for i in range(len(ans))], axis=axis), x)
)


# ---------------------------------------------------------------------------------------
# full, linspace

defvjp_direct(anp.full, None, lambda g, ans, shape, fill_value, *a, **k: unbroadcast(g, fill_value))


def linspace_weights(ans_shape, num, endpoint, axis):
    """The weight of ``stop`` in each sample (1 - it is the weight of ``start``), shaped to
    broadcast along the samples' axis of the result."""
    t = onp.linspace(0.0, 1.0, num, endpoint=endpoint)
    nd = len(ans_shape)
    ax = axis % nd
    return t.reshape((num,) + (1,) * (nd - 1 - ax)), ax


def _linspace_rule(which):
    def rule(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, **kwargs):
        num = int(num)
        gstep = None
        if retstep:
            g, gstep = g[0], g[1]
            ans = ans[0]
        t, ax = linspace_weights(_shape(ans), num, endpoint, axis)
        w = t if which == 1 else 1.0 - t
        r = _sum(g * w.astype(_real_dtype(_meta(g)[1])), axis=ax)
        div = (num - 1) if endpoint else num
        if gstep is not None and div > 0:
            r = r + gstep * ((1.0 if which == 1 else -1.0) / div)
        target = stop if which == 1 else start
        return unbroadcast(r, target)

    return rule


defvjp_direct(anp.linspace, _linspace_rule(0), _linspace_rule(1))


# ---------------------------------------------------------------------------------------
# Selection: where, clip, indexing

defvjp_direct(
    anp.where3,
    None,
    lambda g, ans, c, x, y: unbroadcast(_where(getval(c), g, 0.0), x),
    lambda g, ans, c, x, y: unbroadcast(_where(getval(c), 0.0, g), y),
)


def clip_masks(x, a_min, a_max, kwargs):
    """Which of (x, lower bound, upper bound) each entry of np.clip's result comes from,
    as np.clip computes min(max(x, lo), hi): a bound gets the entries equal to it."""
    lo = kwargs.get("min", a_min)
    hi = kwargs.get("max", a_max)
    lo = None if _unset(lo) else getval(lo)
    hi = None if _unset(hi) else getval(hi)
    xv = getval(x)
    inner = xv if lo is None else onp.maximum(xv, lo)
    m_hi = False if hi is None else onp.asarray(inner >= hi)
    m_lo = False if lo is None else onp.logical_and(onp.logical_not(m_hi), xv <= lo)
    m_x = onp.logical_not(onp.logical_or(m_hi, m_lo))
    return m_x, m_lo, m_hi


def _clip_rule(which):
    def rule(g, ans, x, a_min=None, a_max=None, out=None, **kwargs):
        masks = clip_masks(x, a_min, a_max, kwargs)
        target = (x, a_min, a_max)[which]
        return unbroadcast(_where(masks[which], g, 0.0), target)

    return rule


defvjp_direct(anp.clip, _clip_rule(0), _clip_rule(1), _clip_rule(2))


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


defvjp_direct(anp.take, _take_vjp, None)
defvjp_direct(anp.compress, None, _compress_vjp)
defvjp_direct(anp.repeat, _repeat_vjp, None)


def _trace_vjp(g, ans, x, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    shape = _shape(x)
    nd = len(shape)
    k = onp.diagonal(onp.empty(shape, dtype=bool), offset, axis1, axis2).shape[-1]
    gshape = _shape(g)
    gd = _broadcast_to(_reshape(g, gshape + (1,)), gshape + (k,))
    return unbroadcast(anp.diag_embed(gd, offset, axis1 % nd, axis2 % nd, shape), x)


defvjp_direct(anp.trace, _trace_vjp)


# ---- interp --------------------------------------------------------------------------


@_from_impl(anp.interp, argnums=(0, 1, 2))
def _interp_impl(x, xp, fp, left=None, right=None, period=None):
    if period is not None:
        period = abs(getval(period))
        x = anp.remainder(x, period)
        xp = anp.remainder(xp, period)
        order = onp.argsort(getval(xp), kind="stable")
        xp, fp = _getitem(xp, order), _getitem(fp, order)
        xp = _concat(_getitem(xp, slice(-1, None)) - period, xp, _getitem(xp, slice(0, 1)) + period, axis=0)
        fp = _concat(_getitem(fp, slice(-1, None)), fp, _getitem(fp, slice(0, 1)), axis=0)
        left = right = None
    xv, xpv = onp.asarray(getval(x)), onp.asarray(getval(xp))
    n = xpv.shape[0]
    if n == 1:
        inside = _broadcast_to(_getitem(fp, 0), xv.shape)
    else:
        i = onp.clip(onp.searchsorted(xpv, xv, side="right") - 1, 0, n - 2)
        x0, x1 = _getitem(xp, i), _getitem(xp, i + 1)
        f0, f1 = _getitem(fp, i), _getitem(fp, i + 1)
        inside = f0 + (f1 - f0) * ((x - x0) / (x1 - x0))
    lft = _getitem(fp, 0) if left is None else left
    rgt = _getitem(fp, -1) if right is None else right
    below, above = xv < xpv[0], xv > xpv[-1]
    out = inside
    if onp.any(below):
        out = _where(below, lft, out)
    if onp.any(above):
        out = _where(above, rgt, out)
    return out


# ---------------------------------------------------------------------------------------
# Indexing and the rest


def _bincount_vjp_weights(g, ans, x, weights=None, minlength=0):
    return unbroadcast(_getitem(g, onp.asarray(getval(x))), weights)


defvjp_direct(anp.bincount, None, _bincount_vjp_weights)
defvjp_direct(anp.getitem, lambda g, ans, A, idx: _untake(g, idx, _vs(A)), None)
defvjp_direct(anp.untake, lambda g, ans, x, idx, vs: _getitem(g, idx), None, None)


# ---------------------------------------------------------------------------------------
# More functions: conversions, selections by index, compositions

# conversions that return their argument's values
for _f in (anp.ascontiguousarray, anp.asfortranarray, anp.asanyarray, anp.asarray_chkfinite, anp.require):
    defvjp_direct(_f, lambda g, ans, x, *a, **k: unbroadcast(g, x))

defvjp_direct(anp.unwrap, lambda g, ans, p, *a, **k: unbroadcast(g, p))  # p + a piecewise constant
defvjp_direct(anp.diagflat, lambda g, ans, v, k=0: unbroadcast(_reshape(_diagonal(g, k), _shape(v)), v))


def selection_index(fun, argnum, args, kwargs):
    """For ``fun`` that only selects (and repeats) entries of ``args[argnum]`` or fills
    constants: the flat indices ``P`` (shape of the result, -1 for a constant) with
    ``result == x.ravel()[P]`` where ``P >= 0``, found by applying fun to the indices."""
    x = args[argnum]
    shape = _shape(x)
    idx = onp.arange(1, math.prod(shape) + 1, dtype=onp.intp).reshape(shape)
    raw = getattr(fun, "fun", fun)
    plain = [getval(a) for a in args]
    plain[argnum] = idx
    return onp.asarray(raw(*plain, **kwargs)) - 1


def _selection_vjp(fun, argnum):
    def rule(g, ans, *args, **kwargs):
        P = selection_index(fun, argnum, args, kwargs)
        x = args[argnum]
        mask = P >= 0
        if onp.all(mask):
            return _untake(g, onp.unravel_index(P, _shape(x)), _vs(x))
        return _untake(_getitem(g, mask), onp.unravel_index(P[mask], _shape(x)), _vs(x))

    return rule


SELECTIONS = {anp.resize: 0, anp.delete: 0, anp.extract: 1}
for _f, _i in SELECTIONS.items():
    defvjp_direct(_f, *[_selection_vjp(_f, _i) if k == _i else None for k in range(_i + 1)])


@_from_impl(anp.logspace, argnums=(0, 1, 4))
def _logspace_impl(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    y = anp.linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    if _ndim(base) > 0:
        base = _expand_dims(base, axis)
    r = anp.power(base, y)
    return r if dtype is None else _astype(r, dtype)


@_from_impl(anp.polyval, argnums=(0, 1))
def _polyval_impl(p, x):
    y = onp.zeros_like(onp.asarray(getval(x)), dtype=onp.result_type(getval(p), getval(x)))
    for k in range(_shape(p)[0]):
        y = y * x + _getitem(p, k)
    return y


def _poly_pad(a, n):
    """Coefficients ``a`` with leading zeros up to length ``n``."""
    k = _shape(a)[0]
    if k == n:
        return a
    return _concat(onp.zeros(n - k, _meta(a)[1]), a, axis=0)


@_from_impl(anp.polyadd, argnums=(0, 1))
def _polyadd_impl(a1, a2):
    a1, a2 = anp.atleast_1d(a1), anp.atleast_1d(a2)
    n = max(_shape(a1)[0], _shape(a2)[0])
    return _poly_pad(a1, n) + _poly_pad(a2, n)


@_from_impl(anp.polysub, argnums=(0, 1))
def _polysub_impl(a1, a2):
    a1, a2 = anp.atleast_1d(a1), anp.atleast_1d(a2)
    n = max(_shape(a1)[0], _shape(a2)[0])
    return _poly_pad(a1, n) - _poly_pad(a2, n)


@_from_impl(anp.polymul, argnums=(0, 1))
def _polymul_impl(a1, a2):
    return _convolve(anp.atleast_1d(a1), anp.atleast_1d(a2))


@_from_impl(anp.polyder)
def _polyder_impl(p, m=1):
    p = anp.atleast_1d(p)
    for _ in range(m):
        n = _shape(p)[0] - 1
        p = _getitem(p, slice(None, -1)) * onp.arange(n, 0, -1)
    return p


@_from_impl(anp.polyint, argnums=(0, 2))
def _polyint_impl(p, m=1, k=None):
    p = anp.atleast_1d(p)
    if k is None:
        k = onp.zeros(m)
    k = anp.atleast_1d(k)
    if _shape(k)[0] == 1 and m > 1:
        k = _broadcast_to(k, (m,))
    for i in range(m):
        n = _shape(p)[0]
        p = _concat(p / onp.arange(n, 0, -1), _reshape(_getitem(k, i), (1,)), axis=0)
    return p


@_from_impl(anp.ediff1d, argnums=(0, 1, 2))
def _ediff1d_impl(ary, to_end=None, to_begin=None):
    a = anp.ravel(ary)
    d = _getitem(a, slice(1, None)) - _getitem(a, slice(None, -1))
    parts = [anp.ravel(to_begin)] if to_begin is not None else []
    parts.append(d)
    if to_end is not None:
        parts.append(anp.ravel(to_end))
    return _concat(*parts, axis=0) if len(parts) > 1 else d


def _as_2d_rows(m, rowvar):
    X = m if _ndim(m) == 2 else _reshape(m, (1, -1) if _ndim(m) == 1 else (1, 1))
    if not rowvar and _shape(X)[0] != 1:
        X = _transpose(X)
    return X


@_from_impl(anp.cov, argnums=(0, 1))
def _cov_impl(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    if fweights is not None or aweights is not None:
        raise NotImplementedError("derivative of np.cov with fweights/aweights is not implemented")
    X = _as_2d_rows(m, rowvar)
    if y is not None:
        X = _concat(X, _as_2d_rows(y, rowvar), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    X = X - _mean(X, axis=1, keepdims=True)
    XT = _transpose(X)
    c = _dot(X, _conj(XT) if _is_complex(X) else XT) / float(_shape(X)[1] - ddof)
    return _squeeze(c)


@_from_impl(anp.corrcoef, argnums=(0, 1))
def _corrcoef_impl(x, y=None, rowvar=True, *, dtype=None):
    c = _cov_impl(x, y, rowvar)
    if _ndim(c) == 0:
        return c / c
    std = _sqrt(_real(_diagonal(c)))
    return c / _expand_dims(std, 1) / _expand_dims(std, 0)


# ---- unique: the values are selections of the input; duplicates share evenly ----------


def _is_tuple_result(ans):
    t = type(getval(ans))
    return t is tuple or issubclass(t, tuple)


def unique_groups(x, ans):
    """For each entry of ``x`` (flattened), the position of its value among the unique
    values of ``ans`` (whatever their order: np.unique_values does not sort), and how many
    entries share each value."""
    values = onp.asarray(getval(ans[0] if _is_tuple_result(ans) else ans))
    xv = onp.asarray(getval(x)).ravel()
    order = onp.argsort(values, kind="stable")
    inverse = order[onp.clip(onp.searchsorted(values[order], xv), 0, len(values) - 1)]
    return inverse, onp.bincount(inverse, minlength=len(values))


def _unique_vjp(g, ans, x, *args, axis=None, **kwargs):
    if (args and len(args) >= 4 and args[3] is not None) or axis is not None:
        raise NotImplementedError("derivative of np.unique with axis= is not implemented")
    inverse, counts = unique_groups(x, ans)
    gv = g[0] if _is_tuple_result(ans) else g
    share = (1.0 / counts).astype(_real_dtype(_meta(x)[1]))[inverse]
    return unbroadcast(_reshape(_getitem(gv, inverse) * share, _shape(x)), x)


for _f in (anp.unique, anp.unique_values, anp.unique_all, anp.unique_counts, anp.unique_inverse):
    defvjp_direct(_f, _unique_vjp)


# ---- pad with the statistic modes maximum, minimum, median ------------------------------


def pad_stat_impl(x, pad_width, mode, stat_length=None):
    """np.pad for mode maximum/minimum/median/mean, traced: axis by axis, each side is the
    statistic of the first/last ``stat_length`` entries along that axis."""
    stat = {"maximum": anp.max, "minimum": anp.min, "median": anp.median, "mean": _mean}[mode]
    nd = _ndim(x)
    widths = _pad_pairs(pad_width, nd)
    lengths = None if stat_length is None else _pad_pairs(stat_length, nd)
    for ax in range(nd):
        before, after = widths[ax]
        n = _shape(x)[ax]
        sides = []
        for width, from_end, k in ((before, False, 0), (after, True, 1)):
            if width == 0:
                sides.append(None)
                continue
            length = n if lengths is None else max(1, min(lengths[ax][k], n))
            part = _getitem(x, _along(ax, slice(n - length, None) if from_end else slice(0, length), nd))
            value = stat(part, axis=ax, keepdims=True)
            shape = list(_shape(x))
            shape[ax] = width
            sides.append(_broadcast_to(value, tuple(shape)))
        items = [s for s in (sides[0], x, sides[1]) if s is not None]
        if len(items) > 1:
            x = _concat(*items, axis=ax)
    return x


# ---- nanmedian, nanpercentile, nanquantile: order statistics of the non-NaN entries ------


def _nan_order_stat_setup(quantile_fn):
    def setup(x, *args, **kwargs):
        return _nan_order_stat_weights(x, quantile_fn, *args, **kwargs)

    return setup


def _nan_order_stat_weights(
    x,
    fn,
    q=None,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
    interpolation=None,
):
    """As _order_stat_weights, for the NaN-ignoring versions: each group uses its own
    count of non-NaN entries (NaN sorts last, so those are the first sorted entries)."""
    _no_weights("nan" + (fn.__name__ if fn is not None else "median"), weights)
    if interpolation is not None:
        method = interpolation
    keepdims = False if keepdims is _NoValue else keepdims
    xv = onp.asarray(getval(x))
    counts = onp.sum(~onp.isnan(xv), axis=_axes(axis, xv.ndim)).reshape(-1)
    qv = None if q is None else onp.asarray(getval(q))

    def virtual(n):
        if qv is None:
            return (n - 1) / 2.0
        return fn(onp.arange(n, dtype=float), qv, method=method)

    Ws = {}
    for c in onp.unique(counts):
        if c == 0:
            continue
        Ws[int(c)] = _order_stat_weights(x, axis, lambda n, c=c: virtual(c))
    any_w = next(iter(Ws.values()), None)
    if any_w is None:
        W, perm, axes, qshape = _order_stat_weights(x, axis, lambda n: virtual(n))
        return onp.zeros_like(W), perm, axes, qshape, keepdims
    W, perm, axes, qshape = any_w
    W = onp.zeros_like(W)
    flatW = W.reshape(qshape + (-1, W.shape[-1]))
    for c, (Wc, _, _, _) in Ws.items():
        rows = counts == c
        flatW[..., rows, :] = Wc.reshape(qshape + (-1, W.shape[-1]))[..., rows, :]
    return W, perm, axes, qshape, keepdims


def _median_virtual(x, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _nan_order_stat_weights(x, None, None, axis, out, overwrite_input, "linear", keepdims)


ORDER_STAT_SETUPS_NAN = {
    anp.nanmedian: _median_virtual,
    anp.nanpercentile: _nan_order_stat_setup(onp.percentile),
    anp.nanquantile: _nan_order_stat_setup(onp.quantile),
}
for _f, _setup in ORDER_STAT_SETUPS_NAN.items():
    defvjp_direct(_f, _order_stat_rule(_setup))
ORDER_STAT_SETUPS.update(ORDER_STAT_SETUPS_NAN)
