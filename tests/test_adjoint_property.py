"""Property test: the forward and the reverse rule of every primitive are adjoint.

For a primitive f, differentiated w.r.t. one argument x at a random point, with a random
tangent v (in x's space) and a random cotangent u (in the result's space):

    <u, J v> == <J^T u, v>

where J v comes from the forward rule (``make_jvp``) and J^T u from the reverse rule
(``make_vjp``).  The pairing is the real one fastgrad (and autograd) use for complex
values: a cotangent u acts on a tangent t as ``Re(sum(u * t))``, with no conjugation
(a cotangent of a real function L at z = x + iy is dL/dx - i dL/dy); it is checked on a
holomorphic and a non-holomorphic function in ``test_pairing_convention``.

Each primitive has a small builder that draws its arguments: shapes (broadcast against
each other where the function broadcasts), axes, keyword options and the dtype (float64,
float32, complex128 where the function and its rules support them); values come from a
RandomState seeded by hypothesis, in the function's domain.  Every float/complex array
argument with a rule in both registries is checked, one at a time.

A case whose identity fails is a bug in one of its two rules: it is marked
``xfail(strict=True)`` below with a diagnosis, never loosened.
"""

import collections
import math

import numpy as onp
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import fastgrad.numpy as np  # noqa: E402
from numpy_versions import has_numpy  # noqa: E402
from fastgrad import builtins as fg_builtins  # noqa: E402
from fastgrad._engine import engine  # noqa: E402
from fastgrad.core import make_jvp, make_vjp, primitive_jvps, primitive_vjps  # noqa: E402
from fastgrad.core import sparse_add, vspace  # noqa: E402
from fastgrad.numpy import _fft_rules, _linalg_rules, numpy_wrapper as W  # noqa: E402

pytestmark = pytest.mark.fastgrad_only

F8, F4, C16 = onp.dtype(onp.float64), onp.dtype(onp.float32), onp.dtype(onp.complex128)
REAL = (F8, F4)
ALL = (F8, F4, C16)
F8C = (F8, C16)
EXAMPLES = 40


# ---------------------------------------------------------------------------------------
# Drawing arguments


class Gen:
    """Draws shapes and options through hypothesis, values from a seeded RandomState."""

    def __init__(self, data, dtype):
        self.data, self.dt = data, dtype
        self.rng = onp.random.RandomState(data.draw(st.integers(0, 2**31 - 1), label="seed"))

    def draw(self, strategy):
        return self.data.draw(strategy)

    def int(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def bool(self):
        return self.draw(st.booleans())

    def choice(self, seq):
        return self.draw(st.sampled_from(list(seq)))

    def shape(self, min_dims=0, max_dims=3, min_side=1, max_side=4):
        return self.draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side))

    def bshape(self, shape):
        """A shape that broadcasts against ``shape`` (leading axes dropped, some sides 1)."""
        drop = self.int(0, len(shape))
        return tuple(1 if self.bool() else n for n in shape[drop:])

    def bpair(self, min_dims=0, max_dims=3):
        """Two mutually broadcastable shapes, in a random order."""
        s = self.shape(min_dims, max_dims)
        b = self.bshape(s)
        return (s, b) if self.bool() else (b, s)

    def axis(self, nd, none=True, tuples=True, negative=True):
        options = []
        if none:
            options.append(None)
        if nd:
            options += list(range(-nd if negative else 0, nd))
            if tuples and nd > 1:
                options.append(tuple(sorted(self.draw(st.sets(st.integers(0, nd - 1), min_size=1, max_size=nd)))))
        return self.choice(options)

    def mix(self):
        """A dtype for a second operand: the same, or float64 (mixed precision / real-complex)."""
        return self.choice([self.dt, F8])

    def arr(self, shape, dom="real", dt=None, nans=False, zeros=False):
        dt = onp.dtype(dt if dt is not None else self.dt)
        r = self.rng
        shape = tuple(shape)
        if dom == "real":
            x = r.randn(*shape)
        elif dom == "pos":
            x = r.uniform(0.5, 2.0, shape)
        elif dom == "unit":
            x = r.uniform(-0.9, 0.9, shape)
        elif dom == "gt1":
            x = r.uniform(1.2, 3.0, shape)
        elif dom == "nonzero":
            x = r.uniform(0.5, 2.0, shape) * r.choice([-1.0, 1.0], shape)
        else:
            raise ValueError(dom)
        x = onp.asarray(x, dtype=float)
        if zeros and x.size:
            x = onp.where(r.rand(*shape) < 0.25, 0.0, x)
        if dt.kind == "c":  # small imaginary parts: away from the branch cuts on the real axis
            x = x + 0.3j * r.uniform(-1, 1, shape)
        if nans and x.ndim:
            # NaN only where every index is >= 1: every 1-d slice keeps a number
            idx = onp.indices(shape).reshape(len(shape), -1)
            mask = (idx >= 1).all(axis=0).reshape(shape) & (r.rand(*shape) < 0.5)
            x = onp.where(mask, onp.nan, x)
        return onp.asarray(x, dtype=dt)

    def rarr(self, shape, dom="real"):
        """A float64 array whatever the drawn dtype (constant operands: knots, weights)."""
        return self.arr(shape, dom, dt=F8)

    def matrix(self, batch=None, n=None, kind="general", m=None):
        """A (batch of) matrix: general (well conditioned), spd, herm (distinct eigenvalues)."""
        if batch is None:
            batch = self.shape(0, 1, max_side=2)
        n = n or self.int(1, 4)
        m = m or n
        A = self.arr(batch + (n, m))
        if kind == "general":
            if n == m:
                A = A + 3.0 * onp.eye(n, dtype=A.dtype)
        elif kind == "spd":
            A = A @ onp.conj(onp.swapaxes(A, -1, -2)) + n * onp.eye(n, dtype=A.dtype)
        elif kind == "herm":
            A = A + onp.conj(onp.swapaxes(A, -1, -2))
            A = A + onp.diag(onp.arange(n) * 2.0).astype(A.dtype)
        return onp.asarray(A, dtype=self.dt)


# ---------------------------------------------------------------------------------------
# The check


def _leaves(t):
    if isinstance(t, (tuple, list)):
        for e in t:
            yield from _leaves(e)
    else:
        yield t


def _random_like(rng, value):
    """A random value in ``value``'s space (same structure, shapes, dtypes)."""
    if isinstance(value, (tuple, list)):
        return tuple(_random_like(rng, v) for v in value)
    a = onp.asarray(value)
    x = rng.randn(*a.shape)
    if a.dtype.kind == "c":
        x = x + 1j * rng.randn(*a.shape)
    assert a.dtype.kind in "fc", "a result to pair must be float or complex, got %s" % a.dtype
    out = onp.asarray(x, dtype=a.dtype)
    return out if a.ndim else a.dtype.type(out)


def _pair(a, b):
    la, lb = list(_leaves(a)), list(_leaves(b))
    assert len(la) == len(lb), (len(la), len(lb))
    total = 0.0
    for x, y in zip(la, lb):
        if x is None or y is None:
            continue
        prod = onp.asarray(x, dtype=complex) * onp.asarray(y, dtype=complex)
        total += float(onp.real(onp.sum(prod)))
    return total


def _norm(a):
    return math.sqrt(
        sum(float(onp.sum(onp.abs(onp.asarray(x, dtype=complex)) ** 2)) for x in _leaves(a) if x is not None)
    )


def _has_rules(prim, argnum):
    for reg in (primitive_vjps, primitive_jvps):
        rule = reg.get(prim)
        if rule is None:
            return False
        entries = getattr(rule, "entries", None)
        if entries is None or getattr(rule, "default", None) is not None:
            continue  # a rule for every argument
        entry = entries.get(argnum)
        if entry is None or entry[0] == engine.ZERO:
            return False
    return True


