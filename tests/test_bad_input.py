"""Bad input: every row of SPEC.md section 8, plus NaN/inf, empty, 0-d, non-contiguous,
read-only, object and string arrays, and out-of-range argnums.

Each case must end in the documented outcome: a correct result, or a clear exception of
the documented type whose message says what went wrong -- never a crash, never a silent
wrong answer, never an error from deep inside NumPy that does not name the problem.
"""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as np
from fastgrad.extend import defjvp, defvjp, primitive, Box
from gradcheck import check_grads

pytestmark = pytest.mark.fastgrad_only

try:
    import autograd as _ag
    import autograd.numpy as _anp
except ImportError:  # the oracle is optional
    _ag = _anp = None

needs_autograd = pytest.mark.skipif(_ag is None, reason="autograd (the oracle) not installed")

SCALAR_ONLY = "only applies to real scalar-output functions. Try jacobian, elementwise_grad or holomorphic_grad."


def _x():
    return onp.array([0.3, -1.2, 2.0])


# ---------------------------------------------------------------------------------------
# Row 1: non-scalar or complex output to grad / value_and_grad

NON_SCALAR_OUTPUTS = {
    "vector": lambda x: x * 2.0,
    "matrix": lambda x: np.outer(x, x),
    "size-0": lambda x: x[:0],
    "complex-scalar": lambda x: np.sum(x) * 1j,
    "complex-size-1": lambda x: np.sum(x, keepdims=True) * (1.0 + 2.0j),
    "tuple-of-two": lambda x: (np.sum(x), np.sum(x)),
}


@pytest.mark.parametrize("name", list(NON_SCALAR_OUTPUTS))
def test_grad_of_non_scalar_output_is_a_type_error(name):
    f = NON_SCALAR_OUTPUTS[name]
    with pytest.raises(TypeError) as info:
        fastgrad.grad(lambda x: f(x))(_x())
    assert str(info.value).lower() == ("grad " + SCALAR_ONLY).lower()


@pytest.mark.parametrize("name", list(NON_SCALAR_OUTPUTS))
def test_value_and_grad_of_non_scalar_output_is_a_type_error(name):
    f = NON_SCALAR_OUTPUTS[name]
    with pytest.raises(TypeError) as info:
        fastgrad.value_and_grad(lambda x: f(x))(_x())
    assert str(info.value) == "value_and_grad " + SCALAR_ONLY


@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1)])
def test_size_one_outputs_are_accepted(shape):
    x = _x()
    g = fastgrad.grad(lambda x: np.reshape(np.sum(x**2), shape))(x)
    onp.testing.assert_allclose(g, 2 * x, rtol=1e-15)
    value, g2 = fastgrad.value_and_grad(lambda x: np.reshape(np.sum(x**2), shape))(x)
    assert onp.shape(value) == shape
    onp.testing.assert_allclose(g2, 2 * x, rtol=1e-15)


# ---------------------------------------------------------------------------------------
# Row 2: a primitive without a rule


def test_primitive_without_any_rule_names_primitive_and_argnum():
    @primitive
    def no_rule_here(x):
        return x * 2.0

    with pytest.raises(NotImplementedError) as info:
        fastgrad.grad(lambda x: no_rule_here(x) * 3.0)(1.5)
    msg = str(info.value)
    assert "no_rule_here" in msg and "(0,)" in msg and "VJP" in msg


def test_primitive_with_a_rule_for_one_argument_only():
    @primitive
    def half_ruled(x, y):
        return x * y

    defvjp(half_ruled, lambda ans, x, y: lambda g: g * y)  # no rule for y
    assert fastgrad.grad(half_ruled, 0)(2.0, 5.0) == 5.0
    with pytest.raises(NotImplementedError) as info:
        fastgrad.grad(half_ruled, 1)(2.0, 5.0)
    msg = str(info.value)
    assert "half_ruled" in msg and "(1,)" in msg


def test_primitive_without_rule_on_constants_only_is_fine():
    @primitive
    def no_rule_either(x):
        return x * 2.0

    # the rule-less primitive only ever sees constants: no node, no error
    g = fastgrad.grad(lambda x: x * no_rule_either(3.0))(1.5)
    assert g == 6.0


def test_forward_mode_through_primitive_without_jvp():
    @primitive
    def no_jvp(x):
        return x * 2.0

    defvjp(no_jvp, lambda ans, x: lambda g: 2.0 * g)
    with pytest.raises(NotImplementedError) as info:
        fastgrad.make_jvp(lambda x: no_jvp(x))(1.0)(1.0)
    msg = str(info.value)
    assert "no_jvp" in msg and "JVP" in msg


# ---------------------------------------------------------------------------------------
# Row 3: integer input

INTEGER_INPUTS = {
    "python-int": 3,
    "python-bool": True,
    "numpy-int64": onp.int64(3),
    "numpy-uint8": onp.uint8(3),
    "numpy-bool": onp.bool_(True),
    "int-in-list": [1.0, 2],
    "int-in-tuple": (1.0, onp.int32(2)),
    "int-in-dict": {"a": 1.0, "b": 4},
}
# (integer and boolean *arrays* are accepted, as autograd accepts them: tests/test_integer_arrays.py)


