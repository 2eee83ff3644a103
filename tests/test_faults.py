"""Faults during differentiation leave no trace behind.

An exception raised inside the user's function (the forward pass), inside a user's
gradient rule (the backward pass), or a KeyboardInterrupt arriving at any moment of
either pass, must leave the process as it was: the cyclic garbage collector enabled
again, no backward pass marked as running, no cotangent left pending on a kept graph,
and the next ``grad`` in the same thread correct -- also when it reuses a graph whose
backward pass was interrupted.
"""
import _thread
import gc
import random
import sys
import threading
import time
import weakref

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as np
from fastgrad import _gc
from fastgrad.extend import defjvp, defvjp, defvjp_argnum, defvjp_argnums, primitive

pytestmark = pytest.mark.fastgrad_only

X0 = onp.array([0.3, -0.7, 1.1, 2.0])


def reference(x):
    return np.sum(np.sin(x) * x) + np.sum(x[[0, 0, 3]] ** 2)


def reference_grad(x):
    g = onp.cos(x) * x + onp.sin(x)
    g[0] += 4 * x[0]
    g[3] += 2 * x[3]
    return g


class Fault(Exception):
    """The exception the tests raise on purpose."""


class FatalFault(BaseException):
    """Not an Exception: like KeyboardInterrupt or SystemExit, it must not be swallowed."""


@pytest.fixture(autouse=True)
def gc_was_enabled():
    assert gc.isenabled(), "the collector was disabled before the test"
    yield
    gc.enable()


# A graph kept for the whole module: its backward pass is run (and interrupted) many times.
_KEPT = {}


def kept_graph():
    if "vjp" not in _KEPT:
        _KEPT["vjp"], _ = fastgrad.make_vjp(lambda x: np.sin(x) * x + x[[1, 1, 2, 3]] ** 2)(X0)
    return _KEPT["vjp"]


def kept_graph_expected(u):
    g = u * (onp.cos(X0) * X0 + onp.sin(X0))
    extra = onp.zeros(4)
    onp.add.at(extra, [1, 1, 2, 3], u * 2 * X0[[1, 1, 2, 3]])
    return g + extra


def assert_clean_state():
    """The collector is on, no differentiation is in progress, and gradients are right."""
    assert gc.isenabled(), "the garbage collector was left disabled"
    assert _gc._depth == 0, "fastgrad thinks a differentiation is still running"
    g = fastgrad.grad(reference)(X0)
    assert type(g) is onp.ndarray
    onp.testing.assert_allclose(g, reference_grad(X0), rtol=1e-14)
    u = onp.array([1.0, -2.0, 0.5, 3.0])
    onp.testing.assert_allclose(kept_graph()(u), kept_graph_expected(u), rtol=1e-14)
    second = fastgrad.elementwise_grad(fastgrad.grad(lambda x: np.sum(np.sin(x) * x)))(X0)
    onp.testing.assert_allclose(second, 2 * onp.cos(X0) - X0 * onp.sin(X0), rtol=1e-14)


# ---------------------------------------------------------------------------------------
# Exceptions raised in the forward pass

def _raise(exc_type):
    raise exc_type("raised on purpose")


def _many_then_raise(x):
    for _ in range(200):
        x = np.sin(x) * 1.01
    raise Fault("after 400 primitives")


FORWARD_FAULTS = {
    "before-any-primitive": lambda x: _raise(Fault),
    "after-many-primitives": _many_then_raise,
    "in-numpy": lambda x: np.sum(np.dot(x, onp.ones(3))),          # shape mismatch in NumPy
    "in-indexing": lambda x: x[10],
    "in-a-nested-grad": lambda x: fastgrad.grad(lambda y: _raise(Fault))(x[0]) * x[1],
    "in-a-container": lambda x: fastgrad.dict(a=x)["b"],
    "non-exception": lambda x: np.sum(x) * _raise(FatalFault),
    "keyboard-interrupt": lambda x: np.sum(np.tanh(x)) * _raise(KeyboardInterrupt),
}
EXPECTED = {"in-numpy": ValueError, "in-indexing": IndexError, "in-a-container": KeyError,
            "non-exception": FatalFault, "keyboard-interrupt": KeyboardInterrupt}


@pytest.mark.parametrize("op", ["grad", "value_and_grad", "elementwise_grad", "make_vjp",
                                "jacobian", "hessian", "grad-of-grad", "deriv"])
@pytest.mark.parametrize("where", list(FORWARD_FAULTS))
def test_exception_in_the_forward_pass(where, op):
    f = FORWARD_FAULTS[where]
    expected = EXPECTED.get(where, Fault)
    if op == "grad-of-grad":
        run = fastgrad.elementwise_grad(fastgrad.grad(lambda x: np.sum(f(x))))
    elif op in ("grad", "value_and_grad"):
        run = getattr(fastgrad, op)(lambda x: np.sum(f(x)))
    else:
        run = getattr(fastgrad, op)(f)
    with pytest.raises(expected):
        run(X0.copy())
    assert_clean_state()


