"""fastgrad.numpy's namespace: every callable of NumPy, wrapped so that calls on traced
values are recorded.

* functions and ufuncs become primitives (their gradient rules live in the rule modules
  that numpy_vjps lists); a wrapper is made once per NumPy object, so aliases (``abs``/``absolute``,
  ``concat``/``concatenate``, ``pow``/``power``...) are one object;
* functions whose result does not depend differentiably on their inputs (comparisons,
  rounding, arg-indices, shapes, predicates, ``*_like``...) unbox their arguments and
  record nothing;
* functions that build arrays from Python lists of traced values (``array``,
  ``concatenate``, the ``stack`` family, ``append``, ``block``, ``select``, the choices of
  ``choose``) trace through the list, and ``apply_along_axis`` applies its function to
  traced slices;
* classes, dtypes and constants are NumPy's own, except the integer scalar types, which
  accept traced values (so that a traced value can be converted into an index).

A plain NumPy ufunc applied to a traced value is routed here (ArrayBox.__array_ufunc__).
Box arithmetic (``a * b``) uses primitives that apply Python's operator (see
OPERATOR_PRIMITIVES); they carry the same rules as the ufuncs.
"""

import builtins as _builtins
import operator as _operator
import types as _types
import warnings as _warnings

import numpy as _np

from .. import _backends
from ..core import SparseObject as _SparseObject
from ..tracer import Box as _Box, getval as _getval, notrace_primitive, primitive

_ndarray = _np.ndarray
_generic = _np.generic
_np_array = _np.array
_np_asarray = _np.asarray
_isinstance = _builtins.isinstance
_type = _builtins.type
_len = _builtins.len
_list = _builtins.list
_float = _builtins.float
_tuple = _builtins.tuple
_hasattr = _builtins.hasattr
_range = _builtins.range
_int = _builtins.int

# ---------------------------------------------------------------------------------------
# Which NumPy functions are constant with respect to their inputs (no gradient, no node).

NOTRACE_NAMES = frozenset(
    """
    equal not_equal greater greater_equal less less_equal
    logical_and logical_or logical_not logical_xor
    isfinite isinf isnan isnat isneginf isposinf isreal iscomplex isrealobj iscomplexobj
    isscalar isfortran iterable isdtype issubdtype isclose allclose array_equal array_equiv
    all any signbit isin heaviside spacing
    floor ceil round around rint trunc fix sign floor_divide
    argmax argmin argsort argpartition argwhere nanargmax nanargmin lexsort nonzero
    flatnonzero searchsorted digitize count_nonzero unravel_index ravel_multi_index
    diag_indices diag_indices_from tril_indices tril_indices_from triu_indices
    triu_indices_from mask_indices indices ix_
    shape ndim size result_type can_cast common_type min_scalar_type mintypecode
    promote_types may_share_memory shares_memory broadcast_shapes typename
    zeros_like ones_like empty_like full_like
    bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_invert bitwise_count
    bitwise_left_shift bitwise_right_shift invert left_shift right_shift gcd lcm
    packbits unpackbits
    array2string array_repr array_str base_repr binary_repr format_float_positional
    format_float_scientific datetime_as_string datetime_data busday_count busday_offset
    is_busday get_include get_printoptions set_printoptions printoptions getbufsize
    setbufsize geterr seterr geterrcall seterrcall show_config show_runtime info
    save savez savez_compressed savetxt load loadtxt genfromtxt fromfile frombuffer
    fromstring fromregex einsum_path nested_iters
""".split()
) | frozenset(  # NumPy 1's (removed in NumPy 2)
    """
    alltrue sometrue round_ in1d byte_bounds compare_chararrays find_common_type get_array_wrap
    issctype issubclass_ issubsctype maximum_sctype obj2sctype sctype2char safe_eval
    geterrobj seterrobj set_numeric_ops set_string_function add_docstring add_newdoc add_newdoc_ufunc
    deprecate deprecate_with_doc disp lookfor source who recfromcsv recfromtxt
""".split()
)

# Functions that write into an argument: they cannot be traced.
MUTATING_NAMES = frozenset("copyto put put_along_axis putmask place fill_diagonal".split())

# NumPy names not offered at all (submodules with their own untraced functions; the
# index-building objects; NumPy's test runner).
_SKIPPED_NAMES = frozenset(
    """
    test char core ctypeslib emath f2py lib ma polynomial rec strings matlib linalg fft random
""".split()
)

# NumPy objects passed through unchanged, although callable or module-like.
_PASSTHROUGH_MODULES = frozenset("testing exceptions dtypes typing".split())


def _rename(f, like, name=None):
    f.__name__ = name or like.__name__
    f.__qualname__ = f.__name__
    f.__doc__ = like.__doc__
    f.__module__ = __name__
    return f


