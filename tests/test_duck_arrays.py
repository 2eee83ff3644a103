"""Duck arrays that override ``__array_ufunc__`` (xarray's DataArray; issue #14): a ufunc or an
operator on a traced array and such an operand goes through NumPy's dispatch (NEP 13), as
in autograd 1.9.1, so the operand applies the ufunc to its data and holds the traced
result.  Each case is checked against central differences and against autograd."""

import numpy as onp
import pytest

from gradcheck import check_grads

A = onp.array([1.0, 2.0, 3.0])
X0 = onp.array([0.5, 1.0, 1.5])

# name -> f(np, xr, x): a scalar computed through DataArrays
XARRAY_CASES = {
    "x * DataArray, .values": lambda np, xr, x: np.sum((x * xr.DataArray(A)).values),
    "x * DataArray, .data": lambda np, xr, x: np.sum((x * xr.DataArray(A)).data),
    "DataArray * x": lambda np, xr, x: np.sum((xr.DataArray(A) * x).values),
    "np.multiply(x, DataArray)": lambda np, xr, x: np.sum(np.multiply(x, xr.DataArray(A)).data),
    "np.sin(DataArray(x) * 2.0)": lambda np, xr, x: np.sum(np.sin(xr.DataArray(x) * 2.0).values),
    "np.sin(x * DataArray)": lambda np, xr, x: np.sum(np.sin(x * xr.DataArray(A)).values),
    "(x + DataArray) ** 2": lambda np, xr, x: np.sum(((x + xr.DataArray(A)) ** 2).values),
    "x - DataArray, x / DataArray": lambda np, xr, x: np.sum(((x - xr.DataArray(A)) / xr.DataArray(A)).data),
    "DataArray / x": lambda np, xr, x: np.sum((xr.DataArray(A) / x).data),
    "x ** DataArray": lambda np, xr, x: np.sum((x ** xr.DataArray(A)).data),
    "-(x * DataArray)": lambda np, xr, x: np.sum((-(x * xr.DataArray(A))).values),
    "np.arctan2(x, DataArray)": lambda np, xr, x: np.sum(np.arctan2(x, xr.DataArray(A)).values),
}


@pytest.fixture(scope="module")
def xr():
    return pytest.importorskip("xarray")


@pytest.mark.parametrize("name", sorted(XARRAY_CASES))
def test_xarray_gradients(ag, np, xr, name):
    f = XARRAY_CASES[name]
    check_grads(lambda x: f(np, xr, x), X0, modes=("rev", "fwd"), order=2)


@pytest.mark.parametrize("name", sorted(XARRAY_CASES))
def test_xarray_gradients_match_autograd(ref, np, xr, name):
    import fastgrad

    f = XARRAY_CASES[name]
    ours = fastgrad.grad(lambda x: f(np, xr, x))(X0)
    theirs = ref.grad(lambda x: f(ref.np, xr, x))(X0)
    assert type(ours) is type(theirs)
    onp.testing.assert_allclose(ours, theirs, rtol=1e-13)


def test_xarray_scalar_input(ag, np, xr):
    f = XARRAY_CASES["np.sin(x * DataArray)"]
    onp.testing.assert_allclose(ag.grad(lambda x: f(np, xr, x))(0.7), onp.sum(onp.cos(0.7 * A) * A), rtol=1e-13)


def test_xarray_result_is_a_dataarray_holding_a_box(ag, np, xr):
    seen = []

    def f(x):
        y = x * xr.DataArray(A, dims=["i"])
        seen.append((type(y), type(y.data), y.dims))
        return np.sum(y.data)

    ag.grad(f)(X0)
    ((y_type, data_type, dims),) = seen
    assert y_type is xr.DataArray and dims == ("i",)
    assert issubclass(data_type, ag.tracer.Box)


def test_pandas_series_operand_raises_as_in_autograd(ag, np):
    pd = pytest.importorskip("pandas")
    # pandas cannot hold a traced array: building the result Series fails, in autograd too
    # (rather than iterating the box into floats, which would detach the result silently)
    for f in (lambda x: np.sum(x * pd.Series(A)), lambda x: np.sum(np.multiply(x, pd.Series(A)))):
        with pytest.raises(ValueError, match="setting an array element with a sequence"):
            ag.grad(f)(X0)


class Wrapped:
    """The smallest duck array: applies ufuncs to its data and wraps the result."""

    def __init__(self, data):
        self.data = data

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__":
            return NotImplemented
        return Wrapped(ufunc(*[i.data if isinstance(i, Wrapped) else i for i in inputs], **kwargs))

    def __mul__(self, other):
        return onp.multiply(self, other)

    __rmul__ = __mul__


@pytest.mark.parametrize(
    "f",
    [
        lambda np, x: np.sum((x * Wrapped(A)).data),
        lambda np, x: np.sum((Wrapped(A) * x).data),
        lambda np, x: np.sum(np.cos(np.multiply(x, Wrapped(A))).data),
        lambda np, x: np.sum(np.sin(Wrapped(x)).data * x),
    ],
    ids=["box * duck", "duck * box", "np.cos(np.multiply(box, duck))", "np.sin(duck holding box)"],
)
def test_any_array_ufunc_duck_array(ag, np, f):
    check_grads(lambda x: f(np, x), X0, modes=("rev", "fwd"), order=2)


def test_any_array_ufunc_duck_array_matches_autograd(ref, np):
    import fastgrad

    def f(np_, x):
        return np_.sum(np_.exp(np_.multiply(x, Wrapped(A)) * 0.5).data)

    ours = fastgrad.grad(lambda x: f(np, x))(X0)
    onp.testing.assert_allclose(ours, ref.grad(lambda x: f(ref.np, x))(X0), rtol=1e-13)
