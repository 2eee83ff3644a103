"""Hand-written NumPy adjoints of the PERF.md workloads: the floor for an op-by-op reverse mode.

Each ``hand_wN(*args)`` runs the plain forward of ``workloads.wN_...`` keeping what the reverse pass
needs, then walks the ops backwards by hand (no tape, no autodiff library) and returns the gradient
w.r.t. ``args[0]`` in the same structure autograd returns.  Scalar workloads (W1, W5) use Python
floats and ``math``, which is what anyone hand-writing a scalar adjoint would do; the array
workloads use NumPy.  Rules are applied one op at a time as a reverse pass would, not simplified
algebraically, so the count of operations stays comparable with a tape.

``python benchmarks/hand.py`` checks every adjoint against autograd's gradient (rel err <= 1e-10).
"""

import math

import numpy as np


def hand_w1(x):
    xs = []
    for _ in range(1000):
        xs.append(x)
        x = math.sin(x) * x + 0.1
    g = 1.0
    for x in reversed(xs):
        # out = s * x + 0.1 with s = sin(x): d/dx = g*x*cos(x) (through s) + g*s (direct)
        g = g * x * math.cos(x) + g * math.sin(x)
    return g


def hand_w2(x):
    saved = []
    for _ in range(1000):
        s = np.sin(x)
        saved.append((x, s))
        x = s * x + 0.1
    g = np.ones_like(x)  # d sum / dx
    for x, s in reversed(saved):
        g = g * x * np.cos(x) + g * s
    return g


def hand_w3(params, X, Y):
    hs = [X]  # inputs of each layer, then the network output
    h = X
    last = len(params) - 1
    for i, (W, b) in enumerate(params):
        z = h @ W + b
        h = np.tanh(z) if i < last else z
        hs.append(h)
    r = h - Y
    # loss = mean(r**2)
    g = 2.0 * r / r.size
    grads = [None] * len(params)
    for i in range(last, -1, -1):
        W, b = params[i]
        if i < last:
            g = g * (1.0 - hs[i + 1] ** 2)  # through tanh
        h_in = hs[i]
        grads[i] = (h_in.T @ g, g.sum(axis=0))  # b was broadcast over the batch
        g = g @ W.T
    return grads


def hand_w4(x):
    s = np.sin(x)
    e = np.exp(s)
    x2 = x**2
    xx = x * x
    _ = np.sum(e * x2 + np.log1p(xx))
    # Reverse: the sum's cotangent is 1 everywhere and `+` passes it to both terms.  In-place
    # updates where the buffer is ours, as anyone writing this by hand would.
    gx = x2 * e  # d(e*x2)/de, then exp' = exp
    gx *= np.cos(x)  # sin' = cos
    t = e * x  # d(e*x2)/dx2 = e, times (x**2)' = 2x
    t *= 2.0
    gx += t
    t = 1.0 + xx  # log1p'(xx) = 1/(1 + xx), then x*x gives it once per operand
    np.divide(x, t, out=t)
    gx += t
    gx += t
    return gx


def hand_w5(x):
    # The forward values are not needed by the reverse pass (the factor is a constant), but the
    # forward still runs: a tape system cannot skip it.
    for _ in range(50_000):
        x = x * 1.0000001 + 1e-9
    g = 1.0
    for _ in range(50_000):
        g = g * 1.0000001  # the add passes g through unchanged
    return g


def hand_w6(x, C):
    total = 0.0
    for c in C:
        total = total + x * c
    _ = np.sum(total)
    g_total = np.ones_like(x)  # d sum / d total; each `total + x*c` passes it to both sides
    gx = np.zeros_like(x)
    for c in C[::-1]:
        gx += g_total * c
    return gx


def hand_w7(w, X, y):
    u = (X @ w) / 2
    t = np.tanh(u)
    p = 0.5 * (t + 1)
    q = p * y + (1 - p) * (1 - y)
    _ = -np.sum(np.log(q))
    g_q = -1.0 / q
    g_p = g_q * y - g_q * (1 - y)
    g_t = 0.5 * g_p
    g_u = g_t * (1.0 - t * t)
    return X.T @ (g_u / 2)


def hand_w8(x):
    s = 0.0
    xs = []
    for i in range(1000):
        xi = x[i]
        xs.append(xi)
        s = s + xi * xi
    gx = np.zeros_like(x)
    g = 1.0  # each `s + ...` passes g to both sides
    for i in range(999, -1, -1):
        xi = xs[i]
        gx[i] += g * xi + g * xi  # xi * xi: one contribution per operand
    return gx


def hand_w9(Z, A):
    Zs = [Z]
    for _ in range(50):
        Z = np.tanh(A @ Z)
        Zs.append(Z)
    _ = np.sum(Z)
    G = np.ones_like(Z)
    AT = A.T
    for k in range(50, 0, -1):
        Zk = Zs[k]
        G = AT @ (G * (1.0 - Zk * Zk))
    return G


HAND = {
    "W1": hand_w1,
    "W2": hand_w2,
    "W3": hand_w3,
    "W4": hand_w4,
    "W5": hand_w5,
    "W6": hand_w6,
    "W7": hand_w7,
    "W8": hand_w8,
    "W9": hand_w9,
}


if __name__ == "__main__":
    # Self-check against autograd (the oracle); the benchmark harnesses run the same check.
    import sys
    import time

    import workloads
    from _impls import max_rel_err, TOLERANCE

    import autograd
    import autograd.numpy as anp

    bad = 0
    for wid in workloads.WORKLOADS:
        fun, args, argnum = workloads.make_case(wid, anp)
        ref = autograd.grad(fun, argnum)(*args)
        t0 = time.perf_counter()
        mine = HAND[wid](*workloads.make_case(wid, np)[1])
        dt = time.perf_counter() - t0
        err = max_rel_err(mine, ref)
        ok = err <= TOLERANCE
        bad += not ok
        print(f"{wid}: rel err {err:.2e} {'ok' if ok else 'FAIL'}  ({dt * 1e3:.2f} ms)")
    sys.exit(1 if bad else 0)
