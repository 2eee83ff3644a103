"""A CuPy stand-in: an array type that behaves as ``cupy.ndarray`` does where fastgrad cares.

The tests run without a GPU, so they ship this: ``fake_cupy.ndarray`` wraps a NumPy array
and imitates the CuPy behaviours that a NumPy-only implementation of automatic
differentiation would trip over.  Each one is CuPy's documented behaviour:

* Its own type, not an ``ndarray`` subclass, and no implicit conversion to NumPy:
  ``__array__`` raises ``TypeError`` (CuPy decided against implicit device-to-host
  transfers), so ``numpy.asarray(x)`` fails; ``.get()`` (or ``fake_cupy.asnumpy``) is the
  explicit way.
  https://docs.cupy.dev/en/stable/user_guide/difference.html and
  https://docs.cupy.dev/en/stable/reference/generated/cupy.ndarray.html (``get``);
  the decision: https://github.com/cupy/cupy/pull/734 (closed for cupy/cupy#3421).
* NumPy's functions and ufuncs dispatch to it: ``__array_function__`` (NEP 18) and
  ``__array_ufunc__`` (NEP 13) call this module's function of the same name, which runs
  NumPy's on the wrapped data and wraps the result.
  https://docs.cupy.dev/en/stable/user_guide/interoperability.html#numpy
* NumPy arrays are not accepted as operands (CuPy's kernels raise ``TypeError:
  Unsupported type <class 'numpy.ndarray'>``); Python and NumPy scalars are.  NumPy
  integer and boolean arrays are accepted as indices, as CuPy's indexing does.
* Reductions and scalar indexing return 0-d arrays, never NumPy scalars.
  https://docs.cupy.dev/en/stable/user_guide/difference.html#reduction-methods-return-zero-dimensional-array
* No ``ufunc.at``: ``numpy.add.at(x, ...)`` on one of these raises; CuPy's replacement is
  ``cupyx.scatter_add`` (here ``fake_cupyx.scatter_add``), which behaves as ``add.at``.
  https://docs.cupy.dev/en/stable/reference/ufunc.html and
  https://docs.cupy.dev/en/stable/reference/generated/cupyx.scatter_add.html
* ``float(x)``, ``bool(x)``, ``x.item()``, ``x.tolist()`` work (CuPy copies to the host
  and synchronises); they are counted in ``host_transfers`` so a test can see a rule
  branching in Python on device data.

What it does not imitate: missing functions (it offers every NumPy function, where CuPy
lacks a few) and dtype differences (``cupy.float64`` is NumPy's type here as there).  The
real-CuPy tests (test_real_cupy.py, on a GPU) cover those.
"""

import builtins
import functools
import numbers
import sys
import traceback
import types

import numpy as onp

_IMPLICIT_MESSAGE = (
    "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly."
)

# device-to-host copies a program asked for through Python's number protocols, and where
# (the stack of each, for the tests to say which line of fastgrad asked)
host_transfers = 0
transfer_stacks = []


def _count_transfer():
    global host_transfers
    host_transfers += 1
    if len(transfer_stacks) < 100:
        transfer_stacks.append(traceback.extract_stack()[:-2])


