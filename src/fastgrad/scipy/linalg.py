"""fastgrad.scipy.linalg: scipy.linalg with every function wrapped as a primitive, and VJP
and JVP rules for sqrtm, solve_triangular, solve_banded, solve_sylvester, cholesky,
cho_factor/cho_solve, solve, inv, det, expm (and expm_frechet), lu_factor/lu_solve and eigh.

Rules are written with traced functions (mostly this module's own solvers), so they can be
differentiated again.  Where SciPy reads only one triangle of a matrix argument
(``solve_triangular``, ``cho_solve``, ``eigh``, ``solve(assume_a='sym'/'pos')``) the
derivative is the exact derivative of the function SciPy computes: it is zero w.r.t. the
entries SciPy ignores.  ``cholesky`` (and ``cho_factor``) is differentiated as a function
of the symmetric part ``(a + a.T) / 2``, as numpy.linalg.cholesky is here and in autograd,
JAX and PyTorch: its gradient is symmetric.  For symmetric perturbations the two
conventions agree.  Real matrices only; the
decompositions assume distinct eigenvalues (eigh) and nonsingular matrices.
"""

import types as _types

import numpy as onp
import scipy.linalg as _sla

from ..core import defjvp, defvjp_direct
from ..numpy import numpy_wrapper as anp
from ..numpy._linalg_rules import hermitian_part
from ..tracer import getval, isbox, primitive

_SKIP = frozenset(["test", "LinAlgError", "LinAlgWarning"])


def _build():
    ns = {}
    for name in dir(_sla):
        if name.startswith("_") or name in _SKIP:
            continue
        obj = getattr(_sla, name)
        if (
            isinstance(obj, (_types.FunctionType, _types.BuiltinFunctionType))
            or callable(obj)
            and not isinstance(obj, type)
            and not isinstance(obj, _types.ModuleType)
        ):
            ns[name] = primitive(obj)
        elif not isinstance(obj, _types.ModuleType):
            ns[name] = obj
    return ns


_namespace = _build()
globals().update(_namespace)
LinAlgError = _sla.LinAlgError


# ---------------------------------------------------------------------------------------
# small traced helpers


def T(x):
    return anp.swapaxes(x, -1, -2)


def _ndim(x):
    return onp.ndim(getval(x))


def _n(x):
    return onp.shape(getval(x))[-1]


def _outer_right(u, v):
    """u v^T for column vectors (1-d) or u @ v^T for matrices."""
    if _ndim(u) == 1:
        return anp.outer(u, v)
    return anp.matmul(u, T(v))


def _mask(n, kind):
    if kind == "lower":
        return onp.tril(onp.ones((n, n)))
    if kind == "strict_lower":
        return onp.tril(onp.ones((n, n)), -1)
    if kind == "upper":
        return onp.triu(onp.ones((n, n)))
    if kind == "strict_upper":
        return onp.triu(onp.ones((n, n)), 1)
    raise ValueError(kind)


def _seen(x, lower):
    """The symmetric matrix a routine sees when it reads only one triangle of ``x``."""
    n = _n(x)
    if lower:
        return x * _mask(n, "lower") + T(x * _mask(n, "strict_lower"))
    return x * _mask(n, "upper") + T(x * _mask(n, "strict_upper"))


def _seen_adjoint(z, lower):
    """The adjoint of ``_seen``: a cotangent of the seen matrix -> one of ``x``."""
    n = _n(z)
    if lower:
        return z * _mask(n, "lower") + T(z) * _mask(n, "strict_lower")
    return z * _mask(n, "upper") + T(z) * _mask(n, "strict_upper")


def _trans_code(trans):
    return {0: 0, 1: 1, 2: 1, "N": 0, "T": 1, "C": 1}[trans if not isinstance(trans, str) else trans.upper()]


# ---------------------------------------------------------------------------------------
# solve_triangular

solve_triangular = _namespace["solve_triangular"]


def _st_opts(trans=0, lower=False, unit_diagonal=False, *rest, **kwargs):
    return _trans_code(trans), lower, unit_diagonal


def _tri_mask(a, lower, unit_diagonal):
    m = _mask(_n(a), "lower" if lower else "upper")
    if unit_diagonal:
        m = m - onp.eye(_n(a))
    return m


