"""The differential operators of SPEC §2, against autograd 1.9.1 and against central
differences: higher orders, forward mode, argnum tuples, container inputs and outputs,
Hessian(-vector) products, GGN products, checkpointing, multigrad_dict, stop_gradient.

Forward-mode tests need the JVP rules of the numpy functions they use.
"""

import collections

import numpy as onp
import pytest

from gradcheck import assert_tree_allclose, check_grads

_RS = onp.random.RandomState(11)
X = _RS.randn(4)
V = _RS.randn(4)
A3, B22, C2 = _RS.randn(3), _RS.randn(2, 2), _RS.randn(2)

fastgrad_only = pytest.mark.fastgrad_only


def tanh_derivatives(x):
    """d^k/dx^k tanh(x) for k = 1..4, in closed form."""
    t = onp.tanh(x)
    s = 1 - t**2
    return [s, -2 * t * s, -2 * s * (1 - 3 * t**2), 8 * t * s * (2 - 3 * t**2)]


def three_args(np, a, b, c):
    """A function of a vector, a matrix and a vector, coupling all three."""
    return (
        np.sum(np.sin(a)) * np.sum(b**2) + np.dot(c, np.tanh(np.dot(b, c))) * a[0] + np.sum(np.exp(0.3 * a)) * c[1] ** 3
    )


# ---------------------------------------------------------------------------
# derivatives of any order


def test_grad_of_grad_to_fifth_order(ag, np):
    f = lambda x: np.sin(x) * x
    d = f
    for _ in range(5):
        d = ag.grad(d)
    x = 0.7
    # (x sin x)^(5) = x cos x + 5 sin x
    assert d(x) == pytest.approx(x * onp.cos(x) + 5 * onp.sin(x), rel=1e-12)


def test_fourth_derivative_of_tanh_elementwise_reverse(ag, np, ref):
    x = onp.linspace(-2, 2, 7)
    d = np.tanh
    for k, expected in enumerate(tanh_derivatives(x)):
        d = ag.elementwise_grad(d)
        assert_tree_allclose(d(x), expected, rtol=1e-11, atol=1e-13, what=f"order {k + 1}")
    r = ref.np.tanh
    for _ in range(4):
        r = ref.elementwise_grad(r)
    assert_tree_allclose(d(x), r(x), rtol=1e-12, atol=1e-14)


def test_fourth_derivative_of_tanh_elementwise_forward(ag, np, ref):
    x = onp.linspace(-2, 2, 7)
    d = np.tanh
    for k, expected in enumerate(tanh_derivatives(x)):
        d = ag.deriv(d)
        assert_tree_allclose(d(x), expected, rtol=1e-11, atol=1e-13, what=f"order {k + 1}")
    r = ref.np.tanh
    for _ in range(4):
        r = ref.deriv(r)
    assert_tree_allclose(d(x), r(x), rtol=1e-12, atol=1e-14)


def test_mixed_modes_fourth_derivative_of_tanh(ag, np):
    # forward over reverse over forward over reverse
    d = ag.deriv(ag.elementwise_grad(ag.deriv(ag.elementwise_grad(np.tanh))))
    x = onp.array([-0.4, 0.1, 1.3])
    assert_tree_allclose(d(x), tanh_derivatives(x)[3], rtol=1e-11)


def test_deriv_and_make_jvp(ag, np, ref):
    f = lambda x: np.sin(x) * np.sum(x**2)
    jvp = ag.make_jvp(f)(X)
    value, tangent = jvp(V)
    J = onp.diag(onp.cos(X) * onp.sum(X**2)) + onp.outer(onp.sin(X), 2 * X)
    assert_tree_allclose(value, onp.sin(X) * onp.sum(X**2), rtol=1e-14)
    assert_tree_allclose(tangent, J @ V, rtol=1e-12)
    assert_tree_allclose(ag.deriv(f)(X), J.sum(1), rtol=1e-12)
    rf = lambda x: ref.np.sin(x) * ref.np.sum(x**2)
    assert_tree_allclose(tangent, ref.make_jvp(rf)(X)(V)[1], rtol=1e-13)
    check_grads(f, X, modes=("fwd",), module=ag)