def _sum_of(x):
    if isinstance(x, (list, tuple)):
        return sum(np.sum(v) * 1.0 for v in x)
    if isinstance(x, dict):
        return sum(np.sum(v) * 1.0 for v in x.values())
    return np.sum(x) * 1.0


@pytest.mark.parametrize("name", list(INTEGER_INPUTS))
@pytest.mark.parametrize("op", ["grad", "value_and_grad", "elementwise_grad", "jacobian", "make_vjp", "make_jvp"])
def test_integer_input_is_a_clear_type_error(name, op):
    x = INTEGER_INPUTS[name]
    with pytest.raises(TypeError) as info:
        result = getattr(fastgrad, op)(_sum_of)(x)
        if op == "make_jvp":
            result(x)
    msg = str(info.value)
    assert "Can't differentiate w.r.t. type" in msg
    assert "integers cannot be differentiated" in msg and "float" in msg
    if name == "python-int":
        assert "Can't differentiate w.r.t. type <class 'int'>" in msg


def test_integer_argument_that_is_not_differentiated_is_fine():
    g = fastgrad.grad(lambda x, n: x**n, 0)(2.0, 3)
    assert g == 12.0
    g = fastgrad.grad(lambda x, idx: np.sum(x[idx]), 0)(_x(), onp.array([0, 0, 2]))
    onp.testing.assert_array_equal(g, [2.0, 0.0, 1.0])


def test_integer_in_one_slot_of_an_argnum_tuple():
    with pytest.raises(TypeError) as info:
        fastgrad.grad(lambda x, y: x * y, (0, 1))(2.0, 3)
    assert "Can't differentiate w.r.t. type <class 'int'>" in str(info.value)


# ---------------------------------------------------------------------------------------
# Row 4: item assignment into a traced array


@pytest.mark.parametrize("how", ["setitem", "augmented", "slice"])
def test_item_assignment_into_traced_array(how):
    def f(x):
        if how == "setitem":
            x[0] = 1.0
        elif how == "augmented":
            x[1] += 1.0
        else:
            x[1:] = np.zeros(2)
        return np.sum(x)

    x = _x()
    before = x.copy()
    with pytest.raises(TypeError) as info:
        fastgrad.grad(f)(x)
    msg = str(info.value)
    assert "assign" in msg.lower()
    # it explains the alternative
    assert "np.where" in msg or "concatenate" in msg
    onp.testing.assert_array_equal(x, before)


# ---------------------------------------------------------------------------------------
# Row 5: output independent of the input

INDEPENDENT = {
    "float-constant": (lambda x: 3.0, onp.array([1.0, 2.0])),
    "array-constant": (lambda x: onp.ones(1), onp.array([1.0, 2.0])),
    "uses-value-only": (lambda x: float(np.sum(fastgrad.stop_gradient(x))), onp.array([1.0, 2.0])),
    "float32-input": (lambda x: 1.0, onp.array([1.0, 2.0], dtype=onp.float32)),
    "python-float": (lambda x: 2.0, 1.5),
    "list-input": (lambda x: 2.0, [1.0, onp.ones(2)]),
    "dict-input": (lambda x: 2.0, {"a": 1.0, "b": onp.ones((2, 2))}),
}


def _zeros_like_tree(x):
    if isinstance(x, (list, tuple)):
        return type(x)(_zeros_like_tree(v) for v in x)
    if isinstance(x, dict):
        return {k: _zeros_like_tree(v) for k, v in x.items()}
    return onp.zeros_like(x)


def _assert_tree_equal(a, b):
    if isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for u, v in zip(a, b):
            _assert_tree_equal(u, v)
    elif isinstance(b, dict):
        assert type(a) is type(b) and set(a) == set(b)
        for k in b:
            _assert_tree_equal(a[k], b[k])
    else:
        assert onp.shape(a) == onp.shape(b)
        assert onp.asarray(a).dtype == onp.asarray(b).dtype
        onp.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", list(INDEPENDENT))
