"""Rules of NumPy's reductions and cumulative reductions, both modes side by side.

sum, mean, prod, max/min (and amax, amin, nanmax, nanmin, ptp), var, std, trace, the
cumulative sums and products, and their NaN-ignoring versions.  Rules compute with
fastgrad.numpy primitives, so that they can be differentiated again.

Conventions where the derivative does not exist: tied maxima (minima) share the
cotangent evenly; std and nanstd where they are 0 have the subgradient 0; prod and
cumprod with zero entries use the exact products of the other entries.
"""

import math

import numpy as onp

from ..tracer import getval
from . import numpy_wrapper as anp
from ._registration import (
    def_from_impl,
    def_rules,
    jvp_from_impl,
    vjp_from_impl,
)
from ._shapes import (
    NoValue,
    along,
    as_dtype,
    data_of,
    dtype_of,
    expand_reduced,
    fit,
    inverse_permutation,
    is_complex,
    may_hold_true,
    ndim_of,
    normalized_axes,
    ones_on,
    real_dtype,
    reduced_size,
    shape_and_dtype,
    shape_of,
    unbroadcast,
    unset,
    zeros_on,
)

_F64 = onp.dtype(onp.float64)
_ndarray = onp.ndarray

# primitives the rules call, bound once
_sum, _reshape, _broadcast_to, _transpose = anp.sum, anp.reshape, anp.broadcast_to, anp.transpose
_where, _getitem, _real, _conj = anp.where3, anp.getitem, anp.real, anp.conjugate
_sqrt, _mean, _flip, _cumsum = anp.sqrt, anp.mean, anp.flip, anp.cumsum
_cumprod, _concat, _stack = anp.cumprod, anp.concatenate_args, anp.stack_args

# ---- sum, mean, prod, max and min ---------------------------------------------------


def _sum_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    shape = shape_of(x)
    r = expand_reduced(g, shape, axis, keepdims, like=x)
    if where is not True and where is not NoValue:
        r = _where(where, r, 0.0)
    return unbroadcast(r, x)


# (of x only the shape and dtype: x is not kept; where=, the 7th argument, is read)
def_rules(anp.sum, [_sum_vjp], ["same"], reads=((6,),))


def _has_where(where):
    return not (where is True or where is NoValue)


def _where_count(shape, axis, where, dtype=_F64):
    """The number of selected entries of each reduction group (keepdims layout), as a
    ``dtype`` array (the real dtype of the values, so that dividing keeps their dtype)."""
    mask = onp.broadcast_to(onp.asarray(where, dtype=bool), shape)
    return onp.sum(mask, axis=normalized_axes(axis, len(shape)), keepdims=True).astype(real_dtype(onp.dtype(dtype)))


def _mean_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    shape = shape_of(x)
    if _has_where(where):
        count = _where_count(shape, axis, where, dtype_of(x))
        r = _where(where, expand_reduced(g, shape, axis, keepdims, like=x), 0.0) / onp.maximum(count, 1)
        return unbroadcast(r, x)
    # divided before it is repeated: the same values, one division instead of one per entry
    r = expand_reduced(g / reduced_size(shape, axis), shape, axis, keepdims, like=x)
    return unbroadcast(r, x)


def_rules(anp.mean, [_mean_vjp], ["same"], reads=((),))  # (its where= is keyword-only)


def _group_last(x, axes):
    """``x`` with the reduced ``axes`` moved last and merged: (flat, kept_shape, restore)."""
    shape = shape_of(x)
    nd = len(shape)
    kept = [i for i in range(nd) if i not in axes]
    perm = kept + list(axes)
    xt = _transpose(x, perm) if perm != list(range(nd)) else x
    tshape = tuple(shape[i] for i in perm)
    kshape = tshape[: len(kept)]
    flat = _reshape(xt, kshape + (math.prod(tshape[len(kept) :]),))

    def restore(y):
        y = _reshape(y, tshape)
        return _transpose(y, inverse_permutation(perm)) if perm != list(range(nd)) else y

    return flat, restore


