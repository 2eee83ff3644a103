"""Rules of NumPy's products: dot, matmul (and the ``@`` operator), tensordot, inner, outer,
vdot, vecdot, matvec, vecmat, einsum, kron, cross, convolve, correlate.

Each is linear in every argument (conjugate-linear in vdot's, vecdot's and vecmat's first
one): its forward rule applies the product itself to the tangent (``LINEAR``), and its
reverse rule is the transpose, written out beside it.  Complex numbers follow autograd's
convention: linear maps use plain transposes (no conjugation), except in the
conjugate-linear slots.
"""

import numpy as onp

from . import numpy_wrapper as anp
from ._registration import (
    ARGS,
    LINEAR,
    def_from_impl,
    def_rules,
    def_rules_argnums,
)
from ._shapes import (
    NoValue,
    constant_like,
    dtype_of,
    inverse_permutation,
    is_complex,
    ndim_of,
    real_dtype,
    shape_of,
    unbroadcast,
)


# primitives the rules call, bound once
_reshape, _broadcast_to, _transpose, _swapaxes = anp.reshape, anp.broadcast_to, anp.transpose, anp.swapaxes
_expand_dims, _squeeze, _dot, _matmul = anp.expand_dims, anp.squeeze, anp.dot, anp.matmul
_tensordot, _outer, _getitem, _conj = anp.tensordot, anp.outer, anp.getitem, anp.conjugate
_flip, _moveaxis, _einsum, _concat = anp.flip, anp.moveaxis, anp.einsum, anp.concatenate_args
_stack, _convolve = anp.stack_args, anp.convolve

# ---- tensordot, dot, inner, matmul, outer, vdot, vecdot, matvec, vecmat ---------------


def _tensordot_axes(axes, nA, nB):
    if isinstance(axes, (int, onp.integer)):
        return list(range(nA - axes, nA)), list(range(axes))
    a_axes, b_axes = axes
    a_axes = [a_axes] if isinstance(a_axes, (int, onp.integer)) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, (int, onp.integer)) else list(b_axes)
    return [int(a) % nA for a in a_axes], [int(b) % nB for b in b_axes]


def _permuted(x, perm):
    return x if perm == sorted(perm) else _transpose(x, inverse_permutation(perm))


def _tensordot_vjp_a(g, A, B, a_axes, b_axes):
    nA, nB = ndim_of(A), ndim_of(B)
    A_free = [i for i in range(nA) if i not in a_axes]
    B_free = [i for i in range(nB) if i not in b_axes]
    g_B = list(range(len(A_free), len(A_free) + len(B_free)))
    r = _tensordot(g, B, axes=(g_B, B_free))
    layout = A_free + [a_axes[b_axes.index(b)] for b in sorted(b_axes)]
    return unbroadcast(_permuted(r, layout), A)


def _tensordot_vjp_b(g, A, B, a_axes, b_axes):
    nA, nB = ndim_of(A), ndim_of(B)
    A_free = [i for i in range(nA) if i not in a_axes]
    B_free = [i for i in range(nB) if i not in b_axes]
    g_A = list(range(len(A_free)))
    r = _tensordot(A, g, axes=(A_free, g_A))
    layout = [b_axes[a_axes.index(a)] for a in sorted(a_axes)] + B_free
    return unbroadcast(_permuted(r, layout), B)


def _tensordot_rule(vjp):
    def rule(g, ans, a, b, axes=2):
        a_axes, b_axes = _tensordot_axes(axes, ndim_of(a), ndim_of(b))
        return vjp(g, a, b, a_axes, b_axes)

    return rule


TENSORDOT_VJPS = [_tensordot_rule(_tensordot_vjp_a), _tensordot_rule(_tensordot_vjp_b)]
def_rules(anp.tensordot, TENSORDOT_VJPS, LINEAR)


