"""fastgrad.numpy beyond autograd 1.9.1: the functions autograd cannot differentiate, the
defects of autograd's rules that fastgrad must not have (SPEC section 5), dtypes kept
through every rule (SPEC section 4), and the conventions at points where a derivative
does not exist.

Every function is checked with ``fastgrad.test_util.check_grads(f, modes=["fwd", "rev"],
order=2)`` on real (and, where NumPy accepts them, complex) values; specific behaviours
are checked against explicit expectations.  The case helpers come from
test_numpy_jvps.py.
"""

import warnings

import numpy as onp
import pytest

import fastgrad
import fastgrad.numpy as fnp
from fastgrad.core import make_jvp, make_vjp, vspace

from numpy_versions import has_numpy, needs_numpy
from test_numpy_jvps import ALL_CASES, C, Case, P, R, S, compare_with_autograd, run_check_grads

pytestmark = pytest.mark.fastgrad_only


@pytest.fixture(autouse=True)
def _seeded():
    state = onp.random.get_state()
    onp.random.seed(2)
    yield
    onp.random.set_state(state)


XZ = onp.array([[1.5, 0.0, -2.0], [0.0, 0.0, 3.0], [0.5, 2.0, -1.0]])  # zeros for prod


# ---------------------------------------------------------------------------------------
# Functions autograd cannot differentiate


