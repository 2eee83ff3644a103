"""Reverse (VJP) and forward (JVP) rules of fastgrad.numpy.fft.

Every transform is (real-)linear in its array argument once ``n``/``s``, ``axis``/``axes``
and ``norm`` are fixed, so its JVP is the transform itself applied to the tangent.  The
reverse rules are the adjoints under fastgrad's pairing Re(sum(g * dy)):

* a complex transform (fft, ifft and their 2-D / n-D forms, any ``norm``) is a symmetric
  matrix (the DFT matrix equals its transpose), so its adjoint is the same transform
  applied to ``g``;
* ``n``/``s`` first crop or zero-pad the input along the transformed axes: the adjoint
  crops or zero-pads back (``resize``);
* rfft (rfftn) is the first n//2 + 1 outputs of an fft of a real input: its adjoint is the
  real part of the fft of ``g`` zero-padded to n;
* irfft (irfftn) reads each frequency k of a Hermitian spectrum with weight c_k = 2,
  except c_0 = 1 and, for even n, c_{n/2} = 1 (the imaginary parts of those two bins are
  ignored): its adjoint is c * conj(rfft(g)) with the opposite ``norm``;
* hfft(a) = irfft(conj(a)) and ihfft(a) = conj(rfft(a)) with opposite norms follow.

All rules call the traced transforms, so they are differentiable again.  Repeated axes in
``axes`` (transforming one axis twice) are not supported by the reverse rules.
"""

import numpy as onp

from ..tracer import primitive
from . import numpy_wrapper as anp
from ._registration import def_rules
from ._shapes import constant_like, data_of, ndim_of, shape_of, unbroadcast

_F = {}  # the fft primitives (set by register())
_OPPOSITE = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _opposite(norm):
    try:
        return _OPPOSITE[norm]
    except KeyError:
        raise ValueError('Invalid norm value {}; should be "backward", "ortho" or "forward".'.format(norm)) from None


# ---------------------------------------------------------------------------------------
# resize: crop or zero-pad along axes (linear; its adjoint resizes back)


def _resize_raw(x, axes, sizes):
    x = data_of(x)  # (another library's array stays in it: its slicing and pad)
    for ax, n in zip(axes, sizes):
        cur = x.shape[ax]
        if cur > n:
            x = x[(slice(None),) * ax + (slice(0, n),)]
        elif cur < n:
            widths = [(0, 0)] * x.ndim
            widths[ax] = (0, n - cur)
            x = onp.pad(x, widths)
    return x


_resize_raw.__name__ = _resize_raw.__qualname__ = "resize"
resize = primitive(_resize_raw)
def_rules(resize, [lambda g, ans, x, axes, sizes: resize(g, axes, [shape_of(x)[a] for a in axes])], ["same"])


def _fit(cot, a, axes):
    """``cot`` cropped / zero-padded to ``a``'s sizes along ``axes``, in ``a``'s dtype."""
    shape, cshape = shape_of(a), shape_of(cot)
    if any(cshape[ax] != shape[ax] for ax in axes):
        cot = resize(cot, axes, [shape[ax] for ax in axes])
    return unbroadcast(cot, a)


def _hermitian_weights(n, axis, ndim):
    """c_k (k = 0 .. n//2) shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    c = onp.full(n // 2 + 1, 2.0)
    c[0] = 1.0
    if n % 2 == 0:
        c[-1] = 1.0
    shape = [1] * ndim
    shape[axis] = c.shape[0]
    return c.reshape(shape)


def _weighted(c, x):
    """c * x keeping x's (single or double) precision."""
    dtype = onp.empty(0, anp.result_type(x)).real.dtype
    return x * constant_like(c.astype(dtype), x)


# ---------------------------------------------------------------------------------------
# Axes and sizes of the n-dimensional transforms (as NumPy resolves them)


def _cook(a, s, axes, invreal=False):
    shape = shape_of(a)
    nd = len(shape)
    if s is None:
        shapeless = True
        axes_ = list(range(nd)) if axes is None else [int(ax) % nd for ax in axes]
        s_ = [shape[ax] for ax in axes_]
    else:
        shapeless = False
        s_ = list(s)
        axes_ = list(range(nd - len(s_), nd)) if axes is None else [int(ax) % nd for ax in axes]
    s_ = [shape[ax] if n is None or n == -1 else int(n) for n, ax in zip(s_, axes_)]
    if invreal and shapeless:
        s_[-1] = (shape[axes_[-1]] - 1) * 2
    return s_, axes_