# ---------------------------------------------------------------------------------------
# Primitives behind the box operators.  When one operand is an ndarray or a NumPy scalar
# and the other is not a Python complex, Python's + - * / % @ and unary - are exactly the
# ufunc (ndarray's operators call it; NumPy's scalar operators use its loops), and on
# scalars they cost ~40 ns instead of a ufunc call's ~0.5 us.  These primitives run the C
# operator directly (no Python frame) and carry the same rules as the ufuncs; ArrayBox
# uses them only for such operands (see numpy_boxes).  ``**`` is the exception: a NumPy
# scalar's calls the C library's pow, not np.power's loop (which may be NumPy's own SIMD
# code and differ by an ulp, or at -inf and -0 ** 0.5), and a complex array's takes
# square, sqrt and reciprocal shortcuts for the exponents 2, 0.5 and -1.  A box's ``**``
# is np.power, as in autograd, so its primitive calls the ufunc.


def _operator_primitive(op, ufunc):
    p = primitive(op)
    p.__name__ = p.__qualname__ = ufunc.__name__
    p.__doc__ = ufunc.__doc__
    p._ufunc = ufunc  # a duck-array operand (xarray) gets the call through NEP 13 dispatch
    return p


add_op = _operator_primitive(_operator.add, _np.add)
subtract_op = _operator_primitive(_operator.sub, _np.subtract)
multiply_op = _operator_primitive(_operator.mul, _np.multiply)
true_divide_op = _operator_primitive(_operator.truediv, _np.true_divide)
power_op = _operator_primitive(_np.power, _np.power)
remainder_op = _operator_primitive(_operator.mod, _np.remainder)
matmul_op = _operator_primitive(_operator.matmul, _np.matmul)
negative_op = _operator_primitive(_operator.neg, _np.negative)

# ufunc -> its operator primitive (the rule modules register both alike)
OPERATOR_PRIMITIVES = {
    _np.add: add_op,
    _np.subtract: subtract_op,
    _np.multiply: multiply_op,
    _np.true_divide: true_divide_op,
    _np.power: power_op,
    _np.remainder: remainder_op,
    _np.matmul: matmul_op,
    _np.negative: negative_op,
}

# Reductions that, like autograd's, accept a Python list of traced values (np.mean([a, b])).
_LIST_AWARE = frozenset(
    [_np.sum, _np.mean, _np.std, _np.var, _np.prod, _np.max, _np.min, _np.amax, _np.amin, _np.linalg.norm]
)


# np.sum(a) and np.mean(a) of a whole float64 array, as NumPy computes them (add.reduce, then
# the division by the count as a NumPy float64), without fromnumeric's Python-level layers:
# the loss of nearly every model ends in one of them.
_add_reduce = _np.add.reduce
_float64 = _np.float64


def _sum_of_all(a):
    return _add_reduce(a, axis=None)


def _mean_of_all(a):
    n = a.size
    return _add_reduce(a, axis=None) / n if n else _np.mean(a)  # (NumPy warns when empty)


_WHOLE_ARRAY_REDUCTIONS = {_np.sum: _sum_of_all, _np.mean: _mean_of_all}


def _list_aware_primitive(np_fun):
    this = []
    whole = _WHOLE_ARRAY_REDUCTIONS.get(np_fun)

    def raw(a, *args, **kwargs):
        t = _type(a)
        if whole is not None and not args and not kwargs:
            if t is _ndarray and a.dtype.type is _float64:
                return whole(a)
            if t is _float64 or t is _float:
                # one value: its sum and its mean are the value, as a float64 (NumPy's result)
                return _add_reduce(a, axis=None)
        if (t is _list or t is _tuple) and (_contains_box(a) or _backends.LOADED and _contains_foreign(a)):
            return this[0](array(a), *args, **kwargs)
        return np_fun(a, *args, **kwargs)

    prim = primitive(_rename(raw, np_fun))
    this.append(prim)
    return prim


def _choose_raw(a, choices, out=None, mode="raise"):
    # a list of choices holding traced values: stacked (broadcast to one shape) into one
    # traced array, then the primitive is called again, now on that array
    t = _type(choices)
    if (t is _list or t is _tuple) and _contains_box(choices):
        items = _join_items(choices)
        shape = _np.broadcast_shapes(*[_shape(c) for c in items])
        items = [c if _shape(c) == shape else broadcast_to(c, shape) for c in items]
        return _choose_primitive[0](a, stack_args(*items, axis=0), out=out, mode=mode)
    return _np.choose(a, choices, out=out, mode=mode)


_choose_primitive = []