def test_make_jvp_argnum_tuple(ag, np, ref):
    f = lambda x, y, z: np.sin(x) * y + z**2
    v = (V, 2.0 * V)
    value, tangent = ag.make_jvp(f, (0, 2))(X, 3.0, X)(v)
    expected = onp.cos(X) * 3.0 * V + 2 * X * 2.0 * V
    assert_tree_allclose(tangent, expected, rtol=1e-13)
    rf = lambda x, y, z: ref.np.sin(x) * y + z**2
    assert_tree_allclose(tangent, ref.make_jvp(rf, (0, 2))(X, 3.0, X)(v)[1], rtol=1e-13)


def test_forward_over_reverse_is_hvp(ag, np):
    f = lambda x: np.sum(np.tanh(x) ** 2) * np.sum(x)
    _, hv = ag.make_jvp(ag.grad(f))(X)(V)
    H = ag.hessian(f)(X)
    assert_tree_allclose(hv, H @ V, rtol=1e-11)
    assert_tree_allclose(hv, ag.hessian_vector_product(f)(X, V), rtol=1e-11)


def test_reverse_over_forward(ag, np):
    f = lambda x: np.sum(np.sin(x) * x)
    g = ag.grad(lambda x: np.sum(ag.make_jvp(f)(x)(V)[1]))(X)
    H = onp.diag(2 * onp.cos(X) - X * onp.sin(X))
    assert_tree_allclose(g, H @ V, rtol=1e-12)


def test_make_jvp_reversemode(ag, np):
    import importlib

    make_jvp_reversemode = importlib.import_module(ag.__name__ + ".differential_operators").make_jvp_reversemode
    f = lambda x: np.sin(x) * np.sum(x**2)
    J = onp.diag(onp.cos(X) * onp.sum(X**2)) + onp.outer(onp.sin(X), 2 * X)
    assert_tree_allclose(make_jvp_reversemode(f)(X)(V), J @ V, rtol=1e-12)


# ---------------------------------------------------------------------------
# Jacobians and Hessians with argnum tuples and containers (JAX's nested blocks)


@fastgrad_only
def test_hessian_of_three_argument_function_wrt_argnum_tuples(ag, np, ref):
    f = lambda a, b, c: three_args(np, a, b, c)
    args = (A3, B22, C2)
    sizes = [3, 4, 2]
    shapes = [(3,), (2, 2), (2,)]

    def flat(v):  # the same function of one flat vector, for autograd's Hessian
        a, b, c = v[:3], v[3:7].reshape(2, 2), v[7:]
        return three_args(ref.np, a, b, c)

    H_flat = ref.hessian(flat)(onp.concatenate([A3, B22.ravel(), C2]))
    offsets = onp.cumsum([0] + sizes)
    for argnums in [(0, 2), (0, 1, 2), (2, 0), (1,), [2, 1]]:
        H = ag.hessian(f, argnums)(*args)
        assert isinstance(H, tuple) and len(H) == len(argnums)
        for i, row in zip(argnums, H):
            assert isinstance(row, tuple) and len(row) == len(argnums)
            for j, block in zip(argnums, row):
                assert block.shape == shapes[i] + shapes[j]
                expected = H_flat[offsets[i] : offsets[i + 1], offsets[j] : offsets[j + 1]]
                assert_tree_allclose(block, expected.reshape(shapes[i] + shapes[j]), rtol=1e-10, atol=1e-12)
    # a single int argnum still gives a plain array
    assert_tree_allclose(ag.hessian(f, 1)(*args), H_flat[3:7, 3:7].reshape(2, 2, 2, 2), rtol=1e-10, atol=1e-12)


