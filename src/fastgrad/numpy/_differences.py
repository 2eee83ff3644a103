"""Rules of NumPy's finite differences, integration and interpolation: diff, ediff1d,
gradient, trapezoid, interp, unwrap and the polynomial functions, both modes side by side.

Most take their rules from a traced re-implementation (``def_from_impl``): the derivative
of the re-implementation at the same point, correct to every order wherever it is.  The
value itself always comes from NumPy.  interp at a knot takes the slope of the segment to
the right (the left one at the last knot).
"""

import numpy as onp

from ..tracer import getval
from . import numpy_wrapper as anp
from ._registration import (
    ARGS,
    FROM_IMPL,
    def_from_impl,
    def_rules,
)
from ._shapes import (
    NoValue,
    along,
    constant_like,
    dtype_of,
    fit,
    index_like,
    ndim_of,
    real_dtype,
    shape_of,
    traced_sequence,
    unbroadcast,
)


# primitives the rules call, bound once
_sum, _reshape, _broadcast_to, _where = anp.sum, anp.reshape, anp.broadcast_to, anp.where3
_getitem, _concat, _convolve = anp.getitem, anp.concatenate_args, anp.convolve

# ---- trapezoid: linear in y (x, dx fixed); in x and dx through the re-implementation ----


def _trapezoid_impl(y, x=None, dx=1.0, axis=-1):
    nd = ndim_of(y)
    ax = axis % nd
    if x is None:
        d = dx
    elif ndim_of(x) == 1:
        d = anp.diff(x)
        d = _reshape(d, tuple(shape_of(d)[0] if i == ax else 1 for i in range(nd)))
    else:
        d = anp.diff(x, axis=axis)
    upper = _getitem(y, along(ax, slice(1, None), nd))
    lower = _getitem(y, along(ax, slice(None, -1), nd))
    return _sum(d * (upper + lower) / 2.0, axis=axis)


for _name in ("trapezoid", "trapz"):  # (trapezoid: NumPy >= 2.0; trapz: before 2.4)
    if hasattr(anp, _name):
        def_from_impl(getattr(anp, _name), argnums=(0, 1, 2), forward=["same", FROM_IMPL, FROM_IMPL])(_trapezoid_impl)


# ---- diff, gradient -------------------------------------------------------------------


def _diff_jvp(t, ans, a, n=1, axis=-1, prepend=NoValue, append=NoValue):
    kw = {}
    if prepend is not NoValue:
        kw["prepend"] = onp.zeros_like(onp.asarray(prepend))
    if append is not NoValue:
        kw["append"] = onp.zeros_like(onp.asarray(append))
    return fit(anp.diff(t, n, axis, **kw), ans)


@def_from_impl(anp.diff, forward=[_diff_jvp])
def _diff_impl(a, n=1, axis=-1, prepend=NoValue, append=NoValue):
    if n == 0:
        return a  # NumPy returns a unchanged and ignores prepend/append
    nd = ndim_of(a)
    ax = axis % nd
    parts = []
    for extra in (prepend, append):
        if extra is NoValue:
            parts.append(None)
            continue
        e = onp.asarray(extra)
        if e.ndim == 0:
            shape = list(shape_of(a))
            shape[ax] = 1
            e = onp.broadcast_to(e, tuple(shape))
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        items = ([parts[0]] if parts[0] is not None else []) + [a] + ([parts[1]] if parts[1] is not None else [])
        a = _concat(*items, axis=ax)
    for _ in range(n):
        a = _getitem(a, along(ax, slice(1, None), nd)) - _getitem(a, along(ax, slice(None, -1), nd))
    return a


def gradient_bands(n, spacing, edge_order):
    """np.gradient along one axis of length ``n`` is ``out_i = sum_r C[r, i] f[J[r, i]]``:
    the three bands (C, J) read off NumPy's own gradient applied to period-3 combs (every
    row's stencil lies in a window of 3 consecutive entries, one per residue mod 3)."""
    i = onp.arange(n)
    start = onp.clip(i - 1, 0, max(n - 3, 0))
    C = onp.empty((3, n))
    J = onp.empty((3, n), dtype=onp.intp)
    args = () if spacing is None else (spacing,)
    for r in range(3):
        comb = (i % 3 == r).astype(float)
        C[r] = onp.gradient(comb, *args, edge_order=edge_order)
        j = start + (r - start) % 3
        valid = j < n
        J[r] = onp.where(valid, j, i)
        C[r] = onp.where(valid, C[r], 0.0)
    return C, J


@def_from_impl(anp.gradient, forward=["same"])
def _gradient_impl(f, *varargs, axis=None, edge_order=1):
    shape = shape_of(f)
    nd = len(shape)
    if axis is None:
        axes = list(range(nd))
    elif isinstance(axis, (int, onp.integer)):
        axes = [int(axis) % nd]
    else:
        axes = [int(a) % nd for a in axis]
    if len(varargs) == 0:
        spacings = [None] * len(axes)
    elif len(varargs) == 1 and onp.ndim(getval(varargs[0])) == 0:
        spacings = [getval(varargs[0])] * len(axes)
    else:
        spacings = [getval(v) for v in varargs]
    outs = []
    dtype = real_dtype(dtype_of(f))
    for ax, sp in zip(axes, spacings):
        C, J = gradient_bands(shape[ax], sp, edge_order)
        bshape = [1] * nd
        bshape[ax] = shape[ax]
        total = None
        for r in range(3):
            term = anp.take(f, index_like(J[r], f), axis=ax) * constant_like(C[r].astype(dtype).reshape(bshape), f)
            total = term if total is None else total + term
        outs.append(total)
    if len(outs) == 1:
        return outs[0]
    return traced_sequence(tuple, outs)


