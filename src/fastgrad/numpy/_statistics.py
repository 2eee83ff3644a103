"""Rules of NumPy's statistics: order statistics (median, percentile, quantile and their
NaN-ignoring versions), average, cov, corrcoef; both modes side by side.

An order statistic is a weighted sum of sorted entries; tied values share their weight
evenly.  average, cov and corrcoef take their rules from traced re-implementations.
"""

import math

import numpy as onp

from ..tracer import getval
from . import numpy_wrapper as anp
from ._registration import (
    def_from_impl,
    def_rules,
)
from ._shapes import (
    NoValue,
    dtype_of,
    fit,
    inverse_permutation,
    is_complex,
    ndim_of,
    normalized_axes,
    real_dtype,
    reduced_size,
    shape_of,
    traced_sequence,
    unbroadcast,
)


# primitives the rules call, bound once
_sum, _reshape, _broadcast_to, _transpose = anp.sum, anp.reshape, anp.broadcast_to, anp.transpose
_expand_dims, _squeeze, _dot, _real = anp.expand_dims, anp.squeeze, anp.dot, anp.real
_conj, _sqrt, _mean, _diagonal = anp.conjugate, anp.sqrt, anp.mean, anp.diagonal
_concat = anp.concatenate_args

# ---- order statistics: median, percentile, quantile --------------------------------


def _order_stat_weights(x, axis, virtual_index):
    """Weights W with ``stat = sum(W * moved(x), -1)``, for an order statistic that
    interpolates linearly between sorted entries at virtual position(s) ``virtual_index(n)``
    (an array of shape Q, one per requested quantile).  W has shape Q + kept + (n,), in the
    layout of ``x`` with the reduced axes merged last.  Tied values share evenly."""
    xv = onp.asarray(getval(x))
    nd = xv.ndim
    axes = normalized_axes(axis, nd)
    kept = [i for i in range(nd) if i not in axes]
    perm = kept + list(axes)
    kshape = tuple(xv.shape[i] for i in kept)
    n = math.prod(xv.shape[i] for i in axes)
    xm = xv.transpose(perm).reshape((-1, n))  # (R, n)
    v = onp.asarray(virtual_index(n), dtype=float)  # Q
    qshape = v.shape
    v = v.reshape(-1)  # (nq,)
    lo = onp.clip(onp.floor(v).astype(onp.intp), 0, n - 1)
    frac = onp.clip(v - lo, 0.0, 1.0)
    hi = onp.minimum(lo + 1, n - 1)
    nq = v.shape[0]
    ws = onp.zeros((nq, n))  # weights of sorted positions
    onp.add.at(ws, (onp.arange(nq), lo), 1.0 - frac)
    onp.add.at(ws, (onp.arange(nq), hi), frac)
    order = onp.argsort(xm, axis=-1, kind="stable")  # (R, n)
    srt = onp.take_along_axis(xm, order, axis=-1)
    R = srt.shape[0]
    # tie groups in sorted order: average the weights over each group
    new_group = onp.ones((R, n), dtype=bool)
    if n > 1:
        same = srt[:, 1:] == srt[:, :-1]
        new_group[:, 1:] = ~same
    gid = onp.cumsum(new_group, axis=1) - 1 + (onp.arange(R) * n)[:, None]  # (R, n) global ids
    W = onp.empty((nq, R, n))
    for k in range(nq):
        wk = onp.broadcast_to(ws[k], (R, n))
        sums = onp.bincount(gid.ravel(), weights=wk.ravel(), minlength=R * n)
        counts = onp.bincount(gid.ravel(), minlength=R * n)
        avg = (sums / onp.maximum(counts, 1))[gid]
        onp.put_along_axis(W[k], order, avg, axis=-1)
    dtype = real_dtype(xv.dtype)
    return W.reshape(qshape + kshape + (n,)).astype(dtype), perm, axes, qshape


