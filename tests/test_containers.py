"""Differentiation with respect to, and through, lists, tuples and dicts (fastgrad.builtins).

Every case is ``fun(B, np, x)`` with ``B`` the ``builtins`` module and ``np`` the traced numpy
of the package under test, so the same code runs on fastgrad and on autograd:

* gradients (first and second order) are checked against central differences with
  ``gradcheck.check_grads``, which works on plain NumPy trees, independently of the
  vector spaces under test;
* values and gradients equal autograd's;
* a gradient has exactly the container structure of its input (list in, list out, ...);
* nothing the caller owns (containers, arrays, cotangents) is modified.
"""

import copy
import collections
import functools
import importlib
import warnings

import numpy as onp
import pytest

from conftest import import_target
from gradcheck import check_grads, max_relative_error, tree_leaves, tree_map, tree_randn

FG_ONLY = pytest.mark.fastgrad_only


@pytest.fixture(scope="module")
def B():
    return import_target("builtins")


_RS = onp.random.RandomState(7)


def R(*shape):
    return _RS.uniform(-1.5, 1.5, size=shape)


# ---------------------------------------------------------------------------------------
# Cases: (name, fun(B, np, x), x).  Inputs mix arrays and Python floats.


def list_index_iter(B, np, x):
    a, b, c = x  # unpacking = iteration
    total = 0.0
    for v in x:  # iteration
        total = total + np.sum(np.sin(v))
    return total + np.sum(a * x[1]) * c + np.sum(x[-1] * x[0]) + x[2] ** 2


def list_slices(B, np, x):
    head = x[:2]
    tail = x[1:]
    stepped = x[::2]
    return (
        np.sum(head[0] * head[1])
        + np.sum(tail[-1] * stepped[0])
        + np.sum(stepped[1] * x[1])
        + len(tail) * np.sum(x[0] ** 3)
    )


def list_concat(B, np, x):
    y = x + [np.exp(x[0]), 2.0]  # box + list
    z = [x[2], 1.0] + x  # list + box
    w = x + x  # box + box
    return np.sum(y[3] * y[1]) + z[0] * np.sum(z[3]) + np.sum(w[4]) * w[2] + y[4]


def list_membership(B, np, x):
    assert len(x) == 3
    k = x.index(x[1])  # index finds the same value
    extra = 1.0 if x[0] in x else 0.0
    return np.sum(x[2] * x[2]) * x[k] + x[0] * extra


def tuple_ops(B, np, x):
    (a, b), rest = x[:2], x[2:]
    t = (a * 2.0,) + rest + (b,)
    return np.sum(t[0] * t[2]) + t[1] * np.sum(b**2) + np.sum(t[-1]) * x[2]


def dict_methods(B, np, x):
    total = 0.0
    for k in x:  # iteration over keys
        total = total + np.sum(x[k] ** 2)
    for _, v in x.items():
        total = total + np.sum(np.cos(v))
    for v in x.values():
        total = total + np.sum(v) * 0.5
    keys = sorted(x.keys())
    total = total + np.sum(x.get("w") * x[keys[0]]) + (x["s"] if "s" in x else 0.0) ** 3
    return total + x.get("missing", 0.0) + len(x)


def constructors(B, np, x):
    # x is an array; build containers out of traced values and read them back
    l = B.list([x, np.sin(x), 3.0])
    t = B.tuple(v * 2.0 for v in [x, x**2])
    t2 = B.tuple(l)
    d = B.dict(a=x, b=t)
    d2 = B.dict([("c", np.exp(x))])
    d3 = B.dict({"q": x}, r=t2[1])
    l2 = B.list(d.values())
    d4 = B.dict(d)  # a dict from a traced dict
    l3 = B.list(t)  # a list from a traced tuple
    return (
        np.sum(l[1] * t[1])
        + np.sum(d["b"][0] * d2["c"])
        + np.sum(d3["r"] * d3["q"])
        + np.sum(t2[0] * l[0])
        + np.sum(l2[0]) * l[2]
        + np.sum(d4["a"] * l3[1])
    )


def nested_three_deep(B, np, x):
    # x = [ (A, {"k": [B, s]}), {"z": (C, t)} ]
    first, second = x
    A, inner = first
    Bm, s = inner["k"]
    C, t = second["z"]
    return np.sum(np.tanh(A @ Bm)) * s + np.sum(C * C) * t + np.sum(x[0][1]["k"][0]) * x[1]["z"][1] + s * t


def container_output_then_reduce(B, np, x):
    # a function whose intermediate is a container built from a container
    pairs = B.list([(x["w"] * 2.0, x["b"]), (x["w"], x["b"] * x["b"])])
    total = 0.0
    for w, b in pairs:
        total = total + np.sum(w * b)
    return total


CASES = [
    ("list_index_iter", list_index_iter, [R(3), R(3), 0.7]),
    ("list_slices", list_slices, [R(2, 2), R(2, 2), R(2, 2), R(2, 2)]),
    ("list_concat", list_concat, [R(3), R(3), 1.3]),
    ("list_membership", list_membership, [0.9, 0.4, R(2)]),
    ("tuple_ops", tuple_ops, (R(3), R(3), 0.4)),
    ("dict_methods", dict_methods, {"w": R(3), "v": R(3), "s": 0.8}),
    ("constructors", constructors, R(3)),
    ("nested_three_deep", nested_three_deep, [(R(2, 3), {"k": [R(3, 2), 0.6]}), {"z": (R(4), -0.3)}]),
    ("container_output_then_reduce", container_output_then_reduce, {"w": R(2), "b": R(2)}),
]
IDS = [c[0] for c in CASES]


