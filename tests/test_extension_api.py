"""The extension API from user code (SPEC §3): user primitives and rules, a user value
type with its own Box and VSpace, a Node subclass passed to ``trace``, the live
``primitive_vjps`` registry, and the exact export list of ``extend``.

Everything user-defined here is defined in this file, the way a user would.
"""

import copy
import math
import pickle
import warnings

import numpy as onp
import pytest

from conftest import import_target
from gradcheck import assert_tree_allclose, check_grads

ag = import_target()
anp = import_target("numpy")
extend = import_target("extend")
core = import_target("core")
tracer = import_target("tracer")

EXTEND_NAMES = {
    "Box",
    "JVPNode",
    "SparseObject",
    "VJPNode",
    "VSpace",
    "def_linear",
    "defjvp",
    "defjvp_argnum",
    "defjvp_argnums",
    "defvjp",
    "defvjp_argnum",
    "defvjp_argnums",
    "notrace_primitive",
    "primitive",
    "register_notrace",
    "vspace",
}


def test_extend_exports_exactly_the_16_names():
    public = {n for n in dir(extend) if not n.startswith("_")}
    assert public == EXTEND_NAMES
    if hasattr(extend, "__all__"):
        assert set(extend.__all__) == EXTEND_NAMES


# ---------------------------------------------------------------------------
# user primitives and rules


@extend.primitive
def softplus(x):
    """log(1 + exp(x)), computed stably."""
    return onp.logaddexp(0.0, x)


# the rule uses traced functions, so derivatives of any order work
extend.defvjp(softplus, lambda ans, x: lambda g: g * (0.5 * (anp.tanh(x / 2.0) + 1.0)))


@extend.primitive
def weighted(x, y, w=1.0):
    return w * x * y**2


extend.defvjp(
    weighted, lambda ans, x, y, w=1.0: lambda g: g * w * y**2, lambda ans, x, y, w=1.0: lambda g: g * 2.0 * w * x * y
)


@extend.primitive
def first_only(x, y):
    return x * onp.floor(y)


extend.defvjp(first_only, lambda ans, x, y: lambda g: g * onp.floor(y), None)


@extend.primitive
def second_only(x, y):
    return onp.floor(x) * onp.sin(y)


extend.defvjp(second_only, lambda ans, x, y: lambda g: g * onp.floor(x) * anp.cos(y), argnums=[1])


@extend.primitive
def poly_argnum(x, y):
    return x**2 * y


def _poly_argnum_maker(argnum, ans, args, kwargs):
    x, y = args
    if argnum == 0:
        return lambda g: g * 2.0 * x * y
    return lambda g: g * x**2


extend.defvjp_argnum(poly_argnum, _poly_argnum_maker)


@extend.primitive
def poly_argnums(x, y):
    return x * y**3


def _poly_argnums_maker(argnums, ans, args, kwargs):
    x, y = args
    parts = {0: lambda g: g * y**3, 1: lambda g: g * 3.0 * x * y**2}
    return lambda g: tuple(parts[i](g) for i in argnums)


extend.defvjp_argnums(poly_argnums, _poly_argnums_maker)

_RS = onp.random.RandomState(11)
XS = _RS.uniform(-1.5, 1.5, size=(2, 3))
YS = _RS.uniform(0.5, 1.5, size=(2, 3))


def test_user_primitive_attributes():
    assert softplus.fun(0.0) == onp.log(2.0)
    assert softplus.__name__ == "softplus"
    assert softplus.__doc__ == "log(1 + exp(x)), computed stably."


def test_user_primitive_value_and_grad():
    assert_tree_allclose(softplus(XS), onp.log1p(onp.exp(XS)), rtol=1e-14)
    g = ag.elementwise_grad(softplus)(XS)
    assert_tree_allclose(g, 1.0 / (1.0 + onp.exp(-XS)), rtol=1e-13)


