"""Gradients of fastgrad.numpy.linalg: forward and reverse mode, to second order.

* ``test_check_grads``: every function (real and complex input, stacks of matrices where
  NumPy supports them) through ``fastgrad.test_util.check_grads(modes=["fwd", "rev"],
  order=2)``.  Functions with gauge freedom are checked through quantities that do not
  depend on the gauge: |V|^2 for eigenvectors (sign / phase per column), projectors
  U_c U_c^H onto the complement columns of full SVD / QR factors.
* ``test_matches_autograd``: values and gradients equal autograd 1.9.1's where autograd
  can compute them.
* the rest: float32 preservation, named-tuple attributes on traced results,
  subgradients of norms at zero and at ties, degenerate spectra, lstsq's tuple.
"""

import warnings
import zlib

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as np
from fastgrad.test_util import check_grads
from numpy_versions import has_numpy, needs_numpy

FG_ONLY = pytest.mark.fastgrad_only
INF = onp.inf


def _rs(seed):
    return onp.random.RandomState(seed)


def make(kind, seed):
    """A random-array maker of the given kind ("real" or "complex")."""
    rs = _rs(seed)

    def M(*shape):
        x = rs.randn(*shape)
        if kind == "complex":
            x = x + 1j * rs.randn(*shape)
        return x

    return M


def herm_t(m, x):
    return m.conj(m.swapaxes(x, -1, -2))


def herm_part(m, x):
    return (x + herm_t(m, x)) / 2


def spd(M, *shape):
    """A well-conditioned Hermitian positive definite matrix (stack)."""
    X = M(*shape)
    return X @ onp.conj(onp.swapaxes(X, -1, -2)) + shape[-1] * onp.eye(shape[-1])


def away0(x):
    """x with every |entry| moved 0.5 further from zero (for p-norms with p < 2)."""
    r = onp.abs(x)
    return x / r * (0.5 + r)


def separated(M, *shape):
    """A (stack of) matrix with well separated eigenvalues."""
    return M(*shape) + onp.diag(3.0 * onp.arange(shape[-1]))


def absq(m, x):
    """|x|^2 elementwise: invariant to the sign / phase of eigen- and singular vectors."""
    return m.real(x * m.conj(x))


def pack(m, out):
    """Several outputs as one traced tuple (fastgrad) for check_grads."""
    if isinstance(out, tuple) and not hasattr(out, "_fields"):
        return fastgrad.tuple(out) if m is np else out
    return out


# ---------------------------------------------------------------------------------------
# Cases: fun(m, *args) written against an array module m (fastgrad.numpy / autograd.numpy)


class Case:
    def __init__(self, name, fun, args, argnum=0, kinds=("real", "complex"), ref=(), rtol=1e-6, numpy=None):
        self.name, self.fun, self.args, self.argnum = name, fun, args, argnum
        self.kinds, self.ref, self.rtol = kinds, ref, rtol
        self.numpy = numpy  # the NumPy version the function (or this use of it) needs


def _svd_full(m, A):
    U, s, Vh = m.linalg.svd(A)
    k = s.shape[-1]
    Uc, Vc = U[..., :, k:], Vh[..., k:, :]
    return (absq(m, U[..., :, :k]), s, absq(m, Vh[..., :k, :]), Uc @ herm_t(m, Uc), herm_t(m, Vc) @ Vc)


def _svd_reduced(m, A):
    r = m.linalg.svd(A, full_matrices=False)
    return absq(m, r.U), r.S, absq(m, r.Vh)


def _svd_reduced_index(m, A):
    r = m.linalg.svd(A, full_matrices=False)
    return absq(m, r[0]), r[1], absq(m, r[2])


def _qr_complete(m, A):
    Q, R = m.linalg.qr(A, mode="complete")
    n = A.shape[-1]
    Qc = Q[..., :, n:]
    return Q[..., :, :n], R, Qc @ herm_t(m, Qc)


def _eig_both(m, A):
    w, V = m.linalg.eig(A)
    return w, absq(m, V)


def _eigh_both(m, A, UPLO="L"):
    w, V = m.linalg.eigh(A, UPLO)
    return w, absq(m, V)


def _lstsq_all(m, A, b):
    x, res, rank, s = m.linalg.lstsq(A, b)
    return x, res, s