def _beyond_cases():
    x = R(2, 3, 4)
    # reductions and scans
    for name in (
        "cumprod",
        "ptp",
        "nansum",
        "nanmean",
        "nanmax",
        "nanmin",
        "nanprod",
        "nanvar",
        "nanstd",
        "nancumsum",
        "nancumprod",
        "median",
    ):
        fun = (lambda name: lambda np, x: getattr(np, name)(x, axis=1))(name)
        yield Case(f"{name}-axis1", fun, P(2, 3, 4) if "prod" in name else x)
        yield Case(f"{name}-all", (lambda n: lambda np, x: getattr(np, n)(x))(name), R(3, 2))
    xn = R(3, 4)
    xn[0, 1] = xn[2, 3] = onp.nan
    for name in ("nansum", "nanmean", "nanmax", "nanmin", "nanprod", "nanvar", "nanstd", "nancumsum", "nancumprod"):
        fun = (lambda name: lambda np, x: getattr(np, name)(x, axis=1))(name)
        yield Case(f"{name}-with-nan", fun, xn)
    yield Case("nanvar-ddof-keep", lambda np, x: np.nanvar(x, axis=0, ddof=1, keepdims=True), xn)
    yield Case("cumprod-zeros", lambda np, x: np.cumprod(x, axis=1), XZ)
    yield Case("cumprod-flat", lambda np, x: np.cumprod(x), XZ)
    yield Case("cumprod-complex", lambda np, x: np.cumprod(x), C(4))
    yield Case("cumprod-method", lambda np, x: x.cumprod(axis=0), R(3, 2))
    yield Case("median-keep", lambda np, x: np.median(x, axis=(0, 2), keepdims=True), x)
    yield Case("median-even", lambda np, x: np.median(x), R(6))
    yield Case("percentile", lambda np, x: np.percentile(x, [10.0, 50.0, 95.0], axis=1), R(3, 5))
    yield Case("percentile-flat", lambda np, x: np.percentile(x, 30.0), R(2, 4))
    for method in (
        "linear",
        "lower",
        "higher",
        "midpoint",
        "nearest",
        "hazen",
        "weibull",
        "inverted_cdf",
        "median_unbiased",
    ):
        fun = (lambda m: lambda np, x: np.quantile(x, [0.2, 0.7], axis=0, method=m))(method)
        yield Case(f"quantile-{method}", fun, R(5, 2))
    yield Case("quantile-keep", lambda np, x: np.quantile(x, 0.4, axis=1, keepdims=True), R(3, 4))
    yield Case("cumulative_sum", lambda np, x: np.cumulative_sum(x, axis=1), R(2, 3))
    yield Case("cumulative_sum-init", lambda np, x: np.cumulative_sum(x, axis=0, include_initial=True), R(3, 2))
    yield Case("cumulative_prod", lambda np, x: np.cumulative_prod(x, axis=1), XZ)
    yield Case("cumulative_prod-init", lambda np, x: np.cumulative_prod(x, include_initial=True), R(4))
    # selections
    yield Case("take", lambda np, x: np.take(x, [0, 2, 2], axis=1), R(2, 3))
    yield Case("take-flat", lambda np, x: np.take(x, [[5, 0], [0, 1]]), R(2, 3))
    yield Case("take-method", lambda np, x: x.take([1, 1]), R(3))
    yield Case("take_along_axis", lambda np, x: np.take_along_axis(x, onp.array([[0, 2, 2], [1, 1, 0]]), 1), R(2, 3))
    yield Case("take_along_axis-argsort", lambda np, x: np.take_along_axis(x, np.argsort(x, axis=0), 0), R(3, 2))
    yield Case("compress", lambda np, x: np.compress([True, False, True], x, axis=1), R(2, 3))
    yield Case("compress-method", lambda np, x: x.compress([False, True]), R(2))
    yield Case("choose", lambda np, x: np.choose(onp.array([[0, 1, 2], [2, 1, 0]]), x), R(3, 2, 3))
    yield Case("choose-list", lambda np, x, y: np.choose(onp.array([0, 1, 0]), [x, y]), R(3), R(2, 3), argnums=(0, 1))
    yield Case("flip", lambda np, x: np.flip(x, (0, 2)), x)
    yield Case("flip-all", lambda np, x: np.flip(x), R(2, 3))
    # elementwise
    yield Case("cbrt", lambda np, x: np.cbrt(x), S(3))
    yield Case("positive", lambda np, x: np.positive(x), C(3))
    yield Case("positive-op", lambda np, x: +x, R(3))
    yield Case("float_power", lambda np, x, y: np.float_power(x, y), P(3, 1), R(4), argnums=(0, 1))
    yield Case("float_power-complex", lambda np, x, y: np.float_power(x, y), C(3) + 2.0, R(3), argnums=(0, 1))
    yield Case("fmod", lambda np, x, y: np.fmod(x, y), S(3, 1, lo=1.1, hi=5.0), R(4, lo=1.2, hi=1.9), argnums=(0, 1))
    yield Case("copysign", lambda np, x, y: np.copysign(x, y), S(3), S(3), argnums=(0, 1))
    yield Case("ldexp", lambda np, x: np.ldexp(x, onp.array([1, -2, 0])), R(3))
    # products
    yield Case("vdot", lambda np, x, y: np.vdot(x, y), C(2, 2), C(4), argnums=(0, 1), order=3)
    yield Case("vdot-real", lambda np, x, y: np.vdot(x, y), R(3), R(3), argnums=(0, 1))
    yield Case("vecdot", lambda np, x, y: np.vecdot(x, y), C(2, 3), C(3), argnums=(0, 1))
    yield Case("vecdot-axis", lambda np, x, y: np.vecdot(x, y, axis=0), R(3, 2), R(3, 1), argnums=(0, 1))
    yield Case("matvec", lambda np, x, y: np.matvec(x, y), R(2, 3, 4), R(4), argnums=(0, 1))
    yield Case("matvec-complex", lambda np, x, y: np.matvec(x, y), C(3, 2), C(2, 2), argnums=(0, 1))
    yield Case("vecmat", lambda np, x, y: np.vecmat(x, y), C(3), C(2, 3, 4), argnums=(0, 1))
    yield Case("matrix_transpose", lambda np, x: np.matrix_transpose(x), R(2, 3, 4))
    yield Case("convolve", lambda np, x, y: np.convolve(x, y), R(5), R(3), argnums=(0, 1))
    yield Case("convolve-same", lambda np, x, y: np.convolve(x, y, "same"), R(3), R(5), argnums=(0, 1))
    yield Case("convolve-valid", lambda np, x, y: np.convolve(x, y, "valid"), C(6), C(4), argnums=(0, 1))
    yield Case("correlate", lambda np, x, y: np.correlate(x, y), R(5), R(3), argnums=(0, 1))
    yield Case("correlate-full", lambda np, x, y: np.correlate(x, y, "full"), C(4), C(3), argnums=(0, 1))
    yield Case("correlate-same", lambda np, x, y: np.correlate(x, y, mode="same"), R(3), R(4), argnums=(0, 1))
    # shapes and integrals
    yield Case("unstack", lambda np, x: np.unstack(x, axis=1)[2] * 2.0, R(2, 3))
    yield Case("trapezoid", lambda np, y: np.trapezoid(y), R(2, 5))
    yield Case("trapezoid-x", lambda np, y, x: np.trapezoid(y, x, axis=0), R(4, 2), onp.sort(R(4)), argnums=(0, 1))
    yield Case("trapezoid-x-nd", lambda np, y, x: np.trapezoid(y, x), R(2, 4), R(2, 4), argnums=(0, 1))
    yield Case("trapezoid-dx", lambda np, y, dx: np.trapezoid(y, None, dx), R(5), 0.3, argnums=(0, 1))
    yield Case("average", lambda np, x: np.average(x, axis=1), R(2, 3))
    yield Case("average-weights", lambda np, x, w: np.average(x, 1, w), R(2, 3), P(3), argnums=(0, 1))
    yield Case("average-weights-nd", lambda np, x, w: np.average(x, None, w), R(2, 3), P(2, 3), argnums=(0, 1))
    yield Case(
        "average-returned",
        lambda np, x, w: np.average(x, 0, w, True)[1] * 2.0 + np.average(x, 0, w, True)[0],
        R(3, 2),
        P(3, 2),
        argnums=(0, 1),
    )
    knots = onp.array([-1.0, 0.0, 1.5, 2.0])
    xs = onp.array([-1.7, -0.4, 0.3, 1.1, 1.9, 2.6])
    yield Case("interp", lambda np, x, fp: np.interp(x, knots, fp), xs, R(4), argnums=(0, 1))
    yield Case("interp-xp", lambda np, xp: np.interp(xs, xp, onp.array([1.0, -1.0, 2.0, 0.5])), knots)
    yield Case("interp-left-right", lambda np, x, fp: np.interp(x, knots, fp, -3.0, 4.0), xs, R(4), argnums=(0, 1))
    yield Case("interp-complex", lambda np, fp: np.interp(xs, knots, fp), C(4))
    yield Case(
        "interp-period",
        lambda np, x, fp: np.interp(x, onp.array([0.0, 1.0, 2.5]), fp, period=3.0),
        onp.array([-2.2, 0.4, 1.6, 2.8, 4.1]),
        R(3),
        argnums=(0, 1),
    )
    yield Case("interp-scalar", lambda np, x: np.interp(x, knots, onp.array([1.0, -1.0, 2.0, 0.5])), 0.7)
    yield Case("select", lambda np, x, y: np.select([x > 0, y > 0], [x, y * 2.0], 0.5), R(4), R(4), argnums=(0, 1))


