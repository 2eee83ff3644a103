"""Helpers shared by the rule modules of fastgrad.scipy.

Most SciPy functions covered here are elementwise (with NumPy broadcasting).  For those a
rule is just a partial derivative ``d(ans, *args)``: the VJP is ``g * d`` summed down to
the argument's shape (``unbroadcast``), the JVP is ``t * d`` broadcast up to the result's
shape.  Partial derivatives are written with traced fastgrad functions, so rules can be
differentiated again.
"""

from ..core import defjvp, defvjp_direct
from ..numpy import numpy_wrapper as anp
from ..numpy.numpy_vjps import _meta, unbroadcast

# A partial derivative that SciPy gives us no way to compute: no rule is registered for
# that argument, so differentiating w.r.t. it raises NotImplementedError (naming the
# function and the argument), never a silently wrong number.
MISSING = object()


def shape_of(x):
    return _meta(x)[0]


def ndim_of(x):
    return len(_meta(x)[0])


def match(t, ans):
    """The tangent ``t`` with the shape and (real float) dtype of the result ``ans``."""
    tshape, tdtype = _meta(t)
    ashape, adtype = _meta(ans)
    if tshape != ashape:
        t = anp.broadcast_to(t, ashape)
    if adtype.kind == "f" and tdtype != adtype:
        t = anp.astype_method(t, adtype)
    return t


def _vjp_rule(i, d):
    def rule(g, ans, *args, **kwargs):
        return unbroadcast(g * d(ans, *args, **kwargs), args[i])

    return rule


def _jvp_rule(d):
    def rule(t, ans, *args, **kwargs):
        return match(t * d(ans, *args, **kwargs), ans)

    return rule


def def_elementwise(fun, *partials):
    """Register VJP and JVP rules of an elementwise ``fun`` from its partial derivatives.

    ``partials[i](ans, *args, **kwargs)`` is d ans / d args[i] (broadcastable against
    ``ans``); ``None`` means a zero derivative (e.g. an integer order), ``MISSING`` that no
    rule exists for that argument."""
    argnums = [i for i, d in enumerate(partials) if d is not MISSING]
    vjps = [None if partials[i] is None else _vjp_rule(i, partials[i]) for i in argnums]
    jvps = [None if partials[i] is None else _jvp_rule(partials[i]) for i in argnums]
    defvjp_direct(fun, *vjps, argnums=argnums)
    defjvp(fun, *jvps, argnums=argnums)


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
