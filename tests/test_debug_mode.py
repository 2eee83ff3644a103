"""Debug mode: a mutated saved array and a NaN-producing backward are reported by name."""

import subprocess
import sys

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as np
from fastgrad import grad, make_vjp
from fastgrad.extend import defvjp, primitive


@pytest.fixture
def debug():
    previous = fastgrad.set_debug(True)
    yield
    fastgrad.set_debug(previous)


def test_mutated_captured_array_is_reported(debug):
    W = onp.arange(3.0)
    vjp, _ = make_vjp(lambda x: np.sum(np.sin(x) * W))(onp.ones(3))
    W[1] = 100.0  # changed between the forward and the backward pass
    with pytest.raises(RuntimeError, match=r"argument 1 of multiply.* modified in place"):
        vjp(1.0)


def test_mutated_input_value_is_reported(debug):
    x = onp.linspace(0.1, 1.0, 4)
    saved = {}

    def f(x):
        y = np.exp(x)
        saved["y"] = y._value
        return np.sum(y * y)

    vjp, _ = make_vjp(f)(x)
    saved["y"][0] = -1.0
    with pytest.raises(RuntimeError, match="modified in place"):
        vjp(1.0)


def test_nan_producing_backward_is_named(debug):
    @primitive
    def fragile(x):
        return x * 2.0

    defvjp(fragile, lambda ans, x: lambda g: g * onp.nan)
    with pytest.raises(FloatingPointError, match=r"backward pass of fragile produced nan or inf.*argument 0"):
        grad(lambda x: np.sum(fragile(x)))(onp.ones(2))


def test_sqrt_at_zero_is_flagged_and_a_nan_input_is_told_apart(debug):
    with pytest.raises(FloatingPointError, match=r"backward pass of sqrt.*forward values were finite"):
        with onp.errstate(divide="ignore"):
            grad(lambda x: np.sum(np.sqrt(x)))(onp.array([0.0, 1.0]))
    with pytest.raises(FloatingPointError, match=r"of multiply.*already contained nan or inf"):
        grad(lambda x: np.sum(x * x))(onp.array([onp.nan, 1.0]))

    # the first rule to produce a NaN is the one named, not the ones before it in the pass
    @primitive
    def poison(x):
        return x

    defvjp(poison, lambda ans, x: lambda g: g * onp.nan)
    with pytest.raises(FloatingPointError, match="backward pass of poison"):
        grad(lambda x: np.sum(np.sin(poison(x))))(onp.ones(2))


def test_debug_mode_gives_the_same_gradients(debug):
    x = onp.linspace(-1, 1, 5)
    f = lambda x: np.sum(np.tanh(x) ** 2 * x[::-1] + np.exp(x) / (1 + x * x))
    fastgrad.set_debug(False)
    expected = grad(f)(x)
    fastgrad.set_debug(True)
    onp.testing.assert_array_equal(grad(f)(x), expected)


def test_without_debug_the_mutation_goes_unnoticed():
    W = onp.arange(3.0)
    vjp, _ = make_vjp(lambda x: np.sum(x * W))(onp.ones(3))
    W[1] = 100.0
    onp.testing.assert_array_equal(vjp(1.0), W)  # silently uses the new W: what debug mode is for


def test_environment_variable_turns_it_on():
    code = (
        "import fastgrad, fastgrad.numpy as np, numpy as onp\n"
        "W = onp.ones(2)\n"
        "vjp, _ = fastgrad.make_vjp(lambda x: np.sum(x * W))(onp.ones(2))\n"
        "W[0] = 5.0\n"
        "try:\n    vjp(1.0)\nexcept RuntimeError as e:\n    print('caught', 'modified in place' in str(e))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "FASTGRAD_DEBUG": "1"},
    )
    assert out.stdout.strip() == "caught True", out.stderr