def _is_float_array(a):
    if isinstance(a, tuple) and a:
        return all(_is_float_array(e) for e in a)
    return isinstance(a, (onp.ndarray, onp.generic)) and onp.asarray(a).dtype.kind in "fc"


def _low_precision(*values):
    return any(
        onp.asarray(x).dtype in (F4, onp.dtype(onp.complex64)) for v in values for x in _leaves(v) if x is not None
    )


def _same_dtype(got, want):
    scalar = onp.ndim(want) == 0
    got, want = onp.asarray(got).dtype, onp.asarray(want).dtype
    if got != want and scalar and not has_numpy((2, 0)):
        # NumPy 1 casts by value: a single-precision scalar combined with a Python float is
        # double (NEP 50 came with NumPy 2); autograd's rules give the same
        return got == onp.promote_types(want, onp.float64)
    return got == want


def check_adjoint(case, args, kwargs, rng, nonzero):
    args = list(args)
    diff = (
        case.diff
        if case.diff is not None
        else [i for i, a in enumerate(args) if _is_float_array(a) and _has_rules(case.prim, i)]
    )
    assert diff, "no differentiable argument in %s" % case.name
    for i in diff:
        x = args[i]

        def f(xi, i=i):
            a = list(args)
            a[i] = xi
            out = case.fun(*a, **kwargs)
            return case.post(out) if case.post is not None else out

        vjp, ans = make_vjp(f, x)
        v = _random_like(rng, x)
        u = _random_like(rng, ans)
        _, jv = make_jvp(f, x)(v)
        jtu = vjp(u)
        # the cotangent lives in x's space and the tangent in the result's (shape and dtype)
        for xl, jl in zip(_leaves(x), _leaves(jtu)):
            assert onp.shape(jl) == onp.shape(xl), (case.name, i, onp.shape(jl), onp.shape(xl))
            assert _same_dtype(jl, xl), (
                case.name,
                i,
                "cotangent",
                onp.asarray(jl).dtype,
                onp.asarray(xl).dtype,
            )
        for al, tl in zip(_leaves(ans), _leaves(jv)):
            if tl is not None:
                assert onp.shape(tl) == onp.shape(al), (case.name, i, onp.shape(tl), onp.shape(al))
                assert _same_dtype(tl, al), (
                    case.name,
                    i,
                    "tangent",
                    onp.asarray(tl).dtype,
                    onp.asarray(al).dtype,
                )
        lhs, rhs = _pair(u, jv), _pair(jtu, v)
        scale = _norm(u) * _norm(jv) + _norm(jtu) * _norm(v)
        # (NumPy 1 also computes a 0-d double times a single-precision array in single)
        tol = 1e-4 if _low_precision(x, ans) or (not has_numpy((2, 0)) and _low_precision(args)) else 1e-9
        # rounding of results that are exactly 0 in exact arithmetic (J v = 0 while
        # J^T u is a few ulps): relative to the size of u, v and x
        scale += 1e-5 * _norm(u) * _norm(v) * (1.0 + _norm([onp.nan_to_num(t) for t in _leaves(x)]))
        assert math.isfinite(lhs) and math.isfinite(rhs), (case.name, i, lhs, rhs)
        assert abs(lhs - rhs) <= tol * scale + 1e-300, "%s, argument %d: <u, Jv> = %r, <J^T u, v> = %r (scale %r)" % (
            case.name,
            i,
            lhs,
            rhs,
            scale,
        )
        if scale > 0:
            nonzero[case.name] += 1


# ---------------------------------------------------------------------------------------
# The table: name -> how to call the primitive

Case = collections.namedtuple("Case", "name prim fun build dtypes post diff examples")
CASES = []


def case(name, prim, build, dtypes=ALL, fun=None, post=None, diff=None, examples=EXAMPLES):
    """``build(g)`` draws ``(args, kwargs)``; ``fun`` (default: the primitive) is called with
    them; ``post`` maps the result (e.g. drops integer parts); ``diff`` lists the argument
    numbers to check (default: every float/complex array argument with rules).  ``prim`` is
    None for a function the installed NumPy lacks (see ``present``): the case is skipped."""
    CASES.append(Case(name, prim, fun if fun is not None else prim, build, tuple(dtypes), post, diff, examples))


def present(path):
    """fastgrad.numpy's function at ``path`` ("vecdot", "linalg.svdvals"), one that only
    some NumPy versions have: None where the installed NumPy lacks it."""
    obj = np
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj


def unary(g, dom="real", **kw):
    return (g.arr(g.shape(), dom, **kw),), {}


def binary(g, dom1="real", dom2="real", mix=True):
    s1, s2 = g.bpair()
    return (g.arr(s1, dom1), g.arr(s2, dom2, dt=g.mix() if mix else None)), {}


# ---- elementwise, one argument -----------------------------------------------------------

for _name, _dom, _dts in [
    ("negative", "real", ALL),
    ("positive", "real", ALL),
    ("exp", "real", ALL),
    ("exp2", "real", ALL),
    ("expm1", "real", ALL),
    ("log", "pos", ALL),
    ("log2", "pos", ALL),
    ("log10", "pos", ALL),
    ("log1p", "pos", ALL),
    ("sin", "real", ALL),
    ("cos", "real", ALL),
    ("tan", "unit", ALL),
    ("arcsin", "unit", ALL),
    ("arccos", "unit", ALL),
    ("arctan", "unit", ALL),
    ("sinh", "real", ALL),
    ("cosh", "real", ALL),
    ("tanh", "real", ALL),
    ("arcsinh", "real", ALL),
    ("arccosh", "gt1", ALL),
    ("arctanh", "unit", ALL),
    ("sqrt", "pos", ALL),
    ("cbrt", "nonzero", REAL),
    ("square", "real", ALL),
    ("reciprocal", "nonzero", ALL),
    ("rad2deg", "real", REAL),
    ("deg2rad", "real", REAL),
    ("degrees", "real", REAL),
    ("radians", "real", REAL),
    ("conjugate", "real", ALL),
    ("absolute", "nonzero", ALL),
    ("fabs", "nonzero", REAL),
    ("sinc", "real", ALL),
    ("real", "real", ALL),
    ("imag", "real", (C16,)),
    ("angle", "nonzero", (C16,)),
    ("copy", "real", ALL),
    ("ascontiguousarray", "real", ALL),
    ("asfortranarray", "real", ALL),
    ("asanyarray", "real", ALL),
    ("asarray_chkfinite", "real", ALL),
]:
    case(_name, getattr(np, _name), lambda g, _dom=_dom: unary(g, _dom), _dts)
case("matrix_transpose", present("matrix_transpose"), lambda g: ((g.arr(g.shape(2, 4)),), {}), ALL)

case("nan_to_num", np.nan_to_num, lambda g: ((g.arr(g.shape(1), nans=True),), {}), ALL)
case(
    "real_if_close",
    np.real_if_close,
    lambda g: ((g.arr(g.shape()) if g.dt.kind != "c" or g.bool() else onp.asarray(g.rarr(g.shape()) + 1e-17j),), {}),
    ALL,
)
case("negative_op", W.negative_op, lambda g: unary(g), ALL)
case("angle(deg=True)", np.angle, lambda g: ((g.arr(g.shape(), "nonzero"),), {"deg": True}), (C16,))


def _unwrap(g):
    x = g.arr(g.shape(1)) * 4.0
    return (x,), {"axis": g.axis(x.ndim, none=False, tuples=False)}


