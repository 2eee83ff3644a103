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
import contextlib
import dis
import random
import signal
import sys
import threading
import time
import types
import weakref

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as np
from fastgrad.extend import defjvp, defvjp, defvjp_argnum, defvjp_argnums, primitive

pytestmark = pytest.mark.fastgrad_only

X0 = onp.array([0.3, -0.7, 1.1, 2.0])


class Hang(BaseException):
    """Raised by the watchdog: the code under test blocked (a lock left held...)."""


@contextlib.contextmanager
def watchdog(seconds, what):
    """Fail with Hang instead of blocking forever (a blocked lock acquire is interruptible
    by signals).  Main thread, Unix only; elsewhere, no watchdog."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        raise Hang("{} (no progress for {} s)".format(what, seconds))

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


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
    # A failed test may leave fastgrad's count of collector pauses too high, which would
    # hide the same fault in the tests after it: end any pause left over, then switch the
    # collector on.
    from fastgrad._engine import engine

    for _ in range(1000):
        if engine.gc_pause_depth() == 0:
            break
        engine.resume_gc()
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
    """The collector is on, no differentiation is in progress, and gradients are right.

    (A pause of the collector that was never ended shows as a collector still disabled
    after the next, complete, differentiation.)"""
    assert gc.isenabled(), "the garbage collector was left disabled"
    with watchdog(60, "grad hangs after the fault"):
        g = fastgrad.grad(reference)(X0)
    assert gc.isenabled(), "a pause of the garbage collector was never ended"
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
    "in-numpy": lambda x: np.sum(np.dot(x, onp.ones(3))),  # shape mismatch in NumPy
    "in-indexing": lambda x: x[10],
    "in-a-nested-grad": lambda x: fastgrad.grad(lambda y: _raise(Fault))(x[0]) * x[1],
    "in-a-container": lambda x: fastgrad.dict(a=x)["b"],
    "non-exception": lambda x: np.sum(x) * _raise(FatalFault),
    "keyboard-interrupt": lambda x: np.sum(np.tanh(x)) * _raise(KeyboardInterrupt),
}
EXPECTED = {
    "in-numpy": ValueError,
    "in-indexing": IndexError,
    "in-a-container": KeyError,
    "non-exception": FatalFault,
    "keyboard-interrupt": KeyboardInterrupt,
}


@pytest.mark.parametrize(
    "op", ["grad", "value_and_grad", "elementwise_grad", "make_vjp", "jacobian", "hessian", "grad-of-grad", "deriv"]
)
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
        b = triple(a) * a  # a's cotangent gets contributions before and after the rule
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
        vjp(1.0)  # fails the same way the second time
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
                    inner = state["vjp"](onp.ones(4))  # the same graph, re-entered once
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
        a = spy(np.sin(x) * 1.5)  # cotangent arrays reach spy's rule first
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
    fired = _Flag()  # (set by the helper thread: an Event could be left locked by the interrupt)

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


class _Flag:
    """What the tests use of a threading.Event, safe from a real Ctrl-C: setting and
    clearing are one store each, waiting polls.  (An Event takes a lock in ``set``; a signal
    landing right after the acquire leaves it taken, and the next ``set`` blocks for good.)"""

    def __init__(self):
        self._on = False

    def set(self):
        self._on = True

    def clear(self):
        self._on = False

    def is_set(self):
        return self._on

    def wait(self, timeout):
        deadline = time.monotonic() + timeout
        while not self._on:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0002)
        return True


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

    # NumPy's rules are compiled: a user rule in Python every step gives the backward
    # pass Python code to be interrupted in, as the forward pass has the user's loop
    @primitive
    def same(x):
        return x

    def same_maker(ans, x):
        def vjp(g):
            return g

        return vjp

    defvjp(same, same_maker)

    def f(x):
        phase["now"] = "forward"
        trigger.set()
        for _ in range(n):
            x = np.sin(x) * 1.0001 + same(x) * 0.5
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


def _engine_reports_its_own_lines():
    """True for a line-tracing (debug) build of the compiled engine: its functions report
    lines to sys.settrace, and Cython's tracing does not survive a tracer that raises or
    is swapped while compiled frames run -- an artefact of that build, not of the
    engine's behaviour, so the tests that inject exceptions from a tracer skip it."""
    if not fastgrad.COMPILED:
        return False
    from fastgrad.tracer import getval

    seen = []

    def tracer(frame, event, arg):
        seen.append(frame.f_code.co_filename)
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        getval(1.0)
        fastgrad.grad(lambda x: x * 2.0)(1.0)
    except TypeError:
        # Cython 3.3.1's line tracing on CPython 3.11 fails under any tracer ("'NoneType'
        # object is not callable"), even in a four-line module
        return True
    finally:
        sys.settrace(previous)
    return any(name.endswith(".pyx") for name in seen)


