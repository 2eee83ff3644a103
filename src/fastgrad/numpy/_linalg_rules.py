"""Reverse (VJP) and forward (JVP) rules of fastgrad.numpy.linalg.

Conventions
-----------
* Every rule works on stacks of matrices (the last two axes are the matrix axes) and on
  real and complex values.
* Complex cotangents follow fastgrad's (autograd's) pairing: a cotangent ``g`` of ``y``
  acts on a change ``dy`` as ``Re(sum(g * dy))`` (no conjugation).  With it the reverse
  rule of a holomorphic map ``dy = P dA Q`` is ``P^T g Q^T`` (plain transposes), and
  that of ``dy = P dA^H Q`` is ``conj(Q g^T P)``.  Every reverse rule below is the
  adjoint, under that pairing, of the forward rule next to it.
* Rules compute with fastgrad.numpy primitives (matmul, solve, eigh...), so they are
  differentiable again (second order, forward-over-reverse); shapes, dtypes and masks
  come from plain values.
* Functions that read one triangle of their argument (eigh, eigvalsh, and svd / pinv
  with ``hermitian=True``) are differentiated as the functions NumPy computes: the
  Hermitian matrix built from that triangle (``herm_from_triangle``), so the gradient
  lives in that triangle (the diagonal is real for complex input, since LAPACK ignores the
  imaginary part of a Hermitian matrix's diagonal).  This is what numerical differences
  give, and it agrees with autograd's eigh.  cholesky is the exception, as in autograd,
  JAX and PyTorch: it is differentiated as a function of the Hermitian part
  ``(A + A^H) / 2``, so its gradient is Hermitian and a gradient step keeps a symmetric
  matrix symmetric.  For any function of a matrix built Hermitian, such as ``X @ X.T``,
  the two conventions give the same result.

Degenerate points (documented at each rule): eigenvectors at repeated eigenvalues and
singular vectors at repeated or zero singular values are not differentiable functions
of the matrix.  There the terms that would divide by zero are set to zero, which keeps
results finite and exact for functions that only use the eigenvalues / singular values
(or are invariant to the choice of basis of the degenerate subspace), but derivatives of
individual degenerate vectors are then not meaningful.
"""

import functools
import inspect
import math

import numpy as onp

from .. import _backends
from ..builtins import container_untake, make_sequence
from ..core import SparseObject, def_linear, defjvp, defvjp_argnums, defvjp_direct, vspace
from ..tracer import Box, getval, primitive
from . import numpy_wrapper as anp
from ._products import MATMUL_VJPS, OUTER_VJPS, TENSORDOT_VJPS
from ._reductions import trace_vjp
from ._registration import LINEAR, def_rules
from ._shapes import (
    constant_like,
    data_of,
    dtype_of,
    inverse_permutation,
    is_complex,
    may_hold_true,
    ndim_of,
    shape_and_dtype,
    shape_of,
    unbroadcast,
    zeros_on,
)

_matmul, _swapaxes, _conj, _real, _imag = anp.matmul, anp.swapaxes, anp.conjugate, anp.real, anp.imag
_diagonal, _make_diagonal, _where = anp.diagonal, anp.make_diagonal, anp.where3
_expand_dims, _reshape, _sum, _abs = anp.expand_dims, anp.reshape, anp.sum, anp.absolute
_moveaxis, _concatenate = anp.moveaxis, anp.concatenate

# the linalg primitives the rules call (set by register(), which linalg.py calls)
_L = {}


# ---------------------------------------------------------------------------------------
# Small helpers


def T(x):
    """Swap the last two axes."""
    return _swapaxes(x, -1, -2)


def H(x):
    """Conjugate transpose over the last two axes (a transpose for real values)."""
    return _conj(T(x)) if is_complex(x) else T(x)


def _cj(x):
    return _conj(x) if is_complex(x) else x


def _diag(x):
    """The main diagonal over the last two axes."""
    return _diagonal(x, 0, -2, -1)


def _expand2(x):
    """A stack of scalars (...) as a stack of 1x1 matrices (..., 1, 1)."""
    return _reshape(x, shape_of(x) + (1, 1))


def _row(v):
    """(..., k) -> (..., 1, k): scales columns when multiplied."""
    return _expand_dims(v, -2)


def _col(v):
    """(..., k) -> (..., k, 1): scales rows when multiplied."""
    return _expand_dims(v, -1)


def _is_zero(x):
    """True for a cotangent that is a plain all-zero value (a part of a result the
    function using it did not depend on).  Traced values never count as zero."""
    if x is None:
        return True
    if isinstance(x, Box):
        return False
    return not may_hold_true(data_of(x))  # (another library's value: not looked at)


def _part_raw(t, i):
    if type(t) is SparseObject:  # a sparse cotangent (or tangent) of a tuple: densify
        t = t.mut_add(t.vs.zeros())
    return t[i]


_part_raw.__name__ = _part_raw.__qualname__ = "tuple_part"
_tuple_part = primitive(_part_raw)
defvjp_direct(_tuple_part, lambda g, ans, t, i: container_untake(g, i, vspace(t)), None)
defjvp(_tuple_part, "same")


def _part(t, i):
    """Element ``i`` of a result tuple, cotangent tuple or tangent tuple (traced or not).

    A traced tuple is read with a primitive that also accepts a sparse tangent, which a
    tuple cotangent being differentiated in forward mode can have."""
    if isinstance(t, Box):
        return _tuple_part(t, i)
    if type(t) is SparseObject:
        t = t.mut_add(t.vs.zeros())
    return t[i]


def _parts(t):
    return [_part(t, i) for i in range(len(t))]


def _type_of(x):
    return type(getval(x))


def _tangent_tuple(ans, *parts):
    """A tangent (or cotangent) with the (named) tuple type of ``ans``; traced if any part is."""
    return make_sequence(_type_of(ans), *parts)


def _cast_like(t, like):
    """``t`` in the dtype of ``like`` (complex -> real when ``like`` is real); same shape."""
    return unbroadcast(t, like)


def _inverse_gaps(w):
    """F with F[..., i, j] = 1 / (w[j] - w[i]) off the diagonal and 0 on it.

    Where two entries of ``w`` are exactly equal (a repeated eigenvalue or singular value,
    a degenerate point), F is set to 0 as well: see the module docstring."""
    E = _expand_dims(w, -2) - _expand_dims(w, -1)
    zero = data_of(E) == 0  # the diagonal, and exact ties
    return _where(zero, 0.0, 1.0 / _where(zero, 1.0, E))


def _safe(x):
    """``x`` with its exact zeros replaced by ones (to divide by it)."""
    zero = data_of(x) == 0
    return _where(zero, 1.0, x) if may_hold_true(zero) else x


# ---------------------------------------------------------------------------------------
# The Hermitian matrix NumPy's eigh / cholesky / svd(hermitian) read from one triangle


def _herm_from_triangle_raw(a, lower):
    """The Hermitian (symmetric) matrix whose lower (upper) triangle is that of ``a``, with
    the real part of ``a``'s diagonal: the matrix LAPACK works on.  Real-linear in ``a``."""
    a = data_of(a)  # (array operations only: another library's array stays in it)
    tri = onp.tril(a, -1) if lower else onp.triu(a, 1)
    return onp.where(_eye_mask(a), a.real, tri + onp.conj(onp.swapaxes(tri, -1, -2)))


def _herm_adjoint_raw(g, lower):
    """The adjoint of herm_from_triangle under Re(sum(g * dy)): the cotangent lands in the
    triangle that was read (off-diagonal entries get g_ij + conj(g_ji))."""
    g = data_of(g)
    s = g + onp.conj(onp.swapaxes(g, -1, -2))
    return onp.where(_eye_mask(g), g.real, onp.tril(s, -1) if lower else onp.triu(s, 1))