def test_user_primitive_second_order():
    check_grads(softplus, XS, order=2, module=ag)
    d2 = ag.elementwise_grad(ag.elementwise_grad(softplus))(XS)
    s = 1.0 / (1.0 + onp.exp(-XS))
    assert_tree_allclose(d2, s * (1 - s), rtol=1e-12)


def test_a_primitive_bound_as_a_method_gets_the_instance_first():
    @extend.primitive
    def scale(self, x):
        return self.k * x

    extend.defvjp(scale, None, lambda ans, self, x: lambda g: g * self.k)

    class Scaler:
        k = 3.0
        apply = scale

    s = Scaler()
    assert Scaler.apply is scale
    bound = s.apply
    assert bound.__self__ is s and bound.__func__ is scale and bound(2.0) == 6.0
    assert s.apply(2.0) == 6.0
    assert ag.grad(lambda x: s.apply(x) * x)(2.0) == 12.0
    assert ag.grad(lambda x: s.apply(s.apply(x)))(2.0) == 9.0


def test_defvjp_two_arguments_with_keyword():
    check_grads(lambda x, y: weighted(x, y, w=2.5), XS, YS, order=2, module=ag)
    f = lambda x, y: anp.sum(weighted(x, y, w=2.5))
    gx, gy = ag.grad(f, 0)(XS, YS), ag.grad(f, 1)(XS, YS)
    assert_tree_allclose(gx, 2.5 * YS**2, rtol=1e-14)
    assert_tree_allclose(gy, 5.0 * XS * YS, rtol=1e-14)


def test_defvjp_none_slot_is_zero_gradient():
    g = ag.grad(lambda x, y: anp.sum(first_only(x, y)), 1)(XS, YS * 3.0)
    assert onp.shape(g) == YS.shape and not onp.any(g)
    gx = ag.grad(lambda x, y: anp.sum(first_only(x, y)), 0)(XS, YS * 3.0)
    assert_tree_allclose(gx, onp.floor(YS * 3.0), rtol=0)


def test_defvjp_argnums_keyword():
    g = ag.grad(lambda y: anp.sum(second_only(XS * 3.0, y)))(YS)
    assert_tree_allclose(g, onp.floor(XS * 3.0) * onp.cos(YS), rtol=1e-14)


def test_defvjp_argnum():
    check_grads(poly_argnum, XS, YS, order=2, module=ag)
    f = lambda x, y: anp.sum(poly_argnum(x, y))
    gx, gy = ag.grad(f, 0)(XS, YS), ag.grad(f, 1)(XS, YS)
    assert_tree_allclose((gx, gy), (2 * XS * YS, XS**2), rtol=1e-14)


def test_defvjp_argnums():
    check_grads(poly_argnums, XS, YS, order=2, module=ag)
    f = lambda x, y: anp.sum(poly_argnums(x, y))
    gx, gy = ag.grad(f, 0)(XS, YS), ag.grad(f, 1)(XS, YS)
    assert_tree_allclose((gx, gy), (YS**3, 3 * XS * YS**2), rtol=1e-14)
    # both arguments are the same traced value: the contributions add up
    g = ag.grad(lambda x: anp.sum(poly_argnums(x, x)))(XS)
    assert_tree_allclose(g, 4 * XS**3, rtol=1e-14)


def test_defvjp_argnums_both_arguments_at_once():
    f = lambda x, y: anp.sum(poly_argnums(x, y))
    gx, gy = ag.grad(f, (0, 1))(XS, YS)
    assert_tree_allclose((gx, gy), (YS**3, 3 * XS * YS**2), rtol=1e-14)


def test_notrace_primitive_sees_plain_values():
    seen = []

    @extend.notrace_primitive
    def peek(x):
        seen.append(type(x))
        return x > 0

    def f(x):
        mask = peek(x)
        return anp.sum(anp.where(mask, x, 0.0))

    g = ag.grad(f)(XS)
    assert seen == [onp.ndarray]
    assert_tree_allclose(g, (XS > 0).astype(float), rtol=0)


