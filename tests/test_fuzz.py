"""Fuzzing: random programs of fastgrad.numpy primitives, differentiated and checked.

A program is 3-12 random operations (elementwise functions, broadcasting arithmetic with
other values or constants, reductions, products, joins, indexing, shape changes) applied
to 1-3 inputs of random broadcastable shapes and dtypes (float64, float32, 0-d arrays,
Python floats), reduced to a scalar by a weighted sum.  Programs are built with their
values at hand, so that every operation stays in its domain (no log of a negative, no
division by ~0, no overflow) and away from kinks (|x| at 0, ties in max/min), by a margin
much larger than the finite-difference step.  Then, for each program:

- the value equals NumPy's on the same program;
- each gradient has its input's shape and dtype;
- the gradients equal autograd's and central differences (in float64);
- a forward-mode JVP along a random direction equals <gradient, direction>;
- a Hessian-vector product (reverse over reverse) equals central differences of the
  gradient;
- the compiled and the pure-Python engines agree (seeded programs, the other engine in a
  subprocess), on the default backward pass and on its fallback (every pass run by
  ``backward_pass_with_dicts``, what the engines do for user node types and a second pass
  over a graph in use).

hypothesis drives the generator (``derandomize=True``: CI runs the same programs every
time); FASTGRAD_FUZZ_EXAMPLES sets the number of programs (default 500).
"""

import json
import math
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as onp
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import fastgrad
import fastgrad.numpy as fnp
from numpy_versions import has_numpy

try:
    import autograd
    import autograd.numpy as anp
except ImportError:  # the oracle is optional; the other checks still run
    autograd = anp = None

pytestmark = pytest.mark.fastgrad_only

