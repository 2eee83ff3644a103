"""Gradients of fastgrad.numpy.fft: forward and reverse mode, to second order.

Every transform with its ``n``/``s`` (cropping and zero-padding), ``axis``/``axes`` and
``norm`` arguments, on real and complex input (where NumPy accepts it), through
``fastgrad.test_util.check_grads(modes=["fwd", "rev"], order=2)``; values and
gradients against autograd 1.9.1 where autograd has the rule (autograd's real transforms
are wrong with norm="forward"; it has no hfft / ihfft rules); float32 in, float32 out.
"""

import warnings

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as np
from fastgrad.test_util import check_grads

FG_ONLY = pytest.mark.fastgrad_only
NORMS = [None, "backward", "ortho", "forward"]


def make(kind, seed):
    rs = onp.random.RandomState(seed)

    def M(*shape):
        x = rs.randn(*shape)
        if kind == "complex":
            x = x + 1j * rs.randn(*shape)
        return x

    return M


# cases: (name, function of (module, x, norm), input shape, input kinds)
_C2C = ("fft", "ifft")
_C2C_N = ("fft2", "ifft2", "fftn", "ifftn")
_BOTH = ("real", "complex")


def _t(name, *args, **kwargs):
    """``fft.<name>(x, *args, norm=norm, **kwargs)`` on module m."""
    return lambda m, x, norm: getattr(m.fft, name)(x, *args, norm=norm, **kwargs)


def _tpos(name, n, axis):
    """``fft.<name>(x, n, axis, norm)``, every argument positional."""
    return lambda m, x, norm: getattr(m.fft, name)(x, n, axis, norm)


CASES = []
for _name in _C2C:
    CASES += [
        (_name, _t(_name), (3, 5), _BOTH),
        (_name + "_pad_axis0", _tpos(_name, 7, 0), (3, 5), _BOTH),
        (_name + "_crop", _t(_name, n=3), (3, 5), _BOTH),
    ]
for _name in _C2C_N:
    CASES += [
        (_name, _t(_name), (2, 3, 4), _BOTH),
        (_name + "_s_axes", _t(_name, s=(4, 3), axes=(0, 2)), (2, 3, 4), _BOTH),
    ]
for _name in ("rfft", "ihfft"):
    CASES += [
        (_name, _t(_name), (3, 6), ("real",)),
        (_name + "_odd", _t(_name), (3, 5), ("real",)),
        (_name + "_pad_axis0", _tpos(_name, 7, 0), (3, 5), ("real",)),
        (_name + "_crop", _t(_name, n=4), (3, 5), ("real",)),
    ]
for _name in ("rfft2", "rfftn"):
    CASES += [
        (_name, _t(_name), (2, 3, 4), ("real",)),
        (_name + "_s_axes", _t(_name, s=(4, 5), axes=(0, 2)), (2, 3, 4), ("real",)),
    ]
for _name in ("irfft", "hfft"):
    CASES += [
        (_name, _t(_name), (3, 5), _BOTH),
        (_name + "_odd_n_axis0", _tpos(_name, 7, 0), (3, 5), _BOTH),
        (_name + "_small_n", _t(_name, n=4), (3, 5), _BOTH),
    ]
for _name in ("irfft2", "irfftn"):
    CASES += [
        (_name, _t(_name), (2, 3, 4), _BOTH),
        (_name + "_s_axes", _t(_name, s=(4, 5), axes=(0, 2)), (2, 3, 4), _BOTH),
        (_name + "_odd_s", _t(_name, s=(2, 3), axes=(1, 2)), (2, 3, 4), _BOTH),
    ]


def _params():
    out = []
    for name, fun, shape, kinds in CASES:
        for kind in kinds:
            for norm in NORMS:
                out.append(pytest.param(fun, shape, kind, norm, id="{}-{}-{}".format(name, kind, norm)))
    return out


@pytest.mark.parametrize("fun,shape,kind,norm", _params())
def test_check_grads(fun, shape, kind, norm):
    x = make(kind, 1)(*shape)
    onp.random.seed(0)
    check_grads(lambda x: fun(np, x, norm), modes=["fwd", "rev"], order=2)(x)


