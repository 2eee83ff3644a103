"""ArrayBox: a traced array or scalar, with NumPy's operators and array methods.

Every operator and method calls a fastgrad.numpy primitive, so it is recorded exactly
like the corresponding function call.
"""

import numpy as _np

from .. import _backends
from .._engine import engine as _engine
from ..builtins import SequenceBox  # noqa: F401  (autograd's numpy_boxes has these names too)
from ..tracer import Box, getval, primitive  # noqa: F401
from . import numpy_wrapper as anp

# The array methods a traced array forwards to differentiable functions, and those whose
# result is constant (indices, booleans, rounding): autograd publishes these two lists.
diff_methods = [
    "clip",
    "compress",
    "cumprod",
    "cumsum",
    "diagonal",
    "max",
    "mean",
    "min",
    "prod",
    "ptp",
    "ravel",
    "repeat",
    "reshape",
    "squeeze",
    "std",
    "sum",
    "swapaxes",
    "take",
    "trace",
    "transpose",
    "var",
]
nondiff_methods = ["all", "any", "argmax", "argmin", "argpartition", "argsort", "nonzero", "searchsorted", "round"]

_getitem = anp.getitem
_add, _subtract, _multiply = anp.add, anp.subtract, anp.multiply
_true_divide, _power, _remainder = anp.true_divide, anp.power, anp.remainder
_matmul, _negative, _absolute = anp.matmul, anp.negative, anp.absolute
_floor_divide, _divmod = anp.floor_divide, anp.divmod
_equal, _not_equal = anp.equal, anp.not_equal
_less, _less_equal, _greater, _greater_equal = anp.less, anp.less_equal, anp.greater, anp.greater_equal
_ufunc_wrappers = anp.ufunc_wrappers
_undispatched = _engine.call_without_ufunc_dispatch
_add_op, _subtract_op, _multiply_op = anp.add_op, anp.subtract_op, anp.multiply_op
_true_divide_op, _power_op, _remainder_op = anp.true_divide_op, anp.power_op, anp.remainder_op
_matmul_op, _negative_op = anp.matmul_op, anp.negative_op
_ndarray = _np.ndarray
# value types for which Python's operators are NumPy's ufuncs
_OPERATOR_SAFE = frozenset(
    [_np.ndarray, _np.float64, _np.float32, _np.float16, _np.longdouble, _np.complex128, _np.complex64, _np.clongdouble]
)
_SEQUENCES = frozenset([list, tuple])
# Operands that take the ufunc primitive whatever the box holds: sequences, and Python
# complex numbers (1j * np.float64(2) is Python's complex multiply, a Python complex;
# np.multiply gives a complex128, as autograd does)
_GENERAL_OPERANDS = _SEQUENCES | {complex}
_UFUNC_OPERATORS = {u: p for u, p in anp.OPERATOR_PRIMITIVES.items() if u is not _np.negative}

_SETITEM_MESSAGE = (
    "fastgrad cannot differentiate through item assignment (A[idx] = v) into a traced "
    "array. Build a new array instead, for example np.where(mask, v, A) to replace "
    "entries, np.concatenate / np.stack to assemble pieces, or A + np.eye(n) * d / "
    "A * (1 - onehot) + v * onehot for single entries."
)


def _given(kwargs, **defaults_or_not):
    """``kwargs`` plus the keyword arguments whose value is not the default (None, False, 0)."""
    for k, v in defaults_or_not.items():
        if v is not None and v is not False and not (k == "ddof" and type(v) is int and v == 0):
            kwargs[k] = v
    return kwargs


def _shape_of(value):
    try:
        return value.shape
    except AttributeError:
        return _np.shape(value)