case("unwrap", np.unwrap, _unwrap, REAL)


def _modf(g):
    return (g.arr(g.shape()) * 3.0,), {}


case("modf", np.modf, _modf, REAL)
case("ldexp", np.ldexp, lambda g: ((g.arr(g.shape(0)), onp.asarray(g.rng.randint(-3, 4), dtype=int)), {}), REAL)


# ---- elementwise, two arguments, broadcasting -----------------------------------------

for _name, _d1, _d2, _dts in [
    ("add", "real", "real", ALL),
    ("subtract", "real", "real", ALL),
    ("multiply", "real", "real", ALL),
    ("true_divide", "real", "nonzero", ALL),
    ("power", "pos", "real", ALL),
    ("float_power", "pos", "real", ALL),
    ("maximum", "real", "real", ALL),
    ("minimum", "real", "real", ALL),
    ("fmax", "real", "real", ALL),
    ("fmin", "real", "real", ALL),
    ("logaddexp", "real", "real", REAL),
    ("logaddexp2", "real", "real", REAL),
    ("arctan2", "real", "nonzero", REAL),
    ("hypot", "nonzero", "nonzero", REAL),
    ("remainder", "real", "nonzero", REAL),
    ("fmod", "real", "nonzero", REAL),
    ("copysign", "nonzero", "nonzero", REAL),
]:
    case(_name, getattr(np, _name), lambda g, _d1=_d1, _d2=_d2: binary(g, _d1, _d2), _dts)

for _name, _d2, _dts in [
    ("add_op", "real", ALL),
    ("subtract_op", "real", ALL),
    ("multiply_op", "real", ALL),
    ("true_divide_op", "nonzero", ALL),
    ("remainder_op", "nonzero", REAL),
]:
    case(_name, getattr(W, _name), lambda g, _d2=_d2: binary(g, "real", _d2), _dts)
case("power_op", W.power_op, lambda g: binary(g, "pos", "real"), ALL)


def _power_negative_base(g):
    s1, s2 = g.bpair()
    y = g.rng.randint(-2, 4, s2).astype(g.dt)
    return (g.arr(s1, "nonzero"), y), {}


case("power(negative base, integer exponent)", np.power, _power_negative_base, REAL)
case("float_power(negative base, integer exponent)", np.float_power, _power_negative_base, REAL)
case("divmod", np.divmod, lambda g: binary(g, "real", "nonzero"), REAL)


# ---- reductions ------------------------------------------------------------------------


def _reduction(g, dom="real", nans=False, zeros=False, ddof=False, min_side=1, where=False):
    x = g.arr(g.shape(1, 3, min_side=min_side), dom, nans=nans, zeros=zeros)
    kw = {"axis": g.axis(x.ndim)}
    if g.bool():
        kw["keepdims"] = True
    if ddof:
        kw["ddof"] = g.choice([0, 1])
    if where and g.bool():
        mask = g.rng.rand(*x.shape) < 0.7
        mask.reshape(-1)[0] = True
        kw["where"] = mask
        kw["axis"] = None
    return (x,), kw


case("sum", np.sum, lambda g: _reduction(g, where=True), ALL)
case("prod", np.prod, lambda g: _reduction(g, zeros=True), ALL)
case("mean", np.mean, lambda g: _reduction(g, where=True), ALL)
case("var", np.var, lambda g: _reduction(g, ddof=True, min_side=2), ALL)
case("std", np.std, lambda g: _reduction(g, ddof=True, min_side=2), ALL)
case("max", np.max, lambda g: _reduction(g), ALL)
case("amax", np.amax, lambda g: _reduction(g), ALL)
case("amin", np.amin, lambda g: _reduction(g), ALL)
case("min", np.min, lambda g: _reduction(g), ALL)
case("ptp", np.ptp, lambda g: _reduction(g), ALL)
case("nansum", np.nansum, lambda g: _reduction(g, nans=True), ALL)
case("nanmean", np.nanmean, lambda g: _reduction(g, nans=True), ALL)
case("nanprod", np.nanprod, lambda g: _reduction(g, nans=True, zeros=True), ALL)
case("nanvar", np.nanvar, lambda g: _reduction(g, nans=True, ddof=False), ALL)
case("nanstd", np.nanstd, lambda g: _reduction(g, nans=True, ddof=False), ALL)
case("nanmax", np.nanmax, lambda g: _reduction(g, nans=True), ALL)
case("nanmin", np.nanmin, lambda g: _reduction(g, nans=True), ALL)


def _cumulative(g, nans=False, zeros=False, new_api=False):
    x = g.arr(g.shape(1, 3), nans=nans, zeros=zeros)
    if new_api:
        kw = {"axis": g.axis(x.ndim, none=x.ndim == 1, tuples=False)}
        if g.bool():
            kw["include_initial"] = True
        return (x,), kw
    return (x,), {"axis": g.axis(x.ndim, tuples=False)}


case("cumsum", np.cumsum, lambda g: _cumulative(g), ALL)
case("cumprod", np.cumprod, lambda g: _cumulative(g, zeros=True), ALL)
case("nancumsum", np.nancumsum, lambda g: _cumulative(g, nans=True), ALL)
case("nancumprod", np.nancumprod, lambda g: _cumulative(g, nans=True), ALL)
case("cumulative_sum", present("cumulative_sum"), lambda g: _cumulative(g, new_api=True), ALL)
case("cumulative_prod", present("cumulative_prod"), lambda g: _cumulative(g, zeros=True, new_api=True), ALL)

_METHODS = ["linear", "lower", "higher", "midpoint", "nearest", "hazen", "weibull", "median_unbiased", "inverted_cdf"]


def _order_stat(g, q=None, nans=False):
    x = g.arr(g.shape(1, 3), nans=nans)
    kw = {"axis": g.axis(x.ndim), "keepdims": g.bool()}
    if q is None:
        return (x,), kw
    qv = g.rng.uniform(0, q, g.shape(0, 1, max_side=3))
    if not nans:
        kw["method"] = g.choice(_METHODS)
    return (x, qv), kw


case("median", np.median, lambda g: _order_stat(g), ALL)
case("percentile", np.percentile, lambda g: _order_stat(g, 100.0), REAL, diff=[0])
case("quantile", np.quantile, lambda g: _order_stat(g, 1.0), REAL, diff=[0])
case("nanmedian", np.nanmedian, lambda g: _order_stat(g, nans=True), ALL)
case("nanpercentile", np.nanpercentile, lambda g: _order_stat(g, 100.0, nans=True), REAL, diff=[0])
case("nanquantile", np.nanquantile, lambda g: _order_stat(g, 1.0, nans=True), REAL, diff=[0])


def _average(g):
    x = g.arr(g.shape(1, 3))
    ax = g.axis(x.ndim, tuples=False)
    kw = {"axis": ax}
    if g.bool():
        w = g.arr(x.shape if ax is None or g.bool() else (x.shape[ax],), "pos")
        return (x, ax, w), {}
    return (x,), kw


case("average", np.average, _average, ALL)


def _trapezoid(g):
    y = g.arr(g.shape(1, 3))
    ax = g.choice(range(-y.ndim, y.ndim))
    n = y.shape[ax]
    if g.bool():
        x = onp.cumsum(g.rarr((n,), "pos")).astype(g.dt.type(0).real.dtype)
        return (y, x), {"axis": ax}
    return (y,), {"dx": float(g.rng.uniform(0.5, 2.0)), "axis": ax}


case("trapezoid", present("trapezoid"), _trapezoid, ALL)


# ---- products --------------------------------------------------------------------------


