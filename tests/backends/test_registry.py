"""fastgrad._backends: Dask and CuPy recognised without registration, new arrays on the
value's backend, scatter-add, sums that never write into a value fastgrad does not own, and
the error that names the function and the backend."""

import subprocess
import sys
import textwrap

import numpy as onp
import pytest

import fake_cupy
import fastgrad
import fastgrad.numpy as np
from array_backends import HAVE_DASK
from fastgrad import _backends
from fastgrad.extend import vspace
from fastgrad.numpy.numpy_boxes import ArrayBox

needs_dask = pytest.mark.skipif(not HAVE_DASK, reason="dask[array] is not installed")


def _run(code):
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_importing_fastgrad_imports_neither_dask_nor_cupy():
    out = _run(
        """
        import sys
        import fastgrad, fastgrad.numpy
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "cupy", "cupyx")))
        """
    )
    assert out.strip() == "[]"


@needs_dask
@pytest.mark.parametrize("dask_first", [False, True])
def test_dask_is_recognised_whether_imported_before_or_after_fastgrad(dask_first):
    imports = ["import dask.array as da", "import fastgrad, fastgrad.numpy as np"]
    if not dask_first:
        imports.reverse()
    out = _run(
        "\n".join(imports)
        + """
from fastgrad.tracer import Box
from fastgrad.extend import VSpace
print(da.Array in Box.type_mappings, da.Array in VSpace.mappings)
X = da.ones((4, 3), chunks=2)
print(type(fastgrad.grad(lambda w: np.sum(np.tanh(X @ w)))(np.ones(3))).__name__)
"""
    )
    assert out.split() == ["True", "True", "Array"]


def test_numpy_values_are_in_the_exact_type_cache_from_the_start():
    for value in (onp.zeros(2), 1.0, onp.float64(1.0), onp.float32(1.0), 1j, 3):
        assert type(value) in _backends._BY_TYPE
        assert _backends.backend_of(value) is _backends.NUMPY
        assert not _backends.is_foreign(value)
    assert _backends.backend_of(fake_cupy.zeros(1)).name == "fakecupy"
    assert _backends.backend_of(object()) is _backends.NUMPY  # anything unclaimed


def test_numpy_sums_add_in_place_only_numpy_into_numpy():
    vs = vspace(onp.zeros(3))
    acc = onp.zeros(3)
    assert vs._mut_add(acc, onp.ones(3)) is acc and acc.tolist() == [1.0, 1.0, 1.0]
    g = fake_cupy.from_numpy(onp.ones(3))
    for total in (vs._mut_add(acc, g), vs._add(acc, g), vspace(g)._mut_add(acc, g), vspace(g)._add(g, acc)):
        # (the NumPy term moved to the device, which refuses NumPy operands, as CuPy does)
        assert type(total) is fake_cupy.ndarray and total.get().tolist() == [2.0, 2.0, 2.0]
    assert acc.tolist() == [1.0, 1.0, 1.0]  # (NumPy's array left as it was)
    owned = fake_cupy.from_numpy(onp.ones(3))
    assert vspace(owned)._mut_add(owned, g) is not owned  # never in place into a device array


def test_stand_in_spaces_make_arrays_on_the_stand_in():
    for x in (fake_cupy.from_numpy(onp.ones((2, 3))), fake_cupy.from_numpy(onp.ones(2) * 1j)):
        vs = vspace(x)
        for made in (vs.zeros(), vs.ones(), vs.randn()):
            assert type(made) is fake_cupy.ndarray and made.shape == x.shape and made.dtype == x.dtype
        basis = list(vs.standard_basis())
        assert len(basis) == vs.size and all(type(b) is fake_cupy.ndarray for b in basis)
    assert vspace(fake_cupy.from_numpy(onp.arange(3))).dtype == onp.float64  # integers: float64 cotangents


@pytest.mark.parametrize(
    "index",
    [
        onp.array([0, 2, 2, 0, 1]),
        (slice(None), onp.array([1, 1, 3])),
        (onp.array([0, 2]), onp.array([3, 3])),
        onp.array([True, False, True]),
        (1, slice(1, None, 2)),
        (Ellipsis, None, 2),
        slice(5, 9),
    ],
)
def test_scatter_add_on_dask_and_the_stand_in_is_numpys_add_at(index):
    rs = onp.random.RandomState(0)
    acc = rs.randn(3, 4)
    values = rs.randn(*acc[index].shape)
    expected = acc.copy()
    onp.add.at(expected, index, values)
    backends = [fake_cupy.from_numpy]
    if HAVE_DASK:
        import dask.array as da

        backends.append(lambda a: da.from_array(a, chunks=2))
    for put in backends:
        a, v = put(acc), put(values)
        got = _backends.backend_of(a).scatter_add(a, index, v)
        got = got.get() if type(got) is fake_cupy.ndarray else got.compute()
        onp.testing.assert_allclose(got, expected, rtol=1e-14)


