"""Rules of NumPy's functions that move, copy or build array entries: reshaping,
transposing, flipping, rolling, diagonals and triangles, tiling, padding, conversions,
joining and splitting, full, linspace and logspace; both modes side by side.

Most are linear in their array argument: the forward rule applies the function itself to
the tangent (``"same"``), and the reverse rule moves the cotangent back.
"""

import math
import warnings

import numpy as onp

from ..tracer import getval
from . import numpy_wrapper as anp
from ._registration import (
    def_from_impl,
    def_rules,
    def_rules_argnums,
    jvp_from_impl,
    vjp_from_impl,
)
from ._shapes import (
    along,
    constant_like,
    dtype_of,
    fit,
    inverse_permutation,
    ndim_of,
    real_dtype,
    shape_of,
    traced_sequence,
    unbroadcast,
    vspace_of,
    zeros_on,
)

_ndarray = onp.ndarray

# primitives the rules call, bound once
_sum, _reshape, _broadcast_to, _transpose = anp.sum, anp.reshape, anp.broadcast_to, anp.transpose
_swapaxes, _expand_dims, _tensordot, _getitem = anp.swapaxes, anp.expand_dims, anp.tensordot, anp.getitem
_untake, _astype, _mean, _flip = anp.untake, anp.astype_method, anp.mean, anp.flip
_diagonal, _moveaxis, _concat = anp.diagonal, anp.moveaxis, anp.concatenate_args

# ---- reshaping, transposing, flipping: linear in their array, "same" forward rules --------


def _order_of(x, order):
    if order in ("C", "F"):
        return order
    if order == "A" or order == "K":
        xv = getval(x)
        flags = getattr(xv, "flags", None)
        if flags is not None and flags.f_contiguous and not flags.c_contiguous:
            return "F"
    return "C"


def _reshaped_like(g, x, order):
    """``g`` in ``x``'s shape, read in ``order``; order= passed only when it is not "C"
    (Dask's reshape has no order= and takes C order)."""
    order = _order_of(x, order)
    shape = shape_of(x)
    return _reshape(g, shape) if order == "C" else _reshape(g, shape, order=order)


def _reshape_vjp(g, ans, x, *args, order="C", **kwargs):
    if len(args) > 1:
        order = args[1]
    return unbroadcast(_reshaped_like(g, x, order), x)


def _ravel_vjp(g, ans, x, order="C"):
    return unbroadcast(_reshaped_like(g, x, order), x)


def _same_shape_vjp(g, ans, x, *args, **kwargs):
    return unbroadcast(_reshape(g, shape_of(x)), x)


def_rules(anp.reshape, [_reshape_vjp], ["same"])
def_rules(anp.ravel, [_ravel_vjp], ["same"])
for _f in (anp.expand_dims, anp.squeeze):
    def_rules(_f, [_same_shape_vjp], ["same"])


def _atleast_vjp(argnums, ans, args, kwargs):
    if len(args) == 1:
        return lambda g: [unbroadcast(_reshape(g, shape_of(args[0])), args[0])]
    return lambda g: [unbroadcast(_reshape(_getitem_seq(g, i), shape_of(args[i])), args[i]) for i in argnums]


def _getitem_seq(g, i):
    return g[i]


def _atleast_jvp(argnums, gs, ans, args, kwargs):
    if len(args) == 1:
        return _reshape(gs[0], shape_of(ans))
    tangents = {i: g for i, g in zip(argnums, gs)}
    items = [
        _reshape(tangents[i], shape_of(ans[i]))
        if i in tangents
        else zeros_on(ans[i], shape_of(ans[i]), dtype_of(ans[i]))
        for i in range(len(args))
    ]
    return traced_sequence(tuple, items)


for _f in (anp.atleast_1d, anp.atleast_2d, anp.atleast_3d):
    def_rules_argnums(_f, _atleast_vjp, _atleast_jvp)


def _broadcast_arrays_vjp(argnums, ans, args, kwargs):
    return lambda g: [unbroadcast(g[i], args[i]) for i in argnums]


def _broadcast_arrays_jvp(argnums, gs, ans, args, kwargs):
    tangents = {i: g for i, g in zip(argnums, gs)}
    items = [
        fit(tangents[i], ans[i]) if i in tangents else zeros_on(ans[i], shape_of(ans[i]), dtype_of(ans[i]))
        for i in range(len(args))
    ]
    return traced_sequence(tuple, items)


