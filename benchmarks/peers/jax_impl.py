"""The benchmark cases in JAX (64-bit floats), without jit and with ``jax.jit``, in JAX's idiom.

Without jit, JAX runs each operation as it comes, like the other op-by-op systems: the functions
are the Python loops of ``workloads.py`` / ``asv_scenarios.py`` on ``jax.numpy``, and one gradient
call is ``jax.grad(f)(*args)``.  Under jit a Python loop would be unrolled into the compiled
program (a 100,000-step loop takes minutes to compile), so the jitted versions write the long
loops as ``lax.fori_loop`` / ``lax.scan``: the same operations in the same order, traced once.
One gradient call is then ``jax.jit(jax.grad(f))(*args)``; its first call (trace and compile) is
reported apart by the harness, never inside the median.  Every call waits for its result
(``block_until_ready``): JAX dispatches asynchronously.

Arrays are made once from the shared inputs with ``jnp.asarray``; Python floats stay floats.
XLA's CPU backend is held to one thread by ``XLA_FLAGS``, which run.py sets for this worker before
JAX is imported.
"""

import jax

jax.config.update("jax_enable_x64", True)  # float64, as NumPy and autograd compute

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

from _impls import case_inputs  # noqa: E402

# ------------------------------------------------------------------- op by op (no jit)


def w1_scalar_chain(x):
    for _ in range(1000):
        x = jnp.sin(x) * x + 0.1
    return x


def w2_small_array_chain(x):
    for _ in range(1000):
        x = jnp.sin(x) * x + 0.1
    return jnp.sum(x)


def w3_mlp(params, X, Y):
    h = X
    for i, (W, b) in enumerate(params):
        z = h @ W + b
        h = jnp.tanh(z) if i < len(params) - 1 else z
    return jnp.mean((h - Y) ** 2)


def w4_big_arrays(x):
    return jnp.sum(jnp.exp(jnp.sin(x)) * x**2 + jnp.log1p(x * x))


def w5_deep_graph(x):
    for _ in range(50_000):
        x = x * 1.0000001 + 1e-9
    return x


def w6_fan_in(x, C):
    total = 0.0
    for c in C:
        total = total + x * c
    return jnp.sum(total)


def w7_logistic(w, X, y):
    p = 0.5 * (jnp.tanh((X @ w) / 2) + 1)
    return -jnp.sum(jnp.log(p * y + (1 - p) * (1 - y)))


def w8_indexing(x):
    s = 0.0
    for i in range(1000):
        s = s + x[i] * x[i]
    return s


def w9_saved_state(Z, A):
    for _ in range(50):
        Z = jnp.tanh(A @ Z)
    return jnp.sum(Z)


def asv_short(x):
    return x**2


def asv_long(x):
    for _ in range(50):
        x = jnp.sin(x)
    return x


def asv_fan_out_fan_in(x):
    for _ in range(10**4):
        x = (x + x) / 2.0
    return x


EAGER = {
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

# ------------------------------------------------------- under jit: the loops as lax loops


def jit_w1_scalar_chain(x):
    return lax.fori_loop(0, 1000, lambda _, x: jnp.sin(x) * x + 0.1, x)


def jit_w2_small_array_chain(x):
    return jnp.sum(lax.fori_loop(0, 1000, lambda _, x: jnp.sin(x) * x + 0.1, x))


def jit_w5_deep_graph(x):
    return lax.fori_loop(0, 50_000, lambda _, x: x * 1.0000001 + 1e-9, x)


def jit_w6_fan_in(x, C):
    # the first step is 0.0 + x * C[0] in the eager loop: the same as starting from zeros
    total, _ = lax.scan(lambda total, c: (total + x * c, None), jnp.zeros_like(x), C)
    return jnp.sum(total)


def jit_w8_indexing(x):
    return lax.fori_loop(0, 1000, lambda i, s: s + x[i] * x[i], 0.0)


def jit_w9_saved_state(Z, A):
    return jnp.sum(lax.fori_loop(0, 50, lambda _, Z: jnp.tanh(A @ Z), Z))


def jit_asv_long(x):
    return lax.fori_loop(0, 50, lambda _, x: jnp.sin(x), x)


def jit_asv_fan_out_fan_in(x):
    return lax.fori_loop(0, 10**4, lambda _, x: (x + x) / 2.0, x)


JITTED = {
    **EAGER,  # W3, W4, W7 and x**2 have no long loop: the same functions
    "W1": jit_w1_scalar_chain,
    "W2": jit_w2_small_array_chain,
    "W5": jit_w5_deep_graph,
    "W6": jit_w6_fan_in,
    "W8": jit_w8_indexing,
    "W9": jit_w9_saved_state,
    "asv-long": jit_asv_long,
    "asv-fan": jit_asv_fan_out_fan_in,
}


def _array(value):
    if isinstance(value, list):  # W3's params: a list of (W, b) pairs
        return [tuple(jnp.asarray(a) for a in pair) for pair in value]
    return value if isinstance(value, float) else jnp.asarray(value)


def gradient_call(cid, jit=False):
    g = jax.grad((JITTED if jit else EAGER)[cid])
    if jit:
        g = jax.jit(g)
    args = [_array(a) for a in case_inputs(cid)]

    def call():
        return jax.block_until_ready(g(*args))

    info = {"version": jax.__version__, "x64": bool(jax.config.jax_enable_x64)}
    return call, info