needs_plain_build = pytest.mark.skipif(
    _engine_reports_its_own_lines(),
    reason="line-tracing debug build of the engine: tracer-injected interrupts conflict with Cython's own tracing",
)

_LOOP_HEADS = {}
_WRAPPER_CODES = set()  # Python stand-ins for compiled functions (see visible_gc_pause)


def _loop_heads(code):
    """Offsets of ``code`` that a jump back to (the interpreter checks for signals on
    those jumps) lands on."""
    heads = _LOOP_HEADS.get(code)
    if heads is None:
        heads = set()
        for inst in dis.get_instructions(code):
            if inst.opcode in dis.hasjrel or inst.opcode in dis.hasjabs:
                if isinstance(inst.argval, int) and inst.argval < inst.offset and "NO_INTERRUPT" not in inst.opname:
                    heads.add(inst.argval)
        _LOOP_HEADS[code] = heads
    return heads


def _unguardable_moments():
    """The moments of the pure engine's pause of the collector that _interrupt_at leaves out,
    as {code: trace event}.  Its GCPause is written in Python, and a with statement cannot
    make a Python context manager atomic:
    - "call" of resume_gc (its __exit__): CPython does deliver a Ctrl-C on entering a Python
      function, before its first line, and the with statement does not call __exit__ again,
      so that pause is never ended.  No Python code can guard this moment (PEP 419 proposed
      interpreter support for it and was deferred); it is a known limit of the pure engine.
    - "return" of pause_gc (its __enter__): not a moment of CPython's with statement, which
      checks for signals only inside its block once __enter__ has returned (so __exit__
      runs); a tracer raising at that return is something CPython itself never does.
    Every other moment inside the pause is tested (pause_gc undoes a pause it was
    interrupted in).  The compiled GCPause is C code, has neither moment, and is tested
    at all of its moments."""
    if fastgrad.COMPILED:
        return {}
    from fastgrad._engine import engine

    block = engine.RecomputeBlock  # (the same two moments of the recompute block's with)
    return {
        engine.resume_gc.__code__: "call",
        engine.pause_gc.__code__: "return",
        block.__exit__.__code__: "call",
        block.__enter__.__code__: "return",
    }


_UNGUARDABLE = _unguardable_moments()


