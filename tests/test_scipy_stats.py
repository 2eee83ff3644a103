"""fastgrad.scipy.stats: values equal SciPy's, every rule checked against central differences
(reverse mode to second order, forward mode as far as fastgrad.numpy's forward rules go),
all arguments passed by keyword too.
"""

import numpy as onp
import pytest

pytest.importorskip("scipy")
import scipy.stats as sst

import gradcheck as gc

pytestmark = pytest.mark.fastgrad_only

import fastgrad  # noqa: E402
import fastgrad.numpy as fnp  # noqa: E402
from fastgrad.scipy import stats  # noqa: E402
from fastgrad.scipy.stats import dirichlet, multivariate_normal as mvn, poisson  # noqa: E402


check = gc.check_both_modes  # reverse and forward mode, to second order


# name, shape parameters, x (inside the support), loc, scale, whether the cdf-like methods
# are differentiable w.r.t. the shape parameters
FAMILIES = [
    ("norm", [], onp.array([-1.2, 0.1, 2.3]), 0.3, 1.7, True),
    ("t", [3.5], onp.array([-1.2, 0.1, 2.3]), 0.3, 1.7, False),
    ("gamma", [2.3], onp.array([0.5, 1.7, 4.0]), 0.1, 1.5, False),
    ("beta", [2.2, 3.1], onp.array([0.1, 0.5, 0.9]), -0.1, 1.3, False),
    ("chi2", [3.3], onp.array([0.5, 1.7, 4.0]), 0.1, 1.5, False),
    ("expon", [], onp.array([0.5, 1.7, 4.0]), 0.1, 1.5, True),
    ("laplace", [], onp.array([-1.2, 0.1, 2.3]), 0.3, 1.7, True),
    ("logistic", [], onp.array([-1.2, 0.1, 2.3]), 0.3, 1.7, True),
    ("cauchy", [], onp.array([-1.2, 0.1, 2.3]), 0.3, 1.7, True),
    ("lognorm", [0.7], onp.array([0.5, 1.7, 4.0]), 0.1, 1.5, True),
    ("uniform", [], onp.array([-0.3, 0.4, 1.2]), -0.5, 2.0, True),
]
METHODS = ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"]
CASES = [(fam, m) for fam in FAMILIES for m in METHODS]


def _keyword_call(mod, method, names):
    f = getattr(mod, method)

    def call(x, *params):
        kwargs = dict(zip(names, params))
        return f(x, **kwargs)

    call.__name__ = "{}.{}".format(mod.__name__.rsplit(".", 1)[-1], method)
    return call


def _shape_names(name):
    return {"t": ["df"], "gamma": ["a"], "beta": ["a", "b"], "chi2": ["df"], "lognorm": ["s"]}.get(name, [])


@pytest.mark.parametrize("family,method", CASES, ids=["{}.{}".format(c[0][0], c[1]) for c in CASES])
def test_location_scale_family(family, method):
    name, shapes, x, loc, scale, cdf_shapes = family
    mod = getattr(stats, name)
    dist = getattr(sst, name)
    expected = getattr(dist, method)(x, *shapes, loc=loc, scale=scale)
    onp.testing.assert_allclose(getattr(mod, method)(x, *shapes, loc=loc, scale=scale), expected, rtol=1e-13)
    names = _shape_names(name) + ["loc", "scale"]
    f = _keyword_call(mod, method, names)
    args = (x, *shapes, loc, scale)
    k = len(shapes)
    argnums = [0, k + 1, k + 2]
    if method in ("pdf", "logpdf") or cdf_shapes:
        argnums += list(range(1, k + 1))
    check(f, *args, argnums=sorted(argnums))


@pytest.mark.parametrize("name,method", [("t", "cdf"), ("gamma", "logcdf"), ("beta", "sf"), ("chi2", "cdf")])
def test_shape_derivative_of_cdf_not_available(name, method):
    mod = getattr(stats, name)
    fam = [f for f in FAMILIES if f[0] == name][0]
    args = (fam[2][1], *fam[1])
    with pytest.raises(NotImplementedError):
        fastgrad.grad(getattr(mod, method), 1)(*args)


def test_broadcast_parameters():
    x = 0.4
    loc = onp.array([0.0, 0.5, -1.0])
    scale = onp.array([[1.0], [2.0]])
    check(lambda x, loc, scale: stats.norm.logpdf(x, loc=loc, scale=scale), x, loc, scale)
    check(
        lambda x, df, scale: stats.t.pdf(x, df, scale=scale),
        onp.array([0.3, -0.2, 1.0]),
        onp.array([[2.0], [5.0]]),
        1.3,
    )


def test_positional_and_keyword_agree():
    g1 = fastgrad.grad(stats.norm.cdf, 2)(0.3, 0.1, 1.4)
    g2 = fastgrad.grad(lambda s: stats.norm.cdf(0.3, scale=s, loc=0.1))(1.4)
    assert g1 == g2
    with pytest.raises(TypeError):
        stats.norm.pdf(0.3, lox=1.0)
    with pytest.raises(TypeError):
        stats.norm.pdf(0.3, 0.0, loc=1.0)
    with pytest.raises(TypeError):
        stats.t.pdf(0.3)


