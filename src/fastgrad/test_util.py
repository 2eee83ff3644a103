"""Numerical checks of derivatives: compare JVPs and VJPs with central differences.

The checks work on any value with a vector space (arrays, scalars, containers), project
onto random directions, and recurse to check derivatives of derivatives up to ``order``.

(PYTEST_DONT_REWRITE: under pytest, the failure messages stay exactly as documented.)
"""
import itertools

from .core import make_jvp, make_vjp, vspace
from .wrap_util import get_name, unary_to_nary

TOL = 1e-6     # absolute tolerance of scalar_close
RTOL = 1e-6    # relative tolerance of scalar_close
EPS = 1e-6     # step of the central differences


def scalar_close(a, b):
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def make_numerical_jvp(f, x):
    """``jvp(v)``: the central-difference estimate of the derivative of ``f`` at ``x`` along ``v``."""
    y = f(x)
    x_vs, y_vs = vspace(x), vspace(y)

    def jvp(v):
        f_plus = f(x_vs.add(x, x_vs.scalar_mul(v, EPS / 2)))
        f_minus = f(x_vs.add(x, x_vs.scalar_mul(v, -EPS / 2)))
        difference = y_vs.add(f_plus, y_vs.scalar_mul(f_minus, -1.0))
        return y_vs.scalar_mul(difference, 1.0 / EPS)
    return jvp


def check_equivalent(x, y):
    """Assert that ``x`` and ``y`` live in the same vector space and agree along a random direction."""
    x_vs, y_vs = vspace(x), vspace(y)
    assert x_vs == y_vs, "VSpace mismatch:\nx: {}\ny: {}".format(x_vs, y_vs)
    v = x_vs.randn()
    assert scalar_close(x_vs.inner_prod(x, v), x_vs.inner_prod(y, v)), \
        "Value mismatch:\nx: {}\ny: {}".format(x, y)


def check_vjp(f, x):
    """Assert ``<v_x, J^T v_y> == <v_y, J v_x>`` for random ``v_x``, ``v_y``, J by central differences."""
    vjp, y = make_vjp(f, x)
    numerical_jvp = make_numerical_jvp(f, x)
    x_vs, y_vs = vspace(x), vspace(y)
    x_v, y_v = x_vs.randn(), y_vs.randn()
    vjp_y = x_vs.covector(vjp(y_vs.covector(y_v)))
    assert vspace(vjp_y) == x_vs, "VSpace mismatch:\nx: {}\nvjp: {}".format(x_vs, vspace(vjp_y))
    analytic = x_vs.inner_prod(x_v, vjp_y)
    numeric = y_vs.inner_prod(y_v, numerical_jvp(x_v))
    assert scalar_close(numeric, analytic), (
        "Derivative (VJP) check of {} failed with arg {}:\nanalytic: {}\nnumeric:  {}".format(
            get_name(f), x, analytic, numeric))


def check_jvp(f, x):
    """Assert that the JVP of ``f`` at ``x`` along a random direction matches central differences."""
    jvp = make_jvp(f, x)
    numerical_jvp = make_numerical_jvp(f, x)
    x_v = vspace(x).randn()
    check_equivalent(jvp(x_v)[1], numerical_jvp(x_v))


@unary_to_nary
def check_grads(f, x, modes=("fwd", "rev"), order=2):
    """Check the forward and/or reverse derivatives of ``f`` numerically, recursively to ``order``."""
    unknown = [m for m in modes if m not in ("fwd", "rev")]
    assert not unknown, "modes must be 'fwd' and/or 'rev', got {}".format(unknown)
    if "fwd" in modes:
        check_jvp(f, x)
        if order > 1:
            def jvp_f(x, v):
                return make_jvp(f, x)(v)[1]
            jvp_f.__name__ = "jvp_{}".format(get_name(f))
            check_grads(jvp_f, (0, 1), modes, order=order - 1)(x, vspace(x).randn())
    if "rev" in modes:
        check_vjp(f, x)
        if order > 1:
            def vjp_f(x, v):
                return make_vjp(f, x)[0](v)
            vjp_f.__name__ = "vjp_{}".format(get_name(f))
            check_grads(vjp_f, (0, 1), modes, order=order - 1)(x, vspace(f(x)).randn())


def combo_check(fun, *args, **kwargs):
    """A checker that runs ``check_grads(fun, *args, **kwargs)`` on every combination of the
    argument lists (positional) and keyword value lists it is called with."""
    def run_all(*arg_lists, **kwarg_lists):
        keyword_choices = [[(k, v) for v in values] for k, values in kwarg_lists.items()]
        for chosen_args in itertools.product(*arg_lists):
            for chosen_kwargs in itertools.product(*keyword_choices):
                check_grads(fun, *args, **kwargs)(*chosen_args, **dict(chosen_kwargs))
    return run_all
