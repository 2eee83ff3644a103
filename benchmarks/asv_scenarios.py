"""The report's scenarios beyond W1-W9, written once as functions of an array module ``np``.

autograd's own asv benchmarks time three scenarios; PERF.md sets targets for them under these names:

- ``asv-short``: ``x**2`` on a float, one primitive: the fixed cost of one ``grad`` call;
- ``asv-long``: 50 times ``x = np.sin(x)`` on a float: a short chain;
- ``asv-fan``: 10**4 times ``x = (x + x) / 2.0`` on a float: every step hands its cotangent to
  both operands of ``+`` (fan-out) and adds the two contributions back up (fan-in).

``mixed-small`` is ``x**2`` again, at 2.0: the small gradient of the report's mixed case (see
mixed.py), timed before and after gradients over 10**6 elements in one process.

The scaling chain (``chain-1e4``, ``chain-1e5``, ``chain-1e6``): ``x = x * 1.0000001`` repeated
10**4, 10**5 and 10**6 times on a float, one primitive a step, to measure how the cost of one
primitive grows with the size of the graph (with the garbage collector on, autograd's grows).

``make_case(cid, np)`` returns ``(fun, args, argnum)`` like ``workloads.make_case``; ``HAND`` holds
the hand-written adjoints (plain Python floats and ``math``, as in hand.py) for the asv
scenarios.  Like every benchmark, these are checked against autograd's gradient (relative error
<= 1e-10): ``python benchmarks/asv_scenarios.py`` does it for the hand versions.
"""

import math

FAN_STEPS = 10**4
LONG_STEPS = 50
CHAIN_FACTOR = 1.0000001


# ------------------------------------------------------------------------------ asv scenarios


def asv_short(np, x):
    return x**2


def asv_long(np, x):
    for _ in range(LONG_STEPS):
        x = np.sin(x)
    return x


def asv_fan_out_fan_in(np, x):
    for _ in range(FAN_STEPS):
        x = (x + x) / 2.0
    return x


def hand_asv_short(x):
    _ = x**2
    return 1.0 * 2.0 * x  # d(x**2)/dx = 2 x, times the incoming cotangent 1


def hand_asv_long(x):
    xs = []
    for _ in range(LONG_STEPS):
        xs.append(x)
        x = math.sin(x)
    g = 1.0
    for x in reversed(xs):
        g = g * math.cos(x)
    return g


def hand_asv_fan_out_fan_in(x):
    for _ in range(FAN_STEPS):
        x = (x + x) / 2.0
    g = 1.0
    for _ in range(FAN_STEPS):
        g = g / 2.0  # through the division
        g = g + g  # both operands of x + x are x: their contributions add up
    return g


# ------------------------------------------------------------------------------ scaling chain


def scaling_chain(np, x, n):
    for _ in range(n):
        x = x * CHAIN_FACTOR
    return x


def _chain(n):
    def chain(np, x):
        return scaling_chain(np, x, n)

    chain.__name__ = f"chain_{n}"
    return chain


# ----------------------------------------------------------------------------------- registry

FUNCTIONS = {
    "asv-short": asv_short,
    "asv-long": asv_long,
    "asv-fan": asv_fan_out_fan_in,
    "chain-1e4": _chain(10**4),
    "chain-1e5": _chain(10**5),
    "chain-1e6": _chain(10**6),
    "mixed-small": asv_short,
}
ASV = ("asv-short", "asv-long", "asv-fan")
SCALING = ("chain-1e4", "chain-1e5", "chain-1e6")
# Primitives recorded by one gradient call, for the per-primitive cost.
PRIMITIVES = {
    "asv-short": 1,
    "asv-long": LONG_STEPS,
    "asv-fan": 2 * FAN_STEPS,
    "chain-1e4": 10**4,
    "chain-1e5": 10**5,
    "chain-1e6": 10**6,
    "mixed-small": 1,
}
TITLES = {
    "asv-short": "asv short `x**2`",
    "asv-long": "asv long (50 x `sin`)",
    "asv-fan": "asv fan-out/fan-in (10^4 x `(x+x)/2`)",
    "chain-1e4": "chain 10^4 x `x*1.0000001`",
    "chain-1e5": "chain 10^5 x `x*1.0000001`",
    "chain-1e6": "chain 10^6 x `x*1.0000001`",
    "mixed-small": "`x**2` at 2.0 (mixed case)",
}
HAND = {
    "asv-short": hand_asv_short,
    "asv-long": hand_asv_long,
    "asv-fan": hand_asv_fan_out_fan_in,
    "mixed-small": hand_asv_short,
}
_INPUTS = {"asv-short": (1.5,), "asv-long": (1.5,), "asv-fan": (1.5,), "mixed-small": (2.0,)}


def make_case(cid, np):
    """(fun, args, argnum) for scenario ``cid`` written against array module ``np``."""
    f = FUNCTIONS[cid]

    def fun(*args):
        return f(np, *args)

    fun.__name__ = f.__name__
    return fun, _INPUTS.get(cid, (0.5,)), 0


if __name__ == "__main__":
    # Self-check of the hand versions against autograd (the oracle).
    import sys

    import autograd
    import autograd.numpy as anp

    from _impls import TOLERANCE, max_rel_err

    bad = 0
    for cid, h in HAND.items():
        fun, args, argnum = make_case(cid, anp)
        err = max_rel_err(h(*args), autograd.grad(fun, argnum)(*args))
        bad += err > TOLERANCE
        print(f"{cid}: rel err {err:.2e} {'ok' if err <= TOLERANCE else 'FAIL'}")
    sys.exit(1 if bad else 0)
