"""Every name of SPEC.md §2, §3, §4 and §7 exists, with a quick check of what it does.

The name lists below are the spec's, module by module; each test enumerates one list.
The deeper behaviour of each name is tested elsewhere (test_api, test_operators,
test_containers, test_extension_api, test_test_util, ...): here each name gets a small
check that it is the documented thing, not merely present.
"""

import importlib
import warnings

import numpy as onp
import pytest

pytestmark = pytest.mark.fastgrad_only

SPEC_2_OPERATORS = [
    "grad",
    "value_and_grad",
    "elementwise_grad",
    "deriv",
    "jacobian",
    "holomorphic_grad",
    "hessian",
    "make_hvp",
    "make_vjp",
    "make_jvp",
    "grad_and_aux",
]
SPEC_2_OTHER = [
    "grad_named",
    "hessian_tensor_product",
    "hessian_vector_product",
    "tensor_jacobian_product",
    "vector_jacobian_product",
    "make_ggnvp",
    "multigrad_dict",
    "checkpoint",
    "dict",
    "list",
    "tuple",
    "isinstance",
    "type",
    "primitive",
    "stop_gradient",
    "COMPILED",
    "__version__",
    "install_as_autograd",
]
SPEC_3_EXTEND = [
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
]
SPEC_3_CORE = [
    "make_vjp",
    "make_jvp",
    "backward_pass",
    "VJPNode",
    "JVPNode",
    "primitive_vjps",
    "primitive_jvps",
    "defvjp",
    "defvjp_argnum",
    "defvjp_argnums",
    "defjvp",
    "defjvp_argnum",
    "defjvp_argnums",
    "def_linear",
    "translate_vjp",
    "translate_jvp",
    "add_outgrads",
    "sum_outgrads",
    "sparse_add",
    "VSpace",
    "vspace",
    "SparseBox",
    "SparseObject",
    "sparse_object_types",
    "identity_vjp",
    "identity_jvp",
    "primitive",
    "Box",
    "Node",
    "getval",
    "isbox",
    "toposort",
    "trace",
    "func",
    "subval",
]
SPEC_3_TRACER = [
    "trace",
    "Node",
    "primitive",
    "notrace_primitive",
    "register_notrace",
    "Box",
    "new_box",
    "isbox",
    "getval",
]
SPEC_3_UTIL = ["subvals", "subval", "func", "toposort", "quick_grad_check"]
SPEC_3_WRAP_UTIL = ["unary_to_nary", "wraps", "wrap_nary_f", "get_name", "get_doc"]
SPEC_4_BUILTINS = [
    "SequenceBox",
    "DictBox",
    "ListVSpace",
    "TupleVSpace",
    "DictVSpace",
    "list",
    "tuple",
    "dict",
    "isinstance",
    "type",
]
SPEC_7_TEST_UTIL = [
    "check_grads",
    "check_vjp",
    "check_jvp",
    "check_equivalent",
    "combo_check",
    "make_numerical_jvp",
    "scalar_close",
    "TOL",
    "RTOL",
    "EPS",
]
SPEC_7_MISC = {
    "fastgrad.misc": ["flatten", "const_graph"],
    "fastgrad.misc.flatten": ["flatten", "flatten_func"],
    "fastgrad.misc.optimizers": ["sgd", "rmsprop", "adam"],
    "fastgrad.misc.fixed_points": ["fixed_point"],
    "fastgrad.misc.tracers": ["const_graph", "full_graph"],
}

ALL = {
    "fastgrad": SPEC_2_OPERATORS + SPEC_2_OTHER,
    "fastgrad.extend": SPEC_3_EXTEND,
    "fastgrad.core": SPEC_3_CORE,
    "fastgrad.tracer": SPEC_3_TRACER,
    "fastgrad.util": SPEC_3_UTIL,
    "fastgrad.wrap_util": SPEC_3_WRAP_UTIL,
    "fastgrad.builtins": SPEC_4_BUILTINS,
    "fastgrad.test_util": SPEC_7_TEST_UTIL,
    **SPEC_7_MISC,
}


