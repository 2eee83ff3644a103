"""Smoke test of an installed fastgrad, run by scripts/check_packaging.sh in a fresh virtual
environment (outside the checkout) where fastgrad was installed from the wheel or the sdist.

It checks that the package imported is the installed one with every compiled module, then
computes a few gradients with known closed forms (first and second order, reverse and forward
mode, containers).  Exit status 0 when all hold; an AssertionError otherwise.
"""

import importlib
import importlib.util
import os
import sys
from importlib import resources

import numpy as onp

import fastgrad
import fastgrad.numpy as np
from fastgrad import deriv, elementwise_grad, grad, hessian, jacobian, value_and_grad

# The installed copy, not a checkout on sys.path.
here = os.path.realpath(fastgrad.__file__)
assert here.startswith(os.path.realpath(sys.prefix)), f"fastgrad imported from {here}, not from {sys.prefix}"
assert fastgrad.COMPILED, "the compiled engine is not in use"

# Every module setup.py compiles is an extension module in the install.
from fastgrad._stale import COMPILED_SOURCES  # noqa: E402  (the plain modules setup.py compiles)

for name in ("fastgrad._core",) + COMPILED_SOURCES:
    origin = importlib.util.find_spec(name).origin
    assert origin.endswith(".so") or origin.endswith(".pyd"), f"{name} is not compiled: {origin}"
    importlib.import_module(name)

# What type checkers need ships with the package.
package = resources.files("fastgrad")
for data in ("py.typed", "_core.pyi", "differential_operators.pyi", "numpy/__init__.pyi"):
    assert package.joinpath(data).is_file(), f"{data} is missing from the install"
# Generated C is a build product: it is not installed.
assert not list(package.glob("*.c")) and not list(package.joinpath("numpy").glob("*.c")), "generated C installed"

# Gradients with known values.
x = onp.array([-1.0, 0.25, 2.0])
onp.testing.assert_allclose(grad(lambda x: np.sum(np.sin(x) * x))(x), onp.cos(x) * x + onp.sin(x), rtol=1e-13)
t = onp.tanh(0.5)
assert abs(grad(np.tanh)(0.5) - (1 - t**2)) < 1e-15
assert abs(grad(grad(np.tanh))(0.5) - (-2 * t * (1 - t**2))) < 1e-15
onp.testing.assert_allclose(elementwise_grad(np.exp)(x), onp.exp(x), rtol=1e-15)
onp.testing.assert_allclose(deriv(np.sin)(0.3), onp.cos(0.3), rtol=1e-15)
onp.testing.assert_allclose(hessian(lambda x: np.sum(x**3))(x), onp.diag(6 * x), rtol=1e-15)
A = onp.array([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]])
onp.testing.assert_allclose(jacobian(lambda x: np.tanh(A @ x))(x), (1 - onp.tanh(A @ x)[:, None] ** 2) * A, rtol=1e-13)
value, g = value_and_grad(lambda p: p["w"] ** 2 * p["b"])({"w": 3.0, "b": 2.0})
assert value == 18.0 and g == {"w": 12.0, "b": 9.0}, (value, g)

print(f"fastgrad {fastgrad.__version__} smoke test passed ({os.path.dirname(here)}, compiled engine)")