L_CASES = [
    Case("det", lambda m, A: m.linalg.det(A), lambda M: [M(3, 3)], ref=("real", "complex")),
    Case("det_batched", lambda m, A: m.linalg.det(A), lambda M: [M(2, 3, 3)], ref=("real", "complex")),
    Case("slogdet_logabsdet", lambda m, A: m.linalg.slogdet(A)[1], lambda M: [M(2, 3, 3)], ref=("real", "complex")),
    Case("slogdet_both", lambda m, A: m.linalg.slogdet(A), lambda M: [M(3, 3)]),
    Case("inv", lambda m, A: m.linalg.inv(A), lambda M: [M(2, 3, 3)], ref=("real", "complex")),
    Case(
        "solve_vector",
        lambda m, A, b: m.linalg.solve(A, b),
        lambda M: [M(3, 3), M(3)],
        argnum=(0, 1),
        ref=("real", "complex"),
    ),
    Case(
        "solve_matrix_batched",
        lambda m, A, b: m.linalg.solve(A, b),
        lambda M: [M(2, 3, 3), M(2, 3, 2)],
        argnum=(0, 1),
        ref=("real", "complex"),
    ),
    Case(
        "solve_broadcast",
        lambda m, A, b: m.linalg.solve(A, b),
        lambda M: [M(2, 3, 3), M(3)],
        argnum=(0, 1),
        numpy=(2, 0),
    ),
    Case("solve_broadcast_b", lambda m, A, b: m.linalg.solve(A, b), lambda M: [M(3, 3), M(2, 3, 2)], argnum=(0, 1)),
    Case("pinv_square", lambda m, A: m.linalg.pinv(A), lambda M: [M(3, 3)], ref=("real", "complex")),
    # autograd's pinv gradient is wrong for complex non-square input
    Case("pinv_tall", lambda m, A: m.linalg.pinv(A), lambda M: [M(4, 2)], ref=("real",)),
    Case("pinv_wide_batched", lambda m, A: m.linalg.pinv(A), lambda M: [M(2, 2, 4)], ref=("real",)),
    Case("pinv_hermitian", lambda m, A: m.linalg.pinv(A, hermitian=True), lambda M: [spd(M, 3, 3) - 4 * onp.eye(3)]),
    Case("matrix_power_3", lambda m, A: m.linalg.matrix_power(A, 3), lambda M: [M(2, 3, 3)]),
    Case("matrix_power_-2", lambda m, A: m.linalg.matrix_power(A, -2), lambda M: [M(3, 3)]),
    Case("matrix_power_1", lambda m, A: m.linalg.matrix_power(A, 1), lambda M: [M(3, 3)]),
    # cholesky is differentiated as a function of A's Hermitian part (as in autograd): central
    # differences of that function in any direction (test_cholesky_gradient_is_hermitian)
    Case("cholesky", lambda m, A: m.linalg.cholesky(herm_part(m, A)), lambda M: [spd(M, 2, 3, 3)], ref=("real",)),
    Case(
        "cholesky_upper",
        lambda m, A: m.linalg.cholesky(herm_part(m, A), upper=True),
        lambda M: [spd(M, 3, 3)],
        numpy=(2, 0),
    ),
    Case(
        "cholesky_of_gram",
        lambda m, X: m.linalg.cholesky(X @ herm_t(m, X) + 3 * onp.eye(3)),
        lambda M: [M(3, 3)],
        ref=("real",),
    ),  # autograd's complex cholesky is wrong
    Case("eigh_values", lambda m, A: m.linalg.eigh(A)[0], lambda M: [M(2, 3, 3)], ref=("real", "complex")),
    Case("eigh_both", _eigh_both, lambda M: [M(3, 3)], ref=("real", "complex")),
    Case("eigh_upper", lambda m, A: _eigh_both(m, A, "U"), lambda M: [M(2, 3, 3)], ref=("real", "complex")),
    Case(
        "eigh_attrs",
        lambda m, A: (m.linalg.eigh(A).eigenvalues, absq(m, m.linalg.eigh(A).eigenvectors)),
        lambda M: [M(3, 3)],
    ),
    Case("eigvalsh", lambda m, A: m.linalg.eigvalsh(A), lambda M: [M(2, 3, 3)]),
    Case("eigvalsh_upper", lambda m, A: m.linalg.eigvalsh(A, UPLO="U"), lambda M: [M(3, 3)]),
    Case("eig", _eig_both, lambda M: [separated(M, 3, 3)], ref=("real", "complex")),
    Case("eig_batched", _eig_both, lambda M: [separated(M, 2, 3, 3)]),
    Case("eigvals", lambda m, A: m.linalg.eigvals(A), lambda M: [separated(M, 2, 3, 3)]),
    Case("svd_reduced_tall", _svd_reduced_index, lambda M: [M(4, 3)], ref=("real", "complex")),
    Case("svd_reduced_wide", _svd_reduced, lambda M: [M(2, 3, 4)]),
    Case("svd_full_tall", _svd_full, lambda M: [M(4, 2)]),
    Case("svd_full_wide_batched", _svd_full, lambda M: [M(2, 2, 4)]),
    Case("svd_full_square", _svd_full, lambda M: [M(3, 3)]),
    Case(
        "svd_compute_uv_false",
        lambda m, A: m.linalg.svd(A, compute_uv=False),
        lambda M: [M(2, 3, 4)],
        ref=("real", "complex"),
    ),
    Case(
        "svd_hermitian",
        lambda m, A: (m.linalg.svd(A, hermitian=True)[1], absq(m, m.linalg.svd(A, hermitian=True)[0])),
        lambda M: [spd(M, 3, 3) - 4 * onp.eye(3)],
    ),
    Case("svdvals", lambda m, A: m.linalg.svdvals(A), lambda M: [M(2, 4, 3)], numpy=(2, 0)),
    Case("qr_tall", lambda m, A: m.linalg.qr(A), lambda M: [M(4, 3)]),
    Case("qr_square_batched", lambda m, A: m.linalg.qr(A), lambda M: [M(2, 3, 3)]),
    Case("qr_wide", lambda m, A: m.linalg.qr(A), lambda M: [M(3, 5)]),
    Case("qr_r", lambda m, A: m.linalg.qr(A, mode="r"), lambda M: [M(4, 3)]),
    Case("qr_complete", _qr_complete, lambda M: [M(4, 2)]),
    Case("qr_complete_wide_batched", lambda m, A: m.linalg.qr(A, mode="complete"), lambda M: [M(2, 2, 3)]),
    Case("qr_r_wide", lambda m, A: m.linalg.qr(A, mode="r"), lambda M: [M(3, 5)]),
    Case("qr_attrs", lambda m, A: (m.linalg.qr(A).Q, m.linalg.qr(A).R), lambda M: [M(3, 2)]),
    Case("lstsq_x", lambda m, A, b: m.linalg.lstsq(A, b)[0], lambda M: [M(4, 3), M(4)], argnum=(0, 1)),
    Case("lstsq_all", _lstsq_all, lambda M: [M(4, 3), M(4, 2)], argnum=(0, 1)),
    Case("lstsq_underdetermined", lambda m, A, b: m.linalg.lstsq(A, b)[0], lambda M: [M(2, 3), M(2, 2)], argnum=(0, 1)),
    Case(
        "multi_dot",
        lambda m, a, b, c: m.linalg.multi_dot([a, b, c]),
        lambda M: [M(3, 2), M(2, 4), M(4, 2)],
        argnum=(0, 1, 2),
    ),
    Case(
        "multi_dot_vectors",
        lambda m, a, b, c, d: m.linalg.multi_dot([a, b, c, d]),
        lambda M: [M(3), M(3, 4), M(4, 2), M(2)],
        argnum=(0, 1, 2, 3),
    ),
    Case("cond_2", lambda m, A: m.linalg.cond(A), lambda M: [separated(M, 2, 3, 3)]),
    Case("cond_-2", lambda m, A: m.linalg.cond(A, -2), lambda M: [separated(M, 3, 3)]),
    Case("cond_1", lambda m, A: m.linalg.cond(A, 1), lambda M: [separated(M, 3, 3)]),
    Case("cond_fro", lambda m, A: m.linalg.cond(A, "fro"), lambda M: [separated(M, 3, 3)]),
    Case("tensorinv", lambda m, A: m.linalg.tensorinv(A, ind=1), lambda M: [M(6, 2, 3)]),
    Case(
        "tensorsolve",
        lambda m, A, b: m.linalg.tensorsolve(A, b, axes=(0,)),
        lambda M: [M(6, 2, 3), M(2, 3)],
        argnum=(0, 1),
    ),
    # numpy.linalg's array-API names (their own NumPy functions)
    Case(
        "linalg.matmul",
        lambda m, a, b: m.linalg.matmul(a, b),
        lambda M: [M(2, 3, 4), M(4, 2)],
        argnum=(0, 1),
        numpy=(2, 0),
    ),
    Case(
        "linalg.tensordot",
        lambda m, a, b: m.linalg.tensordot(a, b, axes=1),
        lambda M: [M(2, 3), M(3, 2)],
        argnum=(0, 1),
        numpy=(2, 0),
    ),
    Case("linalg.outer", lambda m, a, b: m.linalg.outer(a, b), lambda M: [M(2), M(3)], argnum=(0, 1), numpy=(2, 0)),
    Case("linalg.matrix_transpose", lambda m, a: m.linalg.matrix_transpose(a), lambda M: [M(2, 3, 4)], numpy=(2, 0)),
    Case("linalg.diagonal", lambda m, a: m.linalg.diagonal(a, offset=1), lambda M: [M(2, 3, 4)], numpy=(2, 0)),
    Case("linalg.trace", lambda m, a: m.linalg.trace(a, offset=-1), lambda M: [M(2, 3, 4)], numpy=(2, 0)),
    Case(
        "linalg.vecdot", lambda m, a, b: m.linalg.vecdot(a, b), lambda M: [M(2, 3), M(3)], argnum=(0, 1), numpy=(2, 0)
    ),
    Case(
        "linalg.vecdot_axis0",
        lambda m, a, b: m.linalg.vecdot(a, b, axis=0),
        lambda M: [M(3, 2), M(3, 2)],
        argnum=(0, 1),
        numpy=(2, 0),
    ),
    Case("linalg.cross", lambda m, a, b: m.linalg.cross(a, b), lambda M: [M(2, 3), M(3)], argnum=(0, 1), numpy=(2, 0)),
]

