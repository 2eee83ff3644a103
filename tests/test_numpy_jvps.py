"""Forward (JVP) and reverse (VJP) rules of fastgrad.numpy for autograd 1.9.1's list
(SPEC section 5), checked numerically to second order, and compared with autograd.

Every case is ``fun(np, *args)``, written against an array module so that the same code
runs on fastgrad.numpy and autograd.numpy:

* ``test_check_grads``: ``fastgrad.test_util.check_grads(f, modes=["fwd", "rev"],
  order=2)`` (third order for dot and outer): the JVP and the VJP against central
  differences, then the JVP and VJP of those (forward-over-forward, reverse-over-forward,
  forward-over-reverse, reverse-over-reverse);
* ``test_matches_autograd``: the value, the VJP of a random cotangent and (where autograd
  has one) the JVP of a random tangent equal autograd's.  Cases where autograd is wrong
  or raises are marked ``ref=False`` with the reason, and are checked in
  test_numpy_complete.py against explicit expectations.

The module tests fastgrad's forward mode, which autograd largely lacks, so it is
fastgrad-only (skipped under FG_TEST_TARGET=autograd).
"""

import functools
import warnings

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as fnp
from fastgrad.test_util import check_grads
from numpy_versions import needs_numpy

pytestmark = pytest.mark.fastgrad_only

_RS = onp.random.RandomState(20)


def R(*shape, lo=-2.0, hi=2.0):
    """Random float64 values (a 0-d array for no shape)."""
    return onp.asarray(_RS.uniform(lo, hi, size=shape))


def P(*shape):
    """Random values in [0.5, 2]."""
    return R(*shape, lo=0.5, hi=2.0)


def S(*shape, lo=0.5, hi=2.0):
    """Random values of random sign with |v| in [lo, hi]."""
    mag = _RS.uniform(lo, hi, size=shape)
    return onp.asarray(onp.where(_RS.rand(*shape) < 0.5, -mag, mag))


def C(*shape, scale=1.0):
    """Random complex128 values."""
    return onp.asarray(scale * (_RS.randn(*shape) + 1j * _RS.randn(*shape)))


class Case:
    """``fun(np, *args)`` differentiated w.r.t. ``argnums``.

    ref: compare with autograd (False: autograd raises or is wrong, the reason is given
    where the case is made); ref_jvp: autograd also has a JVP for it; order: of
    check_grads; tol: extra keyword arguments for the comparisons with autograd; numpy: the
    NumPy version the function needs (older NumPy skips the case)."""

    def __init__(self, name, fun, *args, argnums=(0,), order=2, ref=True, ref_jvp=True, rtol=1e-10, numpy=None):
        self.name, self.fun, self.args, self.argnums = name, fun, args, tuple(argnums)
        self.order, self.ref, self.ref_jvp, self.rtol = order, ref, ref_jvp, rtol
        self.numpy = numpy

    def bind(self, np):
        f = functools.partial(self.fun, np)
        f.__name__ = self.name
        return f

    def param(self):
        return pytest.param(self, id=self.name, marks=[needs_numpy(self.numpy)] if self.numpy else [])


def copy_args(args):
    return tuple(a.copy() if isinstance(a, onp.ndarray) else a for a in args)


def run_check_grads(case):
    args = copy_args(case.args)
    argnum = case.argnums[0] if len(case.argnums) == 1 else case.argnums
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # np.cross of 2-vectors
        warnings.filterwarnings("ignore", "Output seems independent of input")
        check_grads(case.bind(fnp), argnum=argnum, modes=["fwd", "rev"], order=case.order)(*args)


def random_like(value, rs):
    """A random value of ``value``'s shape and kind (complex for complex)."""
    if isinstance(value, (list, tuple)):
        return type(value)(random_like(v, rs) for v in value)
    v = onp.asarray(value)
    r = rs.randn(*v.shape)
    if v.dtype.kind == "c":
        r = r + 1j * rs.randn(*v.shape)
    return r


def assert_close(a, b, rtol, what):
    if isinstance(b, (list, tuple)):
        assert isinstance(a, (list, tuple)) and len(a) == len(b), what
        for x, y in zip(a, b):
            assert_close(x, y, rtol, what)
        return
    assert onp.shape(a) == onp.shape(b), "{}: shape {} vs {}".format(what, onp.shape(a), onp.shape(b))
    onp.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12, err_msg=what)


