"""Forward-mode rules of fastgrad.numpy.

Each rule is ``jvp(g, ans, *args, **kwargs) -> tangent of the result`` given the tangent
``g`` of one argument (``defjvp``); ``"same"`` means the primitive applied to the tangent
in that slot, right for arguments the function is linear in (the others fixed), and
``def_linear`` registers it for every argument of a multilinear function.  Like the
reverse rules, these compute with fastgrad.numpy primitives so that they can be
differentiated again.

A tangent lives in the result's space: ``fit(t, ans)`` broadcasts it to the result's shape
and casts it to the result's dtype (the tangent of x in ``x + y`` is x's tangent broadcast,
and complex when y is complex).

Complex numbers: the tangent of a holomorphic f is f'(z) dz, the same product as its
reverse rule (autograd's convention has no conjugation there), so the elementwise rules
of numpy_vjps.UNARY_RULES are reused as they are.  Non-holomorphic functions (abs, angle,
real, imag, conj, vdot, vecdot, ...) have their own rules.
"""

import numpy as onp

from ..core import def_linear, defjvp, defjvp_argnums, sparse_add
from ..tracer import getval
from . import numpy_wrapper as anp
from . import numpy_vjps as V
from ._shapes import fit
from .numpy_vjps import (
    _meta,
    _shape,
    _ndim,
    _is_complex,
    _axes,
    _real_dtype,
    _has_where,
    _unset,
    _NoValue,
    _nan_mask,
    _valid_mask,
    _where_count,
    _ddof,
    _reduced_size,
    _maxmin_weights,
    _others_product,
    _cumprod_jvp_core,
    _order_stat_jvp,
    ORDER_STAT_SETUPS,
    permutation_index,
    clip_masks,
    linspace_weights,
    pad_linear_kwargs,
    jvp_from_impl,
    IMPLS,
    _var_impl,
    _std_impl,
)

_ndarray = onp.ndarray
_sum, _reshape, _broadcast_to = anp.sum, anp.reshape, anp.broadcast_to
_where, _getitem, _astype = anp.where3, anp.getitem, anp.astype_method
_real, _imag, _conj, _sign, _floor, _trunc = anp.real, anp.imag, anp.conjugate, anp.sign, anp.floor, anp.trunc
_exp, _cumsum, _mean, _sqrt = anp.exp, anp.cumsum, anp.mean, anp.sqrt
_concat = anp.concatenate_args


# ---------------------------------------------------------------------------------------
# Reductions

defjvp(anp.sum, "same")
defjvp(anp.mean, "same")
defjvp(anp.cumsum, "same")
defjvp(anp.cumulative_sum, "same")
defjvp(anp.trace, "same")


def _prod_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    keep = False if _unset(keepdims) else keepdims
    if not _has_where(where) and not onp.any(getval(x) == 0):
        return fit(ans * _sum(g / x, axis=axis, keepdims=keep), ans)
    shape = _shape(x)
    axes = _axes(axis, len(shape))
    if _has_where(where):
        mask = onp.broadcast_to(onp.asarray(where, dtype=bool), shape)
        others = _others_product(_where(mask, x, 1.0), axes)
        terms = _where(mask, g * others, 0.0)
    else:
        terms = g * _others_product(x, axes)
    t = _sum(terms, axis=axis, keepdims=keep)
    if not _unset(initial):
        t = t * initial
    return fit(t, ans)


defjvp(anp.prod, _prod_jvp)


def _maxmin_reduce_jvp(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=True):
    w = _maxmin_weights(x, ans, axis, keepdims, where)
    keep = False if _unset(keepdims) else keepdims
    return fit(_sum(g * w, axis=axis, keepdims=keep), ans)


for _name in ("max", "min", "amax", "amin", "nanmax", "nanmin"):
    defjvp(getattr(anp, _name), _maxmin_reduce_jvp)


def _ptp_jvp(g, ans, x, axis=None, out=None, keepdims=False):
    xv = getval(x)
    hi = onp.max(xv, axis=axis, keepdims=keepdims)
    lo = onp.min(xv, axis=axis, keepdims=keepdims)
    w = _maxmin_weights(x, hi, axis, keepdims) - _maxmin_weights(x, lo, axis, keepdims)
    return fit(_sum(g * w, axis=axis, keepdims=keepdims), ans)


defjvp(anp.ptp, _ptp_jvp)


def _var_tangent(g, x, axis, keepdims, n):
    c = x - _mean(x, axis=axis, keepdims=True)
    prod = _real(_conj(c) * g) if _is_complex(x) else c * g
    keep = False if _unset(keepdims) else keepdims
    return _sum(prod, axis=axis, keepdims=keep) * (2.0 / n)


