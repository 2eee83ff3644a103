"""fastgrad.misc: flatten/flatten_func, the optimizers, fixed_point, const_graph/full_graph;
and SciPy being optional (fastgrad works without it, fastgrad.scipy says what to install).
"""

import subprocess
import sys
import textwrap
from collections import OrderedDict, namedtuple

import numpy as onp
import pytest

import gradcheck as gc

pytestmark = pytest.mark.fastgrad_only

import fastgrad  # noqa: E402
import fastgrad.numpy as fnp  # noqa: E402
from fastgrad.misc import const_graph, flatten  # noqa: E402
from fastgrad.misc.fixed_points import fixed_point  # noqa: E402
from fastgrad.misc.flatten import flatten_func  # noqa: E402
from fastgrad.misc.optimizers import adam, rmsprop, sgd  # noqa: E402
from fastgrad.misc.tracers import FullGraphNode, full_graph  # noqa: E402

Pair = namedtuple("Pair", "first second")


def _tree():
    return {"b": 1.5, "a": [onp.arange(3.0), (2.0, onp.ones((2, 2)))], "c": onp.float64(-0.5), "d": onp.array([[4.0]])}


def _assert_tree_equal(x, y):
    assert type(x) is type(y) or (isinstance(x, onp.ndarray) and isinstance(y, onp.ndarray))
    if isinstance(x, dict):
        assert list(x) == list(y)
        for k in x:
            _assert_tree_equal(x[k], y[k])
    elif isinstance(x, (list, tuple)):
        assert len(x) == len(y)
        for a, b in zip(x, y):
            _assert_tree_equal(a, b)
    else:
        assert onp.shape(x) == onp.shape(y)
        assert onp.asarray(x).dtype == onp.asarray(y).dtype
        onp.testing.assert_array_equal(x, y)


# ---- flatten ---------------------------------------------------------------------------
def test_flatten_order_and_round_trip():
    tree = _tree()
    v, unflatten = flatten(tree)
    # dict keys sorted, depth first
    onp.testing.assert_array_equal(v, [0, 1, 2, 2, 1, 1, 1, 1, 1.5, -0.5, 4])
    back = unflatten(v)
    assert list(back) == list(tree)  # the dict keeps its own key order
    _assert_tree_equal(back["a"][0], onp.arange(3.0))
    assert back["b"].shape == () and back["b"] == 1.5  # scalars come back as 0-d arrays
    new = unflatten(v * 2)
    onp.testing.assert_array_equal(new["a"][1][1], 2 * onp.ones((2, 2)))
    assert isinstance(new["a"][1], tuple)


def test_flatten_unflatten_does_not_alias_the_vector():
    v, unflatten = flatten([onp.zeros(2), onp.zeros(3)])
    parts = unflatten(v)
    parts[0][0] = 7.0
    assert v[0] == 0.0


def test_flatten_containers_and_dtypes():
    v, u = flatten([])
    assert v.shape == (0,) and u(v) == []
    v, u = flatten({})
    assert u(v) == {}
    v, u = flatten(OrderedDict([("z", 1.0), ("y", onp.ones(2))]))
    assert type(u(v)) is OrderedDict and list(u(v)) == ["z", "y"]
    v, u = flatten(Pair(onp.ones(2), 3.0))
    assert type(u(v)) is Pair and u(v).second == 3.0
    v, u = flatten([onp.ones(2, dtype=onp.float32), 1.0])
    assert v.dtype == onp.float64
    assert u(v)[0].dtype == onp.float32 and u(v)[1].dtype == onp.float64
    v, u = flatten(onp.ones(3, dtype=onp.float32))
    assert v.dtype == onp.float32
    v, u = flatten([onp.array([1 + 2j]), 1.0])
    assert v.dtype == onp.complex128
    v, u = flatten(onp.ones((2, 3)))
    assert u(v).shape == (2, 3)
    for bad in (3, [1, 2.0], None, onp.arange(3)):
        with pytest.raises(TypeError):
            flatten(bad)


@pytest.mark.parametrize(
    "tree",
    [
        {"w": onp.ones((2, 3)), "b": onp.zeros(3)},
        [onp.arange(4.0).reshape(2, 2), [1.0, (2.0, onp.ones(1))]],
        (onp.linspace(0, 1, 5),),
        {"x": {"y": [1.0, 2.0]}, "a": 0.5},
    ],
)
def test_flatten_matches_autograd(tree, ref):
    from autograd.misc.flatten import flatten as ag_flatten

    v, u = flatten(tree)
    ev, eu = ag_flatten(tree)
    onp.testing.assert_array_equal(v, ev)
    w = onp.random.RandomState(0).randn(v.size)
    _assert_tree_equal(u(w), eu(w))


