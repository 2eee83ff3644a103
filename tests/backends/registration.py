"""Making fastgrad accept Dask arrays and the CuPy stand-in from user code, before src/ does.

Issue #17 found that two calls from user code are enough for NumPy's dispatch to route
fastgrad's wrapped functions to another array library: register the array type with
``ArrayBox`` (so traced values of it are boxed) and give it a vector space that makes its
zeros, ones and random values on the same backend and never adds in place into a value it
did not make.  This module is that user-side registration; once src/fastgrad has its
backend registry (docs/backends-plan.md) it becomes unnecessary and the tests call
``register()`` for nothing.
"""

import math

import numpy as onp

from fastgrad.extend import VSpace
from fastgrad.numpy.numpy_boxes import ArrayBox
from fastgrad.numpy.numpy_vspaces import ArrayVSpace, ComplexArrayVSpace


def _backend_vspaces(make, randn):
    """Real and complex vector spaces whose values ``make(fill, shape, dtype, like)`` builds."""

    class Real(ArrayVSpace):
        def __init__(self, value):
            self.shape, self.dtype, self.like = value.shape, value.dtype, value

        def zeros(self):
            return make(0, self.shape, self.dtype, self.like)

        def ones(self):
            return make(1, self.shape, self.dtype, self.like)

        def randn(self):
            return randn(self.shape, self.dtype, self.like)

        def standard_basis(self):
            raise NotImplementedError("no standard basis on a backend array space")

        def _mut_add(self, x, y):
            return x + y  # never in place: x may be a value fastgrad does not own

    class Complex(ComplexArrayVSpace, Real):
        iscomplex = True

        def ones(self):
            return make(1 + 1j, self.shape, self.dtype, self.like)

        randn = Real.randn  # not ComplexArrayVSpace's NumPy ones
        standard_basis = Real.standard_basis

        @property
        def size(self):
            return 2 * math.prod(self.shape)

    def vspace_of(value):
        return (Complex if value.dtype.kind == "c" else Real)(value)

    return vspace_of


def _register(array_type, make, randn):
    if array_type in VSpace.mappings:
        return
    ArrayBox.register(array_type)
    VSpace.register(array_type, _backend_vspaces(make, randn))
    _REGISTERED.add(array_type)


def register_dask():
    import dask.array as da

    def make(fill, shape, dtype, like):
        return da.full(shape, fill, dtype=dtype, chunks=like.chunks)

    def randn(shape, dtype, like):
        r = da.random.standard_normal(shape, chunks=like.chunks)
        if onp.dtype(dtype).kind == "c":
            r = r + 1j * da.random.standard_normal(shape, chunks=like.chunks)
        return r.astype(dtype)

    _register(da.Array, make, randn)


def register_fake_cupy():
    import fake_cupy

    def make(fill, shape, dtype, like):
        return fake_cupy.full(shape, fill, dtype=dtype)

    def randn(shape, dtype, like):
        r = onp.random.randn(*shape)
        if onp.dtype(dtype).kind == "c":
            r = r + 1j * onp.random.randn(*shape)
        return fake_cupy.from_numpy(onp.asarray(r, dtype=dtype))

    _register(fake_cupy.ndarray, make, randn)


def register_cupy():
    import cupy

    def make(fill, shape, dtype, like):
        return cupy.full(shape, fill, dtype=dtype)

    def randn(shape, dtype, like):
        return cupy.random.standard_normal(shape).astype(dtype)

    _register(cupy.ndarray, make, randn)


def unregister_all():
    """Undo every registration above (the rest of the test suite runs without them)."""
    from fastgrad.tracer import Box

    for array_type in list(_REGISTERED):
        Box.type_mappings.pop(array_type, None)
        VSpace.mappings.pop(array_type, None)
        _REGISTERED.discard(array_type)


_REGISTERED = set()