def compare_with_autograd(case):
    """Value, VJP and (if ``case.ref_jvp``) JVP of ``case`` equal autograd's."""
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    ours, theirs = case.bind(fnp), case.bind(anp)
    rs = onp.random.RandomState(3)
    for i in case.argnums:
        args = copy_args(case.args)

        def f(x, f=ours):
            return f(*args[:i], x, *args[i + 1 :])

        def fa(x, f=theirs):
            return f(*args[:i], x, *args[i + 1 :])

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vjp, value = fastgrad.make_vjp(f)(args[i])
            ref_vjp, ref_value = autograd.make_vjp(fa)(args[i])
            assert_close(value, ref_value, 1e-12, "value")
            u = random_like(ref_value, rs)
            assert_close(vjp(u), ref_vjp(u), case.rtol, "VJP w.r.t. argument {}".format(i))
            if case.ref_jvp:
                v = random_like(args[i], rs)
                t = fastgrad.make_jvp(f)(args[i])(v)[1]
                ref_t = autograd.make_jvp(fa)(args[i])(v)[1]
                assert_close(t, ref_t, case.rtol, "JVP w.r.t. argument {}".format(i))


@pytest.fixture(autouse=True)
def _seeded():
    """check_grads draws its random directions from NumPy's global generator."""
    state = onp.random.get_state()
    onp.random.seed(1)
    yield
    onp.random.set_state(state)


# ---------------------------------------------------------------------------------------
# Unary math


def _in(lo, hi):
    return lambda *s: R(*s, lo=lo, hi=hi)


UNARY = {
    "abs": S,
    "absolute": S,
    "fabs": S,
    "arccos": _in(-0.9, 0.9),
    "arccosh": _in(1.2, 3.0),
    "arcsin": _in(-0.9, 0.9),
    "arcsinh": R,
    "arctan": R,
    "arctanh": _in(-0.9, 0.9),
    "cos": R,
    "cosh": R,
    "deg2rad": R,
    "degrees": R,
    "exp": R,
    "exp2": R,
    "expm1": R,
    "log": P,
    "log10": P,
    "log1p": _in(-0.5, 2.0),
    "log2": P,
    "negative": R,
    "rad2deg": R,
    "radians": R,
    "reciprocal": S,
    "sin": R,
    "sinc": S,
    "sinh": R,
    "sqrt": P,
    "square": R,
    "tan": _in(-1.2, 1.2),
    "tanh": R,
    "nan_to_num": R,
}
# holomorphic functions differentiated at complex points (away from branch cuts)
COMPLEX_UNARY = [
    "exp",
    "log",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "sinh",
    "cosh",
    "tanh",
    "square",
    "reciprocal",
    "negative",
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arctanh",
    "exp2",
    "expm1",
    "log10",
    "log2",
    "log1p",
    "arccosh",
]


def _unary_cases():
    for name, gen in UNARY.items():
        fun = (lambda name: lambda np, x: getattr(np, name)(x))(name)
        yield Case(f"{name}-float", fun, float(gen()))
        for shape in [(), (3,), (2, 3)]:
            yield Case(f"{name}-{shape}", fun, gen(*shape))
    for name in COMPLEX_UNARY:
        fun = (lambda name: lambda np, x: getattr(np, name)(x))(name)
        # autograd's arccosh rule, 1/sqrt(x**2 - 1), has the wrong sign where Re(x) < 0
        yield Case(f"{name}-complex", fun, C(2, 3, scale=0.5) + 0.2, ref=name != "arccosh")
    yield Case("sinc-near-0", lambda np, x: np.sinc(x), R(4, lo=-0.005, hi=0.005))


# complex parts (real/imag/conj/angle/abs/real_if_close) of complex and real values
def _complex_part_cases():
    for name in ("real", "imag", "conj", "conjugate", "angle", "abs", "real_if_close"):
        fun = (lambda name: lambda np, x: getattr(np, name)(x))(name)
        # autograd has no JVP for angle and real_if_close
        jvp = name not in ("angle", "real_if_close")
        yield Case(f"{name}-complex", fun, C(2, 3), ref_jvp=jvp)
        yield Case(f"{name}-complex-0d", fun, C(), ref_jvp=jvp)
        yield Case(f"{name}-real", fun, S(3), ref_jvp=jvp)
    # autograd: angle has no deg= rule, and its boxes have no .real/.imag
    yield Case("angle-deg", lambda np, x: np.angle(x, deg=True), C(3), ref=False)
    yield Case("real-method", lambda np, x: x.real * x.imag, C(3), ref=False)
    yield Case("abs-of-square", lambda np, x: np.abs(x * x), C(2, 2))