def _eye_mask(a):
    """The diagonal of ``a``'s last two axes as a boolean mask, in ``a``'s library."""
    return constant_like(onp.eye(a.shape[-1], dtype=bool), a)


_herm_from_triangle_raw.__name__ = _herm_from_triangle_raw.__qualname__ = "herm_from_triangle"
_herm_adjoint_raw.__name__ = _herm_adjoint_raw.__qualname__ = "herm_from_triangle_adjoint"
herm_from_triangle = primitive(_herm_from_triangle_raw)
herm_from_triangle_adjoint = primitive(_herm_adjoint_raw)
defvjp_direct(herm_from_triangle, lambda g, ans, a, lower: unbroadcast(herm_from_triangle_adjoint(g, lower), a))
defvjp_direct(herm_from_triangle_adjoint, lambda g, ans, a, lower: unbroadcast(herm_from_triangle(g, lower), a))
defjvp(herm_from_triangle, "same")
defjvp(herm_from_triangle_adjoint, "same")


def _lower_of(UPLO):
    return str(UPLO).upper() == "L"


# ---------------------------------------------------------------------------------------
# det, slogdet, inv, solve


def _solve_T(a, x):
    """A^{-T} x for a stack of matrices x."""
    return _L["solve"](T(a), x)


def _det_vjp(g, ans, a):
    # d det = det tr(A^{-1} dA);  a singular matrix has no A^{-1} (LinAlgError)
    return unbroadcast(_expand2(g * ans) * T(_L["inv"](a)), a)


def _trace_solve(a, da):
    """tr(A^{-1} dA) over the last two axes."""
    return _sum(_diag(_L["solve"](a, da)), -1)


def _det_jvp(g, ans, a):
    return _cast_like(ans * _trace_solve(a, g), ans)


def _slogdet_vjp(g, ans, a):
    # With t = tr(A^{-1} dA): d logabsdet = Re t and d sign = sign * i Im t (0 for real A).
    g_sign, g_logabs = _part(g, 0), _part(g, 1)
    if is_complex(a) and not _is_zero(g_sign):
        c = g_logabs + 1j * _imag(g_sign * _part(ans, 0))
    else:
        c = g_logabs
    return unbroadcast(_expand2(c) * T(_L["inv"](a)), a)


def _slogdet_jvp(g, ans, a):
    t = _trace_solve(a, g)
    sign, logabs = _part(ans, 0), _part(ans, 1)
    if is_complex(a):
        d_sign = sign * (1j * _imag(t))
        d_logabs = _real(t)
    else:
        d_sign = zeros_on(sign, shape_of(sign), dtype_of(sign))
        d_logabs = t
    return _tangent_tuple(ans, _cast_like(d_sign, sign), _cast_like(d_logabs, logabs))


def _inv_vjp(g, ans, a):
    return unbroadcast(-_matmul(T(ans), _matmul(g, T(ans))), a)


def _inv_jvp(g, ans, a):
    return -_matmul(ans, _matmul(g, ans))


# solve's b is a vector: since NumPy 2 when it is 1-D, before when it has one axis less than a
_SOLVE_B_1D = int(onp.__version__.split(".")[0]) >= 2


def _b_is_vector(a, b):
    return ndim_of(b) == 1 if _SOLVE_B_1D else ndim_of(b) == ndim_of(a) - 1


def _solve_vjp_a(g, ans, a, b):
    if _b_is_vector(a, b):
        gb = _solve_T(a, _col(g))
        return unbroadcast(-gb * _row(ans), a)
    gb = _solve_T(a, g)
    return unbroadcast(-_matmul(gb, T(ans)), a)


def _solve_vjp_b(g, ans, a, b):
    if _b_is_vector(a, b):
        return unbroadcast(_solve_T(a, _col(g))[..., 0], b)
    return unbroadcast(_solve_T(a, g), b)


def _solve_jvp_a(g, ans, a, b):
    if _b_is_vector(a, b):
        return -_L["solve"](a, _matmul(g, _col(ans)))[..., 0]
    return -_L["solve"](a, _matmul(g, ans))


def _solve_jvp_b(g, ans, a, b):
    if _b_is_vector(a, b):
        return _L["solve"](a, _col(g))[..., 0]
    return _L["solve"](a, g)


# ---------------------------------------------------------------------------------------
# pinv (the derivative of the pseudo-inverse where the rank is locally constant)
#   dX = -X dA X + X X^H dA^H (I - A X) + (I - X A) dA^H X^H X


def _pinv_matrix(a, kwargs):
    return herm_from_triangle(a, True) if kwargs.get("hermitian") else a


def _pinv_core_jvp(X, A, dA):
    XH = H(X)
    t1 = -_matmul(X, _matmul(dA, X))
    dAH = H(dA)
    t2 = _matmul(_matmul(X, XH), _matmul(dAH, _eye_minus(_matmul(A, X))))
    t3 = _matmul(_eye_minus(_matmul(X, A)), _matmul(dAH, _matmul(XH, X)))
    return t1 + t2 + t3


def _eye_minus(P):
    """I - P for a stack of square matrices P."""
    n = shape_of(P)[-1]
    return constant_like(onp.eye(n, dtype=dtype_of(P)), P) - P


def _pinv_core_vjp(X, A, g):
    XH = H(X)
    gT = T(g)
    t1 = -_matmul(T(X), _matmul(g, T(X)))
    t2 = _cj(_matmul(_eye_minus(_matmul(A, X)), _matmul(gT, _matmul(X, XH))))
    t3 = _cj(_matmul(_matmul(XH, X), _matmul(gT, _eye_minus(_matmul(X, A)))))
    return t1 + t2 + t3


def _pinv_jvp(g, ans, a, *args, **kwargs):
    kw = _pinv_kwargs(args, kwargs)
    A = _pinv_matrix(a, kw)
    dA = herm_from_triangle(g, True) if kw.get("hermitian") else g
    return _cast_like(_pinv_core_jvp(ans, A, dA), ans)


def _pinv_vjp(g, ans, a, *args, **kwargs):
    kw = _pinv_kwargs(args, kwargs)
    cot = _pinv_core_vjp(ans, _pinv_matrix(a, kw), g)
    if kw.get("hermitian"):
        cot = herm_from_triangle_adjoint(cot, True)
    return unbroadcast(cot, a)


def _pinv_kwargs(args, kwargs):
    kw = dict(kwargs)
    if len(args) > 1:
        kw["hermitian"] = args[1]
    return kw


# ---------------------------------------------------------------------------------------
# matrix_power, multi_dot


def _powers(a, m):
    """[A^0, A^1, ..., A^m] (A^0 the identity, as a constant)."""
    n = shape_of(a)[-1]
    out = [anp.broadcast_to(constant_like(onp.eye(n, dtype=dtype_of(a)), a), shape_of(a))]
    for _ in range(m):
        out.append(a if len(out) == 1 else _matmul(out[-1], a))
    return out


def _matrix_power_jvp(g, ans, a, n):
    n = int(n)
    if n == 0:
        return None
    if n > 0:
        base, d_base, m = a, g, n
    else:
        base = _L["inv"](a)
        d_base, m = -_matmul(base, _matmul(g, base)), -n
    P = _powers(base, m - 1)
    total = None
    for k in range(m):  # d(B^m) = sum_k B^k dB B^(m-1-k)
        term = _matmul(P[k], _matmul(d_base, P[m - 1 - k]))
        total = term if total is None else total + term
    return total