@pytest.mark.parametrize("kind", ["real", "complex"])
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts(name, kind):
    x = make(kind, 2)(3, 4, 5)
    f = getattr(np.fft, name)
    onp.random.seed(0)
    check_grads(lambda x: f(x), modes=["fwd", "rev"], order=2)(x)
    check_grads(lambda x: f(x, axes=(0, 2)), modes=["fwd", "rev"], order=2)(x)
    check_grads(lambda x: f(x, axes=1), modes=["fwd", "rev"], order=2)(x)


def _ref_params():
    out = []
    for name, fun, shape, kinds in CASES:
        if name.startswith(("hfft", "ihfft")):
            continue  # autograd has no rule
        for kind in kinds:
            for norm in (None, "ortho"):
                out.append(pytest.param(fun, shape, kind, norm, id="{}-{}-{}".format(name, kind, norm)))
            if not name.startswith(("rfft", "irfft")):
                out.append(pytest.param(fun, shape, kind, "forward", id="{}-{}-forward".format(name, kind)))
    return out


@pytest.mark.parametrize("fun,shape,kind,norm", _ref_params())
def test_matches_autograd(fun, shape, kind, norm):
    ag = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    x = make(kind, 3)(*shape)
    expected = fun(onp, x, norm)
    onp.testing.assert_allclose(fun(np, x, norm), expected, rtol=1e-12, atol=1e-12)
    rs = onp.random.RandomState(4)
    w = rs.randn(*expected.shape) + (1j * rs.randn(*expected.shape) if expected.dtype.kind == "c" else 0)

    def loss(m):
        return lambda x: m.sum(m.real(w * fun(m, x, norm)))

    try:
        g_ref = ag.grad(loss(anp))(x)
    except NotImplementedError as e:  # e.g. autograd's real transforms of odd length
        pytest.skip("autograd 1.9.1 has no rule here: {}".format(e))
    g_ours = fastgrad.grad(loss(np))(x)
    onp.testing.assert_allclose(g_ours, g_ref, rtol=1e-9, atol=1e-12)


@FG_ONLY
@pytest.mark.parametrize("name", ["rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn", "hfft", "ihfft"])
def test_real_transforms_norm_forward(name):
    """autograd's reverse rules of the real transforms are wrong with norm="forward"
    (and it has none for hfft / ihfft): ours agree with the forward rule and with
    central differences."""
    x = make("real", 5)(4, 6)
    f = lambda x: getattr(np.fft, name)(x, norm="forward")
    onp.random.seed(1)
    check_grads(f, modes=["fwd", "rev"], order=1)(x)
    # the reverse rule is the adjoint of the forward rule: <u, J v> == <J^T u, v>
    v = onp.random.randn(*x.shape)
    y, jv = fastgrad.make_jvp(f)(x)(v)
    u = onp.random.randn(*y.shape) + (1j * onp.random.randn(*y.shape) if y.dtype.kind == "c" else 0)
    vjp, _ = fastgrad.make_vjp(f)(x)
    onp.testing.assert_allclose(onp.real(onp.sum(u * jv)), onp.sum(vjp(u) * v), rtol=1e-10)


@pytest.mark.parametrize(
    "name,kind",
    [
        ("fft", "real"),
        ("ifft", "complex"),
        ("fftn", "complex"),
        ("rfft", "real"),
        ("irfft", "complex"),
        ("rfftn", "real"),
        ("irfftn", "complex"),
        ("hfft", "complex"),
        ("ihfft", "real"),
        ("fftshift", "real"),
    ],
)
def test_float32_in_float32_out(name, kind):
    """NumPy's dtype (single precision since NumPy 2; NumPy 1 computes in double), and a
    gradient in the argument's dtype."""
    x = make(kind, 6)(4, 6).astype(onp.complex64 if kind == "complex" else onp.float32)
    f = lambda x: getattr(np.fft, name)(x)
    vjp, y = fastgrad.make_vjp(f)(x)
    assert y.dtype == getattr(onp.fft, name)(x).dtype
    g = vjp(onp.ones(y.shape, y.dtype))
    assert g.dtype == x.dtype and g.shape == x.shape
    _, t = fastgrad.make_jvp(f)(x)(onp.ones_like(x))
    assert t.dtype == y.dtype


def test_fftfreq_is_constant():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        g = fastgrad.grad(lambda d: np.sum(np.fft.fftfreq(4, 1.0) * d))(2.0)
    assert g == onp.sum(onp.fft.fftfreq(4, 1.0))