# ---------------------------------------------------------------------------------------
# Binary functions with broadcasting

BINARY_SHAPES = [((), ()), ((3,), ()), ((), (3,)), ((3, 1), (1, 4)), ((2, 3), (3,))]
_MOD_X, _MOD_Y = _in(0.2, 5.0), _in(1.1, 1.9)
BINARY = {
    "add": (R, R),
    "subtract": (R, R),
    "multiply": (R, R),
    "divide": (R, S),
    "true_divide": (R, S),
    "mod": (_MOD_X, _MOD_Y),
    "remainder": (_MOD_X, _MOD_Y),
    "power": (P, R),
    "maximum": (R, R),
    "minimum": (R, R),
    "fmax": (R, R),
    "fmin": (R, R),
    "logaddexp": (R, R),
    "logaddexp2": (R, R),
    "arctan2": (S, S),
    "hypot": (S, S),
}
# autograd has no JVP for these binary functions
_NO_AUTOGRAD_JVP = {"hypot"}


def _binary_cases():
    for name, (gx, gy) in BINARY.items():
        fun = (lambda name: lambda np, x, y: getattr(np, name)(x, y))(name)
        jvp = name not in _NO_AUTOGRAD_JVP
        for sx, sy in BINARY_SHAPES:
            yield Case(f"{name}-{sx}-{sy}", fun, gx(*sx), gy(*sy), argnums=(0, 1), ref_jvp=jvp)
        yield Case(f"{name}-float-array", fun, float(gx()), gy(2, 3), argnums=(0, 1), ref_jvp=jvp)
    for name, op in (
        ("+", lambda x, y: x + y),
        ("-", lambda x, y: x - y),
        ("*", lambda x, y: x * y),
        ("/", lambda x, y: x / y),
        ("**", lambda x, y: x**y),
        ("%", lambda x, y: x % y),
    ):
        gx, gy = (P, R) if name == "**" else (_MOD_X, _MOD_Y) if name == "%" else (R, S)
        fun = (lambda op: lambda np, x, y: op(x, y))(op)
        yield Case(f"op{name}", fun, gx(3, 1), gy(4), argnums=(0, 1))
        yield Case(f"op{name}-reflected", (lambda op: lambda np, x: op(1.5, x))(op), gy(3))
    yield Case("pow-int", lambda np, x: x**2, R(3))
    yield Case("pow-3", lambda np, x: x**3, R(2, 3))
    for name in ("add", "subtract", "multiply", "divide"):
        fun = (lambda name: lambda np, x, y: getattr(np, name)(x, y))(name)
        yield Case(f"{name}-complex", fun, C(3, 1), C(4), argnums=(0, 1))
        yield Case(f"{name}-real-complex", fun, R(3), C(3), argnums=(0, 1))
    yield Case("power-complex", lambda np, x, y: np.power(x, y), C(3) + 2.0, R(3), argnums=(0, 1))


# ---------------------------------------------------------------------------------------
# Reductions


