"""The downstream workloads: fits of libraries built on autograd, as their users run them.

Each workload is a ``setup()`` that imports its library (so call it only after the autodiff
binding is decided: see worker.py) and returns ``(fit, summary)``: ``fit()`` runs one whole fit
from scratch (a new fitter or optimizer each time), ``summary(result)`` gives the fitted values
to compare between implementations as a dict of float arrays.  The data are the libraries'
bundled datasets or fixed-seed random problems of the sizes their examples use.
"""

import numpy as np

# Agreement between autograd and fastgrad, per summary entry: |a - b| <= tol * max(1, |a|),
# elementwise.  Derivatives at a fixed point must agree to round-off (1e-10, as in PERF.md).
# A fit's result is only determined to within its optimizer's stopping tolerance (lifelines:
# ~1e-7 on the step or the gradient; pymanopt: 1e-6 on the gradient norm), and gradients that
# differ in the last bit make the iterates drift apart until the stop, so fitted values (the
# parameters, log-likelihoods, standard errors, final costs) get 1e-6; a final point of a
# manifold optimizer (flat directions near the optimum) gets 1e-4; iteration counts are shown.
TOLERANCES = {"grad": 1e-10, "hvp": 1e-10, "point": 1e-4, "projector": 1e-4, "matrix": 1e-4}
TOL = 1e-6  # everything else


def tolerance(key):
    return TOLERANCES.get(key.split("_")[0], TOL)


class Workload:
    def __init__(self, name, label, library, setup, uses_gradient=True, note=""):
        self.name, self.label, self.library, self.setup = name, label, library, setup
        self.uses_gradient, self.note = uses_gradient, note


# --------------------------------------------------------------------------------------- lifelines


def _lifelines_summary(fitter):
    out = {
        "params": np.asarray(fitter.params_, dtype=float).ravel(),
        "log_likelihood": np.atleast_1d(float(fitter.log_likelihood_)),
    }
    se = getattr(fitter, "standard_errors_", None)
    if se is not None:
        out["standard_errors"] = np.asarray(se, dtype=float).ravel()
    return out


def _rossi_regression(make_fitter):
    def setup():
        from lifelines.datasets import load_rossi

        rossi = load_rossi()

        def fit():
            return make_fitter().fit(rossi, duration_col="week", event_col="arrest")

        return fit, _lifelines_summary

    return setup


def _waltons_univariate(make_fitter):
    def setup():
        from lifelines.datasets import load_waltons

        waltons = load_waltons()
        T, E = waltons["T"], waltons["E"]

        def fit():
            return make_fitter().fit(T, E)

        return fit, _lifelines_summary

    return setup


def _cox(**kwargs):
    from lifelines import CoxPHFitter

    return CoxPHFitter(**kwargs)


def _by_name(cls_name, **kwargs):
    def make():
        import lifelines

        return getattr(lifelines, cls_name)(**kwargs)

    return make


# --------------------------------------------------------------------------------- autograd-gamma

N_GAMMA_POINTS = 2000


def _autograd_gamma_setup():
    from autograd import elementwise_grad

    import autograd_gamma as ag

    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 5.0, N_GAMMA_POINTS)
    b = rng.uniform(0.5, 5.0, N_GAMMA_POINTS)
    x = rng.uniform(0.05, 6.0, N_GAMMA_POINTS)
    u = rng.uniform(0.02, 0.98, N_GAMMA_POINTS)  # betainc's x lies in (0, 1)
    cases = [
        ("gammainc_da", elementwise_grad(ag.gammainc, 0), (a, x)),
        ("gammainc_dx", elementwise_grad(ag.gammainc, 1), (a, x)),
        ("gammaincc_da", elementwise_grad(ag.gammaincc, 0), (a, x)),
        ("gammaincc_dx", elementwise_grad(ag.gammaincc, 1), (a, x)),
        ("betainc_da", elementwise_grad(ag.betainc, 0), (a, b, u)),
        ("betainc_db", elementwise_grad(ag.betainc, 1), (a, b, u)),
        ("betainc_dx", elementwise_grad(ag.betainc, 2), (a, b, u)),
    ]

    def fit():
        return {"grad_" + name: np.asarray(g(*args)) for name, g, args in cases}

    return fit, lambda result: result


