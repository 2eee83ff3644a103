"""``fixed_point(f, a, x0, distance, tol)``: iterate ``x <- f(a)(x)`` from ``x0`` until
``distance(x_new, x) < tol``, differentiable w.r.t. the parameter ``a``.

The gradient uses the implicit function theorem: at the fixed point x* = f(a)(x*), the
cotangent ``g`` of x* pulls back to ``a`` as ``vjp_a(v)`` where ``v`` solves the adjoint
fixed point ``v = g + vjp_x(v)``, found by the same iteration (so it converges when the
forward iteration does).  The adjoint iteration is itself a traced ``fixed_point`` call,
so second derivatives work too.
"""

from ..builtins import tuple as _traced_tuple
from ..builtins import tuple  # noqa: F401  (autograd's module has these names too)
from ..core import defvjp, defvjp_direct, make_vjp, vspace  # noqa: F401
from ..tracer import primitive

__all__ = ["fixed_point"]


@primitive
def fixed_point(f, a, x0, distance, tol):
    """Iterate ``x = f(a)(x)`` from ``x0`` until ``distance(x_new, x) < tol``; return x.

    Differentiable with respect to ``a`` (see the module docstring).  Newton's iteration
    for the square root, whose derivative is ``1 / (2 sqrt(a))``:

    >>> import fastgrad.numpy as np
    >>> from fastgrad import grad
    >>> from fastgrad.misc.fixed_points import fixed_point
    >>> newton_step = lambda a: lambda x: 0.5 * (x + a / x)
    >>> distance = lambda x, y: np.abs(x - y)
    >>> sqrt = lambda a: fixed_point(newton_step, a, 1.0, distance, 1e-10)
    >>> bool(np.isclose(sqrt(2.0), np.sqrt(2.0)))
    True
    >>> bool(np.isclose(grad(sqrt)(2.0), 0.5 / np.sqrt(2.0)))
    True
    """
    _f = f(a)
    x_prev, x = x0, _f(x0)
    while distance(x, x_prev) >= tol:
        x_prev, x = x, _f(x)
    return x


def _make_adjoint(f):
    def adjoint(params):
        a, x_star, g = params
        vjp_x, _ = make_vjp(f(a), x_star)
        return lambda v: vspace(g).add(g, vjp_x(v))

    return adjoint


def _fixed_point_vjp_a(g, ans, f, a, x0, distance, tol):
    v = fixed_point(_make_adjoint(f), _traced_tuple((a, ans, g)), vspace(x0).zeros(), distance, tol)
    vjp_a, _ = make_vjp(lambda a_: f(a_)(ans), a)
    return vjp_a(v)


defvjp_direct(fixed_point, None, _fixed_point_vjp_a, None, None, None)


def fixed_point_vjp(ans, f, a, x0, distance, tol):
    """The reverse rule of ``fixed_point`` w.r.t. ``a``, as a maker (autograd's name and form):
    ``fixed_point_vjp(ans, f, a, x0, distance, tol)(g)`` is the cotangent of ``a``."""
    return lambda g: _fixed_point_vjp_a(g, ans, f, a, x0, distance, tol)