def test_output_independent_of_input_gives_zeros_and_a_warning(name):
    f, x = INDEPENDENT[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = fastgrad.grad(f)(x)
    messages = [w for w in caught if str(w.message) == "Output seems independent of input."]
    assert len(messages) == 1 and messages[0].category is UserWarning
    _assert_tree_equal(g, _zeros_like_tree(x))


def test_make_vjp_of_independent_output():
    x = onp.array([1.0, 2.0])
    with pytest.warns(UserWarning, match="Output seems independent of input."):
        vjp, ans = fastgrad.make_vjp(lambda x: onp.ones(3))(x)
    onp.testing.assert_array_equal(ans, onp.ones(3))
    onp.testing.assert_array_equal(vjp(onp.arange(3.0)), onp.zeros(2))


# ---------------------------------------------------------------------------------------
# Row 6: the differentiated function returns an int, bool, None or str

BAD_RETURNS = {
    "int": 1,
    "bool": True,
    "None": None,
    "str": "one",
    "numpy-int": onp.int64(1),
    "numpy-bool": onp.bool_(True),
    "int-array": onp.arange(1),
}


@pytest.mark.parametrize("name", list(BAD_RETURNS))
@pytest.mark.parametrize("op", ["grad", "value_and_grad"])
def test_returning_a_non_float_names_the_returned_type(name, op):
    value = BAD_RETURNS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(TypeError) as info:
            getattr(fastgrad, op)(lambda x: value)(1.5)
    msg = str(info.value)
    assert str(type(value)) in msg, msg
    assert "return" in msg


def test_returning_a_traced_comparison_names_the_type():
    # x > 0 is a bool array computed from a traced value: not differentiable
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(TypeError) as info:
            fastgrad.grad(lambda x: np.sum(x > 0))(_x())
    assert "int" in str(info.value) and "return" in str(info.value)


# ---------------------------------------------------------------------------------------
# Row 7: a keyword argument holding a traced value is passed through untouched


def test_keyword_arguments_are_not_differentiated():
    g = fastgrad.grad(lambda x, scale=1.0: scale * x**2)(3.0, scale=5.0)
    assert g == 30.0


def test_primitive_receives_a_traced_keyword_argument_untouched():
    seen = []

    @primitive
    def scaled(x, s=1.0):
        seen.append(s)
        return x * 2.0

    defvjp(scaled, lambda ans, x, s=1.0: lambda g: 2.0 * g)
    g = fastgrad.grad(lambda x: scaled(x, s=x) + x)(3.0)
    # only the positional x is differentiated (2 + 1); the keyword got the box itself
    assert g == 3.0
    assert len(seen) == 1 and isinstance(seen[0], Box) and fastgrad.stop_gradient(seen[0]) == 3.0


def test_keyword_holding_a_box_of_an_outer_trace():
    # the inner grad passes c through; the outer trace still sees c = x
    g = fastgrad.grad(lambda x: fastgrad.grad(lambda y, c=1.0: y * c)(2.0, c=x))(3.0)
    assert g == 1.0
    if _ag is not None:
        expected = _ag.grad(lambda x: _ag.grad(lambda y, c=1.0: y * c)(2.0, c=x))(3.0)
        assert g == expected


# ---------------------------------------------------------------------------------------
# Row 8: unregistered value types


class Opaque:
    pass


UNREGISTERED = {
    "object": object(),
    "user-class": Opaque(),
    "str": "text",
    "bytes": b"abc",
    "None": None,
    "set": {1.0, 2.0},
    "numpy-str": onp.str_("a"),
    "slice": slice(1, 2),
    "frozenset": frozenset([1.0]),
}


@pytest.mark.parametrize("name", list(UNREGISTERED))
def test_unregistered_input_type(name):
    x = UNREGISTERED[name]
    with pytest.raises(TypeError) as info:
        fastgrad.grad(lambda x: 1.0)(x)
    assert "Can't differentiate w.r.t. type {}".format(type(x)) in str(info.value)


def test_unregistered_type_inside_a_container_input():
    with pytest.raises(TypeError) as info:
        fastgrad.grad(lambda x: x[0] * 2.0)([1.0, "a"])
    assert "<class 'str'>" in str(info.value)


def test_primitive_returning_an_unregistered_type_mid_trace():
    @primitive
    def to_set(x):
        return {float(x)}

    with pytest.raises(TypeError) as info:
        fastgrad.grad(lambda x: 2.0 * len(to_set(x)))(1.0)
    assert "Can't differentiate w.r.t. type <class 'set'>" in str(info.value)


# ---------------------------------------------------------------------------------------
# Row 9: long graphs need no recursion (the 10^6 chain itself is in test_memory.py)


def _frame_depth():
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


def test_long_chain_runs_under_a_tight_recursion_limit():
    # A recursive toposort, backward pass or graph deallocation would need thousands of
    # levels (Python frames, or C calls through PyObject_Call, which count too).
    n = 50_000

    def chain(x):
        for _ in range(n):
            x = x * 1.0000001
        return x

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(_frame_depth() + 120)
    try:
        g = fastgrad.grad(chain)(0.5)
        vjp, ans = fastgrad.make_vjp(chain)(0.5)
        g2 = vjp(2.0)
        del vjp  # a kept graph, freed
        g3 = fastgrad.elementwise_grad(lambda x: chain(x) * x)(onp.array([0.5, 2.0]))
    finally:
        sys.setrecursionlimit(old)
    assert g == pytest.approx(1.0000001**n, rel=1e-9)
    assert g2 == pytest.approx(2.0 * 1.0000001**n, rel=1e-9)
    onp.testing.assert_allclose(g3, 2 * onp.array([0.5, 2.0]) * 1.0000001**n, rtol=1e-9)


# ---------------------------------------------------------------------------------------
# Row 10: the compiled extension missing or broken

_BLOCKER = textwrap.dedent("""
    import sys, warnings
    warnings.simplefilter("always")

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name == "fastgrad._core":
                raise ImportError(MESSAGE)
            return None

    sys.meta_path.insert(0, Blocker())
    sys.modules.pop("fastgrad._core", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import fastgrad
        import fastgrad.numpy as np
        import fastgrad.extend, fastgrad.builtins
        g = fastgrad.grad(lambda x: np.sum(np.sin(x) ** 2))(np.array([0.5, 1.0]))
    relevant = [w for w in caught if "engine" in str(w.message)]
    expected = 2 * np.sin(np.array([0.5, 1.0])) * np.cos(np.array([0.5, 1.0]))
    assert abs(g - expected).max() < 1e-14, g
    print("COMPILED", fastgrad.COMPILED)
    print("WARNINGS", len(relevant), [w.category.__name__ for w in relevant])
    print("ENGINE", fastgrad._engine.engine.__name__)
""")


def _run_blocked(message, **env):
    code = "MESSAGE = {!r}\n".format(message) + _BLOCKER
    full_env = dict(os.environ)
    full_env.pop("FASTGRAD_PURE", None)
    full_env.pop("FASTGRAD_REQUIRE_EXTENSIONS", None)
    full_env.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120)


