"""Vector spaces of NumPy arrays and scalars.

A space is its shape and dtype; float32 and float16 spaces keep their dtype (zeros, ones,
randn are made in it); integer and boolean arrays have float64 spaces.  A Python float lives in the float64 space of shape ().  Spaces are
immutable and cached by (shape, dtype), so asking for one is a dictionary lookup.

Arrays of another library (Dask, CuPy: fastgrad._backends) have the same spaces made on
their backend (``BackendArrayVSpace``): zeros, ones and randn are arrays of that library
(a Dask space keeps the chunks of its value), and sums never write into a value in place.
"""

import math

import numpy as np

from .. import _backends
from ..builtins import NamedTupleVSpace
from ..core import VSpace

# autograd has one space class per linalg result type; here every named tuple (those results
# among them) has the tuple space, which keeps the type: the names are that class
EigResultVSpace = EighResultVSpace = QRResultVSpace = SVDResultVSpace = SlogdetResultVSpace = NamedTupleVSpace


class ArrayVSpace(VSpace):
    """Real arrays (and real scalars) of one shape and dtype."""

    def __init__(self, value):
        try:
            self.shape, self.dtype = value.shape, value.dtype
        except AttributeError:
            value = np.asarray(value)
            self.shape, self.dtype = value.shape, value.dtype

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def ndim(self):
        return len(self.shape)

    def zeros(self):
        return np.zeros(self.shape, dtype=self.dtype)

    def ones(self):
        return np.ones(self.shape, dtype=self.dtype)

    def standard_basis(self):
        for idx in np.ndindex(*self.shape):
            v = np.zeros(self.shape, dtype=self.dtype)
            v[idx] = 1
            yield v

    def randn(self):
        return np.asarray(np.random.randn(*self.shape)).astype(self.dtype)

    def _add(self, x, y):
        if (type(y) in _NUMPY_OPERANDS or not _backends.is_foreign(y)) and (
            type(x) is np.ndarray or not _backends.is_foreign(x)
        ):
            return x + y
        return _foreign_add(x, y)

    def _mut_add(self, x, y):
        # x belongs to the sum being built: in place only NumPy into NumPy (a Dask or CuPy
        # term makes the sum a new array of its library)
        if (type(y) in _NUMPY_OPERANDS or not _backends.is_foreign(y)) and (
            type(x) is np.ndarray or not _backends.is_foreign(x)
        ):
            x += y
            return x
        return _foreign_add(x, y)

    def _scalar_mul(self, x, a):
        return x * a

    def _inner_prod(self, x, y):
        return np.dot(np.ravel(x), np.ravel(y))

    def _covector(self, x):
        return x


class ComplexArrayVSpace(ArrayVSpace):
    """Complex arrays: a real space of twice the size, inner product Re(conj(x) y)."""

    iscomplex = True

    @property
    def size(self):
        return 2 * math.prod(self.shape)

    def ones(self):
        return np.full(self.shape, 1 + 1j, dtype=self.dtype)

    def standard_basis(self):
        for idx in np.ndindex(*self.shape):
            for unit in (1.0, 1.0j):
                v = np.zeros(self.shape, dtype=self.dtype)
                v[idx] = unit
                yield v

    def randn(self):
        return (np.asarray(np.random.randn(*self.shape)) + 1j * np.asarray(np.random.randn(*self.shape))).astype(
            self.dtype
        )

    def _inner_prod(self, x, y):
        return np.real(np.dot(np.conj(np.ravel(x)), np.ravel(y)))

    def _covector(self, x):
        return np.conj(x)


_NUMPY_OPERANDS = frozenset(
    [np.ndarray, float, complex, int, np.float64, np.float32, np.float16, np.longdouble]
    + [np.complex64, np.complex128, np.clongdouble, np.int64, np.int32, np.bool_]
)


def _foreign_add(x, y):
    """x + y, one of them an array of another library: a new array of that library."""
    backend = _backends.backend_of(x)
    return (backend if backend is not _backends.NUMPY else _backends.backend_of(y)).add(x, y)


class BackendArrayVSpace(ArrayVSpace):
    """Real arrays of one shape and dtype of another library (``backend``); a Dask space
    keeps the chunks of its value, so its zeros are chunked as the value is."""

    def __init__(self, value, backend):
        self.shape, self.dtype, self.backend = tuple(value.shape), value.dtype, backend
        self.chunks = getattr(value, "chunks", None)
        if self.dtype.kind in "biu":  # as for NumPy's integer arrays: float64 cotangents
            self.dtype = _float64

    def zeros(self):
        return self.backend.zeros(self.shape, self.dtype, like=self)

    def ones(self):
        return self.backend.ones(self.shape, self.dtype, like=self)

    def randn(self):
        return self.backend.randn(self.shape, self.dtype, like=self)

    def standard_basis(self):
        for v in ArrayVSpace.standard_basis(self):
            yield self.backend.from_numpy(v, like=self)

    def _add(self, x, y):
        return self.backend.add(x, y)

    def _mut_add(self, x, y):
        return self.backend.add(x, y)  # never in place: x may be a value fastgrad did not make


class ComplexBackendArrayVSpace(BackendArrayVSpace, ComplexArrayVSpace):
    """Complex arrays of another library."""

    iscomplex = True

    def ones(self):
        return self.backend.full(self.shape, 1 + 1j, self.dtype, like=self)

    def standard_basis(self):
        for v in ComplexArrayVSpace.standard_basis(self):
            yield self.backend.from_numpy(v, like=self)


def _backend_space_maker(backend):
    def backend_vspace(value):
        if value.dtype.kind == "c":
            return ComplexBackendArrayVSpace(value, backend)
        return BackendArrayVSpace(value, backend)

    return backend_vspace


def _register_backend(backend):
    for t in backend.types:
        if t not in VSpace.mappings:
            VSpace.register(t, _backend_space_maker(backend))


_float64 = np.dtype(np.float64)
_cache = {}
_CACHE_LIMIT = 4096


def array_vspace(value):
    """The (cached) space of an ndarray or NumPy scalar ``value``."""
    try:
        key = (value.shape, value.dtype)
    except AttributeError:
        value = np.asarray(value)
        key = (value.shape, value.dtype)
    try:
        return _cache[key]
    except KeyError:
        pass
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    kind = key[1].kind
    vs = (ComplexArrayVSpace if kind == "c" else ArrayVSpace)(value)
    if kind in "biu":
        # An integer or boolean array can be differentiated (as in autograd), but its
        # tangents and cotangents are real numbers: its space is float64's, so that a
        # cotangent sum or a scattered index cotangent never truncates to integers.
        vs.dtype = _float64
    _cache[key] = vs
    return vs


_float64_scalar_space = ArrayVSpace(np.float64(0.0))
_complex128_scalar_space = ComplexArrayVSpace(np.complex128(0.0))

VSpace.register(np.ndarray, array_vspace)
VSpace.register(float, lambda x: _float64_scalar_space)
VSpace.register(complex, lambda x: _complex128_scalar_space)
for _t in (np.float64, np.float32, np.float16, np.longdouble, np.complex64, np.complex128, np.clongdouble):
    VSpace.register(_t, array_vspace)
_backends.on_load(_register_backend)