def _var_jvp(
    g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None
):
    if _has_where(where):
        return jvp_from_impl(_var_impl, 0)(
            g, ans, x, axis, dtype, out, ddof, keepdims, where=where, correction=correction
        )
    n = _reduced_size(_shape(x), axis) - _ddof(ddof, correction)
    return fit(_var_tangent(g, x, axis, keepdims, n), ans)


def _std_jvp(
    g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None
):
    if _has_where(where):
        return jvp_from_impl(_std_impl, 0)(
            g, ans, x, axis, dtype, out, ddof, keepdims, where=where, correction=correction
        )
    n = _reduced_size(_shape(x), axis) - _ddof(ddof, correction)
    t = _var_tangent(g, x, axis, keepdims, n) * 0.5
    if onp.any(getval(ans) == 0):  # 0 where std is 0
        t = _where(getval(ans) == 0, 0.0, t) / _where(ans == 0, 1.0, ans)
    else:
        t = t / ans
    return fit(t, ans)


defjvp(anp.var, _var_jvp)
defjvp(anp.std, _std_jvp)


def _cumprod_jvp(g, ans, x, axis=None, dtype=None, out=None):
    if _shape(x) and 0 in _shape(x):
        return None
    if axis is None:
        return fit(_cumprod_jvp_core(anp.ravel(g), ans, anp.ravel(x), 0), ans)
    return fit(_cumprod_jvp_core(g, ans, x, axis), ans)


