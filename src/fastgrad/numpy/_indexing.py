"""Rules of NumPy's selections: indexing (``x[idx]`` and its transpose ``untake``), take,
take_along_axis, compress, choose, repeat, where, clip, sort, partition, bincount's
weights, resize, delete, extract and unique; both modes side by side.

A selection is linear in the array it selects from: the forward rule selects from the
tangent, the reverse rule adds the cotangent back where the entries came from
(``untake``, a scatter-add).  Conventions where the derivative does not exist: clip on a
bound gives the cotangent to the bound (not to the argument, as in autograd); sort and
partition follow a stable order among equal values; unique's duplicates share the
cotangent of their value evenly.
"""

import math

import numpy as onp

from ..builtins import make_sequence
from ..core import sparse_add
from ..tracer import getval
from . import numpy_wrapper as anp
from ._registration import (
    def_rules,
)
from ._shapes import (
    data_of,
    dtype_of,
    fit,
    index_like,
    real_dtype,
    shape_of,
    unbroadcast,
    unset,
    vspace_of,
)


# primitives the rules call, bound once
_reshape, _expand_dims, _where, _getitem = anp.reshape, anp.expand_dims, anp.where3, anp.getitem
_untake = anp.untake

# ---- sort, partition, take_along_axis, choose ----------------------------------------


def permutation_index(x, ans, axis):
    """A NumPy index ``idx`` with ``ans == x[idx]``, for ``ans`` a permutation of ``x``
    along ``axis`` (or of the flattened x for axis None), e.g. sorted or partitioned.
    Equal values are matched in a stable order."""
    xv, av = data_of(x), data_of(ans)
    if type(xv) is not onp.ndarray:
        # another library's arrays: the permutation found there, by gathers only (p[sa] = sx
        # is p = sx[sa^-1], the inverse of sa being its argsort)
        flat = axis is None
        ax = 0 if flat else int(axis) % xv.ndim
        sx = onp.argsort(xv.ravel() if flat else xv, axis=ax, kind="stable")
        sa = onp.argsort(av, axis=ax, kind="stable")
        p = onp.take_along_axis(sx, onp.argsort(sa, axis=ax, kind="stable"), axis=ax)
        return along_axis_index(p, None if flat else ax, xv.shape)
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
    indices = data_of(indices)  # (another library's indices stay there, with the others)
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
            idx.append(index_like(onp.arange(shape[d]).reshape((1,) * d + (-1,) + (1,) * (nd - d - 1)), indices))
    return tuple(idx)


def _sort_vjp(g, ans, x, axis=-1, *args, **kwargs):
    return _untake(g, permutation_index(x, ans, axis), vspace_of(x))


def _partition_vjp(g, ans, x, kth, axis=-1, *args, **kwargs):
    return _untake(g, permutation_index(x, ans, axis), vspace_of(x))


def _sort_jvp(t, ans, x, axis=-1, *args, **kwargs):
    return _getitem(t, permutation_index(x, ans, axis))


def _partition_jvp(t, ans, x, kth, axis=-1, *args, **kwargs):
    return _getitem(t, permutation_index(x, ans, axis))


def_rules(anp.sort, [_sort_vjp], [_sort_jvp])
if hasattr(anp, "msort"):  # NumPy 1: sort along the first axis
    def_rules(anp.msort, [lambda g, ans, x: _sort_vjp(g, ans, x, 0)], [lambda t, ans, x: _sort_jvp(t, ans, x, 0)])
def_rules(anp.partition, [_partition_vjp, None], [_partition_jvp, None])


def _take_along_axis_vjp(g, ans, arr, indices, axis=-1):
    return _untake(g, along_axis_index(getval(indices), axis, shape_of(arr)), vspace_of(arr))


def_rules(anp.take_along_axis, [_take_along_axis_vjp, None], ["same"])


def choose_mask(a, choices, mode="raise"):
    """One-hot selections of np.choose(a, choices): shape (n,) + broadcast shape."""
    av = onp.asarray(getval(a))
    cshape = shape_of(choices)
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


def_rules(anp.choose, [None, _choose_vjp], [None, "same"])


# ---------------------------------------------------------------------------------------
# Selection: where, clip, indexing

def_rules(
    anp.where3,
    [
        None,
        lambda g, ans, c, x, y: unbroadcast(_where(getval(c), g, 0.0), x),
        lambda g, ans, c, x, y: unbroadcast(_where(getval(c), 0.0, g), y),
    ],
    [
        None,
        lambda t, ans, c, x, y: fit(_where(getval(c), t, 0.0), ans),
        lambda t, ans, c, x, y: fit(_where(getval(c), 0.0, t), ans),
    ],
)


def clip_masks(x, a_min, a_max, kwargs):
    """Which of (x, lower bound, upper bound) each entry of np.clip's result comes from,
    as np.clip computes min(max(x, lo), hi): a bound gets the entries equal to it."""
    lo = kwargs.get("min", a_min)
    hi = kwargs.get("max", a_max)
    lo = None if unset(lo) else getval(lo)
    hi = None if unset(hi) else getval(hi)
    xv = getval(x)
    inner = xv if lo is None else onp.maximum(xv, lo)
    m_hi = False if hi is None else data_of(inner >= hi)
    m_lo = False if lo is None else onp.logical_and(onp.logical_not(m_hi), xv <= lo)
    m_x = onp.logical_not(onp.logical_or(m_hi, m_lo))
    return m_x, m_lo, m_hi