def test_exception_in_the_raw_function_of_a_user_primitive():
    @primitive
    def fragile(x):
        if onp.any(x > 10):
            raise Fault("too big")
        return x * 2.0

    defvjp(fragile, lambda ans, x: lambda g: 2.0 * g)
    with pytest.raises(Fault):
        fastgrad.grad(lambda x: np.sum(fragile(x * 100.0)))(X0)
    assert_clean_state()
    onp.testing.assert_allclose(fastgrad.grad(lambda x: np.sum(fragile(x)))(X0), 2.0)


# ---------------------------------------------------------------------------------------
# Exceptions raised by user rules in the backward pass

def _make_faulty(kind, exc_type):
    """A user primitive ``3 x`` whose rule, registered in the ``kind`` form, raises
    ``exc_type`` while the returned switch is on."""
    switch = {"on": True}

    @primitive
    def triple(x):
        return x * 3.0

    def grad_of(g):
        if switch["on"]:
            raise exc_type("rule failed on purpose")
        return 3.0 * g

    if kind == "maker-raises":
        def maker(ans, x):
            if switch["on"]:
                raise exc_type("maker failed on purpose")
            return lambda g: 3.0 * g
        defvjp(triple, maker)
    elif kind == "vjp-raises":
        defvjp(triple, lambda ans, x: grad_of)
    elif kind == "argnum-rule":
        defvjp_argnum(triple, lambda argnum, ans, args, kwargs: grad_of)
    elif kind == "argnums-rule":
        defvjp_argnums(triple, lambda argnums, ans, args, kwargs: lambda g: (grad_of(g),))
    elif kind == "wrong-shape":
        # a buggy rule: the cotangent has the wrong shape, so adding it up fails
        defvjp(triple, lambda ans, x: lambda g: onp.ones(7) if switch["on"] else 3.0 * g)
    elif kind == "nested-grad-raises":
        def nested(ans, x):
            def vjp(g):
                inner = fastgrad.grad(lambda t: np.sum(t * 3.0) + (_raise(exc_type) if switch["on"] else 0.0))
                return g * inner(x) / onp.size(x) * onp.size(x)
            return vjp
        defvjp(triple, nested)
    defjvp(triple, lambda g, ans, x: 3.0 * g)
    return triple, switch


RULE_FAULTS = ["maker-raises", "vjp-raises", "argnum-rule", "argnums-rule", "nested-grad-raises"]


def _uses_triple(triple):
    def f(x):
        a = np.sin(x)
        b = triple(a) * a          # a's cotangent gets contributions before and after the rule
        c = a * 2.0 + x[[0, 2, 2]].sum()
        return np.sum(b) + np.sum(c * c)
    return f


def _triple_expected(x):
    a = onp.sin(x)
    c = a * 2.0 + x[0] + 2 * x[2]
    dc = 2 * c
    da = 6 * a + 2.0 * dc
    g = da * onp.cos(x)
    g[0] += dc.sum()
    g[2] += 2 * dc.sum()
    return g


@pytest.mark.parametrize("exc_type", [Fault, KeyboardInterrupt, FatalFault])
@pytest.mark.parametrize("kind", RULE_FAULTS + ["wrong-shape"])
def test_exception_in_a_user_rule(kind, exc_type):
    if kind == "wrong-shape" and exc_type is not Fault:
        pytest.skip("the wrong-shape rule raises NumPy's own error")
    triple, switch = _make_faulty(kind, exc_type)
    f = _uses_triple(triple)
    expected_exc = ValueError if kind == "wrong-shape" else exc_type
    with pytest.raises(expected_exc):
        fastgrad.grad(f)(X0)
    assert_clean_state()
    switch["on"] = False
    onp.testing.assert_allclose(fastgrad.grad(f)(X0), _triple_expected(X0), rtol=1e-13)


@pytest.mark.parametrize("exc_type", [Fault, KeyboardInterrupt])
@pytest.mark.parametrize("kind", RULE_FAULTS + ["wrong-shape"])
def test_failed_backward_pass_over_a_kept_graph_leaves_nothing_pending(kind, exc_type):
    # The same graph is pulled back again after its pass failed half way: contributions
    # the failed pass had already summed must not be counted again.
    if kind == "wrong-shape" and exc_type is not Fault:
        pytest.skip("the wrong-shape rule raises NumPy's own error")
    triple, switch = _make_faulty(kind, exc_type)
    vjp, ans = fastgrad.make_vjp(_uses_triple(triple))(X0)
    with pytest.raises(ValueError if kind == "wrong-shape" else exc_type):
        vjp(1.0)
    with pytest.raises(ValueError if kind == "wrong-shape" else exc_type):
        vjp(1.0)   # fails the same way the second time
    switch["on"] = False
    expected = _triple_expected(X0)
    onp.testing.assert_allclose(vjp(1.0), expected, rtol=1e-13)
    onp.testing.assert_allclose(vjp(2.0), 2 * expected, rtol=1e-13)
    assert_clean_state()