def test_checker_catches_wrong_first_order_rule():
    @extend.primitive
    def bad_sin(x):
        return onp.sin(x)

    extend.defvjp(bad_sin, lambda ans, x: lambda g: g * anp.cos(x) * 1.001)
    with pytest.raises(AssertionError, match="VJP check of bad_sin"):
        check_grads(bad_sin, XS, order=1, module=ag)


def test_checker_catches_wrong_second_order_rule():
    @extend.primitive
    def const_rule_sin(x):
        return onp.sin(x)

    # right first derivative, but computed outside the trace: second order is wrong
    extend.defvjp(const_rule_sin, lambda ans, x: lambda g: g * onp.cos(tracer.getval(x)))
    check_grads(const_rule_sin, XS, order=1, module=ag)
    with pytest.raises(AssertionError, match="vjp_const_rule_sin"):
        check_grads(const_rule_sin, XS, order=2, module=ag)


# ---------------------------------------------------------------------------
# the live registry


def test_popping_and_restoring_a_rule_takes_effect_at_next_call():
    @extend.primitive
    def cube(x):
        return x**3

    extend.defvjp(cube, lambda ans, x: lambda g: g * 3.0 * x**2)
    assert_tree_allclose(ag.grad(cube)(2.0), 12.0, rtol=0)
    saved = core.primitive_vjps.pop(cube)
    try:
        with pytest.raises(NotImplementedError, match="cube"):
            ag.grad(cube)(2.0)
    finally:
        core.primitive_vjps[cube] = saved
    assert_tree_allclose(ag.grad(cube)(2.0), 12.0, rtol=0)


def test_popping_a_builtin_rule():
    saved = core.primitive_vjps.pop(anp.sin)
    try:
        with pytest.raises(NotImplementedError, match="sin"):
            ag.grad(anp.sin)(0.5)
    finally:
        core.primitive_vjps[anp.sin] = saved
    assert_tree_allclose(ag.grad(anp.sin)(0.5), onp.cos(0.5), rtol=1e-15)


def test_rule_defined_after_first_use():
    @extend.primitive
    def late(x):
        return 2.0 * x

    with pytest.raises(NotImplementedError, match="late"):
        ag.grad(late)(1.0)
    extend.defvjp(late, lambda ans, x: lambda g: 2.0 * g)
    assert_tree_allclose(ag.grad(late)(1.0), 2.0, rtol=0)


def _replace_rule(registry, fun, rule, how):
    """Make ``rule`` fun's reverse rule by one of the ways a dict can be changed."""
    if how == "setitem":
        registry[fun] = rule
    elif how == "update":
        registry.update({fun: rule})
    elif how == "update-pairs":
        registry.update([(fun, rule)])
    elif how == "ior":
        registry |= {fun: rule}
    elif how == "setdefault":
        del registry[fun]
        assert registry.setdefault(fun, rule) is rule
    elif how == "pop":
        registry.pop(fun)
        registry[fun] = rule
    elif how == "popitem":
        registry[fun] = registry.pop(fun)  # fun's entry last, so popitem takes it
        assert registry.popitem()[0] is fun
        registry[fun] = rule
    elif how == "init":
        registry.__init__({fun: rule})
    elif how == "clear":
        saved = dict(registry)
        registry.clear()
        try:
            with pytest.raises(NotImplementedError, match="doubled"):
                ag.grad(fun)(1.0)
        finally:
            registry.update(saved)
        registry[fun] = rule


CHANGES = ["setitem", "update", "update-pairs", "ior", "setdefault", "pop", "popitem", "init", "clear"]


@pytest.mark.parametrize("how", CHANGES)
def test_every_change_to_the_registry_applies_at_the_next_record(how):
    # a primitive that has recorded nodes before must not keep the rule it had then
    @extend.primitive
    def doubled(x):
        return 2.0 * x

    extend.defvjp(doubled, lambda ans, x: lambda g: 2.0 * g)
    grad = ag.grad(lambda x: doubled(x) * x)
    assert grad(3.0) == 12.0
    wrong = core.primitive_vjps[doubled]
    extend.defvjp(doubled, lambda ans, x: lambda g: 5.0 * g)  # a different (wrong) rule, to see which applies
    five = core.primitive_vjps[doubled]
    core.primitive_vjps[doubled] = wrong
    assert grad(3.0) == 12.0
    _replace_rule(core.primitive_vjps, doubled, five, how)
    assert grad(3.0) == 5.0 * 3.0 + 6.0
    del core.primitive_vjps[doubled]
    with pytest.raises(NotImplementedError, match="doubled"):
        grad(3.0)