# ---------------------------------------------------------------------------------------
# autograd's known defects (SPEC section 5): each of these works here


def _defect_cases():
    x = R(2, 3, 4)
    yield Case("diagonal-axes", lambda np, x: np.diagonal(x, 1, 0, 2), x)
    yield Case("diagonal-neg-offset", lambda np, x: np.diagonal(x, -1, 2, 1), x)
    yield Case("diagonal-method", lambda np, x: x.diagonal(0, 1, 2), x)
    yield Case("trace-axes", lambda np, x: np.trace(x, 1, 0, 2), x)
    for axis in (0, 1, -1, None):
        yield Case(f"sort-nd-axis{axis}", (lambda a: lambda np, x: np.sort(x, axis=a))(axis), x)
        yield Case(f"partition-nd-axis{axis}", (lambda a: lambda np, x: np.partition(x, 1, axis=a))(axis), x)
    yield Case("sort-complex", lambda np, x: np.sort(x), C(2, 4))
    yield Case("partition-kth-list", lambda np, x: np.partition(x, [0, 3], axis=0), R(5, 2))
    yield Case("rollaxis-neg", lambda np, x: np.rollaxis(x, -1, 1), x)
    yield Case("rollaxis-neg-start", lambda np, x: np.rollaxis(x, 0, -1), x)
    yield Case("linspace-num-kw", lambda np, a, b: np.linspace(a, b, num=5), R(2), R(3, 1), argnums=(0, 1))
    yield Case(
        "linspace-axis", lambda np, a, b: np.linspace(a, b, 4, endpoint=False, axis=-1), R(2), 3.0, argnums=(0, 1)
    )
    yield Case(
        "linspace-retstep",
        lambda np, a, b: np.linspace(a, b, 4, retstep=True)[1] + np.linspace(a, b, 4, retstep=True)[0][2],
        R(2),
        3.0,
        argnums=(0, 1),
    )
    yield Case("linspace-num1", lambda np, a, b: np.linspace(a, b, 1), 0.5, 2.0, argnums=(0, 1))
    for mode in ("constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "mean"):
        fun = (lambda m: lambda np, x: np.pad(x, ((2, 3), (1, 4)), mode=m))(mode)
        yield Case(f"pad-{mode}", fun, R(3, 3))
    yield Case("pad-constant-values", lambda np, x: np.pad(x, 2, constant_values=(1.5, -2.0)), R(3))
    yield Case("pad-reflect-odd", lambda np, x: np.pad(x, (4, 2), "reflect", reflect_type="odd"), R(3))
    yield Case("pad-symmetric-odd", lambda np, x: np.pad(x, ((1, 1), (2, 0)), "symmetric", reflect_type="odd"), R(2, 3))
    yield Case("pad-linear_ramp-end", lambda np, x: np.pad(x, (2, 1), "linear_ramp", end_values=(5.0, -1.0)), R(3, 2))
    yield Case("pad-mean-stat", lambda np, x: np.pad(x, 2, "mean", stat_length=2), R(4, 3))
    yield Case("pad-wrap-wide", lambda np, x: np.pad(x, (5, 4), "wrap"), R(3))
    yield Case("pad-complex", lambda np, x: np.pad(x, 1, "reflect"), C(2, 3))
    yield Case("broadcast_to-leading", lambda np, x: np.broadcast_to(x, (2, 3, 4)), R(3, 1))
    yield Case("broadcast_to-0d", lambda np, x: np.broadcast_to(x, (2, 2)), R())
    cond = R(3, 4) > 0
    yield Case("where-bcast", lambda np, x, y: np.where(cond, x, y), R(3, 1), R(1, 4), argnums=(0, 1))
    yield Case("where-bcast-scalar", lambda np, x, y: np.where(cond, x, y), R(), R(4), argnums=(0, 1))
    yield Case("prod-zeros", lambda np, x: np.prod(x, axis=1), XZ)
    yield Case("prod-zeros-all", lambda np, x: np.prod(x), onp.array([2.0, 0.0, 3.0, 0.0]))
    yield Case("prod-zeros-keep", lambda np, x: np.prod(x, axis=0, keepdims=True), XZ)
    yield Case("hypot", lambda np, x, y: np.hypot(x, y), S(3, 1), S(4), argnums=(0, 1))
    yield Case("astype", lambda np, x: np.astype(x * 2.0, onp.float64), R(3))
    yield Case("outer-2d", lambda np, x, y: np.outer(x, y), R(2, 2), R(3), argnums=(0, 1), order=3)
    yield Case("var-complex", lambda np, x: np.var(x, axis=0), C(3, 2))
    yield Case("std-complex", lambda np, x: np.std(x), C(4))
    yield Case("var-where", lambda np, x: np.var(x, axis=1, where=onp.array([True, False, True, True])), R(2, 4))
    mask = onp.array([[True, True, False, True], [False, True, True, True]])
    yield Case("std-where", lambda np, x: np.std(x, where=mask), R(2, 4))
    yield Case("mean-where", lambda np, x: np.mean(x, axis=0, where=onp.array([[True], [False], [True]])), R(3, 2))
    yield Case("sum-where", lambda np, x: np.sum(x, axis=1, where=onp.array([True, False, True])), R(2, 3))
    yield Case(
        "max-where", lambda np, x: np.max(x, axis=1, initial=-5.0, where=onp.array([True, False, True])), R(2, 3)
    )
    yield Case("prod-where", lambda np, x: np.prod(x, where=onp.array([True, False, True])), R(3))
    yield Case("prod-initial", lambda np, x: np.prod(x, axis=0, initial=2.5), XZ)
    yield Case(
        "clip-array-bounds",
        lambda np, x, lo, hi: np.clip(x, lo, hi),
        R(5),
        R(5, lo=-3, hi=-1),
        R(5, lo=1, hi=3),
        argnums=(0, 1, 2),
    )
    yield Case("einsum-broadcast-1", lambda np, x, y: np.einsum("ij,ij->i", x, y), R(3, 1), R(3, 4), argnums=(0, 1))
    yield Case("einsum-repeated-3", lambda np, x: np.einsum("iii->i", x), R(2, 2, 2))
    yield Case(
        "einsum-sublist-ellipsis",
        lambda np, x, y: np.einsum(x, [Ellipsis, 0], y, [0, 1], [1, Ellipsis]),
        R(2, 3),
        R(3, 4),
        argnums=(0, 1),
    )
    yield Case("cross-2d", lambda np, x, y: np.cross(x, y), R(4, 2), R(4, 2), argnums=(0, 1))
    yield Case("cross-mixed", lambda np, x, y: np.cross(x, y), R(4, 3), R(2), argnums=(0, 1))
    yield Case(
        "cross-axes", lambda np, x, y: np.cross(x, y, axisa=0, axisb=1, axisc=0), R(3, 2), R(2, 3), argnums=(0, 1)
    )
    yield Case("kron-3d", lambda np, x, y: np.kron(x, y), R(2, 1, 2), R(2, 3), argnums=(0, 1))
    yield Case("diff-prepend-append", lambda np, x: np.diff(x, axis=0, prepend=1.0, append=onp.ones((1, 3))), R(3, 3))
    yield Case(
        "gradient-edge2-coords",
        lambda np, x: np.gradient(x, onp.array([0.0, 0.5, 1.7, 2.0, 3.5]), axis=1, edge_order=2),
        R(2, 5),
    )
    yield Case("gradient-axes", lambda np, x: np.gradient(x, 2.0, axis=(0, 1))[0], R(3, 4))
    yield Case("tile-more-dims", lambda np, x: np.tile(x, 2), R(2, 2))
    yield Case("roll-tuple", lambda np, x: np.roll(x, (1, -2), axis=(0, 1)), R(3, 4))
    yield Case("rot90-neg", lambda np, x: np.rot90(x, -1), R(2, 3))
    yield Case("diag-nonsquare", lambda np, x: np.diag(x, 1), R(3, 4))
    yield Case("full-broadcast", lambda np, v: np.full((2, 3), v, dtype=float), R(3))
    yield Case("atleast_2d-several", lambda np, x, y: np.atleast_2d(x, y)[1] * 2.0, R(3), R(), argnums=(0, 1))
    yield Case(
        "broadcast_arrays",
        lambda np, x, y: np.broadcast_arrays(x, y)[0] * np.broadcast_arrays(x, y)[1],
        R(3),
        R(2, 1),
        argnums=(0, 1),
    )
    yield Case("dstack", lambda np, x, y: np.dstack([x, y]), R(2, 3), R(2, 3), argnums=(0, 1))
    yield Case("concatenate-none", lambda np, x, y: np.concatenate([x, y], axis=None), R(2, 2), R(3), argnums=(0, 1))
    yield Case("asarray-list", lambda np, x, y: np.asarray([x, y]), R(2), R(2), argnums=(0, 1))
    yield Case("real_if_close", lambda np, x: np.real_if_close(x * 1.0), R(3) + 0j)


def _more_cases():
    """Further differentiable NumPy functions (none of them in autograd)."""
    x = R(3, 4)
    for name in ("ascontiguousarray", "asfortranarray", "asanyarray", "asarray_chkfinite", "require"):
        yield Case(name, (lambda n: lambda np, x: getattr(np, n)(x) * 2.0)(name), x)
    yield Case("unwrap", lambda np, x: np.unwrap(x), onp.array([0.0, 3.0, 6.5, 0.2, -2.9]))
    yield Case("diagflat", lambda np, x: np.diagflat(x, -1), R(2, 2))
    yield Case("resize", lambda np, x: np.resize(x, (3, 5)), R(2, 3))
    yield Case("delete", lambda np, x: np.delete(x, [0, 2], axis=1), x)
    yield Case("delete-flat", lambda np, x: np.delete(x, 1), x)
    yield Case("extract", lambda np, x: np.extract(onp.arange(12).reshape(3, 4) % 3 == 0, x), x)
    yield Case("logspace", lambda np, a, b: np.logspace(a, b, 4), 0.2, R(2), argnums=(0, 1))
    yield Case("logspace-base", lambda np, a, base: np.logspace(a, 1.0, 3, True, base), R(2), P(2), argnums=(0, 1))
    yield Case("polyval", lambda np, p, x: np.polyval(p, x), R(4), R(3), argnums=(0, 1))
    yield Case("polyadd", lambda np, a, b: np.polyadd(a, b), R(3), R(5), argnums=(0, 1))
    yield Case("polysub", lambda np, a, b: np.polysub(a, b), R(4), R(2), argnums=(0, 1))
    yield Case("polymul", lambda np, a, b: np.polymul(a, b), R(3), R(2), argnums=(0, 1))
    yield Case("polyder", lambda np, p: np.polyder(p, 2), R(5))
    yield Case("polyint", lambda np, p: np.polyint(p, 2, [1.0, -2.0]), R(3))
    yield Case("ediff1d", lambda np, x: np.ediff1d(x, to_end=[1.0, 2.0], to_begin=-1.0), x)
    yield Case("cov", lambda np, x: np.cov(x), R(3, 5))
    yield Case("cov-y-cols", lambda np, x, y: np.cov(x, y, rowvar=False, ddof=0), R(5, 2), R(5), argnums=(0, 1))
    yield Case("cov-complex", lambda np, x: np.cov(x), C(2, 4))
    yield Case("corrcoef", lambda np, x: np.corrcoef(x), R(3, 5))
    # distinct values (with duplicates the number of unique values changes under any
    # perturbation; see test_unique_duplicates_share_evenly)
    yield Case("unique", lambda np, x: np.unique(x) * onp.arange(1.0, 7.0), R(2, 3))
    yield Case("unique-tuple", lambda np, x: np.unique(x, return_counts=True)[0] ** 2, R(4))
    yield Case("unique_values", lambda np, x: np.unique_values(x) * 1.5, R(3))
    yield Case("unique_all", lambda np, x: np.unique_all(x).values * 2.0, R(3))
    yield Case(
        "divmod", lambda np, x, y: np.divmod(x, y)[1], R(3, lo=0.2, hi=5.0), R(3, lo=1.1, hi=1.9), argnums=(0, 1)
    )
    yield Case("modf", lambda np, x: np.modf(x)[0] * 3.0, R(4))
    for mode in ("maximum", "minimum", "median", "mean"):
        fun = (lambda m: lambda np, x: np.pad(x, ((1, 2), (2, 0)), m, stat_length=2))(mode)
        yield Case(f"pad-{mode}", fun, R(3, 3))
    xn = R(3, 5)
    xn[1, 2] = xn[2, 0] = xn[2, 4] = onp.nan
    yield Case("nanmedian", lambda np, x: np.nanmedian(x, axis=1), xn)
    yield Case("nanmedian-keep", lambda np, x: np.nanmedian(x, axis=0, keepdims=True), xn)
    yield Case("nanpercentile", lambda np, x: np.nanpercentile(x, [20.0, 80.0], axis=1), xn)
    yield Case("nanquantile", lambda np, x: np.nanquantile(x, 0.3, method="nearest"), xn)
    yield Case(
        "block", lambda np, x, y: np.block([[x, y], [y * 2.0, onp.ones((2, 2))]]), R(2, 2), R(2, 2), argnums=(0, 1)
    )
    yield Case("block-1d", lambda np, x, y: np.block([x, 1.0, y]), R(2), R(3), argnums=(0, 1))
    yield Case(
        "apply_along_axis", lambda np, x: np.apply_along_axis(lambda r: np.array([np.sum(r * r), r[0]]), 1, x), R(3, 2)
    )


# the functions only newer NumPy has (a case named "f" or "f-...")
NEEDS_NUMPY = {
    "vecdot": (2, 0),
    "matrix_transpose": (2, 0),
    "trapezoid": (2, 0),
    "astype": (2, 0),
    "unique_values": (2, 0),
    "unique_all": (2, 0),
    "cumulative_sum": (2, 1),
    "cumulative_prod": (2, 1),
    "unstack": (2, 1),
    "matvec": (2, 2),
    "vecmat": (2, 2),
}


def _needing(cases):
    for c in cases:
        c.numpy = NEEDS_NUMPY.get(c.name.split("-")[0])
    return cases


MORE = _needing(list(_more_cases()))
BEYOND = _needing(list(_beyond_cases())) + MORE
DEFECTS = _needing(list(_defect_cases()))
# the real_if_close case turns complex input into a real result: its output type changes
# under complex perturbations, so it is not a case for numerical differences
NUMERIC = [c for c in BEYOND + DEFECTS if c.name != "real_if_close"]


@pytest.mark.parametrize("case", [c.param() for c in NUMERIC])
def test_check_grads(case):
    run_check_grads(case)


def test_real_if_close_gradient():
    z = onp.array([1.0 + 0j, -2.0 + 0j])
    g = fastgrad.grad(lambda z: fnp.sum(fnp.real_if_close(z) ** 2))(z)
    assert g.dtype == onp.complex128
    onp.testing.assert_allclose(g, 2 * z.real, rtol=1e-15)
    t = make_jvp(fnp.real_if_close, z)(onp.array([1.0 + 2.0j, 3.0 - 1.0j]))[1]
    assert t.dtype == onp.float64
    onp.testing.assert_allclose(t, [1.0, 3.0])


# ---------------------------------------------------------------------------------------
# The same cases at complex points, wherever NumPy accepts complex values


def _complex_variants():
    rs = onp.random.RandomState(11)
    for case in ALL_CASES + BEYOND + DEFECTS:
        if not has_numpy(case.numpy):
            continue  # (its real case is reported as skipped)
        if case.name.startswith("interp"):
            continue  # np.interp needs real x and xp (it has a complex-fp case above)
        if case.name.startswith("unique_"):
            continue  # unordered results (hashing): their order moves under perturbation
        args = list(case.args)
        changed = False
        for i in case.argnums:
            a = args[i]
            if isinstance(a, onp.ndarray) and a.dtype.kind == "f" and not onp.isnan(a).any():
                args[i] = a + 0.3j * rs.uniform(-1.0, 1.0, a.shape)
                changed = True
        if not changed:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                case.bind(onp)(*args)
        except (TypeError, ValueError):
            continue  # NumPy has no complex version of this function
        yield Case(case.name + "-complex", case.fun, *args, argnums=case.argnums, order=min(case.order, 2))


COMPLEX_VARIANTS = list(_complex_variants())


@pytest.mark.parametrize("case", [c.param() for c in COMPLEX_VARIANTS])
def test_check_grads_complex(case):
    run_check_grads(case)


# ---------------------------------------------------------------------------------------
# float32 in, float32 out (and float16, longdouble, complex64) through every rule


def _lower(a, dtype):
    if isinstance(a, onp.ndarray) and a.dtype.kind in "fc":
        if a.dtype.kind == "c":
            return (
                None if dtype == onp.float16 else a.astype(onp.complex64 if dtype == onp.float32 else onp.clongdouble)
            )
        return a.astype(dtype)
    if isinstance(a, float):
        return dtype(a)
    return a


def _result_dtype(value):
    if isinstance(value, (list, tuple)):
        return None
    return onp.result_type(value)


# functions whose NumPy value changes dtype whatever the input (float_power is float64,
# interp and percentile/quantile of float16 compute in float64, ...): there the tangent
# must follow the value, the cotangent the input
def _dtype_cases(dtype):
    for case in ALL_CASES + BEYOND + DEFECTS:
        if case.name.startswith(("interp", "real_if_close")) and dtype == onp.longdouble:
            continue  # NumPy's interp has no long double loop
        args = [_lower(a, dtype) for a in case.args]
        if any(a is None for a in args):
            continue
        marks = [needs_numpy(case.numpy)] if case.numpy else []
        if not has_numpy((2, 0)) and dtype != onp.longdouble and _has_scalars(case, args):
            marks.append(VALUE_BASED_CASTING)
        yield pytest.param(case, args, id=case.name, marks=marks)


# NumPy 1 casts by value: a float32 scalar combined with a Python float is float64 (NEP 50,
# which keeps it float32, came with NumPy 2), in the rules' arithmetic as in autograd's
VALUE_BASED_CASTING = pytest.mark.skip(reason="NumPy 1: float32 scalars with Python floats give float64")


def _has_scalars(case, args):
    if not has_numpy(case.numpy):
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = case.bind(onp)(*args)
    return any(onp.ndim(a) == 0 for a in args) or onp.ndim(result) == 0


def _check_dtypes(case, args):
    f = case.bind(fnp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in case.argnums:
            x = args[i]

            def fi(x, i=i):
                return f(*args[:i], x, *args[i + 1 :])

            vjp, ans = make_vjp(fi, x)
            out_vs = vspace(ans)
            g = vjp(out_vs.ones())
            assert onp.result_type(g) == onp.result_type(x), "VJP w.r.t. arg {}: {} for a {} input".format(
                i, onp.result_type(g), onp.result_type(x)
            )
            assert onp.shape(g) == onp.shape(x)
            _, t = make_jvp(fi, x)(vspace(x).ones())
            if _result_dtype(ans) is not None:
                assert _result_dtype(t) == _result_dtype(ans), "JVP w.r.t. arg {}: {} for a {} result".format(
                    i, _result_dtype(t), _result_dtype(ans)
                )
                assert onp.shape(t) == onp.shape(ans)
    return g


@pytest.mark.parametrize("case,args", list(_dtype_cases(onp.float32)))
def test_float32_keeps_float32(case, args):
    g32 = _check_dtypes(case, args)
    # and agrees with the float64 gradient (last argument checked)
    i = case.argnums[-1]
    f = case.bind(fnp)
    args64 = list(case.args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vjp, ans = make_vjp(lambda x: f(*args64[:i], x, *args64[i + 1 :]), args64[i])
        g64 = vjp(vspace(ans).ones())
    onp.testing.assert_allclose(onp.asarray(g32, dtype=onp.asarray(g64).dtype), g64, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(
    "case,args",
    [
        p
        for p in _dtype_cases(onp.float16)
        if p.values[0].name.endswith(("(2, 3)", "axis1")) or p.values[0] in DEFECTS[:25]
    ],
)
def test_float16_keeps_float16(case, args):
    _check_dtypes(case, args)


@pytest.mark.parametrize(
    "case,args",
    [
        p
        for p in _dtype_cases(onp.longdouble)
        if p.values[0].name.endswith(("(3,)", "complex")) or p.values[0] in BEYOND[:40]
    ],
)
def test_longdouble_keeps_longdouble(case, args):
    _check_dtypes(case, args)


# ---------------------------------------------------------------------------------------
# Conventions where the derivative does not exist, and exact values


def _grad_and_jvp(f, x, v=None):
    g = fastgrad.grad(lambda x: fnp.sum(f(x)))(x)
    v = onp.ones_like(x) if v is None else v
    return g, make_jvp(f, x)(v)[1]


@pytest.mark.parametrize("name", ["max", "amax", "nanmax", "min", "amin", "nanmin"])
def test_reduction_ties_split_evenly(name):
    x = onp.array([[1.0, 3.0, 3.0, -2.0], [2.0, 2.0, 2.0, 2.0]])
    if "min" in name:
        x = -x
    f = lambda x: getattr(fnp, name)(x, axis=1)
    g, t = _grad_and_jvp(f, x, onp.array([[0.0, 1.0, 3.0, 5.0], [4.0, 0.0, 0.0, 0.0]]))
    onp.testing.assert_allclose(g, [[0, 0.5, 0.5, 0], [0.25] * 4])
    onp.testing.assert_allclose(t, [2.0, 1.0])  # the mean of the tied entries' tangents


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_binary_ties_split_evenly(name):
    x, y = onp.array([1.0, 2.0, 3.0]), onp.array([1.0, 5.0, 0.0])
    f = getattr(fnp, name)
    gx = fastgrad.grad(lambda x: fnp.sum(f(x, y)))(x)
    gy = fastgrad.grad(lambda y: fnp.sum(f(x, y)))(y)
    first = [0.5, 0.0, 1.0] if "max" in name else [0.5, 1.0, 0.0]
    onp.testing.assert_allclose(gx, first)
    onp.testing.assert_allclose(gy, 1.0 - onp.array(first))
    t = make_jvp(lambda x: f(x, y), x)(onp.array([2.0, 2.0, 2.0]))[1]
    onp.testing.assert_allclose(t, 2.0 * onp.array(first))


def test_ptp_ties():
    g, t = _grad_and_jvp(fnp.ptp, onp.array([1.0, 4.0, 1.0, 4.0, 2.0]), onp.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    onp.testing.assert_allclose(g, [-0.5, 0.5, -0.5, 0.5, 0.0])
    onp.testing.assert_allclose(t, 3.0 - 2.0)


def test_median_ties_split_evenly():
    x = onp.array([3.0, 1.0, 2.0, 2.0, 5.0])
    g, _ = _grad_and_jvp(fnp.median, x)
    onp.testing.assert_allclose(g, [0, 0, 0.5, 0.5, 0])
    g, _ = _grad_and_jvp(fnp.median, onp.array([4.0, 1.0, 3.0, 2.0]))
    onp.testing.assert_allclose(g, [0, 0, 0.5, 0.5])


@pytest.mark.parametrize(
    "f,x",
    [
        (fnp.abs, 0.0),
        (fnp.std, onp.full(3, 1.5)),
        (fnp.nanstd, onp.full(3, -2.0)),
        (lambda x: fnp.hypot(x, 0.0), 0.0),
        (fnp.angle, 0j),
        (lambda z: fnp.abs(z), 0j),
    ],
    ids=["abs", "std", "nanstd", "hypot", "angle", "abs-complex"],
)
def test_norm_like_at_zero_has_zero_subgradient(f, x):
    g = fastgrad.grad(lambda x: fnp.sum(f(x)))(x)
    assert onp.all(g == 0)
    _, t = make_jvp(f, x)(vspace(x).ones())
    assert onp.all(t == 0)


def test_prod_with_zeros_exact_to_second_order():
    x = onp.array([2.0, 0.0, 3.0, 0.0])
    g = fastgrad.grad(fnp.prod)(x)
    onp.testing.assert_array_equal(g, [0.0, 0.0, 0.0, 0.0])
    H = fastgrad.hessian(fnp.prod)(x)
    # H_ij = product of the entries other than i and j
    expected = onp.zeros((4, 4))
    expected[1, 3] = expected[3, 1] = 6.0
    onp.testing.assert_array_equal(H, expected)
    H1 = fastgrad.hessian(fnp.prod)(onp.array([2.0, 0.0, 3.0]))
    onp.testing.assert_allclose(H1, [[0, 3, 0], [3, 0, 2], [0, 2, 0]])


def test_cumprod_with_zeros_exact():
    x = onp.array([2.0, 0.0, 3.0, 4.0])
    J = fastgrad.jacobian(fnp.cumprod)(x)
    expected = onp.array([[1, 0, 0, 0], [0, 2, 0, 0], [0, 6, 0, 0], [0, 24, 0, 0]], float)
    onp.testing.assert_array_equal(J, expected)
    onp.testing.assert_array_equal(make_jvp(fnp.cumprod, x)(onp.ones(4))[1], expected.sum(1))


def test_clip_on_a_bound_the_bound_gets_the_gradient():
    x = onp.array([0.3, 0.5, 0.7, 1.1, 0.6])
    lo, hi = onp.full(5, 0.5), onp.full(5, 0.7)
    f = lambda x, lo, hi: fnp.sum(fnp.clip(x, lo, hi) * onp.arange(1.0, 6.0))
    gx, glo, ghi = fastgrad.grad(f, (0, 1, 2))(x, lo, hi)
    onp.testing.assert_array_equal(gx, [0, 0, 0, 0, 5])  # x on a bound: none, as autograd
    onp.testing.assert_array_equal(glo, [1, 2, 0, 0, 0])
    onp.testing.assert_array_equal(ghi, [0, 0, 3, 4, 0])


def test_interp_slope_at_a_knot_is_the_right_segment():
    xp, fp = onp.array([0.0, 1.0, 3.0]), onp.array([0.0, 2.0, 3.0])
    g = fastgrad.elementwise_grad(lambda x: fnp.interp(x, xp, fp))(onp.array([0.0, 1.0, 3.0, -1.0, 4.0]))
    onp.testing.assert_allclose(g, [2.0, 0.5, 0.5, 0.0, 0.0])


def test_power_exponent_derivative_is_zero_for_nonpositive_base():
    g = fastgrad.grad(lambda y: fnp.sum(fnp.power(onp.array([-2.0, 0.0, 2.0]), y)))(onp.array([2.0, 1.5, 1.0]))
    onp.testing.assert_allclose(g, [0.0, 0.0, 2.0 * onp.log(2.0)])


def test_sort_and_partition_gradients_follow_the_values():
    x = onp.array([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]])
    w = onp.array([[1.0, 10.0, 100.0], [1.0, 10.0, 100.0]])
    g = fastgrad.grad(lambda x: fnp.sum(fnp.sort(x, axis=1) * w))(x)
    onp.testing.assert_array_equal(g, [[100, 1, 10], [10, 1, 100]])
    g = fastgrad.grad(lambda x: fnp.sum(fnp.partition(x, 0, axis=0)[0]))(x)
    onp.testing.assert_array_equal(g, [[0, 0, 1], [1, 1, 0]])


def test_complex_conventions():
    # gradient of a real function of complex z is df/dx - i df/dy; holomorphic_grad is f'(z)
    z = onp.array([1.0 + 2.0j, -0.5 + 0.3j])
    onp.testing.assert_allclose(fastgrad.grad(lambda z: fnp.sum(fnp.abs(z) ** 2))(z), 2 * onp.conj(z))
    onp.testing.assert_allclose(fastgrad.grad(lambda z: fnp.sum(fnp.angle(z)))(z), -1j / z)
    onp.testing.assert_allclose(fastgrad.grad(lambda z: fnp.var(z))(z), onp.conj(z - z.mean()))
    w = 0.3 - 0.8j
    onp.testing.assert_allclose(
        fastgrad.holomorphic_grad(fnp.arccosh)(w), 1 / (onp.sqrt(w - 1) * onp.sqrt(w + 1)), rtol=1e-14
    )
    onp.testing.assert_allclose(fastgrad.holomorphic_grad(lambda z: fnp.cumprod(z)[-1])(z[:1] * 0 + w), [1.0])


def test_var_std_complex_match_real_formulation():
    z = C(5)
    f = lambda z: fnp.std(z) + fnp.var(z, ddof=1)
    g = fastgrad.grad(f)(z)

    def f_real(x, y):
        return f(x + 1j * y)

    gx, gy = fastgrad.grad(f_real, (0, 1))(z.real, z.imag)
    onp.testing.assert_allclose(g, gx - 1j * gy, rtol=1e-12)


def test_autograd_agrees_where_it_can_on_beyond_functions():
    # where autograd happens to work (a 1-d sort, constant pad, ...) the values agree;
    # the full comparisons are in test_numpy_jvps.py
    for case in (
        Case("sort-1d", lambda np, x: np.sort(x), R(5)),
        Case("pad-constant", lambda np, x: np.pad(x, 1, "constant"), R(3)),
        Case("diagonal", lambda np, x: np.diagonal(x, 0, -1, -2), R(2, 3, 3)),
        Case("prod-nonzero", lambda np, x: np.prod(x, axis=0), P(3, 2)),
        Case("linspace-positional", lambda np, a, b: np.linspace(a, b, 4), 0.5, 2.0, argnums=(0, 1), ref_jvp=False),
    ):
        compare_with_autograd(case)


def test_known_defects_of_autograd_are_defects_there():
    """The defects fastgrad fixes really are defects of the reference (guards the
    fastgrad-only cases above against testing nothing)."""
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    failures = 0
    for f, x in (
        (lambda x: anp.sum(anp.sort(x, axis=0)), R(3, 2)),
        (lambda x: anp.sum(anp.pad(x, 1, mode="edge")), R(3)),
        (lambda x: anp.sum(anp.rollaxis(x, -1, 1)), R(2, 3, 4)),
        (lambda x: anp.sum(anp.broadcast_to(x, (2, 3))), R(3)),
        (lambda x: anp.sum(anp.cumprod(x)), R(3)),
    ):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                autograd.grad(f)(x)
        except Exception:
            failures += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        prod_g = autograd.grad(anp.prod)(onp.array([2.0, 0.0, 3.0]))
    assert failures == 5 and onp.isnan(prod_g).any()


def test_unique_duplicates_share_evenly():
    x = onp.array([2.0, 1.0, 2.0, 0.5, 2.0])
    g = fastgrad.grad(lambda x: fnp.sum(fnp.unique(x) * onp.array([1.0, 10.0, 100.0])))(x)
    onp.testing.assert_allclose(g, [100 / 3, 10, 100 / 3, 1, 100 / 3])
    t = make_jvp(lambda x: fnp.unique(x), x)(onp.array([3.0, 1.0, 0.0, 2.0, 6.0]))[1]
    onp.testing.assert_allclose(t, [2.0, 1.0, 3.0])


@needs_numpy((2, 0))
def test_unique_values_duplicates_share_evenly():
    x = onp.array([2.0, 1.0, 2.0, 0.5, 2.0])
    t = make_jvp(lambda x: fnp.unique_counts(x).values, x)(onp.array([3.0, 1.0, 0.0, 2.0, 6.0]))[1]
    onp.testing.assert_allclose(t, [2.0, 1.0, 3.0])
