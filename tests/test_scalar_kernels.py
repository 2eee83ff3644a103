"""The compiled engine's scalar kernels give exactly what they replace, on every CPU.

A kernel stands for a NumPy function only where it is exact on every CPU (IEEE
operations) or calls the very loop NumPy runs (fastgrad/numpy/_scalar_kernels.py).  These
tests compare every kernel bit for bit with NumPy (forward) and with the Python rule
(reverse) on thousands of values, edge cases included, and check that the cases a kernel
leaves to NumPy (infinities, NaN, zero and subnormal results, floating-point flags,
errstate) behave exactly as NumPy does.  CI runs them with NumPy's CPU dispatch
unrestricted and restricted (.ci/run), so NumPy's loops differ between the runs (on an
AVX-512 CPU, tan and arctan differ by an ulp on some inputs) and the tests do not.
"""

import warnings

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as np
from fastgrad import grad
from fastgrad._engine import engine
from fastgrad.core import primitive_vjps
from fastgrad.extend import defvjp, vspace
from fastgrad.numpy import _scalar_kernels as kernels
from fastgrad.numpy import numpy_wrapper as anp

pytestmark = pytest.mark.skipif(not fastgrad.COMPILED, reason="the pure engine has no scalar kernels")

_TINY = onp.finfo(onp.float64).tiny  # the smallest normal number
_HUGE = onp.finfo(onp.float64).max
_POSITIVE_RULES = ("log", "sqrt")  # reverse rules sampled on x > 0 (x < 0 is a nan: NumPy's path)


def _neighbours(v, ulps=2):
    """v and the floats up to ``ulps`` steps either side of it."""
    out, up, down = [v], v, v
    for _ in range(ulps):
        up, down = onp.nextafter(up, onp.inf), onp.nextafter(down, -onp.inf)
        out += [up, down]
    return out


def _specials():
    """Zeros, infinities, nan, subnormals, the ends of the normal range, and values near 1."""
    specials = [0.0, -0.0, onp.inf, -onp.inf, onp.nan, 5e-324, -5e-324, _TINY, -_TINY]
    specials += _neighbours(_TINY) + [onp.nextafter(_TINY, 0), _HUGE, -_HUGE, 1e308, -1e308]
    specials += _neighbours(1.0) + _neighbours(-1.0) + [0.5, -0.5, 2.0, 3.0, 10.0, 1e-300, 1e300]
    return specials


def _edge_values():
    specials = _specials()
    # where exp, expm1, sinh and cosh overflow or underflow to subnormals, and log1p's pole
    for t in (709.782712893384, 710.4758600739439, -708.3964185322641, -745.1332191019411, -744.44007):
        specials += _neighbours(t) + _neighbours(-t)
    specials += _neighbours(-1.0, 4)
    # near multiples of pi/2 (tan's poles, the zeros of sin and cos), small and large
    ks = list(range(-200, 201)) + [10**3 + 1, 10**5 + 3, 10**8 + 1, 10**12 + 1, 10**15 + 1]
    for k in ks:
        specials += _neighbours(k * onp.pi / 2, 1)
    return onp.array(specials, dtype=onp.float64)