def _others_product(x, axes):
    """For every entry of ``x``, the product of the other entries of its reduction group
    (the slices along ``axes``), from exclusive prefix and suffix products: no division,
    so exact where entries are 0.  Traced."""
    if not axes or math.prod(shape_of(x)[i] for i in axes) == 0:
        return ones_on(x, shape_of(x), dtype_of(x))
    flat, restore = _group_last(x, axes)
    n = shape_of(flat)[-1]
    if n == 1:
        return ones_on(x, shape_of(x), dtype_of(x))
    one = ones_on(x, shape_of(flat)[:-1] + (1,), dtype_of(x))
    left = _cumprod(_concat(one, _getitem(flat, (Ellipsis, slice(None, -1))), axis=-1), axis=-1)
    tail = _flip(_getitem(flat, (Ellipsis, slice(1, None))), -1)
    right = _flip(_cumprod(_concat(one, tail, axis=-1), axis=-1), -1)
    return restore(left * right)


def _prod_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    shape = shape_of(x)
    axes = normalized_axes(axis, len(shape))
    r = expand_reduced(g, shape, axis, keepdims, like=x)
    if _has_where(where):
        mask = onp.broadcast_to(onp.asarray(where, dtype=bool), shape)
        xs = _where(mask, x, 1.0)
        others = _others_product(xs, axes)
        if not unset(initial):
            others = others * initial
        return unbroadcast(_where(mask, r * others, 0.0), x)
    if not may_hold_true(getval(x) == 0):
        # the product of the others is ans / x (initial included in ans)
        return unbroadcast(r * expand_reduced(ans, shape, axis, keepdims, like=x) / x, x)
    others = _others_product(x, axes)
    if not unset(initial):
        others = others * initial
    return unbroadcast(r * others, x)


def _prod_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    keep = False if unset(keepdims) else keepdims
    if not _has_where(where) and not may_hold_true(getval(x) == 0):
        return fit(ans * _sum(g / x, axis=axis, keepdims=keep), ans)
    shape = shape_of(x)
    axes = normalized_axes(axis, len(shape))
    if _has_where(where):
        mask = onp.broadcast_to(onp.asarray(where, dtype=bool), shape)
        others = _others_product(_where(mask, x, 1.0), axes)
        terms = _where(mask, g * others, 0.0)
    else:
        terms = g * _others_product(x, axes)
    t = _sum(terms, axis=axis, keepdims=keep)
    if not unset(initial):
        t = t * initial
    return fit(t, ans)


def_rules(anp.prod, [_prod_vjp], [_prod_jvp])
if hasattr(anp, "product"):  # NumPy 1's alias
    def_rules(anp.product, [_prod_vjp], [_prod_jvp])


def _whole_float64_array(x, axis, where=True):
    """The reduction is over the whole of a NumPy array with float64 weights (real or
    complex float64, or integers), where the rules' shortcuts give the same bits."""
    return axis is None and not _has_where(where) and type(getval(x)) is _ndarray and real_dtype(dtype_of(x)) is _F64


def _whole_array_weights(x, ans):
    """_maxmin_weights where _whole_float64_array holds: one group, whose count of ties
    is the sum over every axis, without the reshapes."""
    w = as_dtype(getval(x) == getval(ans), _F64)
    return w / onp.maximum(w.sum(), 1)


def _maxmin_weights(x, ans, axis, keepdims, where=True):
    """Which entries of ``x`` are the group's max (or min) ``ans``; tied entries share
    evenly.  In x's real dtype, x's shape."""
    if _whole_float64_array(x, axis, where):
        return _whole_array_weights(x, ans)
    return _grouped_weights(x, ans, axis, where)


def _grouped_weights(x, ans, axis, where):
    """_maxmin_weights for any reduction: ``ans`` reshaped to x's kept axes."""
    shape, dtype = shape_and_dtype(x)
    axes = normalized_axes(axis, len(shape))
    kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
    hit = data_of(x) == onp.reshape(getval(ans), kept)
    if _has_where(where):
        hit = onp.logical_and(hit, where)
    w = as_dtype(hit, real_dtype(dtype))
    return w / onp.maximum(w.sum(axis=axes, keepdims=True), 1)


def _maxmin_reduce_vjp(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=True):
    if _whole_float64_array(x, axis, where):
        return unbroadcast(g * _whole_array_weights(x, ans), x)  # (g is one value: the product broadcasts it)
    w = _grouped_weights(x, ans, axis, where)
    return unbroadcast(expand_reduced(g, shape_of(x), axis, keepdims, like=x) * w, x)


def _maxmin_reduce_jvp(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=True):
    w = _maxmin_weights(x, ans, axis, keepdims, where)
    keep = False if unset(keepdims) else keepdims
    return fit(_sum(g * w, axis=axis, keepdims=keep), ans)


