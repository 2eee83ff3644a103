"""Vector spaces of NumPy arrays and scalars.

A space is its shape and dtype; float32 and float16 spaces keep their dtype (zeros, ones,
randn are made in it); integer and boolean arrays have float64 spaces.  A Python float lives in the float64 space of shape ().  Spaces are
immutable and cached by (shape, dtype), so asking for one is a dictionary lookup.
"""

import math

import numpy as np

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
        return x + y

    def _mut_add(self, x, y):
        x += y
        return x

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
