"""The PERF.md workloads, written once as functions of an array module ``np``.

Every benchmark and the W1-W9 correctness tests import these definitions, so the
numbers in the README and the gradients checked in tests/ come from the same code.
``make_case(wid, np)`` returns ``(fun, args, argnum)``: differentiate ``fun`` w.r.t.
``args[argnum]``.  The hand-written NumPy adjoints (the floor) are in hand.py.
"""

import numpy as onp


def w1_scalar_chain(np, x):
    for _ in range(1000):
        x = np.sin(x) * x + 0.1
    return x


def w2_small_array_chain(np, x):
    for _ in range(1000):
        x = np.sin(x) * x + 0.1
    return np.sum(x)


def w3_mlp(np, params, X, Y):
    h = X
    for i, (W, b) in enumerate(params):
        z = h @ W + b
        h = np.tanh(z) if i < len(params) - 1 else z
    return np.mean((h - Y) ** 2)


def w4_big_arrays(np, x):
    return np.sum(np.exp(np.sin(x)) * x**2 + np.log1p(x * x))


def w5_deep_graph(np, x):
    for _ in range(50_000):
        x = x * 1.0000001 + 1e-9
    return x


def w6_fan_in(np, x, C):
    total = 0.0
    for c in C:
        total = total + x * c
    return np.sum(total)


def w7_logistic(np, w, X, y):
    p = 0.5 * (np.tanh((X @ w) / 2) + 1)
    return -np.sum(np.log(p * y + (1 - p) * (1 - y)))


def w8_indexing(np, x):
    s = 0.0
    for i in range(1000):
        s = s + x[i] * x[i]
    return s


def w9_saved_state(np, Z, A):
    for _ in range(50):
        Z = np.tanh(A @ Z)
    return np.sum(Z)


def _inputs(wid):
    """Fresh inputs for workload ``wid`` (deterministic, seed 0)."""
    rng = onp.random.RandomState(0)
    if wid == "W1":
        return (0.5,)
    if wid == "W2":
        return (onp.linspace(0.1, 1, 10),)
    if wid == "W3":
        sizes = [10, 64, 64, 1]
        params = [(rng.randn(m, n) / onp.sqrt(m), rng.randn(n) * 0.1) for m, n in zip(sizes[:-1], sizes[1:])]
        return (params, rng.randn(32, 10), rng.randn(32, 1))
    if wid == "W4":
        return (rng.uniform(-2, 2, size=1_000_000),)
    if wid == "W5":
        return (0.5,)
    if wid == "W6":
        return (rng.randn(100), rng.randn(1000, 100))
    if wid == "W7":
        X = rng.randn(10000, 100)
        w = rng.randn(100) * 0.1
        y = (rng.rand(10000) < 0.5).astype(float)
        return (w, X, y)
    if wid == "W8":
        return (rng.randn(1000),)
    if wid == "W9":
        A = rng.randn(300, 300) / onp.sqrt(300)
        Z = rng.randn(300, 300)
        return (Z, A)
    raise KeyError(wid)


FUNCTIONS = {
    "W1": w1_scalar_chain,
    "W2": w2_small_array_chain,
    "W3": w3_mlp,
    "W4": w4_big_arrays,
    "W5": w5_deep_graph,
    "W6": w6_fan_in,
    "W7": w7_logistic,
    "W8": w8_indexing,
    "W9": w9_saved_state,
}
WORKLOADS = tuple(FUNCTIONS)

# A workload differentiated by fastgrad inside one of its options, to measure the option:
# variant id -> the workload.  autograd and the hand-written adjoint run the workload itself
# (the reference the targets compare with).
VARIANTS = {"W9-recompute": "W9"}  # inside fastgrad.recompute() (default settings)


def make_case(wid, np):
    """(fun, args, argnum) for workload ``wid`` written against array module ``np``."""
    f = FUNCTIONS[wid]

    def fun(*args):
        return f(np, *args)

    fun.__name__ = f.__name__
    return fun, _inputs(wid), 0