def _order_stat_vjp(g, x, keepdims, W, perm, axes, qshape):
    shape = shape_of(x)
    nd = len(shape)
    kshape = W.shape[len(qshape) : -1]
    g = _reshape(g, qshape + kshape + (1,))
    r = g * W
    if qshape:
        r = _sum(r, axis=tuple(range(len(qshape))))
    r = _reshape(r, tuple(shape[i] for i in perm))
    if perm != list(range(nd)):
        r = _transpose(r, inverse_permutation(perm))
    return unbroadcast(r, x)


def _order_stat_jvp(g, x, keepdims, W, perm, axes, qshape):
    shape = shape_of(x)
    nd = len(shape)
    gm = _transpose(g, perm) if perm != list(range(nd)) else g
    n = W.shape[-1]
    gm = _reshape(gm, W.shape[len(qshape) : -1] + (n,))
    t = _sum(gm * W, axis=-1)
    if keepdims:
        t = _reshape(t, qshape + tuple(1 if i in axes else s for i, s in enumerate(shape)))
    return t


def _no_weights(name, weights):
    if weights is not None:
        raise NotImplementedError("derivative of {} with weights= is not implemented".format(name))


def _median_setup(x, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _order_stat_weights(x, axis, lambda n: (n - 1) / 2.0) + (keepdims,)


def _quantile_setup(fn):
    def setup(
        x,
        q,
        axis=None,
        out=None,
        overwrite_input=False,
        method="linear",
        keepdims=False,
        *,
        weights=None,
        interpolation=None,
    ):
        _no_weights(fn.__name__, weights)
        if interpolation is not None:
            method = interpolation
        qv = onp.asarray(getval(q))

        def virtual_index(n):
            return fn(onp.arange(n, dtype=float), qv, method=method)

        return _order_stat_weights(x, axis, virtual_index) + (keepdims,)

    return setup


ORDER_STAT_SETUPS = {
    anp.median: _median_setup,
    anp.percentile: _quantile_setup(onp.percentile),
    anp.quantile: _quantile_setup(onp.quantile),
}


# ---- average, cov, corrcoef --------------------------------------------------------


@def_from_impl(anp.average, argnums=(0, 2))
def _average_impl(a, axis=None, weights=None, returned=False, *, keepdims=NoValue):
    keep = False if keepdims is NoValue else keepdims
    shape = shape_of(a)
    if weights is None:
        avg = _mean(a, axis=axis, keepdims=keep)
        if not returned:
            return avg
        count = onp.broadcast_to(onp.asarray(reduced_size(shape, axis), dtype=dtype_of(avg)), shape_of(avg))
        return traced_sequence(tuple, [avg, count])
    wshape = shape_of(weights)
    w = weights
    if wshape != shape:
        ax = int(axis) % len(shape) if not isinstance(axis, tuple) else None
        if ax is None:
            raise NotImplementedError("average with 1-d weights needs an int axis")
        w = _reshape(w, tuple(wshape[0] if i == ax else 1 for i in range(len(shape))))
        w = _broadcast_to(w, shape)
    scl = _sum(w, axis=axis, keepdims=keep)
    avg = _sum(a * w, axis=axis, keepdims=keep) / scl
    if not returned:
        return avg
    if shape_of(scl) != shape_of(avg):
        scl = _broadcast_to(scl, shape_of(avg))
    return traced_sequence(tuple, [avg, scl])


def _as_2d_rows(m, rowvar):
    X = m if ndim_of(m) == 2 else _reshape(m, (1, -1) if ndim_of(m) == 1 else (1, 1))
    if not rowvar and shape_of(X)[0] != 1:
        X = _transpose(X)
    return X


@def_from_impl(anp.cov, argnums=(0, 1))
def _cov_impl(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    if fweights is not None or aweights is not None:
        raise NotImplementedError("derivative of np.cov with fweights/aweights is not implemented")
    X = _as_2d_rows(m, rowvar)
    if y is not None:
        X = _concat(X, _as_2d_rows(y, rowvar), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    X = X - _mean(X, axis=1, keepdims=True)
    XT = _transpose(X)
    c = _dot(X, _conj(XT) if is_complex(X) else XT) / float(shape_of(X)[1] - ddof)
    return _squeeze(c)


@def_from_impl(anp.corrcoef, argnums=(0, 1))
def _corrcoef_impl(x, y=None, rowvar=True, *, dtype=None):
    c = _cov_impl(x, y, rowvar)
    if ndim_of(c) == 0:
        return c / c
    std = _sqrt(_real(_diagonal(c)))
    return c / _expand_dims(std, 1) / _expand_dims(std, 0)


# ---- nanmedian, nanpercentile, nanquantile: order statistics of the non-NaN entries ------


def _nan_order_stat_setup(quantile_fn):
    def setup(x, *args, **kwargs):
        return _nan_order_stat_weights(x, quantile_fn, *args, **kwargs)

    return setup


def _nan_order_stat_weights(
    x,
    fn,
    q=None,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
    interpolation=None,
):
    """As _order_stat_weights, for the NaN-ignoring versions: each group uses its own
    count of non-NaN entries (NaN sorts last, so those are the first sorted entries)."""
    _no_weights("nan" + (fn.__name__ if fn is not None else "median"), weights)
    if interpolation is not None:
        method = interpolation
    keepdims = False if keepdims is NoValue else keepdims
    xv = onp.asarray(getval(x))
    counts = onp.sum(~onp.isnan(xv), axis=normalized_axes(axis, xv.ndim)).reshape(-1)
    qv = None if q is None else onp.asarray(getval(q))

    def virtual(n):
        if qv is None:
            return (n - 1) / 2.0
        return fn(onp.arange(n, dtype=float), qv, method=method)

    Ws = {}
    for c in onp.unique(counts):
        if c == 0:
            continue
        Ws[int(c)] = _order_stat_weights(x, axis, lambda n, c=c: virtual(c))
    any_w = next(iter(Ws.values()), None)
    if any_w is None:
        W, perm, axes, qshape = _order_stat_weights(x, axis, lambda n: virtual(n))
        return onp.zeros_like(W), perm, axes, qshape, keepdims
    W, perm, axes, qshape = any_w
    W = onp.zeros_like(W)
    flatW = W.reshape(qshape + (-1, W.shape[-1]))
    for c, (Wc, _, _, _) in Ws.items():
        rows = counts == c
        flatW[..., rows, :] = Wc.reshape(qshape + (-1, W.shape[-1]))[..., rows, :]
    return W, perm, axes, qshape, keepdims


def _median_virtual(x, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _nan_order_stat_weights(x, None, None, axis, out, overwrite_input, "linear", keepdims)


ORDER_STAT_SETUPS_NAN = {
    anp.nanmedian: _median_virtual,
    anp.nanpercentile: _nan_order_stat_setup(onp.percentile),
    anp.nanquantile: _nan_order_stat_setup(onp.quantile),
}
ORDER_STAT_SETUPS.update(ORDER_STAT_SETUPS_NAN)


def _order_stat_reverse(setup):
    def rule(g, ans, x, *args, **kwargs):
        W, perm, axes, qshape, keepdims = setup(x, *args, **kwargs)
        return _order_stat_vjp(g, x, keepdims, W, perm, axes, qshape)

    return rule


def _order_stat_forward(setup):
    def rule(t, ans, x, *args, **kwargs):
        W, perm, axes, qshape, keepdims = setup(x, *args, **kwargs)
        return fit(_order_stat_jvp(t, x, keepdims, W, perm, axes, qshape), ans)

    return rule


for _f, _setup in ORDER_STAT_SETUPS.items():
    def_rules(_f, [_order_stat_reverse(_setup)], [_order_stat_forward(_setup)])
