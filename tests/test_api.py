"""Differential operators of the top-level package (SPEC §2) and their errors (SPEC §8).

Values are checked against closed-form derivatives and, when autograd is installed,
against autograd on the same inputs.
"""

import importlib
import re
import warnings

import numpy as onp
import pytest

from gradcheck import assert_tree_allclose

OPS = [
    "grad",
    "value_and_grad",
    "make_vjp",
    "elementwise_grad",
    "jacobian",
    "grad_and_aux",
    "hessian",
    "deriv",
    "holomorphic_grad",
    "make_jvp",
    "make_hvp",
    "tensor_jacobian_product",
    "vector_jacobian_product",
    "grad_named",
    "hessian_tensor_product",
    "hessian_vector_product",
]
NARY_OPS = ["grad", "value_and_grad", "make_vjp", "elementwise_grad", "jacobian", "grad_and_aux", "hessian"]

_RS = onp.random.RandomState(5)
X = _RS.randn(4)
Y = _RS.randn(4)
M = _RS.randn(2, 3)


def f_xy(np, x, y, scale=1.0):
    """sum(sin(x) * y**2) * scale"""
    return np.sum(np.sin(x) * y**2) * scale


def df_dx(x, y, scale=1.0):
    return onp.cos(x) * y**2 * scale


def df_dy(x, y, scale=1.0):
    return 2 * y * onp.sin(x) * scale


def bound(np, fun=f_xy):
    def f(*args, **kwargs):
        return fun(np, *args, **kwargs)

    f.__name__ = fun.__name__
    return f


# ---------------------------------------------------------------------------
# values


@pytest.mark.parametrize(
    "argnum,expected",
    [
        (0, lambda: df_dx(X, Y)),
        (1, lambda: df_dy(X, Y)),
        (-1, lambda: df_dy(X, Y)),
        (-2, lambda: df_dx(X, Y)),
        ((0, 1), lambda: (df_dx(X, Y), df_dy(X, Y))),
        ((1, 0), lambda: (df_dy(X, Y), df_dx(X, Y))),
        ([0, 1], lambda: (df_dx(X, Y), df_dy(X, Y))),
        ((1,), lambda: (df_dy(X, Y),)),
    ],
    ids=["0", "1", "-1", "-2", "(0,1)", "(1,0)", "[0,1]", "(1,)"],
)
def test_grad_argnum(ag, np, ref, argnum, expected):
    g = ag.grad(bound(np), argnum)(X, Y)
    exp = expected()
    if isinstance(exp, tuple):
        assert isinstance(g, tuple) and len(g) == len(exp)
    assert_tree_allclose(g, exp, rtol=1e-13)
    assert_tree_allclose(g, ref.grad(bound(ref.np), argnum)(X, Y), rtol=1e-13)


def test_keyword_arguments_pass_through(ag, np, ref):
    g = ag.grad(bound(np), 1)(X, Y, scale=3.0)
    assert_tree_allclose(g, df_dy(X, Y, 3.0), rtol=1e-13)
    assert_tree_allclose(g, ref.grad(bound(ref.np), 1)(X, Y, scale=3.0), rtol=1e-13)
    # the keyword value reaches the function as the very same object, never boxed
    seen = []
    marker = object()

    def f(x, tag=None, arr=None):
        seen.append((tag, arr))
        return np.sum(x * arr)

    arr = onp.arange(4.0)
    g = ag.grad(f)(X, tag=marker, arr=arr)
    assert seen[0][0] is marker and seen[0][1] is arr
    assert_tree_allclose(g, arr, rtol=0)


def test_keyword_argument_holding_traced_value(ag, np):
    # an outer trace's value passed by keyword flows through the inner grad untouched
    def inner(x, scale):
        return np.sin(x) * scale

    outer = ag.grad(lambda s: ag.grad(inner)(0.3, scale=s))
    assert_tree_allclose(outer(2.0), onp.cos(0.3), rtol=1e-14)


def test_value_and_grad(ag, np, ref):
    v, g = ag.value_and_grad(bound(np), 0)(X, Y)
    assert_tree_allclose(v, onp.sum(onp.sin(X) * Y**2), rtol=1e-14)
    assert_tree_allclose(g, df_dx(X, Y), rtol=1e-13)
    rv, rg = ref.value_and_grad(bound(ref.np), 0)(X, Y)
    assert_tree_allclose((v, g), (rv, rg), rtol=1e-13)


