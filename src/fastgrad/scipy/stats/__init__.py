"""fastgrad.scipy.stats: differentiable densities and distribution functions.

One module per distribution, as in autograd (``from fastgrad.scipy.stats import norm``):
norm, t, beta, gamma, chi2, poisson, multivariate_normal, dirichlet, and beyond autograd
expon, laplace, logistic, cauchy, lognorm and uniform.  Every argument can be passed by
keyword and is still differentiated (``norm.pdf(x, loc=mu)``).
"""

from . import (
    beta,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    laplace,
    logistic,
    lognorm,
    multivariate_normal,
    norm,
    poisson,
    t,
    uniform,
)

__all__ = [
    "beta",
    "cauchy",
    "chi2",
    "dirichlet",
    "expon",
    "gamma",
    "laplace",
    "logistic",
    "lognorm",
    "multivariate_normal",
    "norm",
    "poisson",
    "t",
    "uniform",
]