@pytest.mark.parametrize(
    "message",
    ["No module named 'fastgrad._core'", "/x/_core.so: undefined symbol: PyFoo_Bar"],
    ids=["missing", "broken"],
)
def test_missing_or_broken_extension_falls_back_with_one_warning(message):
    proc = _run_blocked(message)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "COMPILED False" in out
    assert "WARNINGS 1 ['RuntimeWarning']" in out, out
    assert "ENGINE fastgrad._core_py" in out


def test_missing_extension_is_an_import_error_when_required():
    proc = _run_blocked("No module named 'fastgrad._core'", FASTGRAD_REQUIRE_EXTENSIONS="1")
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr
    assert "fastgrad._core" in proc.stderr and "FASTGRAD_REQUIRE_EXTENSIONS" in proc.stderr


# ---------------------------------------------------------------------------------------
# NaN and inf inputs propagate as NumPy does

NAN_INF_CASES = {
    # name: (function of a numpy module, the gradient written out in NumPy)
    "sin": (lambda N, x: N.sum(N.sin(x)), lambda x: onp.cos(x)),
    "square": (lambda N, x: N.sum(x * x), lambda x: 2 * x),
    "exp": (lambda N, x: N.sum(N.exp(x)), lambda x: onp.exp(x)),
    "tanh": (lambda N, x: N.sum(N.tanh(x)), lambda x: 1 - onp.tanh(x) ** 2),
    "log1p": (lambda N, x: N.sum(N.log1p(x * x)), lambda x: 2 * x / (1.0 + x * x)),
    "mean": (lambda N, x: N.mean(x * 3.0), lambda x: onp.full_like(x, 3.0 / x.size)),
    "dot": (lambda N, x: N.dot(x, x), lambda x: 2 * x),
}

NAN_INF_INPUTS = {
    "nan": onp.array([onp.nan, 0.5, -1.0]),
    "inf": onp.array([onp.inf, 0.5, -1.0]),
    "-inf": onp.array([-onp.inf, 0.5, -1.0]),
    "all-bad": onp.array([onp.nan, onp.inf, -onp.inf]),
}


@pytest.mark.parametrize("x_name", list(NAN_INF_INPUTS))
@pytest.mark.parametrize("f_name", list(NAN_INF_CASES))
def test_nan_and_inf_inputs_propagate_like_numpy(f_name, x_name):
    f, expected_fn = NAN_INF_CASES[f_name]
    x = NAN_INF_INPUTS[x_name]
    with onp.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value, g = fastgrad.value_and_grad(lambda x: f(np, x))(x)
        expected = expected_fn(x)
        expected_value = f(onp, x)
    onp.testing.assert_array_equal(value, expected_value)  # NaN == NaN here
    assert g.shape == x.shape and g.dtype == x.dtype
    onp.testing.assert_allclose(g, expected, rtol=1e-14, equal_nan=True)
    if _ag is not None:
        with onp.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            reference = _ag.grad(lambda x: f(_anp, x))(x)
        onp.testing.assert_allclose(g, reference, rtol=1e-14, equal_nan=True)


def test_nan_in_one_element_does_not_leak_into_the_others():
    x = onp.array([onp.nan, 0.5, -1.0, onp.inf])
    with onp.errstate(all="ignore"):
        g = fastgrad.elementwise_grad(lambda x: np.sin(x) * x)(x)
    finite = onp.isfinite(x)
    onp.testing.assert_allclose(g[finite], onp.sin(x[finite]) + x[finite] * onp.cos(x[finite]), rtol=1e-15)
    assert onp.isnan(g[~finite]).all()


# ---------------------------------------------------------------------------------------
# Empty arrays

EMPTY_CASES = {
    "sum-sin": ((0,), lambda x: np.sum(np.sin(x))),
    "sum-square-2d": ((0, 3), lambda x: np.sum(x * x)),
    "sum-square-2d-other": ((3, 0), lambda x: np.sum(x * x)),
    "matmul-to-empty": ((0, 3), lambda x: np.sum(x @ onp.ones((3, 2)))),
    "matmul-inner-empty": ((3, 0), lambda x: np.sum(x @ onp.ones((0, 2)))),
    "concatenate": ((0,), lambda x: np.sum(np.concatenate([x, onp.ones(2)]) ** 2)),
    "index": ((0, 2), lambda x: np.sum(x[:, 0])),
    "reshape": ((0, 4), lambda x: np.sum(np.reshape(x, (2, 0, 2)))),
    "broadcast-with-nonempty": ((0, 1), lambda x: np.sum(x * onp.ones((1, 3)))),
}