_UFUNC_ATTRS = (
    "nin",
    "nout",
    "nargs",
    "ntypes",
    "types",
    "identity",
    "signature",
    "reduce",
    "accumulate",
    "reduceat",
    "outer",
    "at",
)

# numpy ufunc -> its fastgrad primitive (for ArrayBox.__array_ufunc__)
ufunc_wrappers = {}


# ---------------------------------------------------------------------------------------
# Integer scalar types that accept traced values.


class _IntTypeMeta(type):
    """Metaclass of fastgrad's integer scalar types: a call unboxes its arguments and
    returns NumPy's own scalar; isinstance/issubclass look at NumPy's type."""

    def __call__(cls, *args, **kwargs):
        return cls._numpy_type(*[_getval(a) for a in args], **kwargs)

    def __instancecheck__(cls, obj):
        return _isinstance(obj, cls._numpy_type)

    def __subclasscheck__(cls, sub):
        return _builtins.issubclass(sub, cls._numpy_type)

    def __repr__(cls):
        return repr(cls._numpy_type)


def _wrap_int_type(t):
    new = _IntTypeMeta(t.__name__, (t,), {"_numpy_type": t, "__module__": t.__module__, "__doc__": t.__doc__})
    new.__qualname__ = t.__qualname__
    return new


_INT_TYPES = frozenset(
    [
        _np.int8,
        _np.int16,
        _np.int32,
        _np.int64,
        _np.longlong,
        _np.uint8,
        _np.uint16,
        _np.uint32,
        _np.uint64,
        _np.ulonglong,
    ]
)


# ---------------------------------------------------------------------------------------
# Values nested in lists.


def _contains_box(seq):
    for e in seq:
        if _isinstance(e, _Box):
            return True
        t = _type(e)
        if (t is _list or t is _tuple) and _contains_box(e):
            return True
    return False


def _contains_foreign(seq):
    """True if the list/tuple ``seq`` holds (at any depth) an array of another library."""
    for e in seq:
        t = _type(e)
        if (t is _list or t is _tuple) and _contains_foreign(e) or _backends.is_foreign(e):
            return True
    return False


def _is_traced_sequence(obj):
    """True if ``obj`` is a list/tuple holding traced values, or a traced list/tuple."""
    t = _type(obj)
    if t is _list or t is _tuple:
        return _contains_box(obj)
    if _isinstance(obj, _Box):
        return _type(_getval(obj)) in (_list, _tuple)
    return False


def _elements(obj):
    if _isinstance(obj, _Box):  # a traced list: index it (traced)
        return [obj[i] for i in _range(_len(obj))]
    return obj


def _traceable(e):
    """An element of a joined sequence: lists holding boxes become traced arrays."""
    if _is_traced_sequence(e):
        return array(e)
    return e


def _shape(x):
    try:
        return _getval(x).shape
    except AttributeError:
        return _np.shape(_getval(x))


def _ndim(x):
    return _len(_shape(x))


# ---------------------------------------------------------------------------------------
# Internal primitives that have no NumPy name.

getitem = primitive(_operator.getitem)  # A[idx]


def _is_basic_index(idx):
    """True for indices that select each element at most once (no np.add.at needed)."""
    t = _type(idx)
    if t is _int or t is _slice or idx is None or idx is Ellipsis or _isinstance(idx, _np.integer):
        return True
    if t is _tuple:
        for i in idx:
            ti = _type(i)
            if not (ti is _int or ti is _slice or i is None or i is Ellipsis or _isinstance(i, _np.integer)):
                return False
        return True
    if t is _ndarray and idx.dtype == _np.bool_:
        return True
    return False


_slice = _builtins.slice
_add_at = _np.add.at


def _untake_raw(g, idx, vs):
    """The cotangent of ``A[idx]`` as a sparse object: added into a dense array on demand
    (``A`` belongs to the sum being built; an array of another library than NumPy gets the
    backend's scatter-add)."""
    if _is_basic_index(idx):

        def mut_add(A):
            try:
                A[idx] += g
            except _SCATTER_ERRORS:
                if _type(A) is _ndarray or not _backends.is_foreign(A):
                    raise
                return _backends.backend_of(A).scatter_add(A, idx, g)
            return A
    else:

        def mut_add(A):
            try:
                _add_at(A, idx, g)
            except _SCATTER_ERRORS:
                if _type(A) is _ndarray or not _backends.is_foreign(A):
                    raise
                return _backends.backend_of(A).scatter_add(A, idx, g)
            return A

    return _SparseObject(vs, mut_add)


# NumPy's own way is tried first, so that NumPy's arrays pay nothing for the other libraries
# (Dask and CuPy have no ufunc.at; Dask's item assignment takes no new axes)
_SCATTER_ERRORS = (TypeError, ValueError, IndexError, NotImplementedError)


