"""Sums of scalar cotangents of different kinds.

A scalar function's cotangents come as three kinds of float64 value: the 0-d array that
``grad`` seeds with (rules such as ``+`` and ``-`` pass it along as it is), float64 scalars
(what most rules compute) and Python floats (a user's rule may return one).  Where a value
fans out, the pass adds them together.  NumPy gives a float64 for every mix of them, with
its own warnings and errors when the sum overflows; these tests hold both engines to that.
"""

import warnings

import numpy as onp
import pytest

import fastgrad.numpy as np
from fastgrad import grad, make_vjp
from fastgrad.extend import defvjp, primitive

try:
    import autograd
    import autograd.numpy as anp
except ImportError:  # the values are checked against NumPy below in any case
    autograd = None


@primitive
def _scaled(x):
    return 3.0 * x


defvjp(_scaled, lambda ans, x: lambda g: float(3.0 * g))  # a Python float cotangent


def _fan(np, scaled, x):
    total = 0.0
    for k in range(5):
        total = total + (x - 0.5 * k)  # the seed, passed along to x
        total = total + np.sin(x) * x  # float64 scalars from the kernels
    return total + scaled(x)


def test_every_mix_of_kinds_sums_to_a_float64_with_numpy_value():
    x = 0.7
    g = grad(lambda x: _fan(np, _scaled, x))(x)
    assert type(g) is onp.float64
    expected = 5 * (1.0 + onp.cos(x) * x + onp.sin(x)) + 3.0
    assert g == pytest.approx(expected, rel=1e-15, abs=0)
    if autograd is not None:
        ag_scaled = autograd.extend.primitive(lambda x: 3.0 * x)
        autograd.extend.defvjp(ag_scaled, lambda ans, x: lambda g: float(3.0 * g))
        assert g == pytest.approx(autograd.grad(lambda x: _fan(anp, ag_scaled, x))(x), rel=1e-15, abs=0)


@pytest.mark.parametrize("n", [2, 3, 40])
def test_the_seed_passed_along_many_times_sums_exactly(n):
    # n contributions of the 0-d seed (x - c), then one float64 (x * 1.5)
    g = grad(lambda x: sum([x - 0.1 * k for k in range(n)], x * 1.5))(0.3)
    assert type(g) is onp.float64
    assert g == n + 1.5


@pytest.mark.parametrize("order", ["seed first", "seed last"])
def test_an_overflowing_sum_of_mixed_kinds_warns_and_raises_as_numpy_does(order):
    # the cotangents of x: g itself (the caller's 0-d array, through +) and g * 1.0 (a
    # float64): 1e308 + 1e308 overflows in the sum, and only there
    if order == "seed first":
        vjp, _ = make_vjp(lambda x: x + x * 1.0)(2.0)
    else:
        vjp, _ = make_vjp(lambda x: x * 1.0 + x)(2.0)
    seed = onp.array(1e308)
    with onp.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            vjp(seed)
        with pytest.raises(FloatingPointError, match="overflow"):
            onp.float64(1e308) + seed  # NumPy's own behaviour, for comparison
    with onp.errstate(over="warn"):
        with pytest.warns(RuntimeWarning, match="overflow"):
            result = vjp(seed)
    assert type(result) is onp.float64 and result == onp.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert vjp(onp.array(1e307)) == 2e307  # a normal sum: no warning
