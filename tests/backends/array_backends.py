"""The array backends the rule cases are rerun on, and how values move onto and off them.

Each backend says how to put a NumPy value on it (``put``), how to bring a value back to
NumPy explicitly (``take``, outside any counted block), whether a value lives on it
(``owns``), and how to count the work a program forces while it should only be building a
graph or staying on the device (``counting()``: Dask graph executions, host transfers of
the CuPy stand-in).
"""

import contextlib
import importlib.util

import numpy as onp

import fake_cupy


def _have_dask_array():
    # dask's core can be installed without its array part (the dask[array] extra)
    try:
        return importlib.util.find_spec("dask.array") is not None
    except ImportError:
        return False


HAVE_DASK = _have_dask_array()


def _is_float_leaf(x):
    if isinstance(x, (bool, int)) or x is None:
        return False
    if isinstance(x, (float, complex)):
        return True
    return isinstance(x, (onp.ndarray, onp.generic)) and x.dtype.kind in "fc"


class Backend:
    name = "?"
    # the case's NumPy constants (closure cells) must move too: the backend refuses NumPy operands
    moves_constants = False

    def put(self, x):
        raise NotImplementedError

    def take(self, x):
        raise NotImplementedError

    def owns(self, x):
        raise NotImplementedError

    @contextlib.contextmanager
    def counting(self):
        yield _Count()

    def __repr__(self):
        return self.name


class _Count:
    count = 0
    stacks = ()


class NumpyBackend(Backend):
    name = "numpy"

    def put(self, x):
        return onp.array(x) if isinstance(x, onp.ndarray) else x

    def take(self, x):
        return x

    def owns(self, x):
        return isinstance(x, (onp.ndarray, onp.generic, float, complex))


class DaskBackend(Backend):
    def __init__(self, name, chunking):
        self.name, self.chunking = name, chunking

    def put(self, x):
        import dask.array as da

        x = onp.asarray(x)
        return da.from_array(x, chunks=self.chunking(x.shape))

    def take(self, x):
        import dask.array as da

        return x.compute(scheduler="synchronous") if isinstance(x, da.Array) else x

    def take_all(self, values):
        """NumPy values of a list of leaves, in one graph execution."""
        import dask

        return list(dask.compute(*values, scheduler="synchronous"))

    def owns(self, x):
        import dask.array as da

        return isinstance(x, da.Array)

    @contextlib.contextmanager
    def counting(self):
        from compute_counter import ComputeCounter

        with ComputeCounter() as counter:
            yield counter


class FakeCupyBackend(Backend):
    name = "fakecupy"
    moves_constants = True

    def put(self, x):
        return fake_cupy.from_numpy(x)

    def take(self, x):
        return x.get() if isinstance(x, fake_cupy.ndarray) else x

    def owns(self, x):
        return isinstance(x, fake_cupy.ndarray)

    @contextlib.contextmanager
    def counting(self):
        count = _Count()
        start = fake_cupy.host_transfers
        del fake_cupy.transfer_stacks[:]
        try:
            yield count
        finally:
            count.count = fake_cupy.host_transfers - start
            count.stacks = list(fake_cupy.transfer_stacks)


def _one_chunk(shape):
    return shape if shape else ()


def _chunks_of_two(shape):
    return tuple(min(2, n) if n else 1 for n in shape) if shape else ()


def _uneven(shape):
    # one row, then the rest, on every axis (chunks of different sizes)
    return tuple((1, n - 1) if n > 1 else (n,) for n in shape) if shape else ()


NUMPY = NumpyBackend()
FAKE_CUPY = FakeCupyBackend()
DASK_BACKENDS = [
    DaskBackend("dask-1chunk", _one_chunk),
    DaskBackend("dask-chunks2", _chunks_of_two),
    DaskBackend("dask-uneven", _uneven),
]
BACKENDS = [NUMPY, FAKE_CUPY] + (DASK_BACKENDS if HAVE_DASK else [])
BY_NAME = {b.name: b for b in [NUMPY, FAKE_CUPY] + DASK_BACKENDS}


def put_tree(backend, value):
    """Float leaves of ``value`` (arrays, NumPy and Python scalars) moved to ``backend``."""
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(put_tree(backend, v) for v in value)
    if isinstance(value, dict):
        return {k: put_tree(backend, v) for k, v in value.items()}
    return backend.put(value) if _is_float_leaf(value) else value


def take_tree(backend, value):
    if isinstance(value, (list, tuple)):
        return [take_tree(backend, v) for v in value]
    if isinstance(value, dict):
        return [take_tree(backend, value[k]) for k in sorted(value, key=repr)]
    return backend.take(value)


def leaves(value):
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in leaves(v)]
    if isinstance(value, dict):
        return [leaf for k in sorted(value, key=repr) for leaf in leaves(value[k])]
    return [value]
