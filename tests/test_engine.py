"""The engine contract, checked on both engines: the compiled ``_core`` and the pure ``_core_py``,
each with both of its backward passes: the default one, whose bookkeeping is in the nodes'
fields (``backward_pass``), and the fallback with dicts (``backward_pass_with_dicts``, what
``backward_pass`` runs for user node types and for a second pass over a graph in use).

These tests talk to each engine module directly (not through ``fastgrad._engine``), so both
run in one process whichever engine fastgrad itself selected.  Values are a private float
subclass so that the boxes registered here never collide with ``fastgrad.numpy``'s.
"""

import gc
import sys
import threading
import weakref

import numpy as onp
import pytest

import fastgrad
import fastgrad.core as core
from fastgrad import _core_py

try:
    from fastgrad import _core
except ImportError:  # the compiled engine is optional unless FASTGRAD_REQUIRE_EXTENSIONS=1
    _core = None

ENGINES = [
    pytest.param(_core_py, id="pure"),
    pytest.param(_core, id="compiled", marks=pytest.mark.skipif(_core is None, reason="compiled engine not built")),
]
PASSES = [pytest.param("backward_pass", id="nodes"), pytest.param("backward_pass_with_dicts", id="dicts")]


class Val(float):
    """A value type private to these tests."""


class ValSpace(core.VSpace):
    """Vector space of Val: needed when cotangents are boxes (higher order)."""

    def __init__(self, value):
        self.size, self.shape = 1, ()

    def zeros(self):
        return Val(0.0)

    def ones(self):
        return Val(1.0)

    def _add(self, x, y):
        return Val(x + y)

    def _mut_add(self, x, y):
        return Val(x + y)


ValSpace.register(Val)


class Kit:
    """Box type and primitives bound to one engine."""

    def __init__(self, eng, pass_name="backward_pass"):
        self.eng = eng
        self.backward_pass = getattr(eng, pass_name)
        # Sums of boxes (higher order) go through the engine's generic add: trace them with
        # this engine's own add, as core does with VSpace.add for the selected engine.
        self.previous = eng.bind(generic_add=lambda prev, owned, g: (g if prev is None else self.add(prev, g), False))

        class ValBox(eng.Box):
            __slots__ = ()

        ValBox.register(Val)
        ValSpace.register(ValBox)  # core.vspace knows only the selected engine's boxes
        self.ValBox = ValBox
        self.mul = eng.Primitive(lambda a, b: Val(a * b))
        self.add = eng.Primitive(lambda a, b: Val(a + b))
        self.sin = eng.Primitive(lambda x: Val(onp.sin(x)))
        self.cos = eng.Primitive(lambda x: Val(onp.cos(x)))
        vjps = eng.primitive_vjps
        vjps[self.mul] = eng.VJPRule(
            self.mul,
            {
                0: (eng.DIRECT, lambda g, ans, a, b: self.mul(g, b)),
                1: (eng.DIRECT, lambda g, ans, a, b: self.mul(g, a)),
            },
        )
        vjps[self.add] = eng.VJPRule(
            self.add, {0: (eng.DIRECT, lambda g, ans, a, b: g), 1: (eng.DIRECT, lambda g, ans, a, b: g)}
        )
        # sin uses an autograd-style maker, cos the direct form: both kinds must work
        vjps[self.sin] = eng.VJPRule(self.sin, {0: (eng.MAKER, lambda ans, x: lambda g: self.mul(g, self.cos(x)))})
        vjps[self.cos] = eng.VJPRule(
            self.cos, {0: (eng.DIRECT, lambda g, ans, x: self.mul(g, self.mul(Val(-1.0), self.sin(x))))}
        )

    def grad(self, fun, x):
        end_value, end_node = self.eng.trace(self.eng.VJPNode.new_root(), fun, Val(x))
        return self.backward_pass(Val(1.0), end_node)

    def close(self):
        self.eng.bind(**self.previous)  # give the engine back to fastgrad.core


@pytest.fixture(params=ENGINES)
def engine(request):
    return request.param


@pytest.fixture(params=PASSES)
def kit(engine, request):
    made = Kit(engine, request.param)
    yield made
    made.close()


def test_the_switch_reports_the_engine_in_use():
    from fastgrad import _engine

    assert fastgrad.COMPILED == (_engine.engine is _core) and _core is not None or not fastgrad.COMPILED


def test_both_engines_define_the_same_names():
    if _core is None:
        pytest.skip("compiled engine not built")
    public = {
        n for n in dir(_core_py) if not n.startswith("_") and not isinstance(getattr(_core_py, n), type(pytest))
    }  # modules it imports
    assert public - {"ndarray", "float64"} <= set(dir(_core))


