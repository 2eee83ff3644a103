"""Integer and boolean arrays as differentiation inputs (SPEC §4): accepted, as in autograd.

Libraries built on autograd (lifelines among them) pass data arrays of integers through
the differentiated arguments.  The derivative w.r.t. an integer array is the derivative at
the same values as floats, and it is a float64 array: each case here compares the
gradient at the integer input with the gradient at ``x.astype(float)`` (itself checked
against central differences, in both modes and to second order) and with autograd's where
autograd gets it right.  Where autograd truncates the cotangent to the integer dtype
(indexing, ``dot``, a container of integer arrays) or returns integer zeros, fastgrad
returns the float gradient: docs/migrating.md lists those differences.
"""

import numpy as onp
import pytest

from gradcheck import check_grads

X_INT = onp.array([1, 2, 3])
X_BOOL = onp.array([True, False, True])
X_2D = onp.array([[1, -2], [3, 4]], dtype=onp.int32)

# (name, function of one array, input): smooth in x, so the integer input's gradient is
# the float input's.  Each uses only what autograd gets right unless marked below.
CASES = [
    ("scale", lambda np, x: np.sum(x * 2.5), X_INT),
    ("sin", lambda np, x: np.sum(np.sin(x)), X_INT),
    ("exp-mean", lambda np, x: np.mean(np.exp(x * 0.1)), X_INT),
    ("divide", lambda np, x: np.sum(x / 2), X_INT),
    ("two-uses", lambda np, x: np.sum(x * 1.5) + np.sum(x * x * 0.5), X_INT),
    ("square", lambda np, x: np.sum(x**2 * 2.5), X_INT),
    ("bool", lambda np, x: np.sum(x * 2.5), X_BOOL),
    ("uint8", lambda np, x: np.sum(x * 2.5), X_INT.astype(onp.uint8)),
    ("0d", lambda np, x: x * 2.5, onp.array(3)),
    ("broadcast", lambda np, x: np.sum((x + onp.full((3, 3), 0.5)) ** 2), X_INT),
    ("matrix", lambda np, x: np.sum(np.tanh(x @ onp.array([[0.5, 1.0], [2.0, -1.0]]))), X_2D),
    ("where", lambda np, x: np.sum(np.where(x > 1.5, x * 1.0, 0.0)), X_INT),
]
# autograd casts these cotangents to the input's integer dtype (a wrong gradient)
AUTOGRAD_TRUNCATES = [
    ("getitem", lambda np, x: np.sum(x[1:] * 1.5) + np.sum(x[:1] * 0.5), X_INT),
    ("fancy-index", lambda np, x: np.sum(x[[0, 0, 1]] * 1.5), X_INT),
    ("dot", lambda np, x: np.dot(x, onp.array([1.5, 2.0, -0.5])), X_INT),
]


def _ids(cases):
    return [c[0] for c in cases]


