"""Behaviours of autograd 1.9.1 that code written for it relies on (issue #14), each checked
against central differences in both modes and to second order, and against autograd."""

import importlib
import itertools
import operator
import warnings

import numpy as onp
import pytest

from gradcheck import check_grads

JOINERS = ["stack", "vstack", "hstack", "column_stack", "concatenate"]


def _iterables(x):
    """The same two arrays as a generator, a dict's values, a map and an iterator."""
    return {
        "generator": lambda: (x * i for i in (1.0, -2.0)),
        "dict_values": lambda: {"a": x, "b": x * -2.0}.values(),
        "map": lambda: map(lambda c: x * c, (1.0, -2.0)),
        "iterator": lambda: iter([x, x * -2.0]),
    }


@pytest.mark.parametrize("kind", ["generator", "dict_values", "map", "iterator"])
@pytest.mark.parametrize("joiner", JOINERS)
def test_joining_functions_take_any_iterable(ag, np, joiner, kind):
    x0 = onp.array([0.5, -1.5, 2.0])
    join = getattr(np, joiner)

    def f(x):
        return np.sum(np.sin(join(_iterables(x)[kind]())) * onp.arange(6.0).reshape(join([onp.ones(3)] * 2).shape))

    check_grads(f, x0, modes=("rev", "fwd"), order=2)
    expected = getattr(onp, joiner)([x0, x0 * -2.0])
    onp.testing.assert_allclose(join(_iterables(x0)[kind]()), expected)


@pytest.mark.parametrize("joiner", JOINERS)
def test_joining_untraced_iterables_gives_numpys_value(np, joiner):
    parts = [onp.arange(3.0), onp.arange(3.0) + 10]
    expected = getattr(onp, joiner)(parts)
    got = getattr(np, joiner)(p for p in parts)
    assert type(got) is onp.ndarray
    onp.testing.assert_array_equal(got, expected)


def test_stack_of_a_generator_matches_autograd(ref, np):
    import fastgrad

    x0 = onp.array([0.5, -1.5])

    def f(np_, x):
        return np_.sum(np_.stack(np_.exp(x * c) for c in (1.0, 0.5, -1.0)) ** 2)

    ours = fastgrad.grad(lambda x: f(np, x))(x0)
    theirs = ref.grad(lambda x: f(ref.np, x))(x0)
    onp.testing.assert_allclose(ours, theirs, rtol=1e-13)


# NumPy's joining functions take an array as the sequence of its rows (np.vstack(x) joins the
# rows of x); given a traced array they must do the same, as autograd's do, and give a traced
# float array, not an object array of traced rows with a zero tangent.
ROW_JOINERS = JOINERS + ["row_stack"]
ROW_SHAPES = [(3,), (2, 3), (2, 2, 2)]


def _join_rows(np, joiner):
    join = getattr(np, joiner)

    def f(x):
        with __import__("warnings").catch_warnings():
            __import__("warnings").simplefilter("ignore", DeprecationWarning)  # row_stack
            return join(x)

    return f


def _rows_case(joiner, shape):
    x0 = onp.linspace(-1.0, 2.0, int(onp.prod(shape))).reshape(shape)
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore", DeprecationWarning)
        try:
            expected = getattr(onp, joiner)(x0)
        except ValueError:  # (np.stack of a 1-d array: its rows are scalars, which it refuses)
            expected = None
    return x0, expected


@pytest.mark.parametrize("shape", ROW_SHAPES, ids=str)
@pytest.mark.parametrize("joiner", ROW_JOINERS)
def test_joining_a_traced_array_joins_its_rows(ag, np, joiner, shape):
    x0, expected = _rows_case(joiner, shape)
    f = _join_rows(np, joiner)
    if expected is None:
        with pytest.raises(ValueError):
            ag.grad(lambda x: np.sum(f(x)))(x0)
        return
    weights = onp.cos(onp.arange(expected.size)).reshape(expected.shape)
    check_grads(lambda x: np.sin(f(x)) * weights, x0, modes=("rev", "fwd"), order=2)
    value, tangent = ag.make_jvp(f)(x0)(onp.ones(shape))
    assert value.dtype == tangent.dtype == onp.float64
    onp.testing.assert_array_equal(value, expected)
    onp.testing.assert_array_equal(tangent, onp.ones(expected.shape))
    jacobian_rows = ag.jacobian(f)(x0)
    assert jacobian_rows.shape == expected.shape + shape and jacobian_rows.dtype == onp.float64


