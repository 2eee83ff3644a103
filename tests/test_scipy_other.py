"""fastgrad.scipy.linalg, .signal, .integrate, and fastgrad gradients driving scipy.optimize.

Every rule is checked against central differences (reverse mode to second order, forward
mode as far as fastgrad.numpy's forward rules go); odeint's adjoint gradients are also
compared with differentiating a fine-step RK4 integrator written in fastgrad.numpy.
"""

import numpy as onp
import pytest

pytest.importorskip("scipy")
import scipy.linalg as sla
import scipy.optimize
import scipy.signal

import gradcheck as gc
from numpy_versions import has_numpy

pytestmark = pytest.mark.fastgrad_only

import fastgrad  # noqa: E402
import fastgrad.numpy as fnp  # noqa: E402
from fastgrad.scipy import linalg as fla, special  # noqa: E402
from fastgrad.scipy.integrate import odeint  # noqa: E402
from fastgrad.scipy.signal import convolve  # noqa: E402


check = gc.check_both_modes  # reverse and forward mode, to second order


R = onp.random.RandomState(0)
N = 4
M = R.randn(N, N)
SPD = M @ M.T + N * onp.eye(N)
GEN = R.randn(N, N) + N * onp.eye(N)
LOW = onp.tril(R.randn(N, N)) + 3 * onp.eye(N)
B1 = R.randn(N)
B2 = R.randn(N, 2)


# ---- linalg ----------------------------------------------------------------------------
def test_wrapped_namespace():
    assert callable(fla.norm) and callable(fla.qr)
    onp.testing.assert_allclose(fla.inv(GEN), sla.inv(GEN))
    with pytest.raises(NotImplementedError):
        fastgrad.grad(lambda a: fla.qr(a)[0][0, 0])(GEN)


def test_sqrtm():
    onp.testing.assert_allclose(fla.sqrtm(SPD), sla.sqrtm(SPD))
    check(fla.sqrtm, SPD)


@pytest.mark.parametrize("b", [B1, B2], ids=["vector", "matrix"])
@pytest.mark.parametrize(
    "opts",
    [
        dict(lower=True),
        dict(lower=True, trans=1),
        dict(lower=False, trans="T"),
        dict(lower=True, unit_diagonal=True),
        dict(lower=False, trans=2),
    ],
)
def test_solve_triangular(b, opts):
    a = LOW if opts.get("lower") else LOW.T.copy()
    onp.testing.assert_allclose(fla.solve_triangular(a, b, **opts), sla.solve_triangular(a, b, **opts))
    check(lambda a, b: fla.solve_triangular(a, b, **opts), a, b)
    # the triangle SciPy does not read gets no gradient
    g = fastgrad.grad(lambda a: fnp.sum(fla.solve_triangular(a, b, **opts)))(a)
    ignored = onp.triu(onp.ones((N, N)), 1) if opts.get("lower") else onp.tril(onp.ones((N, N)), -1)
    assert onp.all(g[ignored.astype(bool)] == 0)


def test_solve_triangular_positional_options():
    check(lambda a, b: fla.solve_triangular(a, b, 1, True), LOW, B1)


@pytest.mark.parametrize("b", [B1, B2], ids=["vector", "matrix"])
def test_solve_banded(b):
    l, u = 1, 2
    ab = R.randn(l + u + 1, N)
    ab[u] += 5.0
    onp.testing.assert_allclose(fla.solve_banded((l, u), ab, b), sla.solve_banded((l, u), ab, b))
    check(lambda ab, b: fla.solve_banded((l, u), ab, b), ab, b)


def test_band_storage_helpers_are_adjoint():
    ab = R.randn(4, 5)
    A = R.randn(5, 5)
    lhs = onp.sum(fla.band_to_dense(ab, 1, 2) * A)
    rhs = onp.sum(ab * fla.dense_to_band(A, 1, 2))
    assert abs(lhs - rhs) < 1e-12


def test_solve_sylvester():
    a = R.randn(3, 3) + 3 * onp.eye(3)
    b = R.randn(2, 2) + 3 * onp.eye(2)
    q = R.randn(3, 2)
    onp.testing.assert_allclose(fla.solve_sylvester(a, b, q), sla.solve_sylvester(a, b, q))
    check(fla.solve_sylvester, a, b, q)


