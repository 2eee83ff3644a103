"""The CuPy stand-in behaves as its docstring says CuPy does (or the backend tests would
prove nothing about CuPy)."""

import numpy as onp
import pytest

import fake_cupy
import fake_cupyx
import fastgrad
import fastgrad.numpy as np


def x23():
    return fake_cupy.from_numpy(onp.arange(6.0).reshape(2, 3))


def test_its_own_type_refusing_implicit_conversion():
    x = x23()
    assert not isinstance(x, onp.ndarray)
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        onp.asarray(x)
    with pytest.raises(TypeError, match="Implicit conversion"):
        onp.array([x, x])
    got = x.get()
    assert type(got) is onp.ndarray and got.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert type(fake_cupy.asnumpy(x)) is onp.ndarray


def test_numpy_functions_and_ufuncs_dispatch_to_it():
    x = x23()
    for result in (onp.exp(x), onp.sum(x, axis=0), onp.concatenate([x, x]), onp.linalg.norm(x, axis=1), x @ x.T):
        assert type(result) is fake_cupy.ndarray
    onp.testing.assert_allclose(onp.tensordot(x, x, 2).get(), 55.0)
    assert type(onp.linalg.svd(x).S) is fake_cupy.ndarray


def test_reductions_and_scalar_indexing_give_0d_arrays():
    x = x23()
    for r in (onp.sum(x), x.max(), x[1, 2], onp.mean(x)):
        assert type(r) is fake_cupy.ndarray and r.shape == ()


def test_numpy_arrays_are_refused_as_operands_but_not_as_indices():
    x = x23()
    for op in (lambda: x + onp.ones(3), lambda: onp.ones(3) * x, lambda: onp.dot(x, onp.ones(3))):
        with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
            op()
    assert (x + onp.float64(1.0)).get()[0, 0] == 1.0 and (2 * x).get()[1, 2] == 10.0
    assert x[onp.array([1, 1])].shape == (2, 3) and x[onp.array([True, False])].shape == (1, 3)


def test_no_ufunc_at_but_scatter_add():
    x = fake_cupy.zeros(4)
    with pytest.raises(TypeError):
        onp.add.at(x, [0, 0, 2], 1.0)
    assert not hasattr(fake_cupy.add, "at")
    fake_cupyx.scatter_add(x, fake_cupy.asarray(onp.array([0, 0, 2])), fake_cupy.from_numpy(onp.array([1.0, 2.0, 3.0])))
    assert x.get().tolist() == [3.0, 0.0, 3.0, 0.0]


def test_host_transfers_are_counted():
    x = x23()
    before = fake_cupy.host_transfers
    float(x[0, 0]), bool(x[0, 1] > 0), x.tolist(), x.item(4)
    assert fake_cupy.host_transfers - before == 4


def test_fastgrad_differentiates_it_with_nothing_registered():
    x = x23()
    g = fastgrad.grad(lambda x: np.sum(np.sin(x) * x))(x)
    assert type(g) is fake_cupy.ndarray
    a = x.get()
    onp.testing.assert_allclose(g.get(), onp.cos(a) * a + onp.sin(a), rtol=1e-14)