def test_value_and_grad_argnum_tuple(ag, np):
    v = onp.sum(onp.sin(X) * Y**2)
    v2, (gx, gy) = ag.value_and_grad(bound(np), (0, 1))(X, Y)
    assert_tree_allclose((v2, gx, gy), (v, df_dx(X, Y), df_dy(X, Y)), rtol=1e-13)


def test_make_vjp(ag, np, ref):
    fun = lambda x, y: np.sin(x) * y
    vjp, ans = ag.make_vjp(fun, 1)(X, Y)
    assert_tree_allclose(ans, onp.sin(X) * Y, rtol=1e-15)
    g = _RS.randn(4)
    assert_tree_allclose(vjp(g), g * onp.sin(X), rtol=1e-14)
    assert_tree_allclose(vjp(2 * g), 2 * g * onp.sin(X), rtol=1e-14)  # reusable
    rvjp, rans = ref.make_vjp(lambda x, y: ref.np.sin(x) * y, 1)(X, Y)
    assert_tree_allclose(vjp(g), rvjp(g), rtol=1e-14)


def test_differential_operators_private_makers_are_autograds(ag, np):
    # autograd.differential_operators binds core's make_vjp/make_jvp as _make_vjp/_make_jvp, and
    # libraries call them there: geomstats builds its value_and_grad and jacobian on
    # unary_to_nary and differential_operators._make_vjp(fun, x).
    ops = importlib.import_module(ag.__name__ + ".differential_operators")
    core = importlib.import_module(ag.__name__ + ".core")
    builtins = importlib.import_module(ag.__name__ + ".builtins")
    assert ops._make_vjp is core.make_vjp and ops._make_jvp is core.make_jvp
    assert ops.atuple is builtins.tuple

    @ops.unary_to_nary
    def value_and_vjp_ones(fun, x):
        vjp, ans = ops._make_vjp(fun, x)
        return ans, vjp(ops.vspace(ans).ones())

    ans, g = value_and_vjp_ones(lambda x, y: np.sin(x) * y, argnum=0)(X, Y)
    assert_tree_allclose((ans, g), (onp.sin(X) * Y, onp.cos(X) * Y), rtol=1e-14)
    jvp = ops._make_jvp(np.sin, X)
    assert_tree_allclose(jvp(Y), (onp.sin(X), onp.cos(X) * Y), rtol=1e-14)


def test_make_vjp_argnum_tuple(ag, np):
    fun = lambda x, y: np.sin(x) * y
    g = _RS.randn(4)
    vjp2, _ = ag.make_vjp(fun, (0, 1))(X, Y)
    assert_tree_allclose(vjp2(g), (g * onp.cos(X) * Y, g * onp.sin(X)), rtol=1e-14)


def test_elementwise_grad(ag, np, ref):
    g = ag.elementwise_grad(np.tanh)(M)
    assert_tree_allclose(g, 1 - onp.tanh(M) ** 2, rtol=1e-13)
    assert_tree_allclose(g, ref.elementwise_grad(ref.np.tanh)(M), rtol=1e-14)
    # sum over outputs of the Jacobian for a non-diagonal function
    A = _RS.randn(3, 4)
    g2 = ag.elementwise_grad(lambda x: np.dot(A, x))(X)
    assert_tree_allclose(g2, A.sum(0), rtol=1e-13)


def test_jacobian(ag, np, ref):
    J = ag.jacobian(lambda x: np.sin(x) * np.sum(x))(X)
    expected = onp.diag(onp.cos(X) * onp.sum(X)) + onp.sin(X)[:, None]
    assert J.shape == (4, 4)
    assert_tree_allclose(J, expected, rtol=1e-13)
    assert_tree_allclose(J, ref.jacobian(lambda x: ref.np.sin(x) * ref.np.sum(x))(X), rtol=1e-14)
    # shape is out.shape + in.shape
    J2 = ag.jacobian(lambda m: m**2)(M)
    assert J2.shape == (2, 3, 2, 3)
    assert_tree_allclose(J2, onp.einsum("ij,ik,jl->ijkl", 2 * M, onp.eye(2), onp.eye(3)), rtol=1e-14)
    J3 = ag.jacobian(lambda x, y: x * y, 1)(X, Y)
    assert_tree_allclose(J3, onp.diag(X), rtol=1e-15)