def _dot(g):
    n, m, k = g.int(1, 3), g.int(1, 3), g.int(1, 3)
    kind = g.choice(["vv", "mv", "vm", "mm", "tm", "tv", "sm"])
    shapes = {
        "vv": ((k,), (k,)),
        "mv": ((n, k), (k,)),
        "vm": ((k,), (k, m)),
        "mm": ((n, k), (k, m)),
        "tm": ((2, n, k), (k, m)),
        "tv": ((2, n, k), (k,)),
        "sm": ((), (n, m)),
    }[kind]
    return (g.arr(shapes[0]), g.arr(shapes[1], dt=g.mix())), {}


def _matmul(g):
    n, m, k = g.int(1, 3), g.int(1, 3), g.int(1, 3)
    kind = g.choice(["vv", "mv", "vm", "mm", "batch"])
    if kind == "batch":
        b1, b2 = g.bpair(1, 2)
        shapes = (b1 + (n, k), b2 + (k, m))
    else:
        shapes = {"vv": ((k,), (k,)), "mv": ((n, k), (k,)), "vm": ((k,), (k, m)), "mm": ((n, k), (k, m))}[kind]
    return (g.arr(shapes[0]), g.arr(shapes[1], dt=g.mix())), {}


def _inner(g):
    k = g.int(1, 3)
    return (g.arr(g.shape(0, 2) + (k,)), g.arr(g.shape(0, 1) + (k,), dt=g.mix())), {}


def _outer(g):
    return (g.arr(g.shape(0, 2)), g.arr(g.shape(0, 2), dt=g.mix())), {}


def _tensordot(g):
    p, q, r, s = (g.int(1, 3) for _ in range(4))
    kind = g.choice([0, 1, 2, "pairs"])
    if kind == 0:
        return (g.arr((p, q)), g.arr((r,))), {"axes": 0}
    if kind == 1:
        return (g.arr((p, q)), g.arr((q, r))), {"axes": 1}
    if kind == 2:
        return (g.arr((p, q, r)), g.arr((q, r, s))), {"axes": 2}
    return (g.arr((p, q, r)), g.arr((r, s, p))), {"axes": ([0, 2], [2, 0])}


_EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("i,i->", [(3,), (3,)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("...i,...i->...", [(2, 3), (3,)]),
    ("i,j,k->ijk", [(2,), (3,), (2,)]),
    ("ij,kj", [(2, 3), (4, 3)]),
    ("ii", [(3, 3)]),
]


def _einsum(g):
    spec, shapes = g.choice(_EINSUM)
    ops = [g.arr(s) for s in shapes]
    if g.bool() and spec == "ij,jk->ik":
        return (ops[0], [0, 1], ops[1], [1, 2], [0, 2]), {}  # sublist form
    return (spec,) + tuple(ops), {}


def _kron(g):
    return (g.arr(g.shape(1, 2, max_side=3)), g.arr(g.shape(1, 2, max_side=3))), {}


def _cross(g):
    b1, b2 = g.bpair(0, 2)
    a, b = g.arr(b1 + (3,)), g.arr(b2 + (3,), dt=g.mix())
    if g.bool() and a.ndim >= 2:  # vectors along the first axis of a
        return (onp.moveaxis(a, -1, 0), b), {"axisa": 0}
    return (a, b), {}


def _vdot(g):
    s = g.shape(1, 2)
    return (g.arr(s), g.arr(s, dt=g.mix())), {}


def _vecdot(g):
    b1, b2 = g.bpair(0, 2)
    n = g.int(1, 3)
    return (g.arr(b1 + (n,)), g.arr(b2 + (n,), dt=g.mix())), {}


def _matvec(g):
    b1, b2 = g.bpair(0, 2)
    n, m = g.int(1, 3), g.int(1, 3)
    return (g.arr(b1 + (m, n)), g.arr(b2 + (n,), dt=g.mix())), {}


def _vecmat(g):
    b1, b2 = g.bpair(0, 2)
    n, m = g.int(1, 3), g.int(1, 3)
    return (g.arr(b1 + (n,)), g.arr(b2 + (n, m), dt=g.mix())), {}


def _convolve(g, shorter_first=None):
    mode = g.choice(["full", "same", "valid"])
    n, m = g.int(1, 5), g.int(1, 5)
    if shorter_first:  # correlate, the failing configuration: see XFAIL
        mode, n = "same", 2 * g.int(1, 2)
        m = n + g.int(1, 3)
    elif shorter_first is not None and n < m and n % 2 == 0:  # correlate elsewhere
        n, m = m, n
    return (g.arr((n,)), g.arr((m,), dt=g.mix())), {"mode": mode}


case("dot", np.dot, _dot, ALL)
case("matmul", np.matmul, _matmul, ALL)
case("matmul_op", W.matmul_op, _matmul, ALL)
case("inner", np.inner, _inner, ALL)
case("outer", np.outer, _outer, ALL)
case("tensordot", np.tensordot, _tensordot, ALL)
case("einsum", np.einsum, _einsum, ALL)
case("kron", np.kron, _kron, ALL)
case("cross", np.cross, _cross, ALL)
case("vdot", np.vdot, _vdot, ALL)
case("vecdot", present("vecdot"), _vecdot, ALL)
case("matvec", present("matvec"), _matvec, ALL)
case("vecmat", present("vecmat"), _vecmat, ALL)
case("convolve", np.convolve, _convolve, ALL)
case("correlate", np.correlate, lambda g: _convolve(g, shorter_first=False), ALL)
case("correlate(mode='same', even len(a) < len(v))", np.correlate, lambda g: _convolve(g, shorter_first=True), (F8,))


# ---- shapes ----------------------------------------------------------------------------


def _reshape(g):
    x = g.arr(g.shape())
    new = g.choice([(-1,), (x.size, 1), tuple(reversed(x.shape)), (1,) + x.shape])
    return (x, new), {"order": g.choice(["C", "F"])}


def _with_axis(g, min_dims=1, extra=0, **kw):
    x = g.arr(g.shape(min_dims))
    return (x, g.axis(x.ndim + extra, none=False, tuples=False, **kw)), {}


def _squeeze(g):
    s = tuple(1 if g.bool() else n for n in g.shape(1))
    x = g.arr(s)
    ones = [i for i, n in enumerate(s) if n == 1]
    return (x,), ({"axis": g.choice(ones)} if ones and g.bool() else {})


def _transpose(g):
    x = g.arr(g.shape())
    perm = list(g.draw(st.permutations(range(x.ndim)))) if x.ndim else []
    return ((x, perm) if g.bool() else (x,)), {}


def _swapaxes(g):
    x = g.arr(g.shape(1))
    return (x, g.int(-x.ndim, x.ndim - 1), g.int(-x.ndim, x.ndim - 1)), {}


def _moveaxis(g):
    x = g.arr(g.shape(1))
    return (x, g.int(-x.ndim, x.ndim - 1), g.int(-x.ndim, x.ndim - 1)), {}


def _rollaxis(g):
    x = g.arr(g.shape(1))
    return (x, g.int(-x.ndim, x.ndim - 1), g.int(0, x.ndim)), {}


def _atleast(g):
    return tuple(g.arr(g.shape(0, 3)) for _ in range(g.int(1, 3))), {}


def _broadcast_to(g):
    x = g.arr(g.shape(0, 2))
    target = g.shape(0, 2) + tuple(n if n > 1 or g.bool() else g.int(1, 3) for n in x.shape)
    return (x, target), {}


def _broadcast_arrays(g):
    s1, s2 = g.bpair()
    return (g.arr(s1), g.arr(s2)), {}


def _flip(g):
    x = g.arr(g.shape(1))
    return (x,), {"axis": g.axis(x.ndim)}


def _rot90(g):
    x = g.arr(g.shape(2))
    a, b = g.draw(st.permutations(range(x.ndim)))[:2]
    return (x, g.int(-2, 3), (a, b)), {}


def _roll(g):
    x = g.arr(g.shape(1))
    if g.bool():
        return (x, g.int(-5, 5)), {}
    ax = g.axis(x.ndim, none=False, tuples=True)
    shift = tuple(g.int(-3, 3) for _ in ax) if isinstance(ax, tuple) else g.int(-3, 3)
    return (x, shift), {"axis": ax}


def _astype(g):
    x = g.arr(g.shape(0 if has_numpy((2, 1)) else 1))  # (NumPy 2.0's np.astype takes no scalars)
    targets = [F8, F4] if x.dtype.kind == "f" else [C16, onp.dtype(onp.complex64)]
    if x.dtype.kind == "f":
        targets.append(C16)
    return (x, g.choice(targets)), {}


def _require(g):
    return (g.arr(g.shape()),), {"requirements": g.choice([None, "C", "F", ["A", "O"]])}


def _resize(g):
    x = g.arr(g.shape(1))
    return (x, g.shape(1)), {}


def _fft_resize(g):
    x = g.arr(g.shape(1))
    axes = sorted(set(g.draw(st.lists(st.integers(0, x.ndim - 1), min_size=1, max_size=x.ndim))))
    return (x, axes, [g.int(1, 5) for _ in axes]), {}


def _diagonal(g):
    x = g.arr(g.shape(2))
    a1, a2 = g.draw(st.permutations(range(x.ndim)))[:2]
    return (x, g.int(-2, 2), a1 - x.ndim * g.int(0, 1), a2), {}


def _diag(g):
    if g.bool():
        return (g.arr((g.int(1, 4),)), g.int(-2, 2)), {}
    return (g.arr((g.int(1, 4), g.int(1, 4))), g.int(-1, 1)), {}


def _diagflat(g):
    return (g.arr(g.shape(1, 2)), g.int(-2, 2)), {}


def _make_diagonal(g):
    d = g.arr(g.shape(1, 3))
    nd = d.ndim + 1
    a1, a2 = g.draw(st.permutations(range(nd)))[:2]
    return (d,), {"offset": g.int(-2, 2), "axis1": a1, "axis2": a2 - nd * g.int(0, 1)}


def _tri(g):
    return (g.arr(g.shape(2)), g.int(-2, 2)), {}


def _trace(g):
    x = g.arr(g.shape(2))
    a1, a2 = g.draw(st.permutations(range(x.ndim)))[:2]
    return (x, g.int(-1, 1), a1, a2), {}


def _tile(g):
    x = g.arr(g.shape(0, 2))
    reps = g.int(1, 3) if g.bool() else tuple(g.int(1, 2) for _ in range(g.int(1, 3)))
    return (x, reps), {}


def _repeat(g):
    x = g.arr(g.shape(1, 2))
    ax = g.choice([None] + list(range(x.ndim)))
    n = x.size if ax is None else x.shape[ax]
    reps = g.int(0, 3) if g.bool() else g.rng.randint(0, 3, n)
    return (x, reps), {"axis": ax}


_PAD_MODES = ["constant", "edge", "wrap", "reflect", "symmetric", "linear_ramp", "mean", "maximum", "minimum", "median"]


def _pad(g):
    x = g.arr(g.shape(1, 2, min_side=2))
    width = tuple((g.int(0, 2), g.int(0, 2)) for _ in range(x.ndim)) if g.bool() else g.int(0, 2)
    mode = g.choice(_PAD_MODES)
    kw = {"mode": mode}
    if mode == "constant" and g.bool():
        kw["constant_values"] = 1.5
    if mode in ("reflect", "symmetric") and g.bool():
        kw["reflect_type"] = "odd"
    if mode in ("mean", "maximum", "minimum", "median") and g.bool():
        kw["stat_length"] = g.int(1, 2)
    if mode == "linear_ramp" and g.bool():
        kw["end_values"] = 0.5
    return (x, width), kw


def _sort(g):
    x = g.arr(g.shape(1))
    return (x,), {"axis": g.choice([None] + list(range(-x.ndim, x.ndim)))}


def _partition(g):
    x = g.arr(g.shape(1))
    ax = g.int(-x.ndim, x.ndim - 1)
    kth = g.int(0, x.shape[ax] - 1)
    return (x, kth), {"axis": ax}


def _take(g):
    x = g.arr(g.shape(1))
    ax = g.choice([None] + list(range(x.ndim)))
    n = x.size if ax is None else x.shape[ax]
    idx = g.rng.randint(-n, n, g.shape(0, 2))  # with repeats and negatives
    return (x, idx), {"axis": ax}


def _take_along_axis(g):
    x = g.arr(g.shape(1))
    ax = g.int(0, x.ndim - 1)
    shape = list(x.shape)
    shape[ax] = g.int(1, 4)
    return (x, g.rng.randint(0, x.shape[ax], shape), ax), {}


def _compress(g):
    x = g.arr(g.shape(1))
    ax = g.choice([None] + list(range(x.ndim)))
    n = x.size if ax is None else x.shape[ax]
    return (g.rng.rand(g.int(0, n)) < 0.6, x), {"axis": ax}


def _choose(g):
    s = g.shape(0, 2)
    k = g.int(1, 3)
    return (g.rng.randint(0, k, s), g.arr((k,) + s)), {}


def _extract(g):
    x = g.arr(g.shape(1))
    return (g.rng.rand(*x.shape) < 0.5, x), {}


def _delete(g):
    x = g.arr(g.shape(1))
    ax = g.choice([None] + list(range(x.ndim)))
    n = x.size if ax is None else x.shape[ax]
    return (x, sorted(set(g.rng.randint(0, n, g.int(0, n).__index__()).tolist()))), {"axis": ax}


def _duplicates(g):
    vals = g.arr((g.int(1, 4),))
    return vals[g.rng.randint(0, vals.size, g.shape(1, 2))]


case("reshape", np.reshape, _reshape, ALL)
case("ravel", np.ravel, lambda g: ((g.arr(g.shape()),), {"order": g.choice("CFAK")}), ALL)
case("expand_dims", np.expand_dims, lambda g: _with_axis(g, 0, extra=1), ALL)
case("squeeze", np.squeeze, _squeeze, ALL)
case("transpose", np.transpose, _transpose, ALL)
case("permute_dims", present("permute_dims"), _transpose, ALL)
case("swapaxes", np.swapaxes, _swapaxes, ALL)
case("moveaxis", np.moveaxis, _moveaxis, ALL)
case("rollaxis", np.rollaxis, _rollaxis, ALL)
case("atleast_1d", np.atleast_1d, _atleast, ALL)
case("atleast_2d", np.atleast_2d, _atleast, ALL)
case("atleast_3d", np.atleast_3d, _atleast, ALL)
case("broadcast_to", np.broadcast_to, _broadcast_to, ALL)
case("broadcast_arrays", np.broadcast_arrays, _broadcast_arrays, ALL)
case("flip", np.flip, _flip, ALL)
case("flipud", np.flipud, lambda g: ((g.arr(g.shape(1)),), {}), ALL)
case("fliplr", np.fliplr, lambda g: ((g.arr(g.shape(2)),), {}), ALL)
case("rot90", np.rot90, _rot90, ALL)
case("roll", np.roll, _roll, ALL)
case("astype", present("astype"), _astype, ALL)
case("astype_method", W.astype_method, _astype, ALL)
case("require", np.require, _require, ALL)
case("resize", np.resize, _resize, ALL)
case("fft resize (internal)", _fft_rules.resize, _fft_resize, ALL)
case("diagonal", np.diagonal, _diagonal, ALL)
case("diag", np.diag, _diag, ALL)
case("diagflat", np.diagflat, _diagflat, ALL)
case("diag_embed (make_diagonal)", W.diag_embed, _make_diagonal, ALL, fun=np.make_diagonal, diff=[0])
case("tril", np.tril, _tri, ALL)
case("triu", np.triu, _tri, ALL)
case("trace", np.trace, _trace, ALL)
case("tile", np.tile, _tile, ALL)
case("repeat", np.repeat, _repeat, ALL)
case("pad", np.pad, _pad, ALL)
case("sort", np.sort, _sort, ALL)
case("partition", np.partition, _partition, ALL)
case("take", np.take, _take, ALL)
case("take_along_axis", np.take_along_axis, _take_along_axis, ALL)
case("compress", np.compress, _compress, ALL)
case("choose", np.choose, _choose, ALL)
case("extract", np.extract, _extract, ALL)
case("delete", np.delete, _delete, ALL)
case("unique", np.unique, lambda g: ((_duplicates(g),), {}), ALL)
case(
    "unique(return_counts)",
    np.unique,
    lambda g: ((_duplicates(g),), {"return_counts": True}),
    REAL,
    post=lambda r: r[0],
)
case("unique_values", present("unique_values"), lambda g: ((_duplicates(g),), {}), ALL)
case("unique_counts", present("unique_counts"), lambda g: ((_duplicates(g),), {}), ALL, post=lambda r: r.values)
case("unique_inverse", present("unique_inverse"), lambda g: ((_duplicates(g),), {}), ALL, post=lambda r: r.values)
case("unique_all", present("unique_all"), lambda g: ((_duplicates(g),), {}), ALL, post=lambda r: r.values)


# ---- joining and splitting -------------------------------------------------------------


def _join(g, stack=False):
    s = g.shape(0 if stack else 1, 2)
    ax = g.int(-len(s) - stack, len(s) - 1 + stack)
    items = []
    for _ in range(g.int(1, 3)):
        t = list(s)
        if not stack:
            t[ax] = g.int(1, 3)
        items.append(g.arr(t, dt=g.mix()))
    return tuple(items), {"axis": ax}


def _split(g, name):
    min_dims = {"split": 1, "array_split": 1, "hsplit": 1, "vsplit": 2, "dsplit": 3}[name]
    x = g.arr(g.shape(min_dims, max(min_dims, 3)))
    ax = {"vsplit": 0, "dsplit": 2, "hsplit": 1 if x.ndim > 1 else 0}.get(name)
    kw = {}
    if ax is None:
        ax = g.int(0, x.ndim - 1)
        kw["axis"] = ax
    n = x.shape[ax]
    if g.bool() or name == "array_split":
        divisors = [d for d in range(1, n + 1) if n % d == 0] if name != "array_split" else list(range(1, n + 2))
        return (x, g.choice(divisors)), kw
    return (x, sorted(g.rng.randint(0, n + 1, g.int(0, 3)).tolist())), kw


case("concatenate_args", W.concatenate_args, _join, ALL)
case("stack_args", W.stack_args, lambda g: _join(g, stack=True), ALL)
case("array_from_args", W.array_from_args, lambda g: (tuple(g.arr(s) for s in [g.shape(0, 2)] * g.int(1, 3)), {}), ALL)
for _name in ("split", "array_split", "hsplit", "vsplit", "dsplit"):
    case(_name, getattr(np, _name), lambda g, _name=_name: _split(g, _name), ALL)


def _unstack(g):
    x = g.arr(g.shape(1))
    return (x,), {"axis": g.int(-x.ndim, x.ndim - 1)}


case("unstack", present("unstack"), _unstack, ALL)


# ---- selection -------------------------------------------------------------------------


def _where3(g):
    s = g.shape()
    shapes = [g.bshape(s) if g.bool() else s for _ in range(3)]
    return (g.rng.rand(*shapes[0]) < 0.5, g.arr(shapes[1]), g.arr(shapes[2], dt=g.mix())), {}


def _clip(g):
    s = g.shape()
    real = F4 if g.dt == F4 else F8
    lo = g.arr(g.bshape(s), dt=real) - 0.5 if g.bool() else None
    hi = g.arr(g.bshape(s), dt=real) + 0.5 if lo is None or g.bool() else None
    if lo is not None and hi is not None:
        hi = onp.maximum(hi, lo + 0.1).astype(real)  # the two bounds' joint shape
    return (g.arr(s), lo, hi), {}


def _getitem(g):
    x = g.arr(g.shape(1))
    kind = g.choice(["int", "slice", "fancy", "mask", "mixed", "newaxis"])
    if kind == "int":
        idx = tuple(g.int(-n, n - 1) for n in x.shape[: g.int(1, x.ndim)])
    elif kind == "slice":
        idx = tuple(
            slice(g.choice([None, 0, 1]), g.choice([None, -1, 3]), g.choice([None, 1, 2, -1]))
            for _ in range(g.int(1, x.ndim))
        )
    elif kind == "fancy":  # repeated indices
        idx = g.rng.randint(0, x.shape[0], g.shape(0, 2))
    elif kind == "mask":
        idx = g.rng.rand(*x.shape) < 0.5
    elif kind == "mixed":
        idx = (Ellipsis, g.rng.randint(0, x.shape[-1], (g.int(1, 4),)))
    else:
        idx = (None, slice(None), Ellipsis)
    return (x, idx), {}


case("where3", W.where3, _where3, ALL)


def _untake(g):
    (x, idx), _ = _getitem(g)
    shape = onp.shape(x[idx])
    return (g.arr(shape), idx, vspace(x)), {}


case(
    "untake (densified by sparse_add)",
    W.untake,
    _untake,
    ALL,
    diff=[0],
    fun=lambda gg, idx, vs: sparse_add(vs, None, W.untake(gg, idx, vs)),
)
case(
    "tuple_part (internal)",
    _linalg_rules._tuple_part,
    lambda g: (((g.arr(g.shape()), g.arr(g.shape())), g.int(0, 1)), {}),
    ALL,
    diff=[0],
)
case("clip", np.clip, _clip, ALL)
case("getitem", W.getitem, _getitem, ALL)


# ---- differences, constructors, interpolation, polynomials, statistics ----------------


def _diff(g, n=None):
    x = g.arr(g.shape(1))
    ax = g.int(-x.ndim, x.ndim - 1)
    kw = {"n": g.int(1, 2) if n is None else n, "axis": ax}
    if g.bool():
        s = list(x.shape)
        s[ax] = 1
        kw["prepend"] = g.arr(s) if g.bool() else 0.5
    return (x,), kw


def _gradient(g):
    x = g.arr(g.shape(1, 2, min_side=3))
    kw = {"edge_order": g.choice([1, 2])}
    if g.bool() and x.ndim == 1:
        coords = onp.cumsum(g.rarr(x.shape, "pos"))
        return (x, coords), kw
    return (x,), kw


def _ediff1d(g):
    x = g.arr(g.shape(1, 2))
    kw = {}
    if g.bool():
        kw["to_end"] = g.arr((g.int(1, 2),))
    if g.bool():
        kw["to_begin"] = g.arr(())
    return (x,), kw


def _full(g):
    shape = g.shape()
    return (shape, g.arr(g.bshape(shape))), {}


def _linspace(g):
    s1, s2 = g.bpair(0, 2)
    return (g.arr(s1), g.arr(s2)), {"num": g.int(1, 5), "endpoint": g.bool(), "axis": g.choice([0, -1])}


def _logspace(g):
    s1, s2 = g.bpair(0, 1)
    return (g.arr(s1), g.arr(s2), g.int(1, 5), g.bool(), g.arr((), "pos") + 1.0), {}


def _interp(g):
    n = g.int(2, 5)
    xp = onp.cumsum(g.rarr((n,), "pos"))
    x = g.rng.uniform(xp[0] - 1, xp[-1] + 1, g.shape(0, 2))
    x = x.astype(g.dt.type(0).real.dtype)
    return (x, xp.astype(x.dtype), g.arr((n,))), {}


def _poly(g, two=True):
    p = g.arr((g.int(1, 4),))
    if not two:
        return (p,), {}
    return (p, g.arr((g.int(1, 4),), dt=g.mix())), {}


case("diff", np.diff, _diff, ALL)
case("diff(n=0, prepend=...)", np.diff, lambda g: _diff_n0(g), (F8,))


def _diff_n0(g):
    args, kw = _diff(g, n=0)
    s = list(args[0].shape)
    s[kw["axis"]] = 1
    kw["prepend"] = g.arr(s)
    return args, kw


case("gradient", np.gradient, _gradient, ALL)
case("ediff1d", np.ediff1d, _ediff1d, ALL)
case("full", np.full, _full, ALL)
case("linspace", np.linspace, _linspace, ALL)
case("logspace", np.logspace, _logspace, ALL)
case("interp", np.interp, _interp, ALL)
case("polyval", np.polyval, lambda g: ((g.arr((g.int(1, 4),)), g.arr(g.shape(0, 2))), {}), ALL)
case("polyadd", np.polyadd, _poly, ALL)
case("polysub", np.polysub, _poly, ALL)
case("polymul", np.polymul, _poly, ALL)
case("polyder", np.polyder, lambda g: ((g.arr((g.int(1, 5),)), g.int(0, 2)), {}), ALL)
case("polyint", np.polyint, lambda g: ((g.arr((g.int(1, 4),)), 2, g.arr((g.int(1, 2),))), {}), ALL)


def _cov(g):
    m = g.arr((g.int(1, 3), g.int(3, 5)))
    kw = {"rowvar": True}
    if g.bool():
        m = m.T
        kw["rowvar"] = False
    if g.bool():
        kw["ddof"] = g.choice([0, 1])
    return (m,), kw


def _corrcoef(g):
    m = g.arr((g.int(2, 3), g.int(3, 5)))
    if g.bool():
        return (m[0], m[1]), {}
    return (m,), {}


case("cov", np.cov, _cov, ALL)
case("corrcoef", np.corrcoef, _corrcoef, ALL)
# weights passed positionally (keyword arguments are not traced)
case("bincount", np.bincount, lambda g: ((g.rng.randint(0, 4, 5), g.arr((5,))), {"minlength": g.int(0, 6)}), REAL)


# ---- NumPy 1's names (removed in NumPy 2), with the rules of what they stand for -------

case("product", present("product"), lambda g: _reduction(g, zeros=True), ALL)
case("cumproduct", present("cumproduct"), lambda g: _cumulative(g, zeros=True), ALL)
case("trapz", present("trapz"), _trapezoid, ALL)
case("msort", present("msort"), lambda g: ((g.arr(g.shape(1)),), {}), ALL)
case("fastCopyAndTranspose", present("fastCopyAndTranspose"), lambda g: ((g.arr(g.shape(2, 2)),), {}), ALL)
case("asfarray", present("asfarray"), unary, REAL)


# ---- numpy.linalg ----------------------------------------------------------------------

L = np.linalg


def _sq(kind="general"):
    return lambda g: ((g.matrix(kind=kind),), {})


def _solve(g):
    A = g.matrix()
    n = A.shape[-1]
    if g.bool() and A.ndim == 2:
        b = g.arr((n,))
    else:
        b = g.arr(A.shape[:-2] + (n, g.int(1, 3)))
    return (A, b), {}


def _rect(g):
    return g.arr(g.shape(0, 1, max_side=2) + (g.int(1, 4), g.int(1, 4)))


def _pinv(g):
    if g.bool():
        return (g.matrix(kind="herm"),), {"hermitian": True}
    return (_rect(g),), {}


def _linalg_norm(g):
    kind = g.choice(["vec", "mat", "flat"])
    if kind == "flat":
        return (g.arr(g.shape(1, 2)),), {}
    if kind == "vec":
        x = g.arr(g.shape(1, 2))
        return (x,), {
            "ord": g.choice([None, 1, 2, 3, onp.inf, -onp.inf, -1, 0.5]),
            "axis": g.int(-x.ndim, x.ndim - 1),
            "keepdims": g.bool(),
        }
    x = g.arr(g.shape(0, 1, max_side=2) + (g.int(1, 3), g.int(1, 3)))
    return (x,), {
        "ord": g.choice([None, "fro", "nuc", 1, -1, 2, -2, onp.inf, -onp.inf]),
        "axis": (-2, -1),
        "keepdims": g.bool(),
    }


def _vector_norm(g):
    x = g.arr(g.shape(1, 3))
    return (x,), {"ord": g.choice([2, 1, 3, onp.inf, -onp.inf, 0.5]), "axis": g.axis(x.ndim), "keepdims": g.bool()}


def _matrix_norm(g):
    x = g.arr(g.shape(0, 1, max_side=2) + (g.int(1, 3), g.int(1, 3)))
    return (x,), {"ord": g.choice(["fro", "nuc", 1, -1, 2, -2, onp.inf, -onp.inf]), "keepdims": g.bool()}


def _svd(g):
    A = _rect(g)
    kw = {"full_matrices": g.bool()}
    if g.bool():
        kw["compute_uv"] = False
    return (A,), kw


def _qr(g):
    return (_rect(g),), {"mode": g.choice(["reduced", "complete", "r"])}


def _eigh(g):
    return (g.matrix(kind="herm"),), {"UPLO": g.choice("LU")}


def _matrix_power(g):
    return (g.matrix(), g.int(-2, 3)), {}


def _multi_dot(g):
    dims = [g.int(1, 3) for _ in range(g.int(3, 5))]
    mats = [g.arr((dims[i], dims[i + 1])) for i in range(len(dims) - 1)]
    if g.bool():
        mats[0] = mats[0][0]
    if g.bool():
        mats[-1] = mats[-1][:, 0]
    return tuple(mats), {}


def _lstsq(g):
    m, n = g.int(1, 4), g.int(1, 4)
    A = g.arr((m, n))
    b = g.arr((m,) if g.bool() else (m, g.int(1, 2)))
    return (A, b, None), {}


def _tensorinv(g):
    A = g.matrix(batch=(), n=4).reshape(2, 2, 4)
    return (A,), {"ind": 2}


def _tensorsolve(g):
    A = g.matrix(batch=(), n=4).reshape(2, 2, 2, 2)
    return (A, g.arr((2, 2))), {}


def _cond(g):
    p = g.choice([None, 2, -2, "fro", "nuc", 1, -1, onp.inf, -onp.inf])
    return (g.matrix(), p), {}


def _herm(g):
    A = g.matrix()
    return (A, g.bool()), {}


case("linalg.det", L.det, _sq(), ALL)
case("linalg.slogdet", L.slogdet, _sq(), ALL)
case("linalg.inv", L.inv, _sq(), ALL)
case("linalg.pinv", L.pinv, _pinv, ALL)
case("linalg.solve", L.solve, _solve, ALL)
case("linalg.norm", L.norm, _linalg_norm, ALL)
case("linalg.vector_norm", present("linalg.vector_norm"), _vector_norm, ALL)
case("linalg.matrix_norm", present("linalg.matrix_norm"), _matrix_norm, ALL)
case("linalg.cond", L.cond, _cond, ALL)
case("linalg.eigh", L.eigh, _eigh, ALL)
case("linalg.eigvalsh", L.eigvalsh, _eigh, ALL)
case("linalg.eig", L.eig, _sq(), ALL)
case("linalg.eigvals", L.eigvals, _sq(), ALL)
case(
    "linalg.cholesky",
    L.cholesky,
    lambda g: ((g.matrix(kind="spd"),), {"upper": g.bool()} if has_numpy((2, 0)) else {}),  # (upper=: NumPy 2)
    ALL,
)
case("linalg.svd", L.svd, _svd, ALL)
case("linalg.svdvals", present("linalg.svdvals"), lambda g: ((_rect(g),), {}), ALL)
case("linalg.qr", L.qr, _qr, ALL)
case("linalg.matrix_power", L.matrix_power, _matrix_power, ALL)
case("linalg.multi_dot (multi_dot_args)", _linalg_rules.multi_dot_args, _multi_dot, ALL)
case(
    "linalg.lstsq (lstsq_parts)",
    _linalg_rules.lstsq_parts,
    _lstsq,
    ALL,
    post=lambda r: fg_builtins.tuple((r[0], r[1], r[3])),
    diff=[0, 1],
)
case("linalg.tensorinv", L.tensorinv, _tensorinv, ALL)
case("linalg.tensorsolve", L.tensorsolve, _tensorsolve, ALL)
case("linalg.matmul", present("linalg.matmul"), _matmul, ALL)
case("linalg.outer", present("linalg.outer"), lambda g: ((g.arr((g.int(1, 3),)), g.arr((g.int(1, 3),))), {}), ALL)
case("linalg.tensordot", present("linalg.tensordot"), _tensordot, ALL)
case("linalg.vecdot", present("linalg.vecdot"), _vecdot, ALL)
case("linalg.cross", present("linalg.cross"), lambda g: ((g.arr(g.shape(0, 1) + (3,)), g.arr((3,))), {}), ALL)
case("linalg.matrix_transpose", present("linalg.matrix_transpose"), lambda g: ((g.arr(g.shape(2, 3)),), {}), ALL)
case("linalg.diagonal", present("linalg.diagonal"), lambda g: ((g.arr(g.shape(2, 3)),), {"offset": g.int(-1, 1)}), ALL)
case("linalg.trace", present("linalg.trace"), lambda g: ((g.arr(g.shape(2, 3)),), {"offset": g.int(-1, 1)}), ALL)
case("herm_from_triangle (internal)", _linalg_rules.herm_from_triangle, _herm, ALL)
case("herm_from_triangle_adjoint (internal)", _linalg_rules.herm_from_triangle_adjoint, _herm, ALL)


# ---- numpy.fft -------------------------------------------------------------------------

FFT = np.fft
_NORMS = [None, "backward", "ortho", "forward"]


def _fft1(g, real_in=False):
    x = g.arr(g.shape(1, 2, min_side=2))  # irfft/hfft of one point would have 0 points
    if real_in and x.dtype.kind == "c":
        x = x.real.copy()
    kw = {"axis": g.int(-x.ndim, x.ndim - 1), "norm": g.choice(_NORMS)}
    if g.bool():
        kw["n"] = g.int(1, 6)
    return (x,), kw


def _fftn(g, two=False, real_in=False, inverse_real=False):
    x = g.arr(g.shape(2 if two else 1, 3, min_side=2))
    if real_in and x.dtype.kind == "c":
        x = x.real.copy()
    if two:
        axes = tuple(g.draw(st.permutations(range(x.ndim)))[:2])
    else:
        axes = tuple(g.draw(st.permutations(range(x.ndim)))[: g.int(1, x.ndim)])
    kw = {"axes": axes, "norm": g.choice(_NORMS)}
    if g.bool():
        kw["s"] = tuple(g.int(1, 5) for _ in axes)
    return (x,), kw


def _shift(g):
    x = g.arr(g.shape(1))
    return (x,), {"axes": g.axis(x.ndim)}


for _name in ("fft", "ifft", "hfft"):
    case("fft." + _name, getattr(FFT, _name), _fft1, ALL)
for _name in ("rfft", "ihfft"):
    case("fft." + _name, getattr(FFT, _name), lambda g: _fft1(g, real_in=True), REAL)
case("fft.irfft", FFT.irfft, _fft1, ALL)
for _name in ("fft2", "ifft2", "irfft2"):
    case("fft." + _name, getattr(FFT, _name), lambda g: _fftn(g, two=True), ALL)
for _name in ("fftn", "ifftn", "irfftn"):
    case("fft." + _name, getattr(FFT, _name), _fftn, ALL)
case("fft.rfft2", FFT.rfft2, lambda g: _fftn(g, two=True, real_in=True), REAL)
case("fft.rfftn", FFT.rfftn, lambda g: _fftn(g, real_in=True), REAL)
case("fft.fftshift", FFT.fftshift, _shift, ALL)
case("fft.ifftshift", FFT.ifftshift, _shift, ALL)


# ---------------------------------------------------------------------------------------
# Known failures of the identity (bugs in one of the two rules): {case name: reason}

XFAIL = {}  # none known: correlate ('same', even len(a) < len(v)) and diff(n=0, prepend=) were fixed


# ---------------------------------------------------------------------------------------
# The tests

_NONZERO = collections.Counter()


def _params():
    out = []
    for c in CASES:
        marks = []
        if c.name in XFAIL:
            marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[c.name]))
        if c.prim is None:
            marks.append(pytest.mark.skip(reason="NumPy {} has no {}".format(onp.__version__, c.name)))
        out.append(pytest.param(c, id=c.name, marks=marks))
    return out


