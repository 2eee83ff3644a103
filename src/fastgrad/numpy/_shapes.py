"""Shapes, dtypes and broadcasting of the values rules work with.

Every rule module (numpy/, scipy/) reads shapes and dtypes here, and moves a derivative
between the space of an argument and the space of the result:

* ``unbroadcast(g, x)`` (reverse mode): the cotangent ``g`` of a broadcast result summed
  down to ``x``'s shape and cast to its dtype (a float32 input gets a float32 cotangent
  whatever it was combined with);
* ``fit(t, ans)`` (forward mode): the tangent ``t`` broadcast up to the result's shape and
  cast to its dtype (the tangent of x in ``x + y`` is x's tangent broadcast, complex when
  y is complex); ``match`` is the variant SciPy's rules use, which casts real floats only.

Both return their argument untouched when the layouts already agree: that test is all a
rule pays on the common path.  Values may be traced (boxes): shapes and dtypes are read
from the plain values, the arithmetic is done with fastgrad.numpy primitives so that it
is recorded.
"""

import math

import numpy as onp

from .. import _backends
from .. import builtins as _fg_builtins
from .._engine import engine as _engine
from ..core import vspace
from ..tracer import Box, getval
from . import numpy_wrapper as anp
from .numpy_vspaces import array_vspace

_ndarray = onp.ndarray
_float64 = onp.float64
_bool_ = onp.bool_
_F64 = onp.dtype(onp.float64)
_C128 = onp.dtype(onp.complex128)
NoValue = onp._NoValue
_same_layout = _engine.same_layout  # two ndarrays of one shape and dtype
_add_reduce = onp.add.reduce
_sum, _reshape, _broadcast_to = anp.sum, anp.reshape, anp.broadcast_to
_real, _astype = anp.real, anp.astype_method


def shape_and_dtype(x):
    """(shape, dtype) of an array, NumPy scalar, Python scalar or box."""
    t = type(x)
    if t is _ndarray or t is _float64:
        return x.shape, x.dtype
    if t is float:
        return (), _F64
    if t is complex:
        return (), _C128
    if isinstance(x, Box):
        return shape_and_dtype(getval(x))
    try:
        return x.shape, x.dtype
    except AttributeError:
        a = onp.asarray(x)
        return a.shape, a.dtype


def shape_of(x):
    return shape_and_dtype(x)[0]


def ndim_of(x):
    return len(shape_and_dtype(x)[0])


def dtype_of(x):
    return shape_and_dtype(x)[1]


def is_complex(x):
    return shape_and_dtype(x)[1].kind == "c"


def real_dtype(dtype):
    """The real dtype of the same precision (float32 for complex64); float64 for integers."""
    if dtype.kind == "c":
        return onp.empty(0, dtype).real.dtype
    if dtype.kind != "f":
        return _F64
    return dtype


# ---- the data of a value, kept in its own library ---------------------------------------
# A rule that needs a mask, a tie count or a guard computes it from the value's data with
# array operations, so that an array of another library (Dask, CuPy) stays in that
# library: converting it to NumPy would compute a whole Dask graph in the middle of the
# gradient, or fail for an array on a GPU.


def data_of(x):
    """The plain value of ``x`` as an array: NumPy's for NumPy values, Python numbers and
    sequences; another library's array as it is."""
    v = getval(x)
    if type(v) is _ndarray or not _backends.is_foreign(v):
        return onp.asarray(v)
    return v


def as_dtype(v, dtype):
    """``v`` (a mask, a plain array) as an array of ``dtype`` in its own library."""
    if type(v) is _ndarray or not _backends.is_foreign(v):
        return onp.asarray(v, dtype=dtype)
    return v.astype(dtype)


def constant_like(const, x):
    """The NumPy constant ``const`` (a mask, weights) in the library of ``x``'s value, so
    that arithmetic between them stays there (CuPy refuses NumPy operands)."""
    v = getval(x)
    if type(v) is _ndarray or not _backends.is_foreign(v):
        return const
    return _backends.backend_of(v).from_numpy(const)


