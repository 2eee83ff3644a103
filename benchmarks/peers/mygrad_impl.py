"""The benchmark cases in MyGrad, in MyGrad's idiom.

Each function mirrors its definition in ``workloads.py`` / ``asv_scenarios.py`` op for op with
``mygrad``'s functions: the differentiated argument is a ``mygrad.tensor`` made once from the shared
inputs, the other inputs stay NumPy arrays (constants to MyGrad).  One gradient call runs the
forward, ``backward()`` on the result, and reads ``.grad`` of the argument (MyGrad sets it anew
on each backward pass and frees the graph).
"""

import mygrad as mg

from _impls import case_inputs


def w1_scalar_chain(x):
    for _ in range(1000):
        x = mg.sin(x) * x + 0.1
    return x


def w2_small_array_chain(x):
    for _ in range(1000):
        x = mg.sin(x) * x + 0.1
    return mg.sum(x)


def w3_mlp(params, X, Y):
    h = X
    for i, (W, b) in enumerate(params):
        z = h @ W + b
        h = mg.tanh(z) if i < len(params) - 1 else z
    return mg.mean((h - Y) ** 2)


def w4_big_arrays(x):
    return mg.sum(mg.exp(mg.sin(x)) * x**2 + mg.log1p(x * x))


def w5_deep_graph(x):
    for _ in range(50_000):
        x = x * 1.0000001 + 1e-9
    return x


def w6_fan_in(x, C):
    total = 0.0
    for c in C:
        total = total + x * c
    return mg.sum(total)


def w7_logistic(w, X, y):
    p = 0.5 * (mg.tanh((X @ w) / 2) + 1)
    return -mg.sum(mg.log(p * y + (1 - p) * (1 - y)))


def w8_indexing(x):
    s = 0.0
    for i in range(1000):
        s = s + x[i] * x[i]
    return s


def w9_saved_state(Z, A):
    for _ in range(50):
        Z = mg.tanh(A @ Z)
    return mg.sum(Z)


def asv_short(x):
    return x**2


def asv_long(x):
    for _ in range(50):
        x = mg.sin(x)
    return x


def asv_fan_out_fan_in(x):
    for _ in range(10**4):
        x = (x + x) / 2.0
    return x


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
    "asv-short": asv_short,
    "asv-long": asv_long,
    "asv-fan": asv_fan_out_fan_in,
    "mixed-small": asv_short,
}


def gradient_call(cid):
    fun = FUNCTIONS[cid]
    first, *rest = case_inputs(cid)
    if isinstance(first, list):  # W3: a list of (W, b) pairs
        x = [tuple(mg.tensor(a) for a in pair) for pair in first]

        def call():
            fun(x, *rest).backward()
            return [(W.grad, b.grad) for W, b in x]

    else:
        x = mg.tensor(first)

        def call():
            fun(x, *rest).backward()
            return x.grad

    return call, {"version": mg.__version__}
