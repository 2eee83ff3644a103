"""Helpers shared by the rule modules of fastgrad.scipy.

Most SciPy functions covered here are elementwise (with NumPy broadcasting).  For those a
rule is just a partial derivative ``d(ans, *args)``: the VJP is ``g * d`` summed down to
the argument's shape (``unbroadcast``), the JVP is ``t * d`` broadcast up to the result's
shape.  Partial derivatives are written with traced fastgrad functions, so rules can be
differentiated again.
"""
import numpy as onp

from ..core import defjvp, defvjp_direct
from ..numpy import numpy_wrapper as anp
from ..numpy.numpy_vjps import _meta, unbroadcast
from ..tracer import getval, isbox

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


def plain(x):
    """The value of ``x`` without any trace, as an ndarray (for metadata and masks)."""
    return onp.asarray(getval(x))


def any_box(*xs):
    return any(isbox(x) for x in xs)
