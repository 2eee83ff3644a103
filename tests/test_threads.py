"""Thread safety: gradients computed concurrently in 8 threads on shared functions are each
correct, 100 rounds in a row, with a short switch interval so that threads interleave in
the middle of tracing and of backward passes.
"""

import gc
import sys
import threading

import numpy as onp
import pytest

THREADS, ROUNDS = 8, 100


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _run_concurrently(work, n=THREADS):
    """Run work(i) for i in range(n) in n threads started together; returns the results,
    re-raising the first exception of any thread."""
    results, errors = [None] * n, []
    barrier = threading.Barrier(n)

    def target(i):
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as e:  # reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def _same(a, b):
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return onp.allclose(a, b, rtol=1e-13, atol=1e-15) and onp.shape(a) == onp.shape(b)


def _make_tasks(ag, np):
    """Shared differentiated functions, and per-thread inputs."""

    def deep(W, x):
        h = x
        for _ in range(15):
            h = np.tanh(np.dot(W, h) + 0.1 * h)
        return np.sum(h**2)

    def with_containers(params, x):
        total = 0.0
        for W, b in params["layers"]:
            x = np.sin(np.dot(W, x) + b)
            total = total + np.sum(x)
        return total * params["scale"]

    layer = ag.checkpoint(lambda W, h: np.tanh(np.dot(W, h)))
    shared = {
        "grad": ag.grad(deep, (0, 1)),
        "value_and_grad": ag.value_and_grad(deep),
        "containers": ag.grad(with_containers),
        "hessian": ag.hessian(lambda x: np.sum(np.sin(x) ** 3) * np.sum(x)),
        "grad_of_grad": ag.grad(ag.grad(lambda t: np.sin(t) * t**3)),
        "checkpoint": ag.grad(lambda W, x: np.sum(layer(W, layer(W, x)) ** 2)),
        "forward": ag.make_jvp(lambda x: np.sum(np.tanh(x) * x)),
    }
    rs = onp.random.RandomState(7)
    inputs = []
    for _ in range(THREADS):
        W, x = rs.randn(5, 5) * 0.5, rs.randn(5)
        params = {"layers": [(rs.randn(5, 5), rs.randn(5)) for _ in range(3)], "scale": float(rs.rand())}
        inputs.append((W, x, params, float(rs.rand())))

    def work(i):
        W, x, params, t = inputs[i]
        return {
            "grad": shared["grad"](W, x),
            "value_and_grad": shared["value_and_grad"](W, x),
            "containers": shared["containers"](params, x),
            "hessian": shared["hessian"](x),
            "grad_of_grad": shared["grad_of_grad"](t),
            "checkpoint": shared["checkpoint"](W, x),
            "forward": shared["forward"](x)(onp.ones(5))[1],
        }

    return work


def test_concurrent_gradients_in_8_threads_100_rounds(ag, np, fast_switching):
    work = _make_tasks(ag, np)
    expected = [work(i) for i in range(THREADS)]  # serially, once
    assert not _same(expected[0]["grad"], expected[1]["grad"])  # inputs differ per thread
    gc_was_enabled = gc.isenabled()
    for round_ in range(ROUNDS):
        results = _run_concurrently(work)
        for i, (got, want) in enumerate(zip(results, expected)):
            for key in want:
                assert _same(got[key], want[key]), f"round {round_}, thread {i}: {key} differs"
    assert gc.isenabled() == gc_was_enabled


def test_one_graph_pulled_back_from_8_threads(ag, np, fast_switching):
    # the same recorded graph, differentiated concurrently with different cotangents
    rs = onp.random.RandomState(3)
    W, x = rs.randn(6, 6) * 0.4, rs.randn(6)

    def f(x):
        h = x
        for _ in range(20):
            h = np.tanh(np.dot(W, h))
        return h

    vjp, _ = ag.make_vjp(f)(x)
    cotangents = [rs.randn(6) for _ in range(THREADS)]
    expected = [vjp(g) for g in cotangents]
    for _ in range(20):
        results = _run_concurrently(lambda i: vjp(cotangents[i]))
        for got, want in zip(results, expected):
            assert _same(got, want)


def test_one_graph_of_a_parameter_list_pulled_back_from_8_threads(ag, np, fast_switching):
    # the same, with respect to a list of (W, b) arrays: each array is a root of its own in
    # fastgrad, and concurrent passes over one graph must not take each other's root sums
    rs = onp.random.RandomState(4)
    params = [(rs.randn(5, 5) * 0.4, rs.randn(5)) for _ in range(3)]
    x = rs.randn(5)

    def f(p):
        h = x
        for W, b in p:
            h = np.tanh(np.dot(W, h) + b)
        return h * p[0][1]

    vjp, _ = ag.make_vjp(f)(params)
    cotangents = [rs.randn(5) for _ in range(THREADS)]
    expected = [vjp(g) for g in cotangents]
    assert not _same(expected[0], expected[1])
    for _ in range(20):
        results = _run_concurrently(lambda i: vjp(cotangents[i]))
        for got, want in zip(results, expected):
            assert _same(got, want)


def test_an_error_in_one_thread_does_not_disturb_the_others(ag, np, fast_switching):
    f = ag.grad(lambda x: np.sum(np.sin(x) * x))

    def work(i):
        if i % 2:
            try:
                ag.grad(lambda x: x * 2.0)(onp.ones(3))  # non-scalar output: TypeError
            except TypeError:
                return "raised"
            return "did not raise"
        x = onp.full(3, 0.1 * i)
        return f(x)

    for _ in range(10):
        results = _run_concurrently(work)
        for i, r in enumerate(results):
            if i % 2:
                assert r == "raised"
            else:
                x = onp.full(3, 0.1 * i)
                assert _same(r, onp.cos(x) * x + onp.sin(x))
    assert gc.isenabled()