def _matrix_power_vjp(g, ans, a, n):
    n = int(n)
    if n == 0:
        return None
    base, m = (a, n) if n > 0 else (_L["inv"](a), -n)
    P = _powers(base, m - 1)
    total = None
    for k in range(m):
        term = _matmul(T(P[k]), _matmul(g, T(P[m - 1 - k])))
        total = term if total is None else total + term
    if n < 0:
        total = -_matmul(T(base), _matmul(total, T(base)))
    return unbroadcast(total, a)


def _multi_dot_raw(*arrays):
    if any(_backends.is_foreign(a) for a in arrays):
        # NumPy's multi_dot would convert another library's arrays (Dask has none): the same
        # product as a chain of matmul there, left to right
        return functools.reduce(onp.matmul, arrays)
    return onp.linalg.multi_dot(arrays)


_multi_dot_raw.__name__ = _multi_dot_raw.__qualname__ = "multi_dot"
multi_dot_args = primitive(_multi_dot_raw)


def _as_chain(arrays):
    """The arrays of a multi_dot as 2-D matrices (a 1-D first array is a row, a 1-D last
    array a column), and the shape of the 2-D product."""
    mats = list(arrays)
    last = len(mats) - 1
    if ndim_of(mats[0]) == 1:
        mats[0] = _reshape(mats[0], (1, shape_of(mats[0])[0]))
    if ndim_of(mats[last]) == 1:
        mats[last] = _reshape(mats[last], (shape_of(mats[last])[0], 1))
    return mats


def _chain(mats):
    out = mats[0]
    for m in mats[1:]:
        out = _matmul(out, m)
    return out


def _multi_dot_vjp(argnums, ans, args, kwargs):
    mats = _as_chain(args)
    rows, cols = shape_of(mats[0])[0], shape_of(mats[-1])[-1]

    def vjp(g):
        g2 = _reshape(g, (rows, cols))
        out = []
        for i in argnums:
            c = g2
            if i > 0:
                c = _matmul(T(_chain(mats[:i])), c)
            if i < len(mats) - 1:
                c = _matmul(c, T(_chain(mats[i + 1 :])))
            out.append(unbroadcast(_reshape(c, shape_of(args[i])), args[i]))
        return out

    return vjp


defvjp_argnums(multi_dot_args, _multi_dot_vjp)
def_linear(multi_dot_args)


# ---------------------------------------------------------------------------------------
# cholesky:  A = L L^H.  With P = L^{-1} dA L^{-H}, dL = L Phi(P), Phi = lower triangle with
# half the diagonal.  NumPy reads only the lower (upper=True: upper) triangle of A; the
# rules differentiate the Hermitian part of A instead (module docstring), the same for
# either triangle.


def hermitian_part(x):
    """``(x + x^H) / 2``: self-adjoint under the pairing above, so one function serves
    both rules."""
    return (x + H(x)) * 0.5


def _phi(P):
    n = shape_of(P)[-1]
    w = onp.tri(n, n, -1) + 0.5 * onp.eye(n)
    return P * constant_like(w.astype(_real_dtype(P)), P)


def _cholesky_jvp(g, ans, a, upper=False):
    lower_factor = H(ans) if upper else ans
    dA = hermitian_part(g)
    Linv = _L["inv"](lower_factor)
    dL = _matmul(lower_factor, _phi(_matmul(Linv, _matmul(dA, H(Linv)))))
    return _cast_like(H(dL) if upper else dL, ans)


def _cholesky_vjp(g, ans, a, upper=False):
    lower_factor = H(ans) if upper else ans
    gL = H(g) if upper else g
    Linv = _L["inv"](lower_factor)
    C = _phi(_matmul(T(lower_factor), gL))
    cot = _matmul(T(Linv), _matmul(C, _cj(Linv)))
    return unbroadcast(hermitian_part(cot), a)


# ---------------------------------------------------------------------------------------
# eigh / eigvalsh:  with M = V^H dA V (dA Hermitian),  dw = Re diag(M),  dV = V (F o M),
# F_ij = 1/(w_j - w_i).  Repeated eigenvalues: eigenvectors are not differentiable there
# (F is set to 0 for tied pairs, see _inverse_gaps); the eigenvalues are.  For complex
# input the phase of each eigenvector is arbitrary; dV is the change with V^H dV having a
# zero diagonal, so only phase-invariant functions of V have a meaningful derivative.


def _eigh_core_vjp(w, V, gw, gV):
    inner = _make_diagonal(gw)
    if not _is_zero(gV):
        inner = inner + _inverse_gaps(w) * _matmul(T(V), gV)
    return _matmul(_cj(V), _matmul(inner, T(V)))


def _eigh_vjp(g, ans, a, UPLO="L"):
    cot = _eigh_core_vjp(_part(ans, 0), _part(ans, 1), _part(g, 0), _part(g, 1))
    return unbroadcast(herm_from_triangle_adjoint(cot, _lower_of(UPLO)), a)


def _eigh_jvp(g, ans, a, UPLO="L"):
    w, V = _part(ans, 0), _part(ans, 1)
    M = _matmul(H(V), _matmul(herm_from_triangle(g, _lower_of(UPLO)), V))
    dw = _real(_diag(M)) if is_complex(M) else _diag(M)
    dV = _matmul(V, _inverse_gaps(w) * M)
    return _tangent_tuple(ans, _cast_like(dw, w), _cast_like(dV, V))


def _eigvalsh_vjp(g, ans, a, UPLO="L"):
    w, V = _parts(_L["eigh"](a, UPLO))
    cot = _matmul(_cj(V), _matmul(_make_diagonal(g), T(V)))
    return unbroadcast(herm_from_triangle_adjoint(cot, _lower_of(UPLO)), a)


def _eigvalsh_jvp(g, ans, a, UPLO="L"):
    w, V = _parts(_L["eigh"](a, UPLO))
    M = _matmul(H(V), _matmul(herm_from_triangle(g, _lower_of(UPLO)), V))
    return _cast_like(_real(_diag(M)) if is_complex(M) else _diag(M), ans)


# ---------------------------------------------------------------------------------------
# eig / eigvals (general matrices):  A V = V diag(w).  With M = V^{-1} dA V,
# dw = diag(M), dV = V (F o M) with F_ij = 1/(w_j - w_i), then each column's change is
# made orthogonal (in the real sense) to the column, as NumPy normalizes eigenvectors to
# unit length.  The phase of a complex eigenvector is arbitrary (phase-invariant functions
# only); repeated eigenvalues are degenerate points (F set to 0 for ties); a defective
# matrix (V singular) has no derivative.


def _eig_normalize_jvp(V, dV):
    return dV - V * _row(_real(_sum(_cj(V) * dV, -2)))


def _eig_normalize_vjp(V, gV):
    return gV - _cj(V) * _row(_real(_sum(gV * V, -2)))


def _eig_core_vjp(w, V, gw, gV):
    inner = _make_diagonal(gw)
    if not _is_zero(gV):
        inner = inner + _inverse_gaps(w) * _matmul(T(V), _eig_normalize_vjp(V, gV))
    return _solve_T(V, _matmul(inner, T(V)))


def _eig_vjp(g, ans, a):
    return unbroadcast(_eig_core_vjp(_part(ans, 0), _part(ans, 1), _part(g, 0), _part(g, 1)), a)


def _eig_jvp(g, ans, a):
    w, V = _part(ans, 0), _part(ans, 1)
    M = _L["solve"](V, _matmul(g, V))
    dw = _diag(M)
    dV = _eig_normalize_jvp(V, _matmul(V, _inverse_gaps(w) * M))
    return _tangent_tuple(ans, _cast_like(dw, w), _cast_like(dV, V))