def test_hessian(ag, np, ref):
    H = ag.hessian(lambda x: np.sum(x**3) + x[0] * x[1])(X)
    expected = onp.diag(6 * X)
    expected[0, 1] += 1.0
    expected[1, 0] += 1.0
    assert_tree_allclose(H, expected, rtol=1e-13, atol=1e-14)


def test_grad_and_aux(ag, np, ref):
    aux = onp.array([1.0, 2.0])

    def f(x):
        return np.sum(x**2), aux * 3.0

    g, a = ag.grad_and_aux(f)(X)
    assert_tree_allclose(g, 2 * X, rtol=1e-15)
    assert_tree_allclose(a, aux * 3.0, rtol=0)
    rg, ra = ref.grad_and_aux(lambda x: (ref.np.sum(x**2), aux * 3.0))(X)
    assert_tree_allclose((g, a), (rg, ra), rtol=1e-15)


@pytest.mark.fastgrad_only
@pytest.mark.parametrize("aux", ["a string", None, 7, {"k": [1, "x"]}])
def test_grad_and_aux_passes_any_aux(ag, np, aux):
    g, a = ag.grad_and_aux(lambda x: (np.sum(x**2), aux))(X)
    assert a is aux
    assert_tree_allclose(g, 2 * X, rtol=1e-15)


def test_grad_and_aux_traced_aux_is_unboxed(ag, np):
    g, a = ag.grad_and_aux(lambda x: (np.sum(x**2), x * 2.0))(X)
    assert type(a) is onp.ndarray
    assert_tree_allclose(a, X * 2.0, rtol=0)


@pytest.mark.parametrize("op", ["tensor_jacobian_product", "vector_jacobian_product"])
def test_tensor_jacobian_product(ag, np, ref, op):
    v = _RS.randn(2, 3)
    tjp = getattr(ag, op)(lambda m: np.sin(m) * 2.0)
    assert_tree_allclose(tjp(M, v), v * 2 * onp.cos(M), rtol=1e-14)
    rtjp = getattr(ref, op)(lambda m: ref.np.sin(m) * 2.0)
    assert_tree_allclose(tjp(M, v), rtjp(M, v), rtol=1e-14)
    # argnum selects the argument, v comes last
    tjp1 = getattr(ag, op)(lambda x, y: x * y, 1)
    w = _RS.randn(4)
    assert_tree_allclose(tjp1(X, Y, w), w * X, rtol=1e-15)


def test_vector_jacobian_product_is_alias(ag):
    assert ag.vector_jacobian_product is ag.tensor_jacobian_product
    assert ag.hessian_vector_product is ag.hessian_tensor_product


def test_grad_named(ag, np, ref):
    def f(x, y, scale=1.0):
        return f_xy(np, x, y, scale)

    assert_tree_allclose(ag.grad_named(f, "y")(X, Y), df_dy(X, Y), rtol=1e-13)
    assert_tree_allclose(ag.grad_named(f, "x")(X, Y, scale=2.0), df_dx(X, Y, 2.0), rtol=1e-13)

    def rf(x, y, scale=1.0):
        return f_xy(ref.np, x, y, scale)

    assert_tree_allclose(ag.grad_named(f, "y")(X, Y), ref.grad_named(rf, "y")(X, Y), rtol=1e-14)


def test_grad_accepts_size_one_outputs(ag, np):
    for shape in [(1,), (1, 1)]:
        g = ag.grad(lambda x: np.reshape(np.sum(x**2), shape))(X)
        assert_tree_allclose(g, 2 * X, rtol=1e-15)


