"""Where an array library would run a NumPy function differently from NumPy: refused or
adapted, never a silent conversion or a different answer.

* Dask runs a NumPy function it has no implementation of by computing every argument into
  a NumPy array (with a FutureWarning), in the middle of building a value or a gradient.
  Once such a library is imported, each traced primitive whose NumPy function it lacks
  refuses its arrays with an error that names the function and the library.
* Dask implements a few of NumPy's linear algebra functions with other defaults: its
  ``cholesky`` gives the upper factor, its ``svd`` the reduced factors unless asked, its
  ``qr`` a plain tuple (and, for a matrix chunked along its rows, other signs), its ``dot``
  fails on a 0-d operand.  Their primitives give NumPy's answer on Dask arrays, or a clear
  refusal.

NumPy values take the same path as before, through one check of the arguments' types, and
only for these primitives once Dask is imported; a library with no such gaps changes
nothing.
"""

import numpy as _np

from .. import _backends
from .._engine import engine as _engine
from . import numpy_wrapper as _w

_QR_RESULT = type(_np.linalg.qr(_np.eye(1)))


def _holds(backend, args, kwargs):
    return _backends.holds(args, backend) or bool(kwargs) and _backends.holds(list(kwargs.values()), backend)


def _refusing(fun, name, backend, why):
    def raw(*args, **kwargs):
        if _holds(backend, args, kwargs):
            raise backend.refuse(name, why)
        return fun(*args, **kwargs)

    return raw


def _dask_cholesky(fun, backend, name):
    def raw(a, *args, **kwargs):
        L = fun(a, *args, **kwargs)
        if _holds(backend, (a,), {}):
            L = _np.conj(_np.swapaxes(L, -1, -2))  # (Dask's is the upper factor: L^H)
        return L

    return raw


def _dask_svd(fun, backend, name):
    def raw(a, full_matrices=True, compute_uv=True, hermitian=False):
        if not _holds(backend, (a,), {}):
            return fun(a, full_matrices, compute_uv, hermitian)
        # Dask's default is the reduced SVD: NumPy's full one is asked for explicitly where
        # it differs, for a non-square matrix (Dask refuses it); other arguments only when
        # not at their defaults
        kwargs = {"full_matrices": True} if full_matrices and a.shape[-1] != a.shape[-2] else {}
        if not compute_uv:
            kwargs["compute_uv"] = compute_uv
        if hermitian:
            kwargs["hermitian"] = hermitian
        return fun(a, **kwargs)

    return raw


def _dask_qr(fun, backend, name):
    def raw(a, *args, **kwargs):
        if _holds(backend, (a,), {}) and len(getattr(a, "chunks", ((),) * 2)[-2]) > 1:
            raise backend.refuse(
                name,
                "Dask factors a matrix chunked along its rows by blocks (TSQR), whose Q and R "
                "differ from NumPy's by the signs of Q's columns; rechunk the rows into one chunk",
            )
        result = fun(a, *args, **kwargs)
        if type(result) is tuple and len(result) == 2 and _holds(backend, (a,), {}):
            result = _QR_RESULT(*result)  # (NumPy's named tuple: .Q and .R)
        return result

    return raw


def _dask_dot(fun, backend, name):
    def raw(a, b, *args, **kwargs):
        if not args and not kwargs and (_np.ndim(a) == 0 or _np.ndim(b) == 0) and _holds(backend, (a, b), {}):
            return _np.multiply(a, b)  # (NumPy's dot with a scalar; Dask's fails on a 0-d array)
        return fun(a, b, *args, **kwargs)

    return raw


_DASK_ADAPTERS = {
    _np.linalg.cholesky: _dask_cholesky,
    _np.linalg.svd: _dask_svd,
    _np.linalg.qr: _dask_qr,
    _np.dot: _dask_dot,
}


def _named_like(raw, fun, backend):
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(raw, attr, getattr(fun, attr, None))
    raw.__wrapped__ = fun
    raw._fastgrad_adapted_for = backend.name
    return raw


def _adapt(backend):
    # (repeatable: a library registered again after an interrupted import wraps nothing twice)
    for prim in list(_w._wrappers.values()):
        if type(prim) is not _engine.Primitive or getattr(prim.fun, "_fastgrad_adapted_for", None) == backend.name:
            continue
        fun = prim.fun
        if not (getattr(fun, "__module__", None) or "").startswith("numpy"):
            continue
        if backend.name == "dask" and fun in _DASK_ADAPTERS:
            prim.fun = _named_like(_DASK_ADAPTERS[fun](fun, backend, _backends.primitive_name(prim)), fun, backend)
        else:
            why = backend.lacks(fun)
            if why:
                prim.fun = _named_like(_refusing(fun, _backends.primitive_name(prim), backend, why), fun, backend)


def install():
    """Called once fastgrad.numpy and its submodules have made their primitives."""
    _backends.on_load(_adapt)