def test_flatten_is_differentiable():
    tree = {"a": onp.arange(3.0), "b": [2.0, onp.ones((2, 2))]}
    g = fastgrad.grad(lambda t: fnp.sum(flatten(t)[0] ** 2))(tree)
    onp.testing.assert_allclose(g["a"], 2 * onp.arange(3.0))
    onp.testing.assert_allclose(g["b"][0], 4.0)
    onp.testing.assert_allclose(g["b"][1], 2 * onp.ones((2, 2)))
    v, unflatten = flatten(tree)
    g = fastgrad.grad(lambda v: fnp.sum(unflatten(v)["a"] ** 3) + unflatten(v)["b"][0] * 2)(v)
    onp.testing.assert_allclose(g, [0, 3, 12, 2, 0, 0, 0, 0])
    # second order, both directions, against finite differences
    gc.check_grads(lambda t: fnp.sum(flatten(t)[0] ** 3), tree, modes=("rev",), order=2)
    gc.check_grads(lambda v: fnp.sum(fnp.sin(unflatten(v)["b"][1])) * unflatten(v)["a"][1], v, modes=("rev",), order=2)


def test_flatten_func():
    example = {"w": onp.ones(3), "s": 2.0}

    def f(p, scale):
        return fnp.sum(p["w"] ** 2) * p["s"] * scale

    flat_f, unflatten, x = flatten_func(f, example)
    onp.testing.assert_array_equal(x, [2.0, 1, 1, 1])
    assert flat_f(x, 3.0) == f(example, 3.0)
    g = fastgrad.grad(flat_f)(x, 3.0)
    onp.testing.assert_allclose(g, [9.0, 12.0, 12.0, 12.0])
    assert set(unflatten(x)) == {"w", "s"}


# ---- optimizers ------------------------------------------------------------------------
TARGET = {"w": onp.array([1.0, -2.0, 0.5]), "b": 0.3}


def _objective_grad(ag_module, np_module):
    def loss(p, i):
        return np_module.sum((p["w"] - TARGET["w"]) ** 2) + (p["b"] - TARGET["b"]) ** 2 * (1 + 0.01 * i)

    return ag_module.grad(loss)


@pytest.mark.parametrize(
    "name,kw",
    [
        ("sgd", dict(num_iters=50, step_size=0.1, mass=0.8)),
        ("rmsprop", dict(num_iters=40, step_size=0.05)),
        ("adam", dict(num_iters=60, step_size=0.05)),
    ],
)
def test_optimizers_match_autograd(name, kw, ref):
    import autograd.misc.optimizers as ag_opt
    import autograd
    import autograd.numpy as anp

    x0 = {"w": onp.zeros(3), "b": 1.0}
    ours = {"sgd": sgd, "rmsprop": rmsprop, "adam": adam}[name]
    calls = []
    res = ours(_objective_grad(fastgrad, fnp), x0, callback=lambda x, i, g: calls.append((x, i, g)), **kw)
    expected = getattr(ag_opt, name)(_objective_grad(autograd, anp), x0, **kw)
    assert set(res) == {"w", "b"}
    onp.testing.assert_allclose(res["w"], expected["w"], rtol=1e-12)
    onp.testing.assert_allclose(res["b"], expected["b"], rtol=1e-12)
    assert [c[1] for c in calls] == list(range(kw["num_iters"]))
    x, i, g = calls[0]
    assert set(x) == {"w", "b"} and set(g) == {"w", "b"}
    onp.testing.assert_allclose(g["w"], -2 * TARGET["w"])


def test_optimizers_converge_on_a_tree():
    x0 = [onp.zeros(3), (0.0,)]
    target = [onp.array([1.0, 2.0, 3.0]), (-1.0,)]

    def grad(x, i):
        return fastgrad.grad(lambda x: fnp.sum((x[0] - target[0]) ** 2) + (x[1][0] - target[1][0]) ** 2)(x)

    for opt, kw in (
        (sgd, dict(num_iters=500)),
        (rmsprop, dict(num_iters=500, step_size=0.01)),
        (adam, dict(num_iters=2000, step_size=0.01)),
    ):
        res = opt(grad, x0, **kw)
        assert isinstance(res, list) and isinstance(res[1], tuple)
        onp.testing.assert_allclose(res[0], target[0], atol=1e-2)
        onp.testing.assert_allclose(res[1][0], target[1][0], atol=1e-2)


# ---- fixed_point -----------------------------------------------------------------------
def _newton_sqrt(a):
    return lambda x: 0.5 * (x + a / x)


def _dist(x, y):
    return fnp.max(fnp.abs(x - y))


