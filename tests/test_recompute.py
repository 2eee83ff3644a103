"""fastgrad.recompute: saved arrays recomputed in the backward pass instead of kept.

The contract: inside the block the gradients are the same bits as without it (every
program below is compared with ``array_equal``), derivatives still match central
differences to second order, peak memory of a deep network drops, user primitives are
never run twice, and the block's state is this thread's and is restored on exceptions.
Runs on both engines (CI runs it again with FASTGRAD_PURE=1).
"""

import threading

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as np
from fastgrad import extend
from fastgrad._engine import engine
from gradcheck import check_grads
from traced_peak import peak_traced_bytes

pytestmark = pytest.mark.fastgrad_only

EVERYTHING = dict(min_bytes=0)  # recompute small arrays too, so small inputs exercise it


def deep_tanh(Z, A, layers=12):
    for _ in range(layers):
        Z = np.tanh(A @ Z)
    return np.sum(Z)


def mlp(params, X):
    h = X
    for W, b in params[:-1]:
        h = np.tanh(h @ W + b)
    W, b = params[-1]
    return np.mean((h @ W + b - 1.0) ** 2)


def shared_intermediates(x):
    a = np.sin(x) * x  # read again much later
    b = np.exp(-a * a)
    c = b
    for _ in range(5):
        c = np.cos(c) + a
    d = np.sum(c * a, axis=0)  # keyword argument, broadcasting below
    return np.sum(d[1:] ** 2) + np.sum(np.log1p(a * a)) + np.sum(np.where(a > 0, a, 2 * a))


def indexing_and_reshapes(x):
    y = np.reshape(x, (-1,)) * 3.0
    z = np.concatenate([y[::2], y[1::2] ** 2])
    return np.dot(z, z) + np.max(np.abs(x.T @ x))


def two_arguments(x, w):
    return np.sum(np.tanh(x * w) * np.sin(w))


RS = onp.random.RandomState(0)
A4 = RS.randn(4, 4) / 2
PARAMS = [(RS.randn(3, 5), RS.randn(5)), (RS.randn(5, 5), RS.randn(5)), (RS.randn(5, 1), RS.randn(1))]
X = RS.randn(6, 3)
CASES = [
    ("deep tanh", lambda Z: deep_tanh(Z, A4), (RS.randn(4, 3),), 0),
    ("mlp", lambda p: mlp(p, X), (PARAMS,), 0),
    ("shared intermediates", shared_intermediates, (RS.randn(3, 4),), 0),
    ("indexing and reshapes", indexing_and_reshapes, (RS.randn(4, 3),), 0),
    ("two arguments", two_arguments, (RS.randn(5), RS.randn(5)), (0, 1)),
]
IDS = [c[0] for c in CASES]


def same_bits(a, b):
    if isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            same_bits(x, y)
    else:
        assert type(a) is type(b)
        assert onp.array_equal(a, b), (a, b)


@pytest.mark.parametrize("every", [1, 2, 3, 8])
@pytest.mark.parametrize("name,f,args,argnum", CASES, ids=IDS)
def test_gradients_are_the_same_bits(name, f, args, argnum, every):
    expected = fastgrad.grad(f, argnum)(*args)
    with fastgrad.recompute(every=every, **EVERYTHING):
        got = fastgrad.grad(f, argnum)(*args)
    same_bits(got, expected)


@pytest.mark.parametrize("name,f,args,argnum", CASES[:1] + CASES[2:], ids=IDS[:1] + IDS[2:])
def test_derivatives_match_central_differences_to_second_order(name, f, args, argnum):
    argnums = argnum if isinstance(argnum, tuple) else (argnum,)
    with fastgrad.recompute(every=3, **EVERYTHING):
        check_grads(f, *args, argnums=argnums, order=2, modes=("rev",))


