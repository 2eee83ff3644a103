"""Each elementwise function's rules of both modes come from one entry.

``numpy/_elementwise.py`` gives every ufunc its products ``t * d ans / d args[i]`` once;
the reverse and the forward rule registered for it (and for its operator primitive, which
``x * y`` on a box calls) are made from those very products.  A second copy of a
derivative, which could drift from the first, has no place to live.
"""

import pytest

import fastgrad.numpy as np
from fastgrad.core import primitive_jvps, primitive_vjps
from fastgrad.numpy import numpy_wrapper

pytestmark = pytest.mark.fastgrad_only

BINARY_UFUNCS = [
    np.add,
    np.subtract,
    np.multiply,
    np.true_divide,
    np.remainder,
    np.fmod,
    np.power,
    np.float_power,
    np.maximum,
    np.minimum,
    np.fmax,
    np.fmin,
    np.logaddexp,
    np.logaddexp2,
    np.arctan2,
    np.hypot,
    np.copysign,
    np.ldexp,
]
UNARY_UFUNCS = [
    np.negative,
    np.positive,
    np.exp,
    np.exp2,
    np.expm1,
    np.log,
    np.log2,
    np.log10,
    np.log1p,
    np.sin,
    np.cos,
    np.tan,
    np.arcsin,
    np.arccos,
    np.arctan,
    np.sinh,
    np.cosh,
    np.tanh,
    np.arcsinh,
    np.arccosh,
    np.arctanh,
    np.sqrt,
    np.cbrt,
    np.square,
    np.reciprocal,
    np.rad2deg,
    np.deg2rad,
    np.conjugate,
]


def _with_operator_twin(fun):
    twin = numpy_wrapper.OPERATOR_PRIMITIVES.get(fun.fun)
    return [fun] if twin is None else [fun, twin]


def _products(fun, argnum):
    """The products behind the rules of both modes (a unary function's product is
    registered as both rules itself)."""
    reverse = primitive_vjps[fun].entries[argnum][1]
    forward = primitive_jvps[fun].entries[argnum][1]
    return getattr(reverse, "product", reverse), getattr(forward, "product", forward)


@pytest.mark.parametrize("fun", BINARY_UFUNCS + UNARY_UFUNCS, ids=lambda f: f.__name__)
def test_both_modes_come_from_one_entry(fun):
    nargs = 2 if fun in BINARY_UFUNCS else 1
    for prim in _with_operator_twin(fun):
        for argnum in range(nargs):
            if primitive_vjps[prim].entries[argnum][1] is None:  # a zero derivative (copysign's sign, ldexp's exponent)
                assert primitive_jvps[prim].entries[argnum][1] is None
                continue
            reverse, forward = _products(prim, argnum)
            assert reverse is not None and reverse is forward, (prim, argnum)


def test_operator_primitives_share_their_ufuncs_entries():
    for ufunc, op in numpy_wrapper.OPERATOR_PRIMITIVES.items():
        fun = getattr(np, ufunc.__name__)
        assert primitive_vjps[op].entries.keys() == primitive_vjps[fun].entries.keys()
        for argnum, (kind, rule) in primitive_vjps[fun].entries.items():
            assert primitive_vjps[op].entries[argnum] == (kind, rule), (op, argnum)
        fwd, fwd_op = primitive_jvps[fun], primitive_jvps[op]
        assert fwd_op.entries == fwd.entries and fwd_op.default == fwd.default, op
