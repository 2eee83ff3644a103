"""Helpers shared by the rule modules of fastgrad.scipy.

Most SciPy functions covered here are elementwise (with NumPy broadcasting).  For those a
rule is just a partial derivative ``d(ans, *args)``: ``def_elementwise`` registers both
modes from it with fastgrad.numpy's helper of the same name (the VJP is ``g * d`` summed
down to the argument's shape, the JVP ``t * d`` brought to the result's shape with
``match``).  Partial derivatives are written with traced fastgrad functions, so rules can
be differentiated again.
"""

from ..numpy import _registration
from ..numpy._shapes import match

# A partial derivative that SciPy gives us no way to compute: no rule is registered for
# that argument, so differentiating w.r.t. it raises NotImplementedError (naming the
# function and the argument), never a silently wrong number.
MISSING = object()


def _product(d):
    return lambda t, ans, *args: t * d(ans, *args)


def def_elementwise(fun, *partials):
    """Register VJP and JVP rules of an elementwise ``fun`` from its partial derivatives.

    ``partials[i](ans, *args)`` is d ans / d args[i] (broadcastable against ``ans``);
    ``None`` means a zero derivative (e.g. an integer order), ``MISSING`` that no rule
    exists for that argument."""
    argnums = [i for i, d in enumerate(partials) if d is not MISSING]
    products = [None if partials[i] is None else _product(partials[i]) for i in argnums]
    _registration.def_elementwise(
        fun, *products, argnums=argnums, nargs=len(partials), uses=_registration.ANS_ARGS, fit_tangent=match
    )


_NOT_GIVEN = object()


def make_wrapper(name, params, defaults, prim, doc=None):
    """A function with SciPy's signature ``name(*params)`` (``defaults`` for the trailing
    ones) that calls ``prim`` with every argument in position, so that keyword arguments
    are differentiable too."""
    n = len(params)
    index = {p: i for i, p in enumerate(params)}
    defaults = list(defaults)
    first_default = n - len(defaults)

    def wrapper(*args, **kwargs):
        if not kwargs and len(args) == n:
            return prim(*args)
        if len(args) > n:
            raise TypeError("{}() takes at most {} arguments ({} given)".format(name, n, len(args)))
        vals = list(args) + [_NOT_GIVEN] * (n - len(args))
        for k, v in kwargs.items():
            i = index.get(k)
            if i is None:
                raise TypeError("{}() got an unexpected keyword argument '{}'".format(name, k))
            if vals[i] is not _NOT_GIVEN:
                raise TypeError("{}() got multiple values for argument '{}'".format(name, k))
            vals[i] = v
        for i in range(n):
            if vals[i] is _NOT_GIVEN:
                if i < first_default:
                    raise TypeError("{}() missing required argument '{}'".format(name, params[i]))
                vals[i] = defaults[i - first_default]
        return prim(*vals)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = doc
    wrapper.primitive = prim
    return wrapper