class ndarray:
    """A 'device' array: a NumPy array kept out of NumPy's reach."""

    __slots__ = ("_data",)
    __array_priority__ = 50.0  # below fastgrad's ArrayBox (100), as CuPy's is

    def __init__(self, data):
        if not isinstance(data, onp.ndarray):
            raise TypeError("fake_cupy.ndarray wraps a numpy.ndarray, got %s" % type(data).__name__)
        self._data = data

    # ---- explicit and refused conversions ------------------------------------------
    def get(self):
        """A NumPy copy (the explicit device-to-host transfer)."""
        return self._data.copy()

    def __array__(self, dtype=None, copy=None):
        raise TypeError(_IMPLICIT_MESSAGE)

    def __float__(self):
        _count_transfer()
        return float(self._data)

    def __int__(self):
        _count_transfer()
        return int(self._data)

    def __complex__(self):
        _count_transfer()
        return complex(self._data)

    def __bool__(self):
        _count_transfer()
        return builtins.bool(self._data)

    def __index__(self):
        _count_transfer()
        return self._data.__index__()

    def item(self, *args):
        _count_transfer()
        return self._data.item(*args)

    def tolist(self):
        _count_transfer()
        return self._data.tolist()

    # ---- attributes ------------------------------------------------------------------
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)
    itemsize = property(lambda self: self._data.itemsize)
    nbytes = property(lambda self: self._data.nbytes)
    strides = property(lambda self: self._data.strides)
    T = property(lambda self: ndarray(self._data.T))
    mT = property(lambda self: ndarray(onp.swapaxes(self._data, -1, -2)))
    flags = property(lambda self: self._data.flags)

    @property
    def real(self):
        return ndarray(self._data.real)

    @property
    def imag(self):
        return ndarray(self._data.imag)

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        for i in range(len(self._data)):
            yield self[i]

    def __repr__(self):
        return "fake_cupy." + repr(self._data)

    __hash__ = None

    # ---- indexing ---------------------------------------------------------------------
    def __getitem__(self, index):
        return _wrap(self._data[_index(index)])

    def __setitem__(self, index, value):
        self._data[_index(index)] = _operand(value)

    # ---- NumPy's protocols ------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if not builtins.all(_accepted(x) for x in inputs):
            return NotImplemented  # a traced value (a box) or another library's array: theirs first
        if method != "__call__":
            return NotImplemented  # CuPy's ufuncs have no .at (cupyx.scatter_add instead)
        # every ufunc runs 'on the device' (CuPy has NumPy's, and SciPy's in cupyx.scipy.special)
        return _device_function(ufunc)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        # as CuPy: its function of the same name, whatever the other arguments' types (a
        # NumPy array among them then raises TypeError in that function)
        impl = _IMPLEMENTATIONS.get(func)
        if impl is None:
            return NotImplemented
        return impl(*args, **kwargs)


def _accepted(x):
    """Operands CuPy's operators take (NumPy arrays too: they then raise TypeError)."""
    return isinstance(x, (ndarray, onp.ndarray, onp.generic, numbers.Number)) or x is None


def _operand(x, where="an operand"):
    """The NumPy data of an argument: ours unwrapped, scalars as they are, NumPy arrays refused."""
    if isinstance(x, ndarray):
        return x._data
    if isinstance(x, onp.ndarray):
        raise TypeError("Unsupported type %s" % type(x))
    if isinstance(x, (list, tuple)):
        return type(x)(_operand(e, where) for e in x) if not hasattr(x, "_fields") else x
    if isinstance(x, dict):
        return {k: _operand(v, where) for k, v in x.items()}
    return x


def _index(index):
    """An index: ours unwrapped; NumPy integer/boolean arrays allowed (CuPy converts them)."""
    if isinstance(index, ndarray):
        return index._data
    if isinstance(index, tuple):
        return tuple(_index(i) for i in index)
    return index


def _wrap(x):
    """Results on the 'device': arrays and NumPy scalars become ours (0-d for scalars)."""
    if isinstance(x, onp.ndarray):
        return ndarray(x)
    if isinstance(x, onp.generic) and not isinstance(x, (onp.str_, onp.bytes_, onp.void)):
        return ndarray(onp.asarray(x))
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_wrap(e) for e in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_wrap(e) for e in x)
    return x


def _device_function(numpy_function, creation=False):
    """``numpy_function`` on the wrapped data, its results wrapped."""

    @functools.wraps(numpy_function)
    def run(*args, **kwargs):
        if creation:  # asarray / array accept host data, as cupy.asarray does
            args = tuple(a._data if isinstance(a, ndarray) else a for a in args)
        else:
            args = _operand(args)
        kwargs = {k: _operand(v) for k, v in kwargs.items()}
        if "out" in kwargs and kwargs["out"] is not None:
            raise TypeError("fake_cupy: out= is not supported by the stand-in")
        return _wrap(numpy_function(*args, **kwargs))

    return run