@pytest.mark.parametrize("joiner", ROW_JOINERS)
def test_joining_a_traced_array_matches_autograd(ref, np, joiner):
    import fastgrad

    x0 = onp.arange(6.0).reshape(2, 3) / 7.0
    ours = fastgrad.grad(lambda x: np.sum(_join_rows(np, joiner)(x) ** 3))(x0)
    theirs = ref.grad(lambda x: ref.np.sum(_join_rows(ref.np, joiner)(x) ** 3))(x0)
    onp.testing.assert_allclose(ours, theirs, rtol=1e-13)


@pytest.mark.fastgrad_only
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=str)
@pytest.mark.parametrize("joiner", ["dstack", "block"])
def test_dstack_and_block_of_a_traced_array(ag, np, joiner, shape):
    # autograd has no rule for either; NumPy's block of one array is a copy of it
    x0, expected = _rows_case(joiner, shape)
    f = _join_rows(np, joiner)
    weights = onp.cos(onp.arange(expected.size)).reshape(expected.shape)
    check_grads(lambda x: np.sin(f(x)) * weights, x0, modes=("rev", "fwd"), order=2)
    value, tangent = ag.make_jvp(f)(x0)(onp.ones(shape))
    assert value.dtype == tangent.dtype == onp.float64
    onp.testing.assert_array_equal(value, expected)


@pytest.mark.fastgrad_only
@pytest.mark.parametrize("joiner", ROW_JOINERS + ["dstack"])
def test_joining_a_traced_scalar_raises_numpys_error(ag, np, joiner):
    # a 0-d array has no rows: NumPy's TypeError (autograd's boxes iterate as empty, giving
    # a ValueError about joining nothing)
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore", DeprecationWarning)
        with pytest.raises(TypeError) as numpys:
            getattr(onp, joiner)(onp.array(1.5))
        with pytest.raises(TypeError) as ours:
            ag.grad(lambda x: np.sum(_join_rows(np, joiner)(x)))(onp.array(1.5))
    assert str(ours.value) == str(numpys.value)


CONTAINER_VALUES = {
    "list": [1.0, onp.zeros((2, 1))],
    "dict": {"a": 1.0, "b": onp.zeros((2, 1))},
    "nested": (1.0, [2.0, {"c": onp.ones(2)}]),
}


@pytest.mark.parametrize("name", list(CONTAINER_VALUES))
@pytest.mark.parametrize("op", ["inner_prod", "add", "scalar_mul"])
def test_container_vector_space_operations_to_second_order(ag, name, op):
    vspace = ag.extend.vspace if hasattr(ag, "extend") else __import__(ag.__name__ + ".extend").extend.vspace
    x = CONTAINER_VALUES[name]
    y = vspace(x).randn()
    if op == "scalar_mul":
        check_grads(lambda v, a: vspace(v).scalar_mul(v, a), x, 1.5, modes=("rev", "fwd"), order=2)
    else:
        check_grads(lambda v, w: getattr(vspace(v), op)(v, w), x, y, modes=("rev", "fwd"), order=2)


def _odeint_case(ag_np, odeint):
    def func(y, t, a, b):
        return -a * y + b

    y0 = onp.array([1.0, 2.0])
    t = onp.array([0.0, 0.5, 1.0])
    return func, y0, t


def test_odeint_gradient_wrt_a_tuple_of_args(ag, np):
    odeint = __import__(ag.__name__ + ".scipy.integrate", fromlist=["odeint"]).odeint
    func, y0, t = _odeint_case(np, odeint)
    a, b = onp.array([0.3, 0.7]), onp.array([0.1, -0.2])

    def f(args):
        return np.sum(odeint(func, y0, t, args) ** 2)

    g = ag.grad(f)((a, b))
    assert type(g) is tuple and len(g) == 2

    def f_ab(a_, b_):
        return f((a_, b_))

    for i in range(2):
        num = onp.array(
            [
                (
                    f_ab(*[v + 1e-6 * e if j == i else v for j, v in enumerate((a, b))])
                    - f_ab(*[v - 1e-6 * e if j == i else v for j, v in enumerate((a, b))])
                )
                / 2e-6
                for e in onp.eye(2)
            ]
        )
        onp.testing.assert_allclose(g[i], num, rtol=1e-4)


@pytest.mark.fastgrad_only
def test_odeint_gradient_wrt_each_arg():
    # autograd raises (setting an array element with a sequence) for one traced arg
    import fastgrad.numpy as fnp
    from fastgrad.scipy.integrate import odeint

    func, y0, t = _odeint_case(fnp, odeint)
    check_grads(
        lambda a_, b_: fnp.sum(odeint(func, y0, t, (a_, b_)) ** 2),
        onp.array([0.3, 0.7]),
        onp.array([0.1, -0.2]),
        modes=("rev", "fwd"),
        order=1,
        rtol=1e-4,
        atol=1e-6,
    )