def_rules_argnums(anp.broadcast_arrays, _broadcast_arrays_vjp, _broadcast_arrays_jvp)


def _transpose_vjp(g, ans, x, axes=None):
    if axes is None:
        return unbroadcast(_transpose(g), x)
    nd = ndim_of(x)
    return unbroadcast(_transpose(g, inverse_permutation([int(a) % nd for a in axes])), x)


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


def _rollaxis_vjp(g, ans, x, axis, start=0):
    return unbroadcast(_transpose(g, inverse_permutation(rollaxis_perm(ndim_of(x), axis, start))), x)


def_rules(anp.transpose, [_transpose_vjp], ["same"])  # (permute_dims is the same function)
if hasattr(anp, "fastCopyAndTranspose"):  # NumPy 1
    def_rules(anp.fastCopyAndTranspose, [lambda g, ans, x: _transpose_vjp(g, ans, x)], ["same"])
def_rules(anp.rollaxis, [_rollaxis_vjp], ["same"])
def_rules(anp.swapaxes, [lambda g, ans, x, axis1, axis2: unbroadcast(_swapaxes(g, axis1, axis2), x)], ["same"])
def_rules(
    anp.moveaxis, [lambda g, ans, x, source, destination: unbroadcast(_moveaxis(g, destination, source), x)], ["same"]
)
if hasattr(anp, "matrix_transpose"):  # NumPy >= 2.0
    def_rules(anp.matrix_transpose, [lambda g, ans, x: unbroadcast(_swapaxes(g, -1, -2), x)], ["same"])
def_rules(anp.broadcast_to, [lambda g, ans, x, shape, subok=False: unbroadcast(g, x)], ["same"])
def_rules(anp.flip, [lambda g, ans, x, axis=None: unbroadcast(_flip(g, axis), x)], ["same"])
def_rules(anp.flipud, [lambda g, ans, x: unbroadcast(anp.flipud(g), x)], ["same"])
def_rules(anp.fliplr, [lambda g, ans, x: unbroadcast(anp.fliplr(g), x)], ["same"])
def_rules(anp.rot90, [lambda g, ans, x, k=1, axes=(0, 1): unbroadcast(anp.rot90(g, -k, axes), x)], ["same"])


def _neg_shift(shift):
    if isinstance(shift, (tuple, list)):
        return tuple(-int(s) for s in shift)
    if isinstance(shift, _ndarray):
        return -shift
    return -int(shift)


def_rules(
    anp.roll, [lambda g, ans, x, shift, axis=None: unbroadcast(anp.roll(g, _neg_shift(shift), axis), x), None], ["same"]
)


# copies and conversions: the cotangent is the argument's, cast back to its dtype


def _conversion_vjp(g, ans, x, *args, **kwargs):
    return unbroadcast(g, x)


for _f in (
    anp.copy,
    anp.astype_method,
    anp.ascontiguousarray,
    anp.asfortranarray,
    anp.asanyarray,
    anp.asarray_chkfinite,
    anp.require,
):
    def_rules(_f, [_conversion_vjp], ["same"])
for _name in ("astype", "asfarray"):  # (astype: NumPy >= 2.0; asfarray: NumPy 1)
    if hasattr(anp, _name):
        def_rules(getattr(anp, _name), [_conversion_vjp], ["same"])


# ---- diagonals, triangles, tiles -------------------------------------------------------


def _diagonal_vjp(g, ans, x, offset=0, axis1=0, axis2=1):
    return unbroadcast(anp.diag_embed(g, offset, axis1 % ndim_of(x), axis2 % ndim_of(x), shape_of(x)), x)


def _diag_embed_vjp(g, ans, d, offset, axis1, axis2, shape):
    return unbroadcast(_diagonal(g, offset, axis1, axis2), d)


def_rules(anp.diagonal, [_diagonal_vjp], ["same"])
def_rules(anp.diag_embed, [_diag_embed_vjp], ["same"])


def _diag_vjp(g, ans, v, k=0):
    if ndim_of(v) == 1:
        return unbroadcast(_diagonal(g, k), v)
    return unbroadcast(anp.diag_embed(g, k, 0, 1, shape_of(v)), v)