def _axis(a, axis):
    return int(axis) % ndim_of(a)


# ---------------------------------------------------------------------------------------
# Reverse rules


def _c2c_vjp(name):
    def rule(g, ans, a, n=None, axis=-1, norm=None, out=None):
        ax = _axis(a, axis)
        return _fit(_F[name](g, None, ax, norm), a, [ax])

    return rule


def _c2cn_vjp(name, default_axes):
    def rule(g, ans, a, s=None, axes=default_axes, norm=None, out=None):
        s_, axes_ = _cook(a, s, axes)
        return _fit(_F["fftn" if name.startswith("fft") else "ifftn"](g, None, axes_, norm), a, axes_)

    return rule


def _rfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    ax = _axis(a, axis)
    n_ = shape_of(a)[ax] if n is None else int(n)
    return _fit(anp.real(_F["fft"](g, n_, ax, norm)), a, [ax])


def _rfftn_vjp(default_axes):
    def rule(g, ans, a, s=None, axes=default_axes, norm=None, out=None):
        s_, axes_ = _cook(a, s, axes)
        return _fit(anp.real(_F["fftn"](g, s_, axes_, norm)), a, axes_)

    return rule


def _irfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    ax = _axis(a, axis)
    n_ = 2 * (shape_of(a)[ax] - 1) if n is None else int(n)
    spec = anp.conjugate(_F["rfft"](g, n_, ax, _opposite(norm)))
    return _fit(_weighted(_hermitian_weights(n_, ax, ndim_of(g)), spec), a, [ax])


def _irfftn_vjp(default_axes):
    def rule(g, ans, a, s=None, axes=default_axes, norm=None, out=None):
        s_, axes_ = _cook(a, s, axes, invreal=True)
        spec = anp.conjugate(_F["rfftn"](g, s_, axes_, _opposite(norm)))
        c = _hermitian_weights(s_[-1], axes_[-1], ndim_of(g))
        return _fit(_weighted(c, spec), a, axes_)

    return rule


def _hfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    ax = _axis(a, axis)
    n_ = 2 * (shape_of(a)[ax] - 1) if n is None else int(n)
    spec = _F["rfft"](g, n_, ax, norm)
    return _fit(_weighted(_hermitian_weights(n_, ax, ndim_of(g)), spec), a, [ax])


def _ihfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    ax = _axis(a, axis)
    n_ = shape_of(a)[ax] if n is None else int(n)
    return _fit(anp.real(_F["fft"](anp.conjugate(g), n_, ax, _opposite(norm))), a, [ax])


def register(ns):
    """Register the rules of the fft namespace ``ns``."""
    _F.update(ns)
    rules = {
        "fft": _c2c_vjp("fft"),
        "ifft": _c2c_vjp("ifft"),
        "fft2": _c2cn_vjp("fft", (-2, -1)),
        "ifft2": _c2cn_vjp("ifft", (-2, -1)),
        "fftn": _c2cn_vjp("fft", None),
        "ifftn": _c2cn_vjp("ifft", None),
        "rfft": _rfft_vjp,
        "rfft2": _rfftn_vjp((-2, -1)),
        "rfftn": _rfftn_vjp(None),
        "irfft": _irfft_vjp,
        "irfft2": _irfftn_vjp((-2, -1)),
        "irfftn": _irfftn_vjp(None),
        "hfft": _hfft_vjp,
        "ihfft": _ihfft_vjp,
    }
    for name, rule in rules.items():
        def_rules(ns[name], [rule], ["same"])  # linear in the array (real-linear for the real forms)
    def_rules(ns["fftshift"], [lambda g, ans, x, axes=None: unbroadcast(ns["ifftshift"](g, axes), x)], ["same"])
    def_rules(ns["ifftshift"], [lambda g, ans, x, axes=None: unbroadcast(ns["fftshift"](g, axes), x)], ["same"])