def test_odeint_tuple_of_args_matches_autograd(ref):
    import fastgrad
    import fastgrad.numpy as fnp
    from autograd.scipy.integrate import odeint as ag_odeint
    from fastgrad.scipy.integrate import odeint as fg_odeint

    func, y0, t = _odeint_case(fnp, fg_odeint)
    ab = (onp.array([0.3, 0.7]), onp.array([0.1, -0.2]))
    ours = fastgrad.grad(lambda args: fnp.sum(fg_odeint(func, y0, t, args)))(ab)
    theirs = ref.grad(lambda args: ref.np.sum(ag_odeint(func, y0, t, args)))(ab)
    for o, r in zip(ours, theirs):
        onp.testing.assert_allclose(o, r, rtol=1e-6)


def _odeint_net_case(np):
    # autograd's ode_net example: the dynamics are a small network whose weights, a list of
    # (W, b) pairs, are one entry of args
    def net(y, t, params):
        h = y
        for W, b in params:
            h = np.tanh(h @ W + b)
        return h

    rng = onp.random.RandomState(3)
    params = [(rng.randn(2, 3) * 0.5, rng.randn(3) * 0.1), (rng.randn(3, 2) * 0.5, rng.randn(2) * 0.1)]
    return net, onp.array([1.0, -0.5]), onp.array([0.0, 0.4, 0.8]), params