def index_like(index, x):
    """The NumPy integer array ``index`` as ``x``'s library takes an index."""
    v = getval(x)
    if type(v) is _ndarray or not _backends.is_foreign(v):
        return index
    return _backends.backend_of(v).index_from_numpy(index)


def zeros_on(x, shape, dtype):
    """Zeros of ``shape`` and ``dtype`` in the library of ``x``'s value (NumPy's for NumPy
    values and Python numbers; Dask's keep x's chunks where the shapes agree)."""
    v = getval(x)
    if type(v) is _ndarray or not _backends.is_foreign(v):
        return onp.zeros(shape, dtype)
    return _backends.backend_of(v).zeros(shape, dtype, like=v)


def ones_on(x, shape, dtype):
    """Ones as ``zeros_on`` makes zeros."""
    v = getval(x)
    if type(v) is _ndarray or not _backends.is_foreign(v):
        return onp.ones(shape, dtype)
    return _backends.backend_of(v).ones(shape, dtype, like=v)


def may_hold_true(mask):
    """False only if ``mask`` is known to have no true entry.  Another library's array
    counts as possibly true without looking (looking would compute it or wait for the
    GPU): the rule then takes its general branch, which gives the same values where the
    mask is false."""
    t = type(mask)
    if t is _bool_ or t is bool:  # (a comparison of scalars)
        return bool(mask)
    if t is _ndarray or not _backends.is_foreign(mask):
        return bool(onp.any(mask))
    return True


def unset(v):
    """An optional argument left at its default (None, or NumPy's no-value marker)."""
    return v is None or v is NoValue


def vspace_of(x):
    return array_vspace(x) if type(x) is _ndarray else vspace(x)


# ---- reverse mode: down to an argument --------------------------------------------------


def unbroadcast(g, target):
    """``g`` summed down to ``target``'s shape and cast to its dtype."""
    tg, tt = type(g), type(target)
    if tg is _float64:
        if tt is _float64 or tt is float:
            return g
    elif tg is _ndarray:
        if tt is _ndarray:
            if _same_layout(g, target):
                return g
        elif (tt is _float64 or tt is float) and g.dtype is _F64 and not g.shape:
            return g
    return _unbroadcast(g, target)


def unbroadcast_f(target, f):
    """autograd's helper for extension code: ``g -> unbroadcast(f(g), target)``."""
    return lambda g: unbroadcast(f(g), target)


def _unbroadcast(g, target):
    tshape, tdtype = shape_and_dtype(target)
    gshape, gdtype = shape_and_dtype(g)
    if gshape != tshape:
        g = _sum_to_shape(g, gshape, tshape)
    if gdtype != tdtype:
        g = _cast(g, gdtype, tdtype)
    return g


def _sum_to_shape(g, gshape, tshape):
    lead = len(gshape) - len(tshape)
    smaller = lead < 0
    if not smaller:
        for i in range(len(tshape)):
            if tshape[i] != 1 and tshape[i] != gshape[lead + i]:
                smaller = True
                break
    if smaller:
        # g is smaller than the target somewhere: broadcast it up first
        full = onp.broadcast_shapes(gshape, tshape)
        g = _broadcast_to(g, full)
        gshape, lead = full, len(full) - len(tshape)
    axes = list(range(lead))
    for i in range(len(tshape)):
        if tshape[i] == 1 and gshape[lead + i] != 1:
            axes.append(lead + i)
    if axes:
        if type(g) is _ndarray:
            g = _add_reduce(g, axis=tuple(axes))  # g.sum without its Python-level wrapper
        else:
            g = _sum(g, axis=tuple(axes))
    if shape_of(g) != tshape:
        g = g.reshape(tshape) if type(g) is _ndarray else _reshape(g, tshape)
    return g


def _cast(g, gdtype, tdtype):
    if tdtype.kind not in "fc":
        # an integer or boolean target (an input, or through astype): its cotangents are
        # real, of any float dtype; they are not cast to the target's dtype
        return _real(g) if gdtype.kind == "c" else g
    if gdtype.kind == "c" and tdtype.kind != "c":
        g = _real(g)
        gdtype = shape_and_dtype(g)[1]
    if gdtype != tdtype:
        g = _astype(g, tdtype)
    return g