def _eig_matching(a, w_ref):
    """(w, V) of eig(a) (traced), reordered to match the eigenvalues ``w_ref``."""
    w, V = _parts(_L["eig"](a))
    wv, rv = data_of(w), data_of(w_ref)
    if _backends.is_foreign(wv) or _backends.is_foreign(rv):
        return w, V  # (comparing would read another library's data: its eig and eigvals agree)
    if wv.shape == rv.shape and not onp.array_equal(wv, rv):
        # pair each reference eigenvalue with the nearest one (eigvals and eig normally
        # agree exactly; this only guards against a different ordering)
        order = onp.argmin(onp.abs(rv[..., :, None] - wv[..., None, :]), axis=-1)
        if not onp.array_equal(order, onp.broadcast_to(onp.arange(wv.shape[-1]), order.shape)):
            w = anp.take_along_axis(w, order, -1)
            V = anp.take_along_axis(V, onp.expand_dims(order, -2), -1)
    return w, V


def _eigvals_vjp(g, ans, a):
    w, V = _eig_matching(a, ans)
    return unbroadcast(_solve_T(V, _matmul(_make_diagonal(g), T(V))), a)


def _eigvals_jvp(g, ans, a):
    w, V = _eig_matching(a, ans)
    return _cast_like(_diag(_L["solve"](V, _matmul(g, V))), ans)


# ---------------------------------------------------------------------------------------
# svd:  A = U diag(s) Vh, k = min(m, n), U_k / Vh_k the first k columns / rows, V_k = Vh_k^H.
# With dP = U_k^H dA V_k and F_ij = 1/(s_j^2 - s_i^2):
#   ds    = Re diag(dP)
#   dU_k  = U_k [F o (dP S + S dP^H) + i Im diag(dP) / 2S] + (I - U_k U_k^H) dA V_k S^{-1}
#   dV_k  = V_k [F o (S dP + dP^H S) - i Im diag(dP) / 2S] + (I - V_k V_k^H) dA^H U_k S^{-1}
# (the imaginary diagonal terms fix the complex phase gauge, split evenly between U and V)
# and, with full_matrices, for the complement columns U_c (rows Vh_c):
#   dU_c  = -U_k S^{-1} V_k^H dA^H U_c,     dVh_c = -Vh_c dA^H U_k S^{-1} Vh_k
# (their rotation within the complement is arbitrary and set to zero: only functions
# invariant to the choice of complement basis, such as U_c U_c^H, are meaningful).
# Degenerate points: repeated singular values (F; set to 0 for exact ties) and, when
# m != n, full_matrices is used or the input is complex, zero singular values (S^{-1}).


def _svd_split(U, Vh, k, full):
    m, n = shape_of(U)[-2], shape_of(Vh)[-1]
    Uk = U[..., :, :k] if full and m > k else U
    Vhk = Vh[..., :k, :] if full and n > k else Vh
    return m, n, Uk, Vhk


def _svd_jvp_core(U, s, Vh, dA, full, cplx, want_uv=True):
    k = shape_of(s)[-1]
    m, n, Uk, Vhk = _svd_split(U, Vh, k, full)
    Vk = H(Vhk)
    dAVk = _matmul(dA, Vk)
    dP = _matmul(H(Uk), dAVk)
    ds = _real(_diag(dP)) if cplx else _diag(dP)
    if not want_uv:
        return ds
    s_row, s_col = _row(s), _col(s)
    F = _inverse_gaps(s * s)
    dPH = H(dP)
    Om_u = F * (dP * s_row + s_col * dPH)
    Om_v = F * (s_col * dP + dPH * s_row)
    if cplx:
        im = _make_diagonal((0.5j * _imag(_diag(dP))) / _safe(s))
        Om_u = Om_u + im
        Om_v = Om_v - im
    dUk = _matmul(Uk, Om_u)
    if m > k:
        dUk = dUk + (dAVk - _matmul(Uk, dP)) / _safe(s_row)
    dAH = H(dA)
    dVk = _matmul(Vk, Om_v)
    if n > k:
        dAHUk = _matmul(dAH, Uk)
        dVk = dVk + (dAHUk - _matmul(Vk, dPH)) / _safe(s_row)
    dVhk = H(dVk)
    dU, dVh = dUk, dVhk
    if full and m > k:
        Uc = U[..., :, k:]
        dUc = -_matmul(Uk, _matmul(H(dAVk), Uc) / _safe(s_col))
        dU = _concatenate([dUk, dUc], axis=-1)
    if full and n > k:
        Vhc = Vh[..., k:, :]
        dVhc = -_matmul(_matmul(Vhc, _matmul(dAH, Uk)) / _safe(s_row), Vhk)
        dVh = _concatenate([dVhk, dVhc], axis=-2)
    return dU, ds, dVh


def _svd_vjp_core(U, s, Vh, gU, gs, gVh, full, cplx):
    k = shape_of(s)[-1]
    m, n, Uk, Vhk = _svd_split(U, Vh, k, full)
    cUk = _cj(Uk)
    VkT = _cj(Vhk)  # V_k^T
    s_row, s_col = _row(s), _col(s)
    C = _make_diagonal(gs)
    use_u, use_v = not _is_zero(gU), not _is_zero(gVh)
    if use_u or use_v:
        F = _inverse_gaps(s * s)
    if use_u:
        gUk = gU[..., :, :k] if full and m > k else gU
        Ju = _matmul(T(Uk), gUk)
        C = C + (F * (Ju - H(Ju))) * s_row
    if use_v:
        gV = H(gVh)
        gVk = gV[..., :, :k] if full and n > k else gV
        Vk = H(Vhk)
        Jv = _matmul(T(Vk), gVk)
        C = C + s_col * (F * (Jv - H(Jv)))
    if cplx and (use_u or use_v):
        d = 0.0
        if use_u:
            d = d + _imag(_diag(Ju))
        if use_v:
            d = d - _imag(_diag(Jv))
        C = C + _make_diagonal((0.5j * d) / _safe(s))
    cot = _matmul(cUk, _matmul(C, VkT))
    if use_u and m > k:
        cot = cot + _matmul((gUk - _matmul(cUk, Ju)) / _safe(s_row), VkT)
    if use_v and n > k:
        cot = cot + _matmul(cUk, H(gVk - _matmul(_cj(Vk), Jv)) / _safe(s_col))
    if use_u and full and m > k:
        Uc, gUc = U[..., :, k:], gU[..., :, k:]
        cot = cot - _matmul(_matmul(_cj(Uc), H(_matmul(T(Uk), gUc)) / _safe(s_row)), VkT)
    if use_v and full and n > k:
        Vhc = Vh[..., k:, :]
        gVc = gV[..., :, k:]
        cot = cot - _matmul(cUk, _matmul(_matmul(VkT, gVc), _cj(Vhc)) / _safe(s_col))
    return cot


def _svd_args(args, kwargs):
    names = ("full_matrices", "compute_uv", "hermitian")
    opts = {"full_matrices": True, "compute_uv": True, "hermitian": False}
    opts.update(zip(names, args))
    opts.update(kwargs)
    return bool(opts["full_matrices"]), bool(opts["compute_uv"]), bool(opts["hermitian"])


def _svd_vjp(g, ans, a, *args, **kwargs):
    full, compute_uv, herm = _svd_args(args, kwargs)
    cplx = is_complex(a)
    if compute_uv:
        U, s, Vh = _parts(ans)
        gU, gs, gVh = _parts(g)
        cot = _svd_vjp_core(U, s, Vh, gU, gs, gVh, full, cplx)
    else:
        U, s, Vh = _parts(_L["svd"](a, False, True, herm))
        cot = _svd_vjp_core(U, s, Vh, None, g, None, False, cplx)
    if herm:
        cot = herm_from_triangle_adjoint(cot, True)
    return unbroadcast(cot, a)