def _values(n, seed):
    """About 3.3 n random values over the whole float64 range, and the edge cases."""
    rng = onp.random.RandomState(seed)
    signs = rng.choice([-1.0, 1.0], n)
    return onp.concatenate(
        [
            rng.uniform(-20, 20, n),
            rng.standard_normal(n // 2) * 1e-3,
            rng.uniform(-1e6, 1e6, n // 4),
            signs * 10.0 ** rng.uniform(-307, 308, n),  # tiny to huge
            signs[: n // 4] * rng.uniform(0, _TINY, n // 4),  # subnormals
            rng.uniform(0, 3, n // 4),  # log's and sqrt's domain, finely
            _edge_values(),
        ]
    )


def _bits(x):
    return onp.float64(x).tobytes()


def _outcome(f, args):
    """f(*args)'s type and bits, or the exception it raises (Python's operators on two
    floats raise ZeroDivisionError where NumPy gives inf)."""
    try:
        r = f(*args)
    except ArithmeticError as e:  # FloatingPointError too
        return type(e), str(e)
    return type(r), _bits(r)


def _clean(r):
    return bool(onp.isfinite(r)) and abs(r) >= _TINY


def test_every_kernel_is_switched_on():
    # every NumPy loop the kernels call is bound, and every kernel of the tables is on
    assert kernels.LOOPS == dict.fromkeys(engine.numpy_loop_names())
    assert set(engine.bound_numpy_loops()) == set(engine.numpy_loop_names())
    for table in (kernels.FORWARD, kernels.OPERATOR_FORWARD, kernels.ELEMENT):
        for prim, name in table.items():
            assert kernels.ENABLED[(prim, "forward")] == name
    for prim, argnums in kernels.REVERSE.items():
        for argnum, name in argnums.items():
            assert kernels.ENABLED[(prim, argnum)] == name, (prim.__name__, argnum)


def test_each_numpy_loop_kernel_is_bound_to_its_own_ufunc():
    for name, ufunc in engine.bound_numpy_loops().items():
        assert ufunc is getattr(onp, name)
        assert engine.scalar_kernel_loop(name) == name  # the forward kernel of that name
    assert engine.scalar_kernel_loop("g*cos(x)") == "cos"
    assert engine.scalar_kernel_loop("-g*sin(x)") == "sin"
    for ieee in ("add", "divide", "negative", "square", "sqrt", "g", "g*y", "g*0.5/ans"):
        assert engine.scalar_kernel_loop(ieee) is None


_FORWARD = sorted(
    (p for p, key in kernels.ENABLED if key == "forward" and p not in kernels.ELEMENT),
    key=lambda p: (p.__name__, str(p.fun)),
)


def _unary(name):
    return name in engine.scalar_kernel_names()[0]


@pytest.mark.parametrize("prim", _FORWARD, ids=lambda p: "{}-{}".format(p.__name__, getattr(p.fun, "__name__", "op")))
def test_forward_kernel_matches_numpy_bit_for_bit(prim):
    name = kernels.ENABLED[(prim, "forward")]
    xs = _values(1500, 1)
    if _unary(name):
        cases = [(x,) for x in xs]
    else:
        edges = _specials()
        cases = list(zip(xs, _values(1500, 2)[: len(xs)])) + [(a, b) for a in edges for b in edges]
    f64 = onp.float64
    combos = [(f64,), (float,)] if _unary(name) else [(f64, f64), (float, float), (f64, float), (float, f64)]
    computed = 0
    with onp.errstate(all="ignore"):
        for case in cases:
            for types in combos:
                args = tuple(t(v) for t, v in zip(types, case))
                # the primitive, by its kernel where that applies
                assert _outcome(prim, args) == _outcome(prim.fun, args), args
            expected = prim.fun(*map(f64, case))
            if _clean(expected):
                assert _bits(engine.eval_scalar_kernel(name, *map(float, case))) == _bits(expected), case
                computed += 1
    assert computed > len(cases) // 3  # the kernel itself, not only NumPy's path, was checked


_SQUARING = [k for k, name in kernels.ENABLED.items() if name == "g*x*2 (y=2)"]
_REVERSE = sorted(
    (k for k in kernels.ENABLED if k[1] != "forward" and k[0] not in kernels.SCATTER and k not in _SQUARING),
    key=lambda k: (k[0].__name__, k[1], str(k[0].fun)),
)


@pytest.mark.parametrize("key", _REVERSE, ids=lambda k: "{}-{}".format(k[0].__name__, k[1]))
def test_reverse_kernel_matches_python_rule_bit_for_bit(key):
    prim, argnum = key
    rule = primitive_vjps[prim]
    python_rule = rule.entries[argnum][1]
    unary = prim not in kernels._BINARY
    xs = _values(1000, 3)
    if prim.__name__ in _POSITIVE_RULES:
        xs = onp.abs(xs)
    ys, gs = _values(1000, 4)[: len(xs)], _values(1000, 5)[: len(xs)]
    gs[::2] = onp.random.RandomState(6).uniform(-2, 2, len(gs[::2]))  # cotangents as they come
    computed = 0
    with onp.errstate(all="ignore"):
        for x, y, g in zip(xs, ys, gs):
            args = (onp.float64(x),) if unary else (onp.float64(x), onp.float64(y))
            ans = prim.fun(*args)
            for seed in (onp.float64(g), onp.array(g)):  # grad seeds with a 0-d array
                expected = python_rule(seed, ans, *args)
                got = rule.one(argnum, seed, ans, args, None)  # by the kernel where it applies
                assert type(got) is type(expected), (g, x, y)
                assert _bits(got) == _bits(expected), (g, x, y)
            # the kernel itself computed it (not only the Python rule ran)
            if _clean(expected) and engine.eval_rule_kernel(rule, argnum, onp.float64(g), ans, args) is not None:
                computed += 1
    assert computed > len(xs) // 3


@pytest.mark.parametrize("key", _SQUARING, ids=lambda k: "{}-{}".format(k[0].__name__, k[1]))
def test_squaring_kernel_matches_python_rule_bit_for_bit(key):
    # x ** 2: the kernel stands for the rule's branch for the exponent 2 or 2.0 only
    prim, argnum = key
    rule = primitive_vjps[prim]
    python_rule = rule.entries[argnum][1]
    xs, gs = _values(1000, 9), _values(1000, 10)
    gs[::2] = onp.random.RandomState(11).uniform(-2, 2, len(gs[::2]))
    computed = 0
    with onp.errstate(all="ignore"):
        for x, g in zip(xs, gs[: len(xs)]):
            for y in (2, 2.0, onp.float64(2.0), 3, 2.5):
                for base in (onp.float64(x), float(x)):
                    try:
                        ans = prim.fun(base, y)
                    except OverflowError:  # Python's ** on a float too large to square
                        continue
                    for seed in (onp.float64(g), onp.array(g)):
                        expected = _outcome(python_rule, (seed, ans, base, y))
                        got = _outcome(rule.one, (argnum, seed, ans, (base, y), None))
                        assert got == expected, (g, x, y)
            # the kernel computes where the result is normal and g * x did not underflow
            # (NumPy reports that under errstate(under=...): the rule runs then)
            if _clean(python_rule(onp.float64(g), onp.float64(x) ** 2, onp.float64(x), 2)) and (
                _clean(g * x) or g * x == 0 and (g == 0 or x == 0)
            ):
                for y in (2, 2.0):
                    assert engine.eval_rule_kernel(rule, argnum, onp.float64(g), 1.0, (onp.float64(x), y)) is not None
                for y in (onp.float64(2.0), 3):
                    assert engine.eval_rule_kernel(rule, argnum, onp.float64(g), 1.0, (onp.float64(x), y)) is None
                computed += 1
    assert computed > len(xs) // 3
    assert len(_SQUARING) == 2  # power and the ** operator


# ints a double holds exactly (a binary kernel takes one as an operand: NumPy converts it to
# that double), and ints it does not (NumPy computes those)
_EXACT_INTS = [0, 1, -1, 2, -2, 3, 7, -10, 1000, 2**31, -(2**31) - 1, 2**52 + 1, 2**53, -(2**53)]
_INEXACT_INTS = [2**53 + 1, -(2**53) - 1, 2**63 - 1, 2**64, -(2**70)]
_BINARY_FORWARD = [p for p in _FORWARD if not _unary(kernels.ENABLED[(p, "forward")])]
_BINARY_REVERSE = [k for k in _REVERSE if k[0] in kernels._BINARY]


def _ints(seed):
    return _EXACT_INTS + _INEXACT_INTS + [int(k) for k in onp.random.RandomState(seed).randint(-(10**6), 10**6, 20)]


def _any_outcome(f, args):
    """_outcome, for results of any dtype (NumPy 1 computes power with an int beyond int64
    on Python objects, which may give a complex)."""
    try:
        r = f(*args)
    except ArithmeticError as e:
        return type(e), str(e)
    return type(r), onp.asarray(r).dtype, onp.asarray(r).tobytes()


@pytest.mark.parametrize(
    "prim", _BINARY_FORWARD, ids=lambda p: "{}-{}".format(p.__name__, getattr(p.fun, "__name__", "op"))
)
def test_forward_kernel_with_an_int_operand_matches_numpy_bit_for_bit(prim):
    # x * 2, 1 - x: one operand an int, the other a float64 or a float
    floats = _values(60, 12)
    computed = 0
    with onp.errstate(all="ignore"):
        for v in floats:
            for k in _ints(13):
                for ftype in (onp.float64, float):
                    for args in ((ftype(v), k), (k, ftype(v))):
                        expected = _any_outcome(prim.fun, args)
                        assert _any_outcome(prim, args) == expected, args
                        by_kernel = engine.eval_primitive_kernel(prim, *args)
                        if by_kernel is not None:
                            assert _any_outcome(lambda: by_kernel, ()) == expected, args
                            assert abs(k) <= 2**53, args
                            computed += 1
        # two ints, or a bool: NumPy's (an int64 result, ...)
        for args in ((2, 3), (onp.float64(1.5), True), (False, 2.5)):
            assert engine.eval_primitive_kernel(prim, *args) is None
    assert computed > len(floats) * len(_EXACT_INTS) // 2


@pytest.mark.parametrize("key", _BINARY_REVERSE, ids=lambda k: "{}-{}".format(k[0].__name__, k[1]))
def test_reverse_kernel_with_an_int_operand_matches_python_rule_bit_for_bit(key):
    # the other operand an int (g * 2); the argument itself never (the rule casts to it)
    prim, argnum = key
    rule = primitive_vjps[prim]
    python_rule = rule.entries[argnum][1]
    reads_other = kernels.ENABLED[key] not in ("g", "-g")  # (those read only g)
    xs, gs = _values(60, 14), _values(60, 15)
    gs[::2] = onp.random.RandomState(16).uniform(-2, 2, len(gs[::2]))
    computed = 0
    with onp.errstate(all="ignore"):
        for x, g in zip(xs, gs[: len(xs)]):
            for k in _ints(17):
                args = (onp.float64(x), k) if argnum == 0 else (k, onp.float64(x))
                ans = prim.fun(*args)
                for seed in (onp.float64(g), onp.array(g)):
                    expected = _outcome(python_rule, (seed, ans) + args)
                    assert _outcome(rule.one, (argnum, seed, ans, args, None)) == expected, (g, args)
                if engine.eval_rule_kernel(rule, argnum, onp.float64(g), ans, args) is not None:
                    assert abs(k) <= 2**53 or not reads_other, args
                    computed += 1
                target_int = (k, onp.float64(x)) if argnum == 0 else (onp.float64(x), k)
                assert engine.eval_rule_kernel(rule, argnum, onp.float64(g), ans, target_int) is None
            if reads_other:  # a bool is not taken for an int
                args = (onp.float64(x), True) if argnum == 0 else (True, onp.float64(x))
                assert engine.eval_rule_kernel(rule, argnum, onp.float64(g), prim.fun(*args), args) is None
    assert computed > len(xs) * len(_EXACT_INTS) // 3


def test_operator_on_two_python_floats_stays_python():
    # Python's operator gives a float there; the kernel leaves it alone
    assert type(anp.multiply_op(2.0, 3.0)) is float
    assert type(anp.multiply(2.0, 3.0)) is onp.float64  # the ufunc: a float64


def _run(f, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = f(x)
    return value, [str(w.message) for w in caught]


@pytest.mark.parametrize("case", ["log0", "overflow", "divide0", "sqrt-1", "exp-big", "exp-subnormal"])
def test_values_numpy_warns_about_take_numpy_path(case):
    # kernels discard inf/nan/zero/subnormal results: NumPy computes those, with its own warnings
    fun = {
        "log0": lambda m, x: m.log(x),
        "overflow": lambda m, x: x * 1e308 * 10.0,
        "divide0": lambda m, x: 1.0 / (x - 1.0),
        "sqrt-1": lambda m, x: m.sqrt(x),
        "exp-big": lambda m, x: m.exp(x),
        "exp-subnormal": lambda m, x: m.exp(x),
    }[case]
    x = {"log0": 0.0, "overflow": 1.0, "divide0": 1.0, "sqrt-1": -1.0, "exp-big": 710.0, "exp-subnormal": -745.0}[case]
    with onp.errstate(all="warn"):
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


# programs whose gradient's value is normal, but where the first of the two operations of a
# reverse rule underflows: tanh's ans * ans, sqrt's g * 0.5, x ** 2's g * x (g is the
# constant the first factor is multiplied by; that first factor is 0 or 3 in the forward pass)
_UNDERFLOW_INSIDE = {
    "tanh": (lambda x: np.tanh(x) * 3.0, onp.float64(1e-160)),
    "sqrt": (lambda x: (np.sqrt(x) - 1e-150) * 3e-308, onp.float64(1e-300)),
    "square": (lambda x: (x**2 - 2.25) * 1.2e-308, onp.float64(1.5)),
    # a zero cotangent: the rule's zero is exact, but its ans * ans underflowed all the same
    "tanh, zero cotangent": (lambda x: np.tanh(x) * 0.0, onp.float64(1e-160)),
}


@pytest.mark.parametrize("case", sorted(_UNDERFLOW_INSIDE))
def test_an_underflow_inside_a_reverse_rule_is_reported_as_numpy_does(case):
    # the kernel checks its final result only: where its first operation underflows, it
    # leaves the cotangent to the rule, whose NumPy operations report it
    f, x = _UNDERFLOW_INSIDE[case]
    for mode in ("raise", "warn", "ignore"):
        outcomes = []
        for g in (grad(f), lambda v: _without_kernels(grad(f), v)):
            with onp.errstate(all="ignore", under=mode), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                outcome = _outcome(g, (x,))
            outcomes.append((outcome, [str(w.message) for w in caught]))
        assert outcomes[0] == outcomes[1], (mode, outcomes)
        if mode == "raise":  # (the case does underflow)
            assert outcomes[0][0][0] is FloatingPointError


def test_subnormal_results_take_numpy_path():
    tiny = onp.float64(1e-310)
    assert _bits(np.multiply(tiny, 0.5)) == _bits(onp.multiply(tiny, 0.5))
    with onp.errstate(under="raise"):
        with pytest.raises(FloatingPointError):
            np.multiply(onp.float64(1e-300), onp.float64(1e-300))
    # a product that rounds up to the smallest normal number: whether it underflowed depends
    # on the CPU (x86 detects tininess before rounding), NumPy reports what it raised
    args = (onp.float64(5.562684646268003e-308), onp.nextafter(onp.float64(0.4), 0.0))
    for mode in ("raise", "warn", "ignore"):
        with onp.errstate(all=mode):
            ours = _run(lambda a: _outcome(np.multiply, a), args)
            theirs = _run(lambda a: _outcome(onp.multiply, a), args)
        assert ours == theirs, (mode, ours, theirs)
    # whether NumPy's loop reports the underflow depends on the loop (NumPy 1.24's AVX-512
    # sin does not): fastgrad does what NumPy does
    for name in engine.numpy_loop_names():
        for x in (1e-310, -1e-310, 5e-324, -745.0, 1e-200):
            # (power: the subnormal base squared, and a power that underflows)
            args = (onp.float64(x),) if getattr(onp, name).nin == 1 else (onp.float64(x), 2)
            for mode in ("raise", "ignore"):
                with onp.errstate(all=mode):
                    assert _outcome(getattr(np, name), args) == _outcome(getattr(onp, name), args), (name, x)


def test_a_floating_point_flag_left_up_by_other_code_is_not_reported():
    # NumPy clears the flags before its loop and reports what its loop raised; a kernel
    # that calls NumPy's loop sees a flag already up (here: an underflow in Python float
    # arithmetic) and leaves that call to NumPy, which does not report it either
    small = 1e-300
    for prim in (np.sin, np.exp, np.tanh, np.arctan):
        with onp.errstate(all="raise"):
            _ = small * small  # underflows: the flag stays up
            got = prim(onp.float64(0.5))
            again = prim(onp.float64(0.5))
        assert _bits(got) == _bits(again) == _bits(prim.fun(onp.float64(0.5)))


def test_scalar_gradients_equal_the_pure_rules():
    # a scalar program through every kernel: the gradient computed with kernels equals the
    # one computed by the Python rules alone (kernels switched off for the second run)
    def f(x):
        y = np.sin(x) * x + np.cos(x) / (x + 2.0) - np.exp(-x) * np.log(x + 3.0)
        y = y + np.sqrt(x * x + 1.0) - np.tanh(y) + np.square(y) - (-y) + np.tan(x) * np.arctan(y)
        return y * 0.5 - x / 3.0 + np.log1p(x) + np.expm1(-x) + np.sinh(x) / np.cosh(y)

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


def _without_kernels(f, *args):
    try:
        engine.bind(scalar_kernels={}, scalar_vjps={})
        return f(*args)
    finally:
        kernels.install()


_SCATTER_CASES = {
    # a loop over the elements: every index once, some twice, from either end
    "loop": (lambda x: sum(x[i] * x[i] for i in range(5)) + x[-1] * x[0], onp.arange(1.0, 6.0)),
    "tuple index": (lambda x: x[1, 2] * x[0, -1] + np.sin(x[(1, 0)]), onp.arange(6.0).reshape(2, 3) + 0.5),
    # the pending sum begins dense (borrowed), then gets an element
    "dense first": (lambda x: np.sum(x * 2.0) + x[1] * 3.0, onp.array([1.0, 2.0, 3.0])),
    "element first": (lambda x: x[1] * 3.0 + np.sum(x * 2.0), onp.array([1.0, 2.0, 3.0])),
    # what the kernel leaves to the rule: another dtype, NumPy integers, slices, arrays of
    # indices, a 0-d array, a non-finite sum (inf + -inf)
    "float32": (lambda x: x[0] * x[1], onp.array([1.5, 2.5], dtype=onp.float32)),
    "byte-swapped": (lambda x: x[0] * x[1] + x[1], onp.array([1.5, 2.5], dtype=">f8")),
    "numpy int": (lambda x: x[onp.int64(1)] * 2.0, onp.array([1.0, 2.0])),
    "slice": (lambda x: np.sum(x[1:] * x[:-1]), onp.array([1.0, 2.0, 4.0])),
    "fancy": (lambda x: np.sum(x[[0, 0, 1]] ** 2), onp.array([1.0, 2.0])),
    "zero-d": (lambda x: x[()] * 3.0, onp.array(2.0)),
    "non-finite": (lambda x: x[0] * onp.inf + x[0] * -onp.inf + x[1], onp.array([1.0, 2.0])),
}


@pytest.mark.parametrize("case", sorted(_SCATTER_CASES))
def test_indexing_transpose_adds_into_the_sum_as_the_rule_does(case):
    # the engine adds x[i]'s cotangent into x's sum itself where it gives the rule's bits
    f, x = _SCATTER_CASES[case]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with onp.errstate(all="warn"):
            got = grad(f)(x)
    with warnings.catch_warnings(record=True) as caught_without:
        warnings.simplefilter("always")
        with onp.errstate(all="warn"):
            expected = _without_kernels(grad(f), x)
    assert type(got) is type(expected) and got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes(), (got, expected)
    assert [str(w.message) for w in caught] == [str(w.message) for w in caught_without]


def test_indexing_transpose_to_second_order_and_in_the_grads_of_random_loops():
    f = lambda x: sum(x[i] ** 3 * x[(i + 1) % 4] for i in range(4))
    x = onp.array([0.3, -1.2, 2.5, 0.7])
    hess = fastgrad.hessian(f)(x)
    assert hess.tobytes() == _without_kernels(fastgrad.hessian(f), x).tobytes()
    rng = onp.random.RandomState(8)
    for _ in range(50):
        x = rng.standard_normal(rng.randint(1, 6)) * 10.0 ** rng.randint(-300, 300)
        picks = rng.randint(-len(x), len(x), 8)

        def loop(x, picks=picks):
            s = 0.0
            for i in picks:
                s = s + x[int(i)] * onp.float64(rng.standard_normal())
            return s

        state = rng.get_state()
        got = grad(loop)(x)
        rng.set_state(state)
        expected = _without_kernels(grad(loop), x)
        assert got.tobytes() == expected.tobytes()


class _Sub(onp.ndarray):
    pass


def _element_cases():
    """(array, index) pairs: ones the element kernel reads, and ones it leaves to NumPy."""
    bits = onp.array([0.0, -0.0, 5e-324, -_TINY, _HUGE, onp.inf, -onp.inf, 1.5, -2.25])
    payload = onp.frombuffer(bytes.fromhex("0100000000f8ff7f"), dtype=onp.float64)  # a nan with a payload
    x = onp.concatenate([bits, payload])
    grid = onp.arange(24.0).reshape(2, 3, 4) + 0.5
    raw = onp.zeros(8 * 4 + 1, dtype=onp.uint8)
    unaligned = raw[1:].view(onp.float64)  # float64s at an odd address
    unaligned[:] = [1.25, -3.5, 7.0, 0.1]
    frozen = x.copy()
    frozen.flags.writeable = False
    cases = [(x, i) for i in range(-len(x), len(x))]
    cases += [(grid, (i, j, k)) for i in (0, 1, -1) for j in (0, 2, -3) for k in (0, 3, -4)]
    cases += [(x[::3], 2), (grid.T, (3, 2, 1)), (onp.asfortranarray(grid), (1, 2, 3)), (unaligned, 3), (frozen, 1)]
    cases += [(onp.arange(3.0), (1,)), (onp.array([2.0]), 0), (onp.array([2.0]), -1)]
    # left to NumPy: out of range, not an int, another dtype or byte order, a subclass, ...
    cases += [(x, len(x)), (x, -len(x) - 1), (x, 10**30), (x, -(10**30)), (x, 2**63), (x, True), (x, False)]
    cases += [(x, onp.int64(1)), (x, 1.0), (x, None), (x, slice(1, 3)), (x, Ellipsis), (x, [1, 2]), (x, (1, 2))]
    cases += [
        (grid, 1),
        (grid, (1, 2)),
        (grid, (1, 2, 3, 0)),
        (grid, (1, 2, 4)),
        (grid, (1, 2.0, 3)),
        (grid, (1, 2, True)),
    ]
    cases += [(grid, (0, Ellipsis, 1)), (onp.array(2.5), ()), (onp.array(2.5), 0), (onp.zeros(0), 0)]
    cases += [
        (bits[-2:].astype(onp.float32), 1),
        (x.astype(">f8"), 1),
        (x.astype(onp.complex128), 2),
        (onp.arange(4), 1),
    ]
    cases += [(onp.array([1.5, None], dtype=object), 0), (x.view(_Sub), 1), (onp.array([[1.5, 2.5]]), (0, -1))]
    return cases


def _read(f, a, idx):
    """f(a, idx)'s type and bytes, or the exception it raises (type and message)."""
    try:
        r = f(a, idx)
    except Exception as e:  # (each one is compared, type and message)
        return type(e), str(e)
    return type(r), onp.asarray(r).tobytes(), onp.shape(r)


def test_element_read_is_numpy_s_indexing():
    # the forward kernel of A[idx] reads one element of a float64 array itself; the element,
    # its type, and every error are NumPy's, for the cases it takes and those it leaves
    import operator

    assert kernels.ENABLED[(anp.getitem, "forward")] == "A[idx]"
    cases = _element_cases()
    read = sum(1 for a, idx in cases if type(a) is onp.ndarray and _read(operator.getitem, a, idx)[0] is onp.float64)
    assert read > 40
    for a, idx in cases:
        assert _read(anp.getitem, a, idx) == _read(operator.getitem, a, idx), (a.dtype, a.shape, idx)
        # traced: the same value, and the cotangent where the read succeeds
        if type(a) is onp.ndarray and a.dtype == onp.float64 and _read(operator.getitem, a, idx)[0] is onp.float64:
            vjp, value = fastgrad.make_vjp(lambda a, idx=idx: a[idx])(a)
            assert _read(lambda v, i: v, value, None) == _read(operator.getitem, a, idx)
            expected = onp.zeros(a.shape)
            expected[idx] = 1.0
            assert vjp(1.0).tobytes() == expected.tobytes()


def test_the_element_kernel_is_for_indexing_only():
    try:
        with pytest.raises(ValueError, match="is for a primitive of operator.getitem"):
            engine.bind(scalar_kernels={anp.multiply: ("A[idx]", False)})
    finally:
        kernels.install()
    assert kernels.ENABLED[(anp.getitem, "forward")] == "A[idx]"
    assert np.multiply(onp.float64(2.0), 3.0) == 6.0


def test_the_indexing_kernel_is_for_the_array_argument_only():
    try:
        with pytest.raises(ValueError, match="is for argnum 0"):
            engine.bind(scalar_vjps={(primitive_vjps[anp.multiply], 1): ("A[idx]+=g", False)})
    finally:
        kernels.install()
    # a rule given for indexing replaces the engine's shortcut with it
    saved = primitive_vjps[anp.getitem]
    try:
        defvjp(anp.getitem, lambda ans, A, idx: lambda g: anp.untake(2.0 * g, idx, vspace(A)))
        assert grad(lambda x: x[1] * 3.0)(onp.array([1.0, 2.0])).tolist() == [0.0, 6.0]
    finally:
        primitive_vjps[anp.getitem] = saved
    assert grad(lambda x: x[1] * 3.0)(onp.array([1.0, 2.0])).tolist() == [0.0, 3.0]


def test_exact_zeros_are_numpy_s_bits_with_nothing_raised():
    # a zero that raised no flag (a zero operand, a sum that cancels) is kept from the
    # kernel: its sign and type are NumPy's, and errstate(all="raise") has nothing to raise
    f64 = onp.float64
    pairs = [(0.0, 3.0), (-0.0, 3.0), (0.0, -3.0), (2.5, -2.5), (-2.5, 2.5), (-0.0, -0.0), (5e-324, -5e-324)]
    with onp.errstate(all="raise"):
        for prim in (np.multiply, np.add, np.subtract, anp.multiply_op, anp.add_op, anp.subtract_op):
            for a, b in pairs:
                assert _outcome(prim, (f64(a), f64(b))) == _outcome(prim.fun, (f64(a), f64(b))), (prim, a, b)
        for prim in (np.sin, np.tan, np.sinh, np.tanh, np.arctan, np.negative, np.square):
            for v in (0.0, -0.0):
                assert _outcome(prim, (f64(v),)) == _outcome(prim.fun, (f64(v),)), (prim, v)
        # flagged ones still raise: an underflow to zero, 0 * inf
        with pytest.raises(FloatingPointError):
            np.multiply(f64(1e-300), f64(1e-300))
        with pytest.raises(FloatingPointError):
            np.multiply(f64(0.0), f64(onp.inf))


def test_a_vanishing_gradient_equals_the_python_rules():
    # the cotangent decays to subnormals, then to exact zeros (W1's chain does so)
    def chain(x):
        for _ in range(600):
            x = np.sin(x) * x + 0.1
        return x

    def mixed(x):
        y = np.exp(-x * 800.0) * np.cos(x) - np.tanh(x) * 0.0 + np.square(x) * -0.0
        return y / (x + 1.0) + np.log(x) * 0.0

    for f, x in ((chain, 0.5), (chain, onp.float64(-0.3)), (mixed, 0.9), (mixed, onp.float64(2.0))):
        with onp.errstate(all="ignore"):
            got = grad(f)(x)
            expected = _without_kernels(grad(f), x)
        assert type(got) is type(expected) and _bits(got) == _bits(expected), f.__name__


def test_a_kernel_needs_its_loop_bound_from_its_own_ufunc():
    try:
        # bound from another ufunc, or from something that is not NumPy's ufunc: refused
        for impostor in (onp.cos, lambda x: x):
            engine.bind(numpy_loops={"sin": impostor, "cos": onp.cos})
            assert "not NumPy's ufunc sin" in engine.numpy_loop_status()["sin"]
            assert "sin" not in engine.bound_numpy_loops()
        with pytest.raises(ValueError, match="no NumPy loop named 'sine'"):
            engine.bind(numpy_loops={"sine": onp.sin})
        # an unbound loop: its kernels cannot be switched on, and one left on computes
        # nothing (the primitive and its rule run NumPy's and the Python code)
        with pytest.raises(ValueError, match="calls NumPy's loop for 'sin', which is not bound"):
            engine.bind(scalar_kernels={anp.sin: ("sin", False)})
        with pytest.raises(ValueError, match="calls NumPy's loop for 'sin', which is not bound"):
            engine.bind(scalar_vjps={(primitive_vjps[anp.cos], 0): ("-g*sin(x)", False)})
        assert onp.isnan(engine.eval_scalar_kernel("sin", 0.5))
        x = onp.float64(0.5)
        assert _bits(np.sin(x)) == _bits(onp.sin(x))
        assert _bits(grad(np.cos)(x)) == _bits(-onp.sin(x))
        # a loop bound in the same call counts, and a refused call changes nothing
        with pytest.raises(ValueError, match="calls NumPy's loop for 'cos', which is not bound"):
            engine.bind(numpy_loops={"sin": onp.sin}, scalar_kernels={anp.cos: ("cos", False)})
        assert "sin" not in engine.bound_numpy_loops()
        engine.bind(numpy_loops={"sin": onp.sin, "cos": onp.cos}, scalar_kernels={anp.sin: ("sin", False)})
        assert engine.numpy_loop_status()["sin"] is None
        # a kernel stands for the ufunc its loop came from only
        assert engine.numpy_loop_status()["cos"] is None
        with pytest.raises(ValueError, match="stands for <ufunc 'cos'> only"):
            engine.bind(scalar_kernels={anp.sin: ("cos", False)})
    finally:
        kernels.install()
    assert kernels.LOOPS["sin"] is None and _bits(engine.eval_scalar_kernel("sin", 0.5)) == _bits(onp.sin(0.5))


def test_binding_leaves_numpy_computing_as_before():
    # the probe stands in for NumPy's loop only while binding, and forwards to it
    xs, ys = _values(200, 7), _values(200, 8)
    names = engine.numpy_loop_names()

    def operands(name, x, y):
        return (x,) if getattr(onp, name).nin == 1 else (x, y)

    with onp.errstate(all="ignore"):
        arrays = {name: getattr(onp, name)(*operands(name, xs, ys)).tobytes() for name in names}
        scalars = {
            name: [_bits(getattr(onp, name)(*operands(name, onp.float64(x), y))) for x, y in zip(xs[:50], ys)]
            for name in names
        }
        kernels.install()
        for name in names:
            ufunc = getattr(onp, name)
            assert ufunc(*operands(name, xs, ys)).tobytes() == arrays[name]
            assert [_bits(ufunc(*operands(name, onp.float64(x), y))) for x, y in zip(xs[:50], ys)] == scalars[name]
