"""``install_as_autograd(array_ufunc=False)``: autograd 1.8's NumPy dispatch, for libraries
written against it.

autograd 1.9 made its ArrayBox take part in NumPy's ufunc protocol (``__array_ufunc__``).
Code written for 1.8 can rely on what NumPy did before: an operator between an ndarray and a
traced value defers to the traced value's reflected operator (by ``__array_priority__``).
PennyLane does (it requires ``autograd<1.9``): its ``tensor`` subclass overrides
``__array_ufunc__`` without handing ``NotImplemented`` on, and its circuits add into arrays
in place.  ``NaiveTensor`` below does what that subclass does, written from its documented
behaviour.  Each case is checked against central differences in both modes to second order,
under the 1.8 dispatch; the in-process cases switch it with the private function that
``install_as_autograd`` calls, and the public call runs in a subprocess.
"""

import os
import subprocess
import sys
import textwrap

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as fnp
from fastgrad.extend import VSpace
from fastgrad.tracer import getval
from fastgrad.numpy.numpy_boxes import ArrayBox, _use_array_ufunc
from fastgrad.numpy.numpy_vspaces import ArrayVSpace
from gradcheck import check_grads
from test_dropin import _fastgrad_env

pytestmark = pytest.mark.fastgrad_only


class NaiveTensor(onp.ndarray):
    """An ndarray subclass whose ``__array_ufunc__`` unwraps its operands, calls ndarray's and
    wraps whatever comes back, ``NotImplemented`` included (so NumPy never asks the other
    operand)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        args = [a.view(onp.ndarray) if isinstance(a, NaiveTensor) else a for a in inputs]
        result = super().__array_ufunc__(ufunc, method, *args, **kwargs)
        return onp.asarray(result).view(NaiveTensor)


ArrayBox.register(NaiveTensor)
VSpace.register(NaiveTensor, ArrayVSpace)

T = onp.array([0.5, -1.0, 2.0]).view(NaiveTensor)
X0 = onp.array([0.3, 0.7, 1.1])


def add_into(x):
    total = onp.zeros(3)
    total += x * x  # an ndarray's in-place operator with a traced operand
    total *= x
    return total


# name -> f(x): NaiveTensor constants meeting a traced x
CASES = {
    "tensor + x": lambda x: T + x,
    "tensor - x": lambda x: T - x,
    "tensor * x": lambda x: T * x,
    "tensor / x": lambda x: T / x,
    "tensor ** x": lambda x: abs(T) ** x,
    "x * tensor": lambda x: x * T,
    "x / tensor": lambda x: x / T,
    "tensor @ x": lambda x: T @ x,
    "np.multiply(tensor, x)": lambda x: fnp.multiply(T, x),
    "np.sin(tensor * x) + tensor": lambda x: fnp.sin(T * x) + T,
    "ndarray += x, ndarray *= x": add_into,
    "ndarray - x": lambda x: onp.ones(3) - x,
}


@pytest.fixture
def dispatch_of_autograd_18():
    _use_array_ufunc(False)
    try:
        yield
    finally:
        _use_array_ufunc(True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_under_autograds_18_dispatch(dispatch_of_autograd_18, name):
    f = CASES[name]
    check_grads(lambda x: fnp.sum(fnp.sin(f(x))), X0, modes=("rev", "fwd"), order=2)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_under_autograds_18_dispatch(dispatch_of_autograd_18, name):
    f = CASES[name]
    expected = f(X0.copy())
    traced = []

    def keep(x):
        y = f(x)
        traced.append(getval(y))
        return fnp.sum(y)

    fastgrad.grad(keep)(X0)
    assert onp.array_equal(traced[0], expected)


def test_operator_with_such_a_subclass_fails_under_autograds_19_dispatch():
    # What the switch is for: NumPy asks the subclass first, which wraps NotImplemented.
    with pytest.raises(TypeError, match="NotImplementedType"):
        fastgrad.grad(lambda x: fnp.sum(fnp.sin(T + x)))(X0)


def test_numpy_ufunc_on_a_traced_value_follows_the_dispatch(dispatch_of_autograd_18):
    with pytest.raises(TypeError, match="no callable sin method"):
        fastgrad.grad(lambda x: onp.sin(x))(0.5)
    _use_array_ufunc(True)
    assert fastgrad.grad(lambda x: onp.sin(x))(0.5) == onp.cos(0.5)
    with pytest.raises(TypeError, match="cannot be applied to a traced value with out="):
        fastgrad.grad(lambda x: fnp.sum(add_into(x)))(X0)


def run(script):
    env = dict(os.environ, **_fastgrad_env())  # the fastgrad under test, installed or in place
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_install_as_autograd_switches_the_dispatch():
    out = run("""
        import numpy as onp
        import fastgrad
        fastgrad.install_as_autograd(array_ufunc=False)
        import autograd.numpy as np
        from autograd import grad
        from autograd.numpy.numpy_boxes import ArrayBox

        def f(x):
            total = onp.zeros(2)
            total += x * 3.0
            return np.sum(total)

        print(hasattr(ArrayBox, "__array_ufunc__"), float(grad(f)(1.0)))
        fastgrad.install_as_autograd()  # None: the setting stays
        print(hasattr(ArrayBox, "__array_ufunc__"))
        fastgrad.install_as_autograd(array_ufunc=True)
        print(hasattr(ArrayBox, "__array_ufunc__"), float(grad(onp.sin)(0.0)))
        try:
            fastgrad.install_as_autograd(array_ufunc="no")
        except TypeError as e:
            print(str(e).replace(" ", "_"))
    """)
    assert out == [
        "False",
        "6.0",
        "False",
        "True",
        "1.0",
        "install_as_autograd():_array_ufunc_must_be_True,_False_or_None,_got_'no'",
    ]