# NumPy functions that are not array functions (no NEP 18 dispatch) or return host values
_CREATION = {"array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "asarray_chkfinite"}
_PASS_THROUGH = {"shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj", "isscalar", "can_cast"}


def _populate(namespace, numpy_namespace):
    table = {}
    for name in dir(numpy_namespace):
        if name.startswith("_"):
            continue
        obj = getattr(numpy_namespace, name)
        if isinstance(obj, type) or isinstance(obj, types.ModuleType):
            setattr(namespace, name, obj)  # dtypes (float64, ...) are NumPy's, as in CuPy
            continue
        if not callable(obj):
            setattr(namespace, name, obj)  # pi, e, inf, nan, newaxis
            continue
        if name in _PASS_THROUGH:
            impl = _passthrough(obj)
        else:
            impl = _device_function(obj, creation=name in _CREATION)
        setattr(namespace, name, impl)
        table[obj] = impl
    return table


def _passthrough(numpy_function):
    @functools.wraps(numpy_function)
    def run(*args, **kwargs):
        args = tuple(a._data if isinstance(a, ndarray) else a for a in args)
        return numpy_function(*args, **kwargs)

    return run


_this = sys.modules[__name__]
linalg = types.ModuleType(__name__ + ".linalg")
fft = types.ModuleType(__name__ + ".fft")
random = types.ModuleType(__name__ + ".random")
_IMPLEMENTATIONS = {}
_IMPLEMENTATIONS.update(_populate(linalg, onp.linalg))
_IMPLEMENTATIONS.update(_populate(fft, onp.fft))
for _name in ("randn", "rand", "uniform", "normal", "seed", "standard_normal"):
    setattr(random, _name, _device_function(getattr(onp.random, _name)))
_saved = {n: globals()[n] for n in ("ndarray", "linalg", "fft", "random", "get", "asnumpy") if n in globals()}
_IMPLEMENTATIONS.update(_populate(_this, onp))
globals().update(_saved)  # NumPy's ndarray/linalg/fft/random must not shadow ours


def asnumpy(x):
    """``cupy.asnumpy``: a NumPy copy of ours; NumPy values as they are."""
    return x.get() if isinstance(x, ndarray) else onp.asarray(x)


def _method(name):
    impl = getattr(_this, name)

    def method(self, *args, **kwargs):
        return impl(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in (
    "sum", "mean", "prod", "max", "min", "var", "std", "all", "any", "argmax", "argmin", "cumsum", "cumprod",
    "clip", "conj", "conjugate", "round", "dot", "nonzero", "repeat", "take", "squeeze", "swapaxes",
    "diagonal", "trace", "ravel", "argsort", "argpartition",
    "searchsorted", "compress", "choose", "ptp",
):  # fmt: skip
    setattr(ndarray, _name, _method(_name))


def _reshape(self, *shape, **kwargs):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return _wrap(self._data.reshape(shape, **kwargs))


def _transpose(self, *axes):
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = axes[0]
    return _wrap(self._data.transpose(*axes))


ndarray.reshape = _reshape
ndarray.transpose = _transpose
ndarray.astype = lambda self, dtype, *a, **k: ndarray(self._data.astype(dtype, *a, **k))
ndarray.copy = lambda self, order="C": ndarray(self._data.copy(order))
ndarray.flatten = lambda self, order="C": ndarray(self._data.flatten(order))
ndarray.view = lambda self, *a: ndarray(self._data.view(*a))
ndarray.fill = lambda self, v: self._data.fill(_operand(v))


def _sort_in_place(self, *args, **kwargs):
    self._data.sort(*args, **kwargs)


def _partition_in_place(self, kth, *args, **kwargs):
    self._data.partition(_operand(kth), *args, **kwargs)


ndarray.sort = _sort_in_place  # in place, as NumPy's and CuPy's methods are
ndarray.partition = _partition_in_place


def _binary(name, reflected=False):
    impl = getattr(_this, name)

    def op(self, other):
        if not _accepted(other):
            return NotImplemented  # e.g. a traced value: its reflected operator runs
        return impl(other, self) if reflected else impl(self, other)

    return op


for _op, _name in [
    ("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
    ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "power"), ("matmul", "matmul"),
    ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("divmod", "divmod"),
    ("lshift", "left_shift"), ("rshift", "right_shift"),
]:  # fmt: skip
    setattr(ndarray, "__%s__" % _op, _binary(_name))
    setattr(ndarray, "__r%s__" % _op, _binary(_name, reflected=True))
for _op, _name in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal")]:
    setattr(ndarray, "__%s__" % _op, _binary(_name))
ndarray.__eq__ = _binary("equal")
ndarray.__ne__ = _binary("not_equal")
ndarray.__neg__ = lambda self: _this.negative(self)
ndarray.__pos__ = lambda self: _this.positive(self)
ndarray.__abs__ = lambda self: _this.absolute(self)
ndarray.__invert__ = lambda self: _this.invert(self)


def _inplace(name):
    def op(self, other):
        self._data[...] = getattr(onp, name)(self._data, _operand(other))
        return self

    return op


for _op, _name in [("iadd", "add"), ("isub", "subtract"), ("imul", "multiply"), ("itruediv", "true_divide")]:
    setattr(ndarray, "__%s__" % _op, _inplace(_name))


def from_numpy(x):
    """A NumPy array (or scalar) moved onto the 'device'."""
    return ndarray(onp.array(x))