# norms: vector and matrix orders, axis int / pair / None, keepdims
_VEC_ORDS = [None, 2, 1, INF, -INF, 3, 0.5, -1.5]
_MAT_ORDS = [None, "fro", "nuc", 2, -2, 1, -1, INF, -INF]
for _o in _VEC_ORDS:
    L_CASES.append(
        Case(
            "norm_vector_ord%s" % _o,
            lambda m, x, o=_o: m.linalg.norm(x, o, axis=1),
            lambda M: [away0(M(2, 3, 4))],
            ref=("real", "complex") if _o in (None, 2, 3) else (),
        )
    )
    L_CASES.append(
        Case(
            "norm_vector_keepdims_ord%s" % _o,
            lambda m, x, o=_o: m.linalg.norm(x, o, axis=-1, keepdims=True),
            lambda M: [away0(M(2, 3, 4))],
        )
    )
for _o in _MAT_ORDS:
    L_CASES.append(
        Case("norm_matrix_ord%s" % _o, lambda m, x, o=_o: m.linalg.norm(x, o, axis=(2, 0)), lambda M: [M(2, 3, 4)])
    )
    L_CASES.append(
        Case(
            "norm_matrix_keepdims_ord%s" % _o,
            lambda m, x, o=_o: m.linalg.norm(x, o, axis=(1, 2), keepdims=True),
            lambda M: [M(2, 3, 4)],
        )
    )