# the example passes autograd.builtins.tuple((params,)); autograd needs that traced tuple, and
# fastgrad takes a plain tuple as well
@pytest.mark.parametrize("pack", ["traced_tuple", pytest.param("tuple", marks=pytest.mark.fastgrad_only)])
def test_odeint_gradient_wrt_weights_nested_in_args(ag, np, pack):
    from itertools import chain

    odeint = __import__(ag.__name__ + ".scipy.integrate", fromlist=["odeint"]).odeint
    traced_tuple = __import__(ag.__name__ + ".builtins", fromlist=["tuple"]).tuple
    net, y0, t, params = _odeint_net_case(np)

    def loss(params, pack):
        return np.sum(odeint(net, y0, t, pack((params,)), rtol=1e-10, atol=1e-10) ** 2)

    g = ag.grad(loss)(params, traced_tuple if pack == "traced_tuple" else tuple)
    assert type(g) is list and [type(pair) for pair in g] == [tuple, tuple]
    flat = list(chain.from_iterable(params))
    for k, leaf in enumerate(flat):
        d = onp.cos(onp.arange(leaf.size) + k).reshape(leaf.shape)

        def shifted(eps, k=k, d=d):
            leaves = [v + eps * d if j == k else v for j, v in enumerate(flat)]
            return loss([(leaves[0], leaves[1]), (leaves[2], leaves[3])], tuple)

        numeric = (shifted(1e-6) - shifted(-1e-6)) / 2e-6
        onp.testing.assert_allclose(onp.sum(g[k // 2][k % 2] * d), numeric, rtol=1e-5)


@pytest.mark.fastgrad_only  # autograd's odeint has no forward-mode rule
def test_odeint_weights_nested_in_args_forward_mode(ag, np):
    odeint = __import__(ag.__name__ + ".scipy.integrate", fromlist=["odeint"]).odeint
    net, y0, t, params = _odeint_net_case(np)
    W = params[0][0]
    check_grads(
        lambda w: odeint(net, y0, t, ([(w, params[0][1]), params[1]],), rtol=1e-10, atol=1e-10),
        W,
        modes=("rev", "fwd"),
        order=1,
        rtol=1e-4,
        atol=1e-6,
    )


def test_odeint_weights_nested_in_args_match_autograd(ref):
    import fastgrad
    import fastgrad.numpy as fnp
    from autograd.builtins import tuple as ag_tuple
    from autograd.scipy.integrate import odeint as ag_odeint
    from fastgrad.scipy.integrate import odeint as fg_odeint

    # (autograd needs its traced tuple around a traced args entry; fastgrad takes a plain one too)
    net, y0, t, params = _odeint_net_case(fnp)
    ours = fastgrad.grad(lambda p: fnp.sum(fg_odeint(net, y0, t, (p,), rtol=1e-10, atol=1e-10)))(params)
    theirs = ref.grad(lambda p: ref.np.sum(ag_odeint(net, y0, t, ag_tuple((p,)), rtol=1e-10, atol=1e-10)))(params)
    for (ow, ob), (tw, tb) in zip(ours, theirs):
        onp.testing.assert_allclose(ow, tw, rtol=1e-6)
        onp.testing.assert_allclose(ob, tb, rtol=1e-6)


SINGULAR_COV = onp.array([[1.0, 1.0], [1.0, 1.0]])


@pytest.mark.parametrize("fn", ["pdf", "logpdf"])
def test_multivariate_normal_singular_cov_gradients_wrt_x_and_mean(ag, fn):
    mvn = __import__(ag.__name__ + ".scipy.stats", fromlist=["multivariate_normal"]).multivariate_normal
    f = getattr(mvn, fn)
    x, mean = onp.array([0.3, 0.3]), onp.array([0.1, 0.1])
    gx = ag.grad(lambda v: f(v, mean, SINGULAR_COV, allow_singular=True))(x)
    gm = ag.grad(lambda m: f(x, m, SINGULAR_COV, allow_singular=True))(mean)
    # along the support (the direction (1, 1)), against central differences of SciPy's density
    import scipy.stats as st

    d = onp.array([1.0, 1.0]) / onp.sqrt(2.0)
    ref_f = getattr(st.multivariate_normal, fn)
    num = (
        ref_f(x + 1e-6 * d, mean, SINGULAR_COV, allow_singular=True)
        - ref_f(x - 1e-6 * d, mean, SINGULAR_COV, allow_singular=True)
    ) / 2e-6
    onp.testing.assert_allclose(gx @ d, num, rtol=1e-6)
    onp.testing.assert_allclose(gm, -gx, rtol=1e-12)


def test_multivariate_normal_singular_cov_matches_autograd(ref):
    import fastgrad
    from fastgrad.scipy.stats import multivariate_normal as fmvn
    from autograd.scipy.stats import multivariate_normal as amvn

    x, mean = onp.array([0.3, 0.3]), onp.array([0.1, 0.1])
    for fn in ("pdf", "logpdf"):
        ours = fastgrad.grad(lambda v: getattr(fmvn, fn)(v, mean, SINGULAR_COV, allow_singular=True))(x)
        theirs = ref.grad(lambda v: getattr(amvn, fn)(v, mean, SINGULAR_COV, allow_singular=True))(x)
        onp.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_multivariate_normal_singular_cov_has_no_cov_derivative(ag):
    mvn = __import__(ag.__name__ + ".scipy.stats", fromlist=["multivariate_normal"]).multivariate_normal
    with pytest.raises(NotImplementedError, match="singular"):
        ag.grad(lambda c: mvn.logpdf(onp.array([0.3, 0.3]), onp.zeros(2), c, allow_singular=True))(SINGULAR_COV)


@pytest.mark.fastgrad_only
def test_multivariate_normal_allow_singular_nonsingular_cov_is_differentiable():
    # autograd refuses every cov once allow_singular=True; the density is smooth here
    import fastgrad
    from fastgrad.scipy.stats import multivariate_normal as mvn

    cov = onp.array([[2.0, 0.5], [0.5, 1.0]])
    x = onp.array([0.3, -0.2])
    check_grads(
        lambda c: mvn.logpdf(x, onp.zeros(2), (c + c.T) / 2, allow_singular=True), cov, modes=("rev", "fwd"), order=2
    )
    onp.testing.assert_allclose(
        fastgrad.grad(lambda c: mvn.logpdf(x, onp.zeros(2), c, allow_singular=True))(cov),
        fastgrad.grad(lambda c: mvn.logpdf(x, onp.zeros(2), c))(cov),
        rtol=1e-10,
    )


R_C_CASES = {
    "r_-arrays-and-scalar": lambda np, x: np.r_[x, 3.0, x * 2],
    "r_-slice": lambda np, x: np.r_[x, 0:3],
    "r_-complex-slice": lambda np, x: np.r_[x, 0:1:3j],
    "r_-directive-axis-ndmin-trans1d": lambda np, x: np.r_["0,2,0", x, x * 3],
    "r_-directive-3d": lambda np, x: np.r_["-1,3,1", x, x * 3],
    "r_-directive-axis": lambda np, x: np.r_["1", np.reshape(x, (1, 2)), onp.ones((1, 2))],
    "c_-vectors": lambda np, x: np.c_[x, x * 2],
    "c_-matrix-and-vector": lambda np, x: np.c_[onp.ones((2, 2)), x],
    "c_-slice": lambda np, x: np.c_[x, 0:2],
}


@pytest.mark.parametrize("name", list(R_C_CASES))
def test_r_and_c_with_traced_values(ag, np, name):
    build = R_C_CASES[name]
    x0 = onp.array([1.0, -2.0])
    onp.testing.assert_array_equal(build(np, x0), build(onp, x0))
    check_grads(lambda x: np.sin(build(np, x)), x0, modes=("rev", "fwd"), order=2)


@pytest.mark.parametrize("name", list(R_C_CASES))
def test_r_and_c_gradients_match_autograd(ref, name):
    import fastgrad
    import fastgrad.numpy as fnp

    build = R_C_CASES[name]
    x0 = onp.array([1.0, -2.0])
    ours = fastgrad.grad(lambda x: fnp.sum(fnp.sin(build(fnp, x))))(x0)
    with pytest.warns(UserWarning):  # autograd: "r_ is slow for array inputs"
        theirs = ref.grad(lambda x: ref.np.sum(ref.np.sin(build(ref.np, x))))(x0)
    onp.testing.assert_allclose(ours, theirs, rtol=1e-13)


@pytest.mark.fastgrad_only
def test_r_directive_errors(np):
    x = np.r_  # (the object, untraced use is NumPy's)
    import fastgrad

    with pytest.raises(ValueError, match="special directives must be the first entry"):
        fastgrad.grad(lambda v: np.sum(x[v, "1"]))(onp.ones(2))
    with pytest.raises(NotImplementedError, match="np.matrix"):
        fastgrad.grad(lambda v: np.sum(x["r", v]))(onp.ones(2))


@pytest.mark.parametrize("joiner", ["vstack", "hstack", "row_stack", "column_stack"])
@pytest.mark.parametrize("constant", ["float", "int"])
def test_forward_mode_through_joins_mixing_traced_and_constant_arrays(ag, np, joiner, constant):
    # the tangent of a join of a traced array and constants is a float array (not object zeros)
    c = onp.ones((1, 2)) * 3.0 if constant == "float" else onp.ones((1, 2), dtype=int)
    join = getattr(np, joiner)
    x0 = onp.array([[1.0, -2.0]])
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore", DeprecationWarning)  # row_stack
        check_grads(lambda x: join((x, c, x * 2.0)), x0, modes=("fwd", "rev"), order=2)
        value, tangent = ag.make_jvp(lambda x: join((c, x)))(x0)(onp.ones((1, 2)))
    assert tangent.dtype == onp.float64
    onp.testing.assert_array_equal(tangent, getattr(onp, joiner)((onp.zeros((1, 2)), onp.ones((1, 2)))))


def test_a_box_made_outside_any_trace(ag, np):
    # libraries build ArrayBox(value, None, None) (autograd allows it) to test types or reach
    # the value; a primitive given one raises a TypeError, as in autograd
    ArrayBox = __import__(ag.__name__ + ".numpy.numpy_boxes", fromlist=["ArrayBox"]).ArrayBox
    getval = __import__(ag.__name__ + ".tracer", fromlist=["getval"]).getval
    value = onp.array([1.0, 2.0])
    box = ArrayBox(value, None, None)
    assert getval(box) is value and box.shape == (2,) and isinstance(box, ArrayBox)
    with pytest.raises(TypeError):
        np.sin(box)
    with pytest.raises(TypeError):
        box * 2.0
    assert ag.grad(lambda x: np.sum(x * getval(box)))(onp.ones(2)).tolist() == [1.0, 2.0]


@pytest.mark.fastgrad_only
def test_a_box_outside_any_trace_names_the_primitive():
    import fastgrad.numpy as fnp
    from fastgrad.numpy.numpy_boxes import ArrayBox

    with pytest.raises(TypeError, match=r"sin: an argument \(ArrayBox\) is a box made outside any trace"):
        fnp.sin(ArrayBox(onp.ones(2), None, None))


def test_numpy_namespace_carries_the_builtins_module(ag, np):
    # autograd.numpy has its builtins module as an attribute, and `from autograd.numpy import *`
    # binds it: PennyLane's numpy re-exports it so and reaches SequenceBox as np.builtins.
    builtins_module = importlib.import_module(ag.__name__ + ".builtins")
    assert np.builtins is builtins_module
    namespace = {}
    exec("from {} import *".format(np.__name__), namespace)
    assert namespace["builtins"] is builtins_module
    assert namespace["builtins"].SequenceBox is builtins_module.SequenceBox


class _Reading:
    """What a library's device may return for a measurement: an object that supports
    products with scalars and sums (PennyLane's tests have such a device)."""

    def __init__(self, val):
        self.val = val

    def __mul__(self, other):
        return _Reading(self.val * other)

    __rmul__ = __mul__

    def __add__(self, other):
        return _Reading(self.val + (other.val if isinstance(other, _Reading) else other))

    __radd__ = __add__


def _object_array(item):
    out = onp.empty((), dtype=object)
    out[()] = item
    return out


@pytest.mark.parametrize("op", ["jacobian", "grad", "elementwise_grad"])
def test_a_primitive_may_return_an_object_array_its_rule_differentiates(ag, op):
    extend = importlib.import_module(ag.__name__ + ".extend")

    @extend.primitive
    def measure(x):
        return _object_array(_Reading(onp.cos(x)))

    extend.defvjp(measure, lambda ans, x: lambda g: g * _Reading(-onp.sin(x)))
    result = getattr(ag, op)(measure)(0.2)
    if op == "jacobian":  # (an object array, as autograd stacks the rows)
        assert type(result) is onp.ndarray and result.dtype == object
        result = result.item()
    assert type(result) is _Reading and result.val == -onp.sin(0.2)


@pytest.mark.fastgrad_only  # (autograd warns that the output seems independent of the input: zero)
@pytest.mark.parametrize("op", ["jacobian", "grad"])
def test_an_object_array_holding_a_traced_value_is_refused(ag, np, op):
    # (the output is not traced itself: the warning of any such output comes first)
    with pytest.warns(UserWarning, match="Output seems independent of input"), pytest.raises(TypeError) as info:
        getattr(ag, op)(lambda x: _object_array(np.sin(x) * 2.0))(0.2)
    assert str(info.value) == (
        "{} requires the function to return a float or a float array, but it returned a value of "
        "type <class 'numpy.ndarray'> with dtype object".format(op)
    )


def test_values_of_sibling_traces_combine_as_in_autograd(ag, np, ref):
    # geomstats' value_jacobian_and_hessian keeps each point's value (a box of that point's
    # trace) and stacks them after the traces end, then takes ._value: autograd's sibling
    # traces share an id, so that is a plain array there, and must be here.
    points = [onp.array([1.0, 2.0]), onp.array([3.0, 4.0])]

    def kept_values(lib, numpy):
        kept = []
        for p in points:
            lib.make_vjp(lambda x: kept.append(x * 2.0) or numpy.sum(x * 3.0))(p)
        return kept

    kept = kept_values(ag, np)
    got = np.stack(kept)._value
    assert type(got) is onp.ndarray
    onp.testing.assert_array_equal(got, onp.array([[2.0, 4.0], [6.0, 8.0]]))
    onp.testing.assert_array_equal(got, ref.np.stack(kept_values(ref, ref.np))._value)
    # a box of an ended trace inside a new gradient is a constant: the gradient is a number
    g = ag.grad(lambda y: np.sin(y) * kept[1][0])(0.5)
    assert type(g) is onp.float64 and g == pytest.approx(6.0 * onp.cos(0.5), rel=1e-15)


# A box's ** is np.power, as in autograd.  Python's ** differs from it on NumPy scalars (the
# C library's pow instead of np.power's loop, which may be NumPy's own SIMD code: an ulp
# apart on some values, and -inf or -0.0 ** 0.5) and on complex arrays (square, sqrt and
# reciprocal shortcuts for 2, 0.5 and -1).
POWER_BASES = {
    "float64": onp.float64(onp.abs(onp.random.default_rng(5).standard_normal(300) * 10)),
    "float64-specials": onp.array([-onp.inf, -0.0, 0.0, onp.inf, 1e-310]),
    "float32": onp.abs(onp.random.default_rng(6).standard_normal(300) * 10).astype(onp.float32),
    "complex128": onp.random.default_rng(7).standard_normal(300) + 1j * onp.random.default_rng(8).standard_normal(300),
}


def _bits(values):
    return [(type(v), onp.asarray(v).tobytes()) for v in values]


@pytest.mark.parametrize("exponent", [2, 2.0, 0.5, -1, 3, 1.5, -0.5], ids=repr)
@pytest.mark.parametrize("base", list(POWER_BASES))
def test_power_of_a_box_is_numpys_power(ag, base, exponent):
    values = POWER_BASES[base]
    as_scalars = base != "complex128"  # (NumPy scalars one by one; the complex values as an array)
    inputs = list(values) if as_scalars else [values]
    with onp.errstate(all="ignore"):
        got = [ag.make_vjp(lambda x: x**exponent)(v)[1] for v in inputs]
        reflected = [ag.make_vjp(lambda x: onp.float64(1.5) ** x)(v)[1] for v in inputs[:20]]
        expected = [onp.power(v, exponent) for v in inputs]
        expected_reflected = [onp.power(onp.float64(1.5), v) for v in inputs[:20]]
    assert _bits(got) == _bits(expected)
    assert _bits(reflected) == _bits(expected_reflected)


def test_gradient_of_a_scalar_power_matches_autograd(ref):
    import fastgrad

    values = POWER_BASES["float64"][:100]
    for exponent in (3, -0.5, 1.5, 10, 1 / 3):
        ours = [fastgrad.grad(lambda x: x**exponent)(v) for v in values]
        theirs = [ref.grad(lambda x: x**exponent)(v) for v in values]
        assert _bits(ours) == _bits(theirs)


# unary functions whose rules compute autograd's expression in autograd's order: the same
# bits (the others, tanh, sqrt, reciprocal, arccosh, sinc, compute from the output or in
# another form: see migrating.md, Round-off)
SAME_BITS_UNARY = [
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arctanh", "exp",
    "exp2", "expm1", "log", "log2", "log10", "log1p", "square", "abs", "fabs", "negative", "rad2deg",
    "deg2rad", "degrees", "radians",
]  # fmt: skip


@pytest.mark.parametrize("name", SAME_BITS_UNARY)
def test_unary_gradients_are_autograds_bits(ag, np, ref, name):
    rng = onp.random.default_rng(12)
    values = onp.concatenate([rng.uniform(-3, 3, 40), rng.uniform(0.01, 5, 40), 10 ** rng.uniform(-308, 300, 40)])
    values = onp.concatenate([values, -values])
    f, f_ref = getattr(np, name), getattr(ref.np, name)
    with onp.errstate(all="ignore"):
        ours = [ag.grad(f)(v) for v in values[::6]] + [ag.grad(lambda x: np.sum(f(x)))(values)]
        theirs = [ref.grad(f_ref)(v) for v in values[::6]] + [ref.grad(lambda x: ref.np.sum(f_ref(x)))(values)]
    assert _bits(ours) == _bits(theirs)


ANY_BASE = [2.0, onp.float64(2.0), onp.float32(2.0), 0.0, -0.0, onp.inf, onp.nan]
NONZERO_BASE = [2.0, onp.float64(2.0), onp.float32(2.0), -3.0, onp.float64(-0.5)]  # (angle at 0: see coverage.md)
CONSTANT_CASES = {  # functions constant in x (x**0) or on real x (imag, angle), and x + them
    "x**0": (lambda np, x: x**0, ANY_BASE),
    "x**0.0": (lambda np, x: x**0.0, ANY_BASE),
    "power(x, 0)": (lambda np, x: np.power(x, 0), ANY_BASE),
    "x + power(x, 0)": (lambda np, x: x + np.power(x, 0), ANY_BASE),
    "power(1/x, 0.0)": (lambda np, x: np.power(1.0 / x, 0.0), ANY_BASE),
    "imag(x) + x": (lambda np, x: np.imag(x) + x, ANY_BASE),
    "imag(1/x) + x": (lambda np, x: np.imag(1.0 / x) + x, ANY_BASE),
    "angle(x)": (lambda np, x: np.angle(x), NONZERO_BASE),
    "angle(x) + x": (lambda np, x: np.angle(x) + x, NONZERO_BASE),
}


@pytest.mark.parametrize("case", list(CONSTANT_CASES))
def test_gradient_of_a_constant_function_is_autograds(ag, np, ref, case):
    # their rules give autograd's zero (power: y * x**1, imag and angle: the real part of a
    # complex product), of the type the other rules give and nan where the cotangent or x
    # is not finite: not the 0-d array of a gradient nothing reached
    f, bases = CONSTANT_CASES[case]
    xs = onp.array(bases[3:])
    with onp.errstate(all="ignore"):
        ours = [ag.grad(lambda x: f(np, x))(v) for v in bases]
        # (a float32 x keeps its dtype here; autograd's is float64 on NumPy 1: migrating.md)
        assert type(ours[1]) is onp.float64 and type(ours[2]) is onp.float32
        del ours[2]
        theirs = [ref.grad(lambda x: f(ref.np, x))(v) for v in bases if type(v) is not onp.float32]
        ours.append(ag.grad(lambda x: np.sum(f(np, x)))(xs))
        theirs.append(ref.grad(lambda x: ref.np.sum(f(ref.np, x)))(xs))
        ours.append(ag.make_jvp(lambda x: f(np, x))(onp.float64(2.0))(onp.float64(1.0))[1])
        theirs.append(ref.make_jvp(lambda x: f(ref.np, x))(onp.float64(2.0))(onp.float64(1.0))[1])
    assert _bits(ours) == _bits(theirs)


COMPLEX_OPERAND_CASES = {
    "1j*x": (lambda x: 1j * x, lambda v: onp.multiply(1j, v)),
    "x*1j": (lambda x: x * 1j, lambda v: onp.multiply(v, 1j)),
    "(2+1j)+x": (lambda x: (2 + 1j) + x, lambda v: onp.add(2 + 1j, v)),
    "(2+1j)-x": (lambda x: (2 + 1j) - x, lambda v: onp.subtract(2 + 1j, v)),
    "1j/x": (lambda x: 1j / x, lambda v: onp.true_divide(1j, v)),
    "(0.5+1j)**x": (lambda x: (0.5 + 1j) ** x, lambda v: onp.power(0.5 + 1j, v)),
}


@pytest.mark.parametrize("case", list(COMPLEX_OPERAND_CASES))
@pytest.mark.parametrize("value", [onp.float64(1.7), onp.float32(1.7), onp.array(1.7), 1.7], ids=repr)
def test_python_complex_and_a_box_give_numpys_complex(ag, case, value):
    # (Python's complex operators take a float64, a float subclass, before NumPy can, and
    # give a Python complex; autograd's ufunc gives a NumPy complex128)
    f, ufunc = COMPLEX_OPERAND_CASES[case]
    got = ag.make_vjp(f)(value)[1]
    expected = ufunc(value)
    assert type(got) is type(expected)
    assert onp.asarray(got).tobytes() == onp.asarray(expected).tobytes()


OPERAND_VALUES = {
    "int": 3,
    "float": 1.7,
    "complex": 0.5 + 1.2j,
    "bool": True,
    "float64": onp.float64(-2.3),
    "float32": onp.float32(0.7),
    "float16": onp.float16(1.5),
    "complex128": onp.complex128(1 - 2j),
    "complex64": onp.complex64(0.3 + 0.1j),
    "int64": onp.int64(2),
    "0-d": onp.array(0.9),
    "float64 array": onp.array([0.4, -1.1, 2.5]),
    "complex array": onp.array([0.4 + 1j, -1.1, 2.5j]),
    "float32 array": onp.array([0.4, 1.1], dtype=onp.float32),
}
TRACED_VALUES = [k for k in OPERAND_VALUES if k not in ("int", "bool", "int64")]
BOX_OPERATORS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "**": operator.pow,
    "%": operator.mod,
}


def _result_or_error(lib, f, value):
    try:
        with warnings.catch_warnings(), onp.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            r = lib.make_vjp(f)(value)[1]
    except Exception as e:
        return "raises", type(e)
    return type(r), getattr(r, "dtype", None), onp.asarray(r).tobytes()


@pytest.mark.parametrize("symbol", list(BOX_OPERATORS))
def test_box_operators_give_autograds_values_and_types(ref, symbol):
    # Every traced value type against every operand type, on either side: the same type,
    # dtype and bits as autograd's (whose operators all call the ufunc), or the same error.
    import fastgrad

    op = BOX_OPERATORS[symbol]
    mismatches = []
    for traced, other, side in itertools.product(TRACED_VALUES, OPERAND_VALUES, ("left", "right")):
        o = OPERAND_VALUES[other]
        f = (lambda x: op(x, o)) if side == "left" else (lambda x: op(o, x))
        ours = _result_or_error(fastgrad, f, OPERAND_VALUES[traced])
        theirs = _result_or_error(ref, f, OPERAND_VALUES[traced])
        if ours != theirs:
            mismatches.append((traced, symbol, other, side, ours[:2], theirs[:2]))
    assert mismatches == []


# An integer or boolean array output (of an integer input, or a cast) is differentiated as in
# autograd: jacobian and elementwise_grad give autograd's values, as float64 (an integer
# input's gradient is float64 in fastgrad; autograd keeps the output's integer dtype).
INTEGER_OUTPUTS = {
    "identity": (lambda np, x: x, onp.arange(3)),
    "scaled": (lambda np, x: x * 2, onp.arange(3)),
    "joined": (lambda np, x: np.concatenate([x, x[::-1]]), onp.arange(3)),
    "bool-identity": (lambda np, x: x, onp.array([True, False])),
    "cast": (lambda np, x: x.astype(int), onp.linspace(0.5, 2.5, 3)),
    "comparison": (lambda np, x: x > 1.0, onp.linspace(0.5, 2.5, 3)),
    "constant": (lambda np, x: onp.arange(2), onp.linspace(0.5, 2.5, 3)),
}


@pytest.mark.parametrize("op", ["jacobian", "elementwise_grad"])
@pytest.mark.parametrize("name", list(INTEGER_OUTPUTS))
def test_integer_array_outputs_are_differentiated_as_in_autograd(ag, np, ref, op, name):
    f, x = INTEGER_OUTPUTS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (the constant: "Output seems independent of input.")
        got = getattr(ag, op)(lambda x: f(np, x))(x)
        expected = getattr(ref, op)(lambda x: f(ref.np, x))(x)
    onp.testing.assert_array_equal(got, expected)
    if ag.__name__ == "fastgrad":
        assert got.dtype == onp.float64