@fastgrad_only
def test_hessian_blocks_match_numerical_jacobian_of_gradient(ag, np):
    f = lambda a, b, c: three_args(np, a, b, c)
    args = (A3, B22, C2)
    H = ag.hessian(f, (0, 2))(*args)
    eps = 1e-6
    for col, j in enumerate((0, 2)):
        x = args[j]
        for idx in onp.ndindex(x.shape):
            step = onp.zeros_like(x)
            step[idx] = eps
            plus = ag.grad(f, (0, 2))(*[a + step if k == j else a for k, a in enumerate(args)])
            minus = ag.grad(f, (0, 2))(*[a - step if k == j else a for k, a in enumerate(args)])
            for row in range(2):
                numeric = (plus[row] - minus[row]) / (2 * eps)
                onp.testing.assert_allclose(H[row][col][(...,) + idx], numeric, rtol=1e-5, atol=1e-7)


@fastgrad_only
def test_jacobian_argnum_tuple_and_container_output(ag, np, ref):
    def f(x, y):
        return ag.tuple([np.sin(x) * y[0], np.sum(y**2) * x])

    x, y = X[:3], _RS.randn(2)
    J = ag.jacobian(f, (0, 1))(x, y)
    assert isinstance(J, tuple) and all(isinstance(r, tuple) and len(r) == 2 for r in J)
    assert [[b.shape for b in r] for r in J] == [[(3, 3), (3, 2)], [(3, 3), (3, 2)]]
    for k in range(2):
        for i in range(2):
            rf = lambda *a: (ref.np.sin(a[0]) * a[1][0], ref.np.sum(a[1] ** 2) * a[0])[k]
            assert_tree_allclose(J[k][i], ref.jacobian(rf, i)(x, y), rtol=1e-13)
    # the same function returning a plain tuple of traced values
    J2 = ag.jacobian(lambda x, y: (np.sin(x) * y[0], np.sum(y**2) * x), (0, 1))(x, y)
    assert_tree_allclose(J2, J, rtol=0)
    check_grads(lambda x, y: ag.jacobian(f, (0, 1))(x, y), x, y, module=ag)


@fastgrad_only
def test_jacobian_of_nested_containers_three_deep(ag, np):
    P = {
        "layers": [(_RS.randn(2, 2), _RS.randn(2)), (_RS.randn(2, 2), _RS.randn(2))],
        "out": {"w": _RS.randn(2), "s": 0.5},
    }

    def net(P, x):
        h = x
        for W, b in P["layers"]:
            h = np.tanh(np.dot(W, h) + b)
        return {"y": np.dot(P["out"]["w"], h) * P["out"]["s"], "h": [h, h**2]}

    x = _RS.randn(2)
    J = ag.jacobian(net)(P, x)
    assert set(J) == {"y", "h"} and isinstance(J["h"], list)
    block = J["h"][1]["layers"][0][0]  # d(h**2)/dW_0: shape (2,) + (2, 2)
    assert block.shape == (2, 2, 2)
    assert J["y"]["out"]["s"].shape == ()
    eps = 1e-6
    for i, j in onp.ndindex(2, 2):
        P_plus = {
            "layers": [
                (P["layers"][0][0] + eps * onp.eye(2)[i][:, None] * onp.eye(2)[j], P["layers"][0][1]),
                P["layers"][1],
            ],
            "out": P["out"],
        }
        P_minus = {
            "layers": [
                (P["layers"][0][0] - eps * onp.eye(2)[i][:, None] * onp.eye(2)[j], P["layers"][0][1]),
                P["layers"][1],
            ],
            "out": P["out"],
        }
        numeric = (net(P_plus, x)["h"][1] - net(P_minus, x)["h"][1]) / (2 * eps)
        onp.testing.assert_allclose(block[:, i, j], numeric, rtol=1e-6, atol=1e-9)
    # the gradient of the scalar part is the "y" block
    g = ag.grad(lambda P, x: net(P, x)["y"])(P, x)
    assert_tree_allclose(J["y"], g, rtol=1e-13)
    check_grads(lambda P, x: net(P, x)["y"], P, x, module=ag)


