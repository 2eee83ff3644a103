"""fastgrad.scipy.special: every rule checked against central differences.

Reverse and forward mode, to second order.  Arguments SciPy has no derivative for must
raise NotImplementedError, not return a wrong number.
"""

import numpy as onp
import pytest

pytest.importorskip("scipy")
import scipy.special as ssp

import gradcheck as gc

pytestmark = pytest.mark.fastgrad_only

import fastgrad  # noqa: E402
import fastgrad.numpy as fnp  # noqa: E402
import fastgrad.scipy.special as sp  # noqa: E402


check = gc.check_both_modes  # reverse and forward mode, to second order


R = onp.random.RandomState(0)
POS = onp.array([0.6, 1.7, 3.2])
UNIT = onp.array([0.15, 0.5, 0.83])
REAL = onp.array([-1.3, 0.2, 0.9])

UNARY = [
    ("gamma", POS),
    ("gamma", 1.3),
    ("gammaln", POS),
    ("rgamma", POS),
    ("digamma", POS),
    ("psi", 2.5),
    ("j0", POS),
    ("y0", POS),
    ("j1", POS),
    ("y1", POS),
    ("i0", REAL),
    ("i1", REAL),
    ("erf", REAL),
    ("erfc", REAL),
    ("erfinv", onp.array([-0.7, 0.1, 0.6])),
    ("erfcinv", onp.array([0.3, 1.0, 1.6])),
    ("logit", UNIT),
    ("expit", REAL),
    ("entr", POS),
    ("ndtr", REAL),
    ("log_ndtr", onp.array([-6.0, -0.5, 2.0])),
    ("ndtri", UNIT),
    ("erfcx", REAL),
    ("log_expit", onp.array([-8.0, 0.3, 5.0])),
]


@pytest.mark.parametrize("name,x", UNARY, ids=[c[0] + ("_s" if onp.ndim(c[1]) == 0 else "") for c in UNARY])
def test_unary(name, x):
    f = getattr(sp, name)
    onp.testing.assert_allclose(f(x), getattr(ssp, name)(x), rtol=1e-14)
    check(f, x)


BINARY = [
    # name, args, argnums with rules
    ("polygamma", (onp.array([0, 1, 2]), POS), (1,)),
    ("beta", (POS, 1.4), (0, 1)),
    ("beta", (1.3, POS), (0, 1)),
    ("betaln", (POS, onp.array([[0.7], [2.1]])), (0, 1)),
    ("betainc", (1.5, 2.5, UNIT), (2,)),
    ("betainc", (POS, 2.5, 0.4), (2,)),
    ("gammainc", (POS, 1.1), (1,)),
    ("gammainc", (1.0, UNIT), (1,)),
    ("gammaincc", (2.3, POS), (1,)),
    ("jn", (2, POS), (1,)),
    ("yn", (1, POS), (1,)),
    ("iv", (1.3, POS), (1,)),
    ("ive", (1.3, POS), (1,)),
    ("ive", (2.0, REAL), (1,)),
    ("xlogy", (POS, UNIT), (0, 1)),
    ("xlog1py", (REAL, UNIT), (0, 1)),
]


@pytest.mark.parametrize("name,args,argnums", BINARY, ids=[c[0] for c in BINARY])
def test_multiple_arguments(name, args, argnums):
    f = getattr(sp, name)
    onp.testing.assert_allclose(f(*args), getattr(ssp, name)(*args), rtol=1e-14)
    check(f, *args, argnums=argnums)


def test_multigammaln():
    for d in (1, 2, 4):
        a = 3.4
        assert sp.multigammaln(a, d) == ssp.multigammaln(a, d)
        check(lambda a: sp.multigammaln(a, d), a)
    check(lambda a: sp.multigammaln(a, 3), onp.array([2.5, 4.0]))


def test_gammasgn_has_zero_gradient():
    x = onp.array([-1.5, 0.5, 2.5])
    g = fastgrad.elementwise_grad(sp.gammasgn)(x)
    onp.testing.assert_array_equal(g, onp.zeros(3))
    _, t = fastgrad.make_jvp(sp.gammasgn)(x)(onp.ones(3))
    onp.testing.assert_array_equal(t, onp.zeros(3))