def test_first_and_second_derivative(kit):
    f = lambda x: kit.mul(kit.sin(x), x)
    x = 0.7
    assert kit.grad(f, x) == pytest.approx(onp.cos(x) * x + onp.sin(x), rel=1e-14)

    def df(x):
        end_value, end_node = kit.eng.trace(kit.eng.VJPNode.new_root(), f, x)
        return kit.backward_pass(Val(1.0), end_node)

    assert float(kit.grad(df, x)) == pytest.approx(-onp.sin(x) * x + 2 * onp.cos(x), rel=1e-14)


def test_fan_out_and_fan_in_accumulate(kit):
    def f(x):
        y = kit.mul(x, x)  # x used twice by one primitive
        z = kit.add(y, x)  # and again by another
        return kit.add(z, kit.mul(z, Val(3.0)))

    x = 1.3
    assert kit.grad(f, x) == pytest.approx(4 * (2 * x + 1), rel=1e-14)


def _total_of_many(eng, n):
    """A primitive of ``n`` arguments (their sum): one node with ``n`` parents."""
    total = eng.Primitive(lambda *xs: Val(sum(xs)))
    eng.primitive_vjps[total] = eng.VJPRule(total, {i: (eng.DIRECT, lambda g, ans, *xs: g) for i in range(n)})
    return total


def test_a_node_with_hundreds_of_parents(kit):
    # more nodes wait on the pass's stacks at once than the compiled engine keeps in place (64)
    n = 300
    total = _total_of_many(kit.eng, n)
    scales = [Val(0.01 * (i + 1)) for i in range(n)]
    x = 0.4
    expected = sum(float(c) * onp.cos(float(c) * x) for c in scales)
    assert kit.grad(lambda x: total(*[kit.sin(kit.mul(x, c)) for c in scales]), x) == pytest.approx(expected, rel=1e-12)


def test_a_rule_that_fails_leaves_no_node_held_by_the_pass(kit):
    # the pass fails with 299 nodes waiting on its stack: they must be freed, not leaked
    eng, n = kit.eng, 300
    total = _total_of_many(eng, n)
    fails = eng.Primitive(lambda x: Val(x))

    def failing_rule(g, ans, x):
        raise ValueError("this rule fails")

    eng.primitive_vjps[fails] = eng.VJPRule(fails, {0: (eng.DIRECT, failing_rule)})
    end_value, end_node = eng.trace(
        eng.VJPNode.new_root(), lambda x: total(*[fails(kit.mul(x, Val(i + 1.0))) for i in range(n)]), Val(0.5)
    )
    waiting = [weakref.ref(p) for p in end_node.parents]
    with pytest.raises(ValueError, match="this rule fails"):
        kit.backward_pass(Val(1.0), end_node, True)
    del end_value, end_node
    gc.collect()
    assert [r for r in waiting if r() is not None] == []


def test_array_cotangents_are_never_mutated_unless_owned(kit):
    eng = kit.eng
    seed = onp.ones(3)
    shared = onp.full(3, 2.0)
    ident = eng.Primitive(lambda x: Val(x))
    eng.primitive_vjps[ident] = eng.VJPRule(ident, {0: (eng.DIRECT, lambda g, ans, x: shared)})

    def f(x):
        a, b, c = ident(x), ident(x), ident(x)  # three contributions of the same borrowed array
        return kit.add(kit.add(a, b), c)

    end_value, end_node = eng.trace(eng.VJPNode.new_root(), f, Val(1.0))
    result = kit.backward_pass(seed, end_node)
    onp.testing.assert_array_equal(result, onp.full(3, 6.0))
    onp.testing.assert_array_equal(shared, onp.full(3, 2.0))
    onp.testing.assert_array_equal(seed, onp.ones(3))
    assert result is not shared


def test_only_arrays_nobody_else_sees_are_summed_into(kit):
    # a rule's fresh result (one reference, own data) may become the running sum; a view of
    # someone's array, or an array a rule also keeps, must stay as it is
    eng = kit.eng
    shared = onp.full(3, 2.0)
    kept = []
    view = eng.Primitive(lambda x: Val(x))
    eng.primitive_vjps[view] = eng.VJPRule(view, {0: (eng.DIRECT, lambda g, ans, x: shared[:])})
    keep = eng.Primitive(lambda x: Val(x))

    def keeping_rule(g, ans, x):
        kept.append(onp.full(3, 1.0))
        return kept[-1]

    eng.primitive_vjps[keep] = eng.VJPRule(keep, {0: (eng.DIRECT, keeping_rule)})
    fresh = eng.Primitive(lambda x: Val(x))
    eng.primitive_vjps[fresh] = eng.VJPRule(fresh, {0: (eng.DIRECT, lambda g, ans, x: onp.full(3, 4.0))})

    def f(x):
        return kit.add(kit.add(kit.add(view(x), keep(x)), fresh(x)), kit.add(view(x), keep(x)))

    end_value, end_node = eng.trace(eng.VJPNode.new_root(), f, Val(1.0))
    result = kit.backward_pass(onp.ones(3), end_node)
    onp.testing.assert_array_equal(result, onp.full(3, 2.0 + 1.0 + 4.0 + 2.0 + 1.0))
    onp.testing.assert_array_equal(shared, onp.full(3, 2.0))
    for a in kept:
        onp.testing.assert_array_equal(a, onp.full(3, 1.0))