@fastgrad_only
def test_jacobian_namedtuple_and_ordereddict(ag, np):
    Pair = collections.namedtuple("Pair", "u v")
    J = ag.jacobian(lambda p: Pair(np.sin(p.u) * p.v, p.v**2))(Pair(X[:2], 2.0))
    assert type(J) is Pair and type(J.u) is Pair and type(J.v) is Pair
    assert_tree_allclose(J.u.u, onp.diag(onp.cos(X[:2]) * 2.0), rtol=1e-14)
    assert_tree_allclose(J.u.v, onp.sin(X[:2]), rtol=1e-14)
    assert_tree_allclose(J.v.u, onp.zeros(2))
    assert float(J.v.v) == 4.0
    OD = collections.OrderedDict
    J = ag.jacobian(lambda d: OD([("z", d["y"] * d["x"]), ("w", np.sum(d["x"]))]))(OD([("x", X[:2]), ("y", 3.0)]))
    assert type(J) is OD and list(J) == ["z", "w"] and type(J["z"]) is OD
    assert_tree_allclose(J["z"]["x"], 3.0 * onp.eye(2), rtol=1e-15)
    assert_tree_allclose(J["z"]["y"], X[:2], rtol=1e-15)
    assert_tree_allclose(J["w"]["x"], onp.ones(2))


@fastgrad_only
def test_make_vjp_with_container_output(ag, np):
    vjp, value = ag.make_vjp(lambda x: (np.sin(x), {"s": np.sum(x**2)}))(X)
    assert_tree_allclose(value[0], onp.sin(X))
    g = vjp((V, {"s": 2.0}))
    assert_tree_allclose(g, onp.cos(X) * V + 2.0 * 2 * X, rtol=1e-14)


def test_jacobian_shapes_and_values_vs_autograd(ag, np, ref):
    cases = [
        (lambda n: lambda x: x**2, 3.0),
        (lambda n: lambda x: n.array([x, x**2]), 3.0),
        (lambda n: lambda x: n.sum(x**3), X),
        (lambda n: lambda m: n.dot(m, m.T), B22 + 0.1),
    ]
    for make, arg in cases:
        mine, theirs = ag.jacobian(make(np))(arg), ref.jacobian(make(ref.np))(arg)
        assert onp.shape(mine) == onp.shape(theirs)
        assert_tree_allclose(mine, theirs, rtol=1e-14)


# ---------------------------------------------------------------------------
# Hessian-vector products and friends


def test_hvp_on_1000_dimensional_quadratic(ag, np, ref):
    rs = onp.random.RandomState(3)
    n = 1000
    M = rs.randn(n, n) / onp.sqrt(n)
    b = rs.randn(n)
    x, v = rs.randn(n), rs.randn(n)
    f = lambda x: 0.5 * np.dot(x, np.dot(M, x)) + np.dot(b, x)
    expected = 0.5 * (M + M.T) @ v
    hv = ag.hessian_vector_product(f)(x, v)
    assert hv.shape == (n,)
    assert_tree_allclose(hv, expected, rtol=1e-10, atol=1e-12)
    hvp, g = ag.make_hvp(f)(x)
    assert_tree_allclose(g, 0.5 * (M + M.T) @ x + b, rtol=1e-10, atol=1e-12)
    assert_tree_allclose(hvp(v), expected, rtol=1e-10, atol=1e-12)
    assert_tree_allclose(hvp(2 * v), 2 * expected, rtol=1e-10, atol=1e-12)
    rf = lambda x: 0.5 * ref.np.dot(x, ref.np.dot(M, x)) + ref.np.dot(b, x)
    assert_tree_allclose(hv, ref.hessian_vector_product(rf)(x, v), rtol=1e-12, atol=1e-13)


