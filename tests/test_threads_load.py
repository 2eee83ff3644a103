"""Concurrency under load: 8 threads x 1,000 gradients of different functions, all correct.

Every thread differentiates its own kind of function (scalar chains, broadcasting,
indexing, matrix products, containers, second order, forward mode, user primitives, a
graph shared by all threads and pulled back concurrently), at inputs that change every
iteration, and compares each result with the derivative written out in NumPy.  Threads
switch every few microseconds so that passes interleave as much as possible.

FASTGRAD_THREAD_GRADS sets the gradients per thread (default 1000).
"""

import gc
import os
import sys
import threading

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as np
from fastgrad import _gc
from fastgrad.extend import defvjp, defjvp, primitive

pytestmark = pytest.mark.fastgrad_only

PER_THREAD = int(os.environ.get("FASTGRAD_THREAD_GRADS", "1000"))
THREADS = 8


@primitive
def soft_cube(x):
    return x**3 / 3.0 + x


defvjp(soft_cube, lambda ans, x: lambda g: g * (x**2 + 1.0))
defjvp(soft_cube, lambda g, ans, x: g * (x**2 + 1.0))

_RS = onp.random.RandomState(11)
C = _RS.randn(5)
X_DATA = _RS.randn(6, 4)
IDX = onp.array([0, 3, 3, 1, 4, 4, 4, 2])
COUNTS = onp.bincount(IDX, minlength=6).astype(float)
SHARED_X = onp.linspace(-1.0, 1.0, 6)


def _shared_fun(x):
    return np.sin(x) * x + soft_cube(x) * 0.5


SHARED_VJP, _ = fastgrad.make_vjp(_shared_fun)(SHARED_X)


def _shared_expected(u):
    x = SHARED_X
    return u * (onp.cos(x) * x + onp.sin(x) + 0.5 * (x**2 + 1.0))


# Each task: (compute(i) -> result, expected(i) -> result); i is the iteration.


def task_scalar_chain(k):
    def f(x):
        for j in range(1, 6):
            x = np.sin(x * (1.0 + 0.1 * j)) + x
        return x

    def fd(x):  # derivative written out: chain rule through the same loop
        d = 1.0
        for j in range(1, 6):
            a = 1.0 + 0.1 * j
            d = d * (onp.cos(x * a) * a + 1.0)
            x = onp.sin(x * a) + x
        return d

    return (lambda i: fastgrad.grad(f)(0.1 + 0.001 * i + 0.01 * k)), (lambda i: fd(0.1 + 0.001 * i + 0.01 * k))


def task_broadcasting(k):
    def x_of(i):
        return onp.linspace(-1, 1, 4) * (1 + 0.001 * i) + 0.01 * k

    f = fastgrad.grad(lambda x: np.sum(np.tanh(x[:, None] * C[None, :])))
    return (lambda i: f(x_of(i))), (lambda i: ((1 - onp.tanh(x_of(i)[:, None] * C) ** 2) * C).sum(axis=1))


def task_indexing(k):
    def f(x):
        s = 0.0
        for j in IDX:
            s = s + x[j] * x[j]
        return s

    g = fastgrad.grad(f)
    return (lambda i: g(onp.arange(6.0) * 0.1 + 0.001 * i + k)), (
        lambda i: 2 * (onp.arange(6.0) * 0.1 + 0.001 * i + k) * COUNTS
    )


def task_matmul(k):
    def W_of(i):
        return onp.full((4, 3), 0.01 * (i % 17) + 0.1 * k) + onp.eye(4, 3)

    g = fastgrad.grad(lambda W: np.sum((X_DATA @ W) ** 2))
    return (lambda i: g(W_of(i))), (lambda i: 2 * X_DATA.T @ (X_DATA @ W_of(i)))


def task_containers(k):
    def f(d):
        return np.sum(d["a"] * d["b"][0]) + d["b"][1] ** 2

    def d_of(i):
        return {"a": onp.array([1.0, 2.0]) + 0.001 * i, "b": [onp.array([0.5, -0.5]) * k, 0.1 * i]}

    def expected(i):
        d = d_of(i)
        return {"a": d["b"][0], "b": [d["a"], 2 * d["b"][1]]}

    g = fastgrad.grad(f)
    return (lambda i: g(d_of(i))), expected