def_rules(anp.diag, [_diag_vjp], ["same"])
def_rules(anp.diagflat, [lambda g, ans, v, k=0: unbroadcast(_reshape(_diagonal(g, k), shape_of(v)), v)], ["same"])
def_rules(anp.tril, [lambda g, ans, x, k=0: unbroadcast(anp.tril(g, k), x)], ["same"])
def_rules(anp.triu, [lambda g, ans, x, k=0: unbroadcast(anp.triu(g, k), x)], ["same"])


def _tile_vjp(g, ans, A, reps):
    shape = shape_of(A)
    reps = tuple(reps) if isinstance(reps, (tuple, list, _ndarray)) else (reps,)
    d = max(len(reps), len(shape))
    sh = (1,) * (d - len(shape)) + shape
    rp = (1,) * (d - len(reps)) + tuple(int(r) for r in reps)
    inter = tuple(s for pair in zip(rp, sh) for s in pair)
    r = _sum(_reshape(g, inter), axis=tuple(range(0, 2 * d, 2)))
    return unbroadcast(_reshape(r, shape), A)


def_rules(anp.tile, [_tile_vjp], ["same"])


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
    shape = shape_of(x)
    nd = len(shape)
    if _pad_is_selection(mode, kwargs):
        idx = onp.arange(1, math.prod(shape) + 1, dtype=onp.intp).reshape(shape)
        kw = {} if mode in ("constant", "empty") else {k: v for k, v in kwargs.items() if k == "reflect_type"}
        P = onp.pad(idx, pad_width, "constant" if mode == "empty" else mode, **kw)
        mask = P > 0
        where_from = onp.unravel_index(P[mask] - 1, shape)
        return _untake(_getitem(g, mask), where_from, vspace_of(x))
    widths = _pad_pairs(pad_width, nd)
    r = g
    dtype = real_dtype(dtype_of(x))
    for ax in range(nd):
        before, after = widths[ax]
        if before == 0 and after == 0:
            continue
        M = _pad_axis_matrix(shape[ax], before, after, mode, kwargs, ax, nd).astype(dtype)
        r = _moveaxis(_tensordot(r, M, axes=([ax], [0])), -1, ax)
    return unbroadcast(r, x)


def _pad_jvp(g, ans, x, pad_width, mode="constant", **kwargs):
    _pad_check(mode)
    if mode in PAD_STAT_MODES:
        return fit(jvp_from_impl(pad_stat_impl, 0)(g, ans, x, pad_width, mode, **kwargs), ans)
    return fit(anp.pad(g, pad_width, mode, **pad_linear_kwargs(mode, kwargs)), ans)


def_rules(anp.pad, [_pad_vjp], [_pad_jvp])


# ---- building arrays from traced elements, joining, splitting --------------------------


def _joined_jvp(fun):
    def jvp(argnums, gs, ans, args, kwargs):
        tangents = {i: g for i, g in zip(argnums, gs)}
        items = [
            tangents[i] if i in tangents else zeros_on(a, shape_of(a), _real_or_same(dtype_of(a)))
            for i, a in enumerate(args)
        ]
        return fit(fun(*items, **kwargs), ans)

    return jvp


def _real_or_same(dtype):
    return dtype if dtype.kind in "fc" else onp.dtype(onp.float64)


def _array_from_args_vjp(argnums, ans, args, kwargs):
    return lambda g: [unbroadcast(_getitem(g, i), args[i]) for i in argnums]


def_rules_argnums(anp.array_from_args, _array_from_args_vjp, _joined_jvp(anp.array_from_args))


def _concatenate_vjp(argnums, ans, args, kwargs):
    axis = kwargs.get("axis", 0)
    nd = ndim_of(ans)
    ax = axis % nd
    bounds, start = [], 0
    for a in args:
        stop = start + shape_of(a)[ax]
        bounds.append((start, stop))
        start = stop
    return lambda g: [unbroadcast(_getitem(g, along(ax, slice(*bounds[i]), nd)), args[i]) for i in argnums]


def_rules_argnums(anp.concatenate_args, _concatenate_vjp, _joined_jvp(anp.concatenate_args))