L_CASES += [
    Case("norm_flat", lambda m, x: m.linalg.norm(x), lambda M: [M(2, 3, 4)], ref=("real", "complex")),
    Case("norm_flat_keepdims", lambda m, x: m.linalg.norm(x, keepdims=True), lambda M: [M(2, 3)]),
    Case("norm_2d_fro", lambda m, x: m.linalg.norm(x, "fro"), lambda M: [M(3, 4)], ref=("real", "complex")),
    Case("norm_2d_nuc", lambda m, x: m.linalg.norm(x, "nuc"), lambda M: [M(3, 4)], ref=("real", "complex")),
    Case("norm_1d_ord3", lambda m, x: m.linalg.norm(x, 3), lambda M: [M(4)], ref=("real", "complex")),
    Case(
        "norm_of_list",
        lambda m, a, b: m.linalg.norm([a, b]),
        lambda M: [M(3), M(3)],
        argnum=(0, 1),
        kinds=("real",),
        ref=("real",),
    ),
    Case(
        "vector_norm_axes",
        lambda m, x: m.linalg.vector_norm(x, axis=(0, 2), ord=3),
        lambda M: [M(2, 3, 4)],
        numpy=(2, 0),
    ),
    Case(
        "vector_norm_all_keepdims",
        lambda m, x: m.linalg.vector_norm(x, keepdims=True, ord=INF),
        lambda M: [M(2, 3, 4)],
        numpy=(2, 0),
    ),
    Case("matrix_norm_nuc", lambda m, x: m.linalg.matrix_norm(x, ord="nuc"), lambda M: [M(2, 3, 4)], numpy=(2, 0)),
    Case(
        "matrix_norm_keepdims",
        lambda m, x: m.linalg.matrix_norm(x, keepdims=True, ord=-1),
        lambda M: [M(2, 3, 4)],
        numpy=(2, 0),
    ),
]


