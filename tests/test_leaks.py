"""No leaks: repeated gradients keep memory flat, graphs die when ``grad`` returns, no
reference cycles are made per call, and no reference to any object is gained or lost.

- tracemalloc (which also sees NumPy's data buffers) and the interpreter's block count
  stay flat over 10,000 ``grad`` calls on the W3 and W8 workloads of PERF.md, after a
  warm-up;
- every box, node, intermediate value and cotangent of a differentiation is unreachable
  once the operator returns, by reference counting alone (the collector disabled);
- the cyclic collector finds nothing to collect after many calls;
- reference counts of the user's inputs, constants, functions, rules and of the common
  singletons are the same before and after (a compiled engine that leaks or steals one
  reference per call shows up here, even where no memory is allocated).

FASTGRAD_LEAK_CALLS overrides the number of repeated calls (the memcheck script lowers it).
"""

import gc
import os
import sys
import tracemalloc
import weakref

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as np
from fastgrad.extend import defvjp, primitive
from fastgrad.numpy.numpy_boxes import ArrayBox
from workloads import make_case

pytestmark = pytest.mark.fastgrad_only

CALLS = int(os.environ.get("FASTGRAD_LEAK_CALLS", "10000"))
WARMUP = min(300, max(CALLS // 10, 20))
# Interpreter blocks may creep up by a few hundred as internal tables settle (measured:
# +360 over 3,000 W8 calls, then +1 per 200 calls); one leaked object per call is +CALLS.
BLOCK_SLACK = 500 + CALLS // 20


class GcDisabled:
    def __enter__(self):
        gc.collect()
        self.was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        if self.was_enabled:
            gc.enable()


def _grad_call(wid):
    fun, args, argnum = make_case(wid, np)
    g = fastgrad.grad(fun, argnum)
    return lambda: g(*args)


def _flat_memory(call, calls, warmup, checkpoints=10, traced_calls=None):
    """Run ``call`` ``warmup + calls`` times.  -> (growth in traced bytes after the warm-up,
    growth in allocated interpreter blocks, the traced byte series).

    ``traced_calls`` limits tracemalloc (slow) to the last that many calls; the block
    count covers all of them.  The interpreter keeps freed tuples, floats, lists... in
    free lists, which tracemalloc counts as allocated; a full collection empties them.
    So tracing starts right after a collection and the baselines are taken a few calls
    later, when the free lists are full again (of traced objects)."""
    traced_calls = calls if traced_calls is None else min(traced_calls, calls)
    untraced = calls - traced_calls
    for _ in range(warmup):
        call()
    gc.collect()
    for _ in range(5):
        call()
    blocks0 = sys.getallocatedblocks()
    for _ in range(untraced):
        call()
    gc.collect()
    tracemalloc.start(1)
    try:
        for _ in range(min(warmup, 20)):  # the free lists fill with traced objects
            call()
        base = tracemalloc.get_traced_memory()[0]
        series = []
        step = max(traced_calls // checkpoints, 1)
        done = 0
        while done < traced_calls:
            n = min(step, traced_calls - done)
            for _ in range(n):
                call()
            done += n
            series.append(tracemalloc.get_traced_memory()[0] - base)
    finally:
        tracemalloc.stop()
    blocks = sys.getallocatedblocks() - blocks0
    return max(series), blocks, series


def test_w3_memory_flat_over_repeated_grads():
    growth, blocks, series = _flat_memory(_grad_call("W3"), CALLS, WARMUP)
    # a leak of one 16-byte object per call would be 160 kB over 10,000 calls
    assert growth < 32 * 1024, "traced memory grew by {} bytes: {}".format(growth, series)
    assert blocks < BLOCK_SLACK, "{} more interpreter blocks after {} calls".format(blocks, CALLS)


@pytest.mark.slow
def test_w8_memory_flat_over_repeated_grads():
    # W8 is 3,000 primitives per call; tracemalloc (~5x slower) watches the last 300 calls,
    # the interpreter's block count all of them
    growth, blocks, series = _flat_memory(_grad_call("W8"), CALLS, WARMUP // 3, traced_calls=300)
    assert growth < 32 * 1024, "traced memory grew by {} bytes: {}".format(growth, series)
    assert blocks < BLOCK_SLACK, "{} more interpreter blocks after {} calls".format(blocks, CALLS)


def test_memory_flat_over_repeated_kept_graphs():
    # make_vjp keeps its graph alive while the vjp is; dropping it must free it all
    fun, args, _ = make_case("W3", np)
    params, X, Y = args

    def call():
        vjp, ans = fastgrad.make_vjp(lambda p: fun(p, X, Y))(params)
        vjp(1.0)
        vjp(2.0)

    growth, blocks, series = _flat_memory(call, max(CALLS // 5, 100), WARMUP)
    assert growth < 32 * 1024, series
    assert blocks < BLOCK_SLACK


def test_memory_flat_over_repeated_second_order():
    x = onp.linspace(-1.0, 1.0, 5)
    h = fastgrad.elementwise_grad(fastgrad.grad(lambda x: np.sum(np.tanh(x) * x**2)))
    growth, blocks, series = _flat_memory(lambda: h(x), max(CALLS // 5, 100), WARMUP)
    assert growth < 32 * 1024, series
    assert blocks < BLOCK_SLACK


class _Fault(Exception):
    pass


@primitive
def _fails_backward(x):
    return x * 1.0


def _fails_backward_maker(ans, x):
    def vjp(g):
        raise _Fault("backward")

    return vjp


defvjp(_fails_backward, _fails_backward_maker)


def _failing_forward(x):
    np.sin(x) * x  # part of a graph, then the fault
    raise _Fault("forward, after part of a graph")


FAILURES = {
    "forward": lambda x: _failing_forward(x),
    "numpy": lambda x: np.sum(np.dot(np.tanh(x), onp.ones(7))),
    "backward": lambda x: np.sum(_fails_backward(np.exp(x)) * x),
}


@pytest.mark.parametrize("where", list(FAILURES))
def test_memory_flat_over_repeated_failures(where):
    # the error paths (Python and compiled) release everything they had built
    g = fastgrad.grad(FAILURES[where])
    x = onp.linspace(0.1, 0.5, 5)

    def call():
        try:
            g(x)
        except (_Fault, ValueError):
            pass
        else:
            raise AssertionError("no failure")

    growth, blocks, series = _flat_memory(call, max(CALLS // 5, 100), WARMUP)
    assert growth < 32 * 1024, series
    assert blocks < BLOCK_SLACK


# ---------------------------------------------------------------------------------------
# Every graph object is unreachable when the operator returns


def _spy():
    """A user primitive (identity) whose rule records a weak reference to each cotangent."""
    cotangents = []

    @primitive
    def spy(x):
        return x

    def maker(ans, x):
        def vjp(g):
            cotangents.append(weakref.ref(g) if isinstance(g, onp.ndarray) else None)
            return g

        return vjp

    defvjp(spy, maker)
    return spy, cotangents


class Recorder:
    """Weak references to every box, node and value seen while tracing."""

    def __init__(self):
        self.refs = []

    def __call__(self, value):
        for obj in (value, getattr(value, "_node", None), fastgrad.stop_gradient(value)):
            try:
                self.refs.append((type(obj).__name__, weakref.ref(obj)))
            except TypeError:  # floats and None cannot be weakly referenced
                pass
        return value

    def alive(self):
        return [name for name, r in self.refs if r() is not None]


def _mlp_recorded(record, spy):
    def f(params, X, Y):
        h = X
        for i, (W, b) in enumerate(params):
            z = record(record(h @ W) + b)
            h = record(np.tanh(z)) if i < len(params) - 1 else z
        return np.mean(record(spy((h - Y) ** 2)))

    return f


def _indexing_recorded(record, spy):
    def f(x):
        s = 0.0
        for i in range(50):
            s = s + record(x[i]) * record(spy(x[i]))
        return record(s)

    return f


OPERATORS = {
    "grad": lambda f, argnum: fastgrad.grad(f, argnum),
    "value_and_grad": lambda f, argnum: fastgrad.value_and_grad(f, argnum),
    "make_vjp": lambda f, argnum: lambda *a: fastgrad.make_vjp(f, argnum)(*a)[0](1.0),
    "grad_of_sum": lambda f, argnum: fastgrad.elementwise_grad(f, argnum),
    "checkpoint": lambda f, argnum: fastgrad.grad(fastgrad.checkpoint(f), argnum),
}


@pytest.mark.parametrize("op", list(OPERATORS))
@pytest.mark.parametrize("wid", ["W3", "W8"])
def test_graph_unreachable_when_the_operator_returns(wid, op):
    record = Recorder()
    spy, cotangents = _spy()
    _, args, argnum = make_case(wid, np)
    if wid == "W3":
        f = _mlp_recorded(record, spy)
    else:
        f = _indexing_recorded(record, spy)
    with GcDisabled():
        result = OPERATORS[op](f, argnum)(*args)
        assert record.refs, "nothing was recorded"
        alive = record.alive()
        assert not alive, "still alive after {}: {}".format(op, sorted(set(alive)))
        assert cotangents and all(r is None or r() is None for r in cotangents), "cotangents alive after {}".format(op)
    del result


def test_graph_unreachable_after_higher_order_and_containers():
    record = Recorder()

    def f(d):
        a = record(np.sin(d["x"]) * d["y"][0])
        pair = fastgrad.tuple([a, record(d["y"][1] * 2.0)])
        return np.sum(record(pair[0] * pair[1]))

    d = {"x": onp.array([0.1, 0.2]), "y": [onp.array([1.0, 2.0]), 3.0]}
    with GcDisabled():
        fastgrad.grad(f)(d)
        fastgrad.grad(lambda x: np.sum(fastgrad.grad(lambda t: np.sum(record(np.sin(t) * t)))(x) ** 2))(
            onp.array([0.3, 0.4])
        )
        fastgrad.hessian(lambda x: np.sum(record(np.tanh(x)) ** 3))(onp.array([0.3, 0.4]))
        alive = record.alive()
    assert record.refs and not alive, sorted(set(alive))


def test_graph_of_make_vjp_dies_with_the_vjp():
    record = Recorder()
    spy, cotangents = _spy()
    with GcDisabled():
        vjp, ans = fastgrad.make_vjp(lambda x: spy(record(np.sin(x)) * record(x * 2.0)))(onp.array([0.5, 1.5]))
        vjp(onp.array([1.0, 2.0]))
        assert any(r() is not None for _, r in record.refs), "the kept graph died too early"
        del vjp
        assert not record.alive(), sorted(set(record.alive()))
        assert all(r is None or r() is None for r in cotangents)


# ---------------------------------------------------------------------------------------
# No reference cycles are created per call


def _garbage_types(call, n):
    """Types of the objects the cyclic collector would find after ``n`` calls."""
    gc.collect()
    gc.disable()
    old_flags = gc.get_debug()
    try:
        for _ in range(n):
            call()
        gc.set_debug(gc.DEBUG_SAVEALL)
        found = gc.collect()
        types = sorted({type(o).__module__ + "." + type(o).__qualname__ for o in gc.garbage})
    finally:
        gc.set_debug(old_flags)
        del gc.garbage[:]
        gc.enable()
    return found, types


CYCLE_CASES = {
    "W3": _grad_call("W3"),
    "W8": _grad_call("W8"),
    "value_and_grad": lambda: fastgrad.value_and_grad(lambda x: np.sum(np.sin(x) * x))(onp.ones(3)),
    "make_vjp": lambda: fastgrad.make_vjp(lambda x: np.sin(x) * x)(onp.ones(3))[0](onp.ones(3)),
    "second-order": lambda: fastgrad.elementwise_grad(fastgrad.grad(lambda x: np.sum(x**3)))(onp.ones(3)),
    "jacobian": lambda: fastgrad.jacobian(lambda x: np.tanh(x) * 2.0)(onp.ones(3)),
    "containers": lambda: fastgrad.grad(lambda d: np.sum(d["a"] * d["b"][0]))(
        {"a": onp.ones(2), "b": [onp.ones(2), 1.0]}
    ),
    "forward-mode": lambda: fastgrad.make_jvp(lambda x: np.sin(x) * x)(onp.ones(3))(onp.ones(3)),
    "independent-output": lambda: _quiet(lambda: fastgrad.grad(lambda x: 1.0)(onp.ones(2))),
}


def _quiet(call):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call()


@pytest.mark.parametrize("name", list(CYCLE_CASES))
def test_no_reference_cycles_per_call(name):
    call = CYCLE_CASES[name]
    call()  # first-call caches (vector spaces, box types) are not per-call garbage
    n = 20 if name == "W8" else 200
    found, types = _garbage_types(call, n)
    assert found == 0, "the collector found {} objects after {} calls: {}".format(found, n, types)


# ---------------------------------------------------------------------------------------
# Reference counts


def _refcounts(objs):
    return [sys.getrefcount(o) for o in objs]


def test_refcounts_of_user_inputs_unchanged():
    fun, (params, X, Y), argnum = make_case("W3", np)
    x8 = make_case("W8", np)[1][0]
    scale = onp.array([1.0, 2.0])
    pyfloat = 1.2345678
    # (and the box class: each box holds a reference to it while it lives)
    objs = [params, X, Y, x8, scale, pyfloat, fun, ArrayBox] + [a for layer in params for a in layer] + params
    before = _refcounts(objs)
    for _ in range(3):
        fastgrad.grad(fun, argnum)(params, X, Y)
        fastgrad.value_and_grad(fun, 1)(params, X, Y)
        fastgrad.grad(make_case("W8", np)[0])(x8)
        fastgrad.grad(lambda s, k=None: np.sum(s * k))(scale, k=scale)
        fastgrad.grad(lambda t: t * pyfloat)(pyfloat)
        vjp, _ = fastgrad.make_vjp(lambda s: s * scale)(scale)
        vjp(scale)
        del vjp
    gc.collect()
    assert _refcounts(objs) == before


def test_refcounts_of_rules_primitives_and_singletons_unchanged():
    @primitive
    def cube(x):
        return x**3

    def cube_maker(ans, x):
        return lambda g: g * 3.0 * x**2

    defvjp(cube, cube_maker)
    singletons = [None, True, False, (), 0, 1, 2, 3, onp.ndarray, float, onp.float64]
    watched = [cube, cube.fun, cube_maker, np.sin, np.multiply, np.sum] + singletons
    x = onp.array([0.5, 1.5, -1.0])

    def work():
        fastgrad.grad(lambda x: np.sum(cube(np.sin(x)) * x))(x)
        fastgrad.grad(lambda x, y: np.sum(np.multiply(x, y) + cube(y)), (0, 1))(x, x)
        fastgrad.grad(lambda x: cube(x[0]) * x[1] + np.sum(x, axis=0, keepdims=True)[0])(x)
        fastgrad.grad(lambda s: cube(s) * 2.0)(0.7)

    for _ in range(20):  # caches fill up
        work()
    gc.collect()
    before = _refcounts(watched)
    for _ in range(300):
        work()
    gc.collect()
    after = _refcounts(watched)
    # per-call leaks or steals would be off by hundreds
    diffs = {repr(o)[:40]: a - b for o, a, b in zip(watched, after, before) if abs(a - b) > 20}
    assert not diffs, "reference counts drifted: {}".format(diffs)
    assert after[:6] == before[:6], "references to rules or primitives gained or lost"