@needs_dask
def test_dask_spaces_keep_the_chunks_and_complex_scatter_add():
    import dask.array as da

    x = da.from_array(onp.arange(12.0).reshape(3, 4) * (1 + 1j), chunks=((1, 2), (3, 1)))
    vs = vspace(x)
    assert vs.iscomplex and vs.size == 24
    for made in (vs.zeros(), vs.ones(), vs.randn()):
        assert isinstance(made, da.Array) and made.chunks == x.chunks and made.dtype == x.dtype
    got = _backends.backend_of(x).scatter_add(vs.zeros(), (onp.array([0, 0]), onp.array([1, 1])), x[0, :2])
    expected = onp.zeros((3, 4), complex)
    onp.add.at(expected, (onp.array([0, 0]), onp.array([1, 1])), x[0, :2].compute())
    onp.testing.assert_allclose(got.compute(), expected)


@needs_dask
def test_building_arrays_from_dask_values_stays_on_dask():
    import dask.array as da
    from compute_counter import ComputeCounter

    a = da.from_array(onp.arange(3.0), chunks=2)
    with ComputeCounter() as counter:
        stacked = np.array([a, a * 2.0])
        same = np.asarray(a)
        cast = np.asarray(a, dtype=onp.float32)
        chosen = np.where(a > 1.0, a, 0.0)
        mean = np.mean([a, a * 3.0], axis=0)
        embedded = np.make_diagonal(da.from_array(onp.ones((2, 3)), chunks=2), offset=-1, axis1=0, axis2=2)
    assert counter.count == 0
    assert all(isinstance(v, da.Array) for v in (stacked, same, cast, chosen, mean, embedded))
    assert same is a and cast.dtype == onp.float32
    onp.testing.assert_array_equal(stacked.compute(), [[0, 1, 2], [0, 2, 4]])
    onp.testing.assert_array_equal(mean.compute(), [0, 2, 4])
    onp.testing.assert_array_equal(embedded.compute(), np.make_diagonal(onp.ones((2, 3)), offset=-1, axis1=0, axis2=2))


@needs_dask
def test_gradient_through_a_dask_constant_with_respect_to_numpy_parameters():
    import dask.array as da
    from compute_counter import ComputeCounter

    rs = onp.random.RandomState(1)
    X, w = rs.randn(6, 3), rs.randn(3)
    dX = da.from_array(X, chunks=(2, 3))
    with ComputeCounter() as counter:
        g = fastgrad.grad(lambda w: np.sum(np.tanh(dX @ w) ** 2))(w)
    assert counter.count == 0 and isinstance(g, da.Array)
    expected = fastgrad.grad(lambda w: np.sum(np.tanh(X @ w) ** 2))(w)
    onp.testing.assert_allclose(g.compute(), expected, rtol=1e-12)


def test_box_methods_pass_only_keywords_that_are_not_defaults(monkeypatch):
    from fastgrad.numpy import numpy_wrapper

    seen = []

    def record(*args, **kwargs):
        seen.append(sorted(kwargs))
        return 0.0

    box = ArrayBox(fake_cupy.from_numpy(onp.ones((2, 3))), 1, None)  # (only the keywords matter)
    methods = ("sum", "mean", "prod", "max", "min", "var", "std")
    for method in methods:
        monkeypatch.setattr(numpy_wrapper, method, record)
        getattr(box, method)()
        getattr(box, method)(axis=0, keepdims=True)
    assert seen[0::2] == [[]] * len(methods)
    assert seen[1::2] == [["axis", "keepdims"]] * len(methods)


def test_the_error_names_the_function_and_the_backend():
    x = fake_cupy.from_numpy(onp.ones(2))
    err = _backends.explain_failure("fastgrad.numpy.linalg.eig", (x,), {}, ValueError("not square"))
    assert isinstance(err, _backends.BackendError) and isinstance(err, TypeError)
    assert str(err) == (
        "fastgrad: fastgrad.numpy.linalg.eig is not available for fake_cupy.ndarray arrays: ValueError: not square"
    )
    assert _backends.explain_failure("f", (onp.ones(2),), {}, ValueError("x")) is None  # NumPy: its own error
    assert _backends.explain_failure("f", ([1.0, x],), {}, NotImplementedError("y")) is not None
    assert _backends.explain_failure("f", (x,), {}, err) is None  # already clear