def _clip_rule(which):
    def rule(g, ans, x, a_min=None, a_max=None, out=None, **kwargs):
        masks = clip_masks(x, a_min, a_max, kwargs)
        target = (x, a_min, a_max)[which]
        return unbroadcast(_where(masks[which], g, 0.0), target)

    return rule


def _clip_jvp(which):
    def rule(g, ans, x, a_min=None, a_max=None, out=None, **kwargs):
        mask = clip_masks(x, a_min, a_max, kwargs)[which]
        return fit(_where(mask, g, 0.0), ans)

    return rule


def_rules(anp.clip, [_clip_rule(0), _clip_rule(1), _clip_rule(2)], [_clip_jvp(0), _clip_jvp(1), _clip_jvp(2)])


def _take_index(shape, indices, axis, mode="raise"):
    """The index ``idx`` with ``a[idx] == np.take(a, indices, axis, mode=mode)``."""
    ind = data_of(indices)  # (another library's index stays there: its scatter-add takes it)
    n = math.prod(shape) if axis is None else shape[axis]
    if mode == "wrap":
        ind = ind % n
    elif mode == "clip":
        ind = onp.clip(ind, 0, n - 1)
    if axis is None:
        return onp.unravel_index(onp.where(ind < 0, ind + n, ind), shape)
    return (slice(None),) * (axis % len(shape)) + (ind,)


def _take_vjp(g, ans, a, indices, axis=None, out=None, mode="raise"):
    return _untake(g, _take_index(shape_of(a), indices, axis, mode), vspace_of(a))


def _compress_vjp(g, ans, condition, a, axis=None, out=None):
    indices = onp.nonzero(onp.asarray(getval(condition)))[0]
    return _untake(g, _take_index(shape_of(a), indices, axis), vspace_of(a))


def _repeat_vjp(g, ans, a, repeats, axis=None):
    shape = shape_of(a)
    n = math.prod(shape) if axis is None else shape[axis]
    indices = onp.repeat(onp.arange(n), onp.asarray(getval(repeats)))
    return _untake(g, _take_index(shape, indices, axis), vspace_of(a))


def_rules(anp.take, [_take_vjp, None], ["same"])
def_rules(anp.compress, [None, _compress_vjp], [None, "same"])
def_rules(anp.repeat, [_repeat_vjp, None], ["same"])


# ---------------------------------------------------------------------------------------
# Indexing and the rest


def _bincount_vjp_weights(g, ans, x, weights=None, minlength=0):
    return unbroadcast(_getitem(g, onp.asarray(getval(x))), weights)


def_rules(anp.bincount, [None, _bincount_vjp_weights], [None, "same"])
def_rules(anp.getitem, [lambda g, ans, A, idx: _untake(g, idx, vspace_of(A)), None], ["same"])


def _untake_jvp(g, ans, x, idx, vs):
    # The tangent of a sparse cotangent (forward over reverse through indexing), made
    # dense: engine-side, the accumulation primitive sparse_add passes a tangent through
    # unchanged, so a sparse one would reach rules that expect arrays.
    return sparse_add(vs, None, anp.untake(g, idx, vs))


def_rules(anp.untake, [lambda g, ans, x, idx, vs: _getitem(g, idx), None, None], [_untake_jvp, None, None])


def selection_index(fun, argnum, args, kwargs):
    """For ``fun`` that only selects (and repeats) entries of ``args[argnum]`` or fills
    constants: the flat indices ``P`` (shape of the result, -1 for a constant) with
    ``result == x.ravel()[P]`` where ``P >= 0``, found by applying fun to the indices."""
    x = args[argnum]
    shape = shape_of(x)
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
            return _untake(g, onp.unravel_index(P, shape_of(x)), vspace_of(x))
        return _untake(_getitem(g, mask), onp.unravel_index(P[mask], shape_of(x)), vspace_of(x))

    return rule


SELECTIONS = {anp.resize: 0, anp.delete: 0, anp.extract: 1}
for _f, _i in SELECTIONS.items():
    def_rules(_f, [_selection_vjp(_f, _i) if k == _i else None for k in range(_i + 1)], [None] * _i + ["same"])


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
    share = (1.0 / counts).astype(real_dtype(dtype_of(x)))[inverse]
    return unbroadcast(_reshape(_getitem(gv, inverse) * share, shape_of(x)), x)


def _unique_jvp(g, ans, x, *args, axis=None, **kwargs):
    # each unique value moves with the mean of its duplicates' tangents
    inverse, counts = unique_groups(x, ans)
    t = type(getval(ans))
    is_tuple = _is_tuple_result(ans)
    values = ans[0] if is_tuple else ans
    vs = vspace_of(values)
    share = (1.0 / counts).astype(real_dtype(dtype_of(x)))[inverse]
    tv = sparse_add(vs, None, anp.untake(anp.ravel(g) * share, (inverse,), vs))
    if not is_tuple:
        return fit(tv, values)
    rest = [onp.zeros(shape_of(a), dtype_of(a)) for a in list(getval(ans))[1:]]
    return make_sequence(t, fit(tv, values), *rest)


for _name in ("unique", "unique_values", "unique_all", "unique_counts", "unique_inverse"):
    if hasattr(anp, _name):  # (all but unique: NumPy >= 2.0)
        def_rules(getattr(anp, _name), [_unique_vjp], [_unique_jvp])