def _bind(fun, B, np):
    f = functools.partial(fun, B, np)
    f.__name__ = fun.__name__
    return f


def _fresh(x):
    return copy.deepcopy(x)


def assert_same_structure(x, g, path="x"):
    """``g`` has exactly the containers of ``x`` (types, lengths, keys), and leaves of the
    same shape."""
    if isinstance(x, (list, tuple, dict)):
        assert type(g) is type(x), f"{path}: gradient is a {type(g).__name__}, input a {type(x).__name__}"
        assert len(g) == len(x), f"{path}: gradient has {len(g)} entries, input {len(x)}"
        if isinstance(x, dict):
            assert list(g) == list(x), f"{path}: keys {list(g)} vs {list(x)}"
            for k in x:
                assert_same_structure(x[k], g[k], f"{path}[{k!r}]")
        else:
            for i, (a, b) in enumerate(zip(x, g)):
                assert_same_structure(a, b, f"{path}[{i}]")
    else:
        assert onp.shape(g) == onp.shape(x), f"{path}: shape {onp.shape(g)} vs {onp.shape(x)}"
        assert onp.result_type(g) == onp.result_type(x), f"{path}: dtype {onp.result_type(g)}"


def _leaves_unchanged(a, b, path):
    assert onp.array_equal(a, b), f"{path} changed: {a!r} -> {b!r}"


