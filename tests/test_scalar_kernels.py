"""The compiled engine's scalar kernels give exactly what they replace.

fastgrad.numpy switches a C kernel on for a primitive (forward) or a rule (reverse) only
after an import-time check on a few samples (fastgrad/numpy/_scalar_kernels.py).  These
tests check every switched-on kernel on many more values, bit for bit, and that the
cases a kernel leaves to NumPy (infinities, NaN, zero and subnormal results, errstate)
behave exactly as NumPy does.
"""

import warnings

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as np
from fastgrad import grad
from fastgrad._engine import engine
from fastgrad.core import primitive_vjps
from fastgrad.numpy import _scalar_kernels as kernels

pytestmark = pytest.mark.skipif(not fastgrad.COMPILED, reason="the pure engine has no scalar kernels")

_POSITIVE = ("log", "sqrt", "log1p", "log2", "log10")


def _values(n, seed, positive=False):
    rng = onp.random.RandomState(seed)
    v = onp.concatenate(
        [
            rng.uniform(-20, 20, n),
            rng.standard_normal(n) * 1e-3,
            rng.uniform(-1e6, 1e6, n // 4),
            [1.0, -1.0, 0.5, 1e-300, 1e300, 3.0],
        ]
    )
    return onp.abs(v) if positive else v


def _bits(x):
    return onp.float64(x).tobytes()


def _clean(r):
    return onp.isfinite(r) and abs(r) >= onp.finfo(onp.float64).tiny


def test_kernels_are_switched_on():
    # on this platform every arithmetic kernel and the libm ones NumPy agrees with
    names = set(kernels.ENABLED.values())
    assert {"add", "subtract", "multiply", "divide", "g", "g*y", "x*g", "g*cos(x)"} <= names
    for prim, argnums in kernels.REVERSE.items():
        for argnum in argnums:
            assert (prim, argnum) in kernels.ENABLED, (prim.__name__, argnum)


@pytest.mark.parametrize(
    "prim",
    sorted((p for p, key in kernels.ENABLED if key == "forward"), key=lambda p: (p.__name__, p.fun.__name__)),
    ids=lambda p: "{}-{}".format(p.__name__, getattr(p.fun, "__name__", "op")),
)
def test_forward_kernel_matches_numpy_bit_for_bit(prim):
    name = kernels.ENABLED[(prim, "forward")]
    binary = name in engine.scalar_kernel_names()[1]
    xs = _values(500, 1, positive=name in _POSITIVE)
    ys = _values(500, 2)[: len(xs)]
    with onp.errstate(all="ignore"):
        for x, y in zip(xs, ys):
            args = (onp.float64(x), onp.float64(y)) if binary else (onp.float64(x),)
            expected = prim.fun(*args)
            got = prim(*args)  # the primitive, by its kernel
            assert type(got) is onp.float64
            assert _bits(got) == _bits(expected), (x, y)
            if _clean(expected):
                assert _bits(engine.eval_scalar_kernel(name, *map(float, args))) == _bits(expected)


@pytest.mark.parametrize(
    "key",
    sorted((k for k in kernels.ENABLED if k[1] != "forward"), key=lambda k: (k[0].__name__, k[1], id(k[0]))),
    ids=lambda k: "{}-{}".format(k[0].__name__, k[1]),
)
def test_reverse_kernel_matches_python_rule_bit_for_bit(key):
    prim, argnum = key
    rule = primitive_vjps[prim]
    python_rule = rule.entries[argnum][1]
    unary = prim not in kernels._BINARY
    xs = _values(400, 3, positive=prim.__name__ in ("log", "sqrt"))
    ys, gs = _values(400, 4)[: len(xs)], _values(400, 5)[: len(xs)]
    with onp.errstate(all="ignore"):
        for x, y, g in zip(xs, ys, gs):
            args = (onp.float64(x),) if unary else (onp.float64(x), onp.float64(y))
            ans = prim.fun(*args)
            expected = python_rule(onp.float64(g), ans, *args)
            got = rule.one(argnum, onp.float64(g), ans, args, None)  # by the kernel
            assert type(got) is type(expected)
            assert _bits(got) == _bits(expected), (g, x, y)


def test_operator_on_two_python_floats_stays_python():
    # Python's operator gives a float there; the kernel leaves it alone
    from fastgrad.numpy import numpy_wrapper as anp

    assert type(anp.multiply_op(2.0, 3.0)) is float
    assert type(anp.multiply(2.0, 3.0)) is onp.float64  # the ufunc: a float64


def _run(f, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = f(x)
    return value, [str(w.message) for w in caught]


@pytest.mark.parametrize("case", ["log0", "overflow", "divide0", "sqrt-1"])
def test_values_numpy_warns_about_take_numpy_path(case):
    # kernels discard inf/nan/zero results: NumPy computes those, with its own warnings
    fun = {
        "log0": lambda m, x: m.log(x),
        "overflow": lambda m, x: x * 1e308 * 10.0,
        "divide0": lambda m, x: 1.0 / (x - 1.0),
        "sqrt-1": lambda m, x: m.sqrt(x),
    }[case]
    x = {"log0": 0.0, "overflow": 1.0, "divide0": 1.0, "sqrt-1": -1.0}[case]
    fg_value, fg_messages = _run(lambda v: fun(np, v), onp.float64(x))
    np_value, np_messages = _run(lambda v: fun(onp, v), onp.float64(x))
    assert type(fg_value) is type(np_value)
    assert _bits(fg_value) == _bits(np_value)
    assert fg_messages == np_messages and np_messages


@pytest.mark.parametrize(
    "f",
    [
        lambda x: onp.float64(2.0) * x * onp.float64(3.0),
        lambda x: onp.float64(2.0) - x,
        lambda x: x / onp.float64(3.0) + x,
        lambda x: np.sin(x) * onp.float64(2.0),
    ],
)
def test_a_float32_argument_gets_a_float32_cotangent(f):
    # the binary rules cast to their argument's dtype: a kernel must not skip that
    g = grad(f)(onp.float32(1.5))
    assert type(g) is onp.float32


def test_errstate_raise_is_honoured_in_forward_and_backward():
    with onp.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            grad(lambda x: x * 1e308 * 10.0)(onp.float64(1.0))
    with onp.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            grad(lambda x: np.log(x))(0.0)


def test_subnormal_results_take_numpy_path():
    tiny = onp.float64(1e-310)
    assert _bits(np.multiply(tiny, 0.5)) == _bits(onp.multiply(tiny, 0.5))
    with onp.errstate(under="raise"):
        with pytest.raises(FloatingPointError):
            np.multiply(onp.float64(1e-300), onp.float64(1e-300))


def test_scalar_gradients_equal_the_pure_rules():
    # a scalar program through every kernel: the gradient computed with kernels equals the
    # one computed by the Python rules alone (kernels switched off for the second run)
    def f(x):
        y = np.sin(x) * x + np.cos(x) / (x + 2.0) - np.exp(-x) * np.log(x + 3.0)
        y = y + np.sqrt(x * x + 1.0) - np.tanh(y) + np.square(y) - (-y)
        return y * 0.5 - x / 3.0

    xs = [0.1, 0.7, 1.3, 2.9]
    with_kernels = [grad(f)(x) for x in xs]
    saved = dict(kernels.ENABLED)
    try:
        engine.bind(scalar_kernels={}, scalar_vjps={})
        without = [grad(f)(x) for x in xs]
    finally:
        kernels.install()
    assert [_bits(a) for a in with_kernels] == [_bits(b) for b in without]
    assert kernels.ENABLED == saved