def test_a_copy_of_the_registry_has_its_entries_and_is_apart_from_it():
    # (saving the registry to restore it later is how some code swaps rules for a while)
    registry = core.primitive_vjps
    saved = copy.copy(registry)
    assert isinstance(saved, dict)
    assert dict(saved) == dict(registry)
    saved[object()] = None
    assert len(saved) == len(registry) + 1
    table = type(registry)({"a": 1, "b": (2, 3)})
    for again in (copy.copy(table), copy.deepcopy(table), pickle.loads(pickle.dumps(table))):
        assert type(again) is type(table)
        assert dict(again) == {"a": 1, "b": (2, 3)}


# ---------------------------------------------------------------------------
# a user value type with its own Box and VSpace


class Scalar:
    """A tiny user value type holding one float."""

    def __init__(self, v):
        self.v = float(v)

    def __repr__(self):
        return f"Scalar({self.v})"


class ScalarVSpace(extend.VSpace):
    def __init__(self, value):
        self.size = 1
        self.shape = ()

    def zeros(self):
        return Scalar(0.0)

    def ones(self):
        return Scalar(1.0)

    def standard_basis(self):
        return [Scalar(1.0)]

    def randn(self):
        return Scalar(onp.random.randn())

    def _add(self, x, y):
        return Scalar(x.v + y.v)

    def _mut_add(self, x, y):
        x.v += y.v
        return x

    def _scalar_mul(self, x, a):
        return Scalar(x.v * a)

    def _inner_prod(self, x, y):
        return x.v * y.v

    def _covector(self, x):
        return x


@extend.primitive
def s_add(a, b):
    return Scalar(a.v + b.v)


@extend.primitive
def s_mul(a, b):
    return Scalar(a.v * b.v)


@extend.primitive
def s_sin(a):
    return Scalar(math.sin(a.v))


@extend.primitive
def s_cos(a):
    return Scalar(math.cos(a.v))


@extend.primitive
def s_neg(a):
    return Scalar(-a.v)


@extend.primitive
def to_float(a):
    return a.v


@extend.primitive
def from_float(f):
    return Scalar(f)


extend.defvjp(s_add, lambda ans, a, b: lambda g: g, lambda ans, a, b: lambda g: g)
extend.defvjp(s_mul, lambda ans, a, b: lambda g: s_mul(g, b), lambda ans, a, b: lambda g: s_mul(g, a))
extend.defvjp(s_sin, lambda ans, a: lambda g: s_mul(g, s_cos(a)))
extend.defvjp(s_cos, lambda ans, a: lambda g: s_neg(s_mul(g, s_sin(a))))
extend.defvjp(s_neg, lambda ans, a: lambda g: s_neg(g))
extend.defvjp(to_float, lambda ans, a: lambda g: from_float(g))
extend.defvjp(from_float, lambda ans, f: lambda g: to_float(g))


class ScalarBox(extend.Box):
    __slots__ = ()

    def __add__(self, other):
        return s_add(self, other)

    def __mul__(self, other):
        return s_mul(self, other)

    __radd__ = __add__
    __rmul__ = __mul__


ScalarVSpace.register(Scalar)
ScalarBox.register(Scalar)


def s_fun(s):
    """to_float(s * s + sin(s) * s)"""
    return to_float(s * s + s_sin(s) * s)


def _plain(s):
    return to_float.fun(s_add.fun(s_mul.fun(s, s), s_mul.fun(s_sin.fun(s), s)))


