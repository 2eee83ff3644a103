"""The engine's per-process state after a fork and beside other threads (issue #15).

The cyclic collector's pause and the buffer cache count the differentiations in progress
across threads.  A fork while another thread is inside a gradient call used to leave the
child with those counts up for good (the collector off, every large freed buffer kept), and
while any thread was inside one, the buffers every other thread freed were kept.  Each test
here starts real threads and real forked processes.
"""

import gc
import os
import sys
import threading
import warnings

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as np
from fastgrad._engine import engine

pytestmark = [
    pytest.mark.fastgrad_only,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only"),
]

BIG = 20 * 2**20 // 8  # float64 elements of a 20 MiB array: far above the cache's threshold


def _cache_built():
    return engine.buffer_cache_state.__module__ != "fastgrad._core_gc"


def _in_child(check):
    """Fork; the child runs ``check()`` (-> a list of failures) and exits with their count
    (texts through a pipe); the parent asserts there were none."""
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (fork with threads running)
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            failures = check()
            os.write(write, "; ".join(failures).encode())
            code = len(failures)
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as pipe:
        message = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status), status
    assert os.WEXITSTATUS(status) == 0, message or "the child failed (code {})".format(os.WEXITSTATUS(status))


def _state_in_child():
    failures = []
    if not gc.isenabled():
        failures.append("the collector is off in the child")
    if engine.gc_pause_depth() != 0:
        failures.append("the child counts {} pauses of the collector".format(engine.gc_pause_depth()))
    if engine.buffer_cache_state()[1:] != (0, 0, 0):
        failures.append("the child's buffer cache: {}".format(engine.buffer_cache_state()))
    if engine.open_recompute_blocks() != 0:
        failures.append("the child counts {} open recompute blocks".format(engine.open_recompute_blocks()))
    # and the child differentiates normally, leaving nothing behind
    g = fastgrad.grad(lambda x: np.sum(np.sin(x) * x))(onp.linspace(0.0, 1.0, BIG // 8))
    x = onp.linspace(0.0, 1.0, BIG // 8)
    if not onp.allclose(g, onp.cos(x) * x + onp.sin(x), rtol=1e-12):
        failures.append("a wrong gradient in the child")
    if not gc.isenabled() or engine.buffer_cache_state()[1:] != (0, 0, 0):
        failures.append("the child's gradient left state behind")

    # a graph large enough to take Python's arenas from huge-page regions
    def chain(x):
        for _ in range(100_000):
            x = x * 1.0000001
        return x

    if abs(fastgrad.grad(chain)(1.0) - 1.0000001**100_000) > 1e-9:
        failures.append("a wrong gradient of a large graph in the child")
    # a recompute block of the child's own (its set of replayable primitives, its policy)
    with fastgrad.recompute(every=2, min_bytes=0):
        g2 = fastgrad.grad(lambda x: np.sum(np.tanh(np.sin(x) * x)))(x)
    if not onp.allclose(g2, (1 - onp.tanh(onp.sin(x) * x) ** 2) * (onp.cos(x) * x + onp.sin(x)), rtol=1e-12):
        failures.append("a wrong gradient in a recompute block in the child")
    if engine.open_recompute_blocks() != 0 or engine.recompute_policies():
        failures.append("the child's recompute block was left open")
    return failures


class _InsideGradient:
    """A thread held inside a gradient call (and, optionally, a recompute block) until
    released; the buffers it freed there are kept meanwhile."""

    def __init__(self, recompute=False):
        self.inside, self.release, self.result = threading.Event(), threading.Event(), []

        def f(x):
            y = np.exp(x) * 2.0  # a 20 MiB temporary freed inside the call
            self.inside.set()
            assert self.release.wait(60)
            return np.sum(y)

        def run():
            if recompute:
                with fastgrad.recompute(every=2):
                    self.result.append(fastgrad.grad(f)(onp.zeros(BIG)))
            else:
                self.result.append(fastgrad.grad(f)(onp.zeros(BIG)))

        self.thread = threading.Thread(target=run)

    def __enter__(self):
        self.thread.start()
        assert self.inside.wait(60)
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.thread.join(60)
        return False


@pytest.mark.parametrize("recompute", [False, True], ids=["grad", "grad in recompute"])
def test_fork_while_another_thread_differentiates(recompute):
    assert gc.isenabled()
    with _InsideGradient(recompute) as other:
        assert engine.gc_pause_depth() == 1
        _in_child(_state_in_child)
    onp.testing.assert_allclose(other.result[0], 2.0 * onp.ones(BIG))
    assert gc.isenabled() and engine.gc_pause_depth() == 0
    assert engine.open_recompute_blocks() == 0


def test_fork_inside_this_threads_gradient_call():
    # the child is inside the call too: its pause ends when the child's call does
    children = []

    def f(x):
        children.append(os.fork() if not children else -1)
        if children[0] == 0:
            paused = engine.gc_pause_depth() == 1 and not gc.isenabled()
            children.append(paused)
        return np.sum(x * x)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        g = fastgrad.grad(f)(onp.array([1.0, 2.0]))
    if children[0] == 0:  # the child, after its gradient call
        ok = children[1] and gc.isenabled() and engine.gc_pause_depth() == 0 and list(g) == [2.0, 4.0]
        os._exit(0 if ok else 1)
    _, status = os.waitpid(children[0], 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the child's pause was not its own"
    assert list(g) == [2.0, 4.0] and gc.isenabled()


def test_fork_keeps_the_rules_registered_before_it():
    from fastgrad.extend import defvjp, primitive

    @primitive
    def cube(x):
        return x**3

    defvjp(cube, lambda ans, x: lambda g: g * 3.0 * x**2)

    def check():
        ok = fastgrad.grad(cube)(2.0) == 12.0
        return [] if ok else ["the parent's rule is not used in the child"]

    _in_child(check)


def test_fork_while_another_thread_registers_an_array_library(tmp_path, monkeypatch):
    # The other thread holds the backend registry's lock (its library's backend is being
    # made) when this one forks: the child, which has no such thread, must still register
    # the libraries it imports (a lock left taken would block it for good).
    import importlib
    import signal

    import fake_library
    from fastgrad import _backends

    monkeypatch.syspath_prepend(str(tmp_path))
    slow, other = "fg_fork_slow_lib", "fg_fork_other_lib"
    for name in (slow, other):
        fake_library.write(tmp_path, name)
    inside, release = threading.Event(), threading.Event()

    def make_slowly():
        inside.set()
        release.wait(30)
        return _backends.CupyBackend(slow, sys.modules[slow], "numpy")

    _backends.add_library(slow, make_slowly)
    fake_library.watch(other)
    importlib.invalidate_caches()
    registering = threading.Thread(target=importlib.import_module, args=(slow,))
    registering.start()
    try:
        assert inside.wait(30)

        def check():
            signal.alarm(20)  # (a child blocked on the lock is killed, and the test fails)
            module = importlib.import_module(other)
            backend = fake_library.loaded(other)
            if backend is None or _backends.backend_of(module.ndarray()) is not backend:
                return ["the child did not register the library it imported"]
            return []

        _in_child(check)
    finally:
        release.set()
        registering.join(30)
        fake_library.forget([slow, other])
    assert not registering.is_alive()


def test_fork_keeps_debug_mode_kept_graphs_and_fresh_trace_ids():
    from fastgrad._hooks import HOOKS
    from fastgrad.tracer import trace_stack

    x = onp.array([0.3, -1.2, 2.0])
    vjp, value = fastgrad.make_vjp(lambda x: np.sin(x) * x)(x)
    with trace_stack.new_trace() as parent_id:
        pass
    previous = fastgrad.set_debug(True)
    try:

        def check():
            failures = []
            if HOOKS.debug is None:
                failures.append("debug mode is off in the child")
            g = vjp(onp.ones(3))  # the parent's kept graph, pulled back in the child
            if not onp.allclose(g, onp.cos(x) * x + onp.sin(x), rtol=1e-12):
                failures.append("a wrong gradient from the kept graph")
            with trace_stack.new_trace() as child_id:
                if child_id <= parent_id:
                    failures.append("a trace id was reused")
            if fastgrad.set_debug(False) is not True or HOOKS.debug is not None:
                failures.append("set_debug does not switch debug mode off in the child")
            return failures + _state_in_child()

        _in_child(check)
    finally:
        fastgrad.set_debug(previous)
    onp.testing.assert_allclose(vjp(onp.ones(3)), onp.cos(x) * x + onp.sin(x), rtol=1e-12)


@pytest.mark.skipif(not _cache_built(), reason="the buffer cache is C code of fastgrad._core, not built here")
def test_another_threads_gradient_does_not_keep_this_threads_buffers():
    fastgrad.grad(lambda x: np.sum(x * x))(onp.ones(3))  # (this thread's context uses the handler)
    with _InsideGradient():
        before = engine.buffer_cache_state()
        assert before[1] == 1
        for _ in range(30):  # plain NumPy in this thread: 30 arrays of 20 MiB made and freed
            a = onp.ones(BIG)
            del a
        assert engine.buffer_cache_state()[2:] == before[2:], "this thread's freed buffers were kept"
    assert engine.buffer_cache_state()[1:] == (0, 0, 0)


def test_debug_mode_switched_in_one_thread_while_others_differentiate():
    # the node pass read the debug hooks twice per node: switched off in between, it raised
    # AttributeError: 'NoneType' object has no attribute 'checked'
    import sys

    errors, stop = [], threading.Event()
    x = onp.linspace(0.1, 1.0, 5)
    expected = onp.cos(x) * x + onp.sin(x)

    def differentiate():
        try:
            while not stop.is_set():
                g = fastgrad.grad(lambda x: np.sum(np.sin(x) * x))(x)
                onp.testing.assert_allclose(g, expected, rtol=1e-12)
        except BaseException as e:  # (reported below)
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    threads = [threading.Thread(target=differentiate) for _ in range(2)]
    try:
        for t in threads:
            t.start()
        for _ in range(300):
            fastgrad.set_debug(True)
            fastgrad.set_debug(False)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
        sys.setswitchinterval(old)
        fastgrad.set_debug(False)
    assert not errors, errors[0]