def _dot_vjp_a(g, ans, A, B, out=None):
    nA, nB = ndim_of(A), ndim_of(B)
    if nA == 0 or nB == 0:
        return unbroadcast(g * B, A)
    if nB == 1:
        if nA == 1:
            return unbroadcast(g * B, A)
        if nA == 2:
            return unbroadcast(_outer(g, B), A)
    elif nA <= 2 and nB == 2:
        if nA == 2:
            return unbroadcast(g @ B.T, A)  # as in matmul's rule: no dispatcher, no zero fill
        return unbroadcast(_dot(B, g), A)
    return _tensordot_vjp_a(g, A, B, [nA - 1], [max(nB - 2, 0)])


def _dot_vjp_b(g, ans, A, B, out=None):
    nA, nB = ndim_of(A), ndim_of(B)
    if nA == 0 or nB == 0:
        return unbroadcast(A * g, B)
    if nB == 1:
        if nA == 1:
            return unbroadcast(A * g, B)
        if nA == 2:
            return unbroadcast(_dot(g, A), B)
    elif nA <= 2 and nB == 2:
        if nA == 2:
            return unbroadcast(A.T @ g, B)
        return unbroadcast(_outer(A, g), B)
    return _tensordot_vjp_b(g, A, B, [nA - 1], [max(nB - 2, 0)])


def_rules(anp.dot, [_dot_vjp_a, _dot_vjp_b], LINEAR)


def _inner_rule(which):
    def rule(g, ans, A, B):
        nA, nB = ndim_of(A), ndim_of(B)
        if nA == 0 or nB == 0:
            return unbroadcast(g * B, A) if which == 0 else unbroadcast(A * g, B)
        vjp = _tensordot_vjp_a if which == 0 else _tensordot_vjp_b
        return vjp(g, A, B, [nA - 1], [nB - 1])

    return rule


def_rules(anp.inner, [_inner_rule(0), _inner_rule(1)], LINEAR)


def _mT(x):
    return _swapaxes(x, -1, -2)


def _matmul_vjp_a(g, ans, A, B, *args, **kwargs):
    nA, nB = ndim_of(A), ndim_of(B)
    if nB == 1:
        if nA == 1:
            return unbroadcast(g * B, A)
        return unbroadcast(_expand_dims(g, -1) * B, A)  # (..., m, k)
    if nA == 1:  # A (k,), g (..., n)
        return unbroadcast(_squeeze(_matmul(B, _expand_dims(g, -1)), -1), A)
    if nB == 2 and nA == 2:
        # the @ operator and .T: no NumPy dispatcher calls, no zero-filled output (np.dot's)
        return unbroadcast(g @ B.T, A)
    return unbroadcast(_matmul(g, _mT(B)), A)


def _matmul_vjp_b(g, ans, A, B, *args, **kwargs):
    nA, nB = ndim_of(A), ndim_of(B)
    if nB == 1:
        if nA == 1:
            return unbroadcast(A * g, B)
        if nA == 2:
            return unbroadcast(_dot(g, A), B)
        return unbroadcast(_squeeze(_matmul(_expand_dims(g, -2), A), -2), B)
    if nA == 1:  # dB (..., k, n)
        return unbroadcast(_expand_dims(A, -1) * _expand_dims(g, -2), B)
    if nA == 2 and nB == 2:
        return unbroadcast(A.T @ g, B)
    return unbroadcast(_matmul(_mT(A), g), B)


MATMUL_VJPS = [_matmul_vjp_a, _matmul_vjp_b]  # (numpy.linalg.matmul has them too)
def_rules(anp.matmul, MATMUL_VJPS, LINEAR, uses=ARGS)


def _outer_vjp_a(g, ans, a, b, out=None):
    return unbroadcast(_reshape(_dot(g, anp.ravel(b)), shape_of(a)), a)


def _outer_vjp_b(g, ans, a, b, out=None):
    return unbroadcast(_reshape(_dot(anp.ravel(a), g), shape_of(b)), b)


OUTER_VJPS = [_outer_vjp_a, _outer_vjp_b]
def_rules(anp.outer, OUTER_VJPS, LINEAR)


# vdot(a, b) = sum(conj(a) * b) over the flattened arrays: conjugate-linear in a
def _vdot_vjp_a(g, ans, a, b):
    r = g * anp.ravel(b)
    if is_complex(a) or is_complex(b) or is_complex(g):
        r = _conj(r)
    return unbroadcast(_reshape(r, shape_of(a)), a)