def test_fixed_point_value_and_gradients():
    a = 2.0
    assert abs(fixed_point(_newton_sqrt, a, 1.0, _dist, 1e-12) - onp.sqrt(2.0)) < 1e-12
    g = fastgrad.grad(lambda a: fixed_point(_newton_sqrt, a, 1.0, _dist, 1e-12))(a)
    assert abs(g - 0.5 / onp.sqrt(a)) < 1e-9
    h = fastgrad.grad(fastgrad.grad(lambda a: fixed_point(_newton_sqrt, a, 1.0, _dist, 1e-12)))(a)
    assert abs(h + 0.25 * a**-1.5) < 1e-8
    A = onp.array([2.0, 3.0, 5.0])
    J = fastgrad.jacobian(lambda A: fixed_point(_newton_sqrt, A, onp.ones(3), _dist, 1e-12))(A)
    onp.testing.assert_allclose(J, onp.diag(0.5 / onp.sqrt(A)), atol=1e-9)


def test_fixed_point_matches_autograd(ref):
    from autograd.misc.fixed_points import fixed_point as ag_fixed_point
    import autograd.numpy as anp

    def f(a):
        return lambda x: fnp.tanh(fnp.dot(a, x) + 1.0)

    def af(a):
        return lambda x: anp.tanh(anp.dot(a, x) + 1.0)

    a = 0.3 * onp.random.RandomState(2).randn(3, 3)
    ours = fastgrad.grad(lambda a: fnp.sum(fixed_point(f, a, onp.zeros(3), _dist, 1e-12) ** 2))(a)
    theirs = ref.grad(
        lambda a: anp.sum(ag_fixed_point(af, a, onp.zeros(3), lambda x, y: anp.max(anp.abs(x - y)), 1e-12) ** 2)
    )(a)
    onp.testing.assert_allclose(ours, theirs, rtol=1e-8)


# ---- tracers ---------------------------------------------------------------------------
def test_const_graph_replays_without_running_python_again():
    calls = []

    def f(x, y):
        calls.append(1)
        return fnp.sin(x) * y + fnp.sum(x * x)

    cf = const_graph(f)
    x = onp.array([0.1, 0.2])
    onp.testing.assert_allclose(cf(x, 2.0), f(x, 2.0))
    n = len(calls)
    for k in range(3):
        x2 = onp.array([0.5 + k, -1.0])
        onp.testing.assert_allclose(cf(x2, 3.0 + k), onp.sin(x2) * (3.0 + k) + onp.sum(x2 * x2))
    assert len(calls) == n


def test_const_graph_with_partial_arguments(ref):
    from autograd.misc import const_graph as ag_const_graph
    import autograd.numpy as anp

    ours = const_graph(lambda a, x: fnp.exp(a * x) + a, 2.0)
    theirs = ag_const_graph(lambda a, x: anp.exp(a * x) + a, 2.0)
    for x in (0.1, 0.7, -1.0):
        assert ours(x) == theirs(x)
    with pytest.raises(ValueError), pytest.warns(UserWarning):
        const_graph(lambda x: 3.0)(1.0)


def test_full_graph():
    node = full_graph(lambda x, y: fnp.sin(x) * y, 0.5, 2.0)
    assert isinstance(node, FullGraphNode)
    assert node.value == onp.sin(0.5) * 2.0
    fun, args, kwargs, parents = node.recipe
    assert fun.__name__ == "multiply"
    assert onp.isclose(args[0], onp.sin(0.5)) and args[1] == 2.0
    assert [i for i, _ in parents] == [0, 1]
    sin_node = parents[0][1]
    assert sin_node.recipe[0].__name__ == "sin" and sin_node.value == onp.sin(0.5)


# ---- module layout and SciPy being optional ---------------------------------------------
def test_misc_module_layout():
    import fastgrad.misc
    import fastgrad.misc.fixed_points
    import fastgrad.misc.optimizers
    import fastgrad.misc.tracers

    assert fastgrad.misc.flatten is flatten and callable(fastgrad.misc.flatten)
    assert fastgrad.misc.const_graph is const_graph
    assert "fastgrad.misc.flatten" in sys.modules


def test_scipy_is_optional():
    code = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "scipy" or name.startswith("scipy."):
                    raise ImportError("No module named " + repr(name))
        sys.meta_path.insert(0, Block())
        import fastgrad, fastgrad.numpy as np, fastgrad.misc
        from fastgrad.misc.flatten import flatten_func
        assert abs(fastgrad.grad(lambda x: np.sum(np.sin(x)))(0.0) - 1.0) < 1e-12
        v, u = fastgrad.misc.flatten({"a": 1.0})
        try:
            import fastgrad.scipy
        except ImportError as e:
            print("MESSAGE:", e)
        else:
            raise SystemExit("fastgrad.scipy imported without SciPy")
        assert "scipy" not in sys.modules
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install fastgrad[scipy]" in out.stdout