@pytest.mark.filterwarnings("ignore:Output seems independent of input")
def test_hessian_tensor_product_matrix_argument_vs_autograd(ag, np, ref):
    m = B22 + 0.3
    f = lambda m, s: np.sum(np.tanh(m) ** 3) * s
    t = _RS.randn(2, 2)
    mine = ag.hessian_tensor_product(f)(m, 2.0, t)
    theirs = ref.hessian_tensor_product(lambda m, s: ref.np.sum(ref.np.tanh(m) ** 3) * s)(m, 2.0, t)
    assert_tree_allclose(mine, theirs, rtol=1e-12)
    H = ag.hessian(f)(m, 2.0)
    assert_tree_allclose(mine, onp.tensordot(H, t, 2), rtol=1e-12)
    mine1 = ag.hessian_tensor_product(f, 1)(m, 2.0, 1.5)
    assert float(mine1) == 0.0 or abs(float(mine1)) < 1e-14  # linear in s


@fastgrad_only
def test_hessian_vector_product_argnum_tuple_and_negative(ag, np):
    f = lambda a, c: np.sum(np.sin(a) * c**2)
    a, c = X[:3], V[:3]
    va, vc = _RS.randn(3), _RS.randn(3)
    H = ag.hessian(f, (0, 1))(a, c)
    hv = ag.hessian_vector_product(f, (0, 1))(a, c, (va, vc))
    assert_tree_allclose(hv[0], H[0][0] @ va + H[0][1] @ vc, rtol=1e-12)
    assert_tree_allclose(hv[1], H[1][0] @ va + H[1][1] @ vc, rtol=1e-12)
    # a negative argnum counts from the end of f's arguments, not of (*args, vector)
    assert_tree_allclose(ag.hessian_vector_product(f, -1)(a, c, vc), H[1][1] @ vc, rtol=1e-12)
    assert_tree_allclose(ag.vector_jacobian_product(lambda a, c: a * c, -1)(a, c, va), a * va)


def test_tensor_jacobian_product_vs_autograd(ag, np, ref):
    f = lambda x: np.outer(np.sin(x), x)
    rf = lambda x: ref.np.outer(ref.np.sin(x), x)
    for tensor in [onp.ones(3), _RS.randn(3, 3)]:  # leading axes, then all axes
        mine = ag.tensor_jacobian_product(f)(X[:3], tensor)
        assert_tree_allclose(mine, ref.tensor_jacobian_product(rf)(X[:3], tensor), rtol=1e-13)
    J = ag.jacobian(f)(X[:3])
    t = _RS.randn(3, 3)
    assert_tree_allclose(ag.vector_jacobian_product(f)(X[:3], t), onp.tensordot(t, J, 2), rtol=1e-13)
    assert_tree_allclose(ag.vector_jacobian_product(f)(X[:3], t[0]), onp.tensordot(t[0], J, 1), rtol=1e-13)


def test_make_ggnvp_vs_autograd_and_definition(ag, np, ref):
    W = _RS.randn(3, 4)
    f = lambda x: np.tanh(np.dot(W, x))
    rf = lambda x: ref.np.tanh(ref.np.dot(W, x))
    g4 = lambda y: np.sum(y**4)
    for g, rg in [(None, None), (g4, lambda y: ref.np.sum(y**4))]:
        mine = (ag.make_ggnvp(f) if g is None else ag.make_ggnvp(f, g))(X)(V)
        theirs = (ref.make_ggnvp(rf) if g is None else ref.make_ggnvp(rf, rg))(X)(V)
        assert_tree_allclose(mine, theirs, rtol=1e-12)
    # J^T H_g J v from explicit matrices
    J = ag.jacobian(f)(X)
    Hg = ag.hessian(g4)(f(X))
    assert_tree_allclose(ag.make_ggnvp(f, g4)(X)(V), J.T @ Hg @ J @ V, rtol=1e-11)
    # f_argnum
    f2 = lambda s, x: np.tanh(np.dot(W, x)) * s
    assert_tree_allclose(ag.make_ggnvp(f2, g4, 1)(1.0, X)(V), J.T @ Hg @ J @ V, rtol=1e-11)