EXAMPLES = int(os.environ.get("FASTGRAD_FUZZ_EXAMPLES", "500"))
PURE_PROGRAMS = max(EXAMPLES // 2, 20)
FALLBACK_PROGRAMS = max(EXAMPLES // 8, 20)
BOUND = 30.0  # every intermediate value stays within [-BOUND, BOUND]
MARGIN = 1e-3  # distance kept from kinks and domain edges
FD_EPS = 1e-6


# ---------------------------------------------------------------------------------------
# Choosers: the generator asks one of these for its random decisions


class RandomChooser:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def choice(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def integer(self, lo, hi):
        return self.rng.randint(lo, hi)

    def boolean(self):
        return self.rng.random() < 0.5

    def reject(self):
        return False  # a seeded program keeps going with another choice


class HypothesisChooser:
    def __init__(self, data):
        self.data = data

    def choice(self, seq):
        return self.data.draw(st.sampled_from(seq))

    def integer(self, lo, hi):
        return self.data.draw(st.integers(lo, hi))

    def boolean(self):
        return self.data.draw(st.booleans())

    def reject(self):
        return False


# ---------------------------------------------------------------------------------------
# Operations.  Each takes the array module N, its operand values and its parameters (plain
# data, so programs can be sent to another process), and returns the result.


def _unary(name):
    return lambda N, a, p: getattr(N, name)(a)


UNARY = {
    # name: (function, feasible(values in float64))
    "sin": (_unary("sin"), lambda a: True),
    "cos": (_unary("cos"), lambda a: True),
    "tanh": (_unary("tanh"), lambda a: True),
    "arctan": (_unary("arctan"), lambda a: True),
    "exp": (_unary("exp"), lambda a: a.max(initial=-1) <= 3.0),
    "expm1": (_unary("expm1"), lambda a: a.max(initial=-1) <= 3.0),
    "log": (_unary("log"), lambda a: a.min(initial=1) >= 0.1),
    "log1p": (_unary("log1p"), lambda a: a.min(initial=0) >= -0.8),
    "sqrt": (_unary("sqrt"), lambda a: a.min(initial=1) >= 0.1),
    "square": (_unary("square"), lambda a: True),
    "negative": (_unary("negative"), lambda a: True),
    "abs": (_unary("abs"), lambda a: onp.abs(a).min(initial=1) >= MARGIN),
    "reciprocal": (_unary("reciprocal"), lambda a: onp.abs(a).min(initial=1) >= 0.2),
    "sinh": (_unary("sinh"), lambda a: True),
    "cosh": (_unary("cosh"), lambda a: True),
    "arcsinh": (_unary("arcsinh"), lambda a: True),
    "sigmoid-ish": (lambda N, a, p: 0.5 * (N.tanh(a * 0.5) + 1.0), lambda a: True),
    "cube": (lambda N, a, p: a**3, lambda a: True),
    "pow-half": (lambda N, a, p: N.power(a, 0.5), lambda a: a.min(initial=1) >= 0.1),
    "scale": (lambda N, a, p: a * p["c"] if p["form"] else N.multiply(p["c"], a), lambda a: True),
    "shift": (lambda N, a, p: a + p["c"] if p["form"] else N.add(p["c"], a), lambda a: True),
    "rdiv": (lambda N, a, p: p["c"] / a, lambda a: onp.abs(a).min(initial=1) >= 0.3),
    "clip": (lambda N, a, p: N.clip(a, -0.5, 0.5), lambda a: (onp.abs(onp.abs(a) - 0.5) >= MARGIN).all()),
    "tan": (_unary("tan"), lambda a: onp.abs(a).max(initial=0) <= 1.2),
    "arcsin": (_unary("arcsin"), lambda a: onp.abs(a).max(initial=0) <= 0.9),
    "arccos": (_unary("arccos"), lambda a: onp.abs(a).max(initial=0) <= 0.9),
    "arctanh": (_unary("arctanh"), lambda a: onp.abs(a).max(initial=0) <= 0.9),
    "arccosh": (_unary("arccosh"), lambda a: a.min(initial=2) >= 1.2),
    "log2": (_unary("log2"), lambda a: a.min(initial=1) >= 0.1),
    "log10": (_unary("log10"), lambda a: a.min(initial=1) >= 0.1),
    "exp2": (_unary("exp2"), lambda a: a.max(initial=-1) <= 4.0),
    "cbrt": (_unary("cbrt"), lambda a: onp.abs(a).min(initial=1) >= 0.1),
    "sinc": (_unary("sinc"), lambda a: True),
    "deg2rad": (_unary("deg2rad"), lambda a: True),
    "fabs": (_unary("fabs"), lambda a: onp.abs(a).min(initial=1) >= MARGIN),
    "positive": (_unary("positive"), lambda a: True),
    "conjugate": (_unary("conjugate"), lambda a: True),
    "real": (_unary("real"), lambda a: True),
    "nan_to_num": (_unary("nan_to_num"), lambda a: True),
    "logaddexp-self": (lambda N, a, p: N.logaddexp(a, a * 0.5), lambda a: True),
}

BINARY = {
    "add": (lambda N, a, b, p: a + b if p["form"] else N.add(a, b), lambda a, b: True),
    "subtract": (lambda N, a, b, p: a - b if p["form"] else N.subtract(a, b), lambda a, b: True),
    "multiply": (lambda N, a, b, p: a * b if p["form"] else N.multiply(a, b), lambda a, b: True),
    "divide": (
        lambda N, a, b, p: a / b if p["form"] else N.true_divide(a, b),
        lambda a, b: onp.abs(b).min(initial=1) >= 0.3,
    ),
    "maximum": (lambda N, a, b, p: N.maximum(a, b), lambda a, b: (onp.abs(a - b) >= MARGIN).all()),
    "minimum": (lambda N, a, b, p: N.minimum(a, b), lambda a, b: (onp.abs(a - b) >= MARGIN).all()),
    "arctan2": (lambda N, a, b, p: N.arctan2(a, b), lambda a, b: b.min(initial=1) >= 0.2),
    "hypot": (lambda N, a, b, p: N.hypot(a, b), lambda a, b: onp.abs(a).min(initial=1) >= 0.2),
    "power": (
        lambda N, a, b, p: a**b if p["form"] else N.power(a, b),
        lambda a, b: a.min(initial=1) >= 0.2 and onp.abs(b).max(initial=0) <= 3,
    ),
    "where": (
        lambda N, a, b, p: N.where(onp.array(p["mask"], dtype=bool).reshape(p["mshape"]), a, b),
        lambda a, b: True,
    ),
    "logaddexp": (lambda N, a, b, p: N.logaddexp(a, b), lambda a, b: True),
    "logaddexp2": (lambda N, a, b, p: N.logaddexp2(a, b), lambda a, b: True),
    "fmax": (lambda N, a, b, p: N.fmax(a, b), lambda a, b: (onp.abs(a - b) >= MARGIN).all()),
    "fmin": (lambda N, a, b, p: N.fmin(a, b), lambda a, b: (onp.abs(a - b) >= MARGIN).all()),
    "float_power": (
        lambda N, a, b, p: N.float_power(a, b),
        lambda a, b: a.min(initial=1) >= 0.2 and onp.abs(b).max(initial=0) <= 3,
    ),
    "remainder": (
        lambda N, a, b, p: N.remainder(a, b),
        lambda a, b: b.min(initial=1) >= 0.3 and (onp.abs(a / b - onp.round(a / b)) >= 0.01).all(),
    ),
}


def _axis_ok(shape, axis):
    return axis is None or (len(shape) > 0 and -len(shape) <= axis < len(shape))


def _top_two_margin(a, axis, largest):
    """Smallest gap between the extreme value and the next along ``axis`` (inf if single)."""
    s = onp.sort(onp.reshape(a, -1) if axis is None else a, axis=-1 if axis is None else axis)
    if axis is None:
        s = s[None]
        axis = -1
    n = s.shape[axis]
    if n < 2:
        return math.inf
    first = onp.take(s, n - 1 if largest else 0, axis=axis)
    second = onp.take(s, n - 2 if largest else 1, axis=axis)
    return float(onp.abs(first - second).min(initial=math.inf))


REDUCTIONS = {
    "sum": (lambda N, a, p: N.sum(a, axis=p["axis"], keepdims=p["keepdims"]), lambda a, p: True),
    "mean": (lambda N, a, p: N.mean(a, axis=p["axis"], keepdims=p["keepdims"]), lambda a, p: a.size > 0),
    "max": (
        lambda N, a, p: N.max(a, axis=p["axis"], keepdims=p["keepdims"]),
        lambda a, p: a.size > 0 and _top_two_margin(a, p["axis"], True) >= MARGIN,
    ),
    "min": (
        lambda N, a, p: N.min(a, axis=p["axis"], keepdims=p["keepdims"]),
        lambda a, p: a.size > 0 and _top_two_margin(a, p["axis"], False) >= MARGIN,
    ),
    "prod": (lambda N, a, p: N.prod(a, axis=p["axis"], keepdims=p["keepdims"]), lambda a, p: True),
    "var": (lambda N, a, p: N.var(a, axis=p["axis"], keepdims=p["keepdims"]), lambda a, p: a.size > 0),
    "cumsum": (lambda N, a, p: N.cumsum(a, axis=p["axis"]), lambda a, p: True),
    "cumprod": (lambda N, a, p: N.cumprod(a, axis=p["axis"]), lambda a, p: True),
    "std": (
        lambda N, a, p: N.std(a, axis=p["axis"], keepdims=p["keepdims"]),
        lambda a, p: a.size > 0 and onp.all(onp.std(a, axis=p["axis"]) >= 0.05),
    ),
    "nansum": (lambda N, a, p: N.nansum(a, axis=p["axis"], keepdims=p["keepdims"]), lambda a, p: True),
    "nanmean": (lambda N, a, p: N.nanmean(a, axis=p["axis"], keepdims=p["keepdims"]), lambda a, p: a.size > 0),
    "amax": (
        lambda N, a, p: N.amax(a, axis=p["axis"], keepdims=p["keepdims"]),
        lambda a, p: a.size > 0 and _top_two_margin(a, p["axis"], True) >= MARGIN,
    ),
    "ptp": (
        lambda N, a, p: N.ptp(a, axis=p["axis"], keepdims=p["keepdims"]),
        lambda a, p: (
            a.size > 1
            and _top_two_margin(a, p["axis"], True) >= MARGIN
            and _top_two_margin(a, p["axis"], False) >= MARGIN
        ),
    ),
    "sort": (
        lambda N, a, p: N.sort(a, axis=-1 if p["axis"] is None else p["axis"]),
        lambda a, p: a.ndim > 0 and _min_gap(a, -1 if p["axis"] is None else p["axis"]) >= MARGIN,
    ),
    "diff": (
        lambda N, a, p: N.diff(a, axis=-1 if p["axis"] is None else p["axis"]),
        lambda a, p: a.ndim > 0 and a.shape[-1 if p["axis"] is None else p["axis"]] >= 2,
    ),
    "norm": (lambda N, a, p: N.linalg.norm(a), lambda a, p: float(onp.sqrt((a * a).sum())) >= 0.1),
    "trapezoid": (lambda N, a, p: N.trapezoid(a, axis=-1 if p["axis"] is None else p["axis"]), lambda a, p: a.ndim > 0),
}

if not has_numpy((2, 0)):  # (NumPy 1 has trapz instead, which autograd cannot differentiate)
    del REDUCTIONS["trapezoid"]


def _min_gap(a, axis):
    """The smallest distance between two entries along ``axis`` (ties in a sort)."""
    s = onp.sort(a, axis=axis)
    d = onp.diff(s, axis=axis)
    return float(d.min(initial=math.inf))


def _index(N, a, p):
    kind = p["kind"]
    if kind == "first":
        return a[0]
    if kind == "reverse":
        return a[::-1]
    if kind == "tail":
        return a[1:]
    if kind == "fancy":
        return a[onp.array(p["idx"], dtype=int)]
    if kind == "mask":
        return a[onp.array(p["mask"], dtype=bool)]
    raise ValueError(kind)


SHAPE_OPS = {
    "transpose": (lambda N, a, p: N.transpose(a) if p["form"] else a.T, lambda s: len(s) >= 2),
    "flatten": (lambda N, a, p: N.reshape(a, (-1,)), lambda s: True),
    "expand": (lambda N, a, p: N.expand_dims(a, 0), lambda s: len(s) <= 2),
    "flip": (lambda N, a, p: N.flip(a, axis=0), lambda s: len(s) >= 1),
    "swap": (lambda N, a, p: N.swapaxes(a, 0, -1), lambda s: len(s) >= 2),
    "broadcast": (lambda N, a, p: N.broadcast_to(a, tuple(p["shape"])), lambda s: len(s) <= 2),
    "index": (_index, lambda s: len(s) >= 1 and s[0] >= 1),
    "squeeze": (lambda N, a, p: N.squeeze(a), lambda s: 1 in s),
    "ravel": (lambda N, a, p: N.ravel(a) if p["form"] else a.ravel(), lambda s: True),
    "repeat": (lambda N, a, p: N.repeat(a, 2, axis=0), lambda s: len(s) >= 1),
    "tile": (lambda N, a, p: N.tile(a, 2), lambda s: len(s) <= 2),
    "roll": (lambda N, a, p: N.roll(a, 1, axis=0), lambda s: len(s) >= 1),
    "triu": (lambda N, a, p: N.triu(a), lambda s: len(s) == 2),
    "tril": (lambda N, a, p: N.tril(a, -1) + N.tril(a).T, lambda s: len(s) == 2 and s[0] == s[1]),
    "diagonal": (lambda N, a, p: N.diagonal(a), lambda s: len(s) == 2),
    "trace": (lambda N, a, p: N.trace(a), lambda s: len(s) == 2),
    "moveaxis": (lambda N, a, p: N.moveaxis(a, 0, -1), lambda s: len(s) >= 2),
    "atleast_2d": (lambda N, a, p: N.atleast_2d(a), lambda s: True),
    "pad": (lambda N, a, p: N.pad(a, 1), lambda s: 1 <= len(s) <= 2),
    "split-first": (lambda N, a, p: N.split(a, 2, axis=0)[p["form"]], lambda s: len(s) >= 1 and s[0] % 2 == 0),
    "take-axis": (lambda N, a, p: N.take(a, [0, 0, -1], axis=-1), lambda s: len(s) >= 1),
    "getitem-2d": (lambda N, a, p: a[:, ::-1][..., :1] if p["form"] else a[..., None, 0], lambda s: len(s) >= 2),
}


def _concat(N, a, b, p):
    return N.concatenate([a, b], axis=0)


def _stack(N, a, b, p):
    return N.stack([a, b], axis=p["axis"])


def _matmul(N, a, b, p):
    return a @ b if p["form"] else N.dot(a, b)


def _square(N, a):
    """A well-conditioned square matrix made from the 2-D value ``a`` (n x n)."""
    n = a.shape[0]
    return a * 0.3 + onp.eye(n) * 2.0


JOINS = {
    "concatenate": _concat,
    "stack": _stack,
    "matmul": _matmul,
    "concatenate-last": lambda N, a, b, p: N.concatenate([a, b], axis=-1),
    "outer": lambda N, a, b, p: N.outer(a, b),
    "kron": lambda N, a, b, p: N.kron(a, b),
    "einsum": lambda N, a, b, p: N.einsum("i,i->", N.ravel(a), N.ravel(b)),
    "tensordot": lambda N, a, b, p: N.tensordot(a, b, axes=1),
    "inner": lambda N, a, b, p: N.inner(a, b),
    "vdot": lambda N, a, b, p: N.vdot(a, b),
    "solve": lambda N, a, b, p: N.linalg.solve(_square(N, a), b),
}

LINALG = {
    # on a square 2-D value a (made well conditioned)
    "inv": lambda N, a, p: N.linalg.inv(_square(N, a)),
    "det": lambda N, a, p: N.linalg.det(_square(N, a)),
    "slogdet": lambda N, a, p: N.linalg.slogdet(_square(N, a))[1],
    "eigh-values": lambda N, a, p: N.linalg.eigh(_square(N, a) + _square(N, a).T)[0],
    "cholesky": lambda N, a, p: N.linalg.cholesky(N.dot(_square(N, a), _square(N, a).T)),
    "matrix-power": lambda N, a, p: N.linalg.matrix_power(_square(N, a) * 0.5, 3),
    "svd-values": lambda N, a, p: N.linalg.svd(_square(N, a), compute_uv=False),
    "norm-fro": lambda N, a, p: N.linalg.norm(_square(N, a)),
    "pinv": lambda N, a, p: N.linalg.pinv(_square(N, a)),
}


def _linalg_feasible(name, a):
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        return False
    m = a * 0.3 + onp.eye(a.shape[0]) * 2.0
    if name == "eigh-values":
        w = onp.linalg.eigvalsh(m + m.T)
        return a.shape[0] == 1 or float(onp.diff(w).min()) >= 0.05
    if name == "svd-values":
        sv = onp.linalg.svd(m, compute_uv=False)
        return a.shape[0] == 1 or float(-onp.diff(sv).max()) >= 0.05
    return True


# ---------------------------------------------------------------------------------------
# The generator

DTYPES = {"float64": onp.float64, "float32": onp.float32}


def _input_values(rng, shape, positive):
    lo, hi = (0.5, 1.5) if positive else (-1.0, 1.0)
    return [rng.uniform(lo, hi) for _ in range(int(onp.prod(shape, dtype=int)))]


def generate(ch):
    """A random program (plain data), built with its float64 values at hand."""
    seed = ch.integer(0, 2**31 - 1)
    rng = random.Random(seed)
    dtype_mode = ch.choice(["float64"] * 7 + ["float32", "mixed"])
    ndim = ch.choice([0, 1, 1, 2, 2, 2, 3, 3])
    base = [ch.choice([1, 2, 3, 3]) for _ in range(ndim)]
    if ndim >= 2 and ch.boolean():
        base[-1] = base[-2]  # square matrices, for the linear algebra
    n_inputs = ch.integer(1, 3)
    inputs = []
    for i in range(n_inputs):
        keep = ch.choice([ndim, ndim, ch.integer(0, ndim)]) if ndim else 0
        shape = [d if ch.choice([True, True, False]) else 1 for d in base[ndim - keep :]]
        kind = "array"
        if not shape:  # a 0-d array, a Python float, or a NumPy scalar (np.float64 / np.float32)
            kind = ch.choice(["array", "pyfloat", "npscalar"])
        dtype = "float64"
        if dtype_mode == "float32" or (dtype_mode == "mixed" and i == 0):
            dtype = "float32"
            if kind == "pyfloat":
                kind = "array"
        inputs.append({"shape": shape, "dtype": dtype, "kind": kind, "values": _input_values(rng, shape, ch.boolean())})

    values = [onp.array(inp["values"], dtype=onp.float64).reshape(inp["shape"]) for inp in inputs]
    ops, consumed = [], set()
    n_ops = ch.integer(3, 12)
    attempts = 0
    while len(ops) < n_ops and attempts < 200:
        attempts += 1
        op = _draw_op(ch, rng, values)
        if op is None:
            continue
        try:
            with onp.errstate(all="raise"):
                out = apply_op(onp, op, values)
        except (FloatingPointError, ValueError, IndexError):
            continue
        out = onp.asarray(out, dtype=onp.float64)
        if out.size == 0 or not onp.all(onp.isfinite(out)) or onp.abs(out).max() > BOUND:
            continue
        ops.append(op)
        consumed.update(k for k in op["args"] if not isinstance(k, dict))
        values.append(out)
    # every value nobody consumed enters the output, each with its own weights
    outputs = [i for i in range(len(values)) if i not in consumed]
    weights = [[rng.uniform(-1.0, 1.0) for _ in range(values[i].size)] for i in outputs]
    return {"seed": seed, "inputs": inputs, "ops": ops, "outputs": outputs, "weights": weights}


def _pick(ch, values):
    """An operand index, most often the latest value (deep chains), else any value."""
    last = len(values) - 1
    return last if ch.boolean() else ch.integer(0, last)


def _draw_op(ch, rng, values):
    family = ch.choice(["unary"] * 4 + ["binary"] * 4 + ["reduction"] * 2 + ["shape"] * 2 + ["join"] * 2 + ["linalg"])
    i = _pick(ch, values)
    a = values[i]
    if family == "unary":
        name = ch.choice(sorted(UNARY))
        params = {"form": ch.boolean(), "c": round(rng.uniform(0.5, 2.0) * (1 if ch.boolean() else -1), 3)}
        if not UNARY[name][1](a):
            return None
        return {"family": family, "name": name, "args": [i], "params": params}
    if family == "binary":
        name = ch.choice(sorted(BINARY))
        use_constant = ch.choice([False, False, True])
        if use_constant:
            cshape = list(a.shape[ch.integer(0, a.ndim) :]) if a.ndim else []
            cshape = [d if ch.boolean() else 1 for d in cshape]
            cvals = _input_values(rng, cshape, name in ("power",) or ch.boolean())
            b = onp.array(cvals).reshape(cshape)
            j = {"const": cvals, "shape": cshape}
        else:
            j = _pick(ch, values)
            b = values[j]
        try:
            out_shape = onp.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            return None
        swap = ch.boolean() and not use_constant
        x, y = (b, a) if swap else (a, b)
        if not BINARY[name][1](x, y):
            return None
        params = {"form": ch.boolean()}
        if name == "where":
            params["mshape"] = list(out_shape)
            params["mask"] = [rng.random() < 0.5 for _ in range(int(onp.prod(out_shape, dtype=int)))]
        args = [j, i] if swap else [i, j]
        return {"family": family, "name": name, "args": args, "params": params}
    if family == "reduction":
        name = ch.choice(sorted(REDUCTIONS))
        axis = ch.choice([None] + list(range(-a.ndim, a.ndim)))
        if name == "cumsum" and axis is None and a.ndim > 1:
            axis = 0
        params = {"axis": axis, "keepdims": ch.boolean()}
        if not _axis_ok(a.shape, axis) or not REDUCTIONS[name][1](a, params):
            return None
        return {"family": family, "name": name, "args": [i], "params": params}
    if family == "shape":
        name = ch.choice(sorted(SHAPE_OPS))
        if not SHAPE_OPS[name][1](a.shape):
            return None
        params = {"form": ch.boolean()}
        if name == "broadcast":
            params["shape"] = [ch.integer(1, 3)] + list(a.shape)
        if name == "index":
            kind = ch.choice(["first", "reverse", "tail", "fancy", "mask"])
            params["kind"] = kind
            n = a.shape[0]
            if kind == "fancy":
                params["idx"] = [rng.randrange(n) for _ in range(ch.integer(1, 4))]
            if kind == "mask":
                params["mask"] = [rng.random() < 0.6 for _ in range(n)]
                if not any(params["mask"]):
                    params["mask"][0] = True
        return {"family": family, "name": name, "args": [i], "params": params}
    if family == "linalg":
        name = ch.choice(sorted(LINALG))
        square = [k for k, v in enumerate(values) if v.ndim == 2 and v.shape[0] == v.shape[1]]
        if not square:
            return None
        i = ch.choice(square)
        if not _linalg_feasible(name, values[i]):
            return None
        return {"family": family, "name": name, "args": [i], "params": {}}
    # joins
    name = ch.choice(sorted(JOINS))
    j = _pick(ch, values)
    b = values[j]
    params = {"form": ch.boolean(), "axis": 0}
    if name == "concatenate" and not (a.ndim >= 1 and b.ndim == a.ndim and a.shape[1:] == b.shape[1:]):
        return None
    if name == "stack":
        if a.shape != b.shape:
            return None
        params["axis"] = ch.integer(0, a.ndim)
    if name == "matmul":
        if not (1 <= a.ndim <= 2 and 1 <= b.ndim <= 2 and a.shape[-1] == b.shape[0]):
            return None
    if name == "concatenate-last" and not (a.ndim >= 1 and b.ndim == a.ndim and a.shape[:-1] == b.shape[:-1]):
        return None
    if name in ("outer", "kron") and not (a.ndim <= 1 and b.ndim <= 1):
        return None
    if name == "einsum" and a.size != b.size:
        return None
    if name == "tensordot" and not (a.ndim >= 1 and b.ndim >= 1 and a.shape[-1] == b.shape[0]):
        return None
    if name == "inner" and not (a.ndim >= 1 and b.ndim >= 1 and a.shape[-1] == b.shape[-1]):
        return None
    if name == "vdot" and a.size != b.size:
        return None
    if name == "solve" and not (
        a.ndim == 2 and a.shape[0] == a.shape[1] and b.ndim in (1, 2) and b.shape[0] == a.shape[0]
    ):
        return None
    return {"family": family, "name": name, "args": [i, j], "params": params}


def apply_op(N, op, values, constant_dtype=onp.float64):
    family, name, params = op["family"], op["name"], op["params"]
    args = []
    for k in op["args"]:
        if isinstance(k, dict):
            args.append(onp.array(k["const"], dtype=constant_dtype).reshape(k["shape"]))
        else:
            args.append(values[k])
    if family == "unary":
        return UNARY[name][0](N, args[0], params)
    if family == "binary":
        return BINARY[name][0](N, args[0], args[1], params)
    if family == "reduction":
        return REDUCTIONS[name][0](N, args[0], params)
    if family == "shape":
        return SHAPE_OPS[name][0](N, args[0], params)
    if family == "linalg":
        return LINALG[name](N, args[0], params)
    return JOINS[name](N, args[0], args[1], params)


def make_inputs(prog, force_float64=False):
    xs = []
    for inp in prog["inputs"]:
        dtype = onp.float64 if force_float64 else DTYPES[inp["dtype"]]
        x = onp.array(inp["values"], dtype=dtype).reshape(inp["shape"])
        if inp["kind"] == "pyfloat" and not force_float64:
            x = float(x)
        elif inp["kind"] == "npscalar" and not force_float64:
            x = x[()]
        xs.append(x)
    return xs


def make_function(prog, N):
    """The program as a function of its inputs, over the array module N."""

    def f(*xs):
        values = list(xs)
        for op in prog["ops"]:
            values.append(apply_op(N, op, values))
        total = 0.0
        for i, w in zip(prog["outputs"], prog["weights"]):
            v = values[i]
            weights = onp.array(w, dtype=onp.float64).reshape(onp.shape(v))
            total = total + N.sum(v * weights)
        return total

    return f


def describe(prog):
    lines = ["inputs: " + ", ".join("{}{} {}".format(i["kind"], i["shape"], i["dtype"]) for i in prog["inputs"])]
    for k, op in enumerate(prog["ops"]):
        lines.append(
            "  v{} = {}({}) {}".format(
                len(prog["inputs"]) + k,
                op["name"],
                ", ".join(
                    "v{}".format(a) if not isinstance(a, dict) else "const{}".format(a["shape"]) for a in op["args"]
                ),
                {k: v for k, v in op["params"].items() if k not in ("mask", "idx")},
            )
        )
    lines.append("  output: weighted sums of v{}".format(prog["outputs"]))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# The checks


def fastgrad_value_and_grads(prog):
    xs = make_inputs(prog)
    argnums = tuple(range(len(xs)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, grads = fastgrad.value_and_grad(make_function(prog, fnp), argnums)(*xs)
    return xs, value, grads


def central_differences(prog):
    f = make_function(prog, onp)
    xs = make_inputs(prog, force_float64=True)
    grads = []
    for k, x in enumerate(xs):
        g = onp.zeros(x.shape)
        for idx in onp.ndindex(*x.shape):
            plus = [v.copy() for v in xs]
            minus = [v.copy() for v in xs]
            plus[k][idx] += FD_EPS
            minus[k][idx] -= FD_EPS
            g[idx] = (f(*plus) - f(*minus)) / (2 * FD_EPS)
        grads.append(g)
    return grads


def _close(actual, expected, rtol, atol_scale, what, prog):
    actual = onp.asarray(actual, dtype=onp.float64)
    expected = onp.asarray(expected, dtype=onp.float64)
    assert actual.shape == expected.shape, "{}: shape {} != {}\n{}".format(
        what, actual.shape, expected.shape, describe(prog)
    )
    scale = max(1.0, float(onp.abs(expected).max(initial=0.0)))
    err = onp.abs(actual - expected)
    ok = err <= rtol * onp.abs(expected) + atol_scale * scale
    assert ok.all(), "{}: max error {:.3g} (scale {:.3g})\nactual   {}\nexpected {}\n{}".format(
        what, float(err.max()), scale, actual.ravel()[:8], expected.ravel()[:8], describe(prog)
    )


def _agrees(reference, numeric):
    reference = onp.asarray(reference, dtype=onp.float64)
    if reference.shape != numeric.shape or not onp.all(onp.isfinite(reference)):
        return False
    scale = max(1.0, float(onp.abs(numeric).max(initial=0.0)))
    return bool(onp.all(onp.abs(reference - numeric) <= 1e-3 * onp.abs(numeric) + 1e-4 * scale))


def check_program(prog):
    xs, value, grads = fastgrad_value_and_grads(prog)
    low_precision = any(inp["dtype"] == "float32" for inp in prog["inputs"])
    rtol_value = 2e-5 if low_precision else 1e-12

    # the value is NumPy's
    with onp.errstate(all="ignore"):
        expected_value = make_function(prog, onp)(*make_inputs(prog))
    assert onp.shape(value) == ()
    _close(value, expected_value, rtol_value, rtol_value, "value", prog)

    # shapes and dtypes of the gradients
    assert isinstance(grads, tuple) and len(grads) == len(xs)
    for inp, g in zip(prog["inputs"], grads):
        assert not isinstance(g, fastgrad.extend.Box), "a box escaped:\n" + describe(prog)
        assert onp.shape(g) == tuple(inp["shape"]), describe(prog)
        expected_dtype = onp.dtype(onp.float32 if inp["dtype"] == "float32" else onp.float64)
        assert onp.asarray(g).dtype == expected_dtype, "gradient dtype {} for a {} input\n{}".format(
            onp.asarray(g).dtype, inp["dtype"], describe(prog)
        )

    # central differences (float64 program)
    numeric = central_differences(prog)
    for k, (g, n) in enumerate(zip(grads, numeric)):
        if low_precision:
            _close(g, n, 5e-3, 5e-3, "gradient {} vs central differences (float32)".format(k), prog)
        else:
            _close(g, n, 1e-5, 1e-6, "gradient {} vs central differences".format(k), prog)

    # autograd, on the same program
    if autograd is not None:
        try:
            with warnings.catch_warnings(), onp.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                ref = autograd.grad(make_function(prog, anp), tuple(range(len(xs))))(*make_inputs(prog))
        except Exception:
            # autograd's own limits (broadcast_to adding leading dims, cumsum of a
            # Python float...): central differences above are the check for these
            return
        for k, (g, r, n) in enumerate(zip(grads, ref, numeric)):
            if not _agrees(r, n):
                continue  # autograd is wrong here (e.g. NaN for the var of one element)
            if low_precision:
                _close(g, r, 2e-3, 2e-3, "gradient {} vs autograd (float32)".format(k), prog)
            else:
                _close(g, r, 1e-10, 1e-12, "gradient {} vs autograd".format(k), prog)


def check_forward_mode(prog, direction_seed):
    """make_jvp along a random direction of one input equals <gradient, direction>."""
    xs, _, grads = fastgrad_value_and_grads(prog)
    rng = onp.random.RandomState(direction_seed)
    k = direction_seed % len(xs)
    if isinstance(xs[k], float):
        v = float(rng.uniform(-1, 1))
    else:
        v = rng.uniform(-1, 1, size=xs[k].shape).astype(xs[k].dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, tangent = fastgrad.make_jvp(make_function(prog, fnp), k)(*xs)(v)
    expected = float(onp.sum(onp.asarray(grads[k], dtype=onp.float64) * onp.asarray(v, dtype=onp.float64)))
    low = any(inp["dtype"] == "float32" for inp in prog["inputs"])
    assert onp.shape(tangent) == (), describe(prog)
    _close(
        tangent,
        expected,
        1e-3 if low else 1e-10,
        1e-3 if low else 1e-12,
        "forward-mode JVP vs reverse-mode gradient",
        prog,
    )


def check_second_order(prog, direction_seed):
    """The gradient of <gradient, v> (a Hessian-vector product, reverse over reverse)
    equals central differences of the gradient along v."""
    xs = make_inputs(prog, force_float64=True)
    k = direction_seed % len(xs)
    rng = onp.random.RandomState(direction_seed)
    v = rng.uniform(-1, 1, size=onp.shape(xs[k]))
    f = make_function(prog, fnp)
    grad_k = fastgrad.grad(f, k)

    def along(*args):
        return fnp.sum(grad_k(*args) * v)

    def shifted(t):
        moved = list(xs)
        moved[k] = xs[k] + t * v
        return onp.asarray(grad_k(*moved), dtype=onp.float64)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hvp = fastgrad.grad(along, k)(*xs)
        numeric = (shifted(FD_EPS) - shifted(-FD_EPS)) / (2 * FD_EPS)
    assert not isinstance(hvp, fastgrad.extend.Box), describe(prog)
    _close(hvp, numeric, 1e-4, 1e-5, "Hessian-vector product vs central differences", prog)


FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=False,
)


@FUZZ_SETTINGS
@given(st.data())
def test_random_programs_against_autograd_and_central_differences(data):
    prog = generate(HypothesisChooser(data))
    assume(len(prog["ops"]) >= 3)
    check_program(prog)


@settings(
    max_examples=max(EXAMPLES // 2, 20),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=False,
)
@given(st.data())
def test_random_programs_forward_mode_matches_reverse_mode(data):
    prog = generate(HypothesisChooser(data))
    assume(len(prog["ops"]) >= 3)
    check_forward_mode(prog, data.draw(st.integers(0, 2**16)))


@settings(
    max_examples=max(EXAMPLES // 5, 20),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=False,
)
@given(st.data())
def test_random_programs_second_order(data):
    prog = generate(HypothesisChooser(data))
    assume(len(prog["ops"]) >= 3)
    check_second_order(prog, data.draw(st.integers(0, 2**16)))


# ---------------------------------------------------------------------------------------
# The compiled and pure engines agree on the same (seeded) programs


def seeded_results(seeds, pass_name="backward_pass"):
    """{seed: [value, gradients as nested lists, their types]} of the selected engine, every
    backward pass run by its function ``pass_name``."""
    from fastgrad._engine import engine

    default = engine.backward_pass
    engine.backward_pass = getattr(engine, pass_name)  # (what fastgrad.core calls)
    try:
        out = {}
        for seed in seeds:
            prog = generate(RandomChooser(seed))
            _, value, grads = fastgrad_value_and_grads(prog)
            out[str(seed)] = [
                float(value),
                [onp.asarray(g, dtype=onp.float64).tolist() for g in grads],
                [[type(g).__name__, str(onp.asarray(g).dtype)] for g in grads],
            ]
        return out
    finally:
        engine.backward_pass = default


def _results_in_subprocess(seeds, pure, pass_name="backward_pass"):
    env = dict(os.environ)
    env.pop("FASTGRAD_REQUIRE_EXTENSIONS", None)
    if pure:
        env["FASTGRAD_PURE"] = "1"
    else:
        env.pop("FASTGRAD_PURE", None)
    tests = str(Path(__file__).resolve().parent)
    code = (
        "import sys, json; sys.path.insert(0, {!r}); import test_fuzz, fastgrad; "
        "print(json.dumps([fastgrad.COMPILED, test_fuzz.seeded_results({!r}, {!r})]))"
    ).format(tests, list(seeds), pass_name)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    compiled, results = json.loads(proc.stdout.strip().splitlines()[-1])
    return compiled, results


def _results(seeds, compiled, pass_name):
    """seeded_results of one engine: this process's, or a subprocess's for the other one."""
    if compiled == fastgrad.COMPILED:
        return seeded_results(seeds, pass_name)
    flag, results = _results_in_subprocess(seeds, not compiled, pass_name)
    if flag != compiled:
        assert compiled, "the subprocess did not use the pure engine"
        pytest.skip("the compiled engine is not available")
    return results


def _assert_agree(a, b, seeds, what):
    mismatches = []
    for seed in seeds:
        x, y = a[str(seed)], b[str(seed)]
        if x[2] != y[2] or not math.isclose(x[0], y[0], rel_tol=1e-13, abs_tol=1e-300):
            mismatches.append(seed)
            continue
        for gx, gy in zip(x[1], y[1]):
            if not onp.allclose(onp.array(gx), onp.array(gy), rtol=1e-12, atol=1e-300, equal_nan=True):
                mismatches.append(seed)
                break
    assert not mismatches, "{} differ on seeds {}: first:\n{}".format(
        what, mismatches[:10], describe(generate(RandomChooser(mismatches[0])))
    )


def test_compiled_and_pure_engines_agree_on_random_programs():
    seeds = list(range(PURE_PROGRAMS))
    compiled = _results(seeds, True, "backward_pass")
    pure = _results(seeds, False, "backward_pass")
    _assert_agree(compiled, pure, seeds, "compiled and pure engines")


def test_the_fallback_pass_agrees_with_the_default_on_random_programs():
    seeds = list(range(FALLBACK_PROGRAMS))
    default = _results(seeds, fastgrad.COMPILED, "backward_pass")
    for compiled in (fastgrad.COMPILED, not fastgrad.COMPILED):
        fallback = _results(seeds, compiled, "backward_pass_with_dicts")
        what = "the {} engine's fallback pass and the default one".format("compiled" if compiled else "pure")
        _assert_agree(default, fallback, seeds, what)
        if compiled == fastgrad.COMPILED:  # one engine, the same sums in the same order: the same bits
            assert fallback == default


def test_seeded_programs_are_checked_too():
    # the seeded programs of the engine comparison pass the same checks as hypothesis's
    for seed in range(min(PURE_PROGRAMS, 60)):
        check_program(generate(RandomChooser(seed)))


def test_generator_makes_varied_programs():
    # a guard against a generator that silently degenerates (e.g. every op rejected)
    progs = [generate(RandomChooser(seed)) for seed in range(200)]
    lengths = [len(p["ops"]) for p in progs]
    assert min(lengths) >= 3 and max(lengths) <= 12
    names = {op["name"] for p in progs for op in p["ops"]}
    assert len(names) >= 90, sorted(names)
    assert {i["dtype"] for p in progs for i in p["inputs"]} == {"float64", "float32"}
    assert {i["kind"] for p in progs for i in p["inputs"]} == {"array", "pyfloat", "npscalar"}
    assert max(len(i["shape"]) for p in progs for i in p["inputs"]) == 3