def test_a_graph_really_keeps_replays_and_drops_saved_values():
    A = onp.eye(3) * 0.5
    with fastgrad.recompute(every=4, **EVERYTHING):
        _, end = engine.trace(engine.VJPNode.new_root(), lambda Z: deep_tanh(Z, A, 8), onp.ones((3, 3)))
    nodes = [n for n in engine.toposort(end) if n.parents]
    assert all(n.replay is not None for n in nodes)
    kept = [
        n for n in nodes if n.replay.out is not None and type(n.replay.out) is onp.ndarray and n.replay.out.ndim == 2
    ]
    assert 3 <= len(kept) <= 5  # 16 matrices (8 matmul, 8 tanh outputs), one in 4 kept
    assert all(n.value is None and all(a is None for a in n.args) for n in nodes)
    # the backward pass gives what the plain graph gives
    same_bits(engine.backward_pass(1.0, end), fastgrad.grad(lambda Z: deep_tanh(Z, A, 8))(onp.ones((3, 3))))


def test_views_of_arguments_are_recomputed_and_not_counted():
    # Z.T is a view of the tanh output: keeping it would keep that output alive
    A = onp.eye(3) * 0.5
    f = lambda Z: np.sum(np.tanh(A @ np.tanh(A @ np.tanh(A @ Z).T).T).T)
    with fastgrad.recompute(every=2, **EVERYTHING):
        _, end = engine.trace(engine.VJPNode.new_root(), f, onp.ones((3, 3)))
    nodes = [n for n in engine.toposort(end) if n.parents][::-1]  # in recording order
    names = [n.fun.__name__ for n in nodes]
    kept = [type(n.replay.out) is onp.ndarray for n in nodes]
    assert names == [
        "matmul",
        "tanh",
        "transpose",
        "matmul",
        "tanh",
        "transpose",
        "matmul",
        "tanh",
        "transpose",
        "sum",
    ], names
    # of the six arrays with buffers of their own, every second one; the transposes never
    assert kept == [False, True, False, False, True, False, False, True, False, False], kept
    with fastgrad.recompute(every=2, **EVERYTHING):
        got = fastgrad.grad(f)(onp.ones((3, 3)))
    same_bits(got, fastgrad.grad(f)(onp.ones((3, 3))))


def test_peak_memory_of_a_deep_network_drops():
    rs = onp.random.RandomState(1)
    A, Z = rs.randn(150, 150) / onp.sqrt(150), rs.randn(150, 150)
    g = fastgrad.grad(lambda Z: deep_tanh(Z, A, 40))
    plain, expected = peak_traced_bytes(g, Z)
    with fastgrad.recompute(every=8):
        less, got = peak_traced_bytes(g, Z)
    same_bits(got, expected)
    array = Z.nbytes
    assert plain > 38 * array  # one saved array per layer without the block
    assert less < 0.5 * plain, (less / array, plain / array)


