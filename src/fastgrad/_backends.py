"""The array libraries fastgrad differentiates over: NumPy, and Dask and CuPy when imported.

NumPy's own dispatch (NEP 13 ``__array_ufunc__``, NEP 18 ``__array_function__``) sends a
wrapped function called on a Dask or CuPy array to that library, so rules written with
fastgrad.numpy's functions run there unchanged.  This registry gives the few things that
dispatch cannot: new arrays on the same backend as a value (zeros, ones, randn, eye, a
NumPy constant moved there), scatter-add (NumPy's ``add.at``: CuPy has
``cupyx.scatter_add``, Dask a composition here), how two cotangents add (never in place into
a value fastgrad did not make), and the error a rule raises when the backend cannot do
something (naming the function and the backend, never a silent conversion to NumPy).

``backend_of(value)`` is one dictionary lookup for the types seen before; NumPy's arrays and
scalars and Python's numbers are there from the start.  Importing fastgrad imports neither
Dask nor CuPy: a library's backend is made when the library is imported (now or later, see
``_ImportWatcher``), and the modules above register its array type with ``ArrayBox`` and
the vector spaces through ``on_load``, so users register nothing.  The same watch tells a
library that dispatches on array types (autoray) about fastgrad's boxes when it is imported
(``add_integration``).

This module is a plain helper: it imports only the standard library and NumPy.
"""

import importlib
import importlib.machinery
import math
import os
import sys
import threading
import warnings

import numpy as np

_ndarray = np.ndarray


class BackendError(TypeError):
    """A function that cannot run on an array library (raised with the function's name and
    the library's); a TypeError, as NumPy's dispatch raises for unsupported types."""


class Backend:
    """One array library.  The NumPy one is this class; others override what differs."""

    name = "numpy"
    types = (_ndarray,)  # the array types of the library

    def owns(self, value):
        return isinstance(value, self.types)

    def namespace(self):
        return np

    # ---- new arrays on this backend ------------------------------------------------------
    def zeros(self, shape, dtype, like=None):
        return np.zeros(shape, dtype=dtype)

    def ones(self, shape, dtype, like=None):
        return np.ones(shape, dtype=dtype)

    def full(self, shape, fill, dtype, like=None):
        return np.full(shape, fill, dtype=dtype)

    def eye(self, n, dtype, like=None):
        return np.eye(n, dtype=dtype)

    def randn(self, shape, dtype, like=None):
        r = np.asarray(np.random.randn(*shape))
        if np.dtype(dtype).kind == "c":
            r = r + 1j * np.asarray(np.random.randn(*shape))
        return r.astype(dtype)

    def from_numpy(self, array, like=None):
        """A NumPy constant (a mask, a basis vector) as an array of this backend."""
        return array

    def index_from_numpy(self, index):
        """A NumPy integer array used to index arrays of this backend, as the backend takes
        it (Dask prefers NumPy's, whose chunks and bounds it can see)."""
        return index

    # ---- cotangents ----------------------------------------------------------------------
    def scatter_add(self, acc, index, values):
        """``acc`` with ``values`` added at ``acc[index]``, every repeated index counting (as
        ``np.add.at``).  ``acc`` belongs to the sum being built: it may be changed in place
        and returned, or a new array returned."""
        np.add.at(acc, index, values)
        return acc

    def add(self, x, y):
        """The sum of two cotangents, a new value (neither is written to)."""
        return x + y

    def refuse(self, function, why):
        """The error for ``function`` (a name) that this backend cannot run."""
        return BackendError("fastgrad: {} is not available for {} arrays: {}".format(function, self.type_name(), why))

    def type_name(self):
        return "numpy.ndarray"

    def lacks(self, function):
        """Why the library cannot run the NumPy function ``function`` (reached by NumPy's
        dispatch) on its arrays without converting them, or None if it can."""
        return None

    def __repr__(self):
        return "<fastgrad backend {}>".format(self.name)


NUMPY = Backend()


def _basic_index(index):
    """``index`` as a tuple of ints, slices and Ellipsis (None removed), or None if it has
    another kind of entry (an array, a list)."""
    items = index if type(index) is tuple else (index,)
    out = []
    for i in items:
        if i is None:
            continue
        if i is Ellipsis or type(i) is slice or isinstance(i, (int, np.integer)) and not isinstance(i, bool):
            out.append(i)
        else:
            return None
    return tuple(out)