def test_pdf_gradient_outside_support_is_zero():
    g = fastgrad.grad(lambda a: fnp.sum(stats.gamma.pdf(onp.array([-1.0, 2.0]), a)))(2.0)
    assert onp.isfinite(g)
    gx = fastgrad.elementwise_grad(lambda x: stats.gamma.pdf(x, 2.0))(onp.array([-1.0, 2.0]))
    assert gx[0] == 0.0 and onp.isfinite(gx[1])


# ---- poisson ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["pmf", "logpmf", "cdf", "logcdf", "sf", "logsf"])
def test_poisson(method):
    k = onp.array([0.0, 1.0, 3.0, 6.0])
    mu = 2.5
    f = getattr(poisson, method)
    onp.testing.assert_allclose(f(k, mu), getattr(sst.poisson, method)(k, mu), rtol=1e-13)
    onp.testing.assert_allclose(f(k, mu=mu, loc=1), getattr(sst.poisson, method)(k, mu, loc=1), rtol=1e-13)
    check(lambda mu: f(k, mu=mu), mu)
    check(lambda mu: f(k + 1, mu, loc=1), onp.array([1.5, 2.5, 0.7, 4.0]))
    with pytest.raises(NotImplementedError):
        fastgrad.grad(f, 0)(2.0, mu)


# ---- multivariate normal ---------------------------------------------------------------
R = onp.random.RandomState(1)
D = 3
A = R.randn(D, D)
COV = A @ A.T + D * onp.eye(D)
MEAN = R.randn(D)
X1 = R.randn(D)
X2 = R.randn(5, D)


def _sym(P):
    # cov as a function of a free matrix: every convention for the gradient of a
    # symmetric argument agrees on it
    return 0.5 * (P + P.T) + 0.0


@pytest.mark.parametrize("method", ["logpdf", "pdf"])
@pytest.mark.parametrize("x", [X1, X2], ids=["point", "batch"])
def test_multivariate_normal(method, x):
    f = getattr(mvn, method)
    onp.testing.assert_allclose(f(x, MEAN, COV), getattr(sst.multivariate_normal, method)(x, MEAN, COV), rtol=1e-12)
    check(lambda x, mean, P: f(x, mean=mean, cov=_sym(P)), x, MEAN, COV)


def test_multivariate_normal_cov_gradient_is_symmetric_full_matrix():
    g = fastgrad.grad(lambda c: mvn.logpdf(X1, MEAN, c))(COV)
    Ci = onp.linalg.inv(COV)
    r = X1 - MEAN
    expected = -0.5 * (Ci - onp.outer(Ci @ r, Ci @ r))
    onp.testing.assert_allclose(g, expected, rtol=1e-12)


def test_multivariate_normal_scalar_and_diagonal_cov():
    x = onp.array([0.3, -0.4])
    check(lambda x, c: mvn.logpdf(x, onp.zeros(2), c), x, 1.7)
    check(lambda x, c: mvn.logpdf(x, onp.zeros(2), c), x, onp.array([1.7, 0.6]))
    assert abs(mvn.logpdf(x, onp.zeros(2), 1.7) - sst.multivariate_normal.logpdf(x, onp.zeros(2), 1.7)) < 1e-13
    # one-dimensional distribution: a 1-d x is a list of points
    xs = onp.array([0.1, 0.5, -1.0])
    check(lambda xs, m: mvn.logpdf(xs, m, 2.0), xs, onp.array([0.2]))


def test_multivariate_normal_entropy():
    assert abs(mvn.entropy(MEAN, COV) - sst.multivariate_normal.entropy(MEAN, COV)) < 1e-12
    check(lambda P: mvn.entropy(MEAN, _sym(P)), COV)
    check(lambda P: mvn.entropy(cov=_sym(P)), COV)
    g = fastgrad.grad(lambda m: mvn.entropy(m, COV) * 1.0)(MEAN)
    assert g.shape == MEAN.shape and onp.all(g == 0)


# ---- dirichlet -------------------------------------------------------------------------
ALPHA = onp.array([1.5, 2.0, 3.2])


@pytest.mark.parametrize("method", ["logpdf", "pdf"])
def test_dirichlet(method):
    f = getattr(dirichlet, method)
    x = onp.array([0.2, 0.3, 0.5])
    onp.testing.assert_allclose(f(x, ALPHA), getattr(sst.dirichlet, method)(x, ALPHA), rtol=1e-13)
    check(lambda u, alpha: f(u / fnp.sum(u), alpha), x, ALPHA)
    X = onp.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]).T
    onp.testing.assert_allclose(f(X, ALPHA), getattr(sst.dirichlet, method)(X, ALPHA), rtol=1e-13)
    check(lambda U, alpha: f(U / fnp.sum(U, axis=0), alpha), X, ALPHA)
    # k - 1 components: the last one is filled in
    check(lambda u: f(u, ALPHA), onp.array([0.2, 0.3]))


def test_dirichlet_rvs_has_no_gradient():
    s = dirichlet.rvs(ALPHA, size=4, random_state=0)
    assert s.shape == (4, 3)
    onp.testing.assert_allclose(s.sum(axis=1), 1.0)
    with pytest.warns(UserWarning):
        g = fastgrad.grad(lambda a: fnp.sum(dirichlet.rvs(a, random_state=0)))(ALPHA)
    assert onp.all(g == 0)