def test_symbolic_zero_and_unreached_root(kit):
    eng = kit.eng
    stop = eng.Primitive(lambda x: Val(x))
    eng.primitive_vjps[stop] = eng.VJPRule(stop, {0: (eng.ZERO, None)})
    end_value, end_node = eng.trace(eng.VJPNode.new_root(), lambda x: stop(x), Val(2.0))
    assert kit.backward_pass(Val(1.0), end_node) is None
    half = eng.Primitive(lambda x: Val(x / 2))
    eng.primitive_vjps[half] = eng.VJPRule(half, {0: (eng.DIRECT, lambda g, ans, x: None)})
    end_value, end_node = eng.trace(eng.VJPNode.new_root(), lambda x: kit.add(half(x), x), Val(2.0))
    assert kit.backward_pass(Val(1.0), end_node) == 1.0


def test_missing_rule_names_primitive_and_argnum(kit):
    eng = kit.eng

    def two_args(a, b):
        return Val(a - b)

    prim = eng.Primitive(two_args)
    eng.primitive_vjps[prim] = eng.VJPRule(prim, {0: (eng.DIRECT, lambda g, ans, a, b: g)})
    end_value, end_node = eng.trace(eng.VJPNode.new_root(), lambda x: prim(Val(1.0), x), Val(2.0))
    with pytest.raises(NotImplementedError, match=r"VJP of two_args wrt argnums \(1,\) not defined"):
        kit.backward_pass(Val(1.0), end_node)
    bare = eng.Primitive(lambda x: Val(x))
    bare.__name__ = "bare"
    end_value, end_node = eng.trace(eng.VJPNode.new_root(), lambda x: bare(x), Val(2.0))
    with pytest.raises(NotImplementedError, match=r"VJP of bare wrt argnums \(0,\) not defined"):
        kit.backward_pass(Val(1.0), end_node)


def test_registry_is_read_when_a_node_is_recorded(kit):
    eng = kit.eng
    saved = eng.primitive_vjps.pop(kit.sin)
    try:
        end_value, end_node = eng.trace(eng.VJPNode.new_root(), kit.sin, Val(0.3))
        with pytest.raises(NotImplementedError):
            kit.backward_pass(Val(1.0), end_node)
    finally:
        eng.primitive_vjps[kit.sin] = saved
    assert kit.grad(kit.sin, 0.3) == pytest.approx(onp.cos(0.3))


def test_user_style_vjp_argnums_rule(kit):
    eng = kit.eng
    prim = eng.Primitive(lambda a, b: Val(a * b))
    eng.primitive_vjps[prim] = lambda argnums, ans, args, kwargs: lambda g: [g * args[1 - i] for i in argnums]
    assert kit.grad(lambda x: prim(x, x), 3.0) == pytest.approx(6.0)


def test_keyword_arguments_are_passed_and_not_traced(kit):
    eng = kit.eng
    scale = eng.Primitive(lambda x, factor=1.0: Val(x * factor))
    eng.primitive_vjps[scale] = eng.VJPRule(scale, {0: (eng.DIRECT, lambda g, ans, x, factor=1.0: g * factor)})
    assert kit.grad(lambda x: scale(x, factor=Val(4.0)), 2.0) == pytest.approx(4.0)


def test_long_chain_needs_no_recursion(kit):
    def chain(x):
        for _ in range(200_000):
            x = kit.mul(x, Val(1.0000001))
        return x

    assert kit.grad(chain, 0.5) == pytest.approx(1.0000001**200_000, rel=1e-9)
    order = kit.eng.toposort(kit.eng.trace(kit.eng.VJPNode.new_root(), chain, Val(0.5))[1])
    assert len(order) == 200_001


def test_consume_releases_nodes_and_graph_is_freed(kit):
    eng = kit.eng
    refs = []

    def f(x):
        y = kit.mul(kit.sin(x), x)
        refs.append(weakref.ref(y._node))
        return y

    end_value, end_node = eng.trace(eng.VJPNode.new_root(), f, Val(0.4))
    kit.backward_pass(Val(1.0), end_node, True)
    assert end_node.parents == () or end_node.parents is None
    del end_node
    assert refs[0]() is None


