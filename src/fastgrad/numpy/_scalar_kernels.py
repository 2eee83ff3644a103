"""Switch on the compiled engine's scalar kernels for the commonest primitives and rules.

On NumPy float64 scalars (a scalar model, a loop over ``x[i]``) each primitive does one
floating-point operation behind a NumPy dispatch that costs far more than the operation.
The compiled engine has C kernels for those operations (``_scalar_kernels.h``) and
uses them when every value involved is a float64 or a Python float.  A kernel must give
the same bits as the code it replaces, so each one is checked here, at import, on sample
values against that code (the NumPy function for a forward kernel, the Python rule of
numpy_vjps for a reverse one), and switched on only if every sample agrees: a libm whose
``sin`` differs from NumPy's by an ulp simply keeps NumPy's.  The pure-Python engine has
no kernels (``scalar_kernel_names()`` is empty) and computes the same values in Python.
"""

import numpy as _np

from .._engine import engine as _engine
from ..core import primitive_vjps
from . import numpy_wrapper as anp

# primitive -> forward kernel; the operator primitives (Python's operators, which give a
# float on two Python floats) need a float64 argument for the kernel to apply
FORWARD = {
    anp.add: "add",
    anp.subtract: "subtract",
    anp.multiply: "multiply",
    anp.true_divide: "divide",
    anp.negative: "negative",
    anp.square: "square",
    anp.sin: "sin",
    anp.cos: "cos",
    anp.tan: "tan",
    anp.exp: "exp",
    anp.log: "log",
    anp.sqrt: "sqrt",
    anp.tanh: "tanh",
    anp.sinh: "sinh",
    anp.cosh: "cosh",
    anp.arctan: "arctan",
    anp.log1p: "log1p",
    anp.expm1: "expm1",
    anp.log2: "log2",
    anp.log10: "log10",
}
OPERATOR_FORWARD = {
    anp.add_op: "add",
    anp.subtract_op: "subtract",
    anp.multiply_op: "multiply",
    anp.true_divide_op: "divide",
    anp.negative_op: "negative",
}

# primitive -> {argnum: reverse kernel}: each names the expression of the Python rule
# (numpy_vjps) for that argument; "g" is a rule that returns g itself
REVERSE = {
    anp.add: {0: "g", 1: "g"},
    anp.subtract: {0: "g", 1: "-g"},
    anp.multiply: {0: "g*y", 1: "x*g"},
    anp.true_divide: {0: "g/y", 1: "-g*x/y**2"},
    anp.negative: {0: "-g"},
    anp.square: {0: "g*2*x"},
    anp.sin: {0: "g*cos(x)"},
    anp.cos: {0: "-g*sin(x)"},
    anp.exp: {0: "g*ans"},
    anp.log: {0: "g/x"},
    anp.tanh: {0: "g*(1-ans*ans)"},
    anp.sqrt: {0: "g*0.5/ans"},
}
for _ufunc_prim, _op_prim in (
    (anp.add, anp.add_op),
    (anp.subtract, anp.subtract_op),
    (anp.multiply, anp.multiply_op),
    (anp.true_divide, anp.true_divide_op),
    (anp.negative, anp.negative_op),
):
    REVERSE[_op_prim] = REVERSE[_ufunc_prim]


def _samples(n, seed):
    rng = _np.random.RandomState(seed)
    fixed = [0.5, 1.5, 2.0, 3.0, 1e-3, 0.1, 123.4, -0.7, 7.25]
    return [float(v) for v in _np.concatenate([fixed, rng.uniform(-10, 10, n), rng.uniform(-1, 1, n // 2)])]


_XS = _samples(48, 0)
_YS = _samples(48, 1)
_GS = _samples(48, 2)


def _same(a, b):
    """The same float64 bits (a result of either side that NumPy might warn about is
    skipped: the engine never uses a kernel's result there)."""
    a, b = _np.float64(a), _np.float64(b)
    if not (_np.isfinite(a) and abs(a) >= _np.finfo(_np.float64).tiny):
        return True
    return a.tobytes() == b.tobytes()


def _forward_ok(prim, name):
    binary = name in _engine.scalar_kernel_names()[1]
    with _np.errstate(all="ignore"):
        for x, y in zip(_XS, _YS):
            args = (_np.float64(x), _np.float64(y)) if binary else (_np.float64(abs(x) if name in _POSITIVE else x),)
            expected = prim.fun(*args)
            if type(expected) is not _np.float64 or not _same(
                _engine.eval_scalar_kernel(name, *map(float, args)), expected
            ):
                return False
    return True


_POSITIVE = frozenset(["log", "sqrt", "log1p", "log2", "log10"])


def _reverse_ok(prim, argnum, name):
    rule = primitive_vjps.get(prim)
    entry = getattr(rule, "entries", {}).get(argnum)
    if type(rule) is not _engine.VJPRule or entry is None or entry[0] != _engine.DIRECT:
        return False
    python_rule = entry[1]
    unary = prim not in _BINARY
    with _np.errstate(all="ignore"):
        for x, y, g in zip(_XS, _YS, _GS):
            if prim.__name__ in ("log", "sqrt"):
                x = abs(x)
            args = (_np.float64(x),) if unary else (_np.float64(x), _np.float64(y))
            ans = prim.fun(*args)
            if type(ans) is not _np.float64:
                return False
            expected = python_rule(_np.float64(g), ans, *args)
            if type(expected) is not _np.float64:
                return False
            got = _engine.eval_scalar_vjp(name, g, float(ans), float(args[0]), float(args[1]) if len(args) > 1 else 0.0)
            if not _same(got, expected):
                return False
    return True


# primitives whose rules unbroadcast (and cast) to the argument
_BINARY = frozenset(
    [
        anp.add,
        anp.subtract,
        anp.multiply,
        anp.true_divide,
        anp.add_op,
        anp.subtract_op,
        anp.multiply_op,
        anp.true_divide_op,
    ]
)

ENABLED = {}  # what was switched on: (primitive name, "forward" or argnum) -> kernel


def install():
    """Check every kernel of FORWARD, OPERATOR_FORWARD and REVERSE and switch on those
    that agree with what they replace, and only those (no-op on the pure engine)."""
    unary, binary, reverse = _engine.scalar_kernel_names()
    if not reverse:
        return
    forward, backward = {}, {}
    ENABLED.clear()
    for table, needs_float64 in ((FORWARD, False), (OPERATOR_FORWARD, True)):
        for prim, name in table.items():
            if name in unary + binary and _forward_ok(prim, name):
                forward[prim] = (name, needs_float64)
                ENABLED[(prim, "forward")] = name
    for prim, kernels in REVERSE.items():
        for argnum, name in kernels.items():
            if name in reverse and _reverse_ok(prim, argnum, name):
                # binary rules unbroadcast (and cast) to the argument: its type is checked too
                backward[(primitive_vjps[prim], argnum)] = (name, prim in _BINARY)
                ENABLED[(prim, argnum)] = name
    _engine.bind(scalar_kernels=forward, scalar_vjps=backward)


install()