def _attr(module, name):
    if module == "fastgrad.misc.flatten":  # the name `flatten` on fastgrad.misc is the function
        import sys

        importlib.import_module(module)
        return getattr(sys.modules[module], name)
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("module,name", [(m, n) for m, names in ALL.items() for n in names], ids=lambda v: v)
def test_name_exists(module, name):
    value = _attr(module, name)
    assert value is not None or name in ("func",)


def test_extend_exports_exactly_the_spec_list():
    import fastgrad.extend as extend

    public = {n for n in dir(extend) if not n.startswith("_")}
    assert public == set(SPEC_3_EXTEND)
    assert not hasattr(extend.primitive(lambda x: x), "defgrad")  # the plain primitive


# ---------------------------------------------------------------------------
# §2: the top-level names


@pytest.mark.parametrize("op", SPEC_2_OPERATORS)
def test_nary_operator_name_doc_and_argnums(op):
    import fastgrad

    operator = getattr(fastgrad, op)
    assert operator.__doc__ and len(operator.__doc__.strip()) > 40

    def fun(a, b):
        return a * b

    for argnum in (0, -1, (0, 1), [1, 0]):
        wrapped = operator(fun, argnum)
        assert wrapped.__name__ == f"{op}_of_fun_wrt_argnum_{argnum}"
        assert wrapped.__doc__.startswith(f"    {op} of function fun with")


def test_operators_compute_what_they_say():
    import fastgrad as fg
    import fastgrad.numpy as np

    x = onp.array([0.3, -1.2])
    f = lambda x: np.sum(np.sin(x) * x)
    df = onp.cos(x) * x + onp.sin(x)
    d2f = onp.diag(2 * onp.cos(x) - x * onp.sin(x))
    onp.testing.assert_allclose(fg.grad(f)(x), df, rtol=1e-14)
    v, g = fg.value_and_grad(f)(x)
    assert v == pytest.approx(onp.sum(onp.sin(x) * x)) and onp.allclose(g, df)
    onp.testing.assert_allclose(fg.elementwise_grad(lambda x: np.sin(x) * x)(x), df, rtol=1e-14)
    onp.testing.assert_allclose(fg.deriv(lambda x: np.sin(x) * x)(x), df, rtol=1e-14)
    onp.testing.assert_allclose(fg.jacobian(lambda x: np.sin(x) * x)(x), onp.diag(df), rtol=1e-14)
    onp.testing.assert_allclose(fg.hessian(f)(x), d2f, rtol=1e-13, atol=1e-15)
    hvp, grad_value = fg.make_hvp(f)(x)
    onp.testing.assert_allclose(hvp(onp.ones(2)), d2f.sum(1), rtol=1e-13)
    onp.testing.assert_allclose(grad_value, df, rtol=1e-14)
    for name in ("hessian_tensor_product", "hessian_vector_product"):
        onp.testing.assert_allclose(getattr(fg, name)(f)(x, onp.ones(2)), d2f.sum(1), rtol=1e-13)
    for name in ("tensor_jacobian_product", "vector_jacobian_product"):
        onp.testing.assert_allclose(getattr(fg, name)(lambda x: np.sin(x) * x)(x, onp.ones(2)), df, rtol=1e-14)
    vjp, value = fg.make_vjp(lambda x: np.sin(x) * x)(x)
    onp.testing.assert_allclose(vjp(onp.ones(2)), df, rtol=1e-14)
    value, tangent = fg.make_jvp(lambda x: np.sin(x) * x)(x)(onp.ones(2))
    onp.testing.assert_allclose(tangent, df, rtol=1e-14)
    g, aux = fg.grad_and_aux(lambda x: (f(x), "aux"))(x)
    assert aux == "aux" and onp.allclose(g, df)
    assert fg.grad_named(lambda a, b: a * b**2, "b")(2.0, 3.0) == 12.0
    assert complex(fg.holomorphic_grad(lambda z: z**2)(1.0 + 2.0j)) == 2.0 + 4.0j
    onp.testing.assert_allclose(
        fg.make_ggnvp(lambda x: np.sin(x) * x)(x)(onp.ones(2)), df * df, rtol=1e-13
    )  # J^T I J 1 for a diagonal J
    grads = fg.multigrad_dict(lambda a, b: a * b)(2.0, 3.0)
    assert list(grads) == ["a", "b"] and grads["a"] == 3.0 and grads["b"] == 2.0
    onp.testing.assert_allclose(fg.grad(lambda x: np.sum(fg.checkpoint(np.sin)(x) * x))(x), df, rtol=1e-14)
    onp.testing.assert_allclose(fg.grad(lambda x: np.sum(x * fg.stop_gradient(x)))(x), x)