def _st_vjp_a(g, ans, a, b, *args, **kwargs):
    tr, lower, unit = _st_opts(*args, **kwargs)
    gb = solve_triangular(a, g, trans=1 - tr, lower=lower, unit_diagonal=unit)
    ga = -_outer_right(gb, ans) if tr == 0 else -_outer_right(ans, gb)
    return ga * _tri_mask(a, lower, unit)


def _st_vjp_b(g, ans, a, b, *args, **kwargs):
    tr, lower, unit = _st_opts(*args, **kwargs)
    return solve_triangular(a, g, trans=1 - tr, lower=lower, unit_diagonal=unit)


def _st_jvp_a(t, ans, a, b, *args, **kwargs):
    tr, lower, unit = _st_opts(*args, **kwargs)
    t = t * _tri_mask(a, lower, unit)
    op_t = t if tr == 0 else T(t)
    return solve_triangular(a, -anp.matmul(op_t, ans), trans=tr, lower=lower, unit_diagonal=unit)


defvjp_direct(solve_triangular, _st_vjp_a, _st_vjp_b)
defjvp(solve_triangular, _st_jvp_a, "same")


# ---------------------------------------------------------------------------------------
# solve_banded


def _band_to_dense_raw(ab, l, u):
    ab = onp.asarray(ab)
    n = ab.shape[-1]
    out = onp.zeros((n, n), dtype=ab.dtype)
    for k in range(-l, u + 1):  # k = j - i (the k-th diagonal)
        row = u - k
        if k >= 0:
            idx = onp.arange(n - k)
            out[idx, idx + k] = ab[row, k:]
        else:
            idx = onp.arange(n + k)
            out[idx - k, idx] = ab[row, : n + k]
    return out


def _dense_to_band_raw(A, l, u):
    A = onp.asarray(A)
    n = A.shape[-1]
    out = onp.zeros((l + u + 1, n), dtype=A.dtype)
    for k in range(-l, u + 1):
        row = u - k
        if k >= 0:
            idx = onp.arange(n - k)
            out[row, k:] = A[idx, idx + k]
        else:
            idx = onp.arange(n + k)
            out[row, : n + k] = A[idx - k, idx]
    return out


_band_to_dense_raw.__name__ = "band_to_dense"
_dense_to_band_raw.__name__ = "dense_to_band"
band_to_dense = primitive(_band_to_dense_raw)
dense_to_band = primitive(_dense_to_band_raw)
defvjp_direct(band_to_dense, lambda g, ans, ab, l, u: dense_to_band(g, l, u))
defvjp_direct(dense_to_band, lambda g, ans, A, l, u: band_to_dense(g, l, u))
defjvp(band_to_dense, "same")
defjvp(dense_to_band, "same")

solve_banded = _namespace["solve_banded"]


def _sb_transposed(l_and_u, ab):
    l, u = l_and_u
    return (u, l), dense_to_band(T(band_to_dense(ab, l, u)), u, l)


def _sb_vjp_ab(g, ans, l_and_u, ab, b, *args, **kwargs):
    lu_t, ab_t = _sb_transposed(l_and_u, ab)
    gb = solve_banded(lu_t, ab_t, g)
    return dense_to_band(-_outer_right(gb, ans), *l_and_u)


def _sb_vjp_b(g, ans, l_and_u, ab, b, *args, **kwargs):
    lu_t, ab_t = _sb_transposed(l_and_u, ab)
    return solve_banded(lu_t, ab_t, g)


def _sb_jvp_ab(t, ans, l_and_u, ab, b, *args, **kwargs):
    return solve_banded(l_and_u, ab, -anp.matmul(band_to_dense(t, *l_and_u), ans))


defvjp_direct(solve_banded, None, _sb_vjp_ab, _sb_vjp_b)
defjvp(solve_banded, None, _sb_jvp_ab, "same")


# ---------------------------------------------------------------------------------------
# solve_sylvester and sqrtm

solve_sylvester = _namespace["solve_sylvester"]


def _syl_vjp_q(g, ans, a, b, q):
    return solve_sylvester(T(a), T(b), g)