# ---------------------------------------------------------------------------------------- pymanopt


def _pymanopt_summary(manifold_kind, problem, x0, direction=None):
    """The fit's final cost and point, plus the Euclidean gradient (and for a second-order
    method a Hessian-vector product) at the fixed starting point: those are the autodiff's own
    output, compared to round-off."""

    def summary(result):
        out = {"cost": np.atleast_1d(float(result.cost)), "iterations": np.atleast_1d(float(result.iterations))}
        grads = problem.euclidean_gradient(x0)
        for i, g in enumerate(grads if isinstance(grads, (list, tuple)) else [grads]):
            out[f"grad_at_start_{i}"] = np.asarray(g).ravel()
        if direction is not None:
            out["hvp_at_start"] = np.asarray(problem.euclidean_hessian(x0, direction)).ravel()
        point = result.point
        if manifold_kind == "grassmann":  # a subspace: compare its projector, not the basis
            out["projector"] = (point @ point.T).ravel()
        elif manifold_kind == "fixed_rank":
            u, s, vt = point
            out["matrix"] = ((u * s) @ vt).ravel()
        else:
            out["point"] = np.asarray(point).ravel()
        return out

    return summary


def _grassmann_trust_regions():
    """Dominant invariant subspace of a symmetric 128 x 128 matrix, p = 3 (pymanopt's own
    example problem), second-order trust regions with autograd's Hessian-vector products."""
    import autograd.numpy as anp
    import pymanopt

    n, p = 128, 3
    rng = np.random.default_rng(1)
    m = rng.standard_normal((n, n))
    A = 0.5 * (m + m.T)
    manifold = pymanopt.manifolds.Grassmann(n, p)

    @pymanopt.function.autograd(manifold)
    def cost(X):
        return -anp.trace(X.T @ A @ X)

    problem = pymanopt.Problem(manifold, cost)
    x0 = np.linalg.qr(rng.standard_normal((n, p)))[0]
    direction = manifold.projection(x0, rng.standard_normal((n, p)))  # a fixed tangent vector

    def fit():
        optimizer = pymanopt.optimizers.TrustRegions(verbosity=0)
        return optimizer.run(problem, initial_point=x0.copy())

    return fit, _pymanopt_summary("grassmann", problem, x0, direction)


def _stiefel_steepest_descent():
    """PCA as optimisation: the 3-dimensional principal subspace of 500 samples in 10
    dimensions, minimising the reconstruction error over the Stiefel manifold St(10, 3)."""
    import autograd.numpy as anp
    import pymanopt

    rng = np.random.default_rng(2)
    samples, dim, k = 500, 10, 3
    scales = np.linspace(3.0, 0.5, dim)
    data = rng.standard_normal((samples, dim)) * scales
    data -= data.mean(axis=0)
    manifold = pymanopt.manifolds.Stiefel(dim, k)

    @pymanopt.function.autograd(manifold)
    def cost(w):
        return anp.sum((data - data @ w @ w.T) ** 2) / samples

    problem = pymanopt.Problem(manifold, cost)
    x0 = np.linalg.qr(rng.standard_normal((dim, k)))[0]

    def fit():
        optimizer = pymanopt.optimizers.SteepestDescent(verbosity=0, max_iterations=200)
        return optimizer.run(problem, initial_point=x0.copy())

    def summary(result):
        out = _pymanopt_summary("stiefel", problem, x0)(result)
        w = result.point
        out["point"] = (w @ w.T).ravel()  # the subspace; its basis is unique only up to rotation
        return out

    return fit, summary


def _fixed_rank_conjugate_gradient():
    """Best rank-5 approximation of a 100 x 60 matrix (pymanopt's low-rank example problem):
    conjugate gradient on the embedded fixed-rank manifold, the point a (u, s, vt) triple."""
    import autograd.numpy as anp
    import pymanopt

    m, n, k = 100, 60, 5
    rng = np.random.default_rng(3)
    target = rng.standard_normal((m, n))
    manifold = pymanopt.manifolds.FixedRankEmbedded(m, n, k)

    @pymanopt.function.autograd(manifold)
    def cost(u, s, vt):
        return anp.linalg.norm(u @ anp.diag(s) @ vt - target) ** 2

    problem = pymanopt.Problem(manifold, cost)
    u0, s0, vt0 = np.linalg.svd(rng.standard_normal((m, n)), full_matrices=False)
    x0 = (u0[:, :k], s0[:k], vt0[:k])

    def fit():
        optimizer = pymanopt.optimizers.ConjugateGradient(verbosity=0, max_iterations=300)
        return optimizer.run(problem, initial_point=tuple(a.copy() for a in x0))

    return fit, _pymanopt_summary("fixed_rank", problem, x0)