def task_second_order(k):
    h = fastgrad.elementwise_grad(fastgrad.grad(lambda x: np.sum(np.sin(x) * x)))

    def x_of(i):
        return onp.linspace(0, 2, 5) + 0.001 * i + 0.1 * k

    return (lambda i: h(x_of(i))), (lambda i: 2 * onp.cos(x_of(i)) - x_of(i) * onp.sin(x_of(i)))


def task_forward_and_user_rule(k):
    def x_of(i):
        return onp.linspace(-1, 1, 3) + 0.002 * i + 0.1 * k

    def compute(i):
        if i % 2:
            return fastgrad.make_jvp(lambda x: soft_cube(x) * np.exp(x))(x_of(i))(onp.ones(3))[1]
        return fastgrad.elementwise_grad(lambda x: soft_cube(x) * np.exp(x))(x_of(i))

    def expected(i):
        x = x_of(i)
        return (x**2 + 1.0) * onp.exp(x) + (x**3 / 3.0 + x) * onp.exp(x)

    return compute, expected


def task_shared_graph(k):
    def u_of(i):
        return onp.cos(onp.arange(6.0) + i + k)

    return (lambda i: SHARED_VJP(u_of(i))), (lambda i: _shared_expected(u_of(i)))


TASKS = [
    task_scalar_chain,
    task_broadcasting,
    task_indexing,
    task_matmul,
    task_containers,
    task_second_order,
    task_forward_and_user_rule,
    task_shared_graph,
]


def _assert_tree_close(actual, expected):
    if isinstance(expected, dict):
        assert set(actual) == set(expected)
        for key in expected:
            _assert_tree_close(actual[key], expected[key])
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _assert_tree_close(a, e)
    else:
        assert not isinstance(actual, fastgrad.extend.Box)
        onp.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-13)


@pytest.fixture
def busy_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def _run_threads(workers):
    errors, counts = [], [0] * len(workers)
    barrier = threading.Barrier(len(workers))

    def run(slot, compute, expected, per_thread):
        try:
            barrier.wait()
            for i in range(per_thread):
                _assert_tree_close(compute(i), expected(i))
                counts[slot] += 1
        except BaseException as exc:  # reported below, with the thread's task
            errors.append((slot, repr(exc)[:2000]))

    threads = [threading.Thread(target=run, args=(slot,) + w) for slot, w in enumerate(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    return errors, counts


def test_eight_threads_thousand_gradients_each(busy_switching):
    assert gc.isenabled()
    workers = []
    for k, task in enumerate(TASKS[:THREADS]):
        compute, expected = task(k)
        workers.append((compute, expected, PER_THREAD))
    errors, counts = _run_threads(workers)
    assert not errors, errors[:3]
    assert counts == [PER_THREAD] * THREADS
    # nothing of the concurrent passes is left behind
    assert gc.isenabled() and _gc.depth() == 0
    onp.testing.assert_allclose(SHARED_VJP(onp.ones(6)), _shared_expected(onp.ones(6)), rtol=1e-13)


def test_eight_threads_on_one_kept_graph(busy_switching):
    # every thread pulls back the same graph at once, each with its own cotangents
    workers = []
    for k in range(THREADS):
        compute, expected = task_shared_graph(k)
        workers.append((compute, expected, max(PER_THREAD // 4, 10)))
    errors, counts = _run_threads(workers)
    assert not errors, errors[:3]
    assert sum(counts) == THREADS * max(PER_THREAD // 4, 10)


def test_eight_threads_same_function_different_inputs(busy_switching):
    # one function object, one set of rules, eight threads tracing it at once
    f = fastgrad.value_and_grad(lambda x, y: np.sum(np.tanh(x * y) * y) + np.max(x), (0, 1))

    def make(k):
        def inputs(i):
            x = onp.linspace(-1, 1, 5) * (1 + 0.01 * k) + 0.0001 * i
            y = onp.linspace(0.5, 1.5, 5) + 0.001 * k
            return x, y

        def compute(i):
            value, (gx, gy) = f(*inputs(i))
            return [value, gx, gy]

        def expected(i):
            x, y = inputs(i)
            t = onp.tanh(x * y)
            gx = (1 - t**2) * y * y
            gx[onp.argmax(x)] += 1.0
            gy = (1 - t**2) * x * y + t
            return [onp.sum(t * y) + x.max(), gx, gy]

        return compute, expected, max(PER_THREAD // 4, 10)

    errors, counts = _run_threads([make(k) for k in range(THREADS)])
    assert not errors, errors[:3]
