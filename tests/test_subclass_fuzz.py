"""Fuzzing ndarray subclasses and duck arrays through random programs (issue #15): each
program is differentiated by fastgrad and by autograd 1.9.1, with the subclass as the
input or as a constant inside; fastgrad must give autograd's gradient or a TypeError,
never a different number (np.matrix's * is a matrix product and a masked array's
reductions skip elements: ndarray's rules would give wrong numbers without an error)."""

import warnings

import numpy as onp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastgrad
import fastgrad.numpy as fnp

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")

pytestmark = [
    pytest.mark.fastgrad_only,
    pytest.mark.filterwarnings("ignore::PendingDeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Output seems independent of input"),
]


class UserArray(onp.ndarray):
    """A subclass that changes nothing."""


class UfuncUserArray(onp.ndarray):
    """A subclass with an __array_ufunc__ of its own (it scales every ufunc's result)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [onp.asarray(i) if isinstance(i, UfuncUserArray) else i for i in inputs]
        result = getattr(ufunc, method)(*inputs, **kwargs)
        return result * 1.5 if isinstance(result, onp.ndarray) and result.dtype.kind == "f" else result


class Duck:
    """A duck array: not an ndarray, converts with __array__ and handles ufuncs."""

    def __init__(self, data):
        self.data = onp.asarray(data, dtype=float)

    def __array__(self, dtype=None, copy=None):
        return self.data

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [i.data if isinstance(i, Duck) else i for i in inputs]
        return Duck(getattr(ufunc, method)(*inputs, **kwargs))


def _make(kind, data):
    data = onp.array(data, dtype=float).reshape(2, 2)
    if kind == "matrix":
        return onp.matrix(data)
    if kind == "masked":
        return onp.ma.array(data, mask=[[False, True], [False, False]])
    if kind == "memmap":
        return data.view(onp.memmap)
    if kind == "recarray":
        return data.view(onp.recarray)
    if kind == "user":
        return data.view(UserArray)
    if kind == "ufunc-user":
        return data.view(UfuncUserArray)
    return Duck(data)


KINDS = ["matrix", "masked", "memmap", "recarray", "user", "ufunc-user", "duck"]

# each step: (name, f(np, x, c)) with c the constant of the program (maybe the subclass)
STEPS = {
    "sin": lambda np, x, c: np.sin(x),
    "square": lambda np, x, c: x * x,
    "times const": lambda np, x, c: x * c,
    "plus const": lambda np, x, c: x + c,
    "exp": lambda np, x, c: np.exp(x * 0.1),
    "matmul": lambda np, x, c: x @ x,
    "mean axis 0": lambda np, x, c: np.mean(x, axis=0) + x,
    "transpose": lambda np, x, c: np.transpose(x) * 2.0,
}


def _program(steps, constant):
    def build(np):
        def f(x):
            for name in steps:
                x = STEPS[name](np, x, constant)
            return np.sum(x)

        return f

    return build


def _outcome(grad, f, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "value", onp.asarray(grad(f)(x), dtype=float)
        except TypeError as e:
            return "TypeError", str(e)
        except Exception as e:  # (any other error is a finding too)
            return type(e).__name__, str(e)


@settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    kind=st.sampled_from(KINDS),
    where=st.sampled_from(["input", "constant", "both"]),
    steps=st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=5),
    data=st.lists(st.floats(0.2, 2.0), min_size=4, max_size=4),
)
def test_a_subclass_gives_autograds_gradient_or_a_type_error(kind, where, steps, data):
    plain = onp.array(data).reshape(2, 2)
    special = _make(kind, data)
    x = special if where in ("input", "both") else plain
    c = special if where in ("constant", "both") else plain[::-1] + 0.5
    program = _program(steps, c)
    mine = _outcome(fastgrad.grad, program(fnp), x)
    theirs = _outcome(autograd.grad, program(anp), x)
    assert mine[0] in ("value", "TypeError"), mine  # never an error of another kind
    if mine[0] == "value":
        assert theirs[0] == "value", (mine, theirs)
        onp.testing.assert_allclose(mine[1], theirs[1], rtol=1e-12, atol=1e-12)