def test_holomorphic_grad(ag, np, ref):
    z = 0.3 + 0.8j
    f = lambda z: np.sin(z) * z**2
    expected = onp.cos(z) * z**2 + 2 * z * onp.sin(z)
    assert complex(ag.holomorphic_grad(f)(z)) == pytest.approx(expected, rel=1e-13)
    zs = onp.array([0.1 + 0.2j, -1.0 + 0.5j])
    assert_tree_allclose(ag.holomorphic_grad(lambda z: np.sum(np.exp(z)))(zs), onp.exp(zs), rtol=1e-14)
    rf = lambda z: ref.np.sin(z) * z**2
    assert complex(ag.holomorphic_grad(f)(z)) == pytest.approx(complex(ref.holomorphic_grad(rf)(z)), rel=1e-14)
    with pytest.warns(UserWarning, match="Input to holomorphic_grad is not complex"):
        assert float(ag.holomorphic_grad(lambda x: x**2)(1.5)) == 3.0


# ---------------------------------------------------------------------------
# multigrad_dict, grad_named, stop_gradient


@fastgrad_only
def test_multigrad_dict(ag, np):
    def f(x, y, z=2.0, *rest, scale=1.0, **extra):
        total = np.sum(np.sin(x) * y) * z * scale
        for r in rest:
            total = total + np.sum(r**2)
        for k in extra:
            total = total + extra[k] * 3.0
        return total

    gradient = ag.multigrad_dict(f)
    out = gradient(X, 2.0, 3.0, V, scale=0.5, w=1.5)
    assert isinstance(out, collections.OrderedDict)
    assert list(out) == ["x", "y", "z", "rest", "scale", "extra"]
    assert_tree_allclose(out["x"], onp.cos(X) * 2.0 * 3.0 * 0.5, rtol=1e-14)
    assert float(out["y"]) == pytest.approx(onp.sum(onp.sin(X)) * 1.5, rel=1e-14)
    assert float(out["z"]) == pytest.approx(onp.sum(onp.sin(X)) * 2.0 * 0.5, rel=1e-14)
    assert isinstance(out["rest"], tuple) and len(out["rest"]) == 1
    assert_tree_allclose(out["rest"][0], 2 * V, rtol=1e-15)
    assert float(out["scale"]) == pytest.approx(onp.sum(onp.sin(X)) * 6.0, rel=1e-14)
    assert float(out["extra"]["w"]) == 3.0
    # defaults are included; each entry equals grad w.r.t. that argument
    simple = ag.multigrad_dict(lambda a, b=2.0: a * b**2)(3.0)
    assert list(simple) == ["a", "b"]
    assert float(simple["a"]) == 4.0 and float(simple["b"]) == 12.0


def test_grad_named(ag, np, ref):
    def f(x, W, scale):
        return np.sum(np.tanh(np.dot(W, x))) * scale

    W = _RS.randn(3, 4)
    mine = ag.grad_named(f, "W")(X, W, 2.0)
    assert_tree_allclose(mine, ag.grad(f, 1)(X, W, 2.0), rtol=0)
    rf = lambda x, W, scale: ref.np.sum(ref.np.tanh(ref.np.dot(W, x))) * scale
    assert_tree_allclose(mine, ref.grad_named(rf, "W")(X, W, 2.0), rtol=1e-12, atol=1e-15)
    assert ag.grad_named(f, "W").__name__ == "grad_of_f_wrt_argnum_1"


@fastgrad_only
@pytest.mark.filterwarnings("ignore:Output seems independent of input")
def test_stop_gradient(ag, np):
    f = lambda x: np.sum(x * ag.stop_gradient(x))
    assert_tree_allclose(ag.grad(f)(X), X)  # d/dx (x * const) = const
    h = lambda x: ag.stop_gradient(x) ** 2 + x
    assert float(ag.grad(ag.grad(h))(3.0)) == 0.0  # constant at every order
    g = ag.grad(lambda x: np.sum(ag.stop_gradient([x, (x, {"k": x})])[1][1]["k"] * x))(X)
    assert_tree_allclose(g, X)  # inside containers too
    assert ag.stop_gradient(2.5) == 2.5


# ---------------------------------------------------------------------------
# checkpoint


