"""Behaviours of autograd 1.9.1 that code written for it relies on (issue #14), each checked
against central differences in both modes and to second order, and against autograd."""

import numpy as onp
import pytest

from gradcheck import check_grads

JOINERS = ["stack", "vstack", "hstack", "column_stack", "concatenate"]


def _iterables(x):
    """The same two arrays as a generator, a dict's values, a map and an iterator."""
    return {
        "generator": lambda: (x * i for i in (1.0, -2.0)),
        "dict_values": lambda: {"a": x, "b": x * -2.0}.values(),
        "map": lambda: map(lambda c: x * c, (1.0, -2.0)),
        "iterator": lambda: iter([x, x * -2.0]),
    }


@pytest.mark.parametrize("kind", ["generator", "dict_values", "map", "iterator"])
@pytest.mark.parametrize("joiner", JOINERS)
def test_joining_functions_take_any_iterable(ag, np, joiner, kind):
    x0 = onp.array([0.5, -1.5, 2.0])
    join = getattr(np, joiner)

    def f(x):
        return np.sum(np.sin(join(_iterables(x)[kind]())) * onp.arange(6.0).reshape(join([onp.ones(3)] * 2).shape))

    check_grads(f, x0, modes=("rev", "fwd"), order=2)
    expected = getattr(onp, joiner)([x0, x0 * -2.0])
    onp.testing.assert_allclose(join(_iterables(x0)[kind]()), expected)


@pytest.mark.parametrize("joiner", JOINERS)
def test_joining_untraced_iterables_gives_numpys_value(np, joiner):
    parts = [onp.arange(3.0), onp.arange(3.0) + 10]
    expected = getattr(onp, joiner)(parts)
    got = getattr(np, joiner)(p for p in parts)
    assert type(got) is onp.ndarray
    onp.testing.assert_array_equal(got, expected)


def test_stack_of_a_generator_matches_autograd(ref, np):
    import fastgrad

    x0 = onp.array([0.5, -1.5])

    def f(np_, x):
        return np_.sum(np_.stack(np_.exp(x * c) for c in (1.0, 0.5, -1.0)) ** 2)

    ours = fastgrad.grad(lambda x: f(np, x))(x0)
    theirs = ref.grad(lambda x: f(ref.np, x))(x0)
    onp.testing.assert_allclose(ours, theirs, rtol=1e-13)


CONTAINER_VALUES = {
    "list": [1.0, onp.zeros((2, 1))],
    "dict": {"a": 1.0, "b": onp.zeros((2, 1))},
    "nested": (1.0, [2.0, {"c": onp.ones(2)}]),
}


@pytest.mark.parametrize("name", list(CONTAINER_VALUES))
@pytest.mark.parametrize("op", ["inner_prod", "add", "scalar_mul"])
def test_container_vector_space_operations_to_second_order(ag, name, op):
    vspace = ag.extend.vspace if hasattr(ag, "extend") else __import__(ag.__name__ + ".extend").extend.vspace
    x = CONTAINER_VALUES[name]
    y = vspace(x).randn()
    if op == "scalar_mul":
        check_grads(lambda v, a: vspace(v).scalar_mul(v, a), x, 1.5, modes=("rev", "fwd"), order=2)
    else:
        check_grads(lambda v, w: getattr(vspace(v), op)(v, w), x, y, modes=("rev", "fwd"), order=2)