def test_higher_order_scalar(ag, np):
    f = lambda x: np.sin(x) * x
    d1 = ag.grad(f)
    d2 = ag.grad(d1)
    d3 = ag.grad(d2)
    x = 0.7
    assert_tree_allclose(d1(x), onp.cos(x) * x + onp.sin(x), rtol=1e-14)
    assert_tree_allclose(d2(x), -onp.sin(x) * x + 2 * onp.cos(x), rtol=1e-14)
    assert_tree_allclose(d3(x), -onp.cos(x) * x - 3 * onp.sin(x), rtol=1e-13)


# ---------------------------------------------------------------------------
# names and docstrings


@pytest.mark.parametrize("op", NARY_OPS)
@pytest.mark.parametrize("argnum", [0, -1, (0, 1), [0, 1]], ids=["0", "-1", "tuple", "list"])
def test_generated_name_and_doc(ag, op, argnum):
    def my_function(x, y):
        return x * y

    wrapped = getattr(ag, op)(my_function, argnum)
    assert wrapped.__name__ == f"{op}_of_my_function_wrt_argnum_{argnum}"
    assert wrapped.__doc__.startswith(f"    {op} of function my_function with")


def test_grad_docstring(ag):
    assert re.match(r"\s*Returns a function which", ag.grad.__doc__)


# autograd 1.9.1 has no docstring (the string "None") on these
_UNDOCUMENTED_IN_AUTOGRAD = {"make_vjp", "make_jvp", "deriv", "holomorphic_grad"}


@pytest.mark.parametrize(
    "op", [pytest.param(o, marks=[pytest.mark.fastgrad_only] if o in _UNDOCUMENTED_IN_AUTOGRAD else []) for o in OPS]
)
def test_operator_has_real_docstring(ag, op):
    doc = getattr(ag, op).__doc__
    assert doc and doc.strip() and doc.strip() != "None" and len(doc.strip()) > 20


# ---------------------------------------------------------------------------
# errors (SPEC §8)

SCALAR_MSG = re.compile(
    r"only applies to real scalar-output functions\. "
    r"Try jacobian, elementwise_grad or holomorphic_grad\."
)


@pytest.mark.parametrize("out", ["vector", "matrix", "complex", "complex-array"])
def test_grad_rejects_nonscalar_or_complex_output(ag, np, out):
    funs = {
        "vector": lambda x: x * 2.0,
        "matrix": lambda x: np.outer(x, x),
        "complex": lambda x: np.sum(x) * (1 + 2j),
        "complex-array": lambda x: x * 1j,
    }
    with pytest.raises(TypeError, match=SCALAR_MSG) as info:
        ag.grad(funs[out])(X)
    assert "grad" in str(info.value).lower()
    with pytest.raises(TypeError) as info:
        ag.value_and_grad(funs[out])(X)
    assert str(info.value) == (
        "value_and_grad only applies to real scalar-output functions. "
        "Try jacobian, elementwise_grad or holomorphic_grad."
    )


def test_elementwise_grad_rejects_complex_output(ag, np):
    with pytest.raises(TypeError, match="real"):
        ag.elementwise_grad(lambda x: x * 1j)(X)


@pytest.mark.fastgrad_only  # (autograd computes every row, then fails to reshape them: ValueError)
def test_jacobian_rejects_complex_output(ag, np):
    with pytest.raises(TypeError) as info:
        ag.jacobian(lambda x: x * 1j)(X)
    assert str(info.value) == (
        "jacobian only applies to real-output functions; for a holomorphic function use holomorphic_grad."
    )


def test_jacobian_of_complex_output_raises_a_rules_own_error_first(ag, np):
    # A library's rule that refuses the differentiation (PennyLane's, for a circuit returning
    # its state) is heard before the complaint about the complex output, as under autograd.
    extend = importlib.import_module(ag.__name__ + ".extend")

    @extend.primitive
    def state(x):
        return onp.array([onp.cos(x), 1j * onp.sin(x)])

    def refuse(ans, x):
        def vjp(g):
            raise ValueError("this library cannot differentiate its state")

        return vjp

    extend.defvjp(state, refuse)
    with pytest.raises(ValueError, match="cannot differentiate its state"):
        ag.jacobian(state)(0.3)