defvjp_direct(
    solve_sylvester,
    lambda g, ans, a, b, q: -anp.matmul(_syl_vjp_q(g, ans, a, b, q), T(ans)),
    lambda g, ans, a, b, q: -anp.matmul(T(ans), _syl_vjp_q(g, ans, a, b, q)),
    _syl_vjp_q,
)
defjvp(
    solve_sylvester,
    lambda t, ans, a, b, q: solve_sylvester(a, b, -anp.matmul(t, ans)),
    lambda t, ans, a, b, q: solve_sylvester(a, b, -anp.matmul(ans, t)),
    "same",
)

sqrtm = _namespace["sqrtm"]
defvjp_direct(sqrtm, lambda g, ans, A, *args, **kwargs: solve_sylvester(T(ans), T(ans), g))
defjvp(sqrtm, lambda t, ans, A, *args, **kwargs: solve_sylvester(ans, ans, t))


# ---------------------------------------------------------------------------------------
# solve, inv, det

_solve_raw = _sla.solve
_SYMMETRIC = frozenset(["sym", "her", "pos", "symmetric", "hermitian", "positive definite", "pos def"])


def _solve_prim_raw(a, b, **kwargs):
    return _solve_raw(a, b, **kwargs)


_solve_prim_raw.__name__ = _solve_prim_raw.__qualname__ = "solve"
_solve = primitive(_solve_prim_raw)


def _solve_vjp_b(g, ans, a, b, **kwargs):
    return _solve(T(a), g, **kwargs)


defvjp_direct(_solve, lambda g, ans, a, b, **kw: -_outer_right(_solve_vjp_b(g, ans, a, b, **kw), ans), _solve_vjp_b)
defjvp(_solve, lambda t, ans, a, b, **kw: _solve(a, -anp.matmul(t, ans), **kw), "same")


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None, transposed=False):
    """scipy.linalg.solve with gradients w.r.t. ``a`` and ``b`` (2-d ``a``)."""
    kw = dict(lower=lower, check_finite=check_finite)
    if assume_a is not None:
        kw["assume_a"] = assume_a
    if not (isbox(a) or isbox(b)):
        return _solve_raw(a, b, overwrite_a=overwrite_a, overwrite_b=overwrite_b, transposed=transposed, **kw)
    if transposed:
        a = T(a)
    if assume_a in _SYMMETRIC:
        a = _seen(a, lower)  # what SciPy reads: one triangle
    return _solve(a, b, **kw)


solve.__wrapped__ = _solve_raw

inv = _namespace["inv"]
defvjp_direct(inv, lambda g, ans, a, *args, **kw: -anp.matmul(T(ans), anp.matmul(g, T(ans))))
defjvp(inv, lambda t, ans, a, *args, **kw: -anp.matmul(ans, anp.matmul(t, ans)))

det = _namespace["det"]


def _ex2(x):
    return anp.reshape(x, onp.shape(getval(x)) + (1, 1))


defvjp_direct(det, lambda g, ans, a, *args, **kw: _ex2(g * ans) * T(inv(a)))
defjvp(det, lambda t, ans, a, *args, **kw: ans * anp.sum(T(inv(a)) * t, axis=(-2, -1)))


# ---------------------------------------------------------------------------------------
# cholesky, cho_factor, cho_solve


def _chol_lower_raw(a):
    return _sla.cholesky(a, lower=True)


_chol_lower_raw.__name__ = _chol_lower_raw.__qualname__ = "cholesky"
_chol_lower = primitive(_chol_lower_raw)


def _phi(x):
    """Lower triangle with the diagonal halved."""
    n = _n(x)
    return x * (_mask(n, "strict_lower") + 0.5 * onp.eye(n))


def _chol_vjp(g, ans, a):
    L = ans
    P = _phi(anp.matmul(T(L), g))
    W = solve_triangular(L, P, trans=1, lower=True)  # L^-T P
    Z = T(solve_triangular(L, T(W), trans=1, lower=True))  # L^-T P L^-1
    return hermitian_part(Z)  # (the symmetric part: see the module docstring)


def _chol_jvp(t, ans, a):
    L = ans
    S = hermitian_part(t)
    V = solve_triangular(L, S, lower=True)  # L^-1 S
    Y = T(solve_triangular(L, T(V), lower=True))  # L^-1 S L^-T
    return anp.matmul(L, _phi(Y))