def test_rule_failing_inside_the_backward_pass_of_a_graph_in_use():
    # A rule that itself pulls back through the same kept graph (a second pass over a
    # graph whose first pass is running), then fails: both passes must unwind cleanly.
    state = {"vjp": None, "fail": True, "depth": 0}

    @primitive
    def reenter(x):
        return x * 1.0

    def maker(ans, x):
        def vjp(g):
            if state["depth"] == 0:
                state["depth"] += 1
                try:
                    inner = state["vjp"](onp.ones(4))   # the same graph, re-entered once
                finally:
                    state["depth"] -= 1
                onp.testing.assert_allclose(inner, onp.cos(X0) + 1.0, rtol=1e-14)
                if state["fail"]:
                    raise Fault("after re-entering")
            return g
        return vjp
    defvjp(reenter, maker)
    vjp, _ = fastgrad.make_vjp(lambda x: np.sin(reenter(x)) + x)(X0)
    state["vjp"] = vjp
    with pytest.raises(Fault):
        vjp(onp.ones(4))
    state["fail"] = False
    onp.testing.assert_allclose(vjp(onp.ones(4)), onp.cos(X0) + 1.0, rtol=1e-14)
    assert_clean_state()


def test_failed_pass_releases_the_cotangents_it_had_summed():
    # After a failure, a kept graph must not hold on to the failed pass's cotangents.
    seen = []

    @primitive
    def spy(x):
        return x * 1.0

    def spy_maker(ans, x):
        def vjp(g):
            seen.append(weakref.ref(g))
            return g
        return vjp
    defvjp(spy, spy_maker)
    triple, switch = _make_faulty("vjp-raises", Fault)

    def f(x):
        a = spy(np.sin(x) * 1.5)                  # cotangent arrays reach spy's rule first
        return np.sum(triple(a * 2.0)) + np.sum(a * a)
    vjp, _ = fastgrad.make_vjp(f)(X0)
    try:
        vjp(1.0)
    except Fault:
        pass
    gc.collect()
    alive = [r for r in seen if r() is not None]
    assert not alive, "a failed backward pass left cotangents alive on the kept graph"
    switch["on"] = False
    a = onp.sin(X0) * 1.5
    onp.testing.assert_allclose(vjp(1.0), (6.0 + 2 * a) * 1.5 * onp.cos(X0), rtol=1e-13)


def test_graph_of_a_failed_trace_is_freed():
    refs = []

    def f(x):
        y = np.sin(x) * 2.0
        refs.append(weakref.ref(fastgrad.stop_gradient(y)))
        z = np.exp(y)
        refs.append(weakref.ref(fastgrad.stop_gradient(z)))
        refs.append(weakref.ref(z))
        raise Fault("after building part of a graph")

    try:
        fastgrad.grad(f)(X0)
    except Fault:
        pass
    gc.collect()
    assert len(refs) == 3
    assert all(r() is None for r in refs), "values of the failed trace are still alive"
    assert_clean_state()


# ---------------------------------------------------------------------------------------
# A KeyboardInterrupt arriving at an arbitrary moment (as Ctrl-C does)