for _name in ("max", "min", "amax", "amin", "nanmax", "nanmin"):
    def_rules(getattr(anp, _name), [_maxmin_reduce_vjp], [_maxmin_reduce_jvp])


def _ptp_vjp(g, ans, x, axis=None, out=None, keepdims=False):
    xv = getval(x)
    hi = onp.max(xv, axis=axis, keepdims=keepdims)
    lo = onp.min(xv, axis=axis, keepdims=keepdims)
    w = _maxmin_weights(x, hi, axis, keepdims) - _maxmin_weights(x, lo, axis, keepdims)
    return unbroadcast(expand_reduced(g, shape_of(x), axis, keepdims, like=x) * w, x)


def _ptp_jvp(g, ans, x, axis=None, out=None, keepdims=False):
    xv = getval(x)
    hi = onp.max(xv, axis=axis, keepdims=keepdims)
    lo = onp.min(xv, axis=axis, keepdims=keepdims)
    w = _maxmin_weights(x, hi, axis, keepdims) - _maxmin_weights(x, lo, axis, keepdims)
    return fit(_sum(g * w, axis=axis, keepdims=keepdims), ans)


def_rules(anp.ptp, [_ptp_vjp], [_ptp_jvp])


def _ddof(ddof, correction):
    return ddof if unset(correction) else correction


def _centered(x, axis):
    """x minus its mean over ``axis``, conjugated for complex x (the cotangent direction
    of |x - mean|**2)."""
    c = x - _mean(x, axis=axis, keepdims=True)
    return _conj(c) if is_complex(x) else c


def _var_vjp(
    g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None
):
    shape = shape_of(x)
    n = reduced_size(shape, axis) - _ddof(ddof, correction)
    return unbroadcast(expand_reduced(g, shape, axis, keepdims, like=x) * _centered(x, axis) * (2.0 / n), x)


def _over_std(t, ans):
    """``t / ans``, and 0 where the standard deviation ``ans`` is 0 (every entry equal)."""
    zero = getval(ans) == 0
    if may_hold_true(zero):
        return _where(zero, 0.0, t) / _where(zero, 1.0, ans)
    return t / ans


def _std_vjp(
    g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None
):
    # d std = d var / (2 std)
    shape = shape_of(x)
    n = reduced_size(shape, axis) - _ddof(ddof, correction)
    g = _over_std(g, ans)
    return unbroadcast(expand_reduced(g, shape, axis, keepdims, like=x) * _centered(x, axis) * (1.0 / n), x)