def _cumulative_prod_jvp(g, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
    if _shape(x) and 0 in _shape(x):
        return None
    ax = 0 if axis is None else axis
    if not include_initial:
        return fit(_cumprod_jvp_core(g, ans, x, ax), ans)
    nd = _ndim(ans)
    rest = _getitem(ans, V._along(ax, slice(1, None), nd))
    t = _cumprod_jvp_core(g, rest, x, ax)
    zshape = list(_shape(ans))
    zshape[ax % nd] = 1
    return fit(_concat(onp.zeros(zshape, _meta(t)[1]), t, axis=ax), ans)


defjvp(anp.cumprod, _cumprod_jvp)
defjvp(anp.cumulative_prod, _cumulative_prod_jvp)


# ---- NaN-ignoring reductions --------------------------------------------------------


def _nansum_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    keep = False if _unset(keepdims) else keepdims
    kw = {"where": where} if _has_where(where) else {}
    return fit(_sum(_where(_nan_mask(x), 0.0, g), axis=axis, keepdims=keep, **kw), ans)


def _nanmean_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    valid = _valid_mask(x, where)
    keep = False if _unset(keepdims) else keepdims
    if valid is True:
        return fit(_mean(g, axis=axis, keepdims=keep), ans)
    count = onp.maximum(_where_count(_shape(x), axis, valid, _meta(x)[1]), 1)
    t = _sum(_where(valid, g, 0.0) / count, axis=axis, keepdims=keep)
    return fit(t, ans)


def _nanprod_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    valid = _valid_mask(x, where)
    return _prod_jvp(g, ans, x, axis, None, None, keepdims, initial, where=valid)


def _nanvar_tangent(g, x, axis, ddof, keepdims, where, correction):
    valid = _valid_mask(x, where)
    shape = _shape(x)
    count = _where_count(shape, axis, valid, _meta(x)[1])
    n = count - _ddof(ddof, correction)
    m = _sum(_where(valid, x, 0.0), axis=axis, keepdims=True) / onp.maximum(count, 1)
    c = _where(valid, x - m, 0.0)
    prod = _real(_conj(c) * g) if _is_complex(x) else c * g
    keep = False if _unset(keepdims) else keepdims
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
    if onp.any(getval(ans) == 0):  # 0 where std is 0
        t = _where(getval(ans) == 0, 0.0, t) / _where(ans == 0, 1.0, ans)
    else:
        t = t / ans
    return fit(t, ans)


defjvp(anp.nansum, _nansum_jvp)
defjvp(anp.nanmean, _nanmean_jvp)
defjvp(anp.nanprod, _nanprod_jvp)
defjvp(anp.nanvar, _nanvar_jvp)
defjvp(anp.nanstd, _nanstd_jvp)
defjvp(
    anp.nancumsum,
    lambda g, ans, x, axis=None, dtype=None, out=None: fit(_cumsum(_where(_nan_mask(x), 0.0, g), axis=axis), ans),
)


# ---- order statistics -----------------------------------------------------------------


def _order_stat_rule(setup):
    def rule(g, ans, x, *args, **kwargs):
        W, perm, axes, qshape, keepdims = setup(x, *args, **kwargs)
        return fit(_order_stat_jvp(g, x, keepdims, W, perm, axes, qshape), ans)

    return rule


for _f, _setup in ORDER_STAT_SETUPS.items():
    defjvp(_f, _order_stat_rule(_setup))


# ---------------------------------------------------------------------------------------
# Rules from traced re-implementations (numpy_vjps.IMPLS), unless a cheaper one is below


def _fitted(rule):
    def fitted(g, ans, *args, **kwargs):
        t = rule(g, ans, *args, **kwargs)
        return t if isinstance(getval(ans), (list, tuple)) else fit(t, ans)

    return fitted


for _f, (_impl, _argnums) in IMPLS.items():
    defjvp(_f, *[_fitted(jvp_from_impl(_impl, i)) for i in _argnums], argnums=_argnums)

# linear in y with x, dx fixed; in x and dx through the re-implementation
_trap_impl = IMPLS[anp.trapezoid][0]
defjvp(anp.trapezoid, "same", _fitted(jvp_from_impl(_trap_impl, 1)), _fitted(jvp_from_impl(_trap_impl, 2)))


def _diff_jvp(g, ans, a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
    kw = {}
    if prepend is not _NoValue:
        kw["prepend"] = onp.zeros_like(onp.asarray(prepend))
    if append is not _NoValue:
        kw["append"] = onp.zeros_like(onp.asarray(append))
    return fit(anp.diff(g, n, axis, **kw), ans)


defjvp(anp.diff, _diff_jvp)
defjvp(anp.gradient, "same")


# ---------------------------------------------------------------------------------------
# Products: multilinear (conjugate-linear slots included: vdot, vecdot, vecmat)

for _f in (
    anp.dot,
    anp.matmul,
    anp.tensordot,
    anp.outer,
    anp.inner,
    anp.vdot,
    anp.kron,
    anp.cross,
    anp.einsum,
    anp.matmul_op,
    anp.vecdot,
    anp.matvec,
    anp.vecmat,
    anp.convolve,
    anp.correlate,
):
    def_linear(_f)


# ---------------------------------------------------------------------------------------
# Linear in their (first) array argument

for _f in (
    anp.reshape,
    anp.ravel,
    anp.transpose,
    anp.swapaxes,
    anp.moveaxis,
    anp.rollaxis,
    anp.expand_dims,
    anp.squeeze,
    anp.matrix_transpose,
    anp.broadcast_to,
    anp.flip,
    anp.flipud,
    anp.fliplr,
    anp.rot90,
    anp.copy,
    anp.sum,
    anp.mean,
    anp.cumsum,
    anp.diagonal,
    anp.trace,
    anp.getitem,
    anp.diag_embed,
    anp.astype_method,
    anp.astype,
    anp.take,
    anp.repeat,
    anp.diag,
    anp.tril,
    anp.triu,
    anp.tile,
    anp.unstack,
    anp.split,
    anp.array_split,
    anp.hsplit,
    anp.vsplit,
    anp.dsplit,
    anp.roll,
    anp.take_along_axis,
):
    defjvp(_f, "same")


def _untake_jvp(g, ans, x, idx, vs):
    # The tangent of a sparse cotangent (forward over reverse through indexing), made
    # dense: engine-side, the accumulation primitive sparse_add passes a tangent through
    # unchanged, so a sparse one would reach rules that expect arrays.
    return sparse_add(vs, None, anp.untake(g, idx, vs))


defjvp(anp.untake, _untake_jvp, None, None)

defjvp(anp.compress, None, "same")
defjvp(anp.choose, None, "same")
defjvp(anp.full, None, "same")
defjvp(anp.bincount, None, "same")


def _atleast_jvp(argnums, gs, ans, args, kwargs):
    if len(args) == 1:
        return _reshape(gs[0], _shape(ans))
    tangents = {i: g for i, g in zip(argnums, gs)}
    items = [
        _reshape(tangents[i], _shape(ans[i])) if i in tangents else onp.zeros(_shape(ans[i]), _meta(ans[i])[1])
        for i in range(len(args))
    ]
    return V._seq(tuple, items)


for _f in (anp.atleast_1d, anp.atleast_2d, anp.atleast_3d):
    defjvp_argnums(_f, _atleast_jvp)


def _broadcast_arrays_jvp(argnums, gs, ans, args, kwargs):
    tangents = {i: g for i, g in zip(argnums, gs)}
    items = [
        fit(tangents[i], ans[i]) if i in tangents else onp.zeros(_shape(ans[i]), _meta(ans[i])[1])
        for i in range(len(args))
    ]
    return V._seq(tuple, items)


defjvp_argnums(anp.broadcast_arrays, _broadcast_arrays_jvp)


def _pad_jvp(g, ans, x, pad_width, mode="constant", **kwargs):
    V._pad_check(mode)
    if mode in V.PAD_STAT_MODES:
        return fit(jvp_from_impl(V.pad_stat_impl, 0)(g, ans, x, pad_width, mode, **kwargs), ans)
    return fit(anp.pad(g, pad_width, mode, **pad_linear_kwargs(mode, kwargs)), ans)


defjvp(anp.pad, _pad_jvp)


defjvp(anp.sort, lambda g, ans, x, axis=-1, *a, **k: _getitem(g, permutation_index(x, ans, axis)))
defjvp(anp.partition, lambda g, ans, x, kth, axis=-1, *a, **k: _getitem(g, permutation_index(x, ans, axis)), None)


# ---------------------------------------------------------------------------------------
# Building arrays from traced elements, joining


def _joined_jvp(fun):
    def jvp(argnums, gs, ans, args, kwargs):
        tangents = {i: g for i, g in zip(argnums, gs)}
        items = [
            tangents[i] if i in tangents else onp.zeros(_shape(a), _real_or_same(_meta(a)[1]))
            for i, a in enumerate(args)
        ]
        return fit(fun(*items, **kwargs), ans)

    return jvp


def _real_or_same(dtype):
    return dtype if dtype.kind in "fc" else onp.dtype(onp.float64)


for _f in (anp.concatenate_args, anp.stack_args, anp.array_from_args):
    defjvp_argnums(_f, _joined_jvp(_f))


def _linspace_jvp(which):
    def rule(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, **kwargs):
        num = int(num)
        samples = ans[0] if retstep else ans
        t, ax = linspace_weights(_shape(samples), num, endpoint, axis)
        w = t if which == 1 else 1.0 - t
        w = w.astype(_real_dtype(_meta(g)[1]))
        sshape = _shape(samples)
        bshape = sshape[:ax] + sshape[ax + 1 :]  # start and stop broadcast together
        if _shape(g) != bshape:
            g = _broadcast_to(g, bshape)
        ts = fit(anp.expand_dims(g, ax) * w, samples)
        if not retstep:
            return ts
        div = (num - 1) if endpoint else num
        step = ans[1]
        tstep = (
            fit(g * ((1.0 if which == 1 else -1.0) / div), step) if div > 0 else onp.zeros(_shape(step), _meta(step)[1])
        )
        return V._seq(tuple, [ts, tstep])

    return rule


defjvp(anp.linspace, _linspace_jvp(0), _linspace_jvp(1))


# ---------------------------------------------------------------------------------------
# Selection

defjvp(
    anp.where3,
    None,
    lambda g, ans, c, x, y: fit(_where(getval(c), g, 0.0), ans),
    lambda g, ans, c, x, y: fit(_where(getval(c), 0.0, g), ans),
)


def _clip_jvp(which):
    def rule(g, ans, x, a_min=None, a_max=None, out=None, **kwargs):
        mask = clip_masks(x, a_min, a_max, kwargs)[which]
        return fit(_where(mask, g, 0.0), ans)

    return rule


defjvp(anp.clip, _clip_jvp(0), _clip_jvp(1), _clip_jvp(2))


# ---------------------------------------------------------------------------------------
# More functions (see the end of numpy_vjps)

for _f in (
    anp.ascontiguousarray,
    anp.asfortranarray,
    anp.asanyarray,
    anp.asarray_chkfinite,
    anp.require,
    anp.diagflat,
    anp.resize,
    anp.delete,
):
    defjvp(_f, "same")
defjvp(anp.extract, None, "same")
defjvp(anp.unwrap, lambda g, ans, p, *a, **k: fit(g, ans))


def _unique_jvp(g, ans, x, *args, axis=None, **kwargs):
    # each unique value moves with the mean of its duplicates' tangents
    inverse, counts = V.unique_groups(x, ans)
    t = type(getval(ans))
    is_tuple = V._is_tuple_result(ans)
    values = ans[0] if is_tuple else ans
    vs = V._vs(values)
    share = (1.0 / counts).astype(_real_dtype(_meta(x)[1]))[inverse]
    tv = sparse_add(vs, None, anp.untake(anp.ravel(g) * share, (inverse,), vs))
    if not is_tuple:
        return fit(tv, values)
    rest = [onp.zeros(_shape(a), _meta(a)[1]) for a in list(getval(ans))[1:]]
    return V.make_sequence(t, fit(tv, values), *rest)


for _f in (anp.unique, anp.unique_values, anp.unique_all, anp.unique_counts, anp.unique_inverse):
    defjvp(_f, _unique_jvp)