@pytest.fixture
def fast_thread_switching():
    """Switch threads every 20 us so that the interrupting thread runs when it should."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(2e-5)
    yield
    sys.setswitchinterval(old)


def _spin():
    total = 0
    for i in range(2000):
        total += i
    return total


def _interrupted_call(call, trigger, delay):
    """Run ``call()``; ``delay`` seconds after ``trigger`` is set, the main thread gets a
    KeyboardInterrupt.  -> "interrupted" or "finished"."""
    fired = threading.Event()

    def interrupter():
        if trigger.wait(5.0):
            time.sleep(delay)
        _thread.interrupt_main()
        fired.set()

    helper = threading.Thread(target=interrupter, daemon=True)
    outcome = "finished"
    try:
        try:
            helper.start()
            call()
        finally:
            # the interrupt may be in flight: let it land inside this try
            while not fired.wait(0.001):
                pass
            _spin()
    except KeyboardInterrupt:
        outcome = "interrupted"
    helper.join()
    return outcome


def _long_chain(n, phase, trigger, first_rule_trigger):
    @primitive
    def mark(x):
        return x

    def mark_maker(ans, x):
        def vjp(g):
            phase["now"] = "backward"
            first_rule_trigger.set()
            return g
        return vjp
    defvjp(mark, mark_maker)

    def f(x):
        phase["now"] = "forward"
        trigger.set()
        for _ in range(n):
            x = np.sin(x) * 1.0001 + x * 0.5
        return np.sum(mark(x))
    return f


def _chain_grad(x, n):
    g = onp.ones_like(x)
    values = []
    for _ in range(n):
        values.append(x)
        x = onp.sin(x) * 1.0001 + x * 0.5
    for v in reversed(values):
        g = g * (onp.cos(v) * 1.0001 + 0.5)
    return g


@pytest.mark.parametrize("target", ["forward", "backward"])
def test_keyboard_interrupt_at_random_moments(target, fast_thread_switching):
    n = 1000
    x = onp.array([0.1, 0.7, -0.4])
    phase = {"now": None}
    start, first_rule = threading.Event(), threading.Event()
    f = _long_chain(n, phase, start, first_rule)
    expected = _chain_grad(x, n)

    # how long is each pass, uninterrupted?
    t0 = time.perf_counter()
    onp.testing.assert_allclose(fastgrad.grad(f)(x), expected, rtol=1e-12)
    total = time.perf_counter() - t0
    rng = random.Random(20240611)
    hits = {"forward": 0, "backward": 0}
    trigger = start if target == "forward" else first_rule
    for attempt in range(40):
        start.clear()
        first_rule.clear()
        phase["now"] = None
        delay = rng.uniform(0.0, 0.25 * total)
        outcome = _interrupted_call(lambda: (fastgrad.grad(f)(x), phase.update(now="done")),
                                    trigger, delay)
        if outcome == "interrupted":
            hits[phase["now"]] = hits.get(phase["now"], 0) + 1
        assert gc.isenabled() and _gc._depth == 0
        onp.testing.assert_allclose(fastgrad.grad(f)(x), expected, rtol=1e-12)
        if hits[target] >= 8:
            break
    assert hits[target] >= 3, "the interrupts did not land in the {} pass: {}".format(target, hits)
    assert_clean_state()


def test_keyboard_interrupt_in_the_backward_pass_of_a_kept_graph(fast_thread_switching):
    n = 1000
    x = onp.array([0.1, 0.7, -0.4])
    phase = {"now": None}
    start, first_rule = threading.Event(), threading.Event()
    vjp, _ = fastgrad.make_vjp(_long_chain(n, phase, start, first_rule))(x)
    expected = _chain_grad(x, n)
    t0 = time.perf_counter()
    onp.testing.assert_allclose(vjp(1.0), expected, rtol=1e-12)
    total = time.perf_counter() - t0
    rng = random.Random(7)
    interrupted = 0
    for attempt in range(30):
        first_rule.clear()
        outcome = _interrupted_call(lambda: vjp(1.0), first_rule, rng.uniform(0.0, 0.6 * total))
        interrupted += outcome == "interrupted"
        # the same graph, pulled back again: nothing of the interrupted pass is left
        onp.testing.assert_allclose(vjp(1.0), expected, rtol=1e-12)
        onp.testing.assert_allclose(vjp(-2.0), -2.0 * expected, rtol=1e-12)
        if interrupted >= 8:
            break
    assert interrupted >= 3
    assert_clean_state()


# ---------------------------------------------------------------------------------------
# A fault in one thread does not disturb the others

def test_fault_in_one_thread_while_others_differentiate():
    errors, done = [], []
    barrier = threading.Barrier(3)

    def worker(k):
        try:
            barrier.wait()
            for i in range(200):
                x = X0 * (1.0 + 0.01 * k) + 0.001 * i
                g = fastgrad.grad(reference)(x)
                onp.testing.assert_allclose(g, reference_grad(x), rtol=1e-13)
            done.append(k)
        except BaseException as exc:   # report everything to the main thread
            errors.append(exc)

    def faulty():
        barrier.wait()
        for i in range(200):
            try:
                fastgrad.grad(lambda x: np.sum(np.sin(x)) * _raise(Fault) if i % 2 else
                              np.sum(x) * _uses_failing_rule(x))(X0)
            except Fault:
                pass
            except BaseException as exc:
                errors.append(exc)
                return
        done.append("faulty")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    threads.append(threading.Thread(target=faulty))
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert sorted(map(str, done)) == ["0", "1", "faulty"]
    assert_clean_state()


@primitive
def _failing(x):
    return x * 1.0


def _failing_maker(ans, x):
    def vjp(g):
        raise Fault("a rule fails in the backward pass")
    return vjp


defvjp(_failing, _failing_maker)


def _uses_failing_rule(x):
    return np.sum(_failing(x) * x)