@pytest.mark.parametrize("name", list(EMPTY_CASES))
def test_empty_array_input(name):
    shape, f = EMPTY_CASES[name]
    x = onp.zeros(shape)
    value, g = fastgrad.value_and_grad(f)(x)
    assert onp.shape(g) == shape and onp.asarray(g).dtype == onp.float64
    # the value is NumPy's own (plain sum of nothing, or of the constant part)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        numpy_value = _numpy_version(name)(x)
    assert float(value) == pytest.approx(float(numpy_value))


def _numpy_version(name):
    return {
        "sum-sin": lambda x: onp.sum(onp.sin(x)),
        "sum-square-2d": lambda x: onp.sum(x * x),
        "sum-square-2d-other": lambda x: onp.sum(x * x),
        "matmul-to-empty": lambda x: onp.sum(x @ onp.ones((3, 2))),
        "matmul-inner-empty": lambda x: onp.sum(x @ onp.ones((0, 2))),
        "concatenate": lambda x: onp.sum(onp.concatenate([x, onp.ones(2)]) ** 2),
        "index": lambda x: onp.sum(x[:, 0]),
        "reshape": lambda x: onp.sum(onp.reshape(x, (2, 0, 2))),
        "broadcast-with-nonempty": lambda x: onp.sum(x * onp.ones((1, 3))),
    }[name]


def test_empty_array_with_nonempty_partner():
    # only the non-empty argument gets a non-trivial gradient
    x, y = onp.zeros((0, 3)), onp.array([1.0, 2.0, 3.0])
    gx, gy = fastgrad.grad(lambda x, y: np.sum(x * y) + np.sum(y**2), (0, 1))(x, y)
    assert gx.shape == (0, 3)
    onp.testing.assert_allclose(gy, 2 * y, rtol=1e-15)


def test_mean_of_empty_is_nan_with_numpy_warning():
    x = onp.zeros(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value, g = fastgrad.value_and_grad(lambda x: np.mean(x))(x)
    assert onp.isnan(value)
    assert g.shape == (0,)
    assert all(issubclass(w.category, RuntimeWarning) for w in caught if "independent" not in str(w.message))


def test_elementwise_grad_and_jacobian_of_empty():
    x = onp.zeros((0, 2))
    g = fastgrad.elementwise_grad(np.sin)(x)
    assert g.shape == (0, 2)
    jac = fastgrad.jacobian(lambda x: np.sin(x) * 2.0)(onp.zeros(0))
    assert jac.shape == (0, 0)


# ---------------------------------------------------------------------------------------
# 0-d arrays


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize(
    "name,f,df",
    [
        ("sin", lambda x: np.sin(x), lambda x: onp.cos(x)),
        ("square", lambda x: x * x, lambda x: 2 * x),
        ("sum", lambda x: np.sum(x) * 3.0, lambda x: 3.0),
        ("index-empty-tuple", lambda x: x[()] * 2.0, lambda x: 2.0),
        ("reshape", lambda x: np.sum(np.reshape(x, (1, 1)) ** 2), lambda x: 2 * x),
        ("stack", lambda x: np.sum(np.stack([x, x * 2.0])), lambda x: 3.0),
        ("broadcast", lambda x: np.sum(x * onp.ones(3)), lambda x: 3.0),
    ],
)
def test_zero_dimensional_array_input(name, f, df, dtype):
    x = onp.array(0.7, dtype=dtype)
    g = fastgrad.grad(f)(x)
    assert onp.shape(g) == ()
    assert onp.asarray(g).dtype == dtype, (name, onp.asarray(g).dtype)
    rtol = 1e-6 if dtype == onp.float32 else 1e-15
    onp.testing.assert_allclose(g, df(onp.float64(0.7)), rtol=rtol)


def test_zero_dimensional_arrays_in_an_argnum_tuple():
    x, y = onp.array(2.0), onp.array(3.0)
    gx, gy = fastgrad.grad(lambda x, y: x * y * y, (0, 1))(x, y)
    assert onp.shape(gx) == () and onp.shape(gy) == ()
    assert float(gx) == 9.0 and float(gy) == 12.0


# ---------------------------------------------------------------------------------------
# Non-contiguous and read-only arrays


def _layouts():
    base = onp.arange(1.0, 25.0).reshape(4, 6) / 7.0
    ro = base.copy()
    ro.setflags(write=False)
    frozen_bytes = onp.frombuffer(onp.linspace(0.1, 1.2, 12).tobytes(), dtype=onp.float64).reshape(3, 4)
    return {
        "strided": base[:, ::2],
        "transposed": base.T,
        "reversed": base[::-1, ::-1],
        "fortran": onp.asfortranarray(base),
        "column": base[:, 1:2],
        "read-only": ro,
        "read-only-frombuffer": frozen_bytes,
        "broadcast-view": onp.broadcast_to(onp.array([0.5, -0.25, 1.5]), (4, 3)),
        "read-only-strided": ro[::2, 1::2],
    }


LAYOUT_FUNCTIONS = {
    "elementwise": lambda x: np.sum(np.sin(x) * x),
    "matmul": lambda x: np.sum(np.tanh(x @ x.T)),
    "reductions": lambda x: np.sum(np.mean(x, axis=0) ** 2) + np.sum(np.max(x, axis=1)),
    "indexing": lambda x: np.sum(x[0] * x[-1]) + x[-1, 0] * 3.0,
    "identity-ish": lambda x: np.sum(x),
}


@pytest.mark.parametrize("fname", list(LAYOUT_FUNCTIONS))
@pytest.mark.parametrize("layout", list(_layouts()))
def test_non_contiguous_and_read_only_inputs(layout, fname):
    x = _layouts()[layout]
    f = LAYOUT_FUNCTIONS[fname]
    snapshot = x.copy()
    g = fastgrad.grad(f)(x)
    expected = fastgrad.grad(f)(onp.ascontiguousarray(x).copy())
    assert g.shape == x.shape and g.dtype == x.dtype
    onp.testing.assert_allclose(g, expected, rtol=1e-13, atol=1e-15)
    onp.testing.assert_array_equal(x, snapshot)  # the input is untouched
    # the gradient is the caller's own, writeable array, not a view of the input
    assert g.flags.writeable
    assert not onp.shares_memory(g, x)
    g += 1.0
    onp.testing.assert_array_equal(x, snapshot)


def test_gradient_does_not_alias_captured_constants():
    c = onp.array([1.0, 2.0, 3.0])
    c_ro = c.copy()
    c_ro.setflags(write=False)
    for f in (
        lambda x: np.sum(x * c),
        lambda x: np.dot(c, x),
        lambda x: np.sum(c * x),
        lambda x: np.sum(x * c_ro),
        lambda x: np.dot(x, c_ro),
    ):
        g = fastgrad.grad(f)(onp.zeros(3))
        onp.testing.assert_array_equal(g, c)
        assert g.flags.writeable
        assert not onp.shares_memory(g, c) and not onp.shares_memory(g, c_ro)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: x,
        lambda x: np.where(x > 0, x, 0.0),
        lambda x: np.array(x),
        lambda x: np.reshape(x, ()),
        lambda x: np.sum(x, keepdims=False) * onp.ones(()),
    ],
    ids=["identity", "where", "array", "reshape", "times-0d"],
)
@pytest.mark.parametrize("x0", [onp.array(0.5), onp.float64(0.5), 0.5], ids=["0d", "float64", "float"])
def test_gradient_of_a_0d_output_is_a_fresh_writeable_value(f, x0):
    # the seed of a float64 scalar or 0-d output is one shared read-only 1.0; no
    # gradient may be that array, and writing into one gradient must not change the next
    g = fastgrad.grad(f)(x0)
    assert float(g) == 1.0 and onp.shape(g) == ()
    if isinstance(g, onp.ndarray):
        assert g.flags.writeable
        g[()] = 7.0
    again = fastgrad.grad(f)(x0)
    assert float(again) == 1.0
    assert type(again) is type(g)