def test_primitive_behaves_like_a_function(kit):
    def documented(x, y=2.0):
        """Docs of documented."""
        return x * y

    documented.extra = 42
    prim = kit.eng.Primitive(documented)
    assert prim.__name__ == "documented" and prim.__doc__ == "Docs of documented."
    assert prim.__wrapped__ is documented and prim.fun is documented and prim.extra == 42
    assert prim(3.0) == 6.0 and prim(3.0, y=1.0) == 3.0

    method = kit.eng.Primitive(lambda self, y: (self, y))

    class Holder:
        pass

    Holder.method = method
    holder = Holder()
    assert holder.method(1.0) == (holder, 1.0)  # bound like a function stored on a class
    assert Holder.method is method


def test_notrace_primitive_and_register_notrace(kit):
    eng = kit.eng
    shape_of = eng.NotracePrimitive(lambda x: type(x).__name__)
    end_value, end_node = eng.trace(eng.VJPNode.new_root(), lambda x: kit.mul(x, Val(len(shape_of(x)))), Val(1.0))
    assert kit.backward_pass(Val(1.0), end_node) == len("Val")
    passthrough = eng.Primitive(lambda x: Val(x))
    eng.register_notrace(eng.VJPNode, passthrough)
    with pytest.warns(UserWarning, match="Output seems independent of input."):
        value, node = eng.trace(eng.VJPNode.new_root(), passthrough, Val(5.0))
    assert node is None and value == 5.0 and not isinstance(value, eng.Box)


def test_new_box_rejects_unregistered_types(kit):
    with pytest.raises(TypeError, match="Can't differentiate w.r.t. type <class 'int'>.*integers"):
        kit.eng.new_box(3, 1, None)
    with pytest.raises(TypeError, match="Can't differentiate w.r.t. type <class 'str'>"):
        kit.eng.new_box("s", 1, None)


def test_box_str_and_getval(kit):
    box = kit.ValBox(Val(1.5), 7, None)
    assert str(box) == "Autograd ValBox with value 1.5"
    outer = kit.ValBox(box, 3, None)
    assert kit.eng.getval(outer) == 1.5 and kit.eng.isbox(outer) and not kit.eng.isbox(1.5)


def test_user_box_subclass_with_own_init_is_constructed_through_it(kit):
    eng = kit.eng
    calls = []

    class Tagged(Val):
        pass

    class TaggedBox(eng.Box):
        def __init__(self, value, trace, node):
            calls.append(value)
            eng.Box.__init__(self, value, trace, node)

    TaggedBox.register(Tagged)
    ident = eng.Primitive(lambda x: Tagged(x))
    eng.primitive_vjps[ident] = eng.VJPRule(ident, {0: (eng.DIRECT, lambda g, ans, x: g)})
    value, node = eng.trace(eng.VJPNode.new_root(), ident, Tagged(2.0))
    assert len(calls) == 2 and kit.backward_pass(1.0, node) == 1.0


@pytest.mark.parametrize("layout", ["slots=()", "own slot", "instance dict", "own __new__"])
def test_boxes_of_every_layout_hold_their_fields(kit, layout):
    # the compiled engine allocates boxes of Box's own layout itself; other layouts (a slot
    # or an instance dict of their own, a __new__) go through the type as before
    eng = kit.eng

    class Tagged(Val):
        pass

    body = {
        "slots=()": {"__slots__": ()},
        "own slot": {"__slots__": ("tag",)},
        "instance dict": {},
        "own __new__": {"__slots__": (), "__new__": lambda cls, *args: eng.Box.__new__(cls)},
    }[layout]
    TaggedBox = type("TaggedBox", (eng.Box,), dict(body))
    TaggedBox.register(Tagged)
    seen = []

    def ident_raw(x):
        return Tagged(x)

    ident = eng.Primitive(ident_raw)
    eng.primitive_vjps[ident] = eng.VJPRule(ident, {0: (eng.DIRECT, lambda g, ans, x: g * 3.0)})

    def f(x):
        box = ident(x)
        seen.append(box)
        return box

    value, node = eng.trace(eng.VJPNode.new_root(), f, Tagged(2.0))
    box = seen[0]
    assert type(box) is TaggedBox and type(box._value) is Tagged and box._value == 2.0
    assert box._node is node and box._trace >= 1 and kit.backward_pass(1.0, node) == 3.0
    assert gc.is_tracked(box)  # (it may be in a reference cycle)
    if layout == "own slot":
        box.tag = "t"
        assert box.tag == "t"
    if layout == "instance dict":
        box.note = 1
        assert box.__dict__ == {"note": 1}
    # a weak reference to it, and its value released with it (the node keeps the value)
    ref, inner = weakref.ref(box), box._value
    held = sys.getrefcount(inner)
    del seen[:], box
    gc.collect()
    assert ref() is None and sys.getrefcount(inner) == held - 1