# ---- interp --------------------------------------------------------------------------


@def_from_impl(anp.interp, argnums=(0, 1, 2))
def _interp_impl(x, xp, fp, left=None, right=None, period=None):
    if period is not None:
        period = abs(getval(period))
        x = anp.remainder(x, period)
        xp = anp.remainder(xp, period)
        order = onp.argsort(getval(xp), kind="stable")
        xp, fp = _getitem(xp, order), _getitem(fp, order)
        xp = _concat(_getitem(xp, slice(-1, None)) - period, xp, _getitem(xp, slice(0, 1)) + period, axis=0)
        fp = _concat(_getitem(fp, slice(-1, None)), fp, _getitem(fp, slice(0, 1)), axis=0)
        left = right = None
    xv, xpv = onp.asarray(getval(x)), onp.asarray(getval(xp))
    n = xpv.shape[0]
    if n == 1:
        inside = _broadcast_to(_getitem(fp, 0), xv.shape)
    else:
        i = onp.clip(onp.searchsorted(xpv, xv, side="right") - 1, 0, n - 2)
        x0, x1 = _getitem(xp, i), _getitem(xp, i + 1)
        f0, f1 = _getitem(fp, i), _getitem(fp, i + 1)
        inside = f0 + (f1 - f0) * ((x - x0) / (x1 - x0))
    lft = _getitem(fp, 0) if left is None else left
    rgt = _getitem(fp, -1) if right is None else right
    below, above = xv < xpv[0], xv > xpv[-1]
    out = inside
    if onp.any(below):
        out = _where(below, lft, out)
    if onp.any(above):
        out = _where(above, rgt, out)
    return out


# ---- unwrap: p plus a piecewise constant ---------------------------------------------


def _unwrap_vjp(g, ans, p, discont=None, axis=-1, *, period=None):
    return unbroadcast(g, p)


def _unwrap_jvp(t, ans, p, discont=None, axis=-1, *, period=None):
    return fit(t, ans)


def_rules(anp.unwrap, [_unwrap_vjp], [_unwrap_jvp], uses=ARGS)


# ---- polynomials, ediff1d ---------------------------------------------------------------


@def_from_impl(anp.polyval, argnums=(0, 1))
def _polyval_impl(p, x):
    y = onp.zeros_like(onp.asarray(getval(x)), dtype=onp.result_type(getval(p), getval(x)))
    for k in range(shape_of(p)[0]):
        y = y * x + _getitem(p, k)
    return y


def _poly_pad(a, n):
    """Coefficients ``a`` with leading zeros up to length ``n``."""
    k = shape_of(a)[0]
    if k == n:
        return a
    return _concat(onp.zeros(n - k, dtype_of(a)), a, axis=0)


@def_from_impl(anp.polyadd, argnums=(0, 1))
def _polyadd_impl(a1, a2):
    a1, a2 = anp.atleast_1d(a1), anp.atleast_1d(a2)
    n = max(shape_of(a1)[0], shape_of(a2)[0])
    return _poly_pad(a1, n) + _poly_pad(a2, n)


@def_from_impl(anp.polysub, argnums=(0, 1))
def _polysub_impl(a1, a2):
    a1, a2 = anp.atleast_1d(a1), anp.atleast_1d(a2)
    n = max(shape_of(a1)[0], shape_of(a2)[0])
    return _poly_pad(a1, n) - _poly_pad(a2, n)


@def_from_impl(anp.polymul, argnums=(0, 1))
def _polymul_impl(a1, a2):
    return _convolve(anp.atleast_1d(a1), anp.atleast_1d(a2))


@def_from_impl(anp.polyder)
def _polyder_impl(p, m=1):
    p = anp.atleast_1d(p)
    for _ in range(m):
        n = shape_of(p)[0] - 1
        p = _getitem(p, slice(None, -1)) * onp.arange(n, 0, -1)
    return p


@def_from_impl(anp.polyint, argnums=(0, 2))
def _polyint_impl(p, m=1, k=None):
    p = anp.atleast_1d(p)
    if k is None:
        k = onp.zeros(m)
    k = anp.atleast_1d(k)
    if shape_of(k)[0] == 1 and m > 1:
        k = _broadcast_to(k, (m,))
    for i in range(m):
        n = shape_of(p)[0]
        p = _concat(p / onp.arange(n, 0, -1), _reshape(_getitem(k, i), (1,)), axis=0)
    return p


@def_from_impl(anp.ediff1d, argnums=(0, 1, 2))
def _ediff1d_impl(ary, to_end=None, to_begin=None):
    a = anp.ravel(ary)
    d = _getitem(a, slice(1, None)) - _getitem(a, slice(None, -1))
    parts = [anp.ravel(to_begin)] if to_begin is not None else []
    parts.append(d)
    if to_end is not None:
        parts.append(anp.ravel(to_end))
    return _concat(*parts, axis=0) if len(parts) > 1 else d