def test_traced_container_constructors_and_builtins():
    import fastgrad as fg
    import fastgrad.numpy as np

    for cls, builtin, example in [(fg.list, list, [1.0]), (fg.tuple, tuple, (1.0,)), (fg.dict, dict, {"a": 1.0})]:
        assert isinstance(example, cls) and isinstance(cls(example), builtin)
        assert issubclass(builtin, cls)

    def f(x):
        t = fg.tuple([x, np.sin(x)])
        l = fg.list([t[1], x])
        d = fg.dict(a=l[0], b=t[0])
        assert isinstance(t, fg.tuple) and isinstance(l, fg.list) and isinstance(d, fg.dict)
        assert fg.isinstance(x, onp.ndarray) and fg.type(x) is onp.ndarray
        assert fg.isinstance(t, tuple) and fg.type(d) is dict
        return np.sum(d["a"] * d["b"])

    x = onp.array([0.4, 0.9])
    onp.testing.assert_allclose(fg.grad(f)(x), onp.sin(x) + x * onp.cos(x), rtol=1e-14)


def test_legacy_primitive_methods_warn_and_forward():
    import fastgrad as fg

    @fg.primitive
    def mul(a, b):
        return a * b

    with pytest.warns(UserWarning, match="deprecated"):
        mul.defvjp(lambda g, ans, vs, gvs, a, b: g * b)
    with pytest.warns(UserWarning, match="deprecated"):
        mul.defgrad(lambda ans, a, b: lambda g: g * a, argnum=1)
    assert tuple(map(float, fg.grad(mul, (0, 1))(2.0, 3.0))) == (3.0, 2.0)  # both kept
    with pytest.warns(UserWarning, match="deprecated"):
        mul.defvjp_is_zero(argnums=(1,))
    assert tuple(map(float, fg.grad(mul, (0, 1))(2.0, 3.0))) == (3.0, 0.0)


def test_version_compiled_and_switch():
    import fastgrad

    assert isinstance(fastgrad.__version__, str) and fastgrad.__version__
    assert fastgrad.COMPILED in (True, False)
    assert callable(fastgrad.install_as_autograd)  # exercised in subprocesses by test_dropin


# ---------------------------------------------------------------------------
# §3: core, tracer, util, wrap_util


def test_core_names_behave():
    import fastgrad.core as core
    import fastgrad.numpy as np

    vjp, ans = core.make_vjp(lambda x: x * 3.0, 2.0)
    assert float(vjp(1.0)) == 3.0 and ans == 6.0
    assert core.make_jvp(lambda x: x * 3.0, 2.0)(1.0) == (6.0, 3.0)
    assert core.sum_outgrads([1.0, 2.0, 3.0]) == 6.0
    onp.testing.assert_array_equal(core.sum_outgrads([onp.ones(2), onp.ones(2)]), [2.0, 2.0])
    assert core.identity_jvp(4.0, "ans", "x") == 4.0
    assert core.identity_vjp((0,), "x")(5.0) == 5.0
    onp.testing.assert_array_equal(core.translate_vjp(None, None, 1)(0.0, 1.0, onp.ones(3))(7.0), onp.zeros(3))
    assert core.translate_jvp("same", np.multiply, 1)(2.0, None, 3.0, 5.0) == 6.0
    assert float(core.translate_jvp(None, None, 0)(2.0, 1.0, 3.0)) == 0.0
    vs = core.vspace(onp.ones(3))
    obj = core.SparseObject(vs, lambda acc: acc + 1.0)
    assert type(obj) in core.sparse_object_types and core.SparseBox in core.sparse_object_types
    onp.testing.assert_array_equal(core.sparse_add(vs, None, obj), onp.ones(3))
    assert isinstance(core.primitive_vjps, dict) and np.sin in core.primitive_vjps
    assert isinstance(core.primitive_jvps, dict)
    for name in (
        "defvjp",
        "defvjp_argnum",
        "defvjp_argnums",
        "defjvp",
        "defjvp_argnum",
        "defjvp_argnums",
        "def_linear",
        "backward_pass",
        "add_outgrads",
        "trace",
        "toposort",
        "func",
        "subval",
        "getval",
        "isbox",
    ):
        assert callable(getattr(core, name)), name
    assert hasattr(core.primitive(lambda x: x), "defgrad")  # the legacy-flavoured one
    assert issubclass(core.VJPNode, core.Node) and issubclass(core.JVPNode, core.Node)
    assert core.Box is importlib.import_module("fastgrad.tracer").Box