class CupyBackend(Backend):
    """CuPy, or a library with CuPy's API (``module``: its NumPy-like namespace,
    ``extras``: the name of the module with ``scatter_add``, as ``cupyx``, imported when
    first needed)."""

    def __init__(self, name, module, extras):
        self.name, self._module, self._extras_name = name, module, extras
        self.types = (module.ndarray,)

    def namespace(self):
        return self._module

    def type_name(self):
        return self._module.__name__ + ".ndarray"

    def zeros(self, shape, dtype, like=None):
        return self._module.zeros(shape, dtype=dtype)

    def ones(self, shape, dtype, like=None):
        return self._module.ones(shape, dtype=dtype)

    def full(self, shape, fill, dtype, like=None):
        return self._module.full(shape, fill, dtype=dtype)

    def eye(self, n, dtype, like=None):
        return self._module.eye(n, dtype=dtype)

    def randn(self, shape, dtype, like=None):
        return self.from_numpy(Backend.randn(self, shape, dtype))

    def from_numpy(self, array, like=None):
        return self._module.asarray(array)

    def index_from_numpy(self, index):
        return self._module.asarray(index)  # (CuPy refuses NumPy operands, indices too)

    def add(self, x, y):
        # CuPy refuses NumPy operands: a NumPy term (zeros of a NumPy parameter's space, say)
        # is moved to the device, never the device term to the host
        if isinstance(x, _ndarray):
            x = self.from_numpy(x)
        if isinstance(y, _ndarray):
            y = self.from_numpy(y)
        return x + y

    def scatter_add(self, acc, index, values):
        # acc is an array fastgrad made (zeros, or an earlier sum): scattered into in place
        importlib.import_module(self._extras_name).scatter_add(acc, index, values)
        return acc


class DaskBackend(Backend):
    """Dask arrays: new arrays keep the chunks of the value they are like."""

    name = "dask"

    def __init__(self, module):
        self._da = module
        self.types = (module.Array,)

    def namespace(self):
        return self._da

    def type_name(self):
        return "dask.array.Array"

    def lacks(self, function):
        # Dask's own lookup (Array.__array_function__): its table of aliases, then the
        # function's name in the matching submodule of dask.array.  What it does not find
        # it runs by computing every argument into NumPy arrays, with a FutureWarning.
        if isinstance(function, np.ufunc):
            return None  # (ufuncs reach Dask through __array_ufunc__)
        if function in (np.full, np.linspace):
            return "Dask's implementation computes an array given as its fill value or bounds"
        handled = getattr(sys.modules.get("dask.array.core"), "_HANDLED_FUNCTIONS", {})
        if function in handled:
            return None
        missing = "Dask has no implementation of it (it would convert the arrays to NumPy)"
        module = self._da
        for part in (getattr(function, "__module__", None) or "").split(".")[1:]:
            module = getattr(module, part, None)
            if module is None:
                return missing
        found = getattr(module, getattr(function, "__name__", ""), None)
        return missing if found is None or found is function else None

    def _chunks(self, shape, like):
        if like is not None and tuple(getattr(like, "shape", ())) == tuple(shape):
            chunks = getattr(like, "chunks", None)
            if chunks is not None:
                return chunks
        return "auto"

    def zeros(self, shape, dtype, like=None):
        return self._da.zeros(shape, dtype=dtype, chunks=self._chunks(shape, like))

    def ones(self, shape, dtype, like=None):
        return self._da.ones(shape, dtype=dtype, chunks=self._chunks(shape, like))

    def full(self, shape, fill, dtype, like=None):
        return self._da.full(shape, fill, dtype=dtype, chunks=self._chunks(shape, like))

    def eye(self, n, dtype, like=None):
        return self._da.eye(n, dtype=dtype)

    def randn(self, shape, dtype, like=None):
        chunks = self._chunks(shape, like)
        r = self._da.random.standard_normal(shape, chunks=chunks)
        if np.dtype(dtype).kind == "c":
            r = r + 1j * self._da.random.standard_normal(shape, chunks=chunks)
        return r.astype(dtype)

    def from_numpy(self, array, like=None):
        return self._da.from_array(np.asarray(array), chunks=self._chunks(np.shape(array), like))

    def scatter_add(self, acc, index, values):
        da = self._da
        basic = _basic_index(index)
        if basic is not None:
            # a box of the accumulator: Dask's item assignment (a new graph, blockwise)
            target = acc[basic]
            if not target.size:
                return acc
            acc = acc.copy()
            acc[basic] = target + np.reshape(values, target.shape)
            return acc
        # any other index: each entry of values goes to a linear position of acc; the sum per
        # position is a weighted bincount (complex values: real and imaginary parts)
        positions = _linear_positions(acc.shape, index)
        if positions is None:
            raise self.refuse("the derivative of indexing with a Dask array index", "the index must be NumPy's")
        n = math.prod(acc.shape)
        if positions.size == 0:
            return acc
        if any(math.isnan(s) for s in getattr(values, "shape", ())):
            raise self.refuse(
                "the derivative of indexing", "the cotangent has unknown chunk sizes (call compute_chunk_sizes())"
            )
        values = da.broadcast_to(da.asarray(values), positions.shape).ravel()
        positions = da.from_array(positions.ravel(), chunks=values.chunks)
        if np.dtype(values.dtype).kind == "c":
            add = da.bincount(positions, weights=values.real, minlength=n) + 1j * da.bincount(
                positions, weights=values.imag, minlength=n
            )
        else:
            add = da.bincount(positions, weights=values, minlength=n)
        return acc + add.reshape(acc.shape).astype(np.result_type(acc.dtype, values.dtype), copy=False)