@pytest.mark.parametrize("where", ["on the class", "on a subclass of a class in use", "added after the first box"])
def test_box_finalizers_run_and_each_box_gives_back_its_class_reference(kit, where):
    # the compiled engine frees the boxes of a plain Box subclass itself (not through the
    # class's generic deallocator): a __del__ of such a class, of its subclass, or one given
    # to it once boxes exist still runs once per box, weak references die with the box, and
    # each box drops the reference to its class that it held
    eng = kit.eng
    finalized = []

    class Tagged(Val):
        pass

    def finalizer(self):
        finalized.append(self._value)

    ident = eng.Primitive(lambda x: Tagged(x))
    eng.primitive_vjps[ident] = eng.VJPRule(ident, {0: (eng.DIRECT, lambda g, ans, x: g * 3.0)})
    kept = []

    def traced(box_class):
        def f(x):
            kept.append(ident(x))
            return kept[-1]

        box_class.register(Tagged)
        value, node = eng.trace(eng.VJPNode.new_root(), f, Tagged(2.0))
        assert type(kept[-1]) is box_class and kit.backward_pass(1.0, node) == 3.0

    plain = type("PlainBox", (eng.Box,), {"__slots__": ()})
    if where == "on the class":
        box_class = type("PlainBox", (eng.Box,), {"__slots__": (), "__del__": finalizer})
    elif where == "on a subclass of a class in use":
        traced(plain)
        kept.clear()
        box_class = type("LoggedBox", (plain,), {"__slots__": (), "__del__": finalizer})
    else:
        box_class = plain
    traced(box_class)
    kept.clear()
    gc.collect()
    finalized.clear()
    references = sys.getrefcount(box_class)  # (the engine's caches hold theirs by now)
    traced(box_class)
    if where == "added after the first box":
        box_class.__del__ = finalizer
    ref = weakref.ref(kept[-1])
    kept.clear()
    gc.collect()
    # the trace's root box (freed with the trace) and the box kept, or only the latter when
    # __del__ came after the former was freed
    assert ref() is None and finalized == ([2.0] if where == "added after the first box" else [2.0, 2.0])
    assert sys.getrefcount(box_class) == references


def test_boxes_of_two_plain_classes_freed_and_made_in_turn(kit):
    # the compiled engine keeps the memory of freed plain boxes for the next boxes, of any
    # plain box class: each box is of its own class and holds its own value, its weak
    # references die when it is freed, and it gives back its reference to its class
    eng = kit.eng

    class First(Val):
        pass

    class Second(Val):
        pass

    boxes = {}
    for value_type in (First, Second):
        boxes[value_type] = type(value_type.__name__ + "Box", (eng.Box,), {"__slots__": ()})
        boxes[value_type].register(value_type)
    double = eng.Primitive(lambda x: type(x)(2.0 * x))
    eng.primitive_vjps[double] = eng.VJPRule(double, {0: (eng.DIRECT, lambda g, ans, x: g * 2.0)})
    refs = []

    def chain(x):  # 101 boxes, each freed as the next one is made (but the trace's root, x)
        for k in range(100):
            assert type(x) is boxes[type(x._value)] and x._value == 2.0**k
            # the last two boxes are freed, and a weak reference to either is dead even where
            # its memory holds a box again (the one x is, or one double makes next)
            assert k < 3 or [r for r in refs[-2:] if r() is not None] == []
            refs.append(weakref.ref(x))
            x = double(x)
        return x

    def run(value_type):
        end, node = eng.trace(eng.VJPNode.new_root(), chain, value_type(1.0))
        assert type(end) is value_type and end == 2.0**100
        assert kit.backward_pass(1.0, node) == 2.0**100

    run(First), run(Second)  # (the engine's caches hold their references to Second by now)
    gc.collect()
    references = [sys.getrefcount(b) for b in boxes.values()]
    for value_type in (First, Second, First, Second):
        run(value_type)
    gc.collect()
    assert len(refs) == 600 and [r for r in refs if r() is not None] == []
    assert [sys.getrefcount(b) for b in boxes.values()] == references


def test_node_subclass_passed_to_trace_sees_every_primitive(kit):
    eng = kit.eng
    seen = []

    class RecordingNode(eng.Node):
        def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
            self.parents = parents
            seen.append((fun.__name__, parent_argnums))

        def initialize_root(self):
            self.parents = ()

    kit.mul.__name__, kit.sin.__name__ = "mul", "sin"
    value, node = eng.trace(RecordingNode.new_root(), lambda x: kit.mul(kit.sin(x), x), Val(0.5))
    assert seen == [("sin", (0,)), ("mul", (0, 1))]
    assert isinstance(node, RecordingNode) and value == pytest.approx(onp.sin(0.5) * 0.5)


