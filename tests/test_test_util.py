"""fastgrad.test_util (SPEC §7): the same checks, signatures and failure messages as
autograd.test_util.

The random directions of both come from numpy's global generator, so with the same seed the
two libraries print the very same numbers: every scenario below runs under both and the
outcomes (return value or AssertionError text) must be identical.  Each scenario also states
what its outcome must look like, so the file is meaningful without autograd installed.
"""

import importlib
import inspect

import numpy as onp
import pytest

pytestmark = pytest.mark.fastgrad_only  # compares fastgrad with autograd explicitly

NAMES = [
    "check_grads",
    "check_vjp",
    "check_jvp",
    "check_equivalent",
    "combo_check",
    "make_numerical_jvp",
    "scalar_close",
]


def _lib(name):
    return (
        importlib.import_module(name),
        importlib.import_module(name + ".numpy"),
        importlib.import_module(name + ".extend"),
        importlib.import_module(name + ".test_util"),
    )


def _libs():
    libs = [_lib("fastgrad")]
    try:
        libs.append(_lib("autograd"))
    except ImportError:
        pass
    return libs


def _outcome(scenario, lib, seed=0):
    onp.random.seed(seed)
    try:
        return "returned {!r}".format(scenario(*lib))
    except AssertionError as e:
        # pytest may rewrite the asserts of a module named test_util.py (autograd's is):
        # it indents the message and appends its own explanation; undo that
        return "AssertionError: {}".format(str(e).split("\nassert ")[0].replace("\n  ", "\n"))


def _wrong_square(np, ext):
    @ext.primitive
    def wrong_square(x):
        return x**2

    ext.defvjp(wrong_square, lambda ans, x: lambda g: g * 3 * x)  # should be 2x
    ext.defjvp(wrong_square, lambda g, ans, x: g * 3 * x)
    return wrong_square


def _cube_with_wrong_second_derivative(np, ext):
    @ext.primitive
    def cube(x):
        return x**3

    @ext.primitive
    def three_x_squared(x):
        return 3 * x**2

    ext.defvjp(cube, lambda ans, x: lambda g: g * three_x_squared(x))
    ext.defvjp(three_x_squared, lambda ans, x: lambda g: g * 7 * x)  # should be 6x
    return cube


def wrong_vjp(ag, np, ext, tu):
    return tu.check_grads(_wrong_square(np, ext), modes=["rev"])(onp.array([1.0, 2.0]))


def wrong_jvp(ag, np, ext, tu):
    return tu.check_grads(_wrong_square(np, ext), modes=["fwd"])(onp.array([1.0, 2.0]))


def wrong_both_default_modes(ag, np, ext, tu):
    return tu.check_grads(_wrong_square(np, ext))(onp.array([1.0, -0.5, 2.0]))


def wrong_second_order(ag, np, ext, tu):
    return tu.check_grads(_cube_with_wrong_second_derivative(np, ext), modes=["rev"])(1.5)


def wrong_second_order_but_order_1(ag, np, ext, tu):
    return tu.check_grads(_cube_with_wrong_second_derivative(np, ext), modes=["rev"], order=1)(1.5)


def wrong_vjp_via_check_vjp(ag, np, ext, tu):
    return tu.check_vjp(_wrong_square(np, ext), onp.array([0.5, 1.5, -1.0]))


def wrong_jvp_via_check_jvp(ag, np, ext, tu):
    return tu.check_jvp(_wrong_square(np, ext), 1.25)


def wrong_in_second_argument(ag, np, ext, tu):
    sq = _wrong_square(np, ext)
    return tu.check_grads(lambda a, b: a * sq(b), argnum=1, modes=["rev"])(2.0, 0.7)


def correct_functions(ag, np, ext, tu):
    x = onp.array([0.3, -0.8, 1.1])
    tu.check_grads(lambda x: np.sin(x) * np.exp(x))(x)
    tu.check_grads(lambda a, b: np.sum(np.tanh(a) * b), (0, 1), order=3)(x, x[::-1].copy())
    tu.check_grads(lambda d: np.sum(d["a"] * d["b"][0]) + d["b"][1], modes=["rev"])({"a": x, "b": [x**2, 0.5]})
    tu.check_grads(lambda l: l[0] * np.sum(l[1] ** 2))([0.7, x])
    return "ok"


def equivalent_mismatch_space(ag, np, ext, tu):
    return tu.check_equivalent(onp.ones(2), onp.ones(3))


def equivalent_mismatch_value(ag, np, ext, tu):
    return tu.check_equivalent(onp.array([1.0, 2.0]), onp.array([1.0, 2.5]))


def equivalent_ok(ag, np, ext, tu):
    return tu.check_equivalent((onp.ones(2), 3.0), (onp.ones(2), 3.0 + 1e-9))