def _interrupt_at(call, trigger, k, where=None):
    """Run ``call()``, raising KeyboardInterrupt at the ``k``-th moment, counted once
    ``trigger`` is set, at which CPython (3.11) can deliver a Ctrl-C: its signal handler
    runs where the interpreter checks for pending events, which is on entering a Python
    function, on a jump back to the start of a loop, and right after a call returns (a
    Python function's, or a C function's).  These moments are the trace events call and
    return, line events that go back, and the profile event c_return.
    -> "finished" (k is past the last moment) or "interrupted"; ``where`` receives a
    description of the moment.

    Code that a garbage collection runs (the collector's callbacks, finalizers of another
    test's garbage) has no moments of ``call``'s own: CPython reports an exception raised
    there as unraisable and goes on, so an interrupt there would test nothing."""
    count = [0]
    last_line = {}  # frame -> line of its previous line event
    collecting = [False]

    def collection_starts(phase, info):
        if phase == "start":
            collecting[0] = True

    def collection_ends(phase, info):
        if phase == "stop":
            collecting[0] = False

    own = (collection_starts.__code__, collection_ends.__code__)

    def hit(frame, label):
        # (not in threading.py: the test's own Event.set must not be broken into; not in
        # .pyx: a line-tracing debug build would report lines of compiled code)
        # (nor in importlib's own code, which no test can ask to be interrupt-safe: a Ctrl-C
        # right after it takes its global import lock leaves the lock taken for other threads)
        if frame.f_code.co_filename.endswith((".pyx", "threading.py")) or frame.f_code.co_filename.startswith(
            "<frozen importlib"
        ):
            return
        if _UNGUARDABLE.get(frame.f_code) == label or collecting[0] or frame.f_code in own:
            return
        count[0] += 1
        if count[0] == k:
            if where is not None:
                if frame.f_code in _WRAPPER_CODES:  # describe the moment in the caller
                    label = "right after {}() returned".format(frame.f_locals["_original"].__name__)
                    frame = frame.f_back
                where[:] = [
                    "{}:{} in {} ({})".format(
                        frame.f_code.co_filename.rsplit("/", 1)[-1], frame.f_lineno, frame.f_code.co_name, label
                    )
                ]
            raise KeyboardInterrupt("injected")

    def tracer(frame, event, arg):
        if trigger.is_set():
            if event == "line":
                if frame.f_lasti in _loop_heads(frame.f_code) and last_line.get(id(frame), -1) >= frame.f_lineno:
                    hit(frame, "loop")
                last_line[id(frame)] = frame.f_lineno
            elif event == "return":
                last_line.pop(id(frame), None)
                hit(frame, event)
            elif event == "call" and frame.f_code not in _WRAPPER_CODES:
                hit(frame, event)
        return tracer

    def profiler(frame, event, arg):
        if trigger.is_set() and event == "c_return":
            hit(frame, "after " + getattr(arg, "__qualname__", repr(arg)))

    previous_trace, previous_profile = sys.gettrace(), sys.getprofile()
    gc.callbacks.insert(0, collection_starts)  # (the first at the start, the last at the end)
    gc.callbacks.append(collection_ends)
    sys.settrace(tracer)
    sys.setprofile(profiler)
    try:
        call()
        outcome = "finished"
    except KeyboardInterrupt:
        outcome = "interrupted"
    finally:
        sys.setprofile(previous_profile)
        sys.settrace(previous_trace)
        gc.callbacks.remove(collection_starts)
        gc.callbacks.remove(collection_ends)
    return outcome


@pytest.fixture
def visible_gc_pause(monkeypatch):
    """fastgrad's pause and resume of the collector are compiled functions, whose return
    the profiler does not report; CPython can still deliver a signal right after each of
    them returns.  Python wrappers make those moments visible to _interrupt_at (which
    ignores their entry: a compiled function has no such moment)."""
    from fastgrad import differential_operators, _gc

    for module in (differential_operators, _gc):
        for name in ("pause_gc", "resume_gc"):
            original = getattr(module, name, None)
            if original is not None and not isinstance(original, types.FunctionType):

                def wrapper(*args, _original=original, **kwargs):
                    return _original(*args, **kwargs)

                _WRAPPER_CODES.add(wrapper.__code__)
                monkeypatch.setattr(module, name, wrapper)


_DEFAULT_ERR = onp.geterr()


def _every_moment(run, trigger, again, expected, limit=20000):
    """Interrupt ``run`` at each of its moments in turn, checking the state after each.
    -> the number of moments."""
    for k in range(1, limit):
        where = []
        if _interrupt_at(run, trigger, k, where) == "finished":
            return k - 1
        _check_after_interrupt(k, where, again, expected)
    raise AssertionError("more than {} moments".format(limit))


def _cache_users():
    """Differentiations the buffer cache counts as in progress (0 without the cache)."""
    from fastgrad._engine import engine

    return engine.buffer_cache_state()[1]