def test_nested_traces_get_larger_ids_in_every_thread(kit):
    eng = kit.eng
    ids = []

    def inner(x):
        ids.append(x._trace)
        return x

    def outer(x):
        ids.append(x._trace)
        eng.trace(eng.VJPNode.new_root(), inner, x)
        return x

    eng.trace(eng.VJPNode.new_root(), outer, Val(1.0))
    assert ids[1] > ids[0]
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(kit.grad(lambda x: kit.mul(x, x), 3.0))) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [6.0] * 4


def test_a_box_of_an_ended_trace_is_the_value_it_holds(kit):
    # Nothing done with a box after its trace has ended can reach that trace's backward pass;
    # beside boxes of a later trace it is a constant (autograd's sibling traces share an id
    # and come to the same values).
    eng = kit.eng
    leaked = []
    for v in (1.0, 2.0):
        eng.trace(eng.VJPNode.new_root(), lambda x: leaked.append(kit.mul(x, Val(3.0))) or x, Val(v))
    first, second = leaked
    assert first._trace < second._trace
    both = kit.add(first, second)  # recorded on the later trace, with the earlier one's value
    assert both._trace == second._trace and type(both._value) is Val and both._value == 9.0
    g = kit.grad(lambda y: kit.mul(kit.sin(y), first), 0.5)  # inside a new trace: a constant
    assert type(g) is Val and g == pytest.approx(3.0 * onp.cos(0.5), rel=1e-15)
    # more arguments than the compiled engine passes on the C stack (8): the same
    total = eng.Primitive(lambda *xs: Val(sum(xs)))
    eng.primitive_vjps[total] = eng.VJPRule(total, {i: (eng.DIRECT, lambda g, ans, *xs: g) for i in range(10)})
    many = total(*([first] * 5 + [second] * 5))
    assert many._trace == second._trace and type(many._value) is Val and many._value == 5 * 3.0 + 5 * 6.0
    # a trace opened by hand ends with its block
    with_block = []
    t = eng.open_trace()
    with_block.append(eng.new_box(Val(4.0), t, eng.VJPNode.new_root()))
    g_open = kit.grad(lambda y: kit.mul(y, with_block[0]), 2.0)
    assert isinstance(g_open, eng.Box) and g_open._trace == t  # open: an outer trace, as before
    eng.close_trace(t)
    g_closed = kit.grad(lambda y: kit.mul(y, with_block[0]), 2.0)
    assert type(g_closed) is Val and g_closed == 4.0


def test_boxes_of_open_outer_traces_stay_boxed_beside_an_ended_one(kit):
    # an ended inner trace's box holds a box of the open outer trace: that one is still traced
    eng = kit.eng

    def outer(x):
        kept = []
        eng.trace(eng.VJPNode.new_root(), lambda y: kept.append(kit.mul(kit.sin(x), y)) or y, Val(2.0))
        return eng.trace(eng.VJPNode.new_root(), lambda z: kit.mul(z, kept[0]), Val(1.0))[0]

    assert kit.grad(outer, 0.3) == pytest.approx(2.0 * onp.cos(0.3), rel=1e-15)


def test_a_box_of_an_ended_trace_inside_a_box_is_the_value_it_holds(kit):
    # Both traces have ended: the outer box's value is a constant in what is recorded on the
    # inner one (both engines alike; the values are the same either way).
    eng = kit.eng
    leaked = []

    def outer(x):
        eng.trace(eng.VJPNode.new_root(), lambda y: leaked.append(kit.mul(y, y)) or y, x)
        return x

    kit.grad(outer, Val(2.0))
    inner = leaked[0]
    assert isinstance(inner._value, eng.Box) and inner._value._trace < inner._trace
    later = kit.mul(inner, Val(3.0))
    assert later._trace == inner._trace and type(later._value) is Val and later._value == 12.0


def test_forward_mode_node(kit):
    eng = kit.eng
    eng.primitive_jvps[kit.mul] = eng.JVPRule(
        kit.mul, {0: (eng.DIRECT, lambda g, ans, a, b: g * b), 1: (eng.DIRECT, lambda g, ans, a, b: g * a)}
    )
    eng.primitive_jvps[kit.add] = eng.JVPRule(
        kit.add, {0: (eng.DIRECT, lambda g, ans, a, b: g), 1: (eng.DIRECT, lambda g, ans, a, b: g)}
    )
    scale = eng.Primitive(lambda x, a: Val(x * a))  # linear in x: the SAME rule applies it to g
    eng.primitive_jvps[scale] = eng.JVPRule(scale, {}, (eng.SAME, None))
    value, node = eng.trace(eng.JVPNode.new_root(2.0), lambda x: scale(x, Val(5.0)), Val(3.0))
    assert value == 15.0 and node.g == 10.0
    value, node = eng.trace(eng.JVPNode.new_root(2.0), lambda x: kit.add(kit.mul(x, x), x), Val(3.0))
    assert value == 12.0 and node.g == pytest.approx(2.0 * (2 * 3.0 + 1))
    with pytest.raises(NotImplementedError, match="JVP of .* wrt argnums"):
        eng.trace(eng.JVPNode.new_root(1.0), kit.sin, Val(3.0))