defvjp_direct(_chol_lower, _chol_vjp)
defjvp(_chol_lower, _chol_jvp)


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """scipy.linalg.cholesky with gradients (SciPy reads one triangle of ``a``; the
    gradient is that of the symmetric part of ``a``, symmetric, as numpy.linalg.cholesky's)."""
    if not isbox(a):
        return _sla.cholesky(a, lower=lower, overwrite_a=overwrite_a, check_finite=check_finite)
    if lower:
        return _chol_lower(a)
    return T(_chol_lower(T(a)))


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """scipy.linalg.cho_factor with gradients.  For a traced ``a`` the unused triangle of
    the factor is zero (SciPy leaves arbitrary values there, which nothing reads)."""
    if not isbox(a):
        return _sla.cho_factor(a, lower=lower, overwrite_a=overwrite_a, check_finite=check_finite)
    return cholesky(a, lower=lower), lower


def _cho_solve_raw(c, b, lower):
    return _sla.cho_solve((c, lower), b)


_cho_solve_raw.__name__ = _cho_solve_raw.__qualname__ = "cho_solve"
_cho_solve = primitive(_cho_solve_raw)


def _cho_vjp_c(g, ans, c, b, lower):
    gb = _cho_solve(c, g, lower)
    gA = -_outer_right(gb, ans)
    S = gA + T(gA)
    n = _n(c)
    if lower:
        return anp.matmul(S, c * _mask(n, "lower")) * _mask(n, "lower")
    return anp.matmul(c * _mask(n, "upper"), S) * _mask(n, "upper")


def _cho_jvp_c(t, ans, c, b, lower):
    n = _n(c)
    if lower:
        L, dL = c * _mask(n, "lower"), t * _mask(n, "lower")
        dA = anp.matmul(dL, T(L)) + anp.matmul(L, T(dL))
    else:
        U, dU = c * _mask(n, "upper"), t * _mask(n, "upper")
        dA = anp.matmul(T(dU), U) + anp.matmul(T(U), dU)
    return _cho_solve(c, -anp.matmul(dA, ans), lower)


defvjp_direct(_cho_solve, _cho_vjp_c, lambda g, ans, c, b, lower: _cho_solve(c, g, lower), None)
defjvp(_cho_solve, _cho_jvp_c, "same", None)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """scipy.linalg.cho_solve with gradients w.r.t. the factor and ``b``."""
    c, lower = c_and_lower
    if not (isbox(c) or isbox(b)):
        return _sla.cho_solve((c, lower), b, overwrite_b=overwrite_b, check_finite=check_finite)
    return _cho_solve(c, b, bool(lower))


# ---------------------------------------------------------------------------------------
# expm and expm_frechet


def _blocks_raw(a, b, c, d):
    """The block matrix [[a, b], [c, d]] of n x n blocks (None = a zero block)."""
    n = next(onp.shape(x)[-1] for x in (a, b, c, d) if x is not None)
    dtype = onp.result_type(*[x for x in (a, b, c, d) if x is not None])
    out = onp.zeros((2 * n, 2 * n), dtype=dtype)
    for x, (i, j) in zip((a, b, c, d), ((0, 0), (0, 1), (1, 0), (1, 1))):
        if x is not None:
            out[i * n : (i + 1) * n, j * n : (j + 1) * n] = x
    return out


_blocks_raw.__name__ = "blocks"
blocks = primitive(_blocks_raw)


def _block(M, i, j):
    n = onp.shape(getval(M))[-1] // 2
    return M[i * n : (i + 1) * n, j * n : (j + 1) * n]


def _blocks_vjp(i, j):
    return lambda g, ans, *args: _block(g, i, j)


def _blocks_jvp(k):
    def jvp(t, ans, *args):
        parts = [None, None, None, None]
        parts[k] = t
        return blocks(*parts)

    return jvp


defvjp_direct(blocks, _blocks_vjp(0, 0), _blocks_vjp(0, 1), _blocks_vjp(1, 0), _blocks_vjp(1, 1))
defjvp(blocks, *[_blocks_jvp(k) for k in range(4)])


def _frechet_raw(A, E):
    return _sla.expm_frechet(A, E, compute_expm=False)


