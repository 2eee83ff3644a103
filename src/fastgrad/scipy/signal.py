"""fastgrad.scipy.signal: ``convolve``, an N-dimensional generalized convolution that is
differentiable w.r.t. both arguments (to any order, and in forward mode).

``convolve(A, B, axes=None, dot_axes=[(), ()], mode='full')`` convolves ``A`` and ``B``
along the paired axes ``axes = (axes_of_A, axes_of_B)`` (default: all axes of ``A`` with
the same axes of ``B``), sums products over the paired ``dot_axes``, and keeps every other
axis as an outer product.  The result has ``A``'s other axes, then ``B``'s other axes,
then the convolved axes.  ``mode`` is 'full', 'valid' or 'same' as in
scipy.signal.convolve ('valid' needs one array at least as large as the other along every
convolved axis; 'same' is centred on ``A``).
"""

import numpy as onp

from ..core import def_linear, defjvp, defvjp_direct
from ..numpy import numpy_wrapper as anp
from ..tracer import getval, primitive

__all__ = ["convolve"]


def _norm_axes(axes, nd):
    return [int(a) % nd if nd else int(a) for a in axes]


def _layout(shapeA, shapeB, axes, dot_axes):
    ndA, ndB = len(shapeA), len(shapeB)
    if axes is None:
        axes = [list(range(ndA)), list(range(ndA))]
    cA, cB = _norm_axes(axes[0], ndA), _norm_axes(axes[1], ndB)
    dA, dB = _norm_axes(dot_axes[0], ndA), _norm_axes(dot_axes[1], ndB)
    if len(cA) != len(cB) or len(dA) != len(dB):
        raise ValueError("convolve: axes and dot_axes must pair up the axes of A and B")
    for da, db in zip(dA, dB):
        if shapeA[da] != shapeB[db]:
            raise ValueError("convolve: dot axes {} of A and {} of B differ in length".format(da, db))
    iA = [i for i in range(ndA) if i not in cA and i not in dA]
    iB = [i for i in range(ndB) if i not in cB and i not in dB]
    return cA, cB, dA, dB, iA, iB


def _full_conv(A, B, cA, cB, dA, dB, iA, iB):
    """The 'full' generalized convolution of plain arrays: layout (iA, iB, conv)."""
    A = onp.transpose(A, iA + dA + cA)
    B = onp.transpose(B, iB + dB + cB)
    nI_A, nI_B, nd, nc = len(iA), len(iB), len(dA), len(cA)
    a_conv = A.shape[nI_A + nd :]
    b_conv = B.shape[nI_B + nd :]
    out_conv = tuple(a + b - 1 for a, b in zip(a_conv, b_conv))
    dtype = onp.result_type(A.dtype, B.dtype)
    out = onp.zeros(A.shape[:nI_A] + B.shape[:nI_B] + out_conv, dtype=dtype)
    dot_a = list(range(nI_A, nI_A + nd))
    dot_b = list(range(nI_B, nI_B + nd))
    lead = (slice(None),) * (nI_A + nI_B)
    for pos in onp.ndindex(*b_conv):
        Bk = B[(Ellipsis,) + pos] if nc else B
        # (iA, cA..., iB) after tensordot over the dot axes
        term = onp.tensordot(A, Bk, axes=(dot_a, dot_b))
        # move the iB axes before the conv axes of A
        perm = list(range(nI_A)) + list(range(nI_A + nc, nI_A + nc + nI_B)) + list(range(nI_A, nI_A + nc))
        term = onp.transpose(term, perm)
        window = lead + tuple(slice(p, p + n) for p, n in zip(pos, a_conv))
        out[window] += term
    return out