def _var_impl(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """var with a where= mask, traced."""
    shape = shape_of(x)
    mask = onp.broadcast_to(onp.asarray(True if unset(where) else where, dtype=bool), shape)
    count = _where_count(shape, axis, mask, dtype_of(x))
    m = _sum(_where(mask, x, 0.0), axis=axis, keepdims=True) / onp.maximum(count, 1)
    c = _where(mask, x - m, 0.0)
    sq = _real(c * _conj(c)) if is_complex(x) else c * c
    n = count - _ddof(ddof, correction)
    r = _sum(sq / n, axis=axis, keepdims=True)
    if not keepdims or unset(keepdims):
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


def _var_tangent(g, x, axis, keepdims, n):
    c = x - _mean(x, axis=axis, keepdims=True)
    prod = _real(_conj(c) * g) if is_complex(x) else c * g
    keep = False if unset(keepdims) else keepdims
    return _sum(prod, axis=axis, keepdims=keep) * (2.0 / n)


def _var_jvp(
    g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None
):
    if _has_where(where):
        return jvp_from_impl(_var_impl, 0)(
            g, ans, x, axis, dtype, out, ddof, keepdims, where=where, correction=correction
        )
    n = reduced_size(shape_of(x), axis) - _ddof(ddof, correction)
    return fit(_var_tangent(g, x, axis, keepdims, n), ans)


def _std_jvp(
    g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None
):
    if _has_where(where):
        return jvp_from_impl(_std_impl, 0)(
            g, ans, x, axis, dtype, out, ddof, keepdims, where=where, correction=correction
        )
    n = reduced_size(shape_of(x), axis) - _ddof(ddof, correction)
    t = _var_tangent(g, x, axis, keepdims, n) * 0.5
    t = _over_std(t, ans)
    return fit(t, ans)


def_rules(anp.var, [_var_dispatch(_var_vjp, _var_impl)], [_var_jvp])
def_rules(anp.std, [_var_dispatch(_std_vjp, _std_impl)], [_std_jvp])


def _rev_cumsum(g, axis):
    return _flip(_cumsum(_flip(g, axis), axis), axis)


def _cumsum_vjp(g, ans, x, axis=None, dtype=None, out=None):
    if axis is None:
        return unbroadcast(_reshape(_rev_cumsum(g, 0), shape_of(x)), x)
    return unbroadcast(_rev_cumsum(g, axis), x)


def_rules(anp.cumsum, [_cumsum_vjp], ["same"])


def _drop_initial(g, axis, ndim):
    return _getitem(g, along(axis, slice(1, None), ndim))


def _cumulative_sum_vjp(g, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
    ax = 0 if axis is None else axis
    if include_initial:
        g = _drop_initial(g, ax, ndim_of(ans))
    return unbroadcast(_rev_cumsum(g, ax), x)


if hasattr(anp, "cumulative_sum"):  # NumPy >= 2.1
    def_rules(anp.cumulative_sum, [_cumulative_sum_vjp], ["same"])


def _slices_along(a, axis):
    n = shape_of(a)[axis]
    nd = ndim_of(a)
    return [_getitem(a, along(axis, k, nd)) for k in range(n)]


def _cumprod_vjp_core(g, ans, x, axis):
    """The cotangent of ``ans = cumprod(x, axis)`` (x, g, ans of one shape)."""
    if not may_hold_true(data_of(x) == 0):
        return _rev_cumsum(g * ans, axis) / x
    # exact with zeros, and to every order (a polynomial in x, no division): r_j = P_{j-1} S_j
    # with P the exclusive prefix product and S_j = g_j + x_{j+1} S_{j+1} (a loop along the
    # axis, traced).  Another library's array always comes here: testing it for zeros would
    # compute it or wait for its device.
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
    if not may_hold_true(data_of(x) == 0):
        return ans * _cumsum(g / x, axis)
    gs, xs, ps = _slices_along(g, axis), _slices_along(x, axis), _slices_along(ans, axis)
    d = [gs[0]]
    for k in range(1, len(gs)):
        d.append(d[k - 1] * xs[k] + ps[k - 1] * gs[k])
    return _stack(*d, axis=axis)


def _cumprod_vjp(g, ans, x, axis=None, dtype=None, out=None):
    if shape_of(x) and 0 in shape_of(x):
        return None
    if axis is None:
        flat = anp.ravel(x)
        return unbroadcast(_reshape(_cumprod_vjp_core(g, ans, flat, 0), shape_of(x)), x)
    return unbroadcast(_cumprod_vjp_core(g, ans, x, axis), x)


def _cumulative_prod_vjp(g, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
    if shape_of(x) and 0 in shape_of(x):
        return None
    ax = 0 if axis is None else axis
    if include_initial:
        g = _drop_initial(g, ax, ndim_of(ans))
        ans = _drop_initial(ans, ax, ndim_of(ans))
    return unbroadcast(_cumprod_vjp_core(g, ans, x, ax), x)


def _cumprod_jvp(g, ans, x, axis=None, dtype=None, out=None):
    if shape_of(x) and 0 in shape_of(x):
        return None
    if axis is None:
        return fit(_cumprod_jvp_core(anp.ravel(g), ans, anp.ravel(x), 0), ans)
    return fit(_cumprod_jvp_core(g, ans, x, axis), ans)


def _cumulative_prod_jvp(g, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
    if shape_of(x) and 0 in shape_of(x):
        return None
    ax = 0 if axis is None else axis
    if not include_initial:
        return fit(_cumprod_jvp_core(g, ans, x, ax), ans)
    nd = ndim_of(ans)
    rest = _getitem(ans, along(ax, slice(1, None), nd))
    t = _cumprod_jvp_core(g, rest, x, ax)
    zshape = list(shape_of(ans))
    zshape[ax % nd] = 1
    return fit(_concat(zeros_on(t, zshape, dtype_of(t)), t, axis=ax), ans)


def_rules(anp.cumprod, [_cumprod_vjp], [_cumprod_jvp])
if hasattr(anp, "cumproduct"):  # NumPy 1's alias
    def_rules(anp.cumproduct, [_cumprod_vjp], [_cumprod_jvp])
if hasattr(anp, "cumulative_prod"):  # NumPy >= 2.1
    def_rules(anp.cumulative_prod, [_cumulative_prod_vjp], [_cumulative_prod_jvp])


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
    shape = shape_of(x)
    count = _where_count(shape, axis, valid, dtype_of(x))
    n = count - _ddof(ddof, correction)
    m = _sum(_where(valid, x, 0.0), axis=axis, keepdims=True) / onp.maximum(count, 1)
    c = _where(valid, x - m, 0.0)
    if is_complex(x):
        c = _conj(c)
    return unbroadcast(expand_reduced(g, shape, axis, keepdims, like=x) * c * (2.0 / n), x)


def _nanstd_vjp(g, ans, x, *args, **kwargs):
    g = _over_std(g, ans)
    return _nanvar_vjp(g * 0.5, ans, x, *args, **kwargs)


def _nancumsum_vjp(g, ans, x, axis=None, dtype=None, out=None):
    return _where(_nan_mask(x), 0.0, _cumsum_vjp(g, ans, x, axis))


def _nansum_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    keep = False if unset(keepdims) else keepdims
    kw = {"where": where} if _has_where(where) else {}
    return fit(_sum(_where(_nan_mask(x), 0.0, g), axis=axis, keepdims=keep, **kw), ans)


def _nanmean_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    valid = _valid_mask(x, where)
    keep = False if unset(keepdims) else keepdims
    if valid is True:
        return fit(_mean(g, axis=axis, keepdims=keep), ans)
    count = onp.maximum(_where_count(shape_of(x), axis, valid, dtype_of(x)), 1)
    t = _sum(_where(valid, g, 0.0) / count, axis=axis, keepdims=keep)
    return fit(t, ans)


def _nanprod_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    valid = _valid_mask(x, where)
    return _prod_jvp(g, ans, x, axis, None, None, keepdims, initial, where=valid)


def _nanvar_tangent(g, x, axis, ddof, keepdims, where, correction):
    valid = _valid_mask(x, where)
    shape = shape_of(x)
    count = _where_count(shape, axis, valid, dtype_of(x))
    n = count - _ddof(ddof, correction)
    m = _sum(_where(valid, x, 0.0), axis=axis, keepdims=True) / onp.maximum(count, 1)
    c = _where(valid, x - m, 0.0)
    prod = _real(_conj(c) * g) if is_complex(x) else c * g
    keep = False if unset(keepdims) else keepdims
    t = _sum(prod * (2.0 / n), axis=axis, keepdims=True)
    return t if keep else _reshape(t, onp.sum(onp.zeros(shape, bool), axis=axis).shape)


def _nanvar_jvp(
    g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None
):
    return fit(_nanvar_tangent(g, x, axis, ddof, keepdims, where, correction), ans)


def _nanstd_jvp(
    g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None
):
    t = _nanvar_tangent(g, x, axis, ddof, keepdims, where, correction) * 0.5
    t = _over_std(t, ans)
    return fit(t, ans)


def _nancumsum_jvp(g, ans, x, axis=None, dtype=None, out=None):
    return fit(_cumsum(_where(_nan_mask(x), 0.0, g), axis=axis), ans)


def_rules(anp.nansum, [_nansum_vjp], [_nansum_jvp])
def_rules(anp.nanmean, [_nanmean_vjp], [_nanmean_jvp])
def_rules(anp.nanprod, [_nanprod_vjp], [_nanprod_jvp])
def_rules(anp.nanvar, [_nanvar_vjp], [_nanvar_jvp])
def_rules(anp.nanstd, [_nanstd_vjp], [_nanstd_jvp])
def_rules(anp.nancumsum, [_nancumsum_vjp], [_nancumsum_jvp])


@def_from_impl(anp.nancumprod)
def _nancumprod_impl(x, axis=None, dtype=None, out=None):
    return _cumprod(_where(_nan_mask(x), 1.0, x), axis=axis)


def trace_vjp(g, ans, x, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    shape = shape_of(x)
    nd = len(shape)
    k = onp.diagonal(onp.empty(shape, dtype=bool), offset, axis1, axis2).shape[-1]
    gshape = shape_of(g)
    gd = _broadcast_to(_reshape(g, gshape + (1,)), gshape + (k,))
    return unbroadcast(anp.diag_embed(gd, offset, axis1 % nd, axis2 % nd, shape), x)


def_rules(anp.trace, [trace_vjp], ["same"])