def _stack_vjp(argnums, ans, args, kwargs):
    nd = ndim_of(ans)
    ax = kwargs.get("axis", 0) % nd
    return lambda g: [unbroadcast(_getitem(g, along(ax, i, nd)), args[i]) for i in argnums]


def_rules_argnums(anp.stack_args, _stack_vjp, _joined_jvp(anp.stack_args))


def _split_axis(name, x, kwargs, args):
    if name == "hsplit":
        return 1 if ndim_of(x) > 1 else 0
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
    def_rules(getattr(anp, _name), [_split_rule(_name), None], ["same"])


def _unstack_vjp(g, ans, x, *, axis=0):
    return unbroadcast(anp.stack([g[i] for i in range(len(ans))], axis=axis), x)


if hasattr(anp, "unstack"):  # NumPy >= 2.1
    def_rules(anp.unstack, [_unstack_vjp], ["same"])


# ---- full, linspace, logspace ------------------------------------------------------------


def _full_vjp(g, ans, shape, fill_value, dtype=None, order="C", **kwargs):
    return unbroadcast(g, fill_value)


def_rules(anp.full, [None, _full_vjp], [None, "same"])


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
        t, ax = linspace_weights(shape_of(ans), num, endpoint, axis)
        w = t if which == 1 else 1.0 - t
        r = _sum(g * constant_like(w.astype(real_dtype(dtype_of(g))), g), axis=ax)
        div = (num - 1) if endpoint else num
        if gstep is not None and div > 0:
            r = r + gstep * ((1.0 if which == 1 else -1.0) / div)
        target = stop if which == 1 else start
        return unbroadcast(r, target)

    return rule


def _linspace_jvp(which):
    def rule(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, **kwargs):
        num = int(num)
        samples = ans[0] if retstep else ans
        t, ax = linspace_weights(shape_of(samples), num, endpoint, axis)
        w = t if which == 1 else 1.0 - t
        w = constant_like(w.astype(real_dtype(dtype_of(g))), g)
        sshape = shape_of(samples)
        bshape = sshape[:ax] + sshape[ax + 1 :]  # start and stop broadcast together
        if shape_of(g) != bshape:
            g = _broadcast_to(g, bshape)
        ts = fit(anp.expand_dims(g, ax) * w, samples)
        if not retstep:
            return ts
        div = (num - 1) if endpoint else num
        step = ans[1]
        tstep = (
            fit(g * ((1.0 if which == 1 else -1.0) / div), step)
            if div > 0
            else zeros_on(step, shape_of(step), dtype_of(step))
        )
        return traced_sequence(tuple, [ts, tstep])

    return rule


def_rules(anp.linspace, [_linspace_rule(0), _linspace_rule(1)], [_linspace_jvp(0), _linspace_jvp(1)])


@def_from_impl(anp.logspace, argnums=(0, 1, 4))
def _logspace_impl(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    y = anp.linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    if ndim_of(base) > 0:
        base = _expand_dims(base, axis)
    r = anp.power(base, y)
    return r if dtype is None else _astype(r, dtype)


# ---- pad with the statistic modes maximum, minimum, median ------------------------------


def pad_stat_impl(x, pad_width, mode, stat_length=None):
    """np.pad for mode maximum/minimum/median/mean, traced: axis by axis, each side is the
    statistic of the first/last ``stat_length`` entries along that axis."""
    stat = {"maximum": anp.max, "minimum": anp.min, "median": anp.median, "mean": _mean}[mode]
    nd = ndim_of(x)
    widths = _pad_pairs(pad_width, nd)
    lengths = None if stat_length is None else _pad_pairs(stat_length, nd)
    for ax in range(nd):
        before, after = widths[ax]
        n = shape_of(x)[ax]
        sides = []
        for width, from_end, k in ((before, False, 0), (after, True, 1)):
            if width == 0:
                sides.append(None)
                continue
            length = n if lengths is None else max(1, min(lengths[ax][k], n))
            part = _getitem(x, along(ax, slice(n - length, None) if from_end else slice(0, length), nd))
            value = stat(part, axis=ax, keepdims=True)
            shape = list(shape_of(x))
            shape[ax] = width
            sides.append(_broadcast_to(value, tuple(shape)))
        items = [s for s in (sides[0], x, sides[1]) if s is not None]
        if len(items) > 1:
            x = _concat(*items, axis=ax)
    return x