def _mlp_layer(np, W, h, bias=0.1):
    return np.tanh(np.dot(h, W) + bias)


def test_checkpoint_matches_plain_gradients(ag, np, ref):
    rs = onp.random.RandomState(4)
    Ws = [rs.randn(3, 3) for _ in range(4)]
    x = rs.randn(2, 3)
    layer = lambda W, h: _mlp_layer(np, W, h)
    clayer = ag.checkpoint(layer)

    def net(Ws, x, lay):
        h = x
        for W in Ws:
            h = lay(W, h)
        return np.sum(h**2)

    plain = ag.grad(net, (0, 1))(Ws, x, layer)
    ck = ag.grad(net, (0, 1))(Ws, x, clayer)
    assert_tree_allclose(ck, plain, rtol=1e-14)
    rlayer = ref.checkpoint(lambda W, h: _mlp_layer(ref.np, W, h))
    theirs = ref.grad(lambda Ws, x: net(Ws, x, rlayer), (0, 1))(Ws, x)
    assert_tree_allclose(ck, theirs, rtol=1e-13)


@fastgrad_only
def test_checkpoint_recomputes_in_backward_pass_only(ag, np):
    from fastgrad.tracer import isbox

    seen = []

    def block(a, b):
        seen.append((isbox(a), isbox(b)))
        return np.sin(a) * b

    cblock = ag.checkpoint(block)
    assert cblock.__name__ == "block" and cblock.__wrapped__ is block
    g = ag.grad(lambda a: np.sum(cblock(a, 2.0)))(X)
    assert_tree_allclose(g, 2.0 * onp.cos(X), rtol=1e-15)
    # forward pass: plain values (nothing inside is recorded); backward pass: traced
    assert seen == [(False, False), (True, False)]


@fastgrad_only
def test_checkpoint_keywords_containers_and_argnums(ag, np):
    def block(params, v, scale=1.0):
        W, b = params["W"], params["b"]
        return np.tanh(np.dot(W, v) + b) * scale, [v * 2.0, np.sum(W)]

    cblock = ag.checkpoint(block)
    P = {"W": _RS.randn(4, 4), "b": _RS.randn(4)}

    def loss(P, v, s, blk):
        out, (a, c) = blk(P, v, scale=s)
        return np.sum(out**2) + np.sum(a) * c

    plain = ag.grad(loss, (0, 1, 2))(P, X, 1.5, block)
    ck = ag.grad(loss, (0, 1, 2))(P, X, 1.5, cblock)  # the keyword argument is traced
    assert_tree_allclose(ck, plain, rtol=1e-13)
    # a plain dict holding traced values as the argument
    f = lambda W, v, blk: np.sum(blk({"W": W, "b": v}, v)[0])
    assert_tree_allclose(ag.grad(f, (0, 1))(P["W"], X, cblock), ag.grad(f, (0, 1))(P["W"], X, block), rtol=1e-13)


@fastgrad_only
def test_checkpoint_higher_order_and_nested(ag, np):
    f = lambda a, b: np.sin(a) * b**2
    cf = ag.checkpoint(f)
    gg = ag.grad(ag.grad(lambda t: np.sum(cf(t, t))))(0.7)
    assert gg == pytest.approx(float(ag.grad(ag.grad(lambda t: np.sum(f(t, t))))(0.7)), rel=1e-13)
    H = ag.hessian(lambda t: np.sum(cf(t, 2.0 * t) ** 2))(X)
    assert_tree_allclose(H, ag.hessian(lambda t: np.sum(f(t, 2.0 * t) ** 2))(X), rtol=1e-12)
    outer = ag.checkpoint(lambda a: cf(a, a) * 2.0)
    assert_tree_allclose(
        ag.grad(lambda t: np.sum(outer(t)))(X), ag.grad(lambda t: np.sum(f(t, t) * 2.0))(X), rtol=1e-14
    )
    check_grads(lambda t: np.sum(cf(t, t) ** 2), X, module=ag)