def _svd_jvp(g, ans, a, *args, **kwargs):
    full, compute_uv, herm = _svd_args(args, kwargs)
    cplx = is_complex(a)
    dA = herm_from_triangle(g, True) if herm else g
    if not compute_uv:
        U, s, Vh = _parts(_L["svd"](a, False, True, herm))
        return _cast_like(_svd_jvp_core(U, s, Vh, dA, False, cplx, want_uv=False), ans)
    U, s, Vh = _part(ans, 0), _part(ans, 1), _part(ans, 2)
    dU, ds, dVh = _svd_jvp_core(U, s, Vh, dA, full, cplx or is_complex(g))
    return _tangent_tuple(ans, _cast_like(dU, U), _cast_like(ds, s), _cast_like(dVh, Vh))


def _svdvals_vjp(g, ans, x):
    U, s, Vh = _parts(_L["svd"](x, False))
    return unbroadcast(_svd_vjp_core(U, s, Vh, None, g, None, False, is_complex(x)), x)


def _svdvals_jvp(g, ans, x):
    U, s, Vh = _parts(_L["svd"](x, False))
    return _cast_like(_svd_jvp_core(U, s, Vh, g, False, is_complex(x), want_uv=False), ans)


# ---------------------------------------------------------------------------------------
# qr:  A = Q R.  Square or tall (m >= n), reduced: with C = Q^H dA R^{-1},
#   Omega = Q^H dQ = tril(C, -1) - tril(C, -1)^H + i Im diag(C)   (R's diagonal is real)
#   dQ = Q Omega + (I - Q Q^H) dA R^{-1},   dR = (C - Omega) R.
# Wide (m < n): A = [X Y] with X square: (dQ, dR_X) from X, dR_Y = dQ^H Y + Q^H dY.
# 'complete' with m > n: the complement columns Q_c get dQ_c = -Q_1 R_1^{-H} dA^H Q_c (their
# rotation within the complement is arbitrary and set to zero).  Degenerate points: a
# rank-deficient A (R singular); and, for complex input, matrices where LAPACK skips a
# Householder reflection because the column is already reduced with a real diagonal entry
# (e.g. the last row of a wide complex matrix with a real entry there): a complex
# perturbation then flips the sign of that row of R, so NumPy's qr is discontinuous there.
# mode='raw' has no rule.


def _right_solve(X, R):
    """X R^{-1}."""
    return T(_L["solve"](T(R), T(X)))


def _right_solve_T(X, R):
    """X R^{-T}."""
    return T(_L["solve"](R, T(X)))


def _anti_part(C, cplx):
    n = shape_of(C)[-1]
    low = C * constant_like(onp.tri(n, n, -1, dtype=bool), C)
    omega = low - H(low)
    if cplx:
        omega = omega + _make_diagonal(1j * _imag(_diag(C)))
    return omega


def _anti_part_adjoint(Y, cplx):
    n = shape_of(Y)[-1]
    out = (Y - H(Y)) * constant_like(onp.tri(n, n, -1, dtype=bool), Y)
    if cplx:
        out = out + _make_diagonal(1j * _imag(_diag(Y)))
    return out


def _qr_tall_jvp(Q, R, dA, cplx, square):
    C = _matmul(H(Q), _right_solve(dA, R))
    omega = _anti_part(C, cplx)
    dQ = _matmul(Q, omega)
    if not square:
        dQ = dQ + _right_solve(dA, R) - _matmul(Q, C)
    dR = _matmul(C - omega, R)
    return dQ, dR


def _qr_tall_vjp(Q, R, gQ, gR, cplx):
    cQ = _cj(Q)
    MR = _matmul(gR, T(R)) if not _is_zero(gR) else None
    MQ = _matmul(T(Q), gQ) if not _is_zero(gQ) else None
    if MQ is None and MR is None:
        return None
    if MQ is None:
        Y = -MR
        inner = MR + _anti_part_adjoint(Y, cplx)
        X = _matmul(cQ, inner)
    elif MR is None:
        X = gQ + _matmul(cQ, _anti_part_adjoint(MQ, cplx) - MQ)
    else:
        inner = MR + _anti_part_adjoint(MQ - MR, cplx) - MQ
        X = gQ + _matmul(cQ, inner)
    return _right_solve_T(X, R)


def _qr_mode(args, kwargs):
    return args[0] if args else kwargs.get("mode", "reduced")


def _qr_jvp(g, ans, a, *args, **kwargs):
    mode = _qr_mode(args, kwargs)
    if mode == "raw":
        raise NotImplementedError("JVP of linalg.qr with mode='raw' is not defined")
    m, n = shape_of(a)[-2:]
    cplx = is_complex(a) or is_complex(g)
    if mode == "r":
        Q, R = _parts(_L["qr"](a))
    else:
        Q, R = _part(ans, 0), _part(ans, 1)
    if m >= n:
        Q1 = Q[..., :, :n] if m > n and mode == "complete" else Q
        R1 = R[..., :n, :] if m > n and mode == "complete" else R
        dQ1, dR1 = _qr_tall_jvp(Q1, R1, g, cplx, m == n)
        dQ, dR = dQ1, dR1
        if mode == "complete" and m > n:
            Qc = Q[..., :, n:]
            dQc = -_matmul(Q1, _L["solve"](H(R1), _matmul(H(g), Qc)))
            dQ = _concatenate([dQ1, dQc], axis=-1)
            dR = _concatenate([dR1, zeros_on(dR1, shape_of(R)[:-2] + (m - n, n), dtype_of(dR1))], axis=-2)
    else:
        dX, dY = g[..., :, :m], g[..., :, m:]
        Y = a[..., :, m:]
        dQ, dRX = _qr_tall_jvp(Q, R[..., :, :m], dX, cplx, True)
        dRY = _matmul(H(dQ), Y) + _matmul(H(Q), dY)
        dR = _concatenate([dRX, dRY], axis=-1)
    if mode == "r":
        return _cast_like(dR, ans)
    return _tangent_tuple(ans, _cast_like(dQ, _part(ans, 0)), _cast_like(dR, _part(ans, 1)))


def _qr_vjp(g, ans, a, *args, **kwargs):
    mode = _qr_mode(args, kwargs)
    if mode == "raw":
        raise NotImplementedError("VJP of linalg.qr with mode='raw' is not defined")
    m, n = shape_of(a)[-2:]
    cplx = is_complex(a)
    if mode == "r":
        Q, R = _parts(_L["qr"](a))
        gQ, gR = None, g
    else:
        Q, R = _part(ans, 0), _part(ans, 1)
        gQ, gR = _part(g, 0), _part(g, 1)
    if _is_zero(gQ):
        gQ = None
    if m >= n:
        if mode == "complete" and m > n:
            Q1, Qc, R1 = Q[..., :, :n], Q[..., :, n:], R[..., :n, :]
            gQ1 = None if gQ is None else gQ[..., :, :n]
            gR1 = gR[..., :n, :]
            cot = _qr_tall_vjp(Q1, R1, gQ1, gR1, cplx)
            if gQ is not None:
                gQc = gQ[..., :, n:]
                extra = -_right_solve_T(_matmul(_cj(Qc), _matmul(H(gQc), _cj(Q1))), R1)
                cot = extra if cot is None else cot + extra
        else:
            cot = _qr_tall_vjp(Q, R, gQ, gR, cplx)
    else:
        Y = a[..., :, m:]
        gRX, gRY = gR[..., :, :m], gR[..., :, m:]
        gQ_eff = _cj(_matmul(Y, T(gRY)))
        if gQ is not None:
            gQ_eff = gQ + gQ_eff
        cotX = _qr_tall_vjp(Q, R[..., :, :m], gQ_eff, gRX, cplx)
        cotY = _matmul(_cj(Q), gRY)
        cot = _concatenate([cotX, cotY], axis=-1)
    if cot is None:
        return None
    return unbroadcast(cot, a)