# ------------------------------------------------------------------------------------ the table

_LIFELINES = "lifelines"
WORKLOADS = [
    Workload(
        "coxph-breslow",
        "lifelines CoxPHFitter (Breslow), rossi: control, no gradient taken",
        _LIFELINES,
        _rossi_regression(lambda: _cox()),
        uses_gradient=False,
        note="Newton-Raphson written in NumPy; shows the noise and what importing fastgrad costs",
    ),
    Workload(
        "coxph-elastic-net",
        "lifelines CoxPHFitter, elastic-net penalty (penalizer=0.1, l1_ratio=0.5), rossi",
        _LIFELINES,
        _rossi_regression(lambda: _cox(penalizer=0.1, l1_ratio=0.5)),
    ),
    Workload(
        "coxph-spline",
        "lifelines CoxPHFitter, spline baseline (4 knots), rossi",
        _LIFELINES,
        _rossi_regression(lambda: _cox(baseline_estimation_method="spline", n_baseline_knots=4)),
    ),
    Workload(
        "weibull-aft", "lifelines WeibullAFTFitter, rossi", _LIFELINES, _rossi_regression(_by_name("WeibullAFTFitter"))
    ),
    Workload(
        "lognormal-aft",
        "lifelines LogNormalAFTFitter, rossi",
        _LIFELINES,
        _rossi_regression(_by_name("LogNormalAFTFitter")),
    ),
    Workload("weibull", "lifelines WeibullFitter, waltons", _LIFELINES, _waltons_univariate(_by_name("WeibullFitter"))),
    Workload(
        "generalized-gamma",
        "lifelines GeneralizedGammaFitter, waltons",
        _LIFELINES,
        _waltons_univariate(_by_name("GeneralizedGammaFitter")),
    ),
    Workload(
        "piecewise-exponential",
        "lifelines PiecewiseExponentialFitter (breakpoints 40, 60), waltons",
        _LIFELINES,
        _waltons_univariate(_by_name("PiecewiseExponentialFitter", breakpoints=[40, 60])),
    ),
    Workload(
        "loglogistic",
        "lifelines LogLogisticFitter, waltons",
        _LIFELINES,
        _waltons_univariate(_by_name("LogLogisticFitter")),
    ),
    Workload(
        "piecewise-exponential-regression",
        "lifelines PiecewiseExponentialRegressionFitter (breakpoints 15, 30, 45), rossi",
        _LIFELINES,
        _rossi_regression(_by_name("PiecewiseExponentialRegressionFitter", breakpoints=[15, 30, 45])),
    ),
    Workload(
        "autograd-gamma",
        f"autograd-gamma: elementwise_grad of gammainc, gammaincc (w.r.t. a, x) and betainc (w.r.t. a, b, x), {N_GAMMA_POINTS:,} points",
        "autograd-gamma",
        _autograd_gamma_setup,
    ),
    Workload(
        "pymanopt-grassmann-tr",
        "pymanopt TrustRegions on Grassmann(128, 3): dominant invariant subspace",
        "pymanopt",
        _grassmann_trust_regions,
    ),
    Workload(
        "pymanopt-stiefel-sd",
        "pymanopt SteepestDescent on Stiefel(10, 3): PCA of 500 x 10, 200 iterations at most",
        "pymanopt",
        _stiefel_steepest_descent,
    ),
    Workload(
        "pymanopt-fixedrank-cg",
        "pymanopt ConjugateGradient on FixedRankEmbedded(100, 60, 5): low-rank approximation, 300 iterations at most",
        "pymanopt",
        _fixed_rank_conjugate_gradient,
    ),
]
BY_NAME = {w.name: w for w in WORKLOADS}