def _reduction_cases():
    x = R(2, 3, 4)
    for name in ("sum", "mean", "prod", "max", "min", "amax", "amin", "var", "std"):
        gen = (lambda *s: S(*s, lo=0.5, hi=1.5)) if name == "prod" else R
        for axis in (None, 1, -1, (0, 2)):
            for keepdims in (False, True):
                fun = (lambda name, axis, keepdims: lambda np, x: getattr(np, name)(x, axis=axis, keepdims=keepdims))(
                    name, axis, keepdims
                )
                # autograd has no JVP for max/min with keepdims, and its var raises for a
                # tuple axis
                yield Case(
                    f"{name}-axis{axis}-keep{keepdims}",
                    fun,
                    gen(2, 3, 4),
                    ref_jvp=not (keepdims and name in ("max", "min", "amax", "amin")),
                    ref=not (name == "var" and isinstance(axis, tuple)),
                )
        yield Case(f"{name}-float", (lambda n: lambda np, x: getattr(np, n)(x))(name), float(gen()))
        yield Case(f"{name}-0d", (lambda n: lambda np, x: getattr(np, n)(x))(name), gen())
        if not name.startswith("am"):
            yield Case(f"{name}-method", (lambda n: lambda np, x: getattr(x, n)(axis=0))(name), gen(3, 2))
    for name in ("var", "std"):
        for ddof in (1, 2):
            fun = (lambda name, ddof: lambda np, x: getattr(np, name)(x, axis=1, ddof=ddof))(name, ddof)
            yield Case(f"{name}-ddof{ddof}", fun, x)
    for name in ("sum", "mean", "prod", "var", "std"):
        fun = (lambda name: lambda np, x: getattr(np, name)(x, axis=0))(name)
        # autograd's var/std of complex values are wrong (no conjugation): see
        # test_numpy_complete.py
        yield Case(f"{name}-complex", fun, C(3, 2), ref=name not in ("var", "std"))
    for axis in (None, 0, 1, -1):
        fun = (lambda axis: lambda np, x: np.cumsum(x, axis=axis))(axis)
        yield Case(f"cumsum-axis{axis}", fun, R(3, 4))
    yield Case("cumsum-complex", lambda np, x: np.cumsum(x), C(4))
    yield Case("cumsum-method", lambda np, x: x.cumsum(axis=0), R(3, 2))
    yield Case("mean-of-list", lambda np, x, y: np.mean([x, y, x * y]), R(3), R(3), argnums=(0, 1))


# ---------------------------------------------------------------------------------------
# clip, where


def _selection_cases():
    cond = R(2, 3) > 0
    yield Case("clip", lambda np, x: np.clip(x, -0.5, 0.7), R(3, 4))
    yield Case("clip-method", lambda np, x: x.clip(-0.5, 0.7), R(3, 4))
    yield Case("clip-none-max", lambda np, x: np.clip(x, None, 0.3), R(3, 4))
    yield Case("clip-0d", lambda np, x: np.clip(x, -1.0, 1.0), R())
    yield Case("where-xy", lambda np, x, y: np.where(cond, x, y), R(2, 3), R(2, 3), argnums=(0, 1))
    yield Case("where-x-const", lambda np, x: np.where(cond, x, 0.0), R(2, 3))
    yield Case("where-from-x", lambda np, x: np.where(x > 0, x, x * x), R(2, 3))
    # autograd raises for 0-d x and y, and gives a real y a complex gradient
    yield Case("where-0d", lambda np, x, y: np.where(True, x, y), R(), R(), argnums=(0, 1), ref=False)
    yield Case("where-complex", lambda np, x, y: np.where(cond, x, y), C(2, 3), R(2, 3), argnums=(0, 1), ref=False)


# ---------------------------------------------------------------------------------------
# Products