def test_user_vspace_is_found():
    vs = extend.vspace(Scalar(2.0))
    assert isinstance(vs, ScalarVSpace)
    assert vs.size == 1


def test_user_box_is_used_while_tracing():
    seen = []

    def f(s):
        seen.append(type(s))
        return to_float(s * s)

    ag.grad(f)(Scalar(1.5))
    assert seen == [ScalarBox]


def test_user_type_gradient():
    v = 0.7
    g = ag.grad(s_fun)(Scalar(v))
    assert isinstance(g, Scalar)
    expected = 2 * v + math.cos(v) * v + math.sin(v)
    assert abs(g.v - expected) < 1e-14
    eps = 1e-6
    numeric = (_plain(Scalar(v + eps)) - _plain(Scalar(v - eps))) / (2 * eps)
    assert abs(g.v - numeric) < 1e-7


def test_user_type_accumulation_and_value_and_grad():
    # s is used many times: cotangents of the user type are summed through the VSpace
    def f(s):
        total = s
        for _ in range(5):
            total = total + s * s
        return to_float(total)

    val, g = ag.value_and_grad(f)(Scalar(1.5))
    assert abs(val - (1.5 + 5 * 2.25)) < 1e-14
    assert abs(g.v - (1 + 5 * 3.0)) < 1e-14


def test_user_type_second_order():
    v = 0.4
    d2 = ag.grad(lambda s: to_float(ag.grad(s_fun)(s)))(Scalar(v))
    expected = 2 - math.sin(v) * v + 2 * math.cos(v)
    assert isinstance(d2, Scalar)
    assert abs(d2.v - expected) < 1e-13


def test_user_type_output_and_make_vjp():
    vjp, ans = ag.make_vjp(lambda s: s_sin(s) * s)(Scalar(0.3))
    assert isinstance(ans, Scalar) and abs(ans.v - math.sin(0.3) * 0.3) < 1e-15
    g = vjp(Scalar(2.0))
    assert abs(g.v - 2.0 * (math.cos(0.3) * 0.3 + math.sin(0.3))) < 1e-14


def test_user_type_independent_output_gives_zeros():
    with pytest.warns(UserWarning, match="Output seems independent of input."):
        g = ag.grad(lambda s: 3.0)(Scalar(1.0))
    assert isinstance(g, Scalar) and g.v == 0.0


# ---------------------------------------------------------------------------
# a Node subclass passed to trace (like autograd's print_trace example)


class RecordingNode(tracer.Node):
    """Records every primitive applied during a trace: (name, parent argnums, value)."""

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        self.log = parents[0].log
        self.label = f"t{len(self.log)}"
        self.parent_labels = [p.label for p in parents]
        self.log.append((fun.__name__, tuple(parent_argnums), self.parent_labels, value))

    def initialize_root(self, log):
        self.log = log
        self.label = "x"


def test_node_subclass_passed_to_trace():
    log = []
    start = RecordingNode.new_root(log)
    assert isinstance(start, RecordingNode) and start.log is log

    def f(x):
        y = anp.sin(x)
        return anp.multiply(y, 2.0) + x

    x = onp.array([0.1, 0.2])
    end_value, end_node = tracer.trace(start, f, x)
    assert_tree_allclose(end_value, 2 * onp.sin(x) + x, rtol=1e-15)
    assert isinstance(end_node, RecordingNode)
    names = [entry[0] for entry in log]
    assert names == ["sin", "multiply", "add"]
    assert log[0][1] == (0,) and log[0][2] == ["x"]
    assert log[1][1] == (0,) and log[1][2] == ["t0"]
    assert log[2][1] == (0, 1) and log[2][2] == ["t1", "x"]
    assert_tree_allclose(log[0][3], onp.sin(x), rtol=0)
    assert end_node.label == "t2"


def test_node_subclass_trace_of_constant_function():
    log = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Output seems independent of input." is allowed
        end_value, end_node = tracer.trace(RecordingNode.new_root(log), lambda x: 3.0, 1.0)
    assert end_value == 3.0 and end_node is None and log == []