def test_engines_agree_on_the_same_program():
    if _core is None:
        pytest.skip("compiled engine not built")
    kits = [Kit(eng, name) for eng in (_core_py, _core) for name in ("backward_pass", "backward_pass_with_dicts")]

    def program(k):
        def f(x):
            y = x
            for i in range(50):
                y = k.add(k.mul(k.sin(y), x), Val(0.01 * i))
            return y

        return f

    try:
        results = [k.grad(program(k), 0.3) for k in kits]
    finally:
        for k in reversed(kits):
            k.close()
    assert results[1:] == results[:-1]


def test_nodes_keep_only_what_their_rule_reads(kit):
    eng = kit.eng
    square = eng.Primitive(lambda x: Val(x * x))
    eng.primitive_vjps[square] = eng.VJPRule(square, {0: (eng.DIRECT, lambda g, ans, x: g * 2 * x)}, False, True)
    exp = eng.Primitive(lambda x: Val(onp.exp(x)))
    eng.primitive_vjps[exp] = eng.VJPRule(exp, {0: (eng.DIRECT, lambda g, ans, x: g * ans)}, True, False)
    nodes = []

    def f(x):
        y = square(x)
        z = exp(y)
        nodes.extend([y._node, z._node])
        return z

    value, node = eng.trace(eng.VJPNode.new_root(), f, Val(0.5))
    assert nodes[0].value is None and nodes[0].args == (0.5,)
    assert nodes[1].value == value and nodes[1].args == (None,)
    assert kit.backward_pass(1.0, node) == pytest.approx(onp.exp(0.25) * 2 * 0.5, rel=1e-14)


def test_argnums_tuples_are_shared_per_pattern(kit):
    eng = kit.eng
    nodes = []

    def f(x):
        a, b = kit.mul(x, Val(2.0)), kit.mul(Val(3.0), x)
        c = kit.mul(a, b)
        nodes.extend([a._node, b._node, c._node])
        return c

    eng.trace(eng.VJPNode.new_root(), f, Val(1.0))
    assert [n.parent_argnums for n in nodes] == [(0,), (1,), (0, 1)]
    many = eng.Primitive(lambda *xs: Val(sum(xs)))
    eng.primitive_vjps[many] = lambda argnums, ans, args, kwargs: lambda g: [g for _ in argnums]
    nine = [Val(1.0)] * 9

    def g(x):
        return many(*nine, x)

    value, node = eng.trace(eng.VJPNode.new_root(), g, Val(1.0))
    assert node.parent_argnums == (9,) and kit.backward_pass(1.0, node) == 1.0


# ---- the default pass (bookkeeping in node fields) and its fallback -----------------------


def _fan_program(kit, steps=30):
    def f(x):
        y = x
        for i in range(steps):
            y = kit.add(kit.mul(kit.sin(y), x), kit.mul(y, Val(0.5 + 0.01 * i)))  # fan-out and fan-in
        return y

    return f


def test_both_passes_of_both_engines_give_the_same_bits():
    engines = [_core_py] + ([] if _core is None else [_core])
    kits = [Kit(eng, name) for eng in engines for name in ("backward_pass", "backward_pass_with_dicts")]
    try:
        results = [k.grad(_fan_program(k), 0.3) for k in kits]
    finally:
        for k in reversed(kits):
            k.close()
    assert len(set(results)) == 1, results
    assert results[0] != 0.0


def test_user_node_types_take_the_fallback(engine):
    # a graph of a user's node type cannot use the VJPNode fields: backward_pass runs the
    # dict pass, through the nodes' own vjp
    kit = Kit(engine)
    try:

        class ScaledNode(engine.Node):
            def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
                self.parents = parents
                self.inner = engine.VJPNode(value, fun, args, kwargs, parent_argnums, parents)

            def initialize_root(self):
                self.parents = ()

            def vjp(self, g):
                return self.inner.vjp(g)

        f = _fan_program(kit, 5)
        value, end = engine.trace(ScaledNode.new_root(), f, Val(0.3))
        assert type(end) is ScaledNode
        assert engine.backward_pass(Val(1.0), end) == kit.grad(f, 0.3)
    finally:
        kit.close()