def _product_cases():
    yield Case("dot-2d-2d", lambda np, x, y: np.dot(x, y), R(2, 3), R(3, 4), argnums=(0, 1), order=3)
    yield Case("dot-1d-1d", lambda np, x, y: np.dot(x, y), R(4), R(4), argnums=(0, 1), order=3)
    yield Case("dot-2d-1d", lambda np, x, y: np.dot(x, y), R(3, 4), R(4), argnums=(0, 1), order=3)
    yield Case("dot-3d-2d", lambda np, x, y: np.dot(x, y), R(2, 3, 4), R(4, 2), argnums=(0, 1), order=3)
    yield Case("dot-scalar", lambda np, x, y: np.dot(x, y), R(), R(2, 3), argnums=(0, 1), order=3)
    yield Case("dot-complex", lambda np, x, y: np.dot(x, y), C(2, 3), C(3), argnums=(0, 1), order=3)
    yield Case("outer", lambda np, x, y: np.outer(x, y), R(3), R(4), argnums=(0, 1), order=3)
    yield Case("outer-complex", lambda np, x, y: np.outer(x, y), C(3), R(2), argnums=(0, 1), order=3)
    # autograd flattens the gradient of a 2-d (or 0-d) argument of outer
    yield Case("outer-2d", lambda np, x, y: np.outer(x, y), R(2, 2), R(3), argnums=(0, 1), order=3, ref=False)
    yield Case("matmul-2d", lambda np, x, y: np.matmul(x, y), R(2, 3), R(3, 4), argnums=(0, 1))
    yield Case("matmul-batch-bcast", lambda np, x, y: x @ y, R(2, 1, 3, 4), R(3, 4, 2), argnums=(0, 1))
    yield Case("matmul-1d-2d", lambda np, x, y: x @ y, R(3), R(3, 4), argnums=(0, 1))
    yield Case("matmul-3d-1d", lambda np, x, y: x @ y, R(2, 3, 4), R(4), argnums=(0, 1))
    yield Case("matmul-complex", lambda np, x, y: x @ y, C(2, 3), C(3, 2), argnums=(0, 1))
    yield Case("inner", lambda np, x, y: np.inner(x, y), R(2, 3), R(4, 3), argnums=(0, 1))
    yield Case("inner-1d", lambda np, x, y: np.inner(x, y), R(3), R(3), argnums=(0, 1))
    for axes in (0, 1, 2, ([1, 0], [0, 1]), ((0, 2), (1, 0))):
        if axes in (0, 1):
            x, y = R(2, 3), R(3, 2)
        elif axes == 2:
            x, y = R(2, 3, 4), R(3, 4, 2)
        elif axes == ([1, 0], [0, 1]):
            x, y = R(2, 3, 4), R(3, 2, 5)
        else:
            x, y = R(2, 3, 4), R(4, 2)
        fun = (lambda axes: lambda np, x, y: np.tensordot(x, y, axes=axes))(axes)
        yield Case(f"tensordot-{axes}", fun, x, y, argnums=(0, 1))
    yield Case("einsum-matmul", lambda np, x, y: np.einsum("ij,jk->ik", x, y), R(2, 3), R(3, 4), argnums=(0, 1))
    yield Case("einsum-implicit", lambda np, x, y: np.einsum("ab,bC", x, y), R(2, 3), R(3, 4), argnums=(0, 1))
    yield Case("einsum-trace", lambda np, x: np.einsum("ii", x), R(3, 3), ref=False)  # autograd raises
    yield Case(
        "einsum-3ops", lambda np, x, y, z: np.einsum("ij,jk,k->i", x, y, z), R(2, 3), R(3, 4), R(4), argnums=(0, 1, 2)
    )
    yield Case(
        "einsum-ellipsis", lambda np, x, y: np.einsum("...ij,...j->...i", x, y), R(2, 3, 4), R(4), argnums=(0, 1)
    )
    yield Case(
        "einsum-sublist", lambda np, x, y: np.einsum(x, [0, 1], y, [1, 2], [0, 2]), R(2, 3), R(3, 4), argnums=(0, 1)
    )
    yield Case("einsum-complex", lambda np, x, y: np.einsum("ij,j", x, y), C(2, 3), C(3), argnums=(0, 1))
    yield Case("einsum-same-twice", lambda np, x: np.einsum("i,i", x, x), R(3))
    yield Case("kron", lambda np, x, y: np.kron(x, y), R(2, 2), R(3, 1), argnums=(0, 1))
    yield Case("kron-1d", lambda np, x, y: np.kron(x, y), R(2), R(3), argnums=(0, 1))
    yield Case("cross", lambda np, x, y: np.cross(x, y), R(4, 3), R(4, 3), argnums=(0, 1))
    yield Case("cross-axis", lambda np, x, y: np.cross(x, y, axis=0), R(3, 2), R(3, 2), argnums=(0, 1))


# ---------------------------------------------------------------------------------------
# Shapes


def _shape_cases():
    x = R(2, 3, 4)
    yield Case("reshape", lambda np, x: np.reshape(x, (6, 4)), x)
    yield Case("reshape-F", lambda np, x: np.reshape(x, (4, 6), order="F"), x)
    yield Case("reshape-method", lambda np, x: x.reshape(4, 6), x)
    yield Case("ravel", lambda np, x: np.ravel(x), x)
    yield Case("expand_dims", lambda np, x: np.expand_dims(x, (0, 2)), R(2, 3))
    yield Case("squeeze", lambda np, x: np.squeeze(x, axis=2), R(1, 3, 1))
    yield Case("transpose", lambda np, x: np.transpose(x, (1, 2, 0)), x)
    yield Case("T", lambda np, x: x.T, R(2, 3))
    yield Case("swapaxes", lambda np, x: np.swapaxes(x, 0, 2), x)
    yield Case("moveaxis", lambda np, x: np.moveaxis(x, 0, -1), x)
    yield Case("rollaxis", lambda np, x: np.rollaxis(x, 2), x)
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        fun = (lambda name: lambda np, x: getattr(np, name)(x))(name)
        for shape in ((), (3,), (2, 3)):
            yield Case(f"{name}-{shape}", fun, R(*shape))
    yield Case("broadcast_to", lambda np, x: np.broadcast_to(x, (3, 4)), R(3, 1))


