"""Building a value and its gradient over Dask arrays computes nothing until asked.

The compute counter (compute_counter.py) is checked first: it must see the computes that
Python's number protocols and NumPy's conversions force, or a count of 0 would prove nothing.
"""

import numpy as onp
import pytest

da = pytest.importorskip("dask.array")

import fastgrad  # noqa: E402
import fastgrad.numpy as np  # noqa: E402
from compute_counter import ComputeCounter  # noqa: E402


def _data(n=400, d=5, chunk=100, seed=0):
    rs = onp.random.RandomState(seed)
    X = rs.randn(n, d)
    y = (rs.rand(n) < 0.5).astype(float)
    w = rs.randn(d) * 0.1
    return X, y, w, da.from_array(X, chunks=(chunk, d)), da.from_array(y, chunks=chunk), da.from_array(w)


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


@pytest.mark.parametrize("force", [float, bool, onp.asarray, int, lambda x: x.compute()])
def test_counter_sees_every_way_to_force_a_compute(force):
    x = da.from_array(onp.array(1.5), chunks=())
    with ComputeCounter() as counter:
        y = x * 2.0
        assert counter.count == 0
        force(y)
    assert counter.count == 1 and len(counter.stacks) == 1


def test_value_and_gradient_build_without_computing():
    X, y, w, dX, dy, dw = _data()
    with ComputeCounter() as counter:
        value, g = fastgrad.value_and_grad(logistic_loss)(dw, dX, dy)
    assert counter.count == 0
    assert isinstance(value, da.Array) and isinstance(g, da.Array)
    ref_value, ref_g = fastgrad.value_and_grad(logistic_loss)(w, X, y)
    onp.testing.assert_allclose(value.compute(), ref_value, rtol=1e-12)
    onp.testing.assert_allclose(g.compute(), ref_g, rtol=1e-12)


def test_gradient_with_respect_to_the_data_keeps_its_chunks():
    X, y, w, dX, dy, dw = _data()
    with ComputeCounter() as counter:
        gX = fastgrad.grad(logistic_loss, 1)(dw, dX, dy)
    assert counter.count == 0
    assert isinstance(gX, da.Array) and gX.chunks == dX.chunks
    onp.testing.assert_allclose(gX.compute(), fastgrad.grad(logistic_loss, 1)(w, X, y), rtol=1e-12)


@pytest.mark.parametrize(
    "reduce", [np.mean, np.sum, lambda a: np.sum(np.max(a, axis=1)), lambda a: np.sum(np.var(a, 0))]
)
def test_a_reductions_cotangent_is_laid_out_as_its_input(reduce):
    # a broadcast cotangent would be one chunk that Dask splits again (a rechunk), moving it
    # whole between workers: the cotangent of a reduction takes its input's chunks instead
    X, y, w, dX, dy, dw = _data()
    gX = fastgrad.grad(lambda X: reduce(np.tanh(X)))(dX)
    assert gX.chunks == dX.chunks
    assert not [name for name in gX.__dask_graph__().layers if name.startswith("rechunk")]
    onp.testing.assert_allclose(gX.compute(), fastgrad.grad(lambda X: reduce(np.tanh(X)))(X), rtol=1e-12)


def test_hessian_vector_product_builds_without_computing():
    X, y, w, dX, dy, dw = _data()
    v = onp.linspace(-1.0, 1.0, w.size)
    with ComputeCounter() as counter:
        hvp = fastgrad.hessian_vector_product(logistic_loss)(dw, dX, dy, da.from_array(v))
    assert counter.count == 0
    expected = fastgrad.hessian_vector_product(logistic_loss)(w, X, y, v)
    onp.testing.assert_allclose(hvp.compute(), expected, rtol=1e-12)


def test_forward_mode_builds_without_computing():
    X, y, w, dX, dy, dw = _data()
    v = onp.ones(w.size)
    with ComputeCounter() as counter:
        value, tangent = fastgrad.make_jvp(logistic_loss)(dw, dX, dy)(da.from_array(v))
    assert counter.count == 0
    ref_value, ref_tangent = fastgrad.make_jvp(logistic_loss)(w, X, y)(v)
    onp.testing.assert_allclose(tangent.compute(), ref_tangent, rtol=1e-12)