_untake_raw.__name__ = _untake_raw.__qualname__ = "untake"
untake = primitive(_untake_raw)


def _astype_raw(x, dtype, order="K", casting="unsafe", subok=True, copy=True):
    # only the keywords not at their defaults (Dask's astype rejects order= and subok=)
    kwargs = {}
    if order != "K":
        kwargs["order"] = order
    if casting != "unsafe":
        kwargs["casting"] = casting
    if subok is not True:
        kwargs["subok"] = subok
    if copy is not True:
        kwargs["copy"] = copy
    try:
        return x.astype(dtype, **kwargs)
    except AttributeError:
        return _np_asarray(x).astype(dtype, **kwargs)


_astype_raw.__name__ = _astype_raw.__qualname__ = "astype"
astype_method = primitive(_astype_raw)


def _array_from_args_raw(*elements, dtype=None):
    backend = _backends.backend_of_values(elements)
    if backend is not _backends.NUMPY:
        # np.array of another library's arrays would convert them to NumPy: stacked on their
        # backend instead (Python numbers, and nested lists once made arrays, moved there first)
        items = []
        for e in elements:
            if _type(e) is _list or _type(e) is _tuple:
                e = _array_from_args_raw(*e)
            items.append(e if backend.owns(e) else backend.from_numpy(_np_asarray(e), like=None))
        result = _np.stack(items)
        return result if dtype is None else result.astype(dtype)
    return _np_array(elements, dtype=dtype)


_array_from_args_raw.__name__ = _array_from_args_raw.__qualname__ = "array_from_args"
array_from_args = primitive(_array_from_args_raw)


def _concatenate_args_raw(*arrays, axis=0):
    return _np.concatenate(arrays, axis=axis)


_concatenate_args_raw.__name__ = _concatenate_args_raw.__qualname__ = "concatenate_args"
concatenate_args = primitive(_concatenate_args_raw)


def _stack_args_raw(*arrays, axis=0):
    return _np.stack(arrays, axis=axis)


_stack_args_raw.__name__ = _stack_args_raw.__qualname__ = "stack_args"
stack_args = primitive(_stack_args_raw)


def _where_raw(condition, x, y):
    return _np.where(condition, x, y)


_where_raw.__name__ = _where_raw.__qualname__ = "where"
where3 = primitive(_where_raw)


def _diag_embed_raw(d, offset, axis1, axis2, shape):
    """An array of ``shape``, zero except its (offset) diagonal in axes (axis1, axis2),
    which holds the last axis of ``d`` (the inverse of np.diagonal)."""
    if _type(d) is not _ndarray and _backends.is_foreign(d):
        return _diag_embed_on_backend(d, offset, axis1, axis2, shape, _backends.backend_of(d))
    d = _np_asarray(d)
    out = _np.zeros(shape, dtype=d.dtype)
    view = _np.moveaxis(out, (axis1, axis2), (-2, -1))
    k = d.shape[-1]
    rows = _np.arange(k) + (-offset if offset < 0 else 0)
    cols = _np.arange(k) + (offset if offset > 0 else 0)
    view[..., rows, cols] = d
    return out


def _diag_embed_on_backend(d, offset, axis1, axis2, shape, backend):
    """_diag_embed_raw for an array of another library: ``d`` where an identity mask is
    true, padded to ``shape`` (the diagonal at ``offset``), then the two axes moved in place."""
    k = d.shape[-1]
    out = _np.where(backend.eye(k, bool), _np.expand_dims(d, -1), 0)
    row0 = -offset if offset < 0 else 0
    col0 = offset if offset > 0 else 0
    rows, cols = (row0, shape[axis1] - k - row0), (col0, shape[axis2] - k - col0)
    if rows != (0, 0) or cols != (0, 0):
        out = _np.pad(out, [(0, 0)] * (d.ndim - 1) + [rows, cols])
    nd = d.ndim + 1
    return _np.moveaxis(out, (nd - 2, nd - 1), (axis1, axis2))


_diag_embed_raw.__name__ = _diag_embed_raw.__qualname__ = "diag_embed"
diag_embed = primitive(_diag_embed_raw)


def make_diagonal(D, offset=0, axis1=-1, axis2=-2):
    """An array with the last axis of ``D`` on its ``offset`` diagonal in axes
    (``axis1``, ``axis2``) of the result, zeros elsewhere: the inverse of ``np.diagonal``.

    ``make_diagonal(D)`` of ``D`` with shape (..., n) has shape (..., n, n).

    >>> import fastgrad.numpy as np
    >>> np.make_diagonal(np.array([1.0, 2.0]))
    array([[1., 0.],
           [0., 2.]])
    >>> from fastgrad import grad
    >>> weights = np.array([[1.0, 5.0], [5.0, 2.0]])
    >>> grad(lambda d: np.sum(np.make_diagonal(d) * weights))(np.ones(2))
    array([1., 2.])
    """
    dshape = _shape(D)
    n = dshape[-1] + _builtins.abs(offset)
    nd = _len(dshape) + 1
    a1, a2 = axis1 % nd, axis2 % nd
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    batch = _builtins.iter(dshape[:-1])
    shape = _tuple(n if i in (a1, a2) else _builtins.next(batch) for i in _range(nd))
    return diag_embed(D, offset, a1, a2, shape)