def _symmetric_part(a):
    return (a + a.T) / 2


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky(lower):
    onp.testing.assert_allclose(fla.cholesky(SPD, lower=lower), sla.cholesky(SPD, lower=lower))
    # cholesky is differentiated as a function of a's symmetric part: central differences
    # of that function in any direction
    check(lambda a: fla.cholesky(_symmetric_part(a), lower=lower), SPD)
    # through a symmetric parametrization, as most code uses it
    check(lambda m: fla.cholesky(fnp.dot(m, m.T) + N * onp.eye(N), lower=lower), M)
    # the gradient itself is symmetric, the same for either triangle, and numpy's
    weights = R.randn(N, N)
    factors = [
        lambda a: fla.cholesky(a, lower=lower),
        lambda a: fla.cholesky(a.T, lower=lower),
        lambda a: fla.cholesky(a, lower=not lower).T,
    ]
    if has_numpy((2, 0)):  # (numpy's upper=)
        factors.append(lambda a: fnp.linalg.cholesky(a, upper=not lower))
    grads = [fastgrad.grad(lambda a: fnp.sum(weights * chol(a)))(SPD) for chol in factors]
    onp.testing.assert_array_equal(grads[0], grads[0].T)
    for g in grads[1:]:
        onp.testing.assert_allclose(g, grads[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("b", [B1, B2], ids=["vector", "matrix"])
def test_cho_factor_cho_solve(lower, b):
    def f(a, b):
        return fla.cho_solve(fla.cho_factor(a, lower=lower), b)

    onp.testing.assert_allclose(f(SPD, b), sla.cho_solve(sla.cho_factor(SPD, lower=lower), b))
    check(lambda a, b: f(_symmetric_part(a), b), SPD, b)
    c = sla.cholesky(SPD, lower=lower)
    check(lambda c, b: fla.cho_solve((c, lower), b), c, b)


@pytest.mark.parametrize("b", [B1, B2], ids=["vector", "matrix"])
@pytest.mark.parametrize(
    "opts",
    [{}, dict(assume_a="pos"), dict(assume_a="sym", lower=True), dict(transposed=True)],
    ids=["gen", "pos", "sym", "transposed"],
)
def test_solve(b, opts):
    a = SPD if "assume_a" in opts else GEN
    onp.testing.assert_allclose(fla.solve(a, b, **opts), sla.solve(a, b, **opts), rtol=1e-12)
    check(lambda a, b: fla.solve(a, b, **opts), a, b)


def test_inv_det():
    check(fla.inv, GEN)
    check(fla.det, GEN)
    assert abs(fla.det(GEN) - sla.det(GEN)) < 1e-10


def test_expm_and_frechet():
    A = 0.5 * R.randn(3, 3)
    E = R.randn(3, 3)
    onp.testing.assert_allclose(fla.expm(A), sla.expm(A))
    check(fla.expm, A)
    check(lambda A, E: fla.expm_frechet(A, E, compute_expm=False), A, E)
    ex, L = fla.expm_frechet(A, E)
    ex2, L2 = sla.expm_frechet(A, E)
    onp.testing.assert_allclose(L, L2)


@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("b", [B1, B2], ids=["vector", "matrix"])
def test_lu_factor_lu_solve(trans, b):
    lu, piv = fla.lu_factor(GEN)
    elu, epiv = sla.lu_factor(GEN)
    onp.testing.assert_allclose(lu, elu)
    onp.testing.assert_array_equal(piv, epiv)
    check(lambda a: fla.lu_factor(a)[0], GEN)
    check(lambda a, b: fla.lu_solve(fla.lu_factor(a), b, trans=trans), GEN, b)
    check(lambda lu, b: fla.lu_solve((lu, piv), b, trans=trans), lu, b)


def test_lu_with_pivoting():
    a = onp.array([[0.1, 2.0, 1.0], [3.0, 0.2, -1.0], [1.0, 1.0, 4.0]])
    assert list(sla.lu_factor(a)[1]) != [0, 1, 2]
    check(lambda a: fla.lu_factor(a)[0], a)
    check(lambda a: fla.lu_solve(fla.lu_factor(a), B1[:3]), a)


@pytest.mark.parametrize("lower", [True, False])
def test_eigh(lower):
    W = R.randn(N, N)
    w, v = fla.eigh(SPD, lower=lower)
    ew, ev = sla.eigh(SPD, lower=lower)
    onp.testing.assert_allclose(w, ew)
    onp.testing.assert_allclose(v, ev)
    check(lambda a: fla.eigh(a, lower=lower, eigvals_only=True), SPD)
    check(lambda a: fla.eigh(a, lower=lower)[0], SPD)
    # a sign-invariant function of the eigenvectors
    check(lambda a: fnp.sum((fla.eigh(a, lower=lower)[1] * W) ** 2, axis=0), SPD)
    with pytest.raises(NotImplementedError):
        fastgrad.grad(lambda a: fnp.sum(fla.eigh(a, onp.eye(N))[0]))(SPD)


# ---- signal ----------------------------------------------------------------------------
CONV_CASES = [
    ((5,), (3,), {}),
    ((3,), (5,), dict(mode="valid")),
    ((5,), (3,), dict(mode="same")),
    ((4,), (6,), dict(mode="same")),
    ((4, 5), (3, 3), dict(mode="valid")),
    ((4, 5), (3, 2), {}),
    ((3, 4, 5), (4, 2, 3), dict(axes=([2], [2]), dot_axes=[(1,), (0,)])),
    ((3, 4, 5), (4, 2, 3), dict(axes=([0, 2], [1, 2]), dot_axes=[(1,), (0,)])),
    ((2, 5), (3, 4), dict(axes=([1], [1]))),
    ((5, 2), (3, 4), dict(axes=([0], [1]), mode="same")),
    ((2, 6, 3), (4, 3, 2), dict(axes=([1], [0]), dot_axes=[(2, 0), (1, 2)], mode="valid")),
]


@pytest.mark.parametrize("sa,sb,kw", CONV_CASES)
def test_convolve(sa, sb, kw):
    A, B = R.randn(*sa), R.randn(*sb)
    if "axes" not in kw and "dot_axes" not in kw:
        onp.testing.assert_allclose(convolve(A, B, **kw), scipy.signal.convolve(A, B, mode=kw.get("mode", "full")))
    check(lambda A, B: convolve(A, B, **kw), A, B)


def test_convolve_reference_loop():
    A, B = R.randn(2, 6, 3), R.randn(4, 3, 2)
    out = convolve(A, B, axes=([1], [0]), dot_axes=[(2, 0), (1, 2)])
    # out[n] = sum_{d, k} A[d0, k, d1] B[n - k, d1, d0]
    ref = onp.zeros(9)
    for n in range(9):
        for k in range(6):
            if 0 <= n - k < 4:
                ref[n] += onp.sum(A[:, k, :] * B[n - k, :, :].T)
    onp.testing.assert_allclose(out, ref)


def test_convolve_bad_mode():
    with pytest.raises(ValueError):
        convolve(onp.ones(3), onp.ones(2), mode="nope")
    with pytest.raises(ValueError):
        convolve(onp.ones((5, 3)), onp.ones((3, 5)), mode="valid")


# ---- integrate.odeint ------------------------------------------------------------------
K = 0.7
AMAT = onp.array([[1.0, 0.2], [-0.3, 0.8]])
Y0 = onp.array([1.0, 0.5])
TS = onp.linspace(0.0, 1.0, 4)
ODE_TOL = dict(rtol=1e-10, atol=1e-10)


def dyn(y, t, k, A):
    return -k * fnp.dot(A, y) + fnp.sin(t) * y


def loss(y0, t, k, A):
    return fnp.sum(odeint(dyn, y0, t, (k, A), **ODE_TOL) ** 2)


def test_odeint_values_match_scipy():
    import scipy.integrate

    onp.testing.assert_allclose(odeint(dyn, Y0, TS, (K, AMAT)), scipy.integrate.odeint(dyn, Y0, TS, args=(K, AMAT)))


def test_odeint_adjoint_against_finite_differences():
    gc.check_grads(loss, Y0, TS, K, AMAT, modes=("rev",), order=1, rtol=1e-5, atol=1e-6)


def test_odeint_second_order():
    # Hessian-vector products through the adjoint of the adjoint (w.r.t. y0 and k)
    f = lambda y0, k: loss(y0, TS[:3], k, AMAT)
    gc.check_grads(f, Y0, K, modes=("rev",), order=2, rtol=1e-4, atol=1e-5)


def _rk4(y0, t, k, A, steps=200):
    ys = [y0]
    y = y0
    for i in range(len(t) - 1):
        h = (t[i + 1] - t[i]) / steps
        tt = t[i]
        for _ in range(steps):
            k1 = dyn(y, tt, k, A)
            k2 = dyn(y + 0.5 * h * k1, tt + 0.5 * h, k, A)
            k3 = dyn(y + 0.5 * h * k2, tt + 0.5 * h, k, A)
            k4 = dyn(y + h * k3, tt + h, k, A)
            y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
            tt = tt + h
        ys.append(y)
    return fnp.stack(ys)


def test_odeint_adjoint_against_fine_step_reference():
    ref = lambda y0, t, k, A: fnp.sum(_rk4(y0, t, k, A) ** 2)
    for i in range(4):
        g = fastgrad.grad(loss, i)(Y0, TS, K, AMAT)
        e = fastgrad.grad(ref, i)(Y0, TS, K, AMAT)
        onp.testing.assert_allclose(g, e, rtol=1e-7, atol=1e-9)


def test_odeint_default_args_list_args_and_tfirst():
    decay = lambda y, t: -0.5 * y
    g = fastgrad.grad(lambda y0: fnp.sum(odeint(decay, y0, TS)[-1]))(Y0)
    onp.testing.assert_allclose(g, onp.exp(-0.5) * onp.ones(2), rtol=1e-6)
    g = fastgrad.grad(lambda k: fnp.sum(odeint(lambda y, t, k: -k * y, Y0, TS, [k])[-1]))(0.5)
    onp.testing.assert_allclose(g, -onp.exp(-0.5) * onp.sum(Y0), rtol=1e-6)
    g = fastgrad.grad(lambda k: fnp.sum(odeint(lambda y, t, k: -k * y, Y0, TS, k)[-1]))(0.5)
    onp.testing.assert_allclose(g, -onp.exp(-0.5) * onp.sum(Y0), rtol=1e-6)
    g = fastgrad.grad(lambda k: fnp.sum(odeint(lambda t, y, k: -k * y, Y0, TS, (k,), tfirst=True)[-1]))(0.5)
    onp.testing.assert_allclose(g, -onp.exp(-0.5) * onp.sum(Y0), rtol=1e-6)


def test_odeint_forward_mode():
    f = lambda y0, t, k, A: odeint(dyn, y0, t, (k, A), **ODE_TOL)
    gc.check_grads(f, Y0, TS, K, AMAT, modes=("fwd",), order=1, rtol=1e-5, atol=1e-6)


# ---- scipy.optimize driven by fastgrad gradients --------------------------------------
def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_minimize_bfgs_rosenbrock():
    res = scipy.optimize.minimize(rosenbrock, onp.array([-1.2, 1.0, 0.5]), jac=fastgrad.grad(rosenbrock), method="BFGS")
    assert res.success
    onp.testing.assert_allclose(res.x, onp.ones(3), atol=1e-4)


def test_newton_cg_rosenbrock():
    # the classic starting point of the 2-d problem
    res = scipy.optimize.minimize(
        rosenbrock,
        onp.array([-1.2, 1.0]),
        jac=fastgrad.grad(rosenbrock),
        hessp=fastgrad.hessian_vector_product(rosenbrock),
        method="Newton-CG",
    )
    assert res.success
    assert res.nhev > 0
    onp.testing.assert_allclose(res.x, onp.ones(2), atol=1e-4)


def _logistic_problem():
    rs = onp.random.RandomState(3)
    X = rs.randn(200, 5)
    w_true = rs.randn(5)
    y = (rs.rand(200) < special.expit(X @ w_true)).astype(float)

    def nll(w):
        z = fnp.dot(X, w)
        return -fnp.sum(y * special.log_expit(z) + (1 - y) * special.log_expit(-z)) + 0.5 * fnp.sum(w * w)

    return nll


@pytest.mark.parametrize("method", ["BFGS", "Newton-CG"])
def test_logistic_regression(method):
    nll = _logistic_problem()
    kw = dict(hessp=fastgrad.hessian_vector_product(nll)) if method == "Newton-CG" else {}
    res = scipy.optimize.minimize(nll, onp.zeros(5), jac=fastgrad.grad(nll), method=method, **kw)
    assert res.success
    assert onp.max(onp.abs(fastgrad.grad(nll)(res.x))) < 1e-4
    # the Hessian is positive definite: the stationary point is the minimum
    H = fastgrad.hessian(nll)(res.x)
    assert onp.all(onp.linalg.eigvalsh(H) > 0)