def _params(cases, want_ref=False):
    out = []
    for c in cases:
        for kind in c.kinds:
            if want_ref and kind not in c.ref:
                continue
            marks = [needs_numpy(c.numpy)] if c.numpy else []
            out.append(pytest.param(c, kind, id="{}-{}".format(c.name, kind), marks=marks))
    return out


def _args(case, kind):
    # a seed per case that is the same in every process (str's hash() is salted per process,
    # which made the inputs, and a badly conditioned one now and then, differ run to run)
    return case.args(make(kind, zlib.crc32(case.name.encode()) % 1000))


@pytest.mark.parametrize("case,kind", _params(L_CASES))
def test_check_grads(case, kind):
    args = _args(case, kind)
    onp.random.seed(0)  # check_grads' random directions
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # check_grads' "independent of input"
        check_grads(lambda *a: pack(np, case.fun(np, *a)), argnum=case.argnum, modes=["fwd", "rev"], order=2)(*args)


def _loss_factory(m, fun, out_example, seed=7):
    """A real scalar function of fun's outputs with fixed random weights."""
    rs = _rs(seed)
    outs = out_example if isinstance(out_example, tuple) else (out_example,)
    weights = []
    for o in outs:
        o = onp.asarray(o)
        w = rs.randn(*o.shape)
        if o.dtype.kind == "c":
            w = w + 1j * rs.randn(*o.shape)
        weights.append(w)

    def loss(*args):
        out = fun(m, *args)
        out = tuple(out) if isinstance(out, tuple) else (out,)
        return sum(m.sum(m.real(w * o)) for w, o in zip(weights, out))

    return loss


@pytest.mark.parametrize("case,kind", _params(L_CASES, want_ref=True))
def test_matches_autograd(case, kind):
    ag = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    args = _args(case, kind)
    expected = case.fun(onp, *args)
    ours = case.fun(np, *args)
    for a, b in zip(
        expected if isinstance(expected, tuple) else (expected,), ours if isinstance(ours, tuple) else (ours,)
    ):
        onp.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    argnum = case.argnum
    g_ref = ag.grad(_loss_factory(anp, case.fun, expected), argnum)(*args)
    g_ours = fastgrad.grad(_loss_factory(np, case.fun, expected), argnum)(*args)
    for a, b in zip(
        g_ref if isinstance(g_ref, tuple) else (g_ref,), g_ours if isinstance(g_ours, tuple) else (g_ours,)
    ):
        onp.testing.assert_allclose(b, a, rtol=case.rtol, atol=1e-10)


# ---------------------------------------------------------------------------------------
# dtypes

F32_CASES = {
    "det": lambda A: np.linalg.det(A),
    "slogdet": lambda A: np.linalg.slogdet(A).logabsdet,
    "inv": lambda A: np.linalg.inv(A),
    "pinv": lambda A: np.linalg.pinv(A),
    "solve": lambda A: np.linalg.solve(A, onp.ones(3, onp.float32)),
    "norm": lambda A: np.linalg.norm(A),
    "norm_inf": lambda A: np.linalg.norm(A, INF, axis=0),
    "norm_p": lambda A: np.linalg.norm(A, 3, axis=0),
    "norm_nuc": lambda A: np.linalg.norm(A, "nuc"),
    "eigh": lambda A: np.linalg.eigh(A)[0] + np.linalg.eigh(A)[1][0] ** 2,
    "eigvalsh": lambda A: np.linalg.eigvalsh(A),
    "eig": lambda A: np.real(np.linalg.eig(A)[0]),
    "eigvals": lambda A: np.real(np.linalg.eigvals(A)),
    "cholesky": lambda A: np.linalg.cholesky(A @ A.T + 3 * onp.eye(3, dtype=onp.float32)),
    "svd": lambda A: np.linalg.svd(A)[1] + np.linalg.svd(A)[0][0] ** 2,
    "svd_nouv": lambda A: np.linalg.svd(A, compute_uv=False),
    "svdvals": lambda A: np.linalg.svdvals(A),
    "qr": lambda A: np.linalg.qr(A)[0] + np.linalg.qr(A)[1],
    "lstsq": lambda A: np.linalg.lstsq(A, onp.ones(3, onp.float32))[0],
    "matrix_power": lambda A: np.linalg.matrix_power(A, -2),
    "multi_dot": lambda A: np.linalg.multi_dot([A, A, A]),
    "vector_norm": lambda A: np.linalg.vector_norm(A, ord=3),
    "matrix_norm": lambda A: np.linalg.matrix_norm(A, ord=2),
    "cond": lambda A: np.linalg.cond(A),
}