def _check_after_interrupt(k, where, again, expected):
    """After an interrupt: no lock left held (the next call would block), the collector
    on, NumPy's floating-point handling as it was, and the next differentiation correct
    and leaving the buffer cache free."""
    context = "after an interrupt at moment {} ({})".format(k, where[0] if where else "?")
    assert gc.isenabled(), "the garbage collector is left disabled " + context
    assert onp.geterr() == _DEFAULT_ERR, "NumPy's error state is left changed " + context
    with watchdog(30, "the next differentiation blocks " + context):
        result = again()
    assert gc.isenabled(), "a pause of the collector never ended " + context
    assert _cache_users() == 0, "the buffer cache is left held " + context
    onp.testing.assert_allclose(result, expected, rtol=1e-12, err_msg=context)


@needs_plain_build
@pytest.mark.parametrize("target", ["forward", "backward"])
def test_keyboard_interrupt_at_every_moment_of_a_pass(target, visible_gc_pause):
    # every moment of a short chain: the user's loop, fastgrad's own Python code (the
    # operators, the checks, the pause of the collector) and the user rules
    n = 12
    x = onp.array([0.1, 0.7, -0.4])
    phase = {"now": None}
    start, first_rule = threading.Event(), threading.Event()
    f = _long_chain(n, phase, start, first_rule)
    expected = _chain_grad(x, n)

    def run():
        first_rule.clear()
        if target == "forward":
            start.set()  # from the very start of grad (the pause of the collector...)
        else:
            start.clear()
        fastgrad.grad(f)(x)

    moments = _every_moment(run, start if target == "forward" else first_rule, lambda: fastgrad.grad(f)(x), expected)
    assert moments > (2 * n if target == "forward" else n), moments
    assert_clean_state()


OPERATOR_RUNS = {
    "value_and_grad": lambda f, x: fastgrad.value_and_grad(lambda x: np.sum(f(x)))(x)[1],
    "elementwise_grad": lambda f, x: fastgrad.elementwise_grad(f)(x),
    "jacobian": lambda f, x: onp.sum(fastgrad.jacobian(f)(x), axis=0),
    "make_vjp": lambda f, x: fastgrad.make_vjp(f)(x)[0](onp.ones(3)),
    "grad-of-grad": lambda f, x: fastgrad.elementwise_grad(fastgrad.grad(lambda x: np.sum(f(x))))(x),
    "make_jvp": lambda f, x: fastgrad.make_jvp(f)(x)(onp.ones(3))[1],
    "hessian": lambda f, x: onp.sum(fastgrad.hessian(lambda x: np.sum(f(x)))(x), axis=0),
    "checkpoint": lambda f, x: fastgrad.grad(lambda x: np.sum(fastgrad.checkpoint(f)(x)))(x),
    # a list of arrays: fastgrad traces each array from a root of its own
    "grad-of-param-list": lambda f, x: fastgrad.grad(lambda p: np.sum(f(p[0]) * p[1][0]))([x, (onp.full(3, 2.0),)])[0],
}


@needs_plain_build
@pytest.mark.parametrize("op", list(OPERATOR_RUNS))
def test_keyboard_interrupt_at_every_moment_of_other_operators(op, visible_gc_pause):
    x = onp.array([0.1, 0.7, -0.4])
    started = threading.Event()

    def f(x):
        return np.sin(x) * x + x[[0, 0, 2]] ** 2

    def run():
        started.set()  # every moment of the operator, from its very start
        try:
            return OPERATOR_RUNS[op](f, x)
        finally:
            started.clear()

    expected = run()
    moments = _every_moment(run, started, run, expected)
    assert moments > 5, moments
    assert_clean_state()


@needs_plain_build
def test_keyboard_interrupt_at_every_moment_of_a_recomputing_gradient(visible_gc_pause):
    # inside fastgrad.recompute: the replays made while recording and the recomputation
    # in the backward pass (the block itself is the user's with statement, entered once)
    x = onp.array([0.1, 0.7, -0.4])
    started = threading.Event()
    g = fastgrad.grad(lambda x: np.sum(np.tanh(np.sin(x) * x) ** 2 + x[[0, 0, 2]] * x))

    def run():
        started.set()
        try:
            return g(x)
        finally:
            started.clear()

    expected = run()
    with fastgrad.recompute(every=2, min_bytes=0):
        onp.testing.assert_array_equal(run(), expected)
        moments = _every_moment(run, started, run, expected)
    assert moments > 20, moments
    assert_clean_state()