_frechet_raw.__name__ = "expm_frechet"
_frechet = primitive(_frechet_raw)


def _frechet_vjp_A(g, ans, A, E):
    F = _frechet(T(blocks(A, E, None, A)), blocks(None, g, None, None))
    return _block(F, 0, 0) + _block(F, 1, 1)


def _frechet_jvp_A(t, ans, A, E):
    return _block(_frechet(blocks(A, E, None, A), blocks(t, None, None, t)), 0, 1)


defvjp_direct(_frechet, _frechet_vjp_A, lambda g, ans, A, E: _frechet(T(A), g))
defjvp(_frechet, _frechet_jvp_A, "same")

expm = _namespace["expm"]
defvjp_direct(expm, lambda g, ans, A: _frechet(T(A), g))
defjvp(expm, lambda t, ans, A: _frechet(A, t))


def expm_frechet(A, E, method=None, compute_expm=True, check_finite=True):
    """scipy.linalg.expm_frechet with gradients w.r.t. ``A`` and ``E`` (to any order)."""
    if not (isbox(A) or isbox(E)):
        return _sla.expm_frechet(A, E, method=method, compute_expm=compute_expm, check_finite=check_finite)
    L = _frechet(A, E)
    return (expm(A), L) if compute_expm else L


# ---------------------------------------------------------------------------------------
# lu_factor and lu_solve


def _perm_from_piv(piv):
    perm = onp.arange(len(piv))
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return perm  # A[perm] = L @ U


def _lu_raw(a):
    return _sla.lu_factor(a)[0]


_lu_raw.__name__ = "lu_factor"
_lu_packed = primitive(_lu_raw)


def _L_of(lu):
    n = _n(lu)
    return lu * _mask(n, "strict_lower") + onp.eye(n)


def _U_of(lu):
    return lu * _mask(_n(lu), "upper")


def _lu_perm(a):
    return _perm_from_piv(_sla.lu_factor(getval(a))[1])


def _lu_vjp(g, ans, a):
    n = _n(a)
    perm = _lu_perm(a)
    K = anp.matmul(T(_L_of(ans)), g) * _mask(n, "strict_lower") + anp.matmul(g, T(_U_of(ans))) * _mask(n, "upper")
    W = solve_triangular(ans, K, trans=1, lower=True, unit_diagonal=True)  # L^-T K
    W = T(solve_triangular(ans, T(W), lower=False))  # ... U^-T
    return W[onp.argsort(perm)]


def _lu_jvp(t, ans, a):
    n = _n(a)
    perm = _lu_perm(a)
    F = solve_triangular(ans, t[perm], lower=True, unit_diagonal=True)  # L^-1 P dA
    F = T(solve_triangular(ans, T(F), trans=1, lower=False))  # ... U^-1
    return anp.matmul(_L_of(ans), F * _mask(n, "strict_lower")) + anp.matmul(F * _mask(n, "upper"), _U_of(ans))


defvjp_direct(_lu_packed, _lu_vjp)
defjvp(_lu_packed, _lu_jvp)


def lu_factor(a, overwrite_a=False, check_finite=True):
    """scipy.linalg.lu_factor with gradients of the packed factor ``lu`` (``piv`` is an
    integer array, constant)."""
    if not isbox(a):
        return _sla.lu_factor(a, overwrite_a=overwrite_a, check_finite=check_finite)
    return _lu_packed(a), _sla.lu_factor(getval(a))[1]


def _lu_solve_raw(lu, b, piv, trans):
    return _sla.lu_solve((lu, piv), b, trans=trans)


_lu_solve_raw.__name__ = "lu_solve"
_lu_solve = primitive(_lu_solve_raw)


def _lus_vjp_b(g, ans, lu, b, piv, trans):
    return _lu_solve(lu, g, piv, 1 - _trans_code(trans))


def _lus_vjp_lu(g, ans, lu, b, piv, trans):
    n = _n(lu)
    tr = _trans_code(trans)
    gb = _lus_vjp_b(g, ans, lu, b, piv, trans)
    gA = -_outer_right(gb, ans) if tr == 0 else -_outer_right(ans, gb)
    G = gA[_perm_from_piv(piv)]
    return anp.matmul(G, T(_U_of(lu))) * _mask(n, "strict_lower") + anp.matmul(T(_L_of(lu)), G) * _mask(n, "upper")


