"""A small, fully annotated program using fastgrad as a user would, for the type checker.

CI runs ``mypy`` on this file (configured in pyproject.toml, ``[tool.mypy]``): it must pass
with ``strict = true``, and every ``assert_type`` below states what mypy infers from
fastgrad's stubs.  tests/typing/test_stubs.py also runs it, so its gradients are real.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as onp
from numpy.typing import NDArray

import fastgrad.numpy as np
from fastgrad import (
    checkpoint,
    elementwise_grad,
    grad,
    grad_and_aux,
    hessian,
    jacobian,
    make_hvp,
    make_jvp,
    make_vjp,
    multigrad_dict,
    stop_gradient,
    value_and_grad,
)
from fastgrad.misc.optimizers import adam, sgd

if TYPE_CHECKING:
    from typing_extensions import assert_type
else:

    def assert_type(value, _type):
        return value


Array = NDArray[onp.float64]
Params = dict[str, Array]


def loss(params: Params, X: Array, y: Array, l2: float = 1e-3) -> Any:
    """Mean logistic loss of a linear model, plus an L2 penalty."""
    logits = X @ params["w"] + params["b"]
    return np.mean(np.logaddexp(0.0, -y * logits)) + l2 * np.sum(params["w"] ** 2)


def cubic(x: float) -> float:
    return x**3


def sum_of_cubes(x: Array) -> Any:
    return np.sum(x**3)


def main() -> None:
    rng = np.random.RandomState(0)
    X: Array = rng.randn(20, 3)
    y: Array = np.sign(X[:, 0] + 0.1)
    params: Params = {"w": np.zeros(3), "b": np.zeros(1)}

    # A gradient has the type of the argument; the other arguments are checked as given.
    g = grad(loss)(params, X, y)
    assert_type(g, Params)
    assert set(g) == {"w", "b"} and g["w"].shape == (3,)
    value, g2 = value_and_grad(loss)(params, X, y, l2=0.0)
    assert_type(g2, Params)
    assert value > 0.0

    # argnum: another int gives Any, a tuple gives a tuple of gradients.
    dX = grad(loss, 1)(params, X, y)
    dparams, dy = grad(loss, (0, 2))(params, X, y)
    assert_type(grad(loss, (0, 2))(params, X, y), tuple[Any, ...])
    assert dX.shape == X.shape and dy.shape == y.shape and set(dparams) == {"w", "b"}

    # Scalars: d/dx x^3 = 3 x^2, second derivative 6 x.
    d = grad(cubic)(2.0)
    assert_type(d, float)
    assert abs(d - 12.0) < 1e-12 and abs(grad(grad(cubic))(2.0) - 12.0) < 1e-12

    # Arrays: Jacobians, Hessians, Hessian-vector products.
    x: Array = np.array([1.0, 2.0])
    slopes = elementwise_grad(np.tanh)(x)  # a ufunc given directly
    assert_type(slopes, Array)
    assert np.allclose(slopes, 1 - np.tanh(x) ** 2) and abs(grad(np.tanh)(0.0) - 1.0) < 1e-15
    assert np.allclose(jacobian(lambda v: v**2)(x), np.diag(2 * x))
    assert np.allclose(hessian(sum_of_cubes)(x), np.diag(6 * x))
    hvp, gradient = make_hvp(sum_of_cubes)(x)
    assert_type(gradient, Array)
    assert np.allclose(hvp(np.ones(2)), 6 * x) and np.allclose(gradient, 3 * x**2)
    vjp, out = make_vjp(sum_of_cubes)(x)
    assert np.allclose(vjp(1.0), 3 * x**2)
    jvp = make_jvp(cubic)(2.0)
    out_value, tangent = jvp(1.0)
    assert_type(out_value, float)
    assert out_value == 8.0 and tangent == 12.0

    # An auxiliary value keeps its own type.
    def with_count(x: float) -> tuple[float, str]:
        return x * x, "one call"

    slope, note = grad_and_aux(with_count)(3.0)
    assert_type(note, str)
    assert slope == 6.0 and note == "one call"

    # Every argument at once, by name.
    by_name = multigrad_dict(loss)(params, X, y)
    assert_type(by_name, OrderedDict[str, Any])
    assert list(by_name) == ["params", "X", "y", "l2"]

    # Wrappers keep the function's type.
    layer = checkpoint(cubic)
    assert_type(layer(2.0), float)
    assert grad(lambda t: layer(t) * stop_gradient(t))(2.0) == 24.0

    # The optimisers: grad(x, i) and callback(x, i, g) on a parameter tree of the x0's type.
    def objective(p: Params, i: int) -> Any:
        return loss(p, X, y)

    seen: list[int] = []

    def progress(p: Params, i: int, g: Params) -> None:
        seen.append(i)

    fitted = adam(grad(objective), params, callback=progress, num_iters=30, step_size=0.1)
    assert_type(fitted, Params)
    assert seen == list(range(30)) and loss(fitted, X, y) < loss(params, X, y)
    assert_type(sgd(grad(objective), params, num_iters=5), Params)


if __name__ == "__main__":
    main()
    print("typed program: OK")