@pytest.mark.parametrize(
    "name,args,argnum",
    [
        ("betainc", (1.5, 2.5, 0.3), 0),
        ("betainc", (1.5, 2.5, 0.3), 1),
        ("gammainc", (1.5, 0.3), 0),
        ("gammaincc", (1.5, 0.3), 0),
        ("iv", (1.3, 0.7), 0),
        ("ive", (1.3, 0.7), 0),
        ("jn", (1.0, 0.7), 0),
    ],
)
def test_arguments_without_a_derivative_raise(name, args, argnum):
    f = getattr(sp, name)
    with pytest.raises(NotImplementedError, match=name if name != "jn" else "j"):
        fastgrad.grad(f, argnum)(*args)


def test_scipy_ufunc_on_a_traced_value_is_traced():
    # the plain SciPy ufunc, not fastgrad's wrapper
    g = fastgrad.grad(lambda x: ssp.erf(x) * 2.0)(0.3)
    assert abs(g - 4.0 / onp.sqrt(onp.pi) * onp.exp(-0.09)) < 1e-14


# ---- logsumexp -------------------------------------------------------------------------
X34 = R.randn(3, 4)
B34 = R.rand(3, 4) + 0.2


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_axis_keepdims(axis, keepdims):
    onp.testing.assert_allclose(
        sp.logsumexp(X34, axis=axis, keepdims=keepdims), ssp.logsumexp(X34, axis=axis, keepdims=keepdims), rtol=1e-14
    )
    check(lambda x: sp.logsumexp(x, axis=axis, keepdims=keepdims), X34)


@pytest.mark.parametrize("b", [B34, B34[0], 2.5, B34[:, :1]], ids=["full", "row", "scalar", "col"])
def test_logsumexp_b_keyword_differentiable(b):
    for axis in (None, 1):
        check(lambda x, b: sp.logsumexp(x, axis=axis, b=b), X34, b)
        onp.testing.assert_allclose(sp.logsumexp(X34, axis=axis, b=b), ssp.logsumexp(X34, axis=axis, b=b), rtol=1e-14)


def test_logsumexp_return_sign():
    b = onp.array([[1.0, -2.0, 0.5, 0.1], [-1.0, -0.3, 0.2, -0.5], [0.4, 0.4, -3.0, 1.0]])
    val, sign = sp.logsumexp(X34, axis=1, b=b, return_sign=True)
    ev, es = ssp.logsumexp(X34, axis=1, b=b, return_sign=True)
    onp.testing.assert_allclose(val, ev, rtol=1e-14)
    onp.testing.assert_array_equal(sign, es)
    assert (es < 0).any() and (es > 0).any()
    check(lambda x, b: sp.logsumexp(x, axis=1, b=b, return_sign=True)[0], X34, b)
    # the sign is a constant
    g = fastgrad.grad(lambda x: fnp.sum(sp.logsumexp(x, axis=1, b=b, return_sign=True)[1] * x[:, 0]))(X34)
    onp.testing.assert_allclose(g[:, 0], es)


def test_logsumexp_scalar_and_1d():
    check(sp.logsumexp, onp.array([0.3, -1.0, 2.0]))
    check(lambda x: sp.logsumexp(x), 0.7)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_softmax_family(name, axis):
    f = getattr(sp, name)
    onp.testing.assert_allclose(f(X34, axis=axis), getattr(ssp, name)(X34, axis=axis), rtol=1e-14)
    check(lambda x: f(x, axis=axis), X34)


def test_float32_input_keeps_dtype():
    x = onp.array([0.2, 0.5], dtype=onp.float32)
    g = fastgrad.elementwise_grad(sp.erf)(x)
    assert g.dtype == onp.float32


def test_arguments_by_keyword_are_differentiated():
    x = onp.array([0.7, 1.9])
    check(lambda x: sp.polygamma(n=1, x=x), x)
    check(lambda a: sp.multigammaln(d=3, a=a), 3.3)
    check(lambda x: sp.softmax(x=x, axis=0), X34)
    check(lambda x: sp.log_softmax(axis=-1, x=x), X34)
    check(lambda a, b: sp.logsumexp(b=b, a=a, axis=0), X34, B34)
    onp.testing.assert_allclose(sp.polygamma(n=1, x=x), ssp.polygamma(1, x))
    with pytest.raises(TypeError):
        sp.polygamma(1, x, n=2)