def _vdot_vjp_b(g, ans, a, b):
    ca = _conj(a) if is_complex(a) else a
    return unbroadcast(_reshape(g * anp.ravel(ca), shape_of(b)), b)


def_rules(anp.vdot, [_vdot_vjp_a, _vdot_vjp_b], LINEAR)


def _gufunc_axis(name, kwargs):
    if "axes" in kwargs and kwargs["axes"] is not NoValue:
        raise NotImplementedError("derivative of {} with axes= is not implemented".format(name))
    axis = kwargs.get("axis", NoValue)
    return -1 if axis is NoValue else axis


def _vecdot_vjp_x1(g, ans, x1, x2, *args, **kwargs):
    axis = _gufunc_axis("vecdot", kwargs)
    if not kwargs.get("keepdims", False):
        g = _expand_dims(g, axis)
    r = g * x2
    if is_complex(r) or is_complex(x1):
        r = _conj(r)
    return unbroadcast(r, x1)


def _vecdot_vjp_x2(g, ans, x1, x2, *args, **kwargs):
    axis = _gufunc_axis("vecdot", kwargs)
    if not kwargs.get("keepdims", False):
        g = _expand_dims(g, axis)
    return unbroadcast(g * (_conj(x1) if is_complex(x1) else x1), x2)


if hasattr(anp, "vecdot"):  # NumPy >= 2.0
    def_rules(anp.vecdot, [_vecdot_vjp_x1, _vecdot_vjp_x2], LINEAR)


def _plain_gufunc(name, kwargs):
    for k in ("axes", "axis"):
        if k in kwargs and kwargs[k] is not NoValue:
            raise NotImplementedError("derivative of {} with {}= is not implemented".format(name, k))


def _matvec_vjp_x1(g, ans, x1, x2, *args, **kwargs):  # x1 (..., m, n), x2 (..., n)
    _plain_gufunc("matvec", kwargs)
    return unbroadcast(_expand_dims(g, -1) * _expand_dims(x2, -2), x1)


def _matvec_vjp_x2(g, ans, x1, x2, *args, **kwargs):
    _plain_gufunc("matvec", kwargs)
    return unbroadcast(_squeeze(_matmul(_expand_dims(g, -2), x1), -2), x2)


if hasattr(anp, "matvec"):  # NumPy >= 2.2
    def_rules(anp.matvec, [_matvec_vjp_x1, _matvec_vjp_x2], LINEAR)


def _vecmat_vjp_x1(g, ans, x1, x2, *args, **kwargs):  # conj(x1) (..., n) @ x2 (..., n, m)
    _plain_gufunc("vecmat", kwargs)
    r = _squeeze(_matmul(x2, _expand_dims(g, -1)), -1)
    if is_complex(r) or is_complex(x1):
        r = _conj(r)
    return unbroadcast(r, x1)


def _vecmat_vjp_x2(g, ans, x1, x2, *args, **kwargs):
    _plain_gufunc("vecmat", kwargs)
    c1 = _conj(x1) if is_complex(x1) else x1
    return unbroadcast(_expand_dims(c1, -1) * _expand_dims(g, -2), x2)


if hasattr(anp, "vecmat"):  # NumPy >= 2.2
    def_rules(anp.vecmat, [_vecmat_vjp_x1, _vecmat_vjp_x2], LINEAR)


# ---- einsum -------------------------------------------------------------------------

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _sublist_letters(sub):
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        else:
            out.append(_LETTERS[int(s)])
    return "".join(out)


