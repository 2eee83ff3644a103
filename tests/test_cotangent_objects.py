"""Cotangent objects that anything outside the backward pass can see keep their values.

The compiled pass writes a float64 cotangent into a float64 that only it holds (the previous
node's cotangent, or a sum in progress) instead of allocating a new one.  These tests hold
on to the cotangents a user's rule receives or returns, and to the seed a caller passes,
and check that none of them changes while the gradient is computed, on both engines.
"""

import numpy as onp
import pytest

import fastgrad.numpy as np
from fastgrad import grad, make_vjp
from fastgrad.extend import defvjp, primitive


def _seen_by(seen):
    """An identity primitive whose rule records each cotangent it gets (the object and its
    value then) and gives it back as it is."""

    @primitive
    def keep(x):
        return x

    def rule(ans, x):
        def vjp(g):
            seen.append((g, float(g)))
            return g

        return vjp

    defvjp(keep, rule)
    return keep


def _chain(keep, x):
    y = x
    for _ in range(3):  # scalar kernels on both sides of the user's rule, in a chain
        y = np.sin(keep(np.sin(y) * x)) * y + 0.25
    return y


def _chain_by_numpy(x):
    """_chain's gradient by hand, in float64 (the same operations in the same order)."""
    ys, y = [], onp.float64(x)
    for _ in range(3):
        ys.append(y)
        y = onp.sin(onp.sin(y) * x) * y + 0.25
    gy, gx = onp.float64(1.0), onp.float64(0.0)
    for y in reversed(ys):
        inner = onp.sin(y) * x
        g_inner = gy * y * onp.cos(inner)
        gx = gx + g_inner * onp.sin(y)
        gy = onp.sin(inner) * gy + g_inner * x * onp.cos(y)
    return gx + gy


def test_cotangents_a_rule_keeps_do_not_change_afterwards():
    seen = []
    keep = _seen_by(seen)
    first = grad(lambda x: _chain(keep, x))(0.7)
    assert len(seen) == 3
    assert [float(g) for g, _ in seen] == [v for _, v in seen]
    assert first == pytest.approx(_chain_by_numpy(0.7), rel=1e-12)

    value = float(first)
    grad(lambda x: _chain(keep, x))(1.3)  # a later call reuses nothing the caller holds
    assert float(first) == value
    assert [float(g) for g, _ in seen] == [v for _, v in seen]


@pytest.mark.parametrize("order", ["rule first", "kernels first"])
def test_a_float64_a_rule_returns_is_not_summed_into(order):
    # the rule's cotangent is the same float64 each time (one the test holds): the sums
    # of the parent's cotangents must be new objects, not that one changed in place
    constant = onp.float64(2.0)

    @primitive
    def twice(x):
        return 2.0 * x

    defvjp(twice, lambda ans, x: lambda g: constant)

    def f(x):
        if order == "rule first":
            return twice(x) + twice(x) + np.sin(x) * x
        return np.sin(x) * x + twice(x) + twice(x)

    expected = 2.0 + 2.0 + onp.cos(0.4) * 0.4 + onp.sin(0.4)
    assert grad(f)(0.4) == pytest.approx(expected, rel=1e-15)
    assert constant == 2.0


def test_the_seed_a_caller_passes_is_not_changed():
    vjp, ans = make_vjp(lambda x: np.sin(np.sin(x) * x + 0.5) + 1.0)(0.3)
    seed = onp.float64(1.5)
    cot = vjp(seed)
    assert seed == 1.5
    assert type(cot) is onp.float64
    again = vjp(onp.float64(1.5))
    assert cot == again