def test_read_only_cotangent_for_make_vjp():
    x = onp.array([0.5, 1.0, 2.0])
    u = onp.array([1.0, -1.0, 2.0])
    u.setflags(write=False)
    vjp, _ = fastgrad.make_vjp(lambda x: np.sin(x) + x)(x)
    g = vjp(u)
    onp.testing.assert_allclose(g, u * (onp.cos(x) + 1.0), rtol=1e-15)
    assert g.flags.writeable


# ---------------------------------------------------------------------------------------
# Object arrays and strings: a clear TypeError before anything is traced

OBJECT_AND_STRING_INPUTS = {
    "object-array-of-floats": onp.array([1.0, 2.0], dtype=object),
    "object-array-0d": onp.array(1.5, dtype=object),
    "object-array-mixed": onp.array([1.0, "a"], dtype=object),
    "unicode-array": onp.array(["a", "b"]),
    "bytes-array": onp.array([b"a", b"b"]),
    "str": "1.0",
}


@pytest.mark.parametrize("name", list(OBJECT_AND_STRING_INPUTS))
@pytest.mark.parametrize("fname", ["sum", "sin"])
def test_object_and_string_inputs_are_a_clear_type_error(name, fname):
    x = OBJECT_AND_STRING_INPUTS[name]
    f = {"sum": lambda x: np.sum(x), "sin": lambda x: np.sum(np.sin(x))}[fname]
    with pytest.raises(TypeError) as info:
        fastgrad.grad(f)(x)
    msg = str(info.value)
    # the message names the problem: what cannot be differentiated, and why
    assert "differentiate" in msg, msg
    if isinstance(x, onp.ndarray):
        assert str(x.dtype) in msg or "object" in msg, msg


# ---------------------------------------------------------------------------------------
# Traced values hidden from a primitive inside a list, tuple or object array: NumPy's object
# loops compute with them, and the output is an object array of boxes, or one box, which
# differentiation cannot follow (the primitive's rule sees only its arguments).  autograd
# returns that object array as the gradient, or a wrong one; fastgrad refuses with a TypeError
# (which a library's fallback can catch: PennyLane's Hessians by parameter shift rely on it, as
# autograd 1.8 happens to raise there too).