F32_NEEDS = {"svdvals": (2, 0), "vector_norm": (2, 0), "matrix_norm": (2, 0)}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[needs_numpy(F32_NEEDS[n])] if n in F32_NEEDS else []) for n in sorted(F32_CASES)]
)
def test_float32_in_float32_out(name):
    f = F32_CASES[name]
    A = _rs(3).randn(3, 3).astype(onp.float32)
    vjp, ans = fastgrad.make_vjp(f)(A)
    assert onp.asarray(ans).dtype == onp.float32
    g = vjp(onp.ones(onp.shape(ans), onp.float32))
    assert g.dtype == onp.float32 and g.shape == A.shape
    ans2, t = fastgrad.make_jvp(f)(A)(onp.ones_like(A))
    assert onp.asarray(t).dtype == onp.float32


def test_float32_tuple_tangents():
    A = _rs(4).randn(3, 3).astype(onp.float32)
    for f in (
        lambda A: np.linalg.eigh(A),
        lambda A: np.linalg.svd(A),
        lambda A: np.linalg.qr(A),
        lambda A: np.linalg.slogdet(A),
    ):
        ans, t = fastgrad.make_jvp(f)(A)(onp.ones_like(A))
        assert type(t) is type(ans)
        assert [onp.asarray(x).dtype for x in t] == [onp.asarray(x).dtype for x in ans]


# ---------------------------------------------------------------------------------------
# Named tuples, lstsq's tuple, multi_dot of traced lists


@FG_ONLY
def test_named_tuple_attributes_when_traced():
    A = _rs(5).randn(3, 3)
    S = A + A.T
    pairs = [
        (lambda A: np.linalg.eigh(A).eigenvalues, lambda A: np.linalg.eigh(A)[0]),
        (lambda A: np.linalg.svd(A).S, lambda A: np.linalg.svd(A)[1]),
        (lambda A: np.linalg.slogdet(A).logabsdet, lambda A: np.linalg.slogdet(A)[1]),
        (lambda A: np.linalg.qr(A).R, lambda A: np.linalg.qr(A)[1]),
        (lambda A: np.real(np.linalg.eig(A).eigenvalues), lambda A: np.real(np.linalg.eig(A)[0])),
    ]
    for by_attr, by_index in pairs:
        g1 = fastgrad.grad(lambda A: np.sum(by_attr(A) ** 2))(S)
        g2 = fastgrad.grad(lambda A: np.sum(by_index(A) ** 2))(S)
        onp.testing.assert_allclose(g1, g2)

    def unpacked(A):
        w, V = np.linalg.eigh(A)
        U, s, Vh = np.linalg.svd(A)
        sign, logdet = np.linalg.slogdet(A)
        return np.sum(w**2) + np.sum(s) + logdet + np.sum(V[:, 0] ** 2)

    check_grads(unpacked, modes=["fwd", "rev"], order=2)(S)


def test_lstsq_result_tuple():
    A, b = _rs(6).randn(5, 3), _rs(7).randn(5)
    out = []
    fastgrad.grad(lambda A: (out.append(np.linalg.lstsq(A, b)), np.sum(out[-1][0]))[1])(A)
    x, res, rank, s = out[0]
    assert type(rank) is int and rank == onp.linalg.lstsq(A, b)[2]
    onp.testing.assert_allclose(fastgrad.tracer.getval(x), onp.linalg.lstsq(A, b)[0])


@pytest.mark.parametrize("rcond", ["default", None, 1e-10, -1])
def test_lstsq_cutoff_is_numpys(rcond):
    """rcond as NumPy reads it, traced or not: the default (None since NumPy 2, the old
    cutoff with a FutureWarning before) or a value, on a matrix whose smallest singular
    value lies between the two default cutoffs (eps and eps * max(m, n))."""
    U, V = onp.linalg.qr(_rs(20).randn(3, 3))[0], onp.linalg.qr(_rs(21).randn(3, 3))[0]
    A, b = (U * [1.0, 0.5, 4e-16]) @ V.T, _rs(22).randn(3)
    args = (A, b) if rcond == "default" else (A, b, rcond)
    with warnings.catch_warnings(record=True) as numpy_warned:
        warnings.simplefilter("always")
        expected = onp.linalg.lstsq(*args)
    for lstsq in (np.linalg.lstsq, _traced_lstsq):
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            x, res, rank, s = lstsq(*args)
        assert [str(w.message) for w in warned] == [str(w.message) for w in numpy_warned]
        assert rank == expected[2]
        onp.testing.assert_array_equal(x, expected[0])