def test_a_kept_graph_is_pulled_back_many_times_and_from_threads():
    rs = onp.random.RandomState(2)
    A, Z = rs.randn(20, 20) / 5, rs.randn(20, 20)
    f = lambda Z: np.tanh(A @ np.tanh(A @ np.tanh(A @ Z)))
    vjp_plain, ans_plain = fastgrad.make_vjp(f)(Z)
    with fastgrad.recompute(every=2, **EVERYTHING):
        vjp, ans = fastgrad.make_vjp(f)(Z)
    same_bits(ans, ans_plain)
    gs = [rs.randn(20, 20) for _ in range(8)]
    expected = [vjp_plain(g) for g in gs]
    for g, e in zip(gs, expected):  # outside the block, and more than once
        same_bits(vjp(g), e)
    results = [None] * len(gs)

    def pull(k):
        for _ in range(20):
            results[k] = vjp(gs[k])

    threads = [threading.Thread(target=pull, args=(k,)) for k in range(len(gs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r, e in zip(results, expected):
        same_bits(r, e)


def test_user_primitives_run_once_and_keep_their_values():
    calls = []

    @extend.primitive
    def scaled(x):
        calls.append(1)
        return 2.0 * x

    extend.defvjp(scaled, lambda ans, x: lambda g: 2.0 * g)
    f = lambda x: np.sum(np.sin(scaled(np.sin(x))) ** 2)
    x = onp.linspace(0.1, 1.0, 7)
    expected = fastgrad.grad(f)(x)
    calls.clear()
    with fastgrad.recompute(every=1, **EVERYTHING):
        got = fastgrad.grad(f)(x)
    assert len(calls) == 1
    same_bits(got, expected)


def test_higher_order_inside_the_block():
    f = lambda x: np.sum(np.tanh(np.sin(x) * x) ** 3)
    x = onp.linspace(-1.0, 1.0, 5)
    hvp = lambda x: fastgrad.grad(lambda y: np.sum(fastgrad.grad(f)(y) * x))(x)
    expected = fastgrad.hessian(f)(x)
    with fastgrad.recompute(every=2, **EVERYTHING):
        got = fastgrad.hessian(f)(x)
        hv = hvp(x)
    same_bits(got, expected)
    onp.testing.assert_allclose(hv, expected @ x, rtol=1e-12)


def test_forward_mode_is_unaffected():
    f = lambda x: np.sum(np.tanh(np.sin(x) * x) ** 3)
    x = onp.linspace(-1.0, 1.0, 5)
    expected = fastgrad.make_jvp(f)(x)(onp.ones(5))
    with fastgrad.recompute(every=1, **EVERYTHING):
        got = fastgrad.make_jvp(f)(x)(onp.ones(5))
    same_bits(got, expected)


def test_debug_mode_still_catches_a_mutated_array_inside_the_block():
    def f(x):
        a = onp.ones(3)
        y = np.sum(x * a)
        a[0] = 5.0
        return y

    previous = fastgrad.set_debug(True)
    try:
        with fastgrad.recompute(every=1, **EVERYTHING):
            with pytest.raises(RuntimeError, match="argument 1 of multiply was modified in place"):
                fastgrad.grad(f)(onp.ones(3))
    finally:
        fastgrad.set_debug(previous)


def test_a_graph_recorded_in_the_block_is_pulled_back_in_debug_mode():
    A = RS.randn(4, 4) / 2
    f = lambda Z: np.tanh(A @ np.tanh(A @ np.sin(Z)))
    Z, g = RS.randn(4, 3), RS.randn(4, 3)
    with fastgrad.recompute(every=2, **EVERYTHING):
        vjp, _ = fastgrad.make_vjp(f)(Z)
    previous = fastgrad.set_debug(True)
    try:
        got = vjp(g)
    finally:
        fastgrad.set_debug(previous)
    same_bits(got, fastgrad.make_vjp(f)(Z)[0](g))


def _recorded_with_replays(f, x):
    _, end = engine.trace(engine.VJPNode.new_root(), f, x)
    return [n.replay is not None for n in engine.toposort(end) if n.parents]


def test_the_block_ends_on_exceptions_nests_and_is_per_thread():
    f = lambda x: np.sum(np.sin(x) * 2.0)
    x = onp.ones(3)
    with pytest.raises(ZeroDivisionError):
        with fastgrad.recompute(**EVERYTHING):
            raise ZeroDivisionError
    assert not any(_recorded_with_replays(f, x))
    with fastgrad.recompute(**EVERYTHING):
        with fastgrad.recompute(every=2, min_bytes=1 << 40):  # inner: nothing is large
            assert all(_recorded_with_replays(f, x))  # (kept, but as replays)
        assert all(_recorded_with_replays(f, x))
        other = []
        t = threading.Thread(target=lambda: other.extend(_recorded_with_replays(f, x)))
        t.start()
        t.join()
        assert other and not any(other)  # another thread's graphs are not affected
    assert not any(_recorded_with_replays(f, x))


def test_as_a_decorator():
    f = lambda Z: deep_tanh(Z, A4)
    Z = RS.randn(4, 3)

    @fastgrad.recompute(every=2, **EVERYTHING)
    def gradient(Z):
        return fastgrad.grad(f)(Z)

    same_bits(gradient(Z), fastgrad.grad(f)(Z))
    assert not any(_recorded_with_replays(f, Z))


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(every=0), "every must be a positive int, got 0"),
        (dict(every=2.5), "every must be a positive int, got 2.5"),
        (dict(min_bytes=-1), "min_bytes must be a non-negative int, got -1"),
    ],
)
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        fastgrad.recompute(**kwargs)