# ---------------------------------------------------------------------------------------
# lstsq:  x = A^+ b (minimum-norm least squares), residuals = |b - A x|^2 per column (full
# column rank, m > n), s = singular values of A.  dx uses the derivative of A^+ (constant
# rank); d residuals = 2 Re(conj(r) (db - dA x)) summed over rows (A^H r = 0).


# NumPy's default rcond: None (a cutoff of eps * max(m, n)); NumPy 1's is "warn" (eps, with a
# FutureWarning), and an explicit None gives the new cutoff there too
RCOND_DEFAULT = inspect.signature(onp.linalg.lstsq).parameters["rcond"].default


def _lstsq_raw(a, b, rcond=RCOND_DEFAULT):
    # rcond only when given: Dask's lstsq has no such argument
    x, res, rank, s = onp.linalg.lstsq(a, b) if rcond is RCOND_DEFAULT else onp.linalg.lstsq(a, b, rcond)
    # (the rank as a float, so that the result's parts are arrays; another library's rank
    # stays there: reading it would wait for the device or compute)
    return (x, res, rank if _backends.is_foreign(x) else onp.float64(rank), s)


_lstsq_raw.__name__ = _lstsq_raw.__qualname__ = "lstsq"
lstsq_parts = primitive(_lstsq_raw)


def _lstsq_pinv(a, rcond):
    shape, dtype = shape_and_dtype(a)
    eps = onp.finfo(dtype).eps
    if rcond is None:
        rc = eps * max(shape[-2:])
    elif isinstance(rcond, str) or rcond < 0:  # (NumPy 1's "warn": the old cutoff)
        rc = eps
    else:
        rc = rcond
    return _L["pinv"](a, rc)


def _lstsq_pieces(ans, a, b, rcond):
    X = _lstsq_pinv(a, rcond)
    vec = ndim_of(b) == 1
    x = _part(ans, 0)
    x2 = _col(x) if vec else x
    b2 = _col(b) if vec else b
    r = b2 - _matmul(a, x2)
    return X, vec, x2, r


def _zeros_of(v):
    shape, dtype = shape_and_dtype(v)
    return zeros_on(v, shape, dtype)


def _lstsq_jvp_a(g, ans, a, b, rcond=RCOND_DEFAULT):
    # dx = -X dA x + X X^H dA^H r + (I - X A) dA^H X^H x   (X = A^+, r = b - A x)
    X, vec, x2, r = _lstsq_pieces(ans, a, b, rcond)
    XH, gH = H(X), H(g)
    dx = (
        -_matmul(X, _matmul(g, x2))
        + _matmul(_matmul(X, XH), _matmul(gH, r))
        + _matmul(_eye_minus(_matmul(X, a)), _matmul(gH, _matmul(XH, x2)))
    )
    dres = _zeros_of(_part(ans, 1))
    if shape_of(_part(ans, 1))[0]:
        dres = _cast_like(-2.0 * _real(_sum(_cj(r) * _matmul(g, x2), -2)), _part(ans, 1))
    U, s, Vh = _parts(_L["svd"](a, False))
    ds = _svd_jvp_core(U, s, Vh, g, False, is_complex(a) or is_complex(g), want_uv=False)
    return _tangent_tuple(
        ans, _cast_like(dx[..., 0] if vec else dx, _part(ans, 0)), dres, onp.float64(0.0), _cast_like(ds, _part(ans, 3))
    )


def _lstsq_jvp_b(g, ans, a, b, rcond=RCOND_DEFAULT):
    X, vec, x2, r = _lstsq_pieces(ans, a, b, rcond)
    g2 = _col(g) if vec else g
    dx = _matmul(X, g2)
    dres = _zeros_of(_part(ans, 1))
    if shape_of(_part(ans, 1))[0]:
        dres = _cast_like(2.0 * _real(_sum(_cj(r) * g2, -2)), _part(ans, 1))
    return _tangent_tuple(
        ans, _cast_like(dx[..., 0] if vec else dx, _part(ans, 0)), dres, onp.float64(0.0), _zeros_of(_part(ans, 3))
    )


def _lstsq_vjp_a(g, ans, a, b, rcond=RCOND_DEFAULT):
    gx, gres, gs = _part(g, 0), _part(g, 1), _part(g, 3)
    X, vec, x2, r = _lstsq_pieces(ans, a, b, rcond)
    cot = None
    if not _is_zero(gx):
        gx2 = _col(gx) if vec else gx
        XH = H(X)
        gxT = T(gx2)
        t1 = -_matmul(T(X), _matmul(gx2, T(x2)))
        t2 = _cj(_matmul(r, _matmul(gxT, _matmul(X, XH))))
        t3 = _cj(_matmul(_matmul(XH, x2), _matmul(gxT, _eye_minus(_matmul(X, a)))))
        cot = t1 + t2 + t3
    if shape_of(_part(ans, 1))[0] and not _is_zero(gres):
        t = -2.0 * _matmul(_cj(r) * _row(gres), T(x2))
        cot = t if cot is None else cot + t
    if not _is_zero(gs):
        U, s, Vh = _parts(_L["svd"](a, False))
        t = _svd_vjp_core(U, s, Vh, None, gs, None, False, is_complex(a))
        cot = t if cot is None else cot + t
    return None if cot is None else unbroadcast(cot, a)


def _lstsq_vjp_b(g, ans, a, b, rcond=RCOND_DEFAULT):
    gx, gres = _part(g, 0), _part(g, 1)
    X, vec, x2, r = _lstsq_pieces(ans, a, b, rcond)
    cot = None
    if not _is_zero(gx):
        cot = _matmul(T(X), _col(gx) if vec else gx)
    if shape_of(_part(ans, 1))[0] and not _is_zero(gres):
        t = 2.0 * _cj(r) * _row(gres)
        cot = t if cot is None else cot + t
    if cot is None:
        return None
    return unbroadcast(cot[..., 0] if vec else cot, b)


# ---------------------------------------------------------------------------------------
# Norms.  Every norm's derivative is written as a weight W of x's shape:
#   d norm = sum over the reduced axes of Re(W * dx),   cotangent = g (expanded) * W.
# Subgradients at the non-differentiable points: 0 at a zero vector / matrix (and for
# zero entries in 1-norms and p-norms), ties between maximal (minimal) entries, rows or
# columns share the derivative evenly; 2 / -2 / 'nuc' matrix norms are degenerate at
# repeated or zero singular values.

_INF = float("inf")
_FLOAT64 = onp.dtype(onp.float64)


def _unit(x):
    """x / |x| conjugated (the derivative of |x|), 0 where x == 0."""
    if is_complex(x):
        return _conj(x) / _safe(_abs(x))
    return onp.sign(data_of(x))


def _ord_value(ord):
    if ord is None or isinstance(ord, str):
        return ord
    return float(ord)