# ---------------------------------------------------------------------------------------
# Joining and splitting


def _join_cases():
    c = R(2, 3)
    yield Case("concatenate", lambda np, x, y: np.concatenate([x, c, y], axis=1), R(2, 1), R(2, 2), argnums=(0, 1))
    yield Case("stack", lambda np, x, y: np.stack([x, y], axis=-1), R(2, 3), R(2, 3), argnums=(0, 1))
    yield Case("hstack", lambda np, x, y: np.hstack([x, y]), R(3), R(2), argnums=(0, 1))
    yield Case("vstack", lambda np, x, y: np.vstack([x, y]), R(3), R(2, 3), argnums=(0, 1))
    yield Case("column_stack", lambda np, x, y: np.column_stack([x, y]), R(3), R(3, 2), argnums=(0, 1))
    yield Case("array", lambda np, x, y: np.array([[x, 1.0], [y, x * y]]), R(), R(), argnums=(0, 1))
    yield Case("array-of-rows", lambda np, x: np.array([x[0], x[2], x[1] * 2.0]), R(3, 2))
    for name, arg, shape in (
        ("split", 2, (4, 3)),
        ("array_split", 3, (4, 3)),
        ("hsplit", 3, (2, 3)),
        ("vsplit", [1], (4, 3)),
        ("dsplit", 2, (2, 1, 4)),
    ):
        fun = (lambda name, arg: lambda np, x: getattr(np, name)(x, arg)[1] * 2.0)(name, arg)
        yield Case(name, fun, R(*shape))
    yield Case("split-axis", lambda np, x: np.split(x, [1, 2], axis=1)[2], R(2, 4))
    yield Case("split-all-parts", lambda np, x: np.sum(np.split(x, 2)[0] * np.split(x, 2)[1]), R(4))
    yield Case("repeat", lambda np, x: np.repeat(x, 2, axis=1), R(2, 3))
    yield Case("repeat-flat", lambda np, x: np.repeat(x, 3), R(2, 2))
    # autograd: repeat only with an int count, pad only with mode given positionally
    yield Case("repeat-counts", lambda np, x: np.repeat(x, [1, 0, 2], axis=0), R(3, 2), ref=False)
    yield Case("tile", lambda np, x: np.tile(x, (2, 1, 3)), R(2, 3))
    yield Case("tile-int", lambda np, x: np.tile(x, 2), R(3))
    yield Case("pad-constant", lambda np, x: np.pad(x, ((1, 2), (0, 1))), R(2, 3), ref=False)
    yield Case("pad-constant-mode", lambda np, x: np.pad(x, ((1, 2), (0, 1)), "constant"), R(2, 3))


# ---------------------------------------------------------------------------------------
# Reordering, diagonals, differences, construction, indexing