# ---------------------------------------------------------------------------------------
# Wrappers with logic of their own: building arrays from lists of traced values, where.


def array(object, *args, **kwargs):
    if _type(object) is _ndarray or not (_isinstance(object, _Box) or _is_traced_sequence(object)):
        if _backends.LOADED and _type(object) is not _ndarray:
            foreign = _foreign_array(object, args, kwargs, copy=True)
            if foreign is not None:
                return foreign
        return _np_array(object, *args, **kwargs)
    dtype = args[0] if args else kwargs.get("dtype")
    ndmin = kwargs.get("ndmin", 0)
    if _isinstance(object, _Box) and not _is_traced_sequence(object):
        result = copy(object) if dtype is None else astype_method(object, dtype)
    else:
        result = _array_from_elements(_elements(object), dtype)
    nd = _ndim(result)
    if ndmin > nd:
        result = reshape(result, (1,) * (ndmin - nd) + _shape(result))
    return result


def _foreign_array(a, args, kwargs, copy):
    """``array``/``asarray`` of a Dask or CuPy array, or of a list holding some, on their
    backend (NumPy's functions would convert them to NumPy); None for anything else."""
    t = _type(a)
    dtype = args[0] if args else kwargs.get("dtype")
    if (t is _list or t is _tuple) and _contains_foreign(a):
        result = _array_from_elements(a, dtype, traced=False)
    elif _backends.is_foreign(a):
        if dtype is not None and _np.dtype(dtype) != a.dtype:
            result = a.astype(dtype)
        else:
            result = a.copy() if copy else a
    else:
        return None
    ndmin = kwargs.get("ndmin", 0)
    if ndmin > result.ndim:
        result = result.reshape((1,) * (ndmin - result.ndim) + result.shape)
    return result


def _array_from_elements(elements, dtype, traced=True):
    if not traced:
        items = [_array_from_elements(e, dtype, False) if _type(e) in (_list, _tuple) else e for e in elements]
        return _array_from_args_raw(*items, dtype=dtype)
    items = [
        _array_from_elements(_elements(e), dtype)
        if _is_traced_sequence(e)
        # (an untraced list of another library's arrays: one array there, never converted)
        else _array_from_elements(e, dtype, False)
        if (_type(e) is _list or _type(e) is _tuple) and _backends.LOADED and _contains_foreign(e)
        else e
        for e in elements
    ]
    return array_from_args(*items, dtype=dtype)


def asarray(a, *args, **kwargs):
    if _isinstance(a, _Box):
        if _is_traced_sequence(a):
            return array(a, *args[:1], dtype=kwargs.get("dtype"))
        dtype = args[0] if args else kwargs.get("dtype")
        if dtype is None or _np.dtype(dtype) == _np.result_type(_getval(a)):
            return a
        return astype_method(a, dtype)
    if _is_traced_sequence(a):
        return array(a, *args[:1], dtype=kwargs.get("dtype"))
    if _backends.LOADED and _type(a) is not _ndarray:
        foreign = _foreign_array(a, args, kwargs, copy=False)
        if foreign is not None:
            return foreign
    return _np_asarray(a, *args, **kwargs)


def _sequence(arrays):
    """``arrays`` as a list if it is another iterable than a list, tuple, array or traced list:
    NumPy's joining functions ask for a sequence, autograd's take any iterable (a generator, a
    dict's values), and code written for autograd passes them.  A traced array of one or more
    dimensions becomes the list of its traced rows, the sequence NumPy makes of an array
    (``np.vstack(x)`` joins the rows of ``x``)."""
    t = _type(arrays)
    if t is _list or t is _tuple:
        return arrays
    if _isinstance(arrays, _Box):
        if _type(_getval(arrays)) in (_list, _tuple):
            return arrays
        if _ndim(arrays) == 0:  # NumPy's error (iterating the box would give no rows)
            return _getval(arrays)
        return [arrays[i] for i in _range(_len(arrays))]
    if _isinstance(arrays, _ndarray) or not _hasattr(arrays, "__iter__"):
        return arrays
    return _list(arrays)


def _join_items(arrays):
    return [_traceable(e) for e in _elements(arrays)]