class ArrayBox(_engine.ArithmeticBox):
    """A traced NumPy array or scalar."""

    __slots__ = ()
    __array_priority__ = 100.0

    # ---- attributes ---------------------------------------------------------------
    @property
    def shape(self):
        return _shape_of(self._value)

    @property
    def ndim(self):
        return len(_shape_of(self._value))

    @property
    def size(self):
        try:
            return self._value.size
        except AttributeError:
            return _np.size(self._value)

    @property
    def dtype(self):
        try:
            return self._value.dtype
        except AttributeError:
            return _np.result_type(self._value)

    @property
    def T(self):
        return anp.transpose(self)

    @property
    def real(self):
        return anp.real(self)

    @property
    def imag(self):
        return anp.imag(self)

    # ---- container protocol -------------------------------------------------------
    __getitem__ = _getitem

    def __setitem__(self, idx, value):
        raise TypeError(_SETITEM_MESSAGE)

    def __len__(self):
        return len(self._value)

    # No __iter__: iteration goes through __getitem__ until IndexError, as for autograd's
    # boxes, so a box is not an abc.Iterable.  pandas then takes one for a scalar and fails
    # loudly when it builds a Series of it, instead of iterating it into floats (a silently
    # detached result) after x * pd.Series(...).

    def __bool__(self):
        return bool(self._value)

    def __hash__(self):
        return id(self)

    def __float__(self):
        return float(getval(self._value))

    def __int__(self):
        return int(getval(self._value))

    def __complex__(self):
        return complex(getval(self._value))

    def __repr__(self):
        return "ArrayBox({!r}, trace={})".format(self._value, self._trace)

    # ---- arithmetic ---------------------------------------------------------------
    # + - * / ** % @ and unary - come from the compiled ArithmeticBox (no Python frame per
    # operator), configured at the end of this module: with an ndarray or NumPy-scalar value
    # (and an operand that is not a list or tuple) the operator primitives apply Python's
    # operator, which is the ufunc there; other values (a Python float, a box of an outer
    # trace) go through the ufunc primitive.

    def __pos__(self):
        return self

    __floordiv__ = _floor_divide
    __divmod__ = _divmod
    __abs__ = _absolute

    def __rfloordiv__(self, other):
        return _floor_divide(other, self)

    def __rdivmod__(self, other):
        return _divmod(other, self)

    # ---- comparisons: plain boolean results --------------------------------------
    __eq__ = _equal
    __ne__ = _not_equal
    __lt__ = _less
    __le__ = _less_equal
    __gt__ = _greater
    __ge__ = _greater_equal

    # ---- NumPy protocols ------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # From NumPy's dispatch (NEP 13): the primitive must not hand the call back to it,
        # and gives NotImplemented when its output cannot be boxed (a DataArray operand:
        # NumPy then lets that operand's __array_ufunc__ apply the ufunc to its data).
        if method == "__call__" and not kwargs and len(inputs) == 2:
            # ndarray <op> box or NumPy scalar <op> box: the operator primitive applies
            # (no operand overrides __array_ufunc__, so it never dispatches)
            op = _UFUNC_OPERATORS.get(ufunc)
            if op is not None:
                ta, tb = type(inputs[0]), type(inputs[1])
                if (ta in _OPERATOR_SAFE or tb in _OPERATOR_SAFE) and ta not in _SEQUENCES and tb not in _SEQUENCES:
                    return op(*inputs)
        if method == "__call__" and "out" not in kwargs:
            wrapper = _ufunc_wrappers.get(ufunc)
            if wrapper is not None:
                return _undispatched(wrapper, *inputs, **kwargs)
        raise TypeError(
            "numpy.{}{} cannot be applied to a traced value{}: fastgrad routes only plain "
            "ufunc calls without out= (use fastgrad.numpy functions instead)".format(
                ufunc.__name__, "" if method == "__call__" else "." + method, " with out=" if "out" in kwargs else ""
            )
        )

    def __array_namespace__(self, api_version=None):
        from fastgrad import numpy

        return numpy

    # ---- methods ----------------------------------------------------------------------
    # Keyword arguments at their defaults are not passed on: Dask's reshape, astype and
    # reductions reject some of NumPy's (order=, subok=, out=).
    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and (shape[0] is None or not isinstance(shape[0], (int, _np.integer))):
            shape = shape[0]
        return anp.reshape(self, shape) if order == "C" else anp.reshape(self, shape, order=order)

    def transpose(self, *axes):
        if not axes:
            axes = None
        elif len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, _np.integer))):
            axes = axes[0]
        return anp.transpose(self, axes)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return anp.astype_method(self, dtype, order=order, casting=casting, subok=subok, copy=copy)

    # the value's own item/tolist (CuPy's copy to the host; a NumPy array's as before)
    def item(self, *args):
        value = getval(self._value)
        return value.item(*args) if hasattr(value, "item") else _np.asarray(value).item(*args)

    def tolist(self):
        value = getval(self._value)
        return value.tolist() if hasattr(value, "tolist") else _np.asarray(value).tolist()

    def conj(self):
        return anp.conjugate(self)

    conjugate = conj

    def copy(self, order="K"):
        return anp.copy(self, order=order)

    def flatten(self, order="C"):
        return anp.ravel(self) if order == "C" else anp.ravel(self, order=order)

    def ravel(self, order="C"):
        return anp.ravel(self) if order == "C" else anp.ravel(self, order=order)

    def dot(self, b):
        return anp.dot(self, b)

    def clip(self, min=None, max=None, **kwargs):
        return anp.clip(self, min, max, **kwargs)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        return anp.sum(self, **_given(kwargs, axis=axis, dtype=dtype, out=out, keepdims=keepdims))

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        return anp.mean(self, **_given(kwargs, axis=axis, dtype=dtype, out=out, keepdims=keepdims))

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        return anp.prod(self, **_given(kwargs, axis=axis, dtype=dtype, out=out, keepdims=keepdims))

    def max(self, axis=None, out=None, keepdims=False, **kwargs):
        return anp.max(self, **_given(kwargs, axis=axis, out=out, keepdims=keepdims))

    def min(self, axis=None, out=None, keepdims=False, **kwargs):
        return anp.min(self, **_given(kwargs, axis=axis, out=out, keepdims=keepdims))

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
        return anp.var(self, **_given(kwargs, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims))

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
        return anp.std(self, **_given(kwargs, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims))

    def ptp(self, axis=None, out=None, keepdims=False):
        return anp.ptp(self, axis=axis, out=out, keepdims=keepdims)

    def all(self, axis=None, out=None, keepdims=False, **kwargs):
        return anp.all(self, axis=axis, out=out, keepdims=keepdims, **kwargs)

    def any(self, axis=None, out=None, keepdims=False, **kwargs):
        return anp.any(self, axis=axis, out=out, keepdims=keepdims, **kwargs)

    def cumsum(self, axis=None, dtype=None, out=None):
        return anp.cumsum(self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return anp.cumprod(self, axis=axis, dtype=dtype, out=out)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return anp.diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return anp.trace(self, offset, axis1, axis2, dtype, out)

    def squeeze(self, axis=None):
        return anp.squeeze(self, axis)

    def swapaxes(self, axis1, axis2):
        return anp.swapaxes(self, axis1, axis2)

    def repeat(self, repeats, axis=None):
        return anp.repeat(self, repeats, axis)

    def take(self, indices, axis=None, out=None, mode="raise"):
        return anp.take(self, indices, axis, out, mode)

    def compress(self, condition, axis=None, out=None):
        return anp.compress(condition, self, axis, out)

    def round(self, decimals=0, out=None):
        return anp.round(self, decimals, out)

    def argmax(self, axis=None, out=None, **kwargs):
        return anp.argmax(self, axis, out, **kwargs)

    def argmin(self, axis=None, out=None, **kwargs):
        return anp.argmin(self, axis, out, **kwargs)

    def argsort(self, axis=-1, kind=None, order=None, **kwargs):
        return anp.argsort(self, axis, kind, order, **kwargs)

    def argpartition(self, kth, axis=-1, kind="introselect", order=None):
        return anp.argpartition(self, kth, axis, kind, order)

    def nonzero(self):
        return anp.nonzero(self)

    def searchsorted(self, v, side="left", sorter=None):
        return anp.searchsorted(self, v, side, sorter)


# ArrayBox's part in NumPy's ufunc protocol (NEP 13), new in autograd 1.9.  Without
# __array_ufunc__, NumPy's operators and in-place operators defer to a traced operand by its
# __array_priority__, so its reflected operator runs, as in autograd 1.8: what code written for
# 1.8 may rely on (an ndarray subclass whose own __array_ufunc__ cannot take a box, on the left
# of an operator; `array += box` rebinding the name to a traced result).
_ARRAY_UFUNC = ArrayBox.__dict__["__array_ufunc__"]


def _use_array_ufunc(enabled):
    """Whether traced arrays take part in NumPy's ufunc protocol (autograd 1.9) or not (1.8)."""
    if enabled:
        ArrayBox.__array_ufunc__ = _ARRAY_UFUNC
    elif "__array_ufunc__" in ArrayBox.__dict__:
        del ArrayBox.__array_ufunc__


_FLOAT_TYPES = (
    _np.ndarray,
    float,
    _np.float64,
    _np.float32,
    _np.float16,
    _np.longdouble,
    complex,
    _np.complex64,
    _np.complex128,
    _np.clongdouble,
)
for _t in _FLOAT_TYPES:
    ArrayBox.register(_t)


def _register_backend(backend):
    # arrays of another library (Dask, CuPy) are traced as NumPy's are, once it is imported
    for t in backend.types:
        if t not in ArrayBox.type_mappings:
            ArrayBox.register(t)


_backends.on_load(_register_backend)
# a function that fails on another library's arrays raises an error naming it and the library
_engine.bind(explain_failure=_backends.explain_primitive_failure)


_engine.use_compiled_operators(ArrayBox)
_engine.bind(
    box_operators={
        "add": (_add_op, _add),
        "sub": (_subtract_op, _subtract),
        "mul": (_multiply_op, _multiply),
        "truediv": (_true_divide_op, _true_divide),
        "pow": (_power_op, _power),
        "mod": (_remainder_op, _remainder),
        "matmul": (_matmul_op, _matmul),
        "neg": (_negative_op, _negative),
    },
    box_fast_types=_OPERATOR_SAFE,
    box_general_types=_GENERAL_OPERANDS,
)