X2 = onp.array([0.5, 1.5])
HOLDS, IS = "holds traced values", "is a traced value"
HIDING = {  # name: (function, the primitive named, what the message says of its output)
    "einsum with a list operand": (lambda x: np.einsum("i,i->i", x, [x[0] * 2.0, x[1]]), "einsum", HOLDS),
    "multiply with a list": (lambda x: np.multiply(x, [x[0], 1.0]), "multiply", HOLDS),
    "box * object array": (lambda x: x * onp.array([x[0], 1.0], dtype=object), "multiply", HOLDS),
    "outer with a list": (lambda x: np.outer(x, [x[0], 1.0]), "outer", HOLDS),
    # one box out: autograd raises an unrelated ValueError (dot), returns an object array of
    # boxes (inner, matmul), or refuses (vdot); fastgrad returned the derivative through x
    # alone before it checked ([x0 * 2, x1] for dot here), silently wrong
    "dot with a tuple": (lambda x: np.dot(x, (x[0] * 2.0, x[1])), "dot", IS),
    "inner with a list": (lambda x: np.inner(x, [x[0], x[1]]), "inner", IS),
    "vdot with a list": (lambda x: np.vdot(x, [x[0], 1.0]), "vdot", IS),
    "box @ list": (lambda x: x @ [x[0], 1.0], "matmul", IS),
}


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("name", list(HIDING))
def test_traced_values_hidden_from_a_primitive_are_a_type_error(name, mode):
    f, primitive_name, what = HIDING[name]
    with pytest.raises(TypeError, match=primitive_name + ": its output " + what + " \\(ArrayBox\\)") as info:
        if mode == "reverse":
            fastgrad.grad(lambda x: np.sum(f(x)))(X2)
        else:
            fastgrad.make_jvp(f)(X2)(onp.ones(2))
    assert "inside a list, tuple or object array" in str(info.value)
    assert "fastgrad.numpy.array(...) or stack(...)" in str(info.value)


@pytest.mark.parametrize("name", list(HIDING))
def test_traced_values_passed_as_an_array_are_differentiated(name):
    # The remedy the message gives: the same values as an array, differentiated right.
    as_array = {
        "einsum with a list operand": lambda x: np.einsum("i,i->i", x, np.array([x[0] * 2.0, x[1]])),
        "multiply with a list": lambda x: np.multiply(x, np.array([x[0], 1.0])),
        "box * object array": lambda x: x * np.array([x[0], 1.0]),
        "outer with a list": lambda x: np.outer(x, np.array([x[0], 1.0])),
        "dot with a tuple": lambda x: np.dot(x, np.stack((x[0] * 2.0, x[1]))),
        "inner with a list": lambda x: np.inner(x, np.array([x[0], x[1]])),
        "vdot with a list": lambda x: np.vdot(x, np.array([x[0], 1.0])),
        "box @ list": lambda x: x @ np.array([x[0], 1.0]),
    }[name]
    check_grads(lambda x: np.sum(as_array(x)), X2, modes=("fwd", "rev"), order=2)


def test_traced_values_of_an_inner_trace_hidden_beside_an_outer_box_are_a_type_error():
    # The outer trace's box is the only one the primitive sees: its output hides inner boxes.
    def outer(y):
        dy = y * onp.array([1.0, 2.0])

        def inner(x):
            jac = [[x * 2.0, x], [x * 3.0, x]]
            return np.sum(np.einsum("i,ij->j", dy, jac))

        return fastgrad.grad(inner)(y[0])

    with pytest.raises(TypeError, match="einsum: its output holds traced values"):
        fastgrad.grad(outer)(X2)


def test_a_box_a_container_read_returns_is_left_alone():
    # A library primitive (PennyLane's execution of circuits is one) may compute its tuple of
    # results from the traced values its arguments also carry, its rule accounting for them: the
    # tuple holds boxes of the trace.  Reading one (container_take) returns such a box, which is
    # no hidden input: the read's node leads to the primitive's, whose rule is complete.
    class Circuit:
        def __init__(self, params):
            self.params = params

    @primitive
    def run(params, circuit):
        return (circuit.params[0] * circuit.params[1], circuit.params[0] + 1.0)

    defvjp(run, lambda ans, params, circuit: lambda g: (params[1] * g[0] + g[1], params[0] * g[0]))
    defjvp(run, lambda t, ans, params, circuit: (params[1] * t[0] + params[0] * t[1], t[0]))

    def f(x):
        params = fastgrad.builtins.tuple([x, x * x])
        results = run(params, Circuit(params))
        return results[0] + 3.0 * results[1]  # x**3 + 3 x + 3

    assert fastgrad.grad(f)(2.0) == 15.0  # 3 x**2 + 3
    assert fastgrad.make_jvp(f)(2.0)(1.0) == (17.0, 15.0)


def test_object_arrays_of_outer_boxes_and_of_untraced_calls_are_left_alone():
    # No box among the arguments: NumPy's object loops call the boxes' own operators, which
    # are recorded (as in autograd), so the gradient is right.
    assert fastgrad.grad(lambda x: np.einsum("i,i", onp.ones(2), [x * 2.0, x * 3.0]))(0.5) == 5.0

    # A box of an outer trace in the output of a primitive of an inner one is a value as any
    # other: the outer trace follows it.
    def outer(y):
        inner_grad = fastgrad.grad(lambda x: np.sum(x * onp.array([y, 1.0], dtype=object)))(0.25)
        assert inner_grad == 4.0  # y + 1
        return inner_grad

    assert fastgrad.grad(outer)(3.0) == 1.0