def _misc_cases():
    yield Case("flipud", lambda np, x: np.flipud(x), R(3, 2))
    yield Case("fliplr", lambda np, x: np.fliplr(x), R(3, 2))
    yield Case("rot90", lambda np, x: np.rot90(x), R(3, 2))
    yield Case("rot90-k", lambda np, x: np.rot90(x, 3, axes=(1, 2)), R(2, 3, 2), ref=False)  # autograd raises
    yield Case("roll", lambda np, x: np.roll(x, 2), R(3, 2))
    yield Case("roll-axis", lambda np, x: np.roll(x, -1, axis=1), R(3, 4))
    yield Case("sort-1d", lambda np, x: np.sort(x), R(5))
    yield Case("partition-1d", lambda np, x: np.partition(x, 2), R(5))
    yield Case("diag-vec", lambda np, x: np.diag(x), R(3))
    yield Case("diag-vec-k", lambda np, x: np.diag(x, -1), R(3))
    yield Case("diag-mat", lambda np, x: np.diag(x), R(3, 3))
    # autograd's diagonal rule handles offset 0 on the last two axes only
    yield Case("diagonal", lambda np, x: np.diagonal(x), R(3, 4), ref=False)
    yield Case("diagonal-last-two", lambda np, x: np.diagonal(x, 0, -1, -2), R(2, 3, 3))
    yield Case("diagonal-offset", lambda np, x: np.diagonal(x, 1, -2, -1), R(2, 3, 3), ref=False)
    yield Case("trace", lambda np, x: np.trace(x), R(3, 4))
    yield Case("trace-offset", lambda np, x: np.trace(x, 1), R(3, 3))
    yield Case("tril", lambda np, x: np.tril(x), R(3, 3))
    yield Case("triu-k", lambda np, x: np.triu(x, 1), R(3, 4))
    yield Case("diff", lambda np, x: np.diff(x), R(5))
    yield Case("diff-n-axis", lambda np, x: np.diff(x, 2, axis=0), R(4, 3))
    yield Case("gradient-1d", lambda np, x: np.gradient(x), R(5))
    # autograd's gradient rule takes no spacing and returns a list it cannot differentiate
    yield Case("gradient-spacing", lambda np, x: np.gradient(x, 0.5), R(5), ref=False)
    yield Case("gradient-2d", lambda np, x: np.gradient(x)[1], R(3, 4), ref=False)
    yield Case("full", lambda np, v: np.full((2, 3), v), R())
    yield Case("full-float", lambda np, v: np.full(4, v), 0.7)
    yield Case("linspace", lambda np, a, b: np.linspace(a, b, 5), 0.3, 1.7, argnums=(0, 1))
    # autograd has no JVP for astype
    yield Case("astype", lambda np, x: np.sin(x).astype(onp.float64), R(3), ref_jvp=False)
    yield Case("astype-complex", lambda np, x: x.astype(complex) * (1 + 2j), R(3), ref_jvp=False)
    yield Case("index-int", lambda np, x: x[1], R(4))
    yield Case("index-slice", lambda np, x: x[1:, ::-1], R(3, 4))
    yield Case("index-fancy", lambda np, x: x[[0, 2, 2], 1:], R(3, 4))
    yield Case("index-bool", lambda np, x: x[x > 0], R(3, 4))
    yield Case("index-newaxis", lambda np, x: x[..., None, 1], R(3, 4))
    yield Case("index-repeated-use", lambda np, x: x[0] * x[1] + x[[2, 2]].sum() * x[0], R(3))
    yield Case("index-complex", lambda np, x: x[[1, 0, 1]], C(3))
    yield Case("iterate", lambda np, x: np.array([v * v for v in x]), R(3))


ALL_CASES = [
    c
    for gen in (
        _unary_cases,
        _complex_part_cases,
        _binary_cases,
        _reduction_cases,
        _selection_cases,
        _product_cases,
        _shape_cases,
        _join_cases,
        _misc_cases,
    )
    for c in gen()
]


@pytest.mark.parametrize("case", [c.param() for c in ALL_CASES])
def test_check_grads(case):
    run_check_grads(case)


@pytest.mark.parametrize("case", [c.param() for c in ALL_CASES if c.ref])
def test_matches_autograd(case):
    compare_with_autograd(case)


# ---------------------------------------------------------------------------------------
# Forward mode specifics


def test_jvp_tangent_lives_in_the_result_space():
    # the tangent of x in x + y is x's tangent broadcast to the result (and complex when
    # the result is)
    x, y = R(3, 1), C(4)
    _, t = fastgrad.make_jvp(lambda x: fnp.add(x, y))(x)(onp.ones((3, 1)))
    assert t.shape == (3, 4) and t.dtype == onp.complex128
    onp.testing.assert_array_equal(t, onp.ones((3, 4)))
    _, t = fastgrad.make_jvp(lambda x: x * onp.float32(2.0))(onp.ones(2, onp.float32))(onp.ones(2, onp.float32))
    assert t.dtype == onp.float32


def test_hessian_vector_product_forward_over_reverse():
    # H v by forward mode over the gradient equals the dense Hessian times v
    A = R(4, 4)
    b = R(4)

    def f(x):
        return fnp.sum(fnp.tanh(A @ x) ** 2) + fnp.prod(fnp.sin(x)) + fnp.max(x * b)

    x, v = R(4), R(4)
    hvp = fastgrad.make_jvp(fastgrad.grad(f))(x)(v)[1]
    H = fastgrad.hessian(f)(x)
    onp.testing.assert_allclose(hvp, H @ v, rtol=1e-10, atol=1e-12)


def test_deriv_of_elementwise_functions():
    x = R(5)
    onp.testing.assert_allclose(fastgrad.deriv(fnp.tanh)(x), 1 - onp.tanh(x) ** 2, rtol=1e-13)
    onp.testing.assert_allclose(fastgrad.deriv(fnp.hypot, 1)(3.0, 4.0), 0.8, rtol=1e-15)