def assert_tree_identical(a, b, path="x", check_leaves=_leaves_unchanged):
    """Same structure (container types, lengths, keys) and leaves that pass ``check_leaves``
    (by default bitwise-equal values: used to detect mutation)."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            assert_tree_identical(a[k], b[k], f"{path}[{k!r}]", check_leaves)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (u, v) in enumerate(zip(a, b)):
            assert_tree_identical(u, v, f"{path}[{i}]", check_leaves)
    else:
        check_leaves(a, b, path)


@pytest.mark.parametrize("name,fun,x", CASES, ids=IDS)
def test_check_grads(name, fun, x, ag, np, B):
    f = _bind(fun, B, np)
    check_grads(f, _fresh(x), order=2, module=ag)


@pytest.mark.parametrize("name,fun,x", CASES, ids=IDS)
def test_structure_and_no_mutation(name, fun, x, ag, np, B):
    f = _bind(fun, B, np)
    x_in = _fresh(x)
    snapshot = _fresh(x)
    leaves_before = [id(v) for v in tree_leaves(x_in)]
    g = ag.grad(f)(x_in)
    assert_same_structure(x, g)
    assert_tree_identical(x_in, snapshot)  # nothing changed in the input
    assert [id(v) for v in tree_leaves(x_in)] == leaves_before  # nor replaced inside it
    # gradient leaves are fresh arrays: none shares memory with the input or each other
    leaves = [v for v in tree_leaves(g) if isinstance(v, onp.ndarray)]
    for v in leaves:
        for u in tree_leaves(x_in):
            assert not (isinstance(u, onp.ndarray) and onp.shares_memory(u, v))
    for i in range(len(leaves)):
        for j in range(i):
            assert not onp.shares_memory(leaves[i], leaves[j])
    # a second call gives the same gradient (no state kept from the first)
    g2 = ag.grad(f)(x_in)
    assert max_relative_error(g2, g) == 0.0


@pytest.mark.parametrize("name,fun,x", CASES, ids=IDS)
def test_matches_autograd(name, fun, x, ag, np, B, ref):
    f = _bind(fun, B, np)
    f_ref = _bind(fun, ref.module.builtins, ref.np)
    v, g = ag.value_and_grad(f)(_fresh(x))
    v_ref, g_ref = ref.value_and_grad(f_ref)(_fresh(x))
    assert onp.allclose(v, v_ref, rtol=1e-12, atol=0)
    assert max_relative_error(g, g_ref) < 1e-12
    assert_same_structure(g_ref, g)


@pytest.mark.parametrize("name,fun,x", CASES, ids=IDS)
def test_second_order_matches_autograd(name, fun, x, ag, np, B, ref):
    # gradient of <grad f(x), u> w.r.t. x (a Hessian-vector product through containers)
    u = tree_randn(x, onp.random.RandomState(3))

    def hvp(module, nmp, builtins_module):
        f = _bind(fun, builtins_module, nmp)

        def inner(y):
            gy = module.grad(f)(y)
            return sum(nmp.sum(a * b) for a, b in zip(tree_leaves_traced(gy, builtins_module), tree_leaves(u)))

        return module.grad(inner)(_fresh(x))

    h = hvp(ag, np, B)
    h_ref = hvp(ref.module, ref.np, ref.module.builtins)
    assert_same_structure(x, h)
    assert max_relative_error(h, h_ref) < 1e-10


def tree_leaves_traced(tree, B):
    """Leaves of a (possibly traced) container tree, in the order of gradcheck.tree_leaves."""
    if B.isinstance(tree, dict):
        return [leaf for k in sorted(tree.keys(), key=repr) for leaf in tree_leaves_traced(tree[k], B)]
    if B.isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in tree_leaves_traced(item, B)]
    return [tree]


# ---------------------------------------------------------------------------------------
# Cotangents: the VJP returns the input's structure and leaves the cotangent alone.


@pytest.mark.parametrize(
    "x",
    [
        [R(2), 1.5, (R(3), {"a": 0.5})],
        (R(2), [0.1, R(1, 2)]),
        {"p": R(2), "q": [0.2, (R(2),)]},
    ],
    ids=["list", "tuple", "dict"],
)
def test_vjp_of_identity_like_function(x, ag, np):
    # f returns a container built from the input's elements; its VJP must return a fresh
    # container of the input's structure and never alias or modify the cotangent given.
    def f(y):
        return y

    vjp, ans = ag.make_vjp(f)(_fresh(x))
    u = tree_randn(x, onp.random.RandomState(0))
    u_copy = _fresh(u)
    g = vjp(u)
    assert_same_structure(x, g)
    assert_tree_identical(u, u_copy)
    assert max_relative_error(g, u) == 0.0


@pytest.mark.parametrize("kind", ["list", "tuple", "dict"])
def test_gradient_of_shared_cotangent_is_not_aliased(kind, ag, np):
    # x[0] + x[1] hands the same cotangent object to both elements; the two gradient
    # entries must still be independent arrays, and the seed must not be modified.
    keys = {"list": [0, 1], "tuple": [0, 1], "dict": ["a", "b"]}[kind]
    a, b = R(3), R(3)
    x = {"list": [a, b], "tuple": (a, b), "dict": {"a": a, "b": b}}[kind]

    def f(y):
        return y[keys[0]] + y[keys[1]]

    vjp, _ = ag.make_vjp(f)(x)
    u = R(3)
    u_copy = u.copy()
    g = vjp(u)
    assert type(g) is type(x)
    assert onp.array_equal(g[keys[0]], u) and onp.array_equal(g[keys[1]], u)
    assert not onp.shares_memory(g[keys[0]], g[keys[1]])
    assert not onp.shares_memory(g[keys[0]], u)
    assert onp.array_equal(u, u_copy)
    first = g[keys[0]]
    first += 1.0  # the caller may write into its gradient
    assert onp.array_equal(g[keys[1]], u) and onp.array_equal(u, u_copy)


def test_repeated_indexing_accumulates(ag, np):
    # many reads of the same elements: gradient entries are sums over all uses
    def f(x):
        s = 0.0
        for i in range(50):
            s = s + np.sum(x[i % 3] * x[(i + 1) % 3]) * x[3]
        return s

    x = [R(2), R(2), R(2), 0.3]
    check_grads(f, x, order=2, module=ag)


def test_float32_elements_keep_their_dtype(ag, np):
    x = {"a": R(3).astype(onp.float32), "b": (R(3).astype(onp.float32), 0.5)}

    def f(y):
        return np.sum(y["a"] * y["b"][0]) * y["b"][1] + np.sum(y["a"])

    g = ag.grad(f)(x)
    assert g["a"].dtype == onp.float32 and g["b"][0].dtype == onp.float32
    assert onp.result_type(g["b"][1]) == onp.float64
    assert onp.allclose(g["a"], x["b"][0] * 0.5 + 1, rtol=1e-6)


def test_unused_elements_get_zero_gradients(ag, np):
    x = [R(2), 0.5, {"a": R(3), "b": 2.0}, (R(1),)]
    g = ag.grad(lambda y: np.sum(y[0] ** 2))(x)
    assert_same_structure(x, g)
    assert onp.allclose(g[0], 2 * x[0])
    for leaf in tree_leaves([g[1], g[2], g[3]]):
        assert onp.all(onp.asarray(leaf) == 0.0)


# ---------------------------------------------------------------------------------------
# W3 (PERF.md): gradient w.r.t. a list of (W, b) tuples.


def test_w3_matches_autograd(ag, np, ref):
    from workloads import make_case

    fun, args, argnum = make_case("W3", np)
    fun_ref, args_ref, _ = make_case("W3", ref.np)
    params = args[0]
    snapshot = _fresh(params)
    g = ag.grad(fun, argnum)(*args)
    g_ref = ref.grad(fun_ref, argnum)(*args_ref)
    assert_same_structure(params, g)
    assert type(g) is list and all(type(layer) is tuple for layer in g)
    assert max_relative_error(g, g_ref) < 1e-10
    assert_tree_identical(params, snapshot)


def test_w3_check_grads(ag, np):
    from workloads import make_case

    fun, args, argnum = make_case("W3", np)
    small = [(R(3, 4), R(4)), (R(4, 1), R(1))]
    check_grads(fun, small, R(5, 3), R(5, 1), argnums=0, order=2, module=ag)


# ---------------------------------------------------------------------------------------
# Forward mode through containers.


@FG_ONLY  # autograd has no JVP for sequence concatenation
def test_forward_mode_through_containers(ag, np, B):
    def f(x):
        t = B.tuple([x, np.sin(x)]) + (x * 3.0,)
        d = B.dict(a=t[1], b=t[2])
        return B.list([d["a"] * d["b"], t[0]])

    x = R(3)
    v = R(3)
    y, tangent = ag.make_jvp(f)(x)(v)
    assert type(y) is list and type(tangent) is list
    assert onp.allclose(tangent[0], (onp.cos(x) * 3 * x + onp.sin(x) * 3.0) * v)
    assert onp.allclose(tangent[1], v)


def test_forward_mode_wrt_container(ag, np):
    def f(x):
        a, (b, c) = x
        return np.sum(a * b) * c

    x = [R(2), (R(2), 0.7)]
    v = [R(2), (R(2), 0.3)]
    _, t = ag.make_jvp(f)(x)(v)
    a, (b, c) = x
    da, (db, dc) = v
    expected = (onp.sum(da * b) + onp.sum(a * db)) * c + onp.sum(a * b) * dc
    assert onp.allclose(t, expected)


@FG_ONLY
def test_forward_over_reverse_through_containers(ag, np, B):
    # Hessian-vector product as the JVP of the gradient (needs the JVPs of accumulation)
    def f(x):
        return np.sum(x[0] ** 2 * x[1]) + np.sum(np.sin(x[0]))

    x = [R(3), R(3)]
    v = [R(3), R(3)]
    _, hv = ag.make_jvp(ag.grad(f))(x)(v)
    a, b = x
    va, vb = v
    expected = [(2 * b - onp.sin(a)) * va + 2 * a * vb, 2 * a * va]
    assert type(hv) is list
    assert max_relative_error(hv, expected) < 1e-12


# ---------------------------------------------------------------------------------------
# SequenceBox / DictBox behaviour under tracing.


def test_sequence_box_protocol(ag, np, B):
    seen = {}

    def f(x):
        seen["len"] = len(x)
        seen["contains"] = x[0] in x
        seen["index"] = x.index(x[0])
        seen["reversed"] = [B.type(v) for v in reversed(x)]
        seen["isinstance"] = (
            B.isinstance(x, list),
            B.isinstance(x, B.list),
            isinstance(x, B.list),
            B.isinstance(x[1], np.ndarray),
            B.isinstance(x[1], (int, onp.ndarray)),
            B.isinstance(x, tuple),
        )
        seen["type"] = (B.type(x), B.type(x[1]), B.type(x[0]))
        return np.sum(x[1]) * x[0]

    x = [0.5, R(2), R(3)]
    g = ag.grad(f)(x)
    assert onp.allclose(g[0], onp.sum(x[1])) and onp.allclose(g[1], 0.5) and onp.all(g[2] == 0)
    assert seen["len"] == 3
    assert seen["contains"] is True
    assert seen["index"] == 0
    assert seen["reversed"] == [onp.ndarray, onp.ndarray, float]
    assert seen["isinstance"] == (True, True, True, True, True, False)
    assert seen["type"] == (list, onp.ndarray, float)


def test_dict_box_protocol(ag, np, B):
    seen = {}

    def f(d):
        seen["len"] = len(d)
        seen["iter"] = list(d)
        seen["in"] = ("a" in d, "zz" in d)
        seen["keys"] = list(d.keys())
        seen["items_keys"] = [k for k, _ in d.items()]
        seen["get_default"] = d.get("zz", 7.0)
        seen["isinstance"] = (B.isinstance(d, dict), isinstance(d, B.dict), B.type(d))
        return np.sum(d.get("a")) + sum(np.sum(v) for v in d.values())

    d = {"a": R(2), "b": R(3)}
    g = ag.grad(f)(d)
    assert seen == {
        "len": 2,
        "iter": ["a", "b"],
        "in": (True, False),
        "keys": ["a", "b"],
        "items_keys": ["a", "b"],
        "get_default": 7.0,
        "isinstance": (True, True, dict),
    }
    assert onp.allclose(g["a"], 2.0) and onp.allclose(g["b"], 1.0)


def test_isinstance_and_type_on_plain_values(B, np):
    assert B.isinstance((1,), B.tuple) and isinstance((1,), B.tuple)
    assert not isinstance([1], B.tuple) and isinstance([1], B.list)
    assert isinstance({}, B.dict) and not isinstance([], B.dict)
    assert B.isinstance(onp.ones(2), onp.ndarray)
    assert B.isinstance(1.0, (int, float)) and not B.isinstance(1.0, (int, str))
    assert B.type(onp.ones(2)) is onp.ndarray and B.type(1.0) is float
    assert B.type("C", (), {}).__name__ == "C"  # three-argument form still makes classes
    # the constructors return plain builtins for plain values
    assert type(B.list([1.0, 2.0])) is list and B.list((1.0, 2.0)) == [1.0, 2.0]
    assert type(B.tuple([1.0])) is tuple and B.tuple([1.0]) == (1.0,)
    assert type(B.dict(a=1.0)) is dict and B.dict([("a", 1.0)], b=2.0) == {"a": 1.0, "b": 2.0}
    assert B.tuple(x for x in range(3)) == (0, 1, 2)


@FG_ONLY
def test_constructors_without_arguments_and_subclass_checks(B):
    # autograd 1.9.1 raises TypeError for list() and tuple() with no argument
    assert B.list() == [] and type(B.list()) is list
    assert B.tuple() == () and type(B.tuple()) is tuple
    assert B.dict() == {} and type(B.dict()) is dict
    assert issubclass(tuple, B.tuple) and issubclass(list, B.list) and issubclass(dict, B.dict)
    assert not issubclass(list, B.tuple)


def test_box_results_of_constructors_are_traced(ag, np, B):
    def f(x):
        l = B.list([x, 2.0 * x])
        t = B.tuple(l)
        d = B.dict(a=x)
        assert isinstance(l, B.list) and isinstance(t, B.tuple) and isinstance(d, B.dict)
        assert not B.isinstance(l, tuple) and B.isinstance(t, tuple)
        return l[1] * t[0] + d["a"]

    assert onp.allclose(ag.grad(f)(1.5), 2 * 2 * 1.5 + 1)


@FG_ONLY
def test_sequence_repetition_and_conversions(ag, np, B):
    def f(x):
        r = x * 2  # [a, b, a, b]
        r2 = 3 * x[:1]  # [a, a, a]
        t = B.tuple(x)
        assert B.type(r) is list and len(r) == 4 and len(r2) == 3
        assert B.type(t) is tuple and B.type(B.list(x)) is list
        return np.sum(r[0] * r[3]) + np.sum(r[2]) + np.sum(r2[2] * t[1])

    x = [R(2), R(2)]
    check_grads(f, x, order=2, module=ag)
    a, b = x
    g = ag.grad(f)(x)
    assert onp.allclose(g[0], b + 1 + x[1]) and onp.allclose(g[1], a + a)


@FG_ONLY
def test_constructors_trace_nested_plain_containers(ag, np, B):
    # autograd leaves the inner tuple/dict as constants holding boxes (the gradient leaks boxes)
    def f(x):
        p = B.list([x, (x * 2.0, {"k": x**2, "c": 1.0})])
        a, (b, d) = p
        q = B.dict(u=[x, 3.0], v=(b,))
        t = B.tuple([(a, b), [d["k"]]])
        return np.sin(a) * b * d["k"] + p[1][1]["k"] ** 2 + q["u"][0] * q["v"][0] + t[0][1] * t[1][0] + d["c"]

    x = 0.7
    expected = 6 * x**2 * onp.sin(x) + 2 * x**3 * onp.cos(x) + 4 * x**3 + 4 * x + 6 * x**2
    assert onp.allclose(ag.grad(f)(x), expected)
    check_grads(f, x, order=3, module=ag)
    assert B.traced_container([1.0, (2.0,)]) == [1.0, (2.0,)]


@FG_ONLY
def test_sequence_concat_type_errors(ag, np):
    def f(x):
        with pytest.raises(TypeError):
            x + (1.0,)  # list + tuple, like the builtin
        with pytest.raises(TypeError):
            (1.0,) + x
        return np.sum(x[0])

    ag.grad(f)([R(2)])


# ---------------------------------------------------------------------------------------
# Vector spaces of containers.


def test_container_vspaces(ag):
    core = import_target("core")
    x = [R(2), (0.5, {"a": R(3), "b": R(1, 2)})]
    vs = core.vspace(x)
    assert vs.size == 2 + 1 + 3 + 2
    assert vs == core.vspace(_fresh(x))
    assert vs != core.vspace([R(2), [0.5, {"a": R(3), "b": R(1, 2)}]])  # tuple vs list inside
    assert vs != core.vspace([R(3), (0.5, {"a": R(3), "b": R(1, 2)})])  # shape differs
    z = vs.zeros()
    assert_same_structure(x, z)
    assert all(onp.all(onp.asarray(v) == 0) for v in tree_leaves(z))
    o = vs.ones()
    assert all(onp.all(onp.asarray(v) == 1) for v in tree_leaves(o))
    basis = list(vs.standard_basis())
    assert len(basis) == 8
    total = sum(onp.concatenate([onp.ravel(v) for v in tree_leaves(b)]) for b in basis)
    assert onp.array_equal(total, onp.ones(8))
    y = tree_randn(x, onp.random.RandomState(1))
    x_copy, y_copy = _fresh(x), _fresh(y)
    s = vs.add(x, y)
    assert_same_structure(x, s)
    assert max_relative_error(s, tree_map(lambda a, b: a + b, x, y)) < 1e-15
    assert onp.isclose(
        vs.inner_prod(x, y),
        sum(onp.sum(onp.asarray(a) * onp.asarray(b)) for a, b in zip(tree_leaves(x), tree_leaves(y))),
    )
    m = vs.scalar_mul(x, 3.0)
    assert max_relative_error(m, tree_map(lambda a: 3.0 * onp.asarray(a), x)) < 1e-15
    assert_tree_identical(x, x_copy)
    assert_tree_identical(y, y_copy)


@pytest.mark.parametrize("x", [[], (), {}], ids=["list", "tuple", "dict"])
def test_empty_containers(x, ag, np):
    z = R(2)
    g = ag.grad(lambda y, z: np.sum(z**2) * (len(y) + 1), 1)(x, z)
    assert onp.allclose(g, 2 * z)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the output does not depend on the input
        g0 = ag.grad(lambda y, z: np.sum(z**2) * (len(y) + 1), 0)(x, z)
    assert type(g0) is type(x) and len(g0) == 0
    core = import_target("core")
    assert core.vspace(x).size == 0
    assert core.vspace(x).zeros() == x


# ---------------------------------------------------------------------------------------
# Beyond autograd: named tuples and OrderedDict.

Pair = collections.namedtuple("Pair", ["w", "b"])


@FG_ONLY
def test_namedtuple_input_output(ag, np, B):
    B.register_container_type(Pair)  # (automatic once the engine looks up base types)

    def f(p):
        assert B.isinstance(p, Pair) and p._fields == ("w", "b")
        q = p + (3.0,)  # namedtuple + tuple -> plain tuple, like the builtin
        return np.sum(p.w * p[1]) * q[2] + np.sum(q[0])

    x = Pair(R(3), R(3))
    g = ag.grad(f)(x)
    assert type(g) is Pair
    assert onp.allclose(g.w, 3 * x.b + 1) and onp.allclose(g.b, 3 * x.w)
    check_grads(f, x, order=2, module=ag)

    # a named tuple as output: the VJP takes and returns named tuples
    vjp, ans = ag.make_vjp(lambda p: p)(x)
    assert type(ans) is Pair
    u = Pair(R(3), R(3))
    g = vjp(u)
    assert type(g) is Pair and max_relative_error(g, u) == 0.0


@FG_ONLY
def test_ordereddict_input(ag, np):
    x = collections.OrderedDict([("z", R(2)), ("a", 0.5)])

    def f(d):
        return np.sum(d["z"] ** 2) * d["a"]

    g = ag.grad(f)(x)
    assert type(g) is collections.OrderedDict and list(g) == ["z", "a"]
    assert onp.allclose(g["z"], 2 * x["z"] * x["a"]) and onp.allclose(g["a"], onp.sum(x["z"] ** 2))
    check_grads(f, x, order=2, module=ag)


@FG_ONLY
def test_nested_namedtuple_and_ordereddict(ag, np, B):
    B.register_container_type(Pair)
    x = [
        collections.OrderedDict([("l1", Pair(R(2), 0.5)), ("l2", (R(2), (R(2), Pair(R(1), 1.5))))]),
        Pair({"u": R(3)}, [0.25, R(2)]),
    ]

    def f(y):
        od, p = y
        l1 = od["l1"]
        a, (b, q) = od["l2"]
        total = np.sum(l1.w**2) * l1.b + np.sum(a * b) * q.b + np.sum(q.w)
        for v in od.values():
            total = total + np.sum(v[0])
        return total + np.sum(p.w["u"]) * p.b[0] + np.sum(p[1][1] ** 3) + y[0]["l2"][1][1].b

    g = ag.grad(f)(x)
    assert type(g) is list and type(g[0]) is collections.OrderedDict and list(g[0]) == ["l1", "l2"]
    assert type(g[0]["l1"]) is Pair and type(g[0]["l2"]) is tuple and type(g[0]["l2"][1][1]) is Pair
    assert type(g[1]) is Pair and type(g[1].w) is dict and type(g[1].b) is list
    check_grads(f, x, order=2, module=ag)


@FG_ONLY
def test_linalg_result_types_are_containers(ag, np):
    core = import_target("core")
    res = onp.linalg.eigh(onp.eye(2))
    vs = core.vspace(res)
    z = vs.zeros()
    assert type(z) is type(res) and vs.size == 2 + 4
    assert onp.array_equal(z.eigenvectors, onp.zeros((2, 2)))
    # differentiable as an input, attribute access on the traced value included
    g = ag.grad(lambda r: np.sum(r.eigenvalues * r[1][0]))(res)
    assert type(g) is type(res)
    assert onp.allclose(g.eigenvalues, res.eigenvectors[0])
    assert onp.allclose(g.eigenvectors, onp.stack([res.eigenvalues, onp.zeros(2)]))


@FG_ONLY
def test_linalg_result_named_tuples(ag, np):
    A = R(3, 3)
    A = A + A.T

    def f(a):
        res = np.linalg.eigh(a)
        w, v = res  # unpacking
        return np.sum(res.eigenvalues**2) + np.sum(res[0]) + np.sum(w * 0.5)

    # numpy's eigh reads only the lower triangle, so the exact gradient (autograd's too)
    # lives there: the off-diagonal part of E = 2A + 1.5I appears twice in the lower triangle
    E = 2 * A + 1.5 * onp.eye(3)
    expected = 2 * onp.tril(E, -1) + onp.diag(onp.diag(E))
    assert onp.allclose(ag.grad(f)(A), expected)


# ---------------------------------------------------------------------------------------
# Containers of float64 arrays only (a model's parameters): fastgrad traces them leaf by
# leaf (each array on a root of its own, element reads record nothing).  Same cases, with
# every float made a 0-d array, so that path runs; it must give what the general one gives.


def _floats_as_arrays(x):
    return tree_map(lambda v: onp.array(v) if isinstance(v, float) else v, x)


ARRAY_CASES = [(name, fun, _floats_as_arrays(x)) for name, fun, x in CASES if isinstance(x, (list, tuple, dict))]
ARRAY_IDS = [c[0] for c in ARRAY_CASES]


def _splitters():
    return import_target("core").input_splitters


@pytest.mark.parametrize("name,fun,x", ARRAY_CASES, ids=ARRAY_IDS)
def test_array_containers_check_grads(name, fun, x, ag, np, B):
    check_grads(_bind(fun, B, np), _fresh(x), order=2, module=ag)


@pytest.mark.parametrize("name,fun,x", ARRAY_CASES, ids=ARRAY_IDS)
def test_array_containers_match_autograd(name, fun, x, ag, np, B, ref):
    v, g = ag.value_and_grad(_bind(fun, B, np))(_fresh(x))
    v_ref, g_ref = ref.value_and_grad(_bind(fun, ref.module.builtins, ref.np))(_fresh(x))
    assert onp.allclose(v, v_ref, rtol=1e-12, atol=0)
    assert max_relative_error(g, g_ref) < 1e-12
    assert_same_structure(g_ref, g)


def _same_gradient_leaf(a, b, path):
    assert a.shape == b.shape and a.dtype == b.dtype, path
    # the same terms, summed in the same order except where a container used whole adds
    # into an element that is also read on its own
    assert onp.allclose(a, b, rtol=1e-14, atol=1e-15), f"{path}: {a!r} vs {b!r}"
    assert a.flags.writeable and b.flags.writeable, f"{path} is read-only"


SPLIT_EXTRA_CASES = [
    # whole-container uses: the container's own root receives a cotangent too
    ("stacked_whole", lambda B, np, x: np.sum(np.array(x) ** 2) + np.sum(x[0] * x[2]), [R(3), R(3), R(3)]),
    ("slice_and_index", lambda B, np, x: np.sum(x[1:][0] * x[0]) + np.sum(x[-1][1] ** 3), [R(2), R(2), (R(2), R(2))]),
    ("concat_whole", lambda B, np, x: np.sum((x + [x[0]])[2] * x[0]) + np.sum(B.list(x)[1]), [R(2), R(2)]),
    # the same array object at two positions: two independent gradient entries
    ("same_object_twice", lambda B, np, x: np.sum(x[0] * 3.0) + np.sum(x[1] ** 2), [onp.linspace(0.1, 1.0, 4)] * 2),
    (
        "unused_and_nested_dict",
        lambda B, np, x: np.sum(x["a"]["w"] @ x["a"]["v"]),
        {"a": {"w": R(2, 3), "v": R(3), "unused": R(2)}, "b": (R(1),)},
    ),
    ("zero_d_leaves", lambda B, np, x: x[0] * x[1] + np.sin(x[0]), (onp.array(0.3), onp.array(2.0))),
]


@FG_ONLY
@pytest.mark.parametrize(
    "name,fun,x", ARRAY_CASES + SPLIT_EXTRA_CASES, ids=ARRAY_IDS + [c[0] for c in SPLIT_EXTRA_CASES]
)
def test_leaf_by_leaf_tracing_gives_the_general_paths_gradient(name, fun, x, ag, np, B, monkeypatch):
    f = _bind(fun, B, np)
    taken = []
    splitters = _splitters()
    splitter = splitters[type(x)]

    def spy(x_):
        made = splitter(x_)
        taken.append(made is not None)
        return made

    monkeypatch.setitem(splitters, type(x), spy)
    x_in, snapshot = _fresh(x), _fresh(x)
    v, g = ag.value_and_grad(f)(x_in)
    assert taken == [True]  # the leaf-by-leaf path ran
    monkeypatch.delitem(splitters, type(x))
    v_general, g_general = ag.value_and_grad(f)(_fresh(x))
    assert v == v_general
    assert_tree_identical(g_general, g, "g", _same_gradient_leaf)
    assert_tree_identical(x_in, snapshot)
    leaves = tree_leaves(g)
    for i in range(len(leaves)):
        assert not any(onp.shares_memory(leaves[i], u) for u in tree_leaves(x_in))
        for j in range(i):
            assert not onp.shares_memory(leaves[i], leaves[j])
    check_grads(f, _fresh(x), order=2, module=ag)


@FG_ONLY
def test_leaf_by_leaf_boxes_look_like_container_boxes(ag, np, B):
    tracer = import_target("tracer")
    x = [(R(2, 2), R(2)), {"s": onp.array(1.5)}]
    seen = {}

    def f(p):
        seen["types"] = (type(p).__name__, type(p[0]).__name__, type(p[1]).__name__)
        seen["boxes"] = (
            isinstance(p, B.SequenceBox),
            isinstance(p[1], B.DictBox),
            tracer.isbox(p),
            tracer.getval(p) is x,
        )
        seen["len"] = (len(p), len(p[0]), len(p[1]))
        seen["keys"] = (list(p[1]), list(p[1].keys()), p[1].get("missing", "dflt"))
        seen["str"] = str(p)[:21]
        with pytest.raises(IndexError):
            p[2]
        with pytest.raises(KeyError):
            p[1]["missing"]
        W, b = p[0]
        return np.sum(W @ b) * p[1]["s"] + np.sum(p[-2][-1]) * p[1].get("s")

    g = ag.grad(f)(x)
    assert seen["types"] == ("SequenceBox", "SequenceBox", "DictBox")
    assert seen["boxes"] == (True, True, True, True)
    assert seen["len"] == (2, 2, 1)
    assert seen["keys"] == (["s"], ["s"], "dflt")
    assert seen["str"] == "Autograd SequenceBox "
    W, b = x[0]
    s = float(x[1]["s"])
    assert onp.allclose(g[0][0], s * onp.outer(onp.ones(2), b))
    assert onp.allclose(g[0][1], s * W.sum(axis=0) + s)
    assert onp.allclose(g[1]["s"], onp.sum(W @ b) + onp.sum(b))


def test_gradient_wrt_array_list_inside_an_outer_trace(ag, np):
    # the inner grad's containers hold plain arrays while its function closes over an outer
    # traced value: the arrays' cotangents are traced values of the outer trace
    params = [R(3), R(3)]

    def outer(y):
        g = ag.grad(lambda p: np.sum(np.sin(p[0] * y) * p[1]))(params)
        return np.sum(g[0] * g[1]) + np.sum(g[1] ** 2)

    check_grads(outer, 0.7, order=2, module=ag)


# ---- a vector space with only autograd's public protocol ------------------------------


class _PublicProtocolArray(onp.ndarray):
    """An ndarray subclass a library registers with a vector space of its own."""


@FG_ONLY
def test_sums_into_a_space_with_only_the_public_protocol(ag):
    # autograd's VSpace protocol has no add-at-an-index: adding a cotangent at ``idx`` of a
    # value of such a space must go through zeros and mut_add (it raised AttributeError)
    from fastgrad import builtins
    from fastgrad.extend import VSpace
    from fastgrad.numpy.numpy_vspaces import ArrayVSpace

    class PublicSpace(ArrayVSpace):
        pass

    assert not hasattr(PublicSpace, "_add_at")
    VSpace.register(_PublicProtocolArray, lambda x: PublicSpace(x))
    acc = onp.array([1.0, 2.0, 3.0]).view(_PublicProtocolArray)
    out = builtins._leaf_add_at(acc, 1, 10.0)
    onp.testing.assert_array_equal(out, [1.0, 12.0, 3.0])
    out = builtins._add_at_path([acc.copy(), 0.0], (0, 2), 5.0)
    onp.testing.assert_array_equal(out[0], [1.0, 12.0, 8.0])


def test_second_order_through_lists_of_a_registered_subclass(ag):
    fnp = import_target("numpy")
    ArrayBox = import_target("numpy.numpy_boxes").ArrayBox
    spaces = import_target("numpy.numpy_vspaces")
    VSpace = import_target("extend").VSpace

    class Registered(onp.ndarray):
        pass

    ArrayBox.register(Registered)
    VSpace.register(Registered, lambda x: spaces.ArrayVSpace(x))
    x = onp.array([1.0, 2.0]).view(Registered)

    def f(x):
        xs = [x, fnp.sin(x)]
        return fnp.sum(xs[0] * xs[1]) + fnp.sum(fnp.stack(xs) ** 2) + fnp.sum(fnp.mean(xs, axis=0))

    def second(x):
        return fnp.sum(ag.grad(f)(x))

    x0 = onp.asarray(x)
    # d/dx of f: sin x + x cos x + 2x + 2 sin x cos x + (1 + cos x)/2
    expected = 2 * onp.cos(x0) - x0 * onp.sin(x0) + 2 + 2 * onp.cos(2 * x0) - onp.sin(x0) / 2
    onp.testing.assert_allclose(onp.asarray(ag.grad(second)(x)), expected, rtol=1e-12)


def _rows_as_array_primitive(extend, fnp, B):
    """A library's primitive on a tuple of lists of scalars whose reverse rule gives, for each
    list, an array of its cotangents instead of a list: PennyLane's execution boundary does
    this, and autograd indexes such an array as it is.  The rule is itself differentiable
    (its cotangents are computed with traced operations), so second derivatives pass through
    the traced tuple and lists a second time."""

    @extend.primitive
    def energies(params):  # -> [sum_j sin(p_j) for each list p]
        return onp.array([sum(onp.sin(v) for v in p) for p in params])

    def energies_vjp(ans, params):
        def vjp(g):
            return tuple(g[i] * fnp.cos(fnp.stack(list(p))) for i, p in enumerate(params))

        return vjp

    extend.defvjp(energies, energies_vjp)

    def cost(x):
        params = B.tuple([B.list([x[0], x[1]]), B.list([x[2]])])
        e = energies(params)
        return fnp.sum(e * e) + e[0] * x[2]

    return cost


def test_a_rule_may_give_an_array_as_a_lists_cotangent(ag, np, B):
    cost = _rows_as_array_primitive(import_target("extend"), np, B)
    x = onp.array([0.3, -0.7, 1.1])
    check_grads(cost, x, order=2, modes=("rev",))
    s01, s2 = onp.sin(x[0]) + onp.sin(x[1]), onp.sin(x[2])
    expected = onp.array(
        [(2 * s01 + x[2]) * onp.cos(x[0]), (2 * s01 + x[2]) * onp.cos(x[1]), 2 * s2 * onp.cos(x[2]) + s01]
    )
    onp.testing.assert_allclose(ag.grad(cost)(x), expected, rtol=1e-12)
    hessian = ag.jacobian(ag.grad(cost))(x)
    onp.testing.assert_allclose(hessian, hessian.T, rtol=1e-12)


def test_a_rule_may_give_an_array_as_a_lists_cotangent_same_as_autograd(ag, np, B, ref):
    x = onp.array([0.3, -0.7, 1.1])
    ours = _rows_as_array_primitive(import_target("extend"), np, B)
    theirs = _rows_as_array_primitive(importlib.import_module("autograd.extend"), ref.np, ref.module.builtins)
    onp.testing.assert_allclose(ag.jacobian(ag.grad(ours))(x), ref.jacobian(ref.grad(theirs))(x), rtol=1e-12)