# ---------------------------------------------------------------------------------------
# argnum out of range or of the wrong type


@pytest.mark.parametrize("argnum", [1, 5, -2, 2**31, 2**63, 10**30, -(10**30), (0, 2), (0, 10**20), [0, -3]])
def test_argnum_out_of_range_is_a_clear_error(argnum):
    with pytest.raises(IndexError) as info:
        fastgrad.grad(lambda x: x * 2.0, argnum)(1.0)
    msg = str(info.value)
    assert "argnum" in msg and "out of range" in msg
    assert "1 positional argument" in msg


@pytest.mark.parametrize("argnum", [1.0, "0", None, (0, "1"), {0: 1}])
def test_argnum_of_the_wrong_type_is_a_clear_error(argnum):
    with pytest.raises(TypeError) as info:
        fastgrad.grad(lambda x, y: x * y, argnum)(1.0, 2.0)
    assert "argnum" in str(info.value)


@pytest.mark.parametrize("op", ["grad", "value_and_grad", "elementwise_grad", "jacobian", "make_vjp", "hessian"])
def test_argnum_checked_by_every_operator(op):
    with pytest.raises(IndexError):
        getattr(fastgrad, op)(lambda x: x * 2.0, 10**30)(1.0)


def test_numpy_integer_argnum_is_accepted():
    assert fastgrad.grad(lambda x, y: x * y, onp.int64(1))(2.0, 3.0) == 2.0


# ---------------------------------------------------------------------------------------
# Array-likes (lists, tuples) as constant operands: NumPy accepts them anywhere an array
# goes, so the gradient must be the same as with the equivalent ndarray constant

_C = [0.8, 1.3, 0.25]
_M = [[1.0, 2.0, 0.5], [0.3, -1.0, 2.0]]

ARRAY_LIKE_CASES = {
    "power-exponent": lambda x, k: np.power(x, k(_C)),
    "power-base": lambda x, k: np.power(k(_C), x),
    "operator-pow-base": lambda x, k: k(_C) ** x,
    "float_power-exponent": lambda x, k: np.float_power(x, k(_C)),
    "float_power-base": lambda x, k: np.float_power(k(_C), x),
    "arctan2-first": lambda x, k: np.arctan2(k(_C), x),
    "arctan2-second": lambda x, k: np.arctan2(x, k(_C)),
    "hypot": lambda x, k: np.hypot(k(_C), x),
    "logaddexp": lambda x, k: np.logaddexp(k(_C), x),
    "divide": lambda x, k: np.true_divide(k(_C), x),
    "maximum": lambda x, k: np.maximum(k(_C), x),
    "clip": lambda x, k: np.clip(x, k([0.5, 0.5, 0.5]), k([1.0, 1.0, 1.0])),
    "where": lambda x, k: np.where(k([True, False, True]), x, k(_C)),
    "concatenate": lambda x, k: np.concatenate([x, k(_C)]),
    "stack": lambda x, k: np.stack([k(_C), x]),
    "dot": lambda x, k: np.dot(k(_M), x),
    "matmul": lambda x, k: np.matmul(k(_M), x),
    "einsum": lambda x, k: np.einsum("ij,j->i", k(_M), x),
    "average": lambda x, k: np.average(x, weights=k(_C)),
    "cross": lambda x, k: np.cross(x, k(_C)),
    "convolve": lambda x, k: np.convolve(x, k(_C)),
    "interp": lambda x, k: np.interp(x, k([0.0, 1.0, 2.0]), k([0.0, 2.0, 3.0])),
    "polyval": lambda x, k: np.polyval(k(_C), x),
    "take": lambda x, k: np.take(x, k([0, 2, 2])),
}


def _as_tuples(v):
    return tuple(_as_tuples(e) for e in v) if isinstance(v, list) else v


@pytest.mark.parametrize("kind", ["list", "tuple"])
@pytest.mark.parametrize("name", list(ARRAY_LIKE_CASES))
def test_array_like_constants_as_operands(name, kind):
    f = ARRAY_LIKE_CASES[name]
    k = (lambda v: v) if kind == "list" else _as_tuples
    x = onp.array([0.7, 1.3, 0.4])
    expected_value, expected = fastgrad.value_and_grad(lambda x: np.sum(f(x, onp.array)))(x)
    value, g = fastgrad.value_and_grad(lambda x: np.sum(f(x, k)))(x)
    onp.testing.assert_allclose(value, expected_value, rtol=1e-15)
    onp.testing.assert_allclose(g, expected, rtol=1e-14)


# ---------------------------------------------------------------------------------------
# pow with a modulus is not differentiable: NumPy, Python floats and autograd all raise


@pytest.mark.parametrize("x", [2.0, onp.array([2.0, 3.0]), onp.float64(3.0)], ids=["float", "array", "float64"])
def test_three_argument_pow_is_a_type_error(x):
    with pytest.raises(TypeError):
        fastgrad.grad(lambda x: np.sum(pow(x, 2, 5)))(x)
    with pytest.raises(TypeError):
        fastgrad.grad(lambda x: np.sum(pow(2.0, x, 5)))(x)
