"""The PERF.md workloads W1-W9: value and gradient equal autograd's to 1e-10 relative.

The workloads are imported from benchmarks/workloads.py (one definition shared with the
benchmarks).  autograd is the oracle; without it the comparisons skip cleanly, and the
numerical (central difference) check still runs.
"""

import functools

import numpy as onp
import pytest

import workloads
from gradcheck import check_grads, check_same_space, max_relative_error, tree_leaves, tree_map

REL_TOL = 1e-10
SLOW = {"W5"}  # 100,000 primitives: runs by default, marked so it can be deselected


def _params():
    return [pytest.param(w, id=w, marks=[pytest.mark.slow] if w in SLOW else []) for w in workloads.WORKLOADS]


def _fresh_copy(args):
    return tuple(tree_map(lambda a: a.copy() if isinstance(a, onp.ndarray) else a, arg) for arg in args)


@functools.lru_cache(maxsize=None)
def _reference(wid):
    """autograd's (value, gradient) for workload wid, computed once per session."""
    import autograd
    import autograd.numpy as anp

    fun, args, argnum = workloads.make_case(wid, anp)
    return autograd.value_and_grad(fun, argnum)(*args)


@pytest.mark.parametrize("wid", _params())
def test_workload_matches_autograd(wid, ag, np, ref):
    fun, args, argnum = workloads.make_case(wid, np)
    originals = _fresh_copy(args)
    value, grad = ag.value_and_grad(fun, argnum)(*args)
    ref_value, ref_grad = _reference(wid)
    assert max_relative_error(value, ref_value) <= REL_TOL, (value, ref_value)
    check_same_space(args[argnum], grad)
    # compared leaf by leaf (W3's gradient is a list of (W, b) tuples)
    assert len(tree_leaves(grad)) == len(tree_leaves(ref_grad))
    for i, (g, r) in enumerate(zip(tree_leaves(grad), tree_leaves(ref_grad))):
        err = max_relative_error(g, r)
        assert err <= REL_TOL, f"{wid} gradient leaf {i}: relative error {err:.3g}"
    # the inputs are caller-owned: untouched
    for a, b in zip(tree_leaves(args), tree_leaves(originals)):
        assert onp.array_equal(a, b)


@pytest.mark.parametrize("wid", _params())
def test_workload_types_match_autograd(wid, ag, np, ref):
    """Drop-in: the value and gradient leaves have autograd's Python types and dtypes."""
    fun, args, argnum = workloads.make_case(wid, np)
    value, grad = ag.value_and_grad(fun, argnum)(*args)
    ref_value, ref_grad = _reference(wid)
    assert type(value) is type(ref_value), (type(value), type(ref_value))
    assert type(grad) is type(ref_grad)
    for g, r in zip(tree_leaves(grad), tree_leaves(ref_grad)):
        assert type(g) is type(r) and onp.result_type(g) == onp.result_type(r)


@pytest.mark.parametrize("wid", _params())
def test_workload_numerical_gradient(wid, ag, np):
    """First-order check against central differences (independent of autograd)."""
    fun, args, argnum = workloads.make_case(wid, np)
    check_grads(fun, *args, order=1, argnums=argnum, module=ag, rtol=1e-6, atol=1e-7)


def test_grad_repeated_calls_are_identical(ag, np):
    # no state leaks between calls: the same workload twice gives bit-identical results
    fun, args, argnum = workloads.make_case("W3", np)
    g1 = ag.grad(fun, argnum)(*args)
    g2 = ag.grad(fun, argnum)(*args)
    for a, b in zip(tree_leaves(g1), tree_leaves(g2)):
        assert onp.array_equal(a, b)