def numerical_jvp(ag, np, ext, tu):
    jvp = tu.make_numerical_jvp(lambda x: np.sin(x) * x, onp.array([0.2, 1.0]))
    return onp.round(jvp(onp.array([1.0, -2.0])), 6).tolist()


def scalar_close(ag, np, ext, tu):
    return [
        tu.scalar_close(1.0, 1.0 + 1e-9),
        tu.scalar_close(1.0, 1.001),
        tu.scalar_close(0.0, 5e-7),
        tu.scalar_close(1e8, 1e8 + 1.0),
    ]


def combo(ag, np, ext, tu):
    calls = []

    def f(x, y, scale=1.0):
        calls.append((onp.shape(x), onp.shape(y), scale))
        return np.sin(x) * np.cos(y) * scale

    result = tu.combo_check(f, [0, 1], modes=["rev"], order=1)([0.5, onp.ones(2)], [0.3], scale=[1.0, 2.0])
    return result, sorted(set(calls))


def combo_failure(ag, np, ext, tu):
    sq = _wrong_square(np, ext)
    return tu.combo_check(lambda x, y: sq(x) * y, [0], modes=["rev"])([0.5, 1.5], [2.0])


SCENARIOS = {
    wrong_vjp: "AssertionError: Derivative (VJP) check of wrong_square failed with arg [1. 2.]:\nanalytic: ",
    wrong_jvp: "AssertionError: Value mismatch:\nx: ",
    wrong_both_default_modes: "AssertionError: Value mismatch:\nx: ",
    wrong_second_order: "AssertionError: Derivative (VJP) check of vjp_cube failed with arg (1.5, ",
    wrong_second_order_but_order_1: "returned None",
    wrong_vjp_via_check_vjp: "AssertionError: Derivative (VJP) check of wrong_square failed",
    wrong_jvp_via_check_jvp: "AssertionError: Value mismatch:",
    wrong_in_second_argument: "AssertionError: Derivative (VJP) check of <lambda> failed with arg 0.7",
    correct_functions: "returned 'ok'",
    equivalent_mismatch_space: "AssertionError: VSpace mismatch:\nx: ",
    equivalent_mismatch_value: "AssertionError: Value mismatch:\nx: [1. 2.]\ny: [1.  2.5]",
    equivalent_ok: "returned None",
    numerical_jvp: "returned [",
    scalar_close: "returned [True, False, True, True]",
    combo: "returned (None, [((), (), 1.0), ((), (), 2.0), ((2,), (), 1.0), ((2,), (), 2.0)])",
    combo_failure: "AssertionError: Derivative (VJP) check of <lambda> failed with arg (0.5,)",
}


@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=lambda s: s.__name__)
def test_same_outcome_as_autograd(scenario):
    libs = _libs()
    outcomes = [_outcome(scenario, lib) for lib in libs]
    assert outcomes[0].startswith(SCENARIOS[scenario]), outcomes[0]
    if scenario is numerical_jvp:  # the central difference of sin(x) x along (1, -2)
        x, v = onp.array([0.2, 1.0]), onp.array([1.0, -2.0])
        assert outcomes[0] == "returned {!r}".format(onp.round((onp.cos(x) * x + onp.sin(x)) * v, 6).tolist())
    if len(outcomes) == 2:
        assert outcomes[0] == outcomes[1]


def test_failure_message_reports_analytic_and_numeric():
    fastgrad = _lib("fastgrad")
    text = _outcome(wrong_vjp, fastgrad)
    analytic = float(text.split("analytic: ")[1].split("\n")[0])
    numeric = float(text.split("numeric:  ")[1].split("\n")[0])
    assert analytic == pytest.approx(1.5 * numeric, rel=1e-6)  # 3x instead of 2x


def test_constants_and_signatures():
    fastgrad_tu = _lib("fastgrad")[3]
    assert (fastgrad_tu.TOL, fastgrad_tu.RTOL, fastgrad_tu.EPS) == (1e-6, 1e-6, 1e-6)
    for lib in _libs()[1:]:
        tu = lib[3]
        assert (tu.TOL, tu.RTOL, tu.EPS) == (fastgrad_tu.TOL, fastgrad_tu.RTOL, fastgrad_tu.EPS)
        for name in NAMES:
            assert inspect.signature(getattr(fastgrad_tu, name)) == inspect.signature(getattr(tu, name)), name


def test_check_grads_rejects_unknown_mode():
    tu = _lib("fastgrad")[3]
    with pytest.raises(AssertionError):
        tu.check_grads(lambda x: x * 2.0, modes=["sideways"])(1.0)


def test_messages_are_not_rewritten_under_pytest():
    tu = _lib("fastgrad")[3]
    with pytest.raises(AssertionError) as info:
        tu.check_equivalent(onp.ones(2), 2 * onp.ones(2))
    assert str(info.value) == "Value mismatch:\nx: [1. 1.]\ny: [2. 2.]"