def _crop(shapeA_conv, shapeB_conv, mode):
    """Per convolved axis, the (start, stop) of the 'mode' result inside the full one."""
    if mode == "full":
        return [(0, a + b - 1) for a, b in zip(shapeA_conv, shapeB_conv)]
    if mode == "valid":
        if all(a >= b for a, b in zip(shapeA_conv, shapeB_conv)):
            return [(b - 1, a) for a, b in zip(shapeA_conv, shapeB_conv)]
        if all(b >= a for a, b in zip(shapeA_conv, shapeB_conv)):
            return [(a - 1, b) for a, b in zip(shapeA_conv, shapeB_conv)]
        raise ValueError(
            "convolve: in 'valid' mode one array must be at least as large as the other along every convolved axis"
        )
    if mode == "same":
        return [((b - 1) // 2, (b - 1) // 2 + a) for a, b in zip(shapeA_conv, shapeB_conv)]
    raise ValueError("convolve: mode must be 'full', 'valid' or 'same', not {!r}".format(mode))


def _convolve_raw(A, B, axes=None, dot_axes=((), ()), mode="full"):
    A, B = onp.asarray(A), onp.asarray(B)
    cA, cB, dA, dB, iA, iB = _layout(A.shape, B.shape, axes, dot_axes)
    a_conv = [A.shape[i] for i in cA]
    b_conv = [B.shape[i] for i in cB]
    crop = _crop(a_conv, b_conv, mode)
    out = _full_conv(A, B, cA, cB, dA, dB, iA, iB)
    if mode != "full":
        nlead = out.ndim - len(cA)
        out = out[(slice(None),) * nlead + tuple(slice(s, e) for s, e in crop)]
    return out


_convolve_raw.__name__ = _convolve_raw.__qualname__ = "convolve"
convolve = primitive(_convolve_raw)
convolve.__doc__ = __doc__


# The cotangent of a 'valid'/'same' result, zero-padded into the 'full' result's shape.
def _embed_raw(g, crop, full_conv):
    g = onp.asarray(g)
    nlead = g.ndim - len(crop)
    out = onp.zeros(g.shape[:nlead] + tuple(full_conv), dtype=g.dtype)
    out[(slice(None),) * nlead + tuple(slice(s, e) for s, e in crop)] = g
    return out


_embed_raw.__name__ = "embed"
_embed = primitive(_embed_raw)


def _extract(x, crop):
    nlead = onp.ndim(getval(x)) - len(crop)
    return x[(slice(None),) * nlead + tuple(slice(s, e) for s, e in crop)]


defvjp_direct(_embed, lambda g, ans, x, crop, full_conv: _extract(g, crop))
defjvp(_embed, "same")


def _opts(axes=None, dot_axes=((), ()), mode="full"):
    return axes, dot_axes, mode


def _grad(which):
    """The VJP w.r.t. A (which=0) or B (which=1): a 'valid' convolution of the padded
    cotangent with the other argument flipped along its convolved axes."""

    def vjp(g, ans, A, B, *args, **kwargs):
        axes, dot_axes, mode = _opts(*args, **kwargs)
        sA, sB = onp.shape(getval(A)), onp.shape(getval(B))
        cA, cB, dA, dB, iA, iB = _layout(sA, sB, axes, dot_axes)
        a_conv = [sA[i] for i in cA]
        b_conv = [sB[i] for i in cB]
        full_conv = [a + b - 1 for a, b in zip(a_conv, b_conv)]
        if mode != "full":
            g = _embed(g, _crop(a_conv, b_conv, mode), full_conv)
        nI_A, nI_B, nc = len(iA), len(iB), len(cA)
        g_conv = list(range(nI_A + nI_B, nI_A + nI_B + nc))
        if which == 0:
            me_i, me_d, me_c, other, o_c, o_i, o_d = iA, dA, cA, B, cB, iB, dB
            g_other = list(range(nI_A, nI_A + nI_B))  # g's axes of B's "other" axes
        else:
            me_i, me_d, me_c, other, o_c, o_i, o_d = iB, dB, cB, A, cA, iA, dA
            g_other = list(range(nI_A))
        flipped = anp.flip(other, axis=tuple(o_c)) if o_c else other
        # result layout: (g's remaining axes = my "other" axes, other's remaining axes =
        # its dot axes in increasing order, conv axes)
        res = convolve(g, flipped, axes=(g_conv, list(o_c)), dot_axes=(g_other, list(o_i)), mode="valid")
        o_d_sorted = sorted(o_d)
        partner = {od: md for od, md in zip(o_d, me_d)}
        layout = list(me_i) + [partner[od] for od in o_d_sorted] + list(me_c)
        perm = onp.argsort(layout)
        if list(perm) != list(range(len(perm))):
            res = anp.transpose(res, tuple(int(p) for p in perm))
        return res

    return vjp


defvjp_direct(convolve, _grad(0), _grad(1))
def_linear(convolve)