def _traced_lstsq(A, *rest):
    """lstsq's values when A is traced."""
    out = []
    fastgrad.grad(lambda A: (out.append(np.linalg.lstsq(A, *rest)), np.sum(out[-1][0]))[1])(A)
    return tuple(fastgrad.tracer.getval(v) for v in out[0])


def test_solve_reads_b_as_numpy_does():
    """b with one axis less than a: a stack of vectors under NumPy 1 (paragami relies on it),
    a matrix since NumPy 2, where these shapes do not fit."""
    A = _rs(23).randn(5, 4, 4) + 5 * onp.eye(4)
    B = _rs(24).randn(5, 4)
    if has_numpy((2, 0)):
        with pytest.raises(ValueError) as numpys:
            onp.linalg.solve(A, B)
        with pytest.raises(ValueError) as ours:
            fastgrad.grad(lambda A: np.sum(np.linalg.solve(A, B)))(A)
        assert str(ours.value) == str(numpys.value)
    else:
        onp.testing.assert_array_equal(np.linalg.solve(A, B), onp.linalg.solve(A, B))
        check_grads(lambda A, B: np.linalg.solve(A, B), modes=["rev", "fwd"], order=2)(A, B)


def test_multi_dot_traced_sequences():
    a, b, c = _rs(8).randn(2, 3), _rs(9).randn(3, 3), _rs(10).randn(3, 2)
    f1 = lambda a: np.linalg.multi_dot([a, b, c])
    f2 = lambda arrs: np.linalg.multi_dot(arrs)
    g1 = fastgrad.grad(lambda a: np.sum(f1(a) ** 2))(a)
    g2 = fastgrad.grad(lambda arrs: np.sum(f2(arrs) ** 2))([a, b, c])
    onp.testing.assert_allclose(g1, g2[0])
    onp.testing.assert_allclose(f1(a), onp.linalg.multi_dot([a, b, c]))


def test_qr_raw_mode_has_no_rule():
    with pytest.raises(NotImplementedError):
        fastgrad.grad(lambda A: np.sum(np.linalg.qr(A, mode="raw")[0]))(_rs(11).randn(3, 3))


# ---------------------------------------------------------------------------------------
# Norms: subgradients, no NaN, keepdims shapes


@FG_ONLY
@pytest.mark.parametrize("ord", [None, 1, 2, INF, -INF, 0, 3, 0.5])
def test_norm_at_zero_vector_is_finite(ord):
    z = onp.zeros(3)
    g = fastgrad.grad(lambda x: np.linalg.norm(x, ord))(z)
    onp.testing.assert_array_equal(g, onp.zeros(3))
    _, t = fastgrad.make_jvp(lambda x: np.linalg.norm(x, ord))(z)(onp.ones(3))
    assert t == 0.0


@FG_ONLY
@pytest.mark.parametrize("ord", [None, "fro", 1, -1, INF, -INF])
def test_norm_at_zero_matrix_is_finite(ord):
    g = fastgrad.grad(lambda x: np.linalg.norm(x, ord))(onp.zeros((2, 3)))
    onp.testing.assert_array_equal(g, onp.zeros((2, 3)))


@pytest.mark.parametrize(
    "x",
    [_rs(14).randn(5), _rs(15).randn(3, 4), _rs(16).randn(2, 3, 2), onp.zeros(3), onp.array([0.0, -0.0, 2.5])],
    ids=["vector", "matrix", "3-d", "zeros", "signed zeros"],
)
def test_the_plain_2_norm_gives_the_general_rule_bits(x):
    # np.linalg.norm(x) without options has a shortcut in its rule; with ord=None given,
    # the general rule runs
    v = _rs(17).randn(*x.shape)

    def first(norm):
        return lambda x: norm(x) * 1.5

    def second(norm):
        return lambda x: np.sum(fastgrad.grad(first(norm))(x) * v)

    def general(y):
        return np.linalg.norm(y, ord=None)

    for order in (first, second):
        shortcut = fastgrad.grad(order(np.linalg.norm))(x)
        reference = fastgrad.grad(order(general))(x)
        assert shortcut.dtype == reference.dtype == onp.float64 and shortcut.shape == x.shape
        onp.testing.assert_array_equal(shortcut, reference)


@FG_ONLY
def test_norm_inf_ties_split_and_no_nan():
    x = onp.array([1.0, -3.0, 3.0, 2.0])
    onp.testing.assert_array_equal(fastgrad.grad(lambda x: np.linalg.norm(x, INF))(x), [0.0, -0.5, 0.5, 0.0])
    onp.testing.assert_array_equal(fastgrad.grad(lambda x: np.linalg.norm(x, -INF))(x), [1.0, 0.0, 0.0, 0.0])
    X = onp.array([[1.0, -2.0], [3.0, 0.0]])  # row sums 3, 3: tie for ord=inf
    onp.testing.assert_array_equal(fastgrad.grad(lambda X: np.linalg.norm(X, INF))(X), [[0.5, -0.5], [0.5, 0.0]])