def _vector_weight(x, y, ord, axes):
    """W for a vector norm over ``axes``; ``y`` is the norm with those axes kept."""
    p = _ord_value(ord)
    if p is None or p == 2.0:
        return _cj(x) / _safe(y)
    if p == _INF or p == -_INF:
        ax = onp.abs(data_of(x))
        mask = ax == data_of(y)
        share = mask / onp.maximum(mask.sum(axis=axes, keepdims=True), 1)
        return _unit(x) * share.astype(_real_dtype(x))
    if p == 0.0:
        return zeros_on(x, shape_of(x), _real_dtype(x))
    if p == 1.0:
        return _unit(x)
    ax = _abs(x) if is_complex(x) else x * _unit(x)
    return _unit(x) * _safe(ax) ** (p - 1.0) * _safe(y) ** (1.0 - p)


def _real_dtype(x):
    dt = dtype_of(x)
    return onp.empty(0, dt).real.dtype if dt.kind in "fc" else onp.dtype(onp.float64)


def _matrix_weight(x, y, ord, axes):
    """W for a matrix norm over the axis pair ``axes`` = (row axis, column axis)."""
    r, c = axes
    if ord is None or ord in ("fro", "f"):
        return _cj(x) / _safe(y)
    if ord in ("nuc", 2, -2, 2.0, -2.0):
        xm = _moveaxis(x, (r, c), (-2, -1))
        U, s, Vh = _parts(_L["svd"](xm, False))
        if ord == "nuc":
            W = _matmul(U, Vh)
        else:
            i = 0 if ord == 2 else shape_of(s)[-1] - 1
            W = _matmul(U[..., :, i : i + 1], Vh[..., i : i + 1, :])
        return _moveaxis(_cj(W), (-2, -1), (r, c))
    p = float(ord)
    if abs(p) == 1.0:  # max (min) over columns of the column sums of |x|
        summed, over = r, c
    elif abs(p) == _INF:  # max (min) over rows of the row sums of |x|
        summed, over = c, r
    else:
        raise ValueError("Invalid norm order for matrices.")
    ax = onp.abs(data_of(x))
    sums = ax.sum(axis=summed, keepdims=True)
    mask = sums == data_of(y)
    share = mask / onp.maximum(mask.sum(axis=over, keepdims=True), 1)
    return _unit(x) * share.astype(_real_dtype(x))


def _norm_plan(x, ord, axis):
    """('vector' | 'matrix', axes) of numpy.linalg.norm's arguments."""
    nd = ndim_of(x)
    if axis is None:
        if ord is None:
            return "vector", tuple(range(nd)), None
        if nd == 1:
            return "vector", (0,), ord
        return "matrix", (0, 1), ord
    if isinstance(axis, (int, onp.integer)):
        return "vector", (int(axis) % nd,), ord
    axes = tuple(int(a) % nd for a in axis)
    return ("vector" if len(axes) == 1 else "matrix"), axes, ord


def _kept(y, x, axes, keepdims):
    """The norm ``y`` with the reduced ``axes`` of ``x`` present (as size-1 axes)."""
    if keepdims:
        return y
    shape = tuple(1 if i in axes else n for i, n in enumerate(shape_of(x)))
    return _reshape(y, shape)


def _norm_weight(x, ans, kind, axes, ord, keepdims):
    y = _kept(ans, x, axes, keepdims)
    if kind == "vector":
        return _vector_weight(x, y, ord, axes)
    return _matrix_weight(x, y, ord, axes)


def _norm_vjp_from(g, ans, x, kind, axes, ord, keepdims):
    W = _norm_weight(x, ans, kind, axes, ord, keepdims)
    return unbroadcast(_kept(g, x, axes, keepdims) * W, x)


def _norm_jvp_from(g, ans, x, kind, axes, ord, keepdims):
    W = _norm_weight(x, ans, kind, axes, ord, keepdims)
    prod = W * g
    if is_complex(prod):
        prod = _real(prod)
    return _cast_like(_sum(prod, axis=axes, keepdims=keepdims), ans)


def _norm_args(args, kwargs):
    opts = {"ord": None, "axis": None, "keepdims": False}
    opts.update(zip(("ord", "axis", "keepdims"), args))
    opts.update(kwargs)
    return opts["ord"], opts["axis"], opts["keepdims"]


def _norm_vjp(g, ans, x, *args, **kwargs):
    if not args and not kwargs and type(x) is onp.ndarray and x.dtype == _FLOAT64:
        # the commonest norm, the 2-norm (Frobenius) of a whole float64 array: what the
        # general path gives, g * (x / ans) (x / 1 where ans is 0), without its reshapes
        return g * (x / (ans if ans != 0 else 1.0))
    ord, axis, keepdims = _norm_args(args, kwargs)
    kind, axes, ord = _norm_plan(x, ord, axis)
    return _norm_vjp_from(g, ans, x, kind, axes, ord, keepdims)


def _norm_jvp(g, ans, x, *args, **kwargs):
    ord, axis, keepdims = _norm_args(args, kwargs)
    kind, axes, ord = _norm_plan(x, ord, axis)
    return _norm_jvp_from(g, ans, x, kind, axes, ord, keepdims)


def _vector_norm_plan(x, axis, ord):
    nd = ndim_of(x)
    if axis is None:
        axes = tuple(range(nd))
    elif isinstance(axis, (int, onp.integer)):
        axes = (int(axis) % nd,)
    else:
        axes = tuple(sorted(int(a) % nd for a in axis))
    return "vector", axes, ord


def _vector_norm_vjp(g, ans, x, axis=None, keepdims=False, ord=2):
    kind, axes, ord = _vector_norm_plan(x, axis, ord)
    return _norm_vjp_from(g, ans, x, kind, axes, ord, keepdims)


def _vector_norm_jvp(g, ans, x, axis=None, keepdims=False, ord=2):
    kind, axes, ord = _vector_norm_plan(x, axis, ord)
    return _norm_jvp_from(g, ans, x, kind, axes, ord, keepdims)


def _matrix_norm_axes(x):
    nd = ndim_of(x)
    return (nd - 2, nd - 1)


def _matrix_norm_vjp(g, ans, x, keepdims=False, ord="fro"):
    return _norm_vjp_from(g, ans, x, "matrix", _matrix_norm_axes(x), ord, keepdims)


def _matrix_norm_jvp(g, ans, x, keepdims=False, ord="fro"):
    return _norm_jvp_from(g, ans, x, "matrix", _matrix_norm_axes(x), ord, keepdims)


# ---------------------------------------------------------------------------------------
# cond, tensorinv, tensorsolve


def _cond_weight(x, ans, p):
    """W with d cond = sum over the matrix axes of Re(W * dx)."""
    if p is None or p in (2, -2):
        U, s, Vh = _parts(_L["svd"](x, False))
        first = _matmul(U[..., :, :1], Vh[..., :1, :])  # d s_max
        last = _matmul(U[..., :, -1:], Vh[..., -1:, :])  # d s_min
        s0, sl = s[..., :1, None], s[..., -1:, None]
        c = _expand2(ans)
        if p == -2:
            return _cj(c * (last / sl - first / s0))
        return _cj(c * (first / s0 - last / sl))
    axes = (ndim_of(x) - 2, ndim_of(x) - 1)
    Xi = _L["inv"](x)
    n1 = _L["norm"](x, p, (-2, -1))
    n2 = _L["norm"](Xi, p, (-2, -1))
    W1 = _matrix_weight(x, _expand2(n1), p, axes)
    W2 = _matrix_weight(Xi, _expand2(n2), p, axes)
    return _expand2(n2) * W1 - _expand2(n1) * _matmul(T(Xi), _matmul(W2, T(Xi)))


def _cond_vjp(g, ans, x, p=None):
    if is_complex(g):  # (NumPy 1 returns cond of a complex matrix as a complex with no imaginary part)
        g = _real(g)
    return unbroadcast(_expand2(g) * _cond_weight(x, ans, p), x)