def _linear_positions(shape, index):
    """The linear (C order) position in an array of ``shape`` of each element of
    ``array[index]``, as a NumPy array of that shape, made without an array of ``shape``'s
    size; None if the index holds an array of another library."""
    items = index if type(index) is tuple else (index,)
    expanded = []
    for i in items:
        if isinstance(i, (list, _ndarray)) and np.asarray(i).dtype == np.bool_:
            expanded.extend(np.nonzero(np.asarray(i)))  # a mask: the indices it selects
        elif isinstance(i, (list, _ndarray, np.generic, int, slice)) or i is None or i is Ellipsis:
            expanded.append(i)
        else:
            return None
    index = tuple(expanded)
    grids = np.indices(shape, sparse=True) if shape else ()
    strides = [math.prod(shape[j + 1 :]) for j in range(len(shape))]
    positions = np.zeros(np.empty(shape, dtype=bool)[index].shape, dtype=np.intp) if not shape else None
    for grid, stride in zip(grids, strides):
        part = np.broadcast_to(grid, shape)[index] * stride
        positions = part if positions is None else positions + part
    return positions


# ---- finding a value's backend -------------------------------------------------------------

_BY_TYPE = {
    t: NUMPY
    for t in (
        _ndarray,
        float,
        complex,
        int,
        bool,
        np.float64,
        np.float32,
        np.float16,
        np.longdouble,
        np.complex64,
        np.complex128,
        np.clongdouble,
        np.int64,
        np.int32,
        np.bool_,
    )
}
_LOADED = []  # backends of the libraries imported so far (besides NumPy)
LOADED = _LOADED  # (read-only for other modules: empty while only NumPy is in use)


def backend_of(value):
    """The backend of ``value``: NumPy's for NumPy values, Python numbers and any type that
    no loaded library claims."""
    t = type(value)
    b = _BY_TYPE.get(t)
    if b is None:
        b = _discover(t)
    return b


def _discover(t):
    for b in _LOADED:
        if issubclass(t, b.types):
            break
    else:
        b = NUMPY
    if len(_BY_TYPE) < 4096:
        _BY_TYPE[t] = b
    return b


def is_foreign(value):
    """True if ``value`` is an array of a library other than NumPy (Dask, CuPy)."""
    t = type(value)
    b = _BY_TYPE.get(t)
    if b is None:
        b = _discover(t)
    return b is not NUMPY


def backend_of_values(values):
    """The backend of the first non-NumPy value among ``values`` (NumPy's if none)."""
    for v in values:
        b = backend_of(v)
        if b is not NUMPY:
            return b
    return NUMPY


def _leaf_backends(values):
    """The backend of each value in ``values``, its lists and tuples looked into."""
    for v in values:
        t = type(v)
        if t is list or t is tuple:
            yield from _leaf_backends(v)
        else:
            yield _BY_TYPE.get(t) or _discover(t)