def einsum_spec(args):
    """``(operand argnums, per-operand letter lists, output letters)`` of an einsum call
    (string or sublist form), with ellipses replaced by explicit letters."""
    if isinstance(args[0], str):
        subs = args[0].replace(" ", "")
        argnums = list(range(1, len(args)))
        if "->" in subs:
            ins, out = subs.split("->")
        else:
            ins, out = subs, None
        in_subs = ins.split(",")
    else:
        nops = len(args) // 2
        argnums = [2 * k for k in range(nops)]
        in_subs = [_sublist_letters(args[2 * k + 1]) for k in range(nops)]
        out = _sublist_letters(args[-1]) if len(args) % 2 else None
    used = set("".join(in_subs) + (out or "")) - set(".")
    free = [c for c in _LETTERS if c not in used]
    ell_dims = []
    for sub, k in zip(in_subs, argnums):
        if "..." in sub:
            ell_dims.append(ndim_of(args[k]) - (len(sub) - 3))
        else:
            ell_dims.append(0)
    n_ell = max(ell_dims) if ell_dims else 0
    ell = free[:n_ell]
    ops = []
    for sub, ne in zip(in_subs, ell_dims):
        if "..." in sub:
            pre, post = sub.split("...")
            ops.append(list(pre) + ell[n_ell - ne :] + list(post))
        else:
            ops.append(list(sub))
    if out is None:
        counts = {}
        for letters in ops:
            for c in letters:
                if c not in ell:
                    counts[c] = counts.get(c, 0) + 1
        out_letters = ell + sorted(c for c, n in counts.items() if n == 1)
    elif "..." in out:
        pre, post = out.split("...")
        out_letters = list(pre) + ell + list(post)
    else:
        out_letters = list(out)
    return argnums, ops, out_letters


def _einsum_vjp_argnum(argnum, g, args, kwargs):
    argnums, ops, out_letters = einsum_spec(args)
    k = argnums.index(argnum)
    x = args[argnum]
    letters = ops[k]
    xshape = shape_of(x)
    sizes = dict(zip(letters, xshape))
    unique = []
    for c in letters:
        if c not in unique:
            unique.append(c)
    elsewhere = set(out_letters)
    for j, other in enumerate(ops):
        if j != k:
            elsewhere.update(other)
    found = [c for c in unique if c in elsewhere]
    terms = ["".join(out_letters)] + ["".join(ops[j]) for j in range(len(ops)) if j != k]
    operands = [g] + [args[argnums[j]] for j in range(len(ops)) if j != k]
    r = _einsum(",".join(terms) + "->" + "".join(found), *operands, optimize=kwargs.get("optimize", False))
    rshape = shape_of(r)
    rsizes = dict(zip(found, rshape))
    # letters only in x: the cotangent is constant along them
    if len(found) < len(unique):
        r = _reshape(r, tuple(rsizes[c] if c in rsizes else 1 for c in unique))
        r = _broadcast_to(r, tuple(rsizes[c] if c in rsizes else sizes[c] for c in unique))
    # repeated letters in x (a diagonal): embed with identity factors
    if len(unique) < len(letters):
        first = {}
        layout = []
        for pos, c in enumerate(letters):
            if c in first:
                layout.append(1)
            else:
                first[c] = pos
                layout.append(shape_of(r)[unique.index(c)])
        r = _reshape(r, tuple(layout))
        rdt = real_dtype(dtype_of(x))
        for pos, c in enumerate(letters):
            if first[c] != pos:
                n = sizes[c]
                eshape = [1] * len(letters)
                eshape[first[c]] = n
                eshape[pos] = n
                r = r * constant_like(onp.eye(n, dtype=rdt).reshape(eshape), r)
    return unbroadcast(r, x)


def _einsum_vjp(argnums, ans, args, kwargs):
    return lambda g: [_einsum_vjp_argnum(i, g, args, kwargs) for i in argnums]


def_rules_argnums(anp.einsum, _einsum_vjp, LINEAR)


# ---- kron, cross, convolve, correlate -----------------------------------------------


def _kron_layout(a, b):
    sa, sb = shape_of(a), shape_of(b)
    nd = max(len(sa), len(sb))
    sa = (1,) * (nd - len(sa)) + sa
    sb = (1,) * (nd - len(sb)) + sb
    inter = tuple(s for pair in zip(sa, sb) for s in pair)
    return nd, sa, sb, inter