@needs_plain_build
def test_keyboard_interrupt_at_every_moment_of_a_recompute_block_leaves_it_closed(visible_gc_pause):
    # entering and leaving the block included: a block left open made every later gradient
    # in the process record replays (17-37x slower) until it restarted
    from fastgrad._engine import engine
    from fastgrad._hooks import HOOKS

    x = onp.array([0.1, 0.7, -0.4])
    started = threading.Event()
    g = fastgrad.grad(lambda x: np.sum(np.tanh(np.sin(x) * x) ** 2))
    expected = g(x)

    def run():
        started.set()
        try:
            with fastgrad.recompute(every=2, min_bytes=0):
                return g(x)
        finally:
            started.clear()

    for k in range(1, 20000):
        where = []
        if _interrupt_at(run, started, k, where) == "finished":
            break
        context = "after an interrupt at moment {} ({})".format(k, where[0] if where else "?")
        assert engine.open_recompute_blocks() == 0, "a recompute block is left open " + context
        assert not engine.recompute_policies(), "a recompute policy is left on the thread " + context
        assert HOOKS.record_replay is None, "the replay hook is left set " + context
        _check_after_interrupt(k, where, run, expected)
    assert k > 20, k
    assert_clean_state()


@needs_plain_build
@pytest.mark.parametrize("enable", [True, False])
def test_keyboard_interrupt_at_every_moment_of_set_debug_keeps_the_mode_and_the_hook_together(enable):
    from fastgrad._hooks import HOOKS

    started = threading.Event()

    def run():
        started.set()
        try:
            fastgrad.set_debug(enable)
        finally:
            started.clear()

    try:
        for k in range(1, 2000):
            fastgrad.set_debug(not enable)
            where = []
            outcome = _interrupt_at(run, started, k, where)
            hook_set = HOOKS.debug is not None
            mode = fastgrad.set_debug(False)  # (returns the mode it was in)
            assert mode == hook_set, "debug mode and its hook differ after an interrupt at " + str(where)
            if outcome == "finished":
                assert mode == enable
                break
        assert k > 2, k
    finally:
        fastgrad.set_debug(False)


@needs_plain_build
def test_keyboard_interrupt_at_every_moment_of_defvjp_leaves_the_old_rule_or_the_new_one():
    # a registry entry is replaced whole: never a rule for one argument new and one old
    @primitive
    def scaled(x, a):
        return x * a

    def old_rules():
        defvjp(scaled, lambda ans, x, a: lambda g: g * a, lambda ans, x, a: lambda g: g * x)

    def new_rules():
        defvjp(scaled, lambda ans, x, a: lambda g: 2.0 * g * a, lambda ans, x, a: lambda g: 2.0 * g * x)

    started = threading.Event()

    def run():
        started.set()
        try:
            new_rules()
        finally:
            started.clear()

    for k in range(1, 2000):
        old_rules()
        where = []
        outcome = _interrupt_at(run, started, k, where)
        got = fastgrad.grad(lambda x, a: scaled(x, a), argnum=(0, 1))(3.0, 5.0)
        assert got in [(5.0, 3.0), (10.0, 6.0)], "a rule half replaced after an interrupt at " + str(where)
        if outcome == "finished":
            assert got == (10.0, 6.0)
            break
    assert k > 2, k