def test_a_pass_inside_a_rule_over_the_same_graph(kit):
    # a rule that runs a second pass over the graph being processed: the inner pass finds
    # the nodes in use and takes the fallback; both give the right cotangents
    eng = kit.eng
    inner_results, graph = [], {}
    probe = eng.Primitive(lambda x: Val(x))

    def probing_rule(g, ans, x):
        if graph["outer"]:  # (the inner pass runs this rule too)
            graph["outer"] = False
            inner_results.append(eng.backward_pass(Val(1.0), graph["end"]))
        return g

    eng.primitive_vjps[probe] = eng.VJPRule(probe, {0: (eng.DIRECT, probing_rule)})
    f = _fan_program(kit, 6)
    value, graph["end"] = eng.trace(eng.VJPNode.new_root(), lambda x: f(probe(x)), Val(0.3))
    expected = kit.grad(f, 0.3)
    graph["outer"] = True
    assert kit.backward_pass(Val(1.0), graph["end"]) == pytest.approx(expected, rel=1e-14)
    assert inner_results == [pytest.approx(expected, rel=1e-14)]
    assert kit.backward_pass(Val(1.0), graph["end"]) == pytest.approx(expected, rel=1e-14)


def test_a_pass_that_raised_leaves_nothing_behind(kit):
    eng = kit.eng
    fail = [True]
    flaky = eng.Primitive(lambda x: Val(x))

    def flaky_rule(g, ans, x):
        if fail[0]:
            raise ZeroDivisionError("injected")
        return g

    eng.primitive_vjps[flaky] = eng.VJPRule(flaky, {0: (eng.DIRECT, flaky_rule)})
    f = _fan_program(kit, 6)
    value, end = eng.trace(eng.VJPNode.new_root(), lambda x: f(flaky(kit.mul(x, x))), Val(0.3))
    with pytest.raises(ZeroDivisionError):
        kit.backward_pass(Val(1.0), end)
    fail[0] = False
    first = kit.backward_pass(Val(1.0), end)
    assert first == kit.backward_pass(Val(1.0), end) == eng.backward_pass_with_dicts(Val(1.0), end)
    assert first == pytest.approx(kit.grad(lambda x: f(kit.mul(x, x)), 0.3), rel=1e-14)


def test_concurrent_passes_over_one_graph(kit):
    eng = kit.eng
    f = _fan_program(kit, 40)
    value, end = eng.trace(eng.VJPNode.new_root(), f, Val(0.3))
    expected = kit.backward_pass(Val(1.0), end)
    results, errors = [], []

    def run():
        try:
            for _ in range(15):
                results.append(kit.backward_pass(Val(1.0), end))
        except BaseException as exc:  # pragma: no cover (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [expected] * 60


def test_cotangents_of_several_roots(kit):
    # a trace that starts from several boxes (one root each, as a container traced leaf by
    # leaf): each root's cotangent, None for a root nothing reaches
    eng = kit.eng
    roots = [eng.VJPNode.new_root() for _ in range(3)]

    def f(a):
        b = kit.ValBox(Val(2.0), a._trace, roots[1])
        eng.new_box(Val(5.0), a._trace, roots[2])  # (unused)
        return kit.add(kit.mul(a, b), kit.mul(a, a))

    value, end = eng.trace(roots[0], f, Val(3.0))
    assert kit.backward_pass(Val(1.0), end, False, roots) == [2.0 + 6.0, 3.0, None]
    seed = onp.ones(2)
    ident = eng.Primitive(lambda x: Val(x))
    eng.primitive_vjps[ident] = eng.VJPRule(ident, {0: (eng.DIRECT, lambda g, ans, x: g)})
    value, end = eng.trace(roots[0], ident, Val(3.0))
    (got,) = kit.backward_pass(seed, end, False, roots[:1])
    onp.testing.assert_array_equal(got, seed)
    assert got is not seed  # the caller's own array


# ---------------------------------------------------------------------------
# defvjp_direct(reads=...): a large argument that no rule reads is kept as a stand-in


def test_a_user_rule_that_reads_no_argument_value_keeps_no_large_argument():
    import fastgrad.numpy as fnp
    from fastgrad.extend import primitive

    @primitive
    def shift(x, c):
        return x + c

    core.defvjp_direct(shift, lambda g, ans, x, c: g, lambda g, ans, x, c: fnp.sum(g), reads=((), ()))
    x0 = onp.ones((300, 300))
    seen = []

    def f(x):
        y = shift(x, 1.0)
        seen.append(y._node.args[0])
        return fnp.sum(y * 2.0)

    g = fastgrad.grad(f)(x0)
    onp.testing.assert_array_equal(g, onp.full(x0.shape, 2.0))
    kept = seen[0]
    assert kept is not x0 and kept.shape == x0.shape and kept.strides == (0, 0)


def test_reads_must_match_the_rules():
    from fastgrad.extend import primitive

    @primitive
    def f(x, y):
        return x * y

    with pytest.raises(ValueError, match=r"reads needs one entry per rule \(2\), got 1"):
        core.defvjp_direct(f, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x, reads=((1,),))
    with pytest.raises(ValueError, match=r"reads: argument positions are non-negative ints, got -1"):
        core.defvjp_direct(f, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x, reads=((-1,), (0,)))