def _cond_jvp(g, ans, x, p=None):
    prod = _cond_weight(x, ans, p) * g
    if is_complex(prod):
        prod = _real(prod)
    return _cast_like(_sum(prod, axis=(-2, -1)), ans)


def _tensorinv_vjp(g, ans, a, ind=2):
    shape = shape_of(a)
    P = math.prod(shape[:ind])
    B = _reshape(ans, (-1, P))
    gB = _reshape(g, (-1, P))
    return unbroadcast(_reshape(-_matmul(T(B), _matmul(gB, T(B))), shape), a)


def _tensorinv_jvp(g, ans, a, ind=2):
    shape = shape_of(a)
    P = math.prod(shape[:ind])
    B = _reshape(ans, (-1, P))
    dM = _reshape(g, (P, -1))
    return _reshape(-_matmul(B, _matmul(dM, B)), shape_of(ans))


def _tensorsolve_perm(a, axes):
    nd = ndim_of(a)
    perm = list(range(nd))
    if axes is not None:
        for k in axes:
            perm.remove(k % nd)
            perm.append(k % nd)
    return perm


def _tensorsolve_mats(ans, a, b, axes):
    """(A as a matrix, x as a column, the permutation applied to a's axes)."""
    perm = _tensorsolve_perm(a, axes)
    a2 = anp.transpose(a, perm) if perm != sorted(perm) else a
    n = math.prod(shape_of(b))
    return _reshape(a2, (n, -1)), _reshape(ans, (-1, 1)), perm


def _tensorsolve_vjp_a(g, ans, a, b, axes=None):
    A, x, perm = _tensorsolve_mats(ans, a, b, axes)
    gb = _solve_T(A, _reshape(g, (-1, 1)))
    cot = -_matmul(gb, T(x))
    shape2 = tuple(shape_of(a)[i] for i in perm)
    cot = _reshape(cot, shape2)
    if perm != sorted(perm):
        cot = anp.transpose(cot, inverse_permutation(perm))
    return unbroadcast(cot, a)


def _tensorsolve_vjp_b(g, ans, a, b, axes=None):
    A, x, perm = _tensorsolve_mats(ans, a, b, axes)
    return unbroadcast(_reshape(_solve_T(A, _reshape(g, (-1, 1))), shape_of(b)), b)


def _tensorsolve_jvp_a(g, ans, a, b, axes=None):
    A, x, perm = _tensorsolve_mats(ans, a, b, axes)
    dA, _, _ = _tensorsolve_mats(ans, g, b, axes)
    return _reshape(-_L["solve"](A, _matmul(dA, x)), shape_of(ans))


def _tensorsolve_jvp_b(g, ans, a, b, axes=None):
    A, x, perm = _tensorsolve_mats(ans, a, b, axes)
    return _reshape(_L["solve"](A, _reshape(g, (-1, 1))), shape_of(ans))


# ---------------------------------------------------------------------------------------
# The array-API functions numpy.linalg has under its own names


def _vecdot_vjp_x1(g, ans, x1, x2, axis=-1):
    # vecdot = sum(conj(x1) * x2, axis): Re(g conj(dx1) x2) = Re(conj(g x2) dx1)
    ge = _expand_dims(g, _vecdot_axis(axis, x1, x2))
    return unbroadcast(_cj(ge * x2) if (is_complex(x2) or is_complex(g)) else ge * x2, x1)


def _vecdot_vjp_x2(g, ans, x1, x2, axis=-1):
    ge = _expand_dims(g, _vecdot_axis(axis, x1, x2))
    return unbroadcast(ge * _cj(x1), x2)


def _vecdot_axis(axis, x1, x2):
    """The reduced axis as a negative index (counted from the end of the broadcast shape)."""
    nd = max(ndim_of(x1), ndim_of(x2))
    return int(axis) - nd if axis >= 0 else int(axis)


def _cross_vjp_x1(g, ans, x1, x2, axis=-1):
    return unbroadcast(_L["cross"](x2, g, axis=axis), x1)


def _cross_vjp_x2(g, ans, x1, x2, axis=-1):
    return unbroadcast(_L["cross"](g, x1, axis=axis), x2)


def _diagonal_vjp(g, ans, x, offset=0):
    return unbroadcast(anp.diag_embed(g, offset, ndim_of(x) - 2, ndim_of(x) - 1, shape_of(x)), x)


def _trace_vjp(g, ans, x, offset=0, dtype=None):
    return trace_vjp(g, ans, x, offset, -2, -1)


# ---------------------------------------------------------------------------------------
# Registration


def register(ns):
    """Register the rules for the primitives of the linalg namespace ``ns``."""
    _L.update(ns)
    def_rules(ns["det"], [_det_vjp], [_det_jvp])
    def_rules(ns["slogdet"], [_slogdet_vjp], [_slogdet_jvp])
    def_rules(ns["inv"], [_inv_vjp], [_inv_jvp])
    def_rules(ns["solve"], [_solve_vjp_a, _solve_vjp_b], [_solve_jvp_a, _solve_jvp_b])
    def_rules(ns["pinv"], [_pinv_vjp], [_pinv_jvp])
    def_rules(ns["matrix_power"], [_matrix_power_vjp], [_matrix_power_jvp])
    def_rules(ns["cholesky"], [_cholesky_vjp], [_cholesky_jvp])
    def_rules(ns["eigh"], [_eigh_vjp], [_eigh_jvp])
    def_rules(ns["eigvalsh"], [_eigvalsh_vjp], [_eigvalsh_jvp])
    def_rules(ns["eig"], [_eig_vjp], [_eig_jvp])
    def_rules(ns["eigvals"], [_eigvals_vjp], [_eigvals_jvp])
    def_rules(ns["svd"], [_svd_vjp], [_svd_jvp])
    def_rules(ns["qr"], [_qr_vjp], [_qr_jvp])
    def_rules(lstsq_parts, [_lstsq_vjp_a, _lstsq_vjp_b], [_lstsq_jvp_a, _lstsq_jvp_b])
    def_rules(ns["norm"], [_norm_vjp], [_norm_jvp])
    def_rules(ns["cond"], [_cond_vjp], [_cond_jvp])
    def_rules(ns["tensorinv"], [_tensorinv_vjp], [_tensorinv_jvp])
    def_rules(ns["tensorsolve"], [_tensorsolve_vjp_a, _tensorsolve_vjp_b], [_tensorsolve_jvp_a, _tensorsolve_jvp_b])

    if "svdvals" not in ns:  # the array-API names below: NumPy >= 2.0
        return
    def_rules(ns["svdvals"], [_svdvals_vjp], [_svdvals_jvp])
    def_rules(ns["vector_norm"], [_vector_norm_vjp], [_vector_norm_jvp])
    def_rules(ns["matrix_norm"], [_matrix_norm_vjp], [_matrix_norm_jvp])
    # numpy.linalg's own versions of main-namespace functions (distinct NumPy objects)
    def_rules(ns["matmul"], MATMUL_VJPS, LINEAR)
    def_rules(ns["tensordot"], TENSORDOT_VJPS, LINEAR)
    def_rules(ns["outer"], OUTER_VJPS, LINEAR)
    def_rules(ns["matrix_transpose"], [lambda g, ans, x: unbroadcast(T(g), x)], ["same"])
    def_rules(ns["diagonal"], [_diagonal_vjp], ["same"])
    def_rules(ns["trace"], [_trace_vjp], ["same"])
    def_rules(ns["vecdot"], [_vecdot_vjp_x1, _vecdot_vjp_x2], LINEAR)
    def_rules(ns["cross"], [_cross_vjp_x1, _cross_vjp_x2], LINEAR)
