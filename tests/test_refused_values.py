"""Values that ndarray's rules would differentiate to a wrong number, and outputs that are
not scalars: each gives autograd's TypeError (or a clearer one), never a silent wrong value
and never a box in a result (issue #15, finding 4 and 6)."""

import numpy as onp
import pytest

from gradcheck import check_grads

pytestmark = [
    pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Output seems independent of input"),
]


def _matrix():
    return onp.matrix([[1.0, 2.0], [3.0, 4.0]])


def _masked():
    return onp.ma.array([1.0, 2.0, 3.0], mask=[False, True, False])


class _UserArray(onp.ndarray):
    """An ndarray subclass nobody registered (as a library might define one)."""


SUBCLASSES = {
    "matrix": _matrix,  # its * is a matrix product: ndarray's rule gave [[7, 9], [11, 13]]
    "masked": _masked,  # its mean skips masked elements: ndarray's rule gave [1/3] * 3
    "memmap-like": lambda: onp.arange(1.0, 4.0).view(_UserArray),
    "recarray": lambda: onp.rec.array(onp.arange(3.0)),
}
FUNCTIONS = {
    "sum x*x": lambda np: lambda x: np.sum(x * x),
    "mean": lambda np: lambda x: np.mean(x),
}


@pytest.mark.parametrize("fun", list(FUNCTIONS))
@pytest.mark.parametrize("kind", list(SUBCLASSES))
def test_an_unregistered_ndarray_subclass_is_refused_as_autograd_does(ag, np, kind, fun):
    with pytest.raises(TypeError, match="Can't differentiate w.r.t. type"):
        ag.grad(FUNCTIONS[fun](np))(SUBCLASSES[kind]())
    with pytest.raises(TypeError, match="Can't differentiate w.r.t. type"):
        ag.value_and_grad(FUNCTIONS[fun](np))(SUBCLASSES[kind]())


@pytest.mark.fastgrad_only
def test_the_refusal_says_what_to_do(ag, np):
    with pytest.raises(TypeError, match=r"numpy.matrix'>: an ndarray subclass .* pass np.asarray\(x\)"):
        ag.grad(lambda x: np.sum(x * x))(_matrix())


def test_a_subclass_made_inside_the_function_is_refused_too(ag, np):
    # a masked constant makes the product a masked array: its box would use ndarray's rules
    with pytest.raises(TypeError, match="Can't differentiate w.r.t. type"):
        ag.grad(lambda x: np.sum(x * _masked()))(onp.ones(3))


def test_the_same_values_as_plain_arrays_are_differentiated(ag, np):
    m = onp.asarray(_matrix())
    onp.testing.assert_allclose(ag.grad(lambda x: np.sum(x * x))(m), 2 * m)
    check_grads(lambda x: np.sum(x * x), m, modes=("rev", "fwd"), order=2)
    data = onp.array([1.0, 3.0])  # the masked array's unmasked elements
    onp.testing.assert_allclose(ag.grad(np.mean)(data), [0.5, 0.5])


def test_a_registered_subclass_is_differentiated(ag):
    # registering a box and a vector space is how autograd's API differentiates a subclass
    fnp = pytest.importorskip(ag.__name__ + ".numpy")
    ArrayBox = pytest.importorskip(ag.__name__ + ".numpy.numpy_boxes").ArrayBox
    spaces = pytest.importorskip(ag.__name__ + ".numpy.numpy_vspaces")
    VSpace = pytest.importorskip(ag.__name__ + ".extend").VSpace

    class Registered(onp.ndarray):
        pass

    ArrayBox.register(Registered)
    VSpace.register(Registered, lambda x: spaces.ArrayVSpace(x))
    x = onp.array([0.5, -1.0, 2.0]).view(Registered)
    onp.testing.assert_allclose(ag.grad(lambda x: fnp.sum(fnp.sin(x) * x))(x), onp.cos(x) * x + onp.sin(x))


CONTAINER_OUTPUTS = {
    "list of one": lambda x: [x * 2.0],
    "tuple of one": lambda x: (x * 2.0,),
    "dict of one": lambda x: {"a": x * 2.0},
    "list of two": lambda x: [x * 2.0, x],
}


@pytest.mark.fastgrad_only  # autograd returns 0.0 for a one-element container
@pytest.mark.parametrize("operator", ["grad", "value_and_grad"])
@pytest.mark.parametrize("kind", list(CONTAINER_OUTPUTS))
def test_a_container_output_is_not_a_scalar_output(ag, kind, operator):
    # (value_and_grad used to return the container with its box inside)
    with pytest.raises(TypeError, match="only applies to real scalar-output functions"):
        getattr(ag, operator)(CONTAINER_OUTPUTS[kind])(1.5)


def test_scalar_outputs_in_arrays_of_size_one_stay_differentiable(ag, np):
    assert ag.grad(lambda x: np.array([x * 2.0]))(1.5) == 2.0
    value, g = ag.value_and_grad(lambda x: np.reshape(x * 2.0, (1, 1)))(1.5)
    assert type(value) is onp.ndarray and value.shape == (1, 1) and g == 2.0