@fastgrad_only
def test_checkpoint_forward_mode(ag, np):
    f = lambda a, b: np.sin(a) * b**2
    cf = ag.checkpoint(f)
    assert_tree_allclose(ag.deriv(lambda t: cf(t, 3.0))(X), 9.0 * onp.cos(X), rtol=1e-14)
    _, hv = ag.make_jvp(ag.grad(lambda t: np.sum(cf(t, t))))(X)(V)
    assert_tree_allclose(hv, ag.hessian(lambda t: np.sum(f(t, t)))(X) @ V, rtol=1e-12)


@fastgrad_only
def test_checkpoint_saves_memory(ag, np):
    # 24 tanh layers; checkpointing blocks of 4 keeps 6 block outputs plus one block's
    # internals instead of every layer's internals (the benchmark measures 50 layers)
    import tracemalloc

    rs = onp.random.RandomState(0)
    Ws = [rs.randn(32, 32) / 6.0 for _ in range(24)]
    x = rs.randn(256, 32)

    def block(Ws, h):
        for W in Ws:
            h = _mlp_layer(np, W, h)
        return h

    cblock = ag.checkpoint(block)

    def net(x, blk):
        h = x
        for i in range(0, len(Ws), 4):
            h = blk(Ws[i : i + 4], h)
        return np.sum(h**2)

    def peak(blk):
        tracemalloc.start()
        try:
            g = ag.grad(net)(x, blk)
            return tracemalloc.get_traced_memory()[1], g
        finally:
            tracemalloc.stop()

    plain_peak, g_plain = peak(block)
    ck_peak, g_ck = peak(cblock)
    assert_tree_allclose(g_ck, g_plain, rtol=1e-13)
    assert plain_peak > 2.0 * ck_peak, (plain_peak, ck_peak)


# ---------------------------------------------------------------------------
# generated names of the operators that build on others (as autograd names them)


def test_names_of_composite_operators(ag, np):
    def f(x, y):
        return x * y

    assert ag.tensor_jacobian_product(f).__name__ == "jacobian_of_vector_dot_fun_wrt_argnum_0"
    assert ag.vector_jacobian_product(f, 1).__name__ == "jacobian_of_vector_dot_fun_wrt_argnum_1"
    assert ag.hessian_tensor_product(f).__name__ == "grad_of_vector_dot_grad_wrt_argnum_0"
    assert ag.hessian_vector_product(f, 1).__name__ == "grad_of_vector_dot_grad_wrt_argnum_1"
    assert ag.make_ggnvp(f).__name__ == "_make_ggnvp_of_f_wrt_argnum_0"
    assert ag.checkpoint(f).__name__ == "f"
    for op in ["deriv", "make_jvp", "holomorphic_grad", "make_hvp", "hessian"]:
        assert getattr(ag, op)(f, (0, 1)).__name__ == f"{op}_of_f_wrt_argnum_(0, 1)"


@fastgrad_only
def test_bad_argnum_is_a_clear_error(ag, np):
    with pytest.raises(TypeError, match="argnum"):
        ag.grad(lambda x: x, "0")
    with pytest.raises(TypeError, match="argnum"):
        ag.jacobian(lambda x: x, (0, 1.0))
    with pytest.raises(IndexError, match="out of range"):
        ag.grad(lambda x, y: x * y, 2)(1.0, 2.0)
    with pytest.raises(IndexError, match="out of range"):
        ag.hessian(lambda x, y: x * y, (0, -3))(1.0, 2.0)
    assert float(ag.grad(lambda x, y: x * y, onp.int64(1))(2.0, 3.0)) == 2.0


def test_independent_output_gives_zeros_with_warning(ag, np):
    with pytest.warns(UserWarning, match="Output seems independent of input."):
        J = ag.jacobian(lambda x: onp.ones(3))(X)
    assert J.shape == (3, 4) and not J.any()
    with pytest.warns(UserWarning, match="Output seems independent of input."):
        d = ag.deriv(lambda x: 3.0)(2.0)
    assert float(d) == 0.0
