"""Numerical checks of derivatives: compare JVPs and VJPs with central differences.

The checks work on any value with a vector space (arrays, scalars, containers), project
onto random directions, and recurse to check derivatives of derivatives up to ``order``.

(PYTEST_DONT_REWRITE: under pytest, the failure messages stay exactly as documented.)
"""

import itertools

from .core import make_jvp, make_vjp, vspace
from .wrap_util import get_name, unary_to_nary

TOL = 1e-6  # absolute tolerance of scalar_close
RTOL = 1e-6  # relative tolerance of scalar_close
EPS = 1e-6  # step of the central differences


def scalar_close(a, b):
    """True if ``a`` and ``b`` agree to ``TOL`` absolutely or ``RTOL`` relatively.

    >>> from fastgrad.test_util import scalar_close
    >>> scalar_close(1.0, 1.0 + 1e-9), scalar_close(1.0, 1.1)
    (True, False)
    """
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def make_numerical_jvp(f, x):
    """``jvp(v)``: the central-difference estimate of the derivative of ``f`` at ``x`` along ``v``.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.test_util import make_numerical_jvp
    >>> jvp = make_numerical_jvp(np.sin, 0.0)
    >>> bool(np.isclose(jvp(2.0), 2.0))
    True
    """
    y = f(x)
    x_vs, y_vs = vspace(x), vspace(y)

    def jvp(v):
        f_plus = f(x_vs.add(x, x_vs.scalar_mul(v, EPS / 2)))
        f_minus = f(x_vs.add(x, x_vs.scalar_mul(v, -EPS / 2)))
        difference = y_vs.add(f_plus, y_vs.scalar_mul(f_minus, -1.0))
        return y_vs.scalar_mul(difference, 1.0 / EPS)

    return jvp


def check_equivalent(x, y):
    """Assert that ``x`` and ``y`` live in the same vector space and agree along a random direction.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.test_util import check_equivalent
    >>> check_equivalent(np.ones(2), np.ones(2))
    >>> check_equivalent(np.ones(2), np.ones(3))
    Traceback (most recent call last):
        ...
    AssertionError: VSpace mismatch:
    x: ArrayVSpace_{'shape': (2,), 'dtype': dtype('float64')}
    y: ArrayVSpace_{'shape': (3,), 'dtype': dtype('float64')}
    """
    x_vs, y_vs = vspace(x), vspace(y)
    assert x_vs == y_vs, "VSpace mismatch:\nx: {}\ny: {}".format(x_vs, y_vs)
    v = x_vs.randn()
    assert scalar_close(x_vs.inner_prod(x, v), x_vs.inner_prod(y, v)), "Value mismatch:\nx: {}\ny: {}".format(x, y)


def check_vjp(f, x):
    """Assert ``<v_x, J^T v_y> == <v_y, J v_x>`` for random ``v_x``, ``v_y``, J by central differences.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.test_util import check_vjp
    >>> check_vjp(lambda x: np.sin(x) * x, np.array([0.5, 1.5]))
    """
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
            get_name(f), x, analytic, numeric
        )
    )


def check_jvp(f, x):
    """Assert that the JVP of ``f`` at ``x`` along a random direction matches central differences.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.test_util import check_jvp
    >>> check_jvp(lambda x: np.sin(x) * x, np.array([0.5, 1.5]))
    """
    jvp = make_jvp(f, x)
    numerical_jvp = make_numerical_jvp(f, x)
    x_v = vspace(x).randn()
    check_equivalent(jvp(x_v)[1], numerical_jvp(x_v))


@unary_to_nary
def check_grads(f, x, modes=("fwd", "rev"), order=2):
    """Check the forward and/or reverse derivatives of ``f`` numerically, recursively to ``order``.

    Returns a function of ``f``'s arguments that checks the derivatives with respect to
    argument ``argnum`` and returns None, or raises AssertionError.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.test_util import check_grads
    >>> check_grads(lambda x: np.sum(np.sin(x) ** 2))(np.array([0.3, -1.2]))

    A rule with a mistake (the derivative of x**3 is 3 x**2) is caught:

    >>> from fastgrad.extend import defvjp, primitive
    >>> @primitive
    ... def cube(x):
    ...     return x ** 3
    >>> defvjp(cube, lambda ans, x: lambda g: 2 * g * x ** 2)
    >>> check_grads(cube, modes=["rev"], order=1)(1.5)
    Traceback (most recent call last):
        ...
    AssertionError: Derivative (VJP) check of cube failed with arg 1.5:
    analytic: ...
    numeric:  ...
    """
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
    argument lists (positional) and keyword value lists it is called with.

    Here ``power`` is checked with respect to both arguments at 2 x 2 points, and ``sum``
    for three values of ``axis``:

    >>> import fastgrad.numpy as np
    >>> from fastgrad.test_util import combo_check
    >>> combo_check(np.power, [0, 1], modes=["rev"])([1.5, 2.0], [2.0, 3.0])
    >>> combo_check(np.sum, [0])([np.ones((2, 3))], axis=[0, 1, None])
    """

    def run_all(*arg_lists, **kwarg_lists):
        keyword_choices = [[(k, v) for v in values] for k, values in kwarg_lists.items()]
        for chosen_args in itertools.product(*arg_lists):
            for chosen_kwargs in itertools.product(*keyword_choices):
                check_grads(fun, *args, **kwargs)(*chosen_args, **dict(chosen_kwargs))

    return run_all