@pytest.mark.parametrize("op", ["grad", "value_and_grad", "make_vjp", "elementwise_grad"])
def test_output_independent_of_input(ag, np, op):
    x = onp.ones((2, 3))
    with pytest.warns(UserWarning, match="Output seems independent of input."):
        if op == "make_vjp":
            vjp, ans = ag.make_vjp(lambda x: 3.0)(x)
            g = vjp(1.0)
        elif op == "value_and_grad":
            v, g = ag.value_and_grad(lambda x: 3.0)(x)
            assert v == 3.0
        elif op == "elementwise_grad":
            g = ag.elementwise_grad(lambda x: onp.ones(4))(x)
        else:
            g = ag.grad(lambda x: np.sum(onp.ones(3)))(x)
    assert onp.shape(g) == (2, 3) and onp.result_type(g) == onp.float64
    assert not onp.any(g)


def test_output_independent_of_input_scalar(ag, np):
    with pytest.warns(UserWarning, match="Output seems independent of input."):
        g = ag.grad(lambda x: 2.0)(1.5)
    assert g == 0.0 and onp.shape(g) == ()


@pytest.mark.parametrize("value", [3, True, None, "text"], ids=["int", "bool", "None", "str"])
def test_function_returning_non_float(ag, np, value):
    with pytest.raises(TypeError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an "independent of input" warning is allowed
        ag.grad(lambda x: value)(X)
    assert type(value).__name__ in str(info.value)


class _Unregistered:
    pass


@pytest.mark.parametrize("value", [_Unregistered(), "abc", object()], ids=["user-class", "str", "object"])
def test_unregistered_input_type(ag, value):
    with pytest.raises(TypeError, match="Can't differentiate w.r.t. type") as info:
        ag.grad(lambda x: 1.0)(value)
    assert type(value).__name__ in str(info.value)


def test_python_int_input(ag, np):
    with pytest.raises(TypeError, match=re.escape("Can't differentiate w.r.t. type <class 'int'>")):
        ag.grad(lambda x: x * 2.0)(3)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(True, id="bool"),
        pytest.param(onp.int64(3), id="np.int64"),
        pytest.param(onp.int32(2), id="np.int32"),
    ],
)
@pytest.mark.fastgrad_only
def test_integer_input_says_pass_floats(ag, np, value):
    with pytest.raises(TypeError) as info:
        ag.grad(lambda x: np.sum(x * 1.5))(value)
    msg = str(info.value).lower()
    assert "integer" in msg or "int" in msg
    assert "float" in msg


def test_item_assignment_into_traced_array(ag, np):
    def f(x):
        x[0] = 1.0
        return np.sum(x)

    with pytest.raises(TypeError):
        ag.grad(f)(onp.ones(3))


def _missing_rule_primitives(ag):
    extend = __import__(ag.__name__ + ".extend", fromlist=["primitive"])

    @extend.primitive
    def no_rule_fun(x):
        return x * 2.0

    @extend.primitive
    def half_rule_fun(x, y):
        return x * y

    extend.defvjp(half_rule_fun, lambda ans, x, y: lambda g: g * y)
    return no_rule_fun, half_rule_fun


def test_missing_rule_names_primitive(ag, np):
    no_rule_fun, half_rule_fun = _missing_rule_primitives(ag)
    with pytest.raises(NotImplementedError, match="no_rule_fun") as info:
        ag.grad(lambda x: no_rule_fun(x))(1.5)
    assert "0" in str(info.value) and "VJP" in str(info.value)
    # the defined argument still works
    assert_tree_allclose(ag.grad(lambda x: half_rule_fun(x, 4.0))(1.5), 4.0, rtol=0)


@pytest.mark.fastgrad_only
def test_missing_rule_names_the_real_argnum(ag, np):
    _, half_rule_fun = _missing_rule_primitives(ag)
    with pytest.raises(NotImplementedError, match="half_rule_fun") as info:
        ag.grad(lambda y: half_rule_fun(3.0, y))(1.5)
    assert re.search(r"\(1,\)|argnums? 1\b", str(info.value)), str(info.value)
    with pytest.raises(NotImplementedError, match=r"half_rule_fun") as info:
        ag.grad(lambda x: half_rule_fun(x, x))(1.5)
    assert "1" in str(info.value)


def test_no_warning_for_ordinary_grad(ag, np):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ag.grad(bound(np))(X, Y)