def holds(values, backend):
    """True if ``values`` (a sequence, its lists and tuples looked into) hold an array of
    ``backend``."""
    return any(b is backend for b in _leaf_backends(values))


def _first_foreign(values):
    return next((b for b in _leaf_backends(values) if b is not NUMPY), NUMPY)


def explain_failure(function, args, kwargs, error):
    """The clear error for ``error``, raised by ``function`` (its name) called on ``args``
    and ``kwargs`` that hold an array of another library than NumPy: a ``BackendError``
    naming the function and the backend, with the library's own message, that is also an
    instance of the original error's class (``except ValueError`` still catches a
    ValueError); None when no such array is among the arguments (or the error is one
    already).  The primitive call path raises it ``from error``."""
    if isinstance(error, BackendError) or not isinstance(error, (TypeError, ValueError, NotImplementedError)):
        return None
    backend = _first_foreign(args)
    if backend is NUMPY:
        backend = _first_foreign(list(kwargs.values()))
    if backend is NUMPY:
        return None
    cls = _explained_class(type(error))
    if cls is None:
        return None
    try:
        return cls(
            "fastgrad: {} is not available for {} arrays: {}: {}".format(
                function, backend.type_name(), type(error).__name__, error
            )
        )
    except Exception:  # (a class whose constructor takes other arguments: the original stays)
        return None


_EXPLAINED = {}  # original error class -> its BackendError twin
# exceptions made from a message alone: a class that constructs itself as one of these can
# have a twin (UnicodeDecodeError, or a class with its own __init__, keeps its error)
_PLAIN = (TypeError, ValueError, NotImplementedError, RuntimeError, Exception, BaseException)
_PLAIN_INITS = frozenset(id(c.__init__) for c in _PLAIN)
_PLAIN_NEWS = frozenset(id(c.__new__) for c in _PLAIN)


def _explained_class(cls):
    twin = _EXPLAINED.get(cls)
    if twin is None:
        if id(cls.__init__) not in _PLAIN_INITS or id(cls.__new__) not in _PLAIN_NEWS:
            return None
        try:
            twin = type("Backend" + cls.__name__, (BackendError, cls), {"__module__": __name__})
        except TypeError:  # (a class that cannot be combined: the original error stays)
            return None
        _EXPLAINED[cls] = twin
    return twin


def primitive_name(prim):
    """The public name of a primitive of fastgrad.numpy: ``fastgrad.numpy.linalg.qr`` for
    the wrapper of ``numpy.linalg.qr``, the module and name of a rule's own primitive."""
    module, name = getattr(prim, "__module__", None) or "", getattr(prim, "__name__", None) or repr(prim)
    parts = []
    for part in module.split("."):
        if part.startswith("_") and part.endswith("_rules") and parts[:2] == ["fastgrad", "numpy"]:
            parts.append(part[1:-6])  # (fastgrad.numpy._linalg_rules: fastgrad.numpy.linalg)
            break
        if part.startswith("_") or part == "core":
            break  # (a library's private module: the function is public in its parent)
        if part != "numpy_wrapper":
            parts.append(part)
    if not parts or parts[0] not in ("numpy", "scipy", "fastgrad"):
        parts = ["numpy"]
    if parts[0] != "fastgrad":
        parts.insert(0, "fastgrad")
    return "{}.{}".format(".".join(parts), name)


def explain_primitive_failure(prim, args, kwargs, error):
    """``explain_failure`` for the engine's seam: the primitive named as users know it."""
    if not _LOADED:
        return None
    return explain_failure(primitive_name(prim), args, kwargs, error)


# ---- libraries: made when imported ------------------------------------------------------------


def _make_dask():
    return DaskBackend(sys.modules["dask.array"])


def _make_cupy():
    return CupyBackend("cupy", sys.modules["cupy"], "cupyx")


# module whose import makes the library's array type available -> how to make its backend
_LIBRARIES = {"dask.array": _make_dask, "cupy": _make_cupy}
_INTEGRATIONS = {}  # module name -> register(module), called once it is imported
_INTEGRATED = set()
_listeners = []
_lock = threading.RLock()