def concatenate(arrays, axis=0, out=None, **kwargs):
    arrays = _sequence(arrays)
    if out is None and _is_traced_sequence(arrays):
        items = _join_items(arrays)
        if axis is None:
            items = [ravel(e) for e in items]
            axis = 0
        result = concatenate_args(*items, axis=axis)
        dtype = kwargs.get("dtype")
        return result if dtype is None else astype_method(result, dtype)
    return _np.concatenate(arrays, axis, out, **kwargs)


def stack(arrays, axis=0, out=None, **kwargs):
    arrays = _sequence(arrays)
    if out is None and _is_traced_sequence(arrays):
        result = stack_args(*_join_items(arrays), axis=axis)
        dtype = kwargs.get("dtype")
        return result if dtype is None else astype_method(result, dtype)
    return _np.stack(arrays, axis, out, **kwargs)


def _atleast(x, n):
    """``x`` with at least ``n`` dimensions, placed as NumPy's atleast_{1,2,3}d do."""
    shape = _shape(x)
    nd = _len(shape)
    if nd >= n:
        return x
    if n == 1:
        new = (1,)
    elif n == 2:
        new = (1,) + shape if nd == 1 else (1, 1)
    else:
        new = {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[nd]
    return reshape(x, new)


def _joined(np_fun, ndmin, axis_of):
    def joiner(tup, **kwargs):
        tup = _sequence(tup)
        if not _is_traced_sequence(tup):
            return np_fun(tup, **kwargs)
        items = [_atleast(e, ndmin) for e in _join_items(tup)]
        result = concatenate_args(*items, axis=axis_of(items))
        dtype = kwargs.get("dtype")
        return result if dtype is None else astype_method(result, dtype)

    return _rename(joiner, np_fun)


hstack = _joined(_np.hstack, 1, lambda items: 0 if _ndim(items[0]) == 1 else 1)
vstack = _joined(_np.vstack, 2, lambda items: 0)
dstack = _joined(_np.dstack, 3, lambda items: 2)


def _as_column(e):
    nd = _ndim(e)
    return reshape(e, (_shape(e)[0] if nd == 1 else 1, 1)) if nd < 2 else e


def column_stack(tup):
    tup = _sequence(tup)
    if not _is_traced_sequence(tup) and not (_backends.LOADED and _contains_foreign(tup)):
        return _np.column_stack(tup)
    return concatenate_args(*[_as_column(e) for e in _join_items(tup)], axis=1)


# NumPy 2 deprecates row_stack as a function of its own; before, it is vstack itself
_ROW_STACK_DEPRECATED = getattr(_np, "row_stack", _np.vstack) is not _np.vstack
if _ROW_STACK_DEPRECATED:

    def row_stack(tup, **kwargs):
        tup = _sequence(tup)
        if not _is_traced_sequence(tup):
            if _backends.backend_of_values(tup) is not _backends.NUMPY:
                # NumPy's row_stack passes vstack its default keywords, which Dask rejects
                _warnings.warn(
                    "`row_stack` alias is deprecated. Use `np.vstack` directly.", DeprecationWarning, stacklevel=2
                )
                return _np.vstack(tup, **kwargs)
            return _np.row_stack(tup, **kwargs)
        _warnings.warn("`row_stack` alias is deprecated. Use `np.vstack` directly.", DeprecationWarning, stacklevel=2)
        return vstack(tup, **kwargs)

    _rename(row_stack, _np.row_stack)


def append(arr, values, axis=None):
    if not (
        _isinstance(arr, _Box) or _isinstance(values, _Box) or _is_traced_sequence(arr) or _is_traced_sequence(values)
    ):
        return _np.append(arr, values, axis)
    arr, values = _traceable(arr), _traceable(values)
    if axis is None:
        if _ndim(arr) != 1:
            arr = ravel(arr)
        values = ravel(values)
        axis = _ndim(arr) - 1
    return concatenate_args(arr, values, axis=axis)


_NoValue = object()


def _block_depth(obj):
    if _type(obj) is _list:
        return 1 + (_block_depth(obj[0]) if _len(obj) else 0)
    return 0


def _block_max_ndim(obj):
    if _type(obj) is _list:
        return _builtins.max([_block_max_ndim(o) for o in obj]) if _len(obj) else 0
    return _ndim(obj)


def _block_join(obj, depth, ndim):
    if _type(obj) is not _list:
        shape = _shape(obj)
        return reshape(obj, (1,) * (ndim - _len(shape)) + shape) if _len(shape) < ndim else obj
    parts = [_block_join(o, depth - 1, ndim) for o in obj]
    return concatenate_args(*parts, axis=-depth)


def block(arrays):
    if _isinstance(arrays, _Box) and _type(_getval(arrays)) not in (_list, _tuple):
        return array(arrays)  # one traced array is the whole block (a copy, as NumPy's)
    if not _is_traced_sequence(arrays):
        return _np.block(arrays)
    depth = _block_depth(arrays)
    ndim = _builtins.max(depth, _block_max_ndim(arrays))
    return _block_join(arrays, depth, ndim)


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    if not _isinstance(arr, _Box):
        return _np.apply_along_axis(func1d, axis, arr, *args, **kwargs)
    shape = _shape(arr)
    nd = _len(shape)
    axis = axis % nd
    moved = moveaxis(arr, axis, -1)
    outer = shape[:axis] + shape[axis + 1 :]
    results = [asarray(func1d(moved[idx], *args, **kwargs)) for idx in _np.ndindex(*outer)]
    rshape = _shape(results[0])
    out = reshape(stack_args(*results, axis=0), outer + rshape)
    no, nr = _len(outer), _len(rshape)
    perm = _list(_range(axis)) + _list(_range(no, no + nr)) + _list(_range(axis, no))
    return transpose(out, perm) if perm != _list(_range(no + nr)) else out


def select(condlist, choicelist, default=0):
    traced = (
        _is_traced_sequence(choicelist)
        or _isinstance(choicelist, _Box)
        or _isinstance(default, _Box)
        or _is_traced_sequence(default)
    )
    if not traced:
        return _np.select(condlist, choicelist, default)
    conds = [_getval(c) for c in condlist]
    choices = [_traceable(c) for c in _elements(choicelist)]
    if _len(conds) != _len(choices):
        raise ValueError("list of cases must be same length as list of conditions")
    result = _traceable(default)
    for cond, choice in _builtins.reversed(_list(_builtins.zip(conds, choices))):
        result = where3(cond, choice, result)  # the first true condition wins
    return result


def where(condition, x=_NoValue, y=_NoValue):
    if x is _NoValue and y is _NoValue:
        return _np.where(_getval(condition))
    if x is _NoValue or y is _NoValue:
        raise ValueError("either both or neither of x and y should be given")
    for v in (condition, x, y):
        if _isinstance(v, (_ndarray, _generic, _Box)) or _backends.is_foreign(v):
            return where3(condition, x, y)
    return _np.where(condition, x, y).tolist()


# ---------------------------------------------------------------------------------------
# r_ and c_: NumPy's index-expression concatenators, traced when given traced values.


class _Concatenator:
    """np.r_ / np.c_: NumPy's own object for untraced items; with traced items the same
    layout rules (slices as ranges, a leading "axis,ndmin,trans1d" directive, ndmin and
    trans1d placement of low-dimensional items) applied with traced reshapes, transposes
    and one concatenate."""

    __slots__ = ("_np_obj", "_name", "_axis", "_ndmin", "_trans1d")

    def __init__(self, np_obj, name, axis, ndmin, trans1d):
        self._np_obj, self._name = np_obj, name
        self._axis, self._ndmin, self._trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        items = key if _type(key) is _tuple else (key,)
        if not _builtins.any(_isinstance(k, _Box) or _is_traced_sequence(k) for k in items):
            return self._np_obj[key]
        axis, ndmin, trans1d = self._axis, self._ndmin, self._trans1d
        if items and _isinstance(items[0], str):
            axis, ndmin, trans1d = self._directive(items[0], axis, ndmin, trans1d)
            items = items[1:]
        parts = []
        for k in items:
            if _isinstance(k, str):
                raise ValueError("special directives must be the first entry.")
            if _isinstance(k, _slice):
                k = self._np_obj[k]  # the range NumPy makes of it (a constant)
            parts.append(self._placed(_traceable(k), ndmin, trans1d))
        return concatenate_args(*parts, axis=axis)

    def _directive(self, d, axis, ndmin, trans1d):
        if d in ("r", "c"):
            raise NotImplementedError(
                "fastgrad.numpy.{}['{}', ...] builds a np.matrix, which fastgrad does not trace; "
                "use np.concatenate or np.stack".format(self._name, d)
            )
        try:
            fields = [int(v) for v in d.split(",")]
        except ValueError:
            raise ValueError("unknown special directive {!r}".format(d)) from None
        if _len(fields) > 3:
            raise ValueError("unknown special directive {!r}".format(d))
        axis = fields[0]
        if _len(fields) >= 2:
            ndmin = fields[1]
        if _len(fields) == 3:
            trans1d = fields[2]
        return axis, ndmin, trans1d

    @staticmethod
    def _placed(k, ndmin, trans1d):
        """``k`` with at least ``ndmin`` dimensions: new axes in front, then (trans1d != -1)
        its own axes moved to start at axis ``trans1d``, as NumPy places them."""
        shape = _shape(k)
        nd = _len(shape)
        if nd >= ndmin:
            return k
        k = reshape(k, (1,) * (ndmin - nd) + shape)
        if trans1d == -1:
            return k
        extra = ndmin - nd
        start = trans1d + extra + 1 if trans1d < 0 else trans1d
        order = _list(_range(ndmin))
        return transpose(k, order[:start] + order[extra:] + order[start:extra])

    def __len__(self):
        return 0

    def __repr__(self):
        return "fastgrad.numpy." + self._name


r_ = _Concatenator(_np.r_, "r_", 0, 1, -1)
c_ = _Concatenator(_np.c_, "c_", -1, 2, 0)


# ---------------------------------------------------------------------------------------
# Functions that write into an argument.


def _mutating(np_fun):
    def refuse_traced(*args, **kwargs):
        for a in _builtins.list(args) + _builtins.list(kwargs.values()):
            if _isinstance(a, _Box):
                raise TypeError(
                    "np.{} writes into an array in place, which fastgrad cannot differentiate "
                    "through; build a new array instead (e.g. with np.where, np.concatenate "
                    "or arithmetic)".format(np_fun.__name__)
                )
        return np_fun(*args, **kwargs)

    return _rename(refuse_traced, np_fun)


# ---------------------------------------------------------------------------------------
# Wrapping the namespace.

_SPECIAL = {
    _np.array: array,
    _np.asarray: asarray,
    _np.concatenate: concatenate,
    _np.stack: stack,
    _np.hstack: hstack,
    _np.vstack: vstack,
    _np.dstack: dstack,
    _np.column_stack: column_stack,
    _np.append: append,
    _np.where: where,
    _np.select: select,
    _np.block: block,
    _np.apply_along_axis: apply_along_axis,
}
if _ROW_STACK_DEPRECATED:
    _SPECIAL[_np.row_stack] = row_stack
for _npf, _f in _SPECIAL.items():
    _rename(_f, _npf)
    _f.__wrapped__ = _npf
_SPECIAL_BY_ID = {id(k): v for k, v in _SPECIAL.items()}

_wrappers = {}  # id(numpy object) -> fastgrad object (so aliases share one wrapper)
_keepalive = []  # the numpy objects whose ids key _wrappers


def _is_function(obj):
    return (
        _isinstance(obj, (_np.ufunc, _types.FunctionType, _types.BuiltinFunctionType))
        or _type(obj).__name__ == "_ArrayFunctionDispatcher"
    )


def wrap_numpy_object(name, obj):
    """The fastgrad counterpart of numpy object ``obj`` (named ``name``), made once."""
    key = id(obj)
    if key in _wrappers:
        return _wrappers[key]
    if key in _SPECIAL_BY_ID:
        new = _SPECIAL_BY_ID[key]
    elif _isinstance(obj, type):
        new = _wrap_int_type(obj) if obj in _INT_TYPES else obj
    elif _is_function(obj):
        if name in MUTATING_NAMES:
            new = _mutating(obj)
        else:
            if name in NOTRACE_NAMES:
                new = notrace_primitive(obj)
            elif obj in _LIST_AWARE:
                new = _list_aware_primitive(obj)
            elif obj is _np.choose:
                new = primitive(_rename(_choose_raw, obj))
                _choose_primitive.append(new)
            else:
                new = primitive(obj)
            if _isinstance(obj, _np.ufunc):
                ufunc_wrappers[obj] = new
                new._ufunc = obj  # a duck-array operand (xarray) gets the call through NEP 13 dispatch
                for attr in _UFUNC_ATTRS:
                    try:
                        setattr(new, attr, getattr(obj, attr))
                    except AttributeError:
                        pass
    else:
        new = obj
    _wrappers[key] = new
    _keepalive.append(obj)
    return new


def _public_numpy_names():
    # (NumPy 1's dir() leaves out some of __all__: AxisError, ComplexWarning...)
    for name in sorted(set(dir(_np)) | set(getattr(_np, "__all__", ()))):
        if name in _SKIPPED_NAMES or name in ("mgrid", "ogrid", "s_", "index_exp"):
            continue
        if name.startswith("_") and name not in ("__version__", "__array_api_version__"):
            continue
        try:
            obj = getattr(_np, name)
        except AttributeError:
            continue
        if _isinstance(obj, _types.ModuleType) and name not in _PASSTHROUGH_MODULES:
            continue
        yield name, obj


def _build_namespace():
    ns = {}
    for name, obj in _public_numpy_names():
        ns[name] = wrap_numpy_object(name, obj)
    ns["r_"], ns["c_"] = r_, c_
    ns["make_diagonal"] = make_diagonal
    return ns


_namespace = _build_namespace()
__all__ = sorted(_namespace)
globals().update(_namespace)