@needs_plain_build
def test_keyboard_interrupt_at_every_moment_of_importing_an_array_library_registers_it_whole(tmp_path, monkeypatch):
    # An interrupt while a watched library is imported fails that import (the module leaves
    # sys.modules, as for any interrupted import) and must leave the library either not
    # loaded at all, so that importing it again registers it whole, or loaded whole: its
    # array type known to the registry, to boxes and to vector spaces.
    import importlib

    import fake_library
    from fastgrad import _backends
    from fastgrad.core import VSpace
    from fastgrad.tracer import Box

    monkeypatch.syspath_prepend(str(tmp_path))
    names = []
    started = threading.Event()

    def check_whole(name, where):
        backend = fake_library.loaded(name)
        assert backend is not None, "not loaded after importing it again; interrupt at " + str(where)
        t = sys.modules[name].ndarray
        assert _backends.backend_of(t()) is backend, "the type's backend is wrong; interrupt at " + str(where)
        assert t in Box.type_mappings and t in VSpace.mappings, "registered by half; interrupt at " + str(where)
        assert not _backends._watcher._busy, "a name left busy; interrupt at " + str(where)

    try:
        for k in range(1, 5000):
            name = "fg_fault_lib_{}".format(k)
            names.append(name)
            fake_library.write(tmp_path, name)
            fake_library.watch(name)
            importlib.invalidate_caches()

            def run():
                started.set()
                try:
                    importlib.import_module(name)
                finally:
                    started.clear()

            where = []
            outcome = _interrupt_at(run, started, k, where)
            if name not in sys.modules:
                importlib.import_module(name)  # (the interrupted import failed: import again)
            check_whole(name, where)
            fake_library.forget([name])  # (the registry's size, and so the moments, stay the same)
            if outcome == "finished":
                break
        assert k > 20, k
    finally:
        fake_library.forget(names)


@needs_plain_build
def test_keyboard_interrupt_at_every_moment_of_the_backward_pass_of_a_kept_graph():
    n = 12
    x = onp.array([0.1, 0.7, -0.4])
    phase = {"now": None}
    start, first_rule = threading.Event(), threading.Event()
    vjp, _ = fastgrad.make_vjp(_long_chain(n, phase, start, first_rule))(x)
    expected = _chain_grad(x, n)

    def run():
        first_rule.clear()
        return vjp(1.0)

    # the same graph, pulled back again after each interrupt: nothing of the interrupted
    # pass may be left in it
    moments = _every_moment(run, first_rule, lambda: vjp(1.0), expected)
    assert moments > n, moments
    onp.testing.assert_allclose(vjp(-2.0), -2.0 * expected, rtol=1e-12)
    assert_clean_state()


def test_real_keyboard_interrupts_from_another_thread(fast_thread_switching):
    # Ctrl-C as the OS delivers it (a signal, handled in the main thread), at random
    # moments.  Where it lands depends on scheduling, so this only requires that the
    # state is clean after every attempt; the tests above cover each moment on purpose.
    n = 1000
    x = onp.array([0.1, 0.7, -0.4])
    phase = {"now": None}
    start, first_rule = _Flag(), _Flag()
    f = _long_chain(n, phase, start, first_rule)
    expected = _chain_grad(x, n)
    t0 = time.perf_counter()
    onp.testing.assert_allclose(fastgrad.grad(f)(x), expected, rtol=1e-12)
    total = time.perf_counter() - t0
    rng = random.Random(20240611)
    landed = {"forward": 0, "backward": 0, "done": 0}
    for attempt in range(30):
        start.clear()
        first_rule.clear()
        phase["now"] = None
        outcome = _interrupted_call(
            lambda: (fastgrad.grad(f)(x), phase.update(now="done")), start, rng.uniform(0.0, 0.8 * total)
        )
        if outcome == "interrupted":
            landed[phase["now"]] += 1
        _check_after_interrupt(attempt, ["a signal, {}".format(phase["now"])], lambda: fastgrad.grad(f)(x), expected)
        if landed["forward"] >= 3 and landed["backward"] >= 3:
            break
    assert_clean_state()
    if landed["forward"] + landed["backward"] == 0:
        pytest.skip("no interrupt arrived during a pass on this (busy) machine: {}".format(landed))


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
        except BaseException as exc:  # report everything to the main thread
            errors.append(exc)

    def faulty():
        barrier.wait()
        for i in range(200):
            try:
                fastgrad.grad(
                    lambda x: np.sum(np.sin(x)) * _raise(Fault) if i % 2 else np.sum(x) * _uses_failing_rule(x)
                )(X0)
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