def test_tracer_names_behave():
    import fastgrad.tracer as tr
    import fastgrad.numpy as np

    assert str(tr.new_box(onp.ones(2), 1, None)).startswith("Autograd ArrayBox with value")
    with pytest.raises(TypeError, match="Can't differentiate w.r.t. type"):
        tr.new_box(object(), 1, None)
    box = tr.new_box(2.5, 1, None)
    assert tr.isbox(box) and tr.getval(box) == 2.5 and not tr.isbox(2.5)
    square = tr.primitive(lambda x: x * x)
    assert square.fun(3.0) == 9.0 and square(3.0) == 9.0
    shape_of = tr.notrace_primitive(onp.shape)
    assert shape_of(box) == ()
    assert callable(tr.trace) and callable(tr.register_notrace) and isinstance(tr.Node, type)
    assert np.sin.fun is onp.sin


def test_util_and_wrap_util_names_behave():
    from fastgrad import util, wrap_util

    assert util.subvals((1, 2, 3), [(0, 9), (2, 8)]) == (9, 2, 8)
    assert util.subval((1, 2, 3), 1, 7) == (1, 7, 3)
    f = lambda x: x
    assert util.func(f) is f

    class N:
        def __init__(self, *parents):
            self.parents = parents

    a = N()
    b, c = N(a), N(a)
    d = N(b, c)
    order = list(util.toposort(d))
    assert order[0] is d and order[-1] is a and set(order) == {a, b, c, d}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert util.quick_grad_check(lambda x: x**2, 1.5, verbose=False) is None
    assert wrap_util.get_name(f) == "<lambda>" and wrap_util.get_doc(wrap_util.get_doc)

    @wrap_util.unary_to_nary
    def twice(fun, x):
        return 2 * fun(x)

    assert twice(lambda a, b: a - b, 1)(5, 3) == 4
    assert twice(lambda a, b: a - b).__name__ == "twice_of_<lambda>_wrt_argnum_0"
    named = wrap_util.wraps(f, "wrapped_{fun}", "doc {doc}")(lambda: None)
    assert named.__name__ == "wrapped_<lambda>" and named.__doc__ == "doc None"
    g = wrap_util.wrap_nary_f(f, twice, 2)(lambda: None)
    assert g.__name__ == "twice_of_<lambda>_wrt_argnum_2"


# ---------------------------------------------------------------------------
# §4: builtins and complex spaces


def test_sequence_box_and_dict_box_methods():
    import fastgrad as fg
    import fastgrad.builtins as B
    import fastgrad.numpy as np

    def seq(t):
        assert type(t) is B.SequenceBox
        assert len(t) == 3 and 2.0 in t and t.index(t[1]) == 1
        u = t + (t[0],)
        return np.sum(t[0] * t[2]) + u[3] * t[1]

    g = fg.grad(seq)((2.0, 3.0, 4.0))
    assert tuple(map(float, g)) == (4.0 + 3.0, 2.0, 2.0)

    def dct(d):
        assert type(d) is B.DictBox and len(d) == 2 and "a" in d
        total = d.get("missing", 0.0) + d.get("a")
        for k, v in d.items():
            total = total + v * len(k)
        return total + sum(d[k] for k in d.keys()) + sum(d.values()) * 0.0 + sum(d[k] for k in d)

    g = fg.grad(dct)({"a": 1.0, "bb": 2.0})
    assert float(g["a"]) == 1.0 + 1.0 + 1.0 + 1.0 and float(g["bb"]) == 2.0 + 1.0 + 1.0