# ---- forward mode: up to the result ----------------------------------------------------


def fit(t, ans):
    """The tangent ``t`` in the space of ``ans``: broadcast to its shape, cast to its dtype."""
    if type(t) is _ndarray and type(ans) is _ndarray and t.shape == ans.shape and t.dtype == ans.dtype:
        return t
    tshape, tdtype = shape_and_dtype(t)
    ashape, adtype = shape_and_dtype(ans)
    if tshape != ashape:
        t = _broadcast_to(t, ashape)
    if tdtype != adtype and adtype.kind in "fc":
        if tdtype.kind == "c" and adtype.kind != "c":
            t = _real(t)
            tdtype = shape_and_dtype(t)[1]
        if tdtype != adtype:
            t = _astype(t, adtype)
    return t


def match(t, ans):
    """The tangent ``t`` with the shape and (real float) dtype of the result ``ans``."""
    tshape, tdtype = shape_and_dtype(t)
    ashape, adtype = shape_and_dtype(ans)
    if tshape != ashape:
        t = _broadcast_to(t, ashape)
    if adtype.kind == "f" and tdtype != adtype:
        t = _astype(t, adtype)
    return t


# ---- axes of reductions ----------------------------------------------------------------


def normalized_axes(axis, ndim):
    """``axis`` (None, int or tuple, negatives allowed) as a sorted tuple of axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, onp.integer)):
        return (int(axis) % ndim,) if ndim else ()
    return tuple(sorted(int(a) % ndim for a in axis))


def reduced_size(shape, axis):
    return math.prod(shape[i] for i in normalized_axes(axis, len(shape)))


def expand_reduced(g, shape, axis, keepdims, like=None):
    """The cotangent of a reduction over ``axis``, repeated back to the input ``shape``
    (``like``: the input, whose chunks a Dask cotangent takes)."""
    if axis is not None and (not keepdims or keepdims is NoValue):
        axes = normalized_axes(axis, len(shape))
        kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
        if kept != shape_of(g):
            g = _reshape(g, kept)
    if shape_of(g) != shape:
        if like is not None and type(getval(like)) is not _ndarray and _backends.is_foreign(getval(like)):
            # repeated by a product with ones laid out as the input (a Dask broadcast would
            # be one chunk, split again, moved whole between workers, where it meets them)
            return g * ones_on(like, shape, dtype_of(g))
        g = broadcast(g, shape)
    return g


def broadcast(g, shape):
    """``broadcast_to(g, shape)`` (a read-only view); for a plain scalar or 0-d array made
    directly with zero strides, without NumPy's Python-level broadcast_to (4x faster)."""
    t = type(g)
    if t is _ndarray and not g.shape:
        g = g[()]
        t = type(g)
    if t is _float64 or t is onp.float32 or t is onp.complex128:
        return onp.ndarray(shape, g.dtype, buffer=g, strides=(0,) * len(shape))
    return _broadcast_to(g, shape)


def along(axis, index, ndim):
    """The index selecting ``index`` along ``axis`` (every element of the other axes)."""
    return (slice(None),) * (axis % ndim) + (index,)


def inverse_permutation(perm):
    """The permutation that undoes ``perm`` (argsort of a sequence of distinct ints)."""
    return sorted(range(len(perm)), key=perm.__getitem__)


def traced_sequence(seq_type, items):
    """A list/tuple of ``items``, traced when an item is traced."""
    return _fg_builtins.tuple(items) if seq_type is tuple else _fg_builtins.list(items)


def arrays_for_lists(args):
    """``args`` with list/tuple constants (NumPy accepts them as arrays) made arrays."""
    for a in args:  # (a loop, not any() of a generator: power's rules call this on every node)
        if type(a) is list or type(a) is tuple:
            return tuple([onp.asarray(b) if type(b) is list or type(b) is tuple else b for b in args])
    return args