@FG_ONLY
@pytest.mark.parametrize("ord", [None, 2, 1, INF, 3])
def test_norm_keepdims_gradient_shape(ord):
    X = _rs(12).randn(2, 3, 4)
    w = _rs(13).randn(2, 1, 4)
    g = fastgrad.grad(lambda X: np.sum(np.linalg.norm(X, ord, axis=1, keepdims=True) * w))(X)
    assert g.shape == X.shape
    g2 = fastgrad.grad(lambda X: np.sum(np.linalg.norm(X, ord, axis=1) * w[:, 0, :]))(X)
    onp.testing.assert_allclose(g, g2)


# ---------------------------------------------------------------------------------------
# Degenerate spectra: eigenvalue / singular-value functions stay exact and finite


def test_repeated_eigenvalues_and_singular_values():
    I3 = onp.eye(3)
    funs = [
        lambda A: np.sum(np.linalg.eigh(A)[0] ** 2),
        lambda A: np.sum(np.linalg.eigvalsh(A) ** 2),
        lambda A: np.sum(np.linalg.svd(A)[1] ** 2),
        lambda A: np.sum(np.linalg.svd(A, full_matrices=False)[1] ** 2),
    ]
    if has_numpy((2, 0)):
        funs.append(lambda A: np.sum(np.linalg.svdvals(A) ** 2))
    for f in funs:
        onp.testing.assert_allclose(fastgrad.grad(f)(I3), 2 * I3)
    D = onp.diag([1.0, 1.0, 2.0])
    onp.testing.assert_allclose(fastgrad.grad(lambda A: np.real(np.sum(np.linalg.eig(A)[0] ** 2)))(D), 2 * D)
    onp.testing.assert_allclose(fastgrad.grad(lambda A: np.linalg.norm(A, "nuc"))(I3), I3)


def test_triangle_read_by_eigh():
    """eigh reads one triangle: the gradient is the derivative of what NumPy computes (zero
    in the unread triangle), as in autograd; with a symmetric parametrisation it agrees
    with the symmetric gradient."""
    X = _rs(14).randn(3, 3)
    A = X @ X.T + 3 * onp.eye(3)
    f = lambda A: np.sum(np.linalg.eigh(A)[0] ** 3)
    g = fastgrad.grad(f)(A)
    onp.testing.assert_array_equal(onp.triu(g, 1), 0.0)
    gu = fastgrad.grad(lambda A: f(A.T))(A)  # reads the other triangle of A
    onp.testing.assert_array_equal(onp.tril(gu, -1), 0.0)


@pytest.mark.parametrize("kind", ["real", "complex"])
def test_cholesky_gradient_is_hermitian(kind):
    """cholesky's gradient is that of A's Hermitian part, whichever triangle NumPy reads
    (as autograd's, JAX's and PyTorch's): Hermitian, so a gradient step keeps A Hermitian."""
    A = spd(make(kind, 15), 3, 3)
    W = make(kind, 16)(3, 3)
    f = lambda A: np.sum(np.real(W * np.linalg.cholesky(A)))
    g = fastgrad.grad(f)(A)
    onp.testing.assert_array_equal(g, onp.conj(g.T))
    # a directional derivative along a Hermitian direction is what central differences give
    D = herm_part(onp, make(kind, 17)(3, 3))
    eps = 1e-6
    fd = (f(A + eps * D) - f(A - eps * D)) / (2 * eps)
    assert onp.real(onp.sum(g * D)) == pytest.approx(fd, rel=1e-7)


@needs_numpy((2, 0))
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_the_upper_cholesky_factor_has_the_lower_ones_gradient(kind):
    """The upper factor is the lower one's conjugate transpose: the same gradient, although
    NumPy reads the other triangle for it."""
    A = spd(make(kind, 15), 3, 3)
    W = make(kind, 16)(3, 3)
    onp.testing.assert_allclose(
        fastgrad.grad(lambda A: np.sum(np.real(W * np.conj(np.linalg.cholesky(A, upper=True).T))))(A),
        fastgrad.grad(lambda A: np.sum(np.real(W * np.linalg.cholesky(A))))(A),
        rtol=1e-12,
        atol=1e-12,
    )
