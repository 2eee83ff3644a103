"""Random scalar programs at the edges of float64: the scalar kernels change nothing.

test_fuzz.py keeps its programs away from domain edges, overflow and underflow.  Here
the inputs and constants are those edges (zeros, subnormals, tiny and huge numbers,
other dtypes, 0-d arrays, byte-swapped arrays), and each program's gradient, to first and
second order, under np.errstate(all="warn") and (all="raise"), is computed twice in this
process: with the kernels, and with them switched off (the Python rules alone).  Both
must give the same type, dtype and bits with the same warnings, or the same error.  Both
runs call the same NumPy loops, so the comparison holds on any CPU.
"""

import warnings

import numpy as onp
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import fastgrad  # noqa: E402
import fastgrad.numpy as np  # noqa: E402
from fastgrad import grad  # noqa: E402
from fastgrad._engine import engine  # noqa: E402
from fastgrad.numpy import _scalar_kernels as kernels  # noqa: E402

pytestmark = pytest.mark.skipif(not fastgrad.COMPILED, reason="the pure engine has no scalar kernels")

UNARY = [
    np.sin, np.cos, np.tan, np.exp, np.log, np.sqrt, np.tanh, np.square, np.negative, np.expm1,
    np.log1p, np.arctan, np.sinh, np.cosh, np.log2, np.log10, np.abs,
    lambda x: -x, lambda x: x**2, lambda x: x**3, lambda x: x**0.5, lambda x: 1.0 / x, lambda x: x * x,
]  # fmt: skip
BINARY = [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b, lambda a, b: a**b,
    np.add, np.subtract, np.multiply, np.divide, np.power, np.maximum, np.arctan2, np.hypot,
]  # fmt: skip
EDGES = [0.0, -0.0, 1e-310, -5e-324, 1e-160, 2.2250738585072014e-308, 1e-300, 0.7, -1.3, 2.5, 700.0, 1e300]
# (ints: the kernels take one a double holds exactly, up to 2**53, as an operand)
INTS = [2, 0, -3, 2**53, 2**53 + 1]
CONSTANTS = EDGES + INTS + [True, onp.float32(0.5), onp.float16(1.5), onp.int64(2), onp.array(0.75, dtype=">f8")]
INPUTS = [onp.float64(v) for v in EDGES] + [
    0.7,
    1e-160,
    onp.float32(0.7),
    onp.longdouble(0.7),
    onp.array(0.7),
    onp.array(1e-160, dtype=">f8"),
]
ARRAYS = [
    onp.array([0.3, -1.2, 2.5, 1e-160]),
    onp.array([0.3, -1.2, 2.5, 1e-310], dtype=">f8"),
    onp.array([0.3, -1.2, 2.5, 0.7], dtype=onp.float32),
    onp.asfortranarray(onp.arange(6.0).reshape(2, 3) + 0.5),
    (onp.arange(8.0) + 1.0)[::2],
]

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=False,
)


def _step(draw):
    """One operation: (unary index,) or (binary index, constant index, constant first)."""
    if draw(st.booleans()):
        return (draw(st.integers(0, len(UNARY) - 1)),)
    return (draw(st.integers(0, len(BINARY) - 1)), draw(st.integers(0, len(CONSTANTS) - 1)), draw(st.booleans()))


def _apply(step, y):
    if len(step) == 1:
        return UNARY[step[0]](y)
    f, c = BINARY[step[0]], CONSTANTS[step[1]]
    return f(c, y) if step[2] else f(y, c)


def _outcome(f, x, mode):
    """f(x) under np.errstate(all=mode): its type, dtype and bytes and the warnings, or the error."""
    with onp.errstate(all=mode), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = f(x)
        except (ArithmeticError, ValueError, TypeError) as e:
            result = (type(e), str(e))
        else:
            result = (type(r), getattr(r, "dtype", None), onp.asarray(r).tobytes())
    return result, sorted(str(w.message) for w in caught)


def _without_kernels(f, x):
    try:
        engine.bind(scalar_kernels={}, scalar_vjps={})
        return f(x)
    finally:
        kernels.install()


def _same_with_and_without_kernels(f, x, mode):
    for g in (grad(f), grad(lambda v: np.sum(grad(f)(v) * v))):
        with_kernels = _outcome(g, x, mode)
        without = _outcome(lambda v: _without_kernels(g, v), x, mode)
        assert with_kernels == without


@SETTINGS
@given(st.data())
def test_random_scalar_programs_at_the_edges(data):
    steps = data.draw(st.lists(st.builds(_step, st.just(data.draw)), min_size=1, max_size=5))
    feedback = data.draw(st.booleans())  # add x back after each step (x's node gets many consumers)
    x = data.draw(st.sampled_from(INPUTS))

    def f(x):
        y = x
        for step in steps:
            y = _apply(step, y)
            y = y + x * 0.25 if feedback else y
        return y

    _same_with_and_without_kernels(f, x, data.draw(st.sampled_from(["warn", "raise"])))


@SETTINGS
@given(st.data())
def test_random_programs_over_elements_at_the_edges(data):
    a = data.draw(st.sampled_from(ARRAYS))
    count = data.draw(st.integers(1, 4))
    index = st.tuples(*(st.integers(-n, n - 1) for n in a.shape)) if a.ndim > 1 else st.integers(-len(a), len(a) - 1)
    terms = [(data.draw(index), data.draw(st.builds(_step, st.just(data.draw)))) for _ in range(count)]

    def f(x):
        s = 0.0
        for i, step in terms:
            s = s + _apply(step, x[i]) * x[i]
        return s

    _same_with_and_without_kernels(f, a, data.draw(st.sampled_from(["warn", "raise"])))