def _lus_jvp_lu(t, ans, lu, b, piv, trans):
    n = _n(lu)
    tr = _trans_code(trans)
    dA = anp.matmul(t * _mask(n, "strict_lower"), _U_of(lu)) + anp.matmul(_L_of(lu), t * _mask(n, "upper"))
    dA = dA[onp.argsort(_perm_from_piv(piv))]
    op = dA if tr == 0 else T(dA)
    return _lu_solve(lu, -anp.matmul(op, ans), piv, tr)


defvjp_direct(_lu_solve, _lus_vjp_lu, _lus_vjp_b, None, None)
defjvp(_lu_solve, _lus_jvp_lu, "same", None, None)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """scipy.linalg.lu_solve with gradients w.r.t. the packed factor and ``b``."""
    lu, piv = lu_and_piv
    if not (isbox(lu) or isbox(b)):
        return _sla.lu_solve((lu, piv), b, trans=trans, overwrite_b=overwrite_b, check_finite=check_finite)
    return _lu_solve(lu, b, onp.asarray(piv), _trans_code(trans))


# ---------------------------------------------------------------------------------------
# eigh (real symmetric, standard problem)


def _eigh_w_raw(a, lower):
    return _sla.eigh(a, lower=lower, eigvals_only=True)


def _eigh_v_raw(a, lower):
    return _sla.eigh(a, lower=lower)[1]


_eigh_w_raw.__name__ = _eigh_v_raw.__name__ = "eigh"
_eigh_w = primitive(_eigh_w_raw)
_eigh_v = primitive(_eigh_v_raw)


def _eig_F(w):
    n = onp.shape(getval(w))[-1]
    eye = onp.eye(n)
    diff = anp.reshape(w, (1, n)) - anp.reshape(w, (n, 1))  # w_j - w_i
    return (1.0 - eye) / (diff + eye)


def _eigh_w_vjp(g, ans, a, lower):
    V = _eigh_v(a, lower)
    return _seen_adjoint(anp.matmul(V * anp.reshape(g, (1, -1)), T(V)), lower)


def _eigh_w_jvp(t, ans, a, lower):
    V = _eigh_v(a, lower)
    return anp.sum(V * anp.matmul(_seen(t, lower), V), axis=0)


def _eigh_v_vjp(g, ans, a, lower):
    V = ans
    F = _eig_F(_eigh_w(a, lower))
    Z = anp.matmul(V, anp.matmul(F * anp.matmul(T(V), g), T(V)))
    return _seen_adjoint(Z, lower)


def _eigh_v_jvp(t, ans, a, lower):
    V = ans
    F = _eig_F(_eigh_w(a, lower))
    return anp.matmul(V, F * anp.matmul(T(V), anp.matmul(_seen(t, lower), V)))


defvjp_direct(_eigh_w, _eigh_w_vjp, None)
defjvp(_eigh_w, _eigh_w_jvp, None)
defvjp_direct(_eigh_v, _eigh_v_vjp, None)
defjvp(_eigh_v, _eigh_v_jvp, None)


def eigh(a, b=None, *, lower=True, eigvals_only=False, **kwargs):
    """scipy.linalg.eigh with gradients w.r.t. ``a`` for the standard real symmetric
    problem (``b=None``, full spectrum, distinct eigenvalues)."""
    if not isbox(a) and not isbox(b):
        return _sla.eigh(a, b, lower=lower, eigvals_only=eigvals_only, **kwargs)
    if b is not None or any(k.startswith("subset") for k in kwargs):
        raise NotImplementedError(
            "fastgrad.scipy.linalg.eigh differentiates only the standard problem (b=None) with the full spectrum"
        )
    w = _eigh_w(a, bool(lower))
    return w if eigvals_only else (w, _eigh_v(a, bool(lower)))


_namespace.update(
    solve=solve,
    cholesky=cholesky,
    cho_factor=cho_factor,
    cho_solve=cho_solve,
    expm_frechet=expm_frechet,
    lu_factor=lu_factor,
    lu_solve=lu_solve,
    eigh=eigh,
)
__all__ = sorted(_namespace)