def on_load(callback):
    """Call ``callback(backend)`` for every library imported so far and every one imported
    later (the modules above register the array type with boxes and vector spaces)."""
    with _lock:
        _listeners.append(callback)
        loaded = list(_LOADED)
    for b in loaded:
        callback(b)


def add_library(module_name, make):
    """Treat the module ``module_name`` as an array library whose backend ``make()`` makes,
    once it is imported (now, if it is).  Dask and CuPy are known; the tests add their CuPy
    stand-in this way."""
    with _lock:
        _LIBRARIES[module_name] = make
    if module_name in sys.modules:
        _library_imported(module_name)


def add_integration(module_name, register):
    """Call ``register(module)`` once the module ``module_name`` is imported (now, if it is):
    for a library that dispatches on array types and must be told about fastgrad's boxes
    (autoray)."""
    with _lock:
        _INTEGRATIONS[module_name] = register
    if module_name in sys.modules:
        _library_imported(module_name)


def _integrate(module_name, register):
    with _lock:
        if module_name in _INTEGRATED:
            return
        try:
            register(sys.modules[module_name])
        except Exception as e:  # (an incompatible version must not break the user's import)
            warnings.warn("fastgrad cannot register with {}: {}".format(module_name, e), RuntimeWarning, stacklevel=2)
            return
        _INTEGRATED.add(module_name)


def _library_imported(module_name):
    register = _INTEGRATIONS.get(module_name)
    if register is not None:
        _integrate(module_name, register)
        return
    with _lock:
        make = _LIBRARIES.get(module_name)
        if make is None or any(getattr(b, "_module_name", None) == module_name for b in _LOADED):
            return
        try:
            backend = make()
        except Exception as e:  # a broken installation must not break the user's import
            warnings.warn("fastgrad cannot use {}: {}".format(module_name, e), RuntimeWarning, stacklevel=2)
            return
        backend._module_name = module_name
        # The library counts as loaded only from the last store on: a Ctrl-C anywhere before
        # it leaves the library unloaded, and registering it again does all of it again (the
        # listeners' registrations may be repeated).  Such an interrupt fails the import this
        # runs in, so the module leaves sys.modules and its next import comes back here.
        for callback in list(_listeners):
            callback(backend)
        _BY_TYPE.update((t, backend) for t in backend.types)
        for t in [t for t, b in _BY_TYPE.items() if b is NUMPY and t not in _SEEDED and issubclass(t, backend.types)]:
            _BY_TYPE[t] = backend  # (a subclass looked up before the library was imported)
        _LOADED.append(backend)


_SEEDED = frozenset(_BY_TYPE)


class _ImportWatcher:
    """A finder on ``sys.meta_path`` that only watches: when a library of ``_LIBRARIES`` is
    imported, its backend is made right after the module has run (for an integration, its
    ``register`` is called).  It finds nothing itself (the other finders find the module), so
    imports are otherwise unchanged."""

    def __init__(self):
        self._busy = set()

    def find_spec(self, name, path=None, target=None):
        if (name not in _LIBRARIES and name not in _INTEGRATIONS) or name in self._busy:
            return None
        try:  # (added inside: a Ctrl-C right after the add must not leave the name busy)
            self._busy.add(name)
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._busy.discard(name)
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _NotifyingLoader(spec.loader)
        return spec


class _NotifyingLoader:
    """The module's own loader, which tells the registry once the module has run; the module
    sees its own loader only (put back before the module runs)."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        spec = module.__spec__
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader
        self._loader.exec_module(module)
        _library_imported(module.__name__)

    def __getattr__(self, name):
        return getattr(self._loader, name)


_watcher = _ImportWatcher()


def _after_fork_in_child():
    """The child of a fork has only the forking thread: a lock another thread held, or a
    library it was looking up, would stay taken for good."""
    global _lock
    _lock = threading.RLock()
    _watcher._busy.clear()


def _install():
    if not any(type(f).__name__ == "_ImportWatcher" and f.__module__ == __name__ for f in sys.meta_path):
        # just before the finder of modules on sys.path (the libraries are never built in)
        path_finder = importlib.machinery.PathFinder
        at = next((i for i, f in enumerate(sys.meta_path) if f is path_finder), len(sys.meta_path))
        sys.meta_path.insert(at, _watcher)
    for name in list(_LIBRARIES):
        if name in sys.modules:
            _library_imported(name)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
_install()