def _kron_vjp_a(g, ans, a, b):
    nd, sa, sb, inter = _kron_layout(a, b)
    G = _reshape(g, inter)
    r = _tensordot(G, _reshape(b, sb), axes=(list(range(1, 2 * nd, 2)), list(range(nd))))
    return unbroadcast(_reshape(r, shape_of(a)), a)


def _kron_vjp_b(g, ans, a, b):
    nd, sa, sb, inter = _kron_layout(a, b)
    G = _reshape(g, inter)
    r = _tensordot(G, _reshape(a, sa), axes=(list(range(0, 2 * nd, 2)), list(range(nd))))
    return unbroadcast(_reshape(r, shape_of(b)), b)


def_rules(anp.kron, [_kron_vjp_a, _kron_vjp_b], LINEAR)


@def_from_impl(anp.cross, argnums=(0, 1), forward=LINEAR)
def _cross_impl(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    a = _moveaxis(a, axisa, -1)
    b = _moveaxis(b, axisb, -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    a0, a1 = _getitem(a, (Ellipsis, 0)), _getitem(a, (Ellipsis, 1))
    b0, b1 = _getitem(b, (Ellipsis, 0)), _getitem(b, (Ellipsis, 1))
    c2 = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return c2
    a2 = _getitem(a, (Ellipsis, 2)) if na == 3 else None
    b2 = _getitem(b, (Ellipsis, 2)) if nb == 3 else None
    if a2 is None:
        c0, c1 = a1 * b2, -(a0 * b2)
    elif b2 is None:
        c0, c1 = -(a2 * b1), a2 * b0
    else:
        c0, c1 = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    shape = onp.broadcast_shapes(shape_of(c0), shape_of(c1), shape_of(c2))
    parts = [p if shape_of(p) == shape else _broadcast_to(p, shape) for p in (c0, c1, c2)]
    return _moveaxis(_stack(*parts, axis=-1), -1, axisc)


def _embed_full(g, n, m, mode):
    """A cotangent of convolve(a, v, mode) (lengths n, m) as one of mode 'full'."""
    if mode == "full":
        return g
    lo = min(n, m)
    off = (lo - 1) // 2 if mode == "same" else lo - 1
    total = n + m - 1
    dtype = dtype_of(g)
    parts = [onp.zeros(off, dtype), g, onp.zeros(total - off - shape_of(g)[0], dtype)]
    return _concat(*parts, axis=0)


def _convolve_vjp(which):
    def rule(g, ans, a, v, mode="full"):
        if isinstance(mode, int):
            mode = {0: "valid", 1: "same", 2: "full"}[mode]
        fa, fv = anp.ravel(a), anp.ravel(v)
        n, m = shape_of(fa)[0], shape_of(fv)[0]
        gf = _embed_full(g, n, m, mode)
        if which == 0:  # r_i = sum_j gf[i + j] v[j]
            r = _getitem(_convolve(gf, _flip(fv, 0)), slice(m - 1, m - 1 + n))
            return unbroadcast(_reshape(r, shape_of(a)), a)
        r = _getitem(_convolve(gf, _flip(fa, 0)), slice(n - 1, n - 1 + m))
        return unbroadcast(_reshape(r, shape_of(v)), v)

    return rule


def_rules(anp.convolve, [_convolve_vjp(0), _convolve_vjp(1)], LINEAR)


@def_from_impl(anp.correlate, argnums=(0, 1), forward=LINEAR)
def _correlate_impl(a, v, mode="valid"):
    # NumPy correlates the longer sequence against the shorter one and reverses (and
    # conjugates) the result when a is the shorter: for 'same' with even len(a) that picks
    # a different window than convolving a with reversed v, so do exactly the same.
    if shape_of(a)[0] < shape_of(v)[0]:
        r = _correlate_ordered(v, a, mode)
        return _flip(_conj(r) if is_complex(r) else r, 0)
    return _correlate_ordered(a, v, mode)


def _correlate_ordered(a, v, mode):
    fv = _flip(anp.ravel(v), 0)
    if is_complex(v):
        fv = _conj(fv)
    return _convolve(a, fv, mode)