@pytest.mark.parametrize("case", _params())
def test_adjoint_identity(case):
    @settings(
        max_examples=case.examples,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(data=st.data())
    def run(data):
        dtype = data.draw(st.sampled_from(case.dtypes), label="dtype")
        g = Gen(data, dtype)
        args, kwargs = case.build(g)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            check_adjoint(case, args, kwargs, g.rng, _NONZERO)

    run()
    assert _NONZERO[case.name] > 0, "every example of %s was trivially zero" % case.name


def test_pairing_convention():
    """The pairing Re(sum(u * t)) is the one under which make_vjp is the adjoint of
    make_jvp for complex values (holomorphic and not), and the conjugated one is not."""
    rng = onp.random.RandomState(1)
    z = rng.randn(3) + 1j * rng.randn(3)
    v = rng.randn(3) + 1j * rng.randn(3)
    u = rng.randn(3) + 1j * rng.randn(3)
    c = 0.7 - 1.3j
    for f in (lambda z: np.sin(z) * c, lambda z: np.abs(z) + 0j, lambda z: np.conj(z) * c):
        vjp, _ = make_vjp(f, z)
        _, jv = make_jvp(f, z)(v)
        jtu = vjp(u)
        assert abs(_pair(u, jv) - _pair(jtu, v)) < 1e-12
    # the conjugated pairing fails on a holomorphic map: the convention matters
    f = lambda z: z * c
    vjp, _ = make_vjp(f, z)
    _, jv = make_jvp(f, z)(v)
    conj_l = onp.real(onp.vdot(u, jv))
    conj_r = onp.real(onp.vdot(vjp(u), v))
    assert abs(conj_l - conj_r) > 1e-3


def test_table_covers_enough_primitives():
    prims = {id(c.prim) for c in CASES if c.prim is not None}
    assert len(prims) >= 150, len(prims)
    for c in CASES:
        if c.prim is None:
            continue
        assert c.prim in primitive_vjps and c.prim in primitive_jvps, c.name