def test_container_vspaces():
    import fastgrad.builtins as B
    from fastgrad.core import vspace

    assert type(vspace([1.0, onp.ones(2)])) is B.ListVSpace
    assert type(vspace((1.0, 2.0))) is B.TupleVSpace
    assert type(vspace({"a": 1.0})) is B.DictVSpace
    assert vspace([1.0, onp.ones(2)]).size == 3
    assert vspace({"a": (1.0, onp.ones((2, 2)))}).zeros()["a"][1].shape == (2, 2)


def test_complex_vector_space():
    from fastgrad.core import vspace

    z = onp.array([1 + 2j, 3 - 1j])
    vs = vspace(z)
    assert vs.size == 4 and vs.iscomplex
    onp.testing.assert_array_equal(vs.ones(), [1 + 1j, 1 + 1j])
    assert vs.inner_prod(z, 1j * z) == pytest.approx(onp.real(onp.vdot(z, 1j * z)))


# ---------------------------------------------------------------------------
# §7: test_util and misc


def test_test_util_names_behave():
    import fastgrad.numpy as np
    import fastgrad.test_util as tu

    assert (tu.TOL, tu.RTOL, tu.EPS) == (1e-6, 1e-6, 1e-6)
    tu.check_grads(lambda x: np.sin(x) * x)(onp.array([0.2, 0.5]))
    tu.check_vjp(np.tanh, onp.array([0.1, 0.3]))
    tu.check_jvp(np.tanh, onp.array([0.1, 0.3]))
    tu.check_equivalent(1.0, 1.0)
    tu.combo_check(lambda a, b: a * np.exp(b), [0, 1])([0.5], [0.1, -0.2])
    assert tu.make_numerical_jvp(lambda x: 3.0 * x, 1.0)(1.0) == pytest.approx(3.0)
    assert tu.scalar_close(1.0, 1.0 + 1e-8) and not tu.scalar_close(1.0, 1.1)


def test_misc_names_behave():
    import sys
    import fastgrad as fg
    import fastgrad.misc as misc
    import fastgrad.numpy as np
    from fastgrad.misc.fixed_points import fixed_point
    from fastgrad.misc.optimizers import adam, rmsprop, sgd
    from fastgrad.misc.tracers import const_graph, full_graph

    flatten_module = sys.modules["fastgrad.misc.flatten"]
    tree = {"a": onp.ones(2), "b": (1.5, onp.zeros((1, 2)))}
    vector, unflatten = misc.flatten(tree)
    assert vector.shape == (5,) and unflatten(vector)["b"][1].shape == (1, 2)
    flat_f, unflat, x0 = flatten_module.flatten_func(lambda t, i: np.sum(t["a"]) * t["b"][0], tree)
    assert flat_f(x0, 0) == 3.0
    for opt in (sgd, rmsprop, adam):
        x = opt(lambda x, i: 2 * (x - 3.0), onp.zeros(2), num_iters=2000, step_size=0.01)
        onp.testing.assert_allclose(x, [3.0, 3.0], atol=0.05)
    # x = cos-free iteration x <- a / 2 + x / 2 has the fixed point a; derivative 1
    root_grad = fg.grad(
        lambda a: fixed_point(lambda a: lambda x: 0.5 * a + 0.5 * x, a, 0.0, lambda x, y: abs(x - y), 1e-12)
    )(2.0)
    assert float(root_grad) == pytest.approx(1.0, rel=1e-6)
    replay = const_graph(lambda x: np.sin(x) * 2.0)
    assert float(replay(0.5)) == pytest.approx(2 * onp.sin(0.5))
    assert float(replay(0.1)) == pytest.approx(2 * onp.sin(0.1))
    assert callable(full_graph) and misc.const_graph is const_graph
