"""The helpers rules use for masks, tie counts and guards keep another library's array in
its library: no conversion to NumPy, no compute of a Dask graph, no transfer from the GPU
(issue #17: rules never convert a traced value to NumPy nor branch on its data)."""

import dask.array as da
import numpy as onp
import pytest

import fake_cupy
import fastgrad
import fastgrad.numpy as np
from compute_counter import ComputeCounter
from fastgrad.numpy._shapes import as_dtype, constant_like, data_of, index_like, may_hold_true, ones_on, zeros_on


def _stand_in():
    return fake_cupy.from_numpy(onp.array([[0.0, 2.0, 2.0], [-1.0, 0.0, 3.0]]))


def _dask():
    return da.from_array(onp.array([[0.0, 2.0, 2.0], [-1.0, 0.0, 3.0]]), chunks=(1, 2))


def test_numpy_values_and_python_numbers_become_numpy_arrays():
    assert type(data_of(2.0)) is onp.ndarray and data_of(2.0).shape == ()
    assert data_of([1.0, 2.0]).tolist() == [1.0, 2.0]
    assert as_dtype(onp.array([True, False]), onp.float64).tolist() == [1.0, 0.0]
    assert as_dtype(onp.bool_(True), onp.float32).dtype == onp.float32
    assert may_hold_true(onp.array([False, True])) and not may_hold_true(onp.zeros(3, bool))
    assert not may_hold_true(False) and may_hold_true(onp.bool_(True))


def test_a_box_gives_its_values_data():
    def check(x):
        assert type(data_of(x)) is onp.ndarray and data_of(x).tolist() == [1.0, 2.0]
        return np.sum(x)

    fastgrad.grad(check)(onp.array([1.0, 2.0]))


@pytest.mark.parametrize("make", [_stand_in, _dask], ids=["cupy-stand-in", "dask"])
def test_another_librarys_array_stays_in_its_library(make):
    x = make()
    transfers = fake_cupy.host_transfers
    with ComputeCounter() as counter:
        assert data_of(x) is x
        w = as_dtype(x == 2.0, onp.float32)
        assert type(w) is type(x) and w.dtype == onp.float32
        assert may_hold_true(x == 5.0)  # not looked at: the rule takes its general branch
    assert counter.count == 0 and fake_cupy.host_transfers == transfers
    onp.testing.assert_array_equal(onp.asarray(w.get() if hasattr(w, "get") else w.compute()), [[0, 1, 1], [0, 0, 0]])


def test_constants_for_numpy_values_stay_numpy():
    x = onp.ones((2, 3))
    eye = onp.eye(3)
    assert constant_like(eye, x) is eye and constant_like(eye, 2.0) is eye
    assert type(zeros_on(x, (2, 2), onp.float32)) is onp.ndarray and zeros_on(x, (2,), float).tolist() == [0.0, 0.0]
    assert ones_on(1.5, (3,), onp.float64).tolist() == [1.0, 1.0, 1.0]
    idx = onp.arange(3)
    assert index_like(idx, x) is idx


def test_constants_a_rule_makes_go_to_the_values_library():
    x, d = _stand_in(), _dask()
    transfers = fake_cupy.host_transfers
    with ComputeCounter() as counter:
        for v in (x, d):
            assert type(constant_like(onp.eye(3), v)) is type(v)
            z, o = zeros_on(v, (2, 3), onp.float32), ones_on(v, (2, 3), onp.float64)
            assert type(z) is type(v) and z.dtype == onp.float32 and type(o) is type(v)
        assert zeros_on(d, (2, 3), float).chunks == d.chunks  # (Dask: the value's chunks)
        assert type(index_like(onp.arange(3), x)) is type(x)  # (CuPy takes its own indices)
        assert type(index_like(onp.arange(3), d)) is onp.ndarray  # (Dask prefers NumPy's)
    assert counter.count == 0 and fake_cupy.host_transfers == transfers


@pytest.mark.parametrize("make", [_stand_in, _dask], ids=["cupy-stand-in", "dask"])
@pytest.mark.parametrize(
    "fun, expected",
    [
        # ties share the cotangent evenly: the two 2.0s of row 0, the 3.0 of row 1
        (lambda x: np.sum(np.max(x, axis=1)), [[0.0, 0.5, 0.5], [0.0, 0.0, 1.0]]),
        # d std / dx where the entries are all equal (std 0) is 0, not nan
        (lambda x: np.sum(np.std(x * 0.0, axis=1)), [[0.0] * 3] * 2),
        # ties of maximum(x, 2): half to each side
        (lambda x: np.sum(np.maximum(x, 2.0)), [[0.0, 0.5, 0.5], [0.0, 0.0, 1.0]]),
    ],
    ids=["max-ties", "std-at-zero", "maximum-ties"],
)
def test_tie_and_guard_rules_build_without_computing(make, fun, expected):
    x = make()
    transfers = fake_cupy.host_transfers
    with ComputeCounter() as counter:
        g = fastgrad.grad(fun)(x)
    assert counter.count == 0 and fake_cupy.host_transfers == transfers
    assert type(g) is type(x)
    got = g.get() if hasattr(g, "get") else g.compute()
    want = fastgrad.grad(fun)(onp.array([[0.0, 2.0, 2.0], [-1.0, 0.0, 3.0]]))
    onp.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
    if expected is not None:
        onp.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)
    assert onp.all(onp.isfinite(got))