def _assert_float_gradient(g, x, expected):
    assert type(g) is onp.ndarray or onp.ndim(x) == 0
    assert g.dtype == onp.float64, g.dtype
    assert onp.shape(g) == x.shape
    onp.testing.assert_allclose(g, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize(
    "name,f,x",
    CASES + [pytest.param(*c, marks=pytest.mark.fastgrad_only) for c in AUTOGRAD_TRUNCATES],
    ids=_ids(CASES + AUTOGRAD_TRUNCATES),
)
def test_gradient_at_an_integer_array_is_the_float_gradient(ag, np, name, f, x):
    xf = x.astype(float)
    check_grads(lambda v: f(np, v), xf, modes=("rev", "fwd"), order=2)
    expected = ag.grad(lambda v: f(np, v))(xf)
    _assert_float_gradient(ag.grad(lambda v: f(np, v))(x), x, expected)
    value, g = ag.value_and_grad(lambda v: f(np, v))(x)
    assert value == f(onp, x)
    _assert_float_gradient(g, x, expected)


@pytest.mark.parametrize("name,f,x", CASES, ids=_ids(CASES))
def test_integer_array_gradient_equals_autograds(ref, np, name, f, x):
    ours = __import__("fastgrad").grad(lambda v: f(np, v))(x)
    theirs = ref.grad(lambda v: f(ref.np, v))(x)
    assert ours.dtype == theirs.dtype
    onp.testing.assert_allclose(ours, theirs, rtol=1e-13)


@pytest.mark.fastgrad_only
@pytest.mark.parametrize("name,f,x", AUTOGRAD_TRUNCATES, ids=_ids(AUTOGRAD_TRUNCATES))
def test_no_truncation_where_autograd_truncates(ref, name, f, x):
    import fastgrad
    import fastgrad.numpy as fnp

    ours = fastgrad.grad(lambda v: f(fnp, v))(x)
    theirs = ref.grad(lambda v: f(ref.np, v))(x)
    assert theirs.dtype.kind == "i"  # autograd's cotangent cast to the input's dtype
    expected = fastgrad.grad(lambda v: f(fnp, v))(x.astype(float))
    onp.testing.assert_allclose(ours, expected, rtol=1e-13)
    assert not onp.allclose(theirs, expected)


def test_jacobian_hessian_elementwise_grad(ag, np):
    xf = X_INT.astype(float)
    for op, f in [
        ("jacobian", lambda v: np.sin(v) * 2.5),
        ("hessian", lambda v: np.sum(v**3 * 0.5)),
        ("elementwise_grad", lambda v: np.cos(v) * v),
    ]:
        expected = getattr(ag, op)(f)(xf)
        got = getattr(ag, op)(f)(X_INT)
        assert got.dtype == onp.float64, op
        onp.testing.assert_allclose(got, expected, rtol=1e-13, err_msg=op)


def test_forward_mode_and_make_vjp(ag, np):
    f = lambda v: np.sin(v) * 2.5
    xf = X_INT.astype(float)
    t = onp.array([1.0, -2.0, 0.5])
    value, tangent = ag.make_jvp(f)(X_INT)(t)
    value_f, tangent_f = ag.make_jvp(f)(xf)(t)
    onp.testing.assert_allclose(value, value_f, rtol=1e-15)
    onp.testing.assert_allclose(tangent, tangent_f, rtol=1e-13)
    vjp, _ = ag.make_vjp(f)(X_INT)
    vjp_f, _ = ag.make_vjp(f)(xf)
    assert vjp(t).dtype == onp.float64
    onp.testing.assert_allclose(vjp(t), vjp_f(t), rtol=1e-13)


def test_complex_function_of_an_integer_input_gives_a_real_gradient(ag, np):
    f = lambda v: np.real(np.sum(v * (1 + 2j)) * (0.5 - 1j))
    g = ag.grad(f)(X_INT)
    assert g.dtype == onp.float64
    onp.testing.assert_allclose(g, ag.grad(f)(X_INT.astype(float)), rtol=1e-13)


@pytest.mark.fastgrad_only
def test_integer_arrays_in_containers(ag, np):
    # autograd raises a casting error from its cotangent sum here
    x = [X_INT, onp.array([0.5, 1.0])]
    g = ag.grad(lambda xs: np.sum(xs[0] * 2.5) + np.sum(xs[1] ** 2) + np.sum(xs[0][:2] * xs[1]))(x)
    onp.testing.assert_allclose(g[0], [3.0, 3.5, 2.5], rtol=1e-13)
    onp.testing.assert_allclose(g[1], [2.0, 4.0], rtol=1e-13)
    assert g[0].dtype == onp.float64
    g = ag.grad(lambda d: np.sum(d["n"] * 1.5))({"n": X_INT})
    assert g["n"].dtype == onp.float64
    onp.testing.assert_allclose(g["n"], [1.5, 1.5, 1.5])


@pytest.mark.fastgrad_only
def test_output_independent_of_an_integer_input_gives_float_zeros(ag):
    # autograd gives integer zeros; the cotangent space of an integer array is float64's
    with pytest.warns(UserWarning, match="independent of input"):
        g = ag.grad(lambda v: 3.0)(X_INT)
    assert g.dtype == onp.float64 and not g.any()


@pytest.mark.fastgrad_only
def test_vector_space_of_an_integer_array_is_float64():
    from fastgrad.extend import vspace

    vs = vspace(X_INT)
    assert vs.dtype == onp.float64 and vs.shape == (3,)
    assert vs.zeros().dtype == onp.float64


@pytest.mark.parametrize("x", [3, True, onp.int64(3), onp.uint8(2), onp.bool_(True)], ids=repr)
def test_integer_scalars_are_still_refused(ag, np, x):
    with pytest.raises(TypeError, match="Can't differentiate w.r.t. type"):
        ag.grad(lambda v: v * 2.5)(x)


def test_integer_output_is_still_refused(ag, np):
    with pytest.raises(TypeError):
        ag.grad(lambda v: np.sum(v))(X_INT)
