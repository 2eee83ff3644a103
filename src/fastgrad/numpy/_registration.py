"""How fastgrad's own bindings (numpy/, scipy/) register their derivative rules.

One family of helpers, each giving both modes of a primitive in one call, so that a
reader finds a primitive's reverse and forward rules side by side:

* ``def_rules(fun, reverse, forward)``: the rules of one primitive, one per argument,
  in ``core.defvjp_direct``'s and ``core.defjvp``'s forms (``forward=LINEAR``: the
  primitive is linear in every argument);
* ``def_rules_argnums(fun, reverse, forward)``: one rule for all the differentiated
  arguments (``core.defvjp_argnums`` / ``core.defjvp_argnums``);
* ``def_elementwise(fun, *products)``: an elementwise (broadcasting) function from one
  product per argument, ``product(t, ans, *args) = t * d ans / d args[i]``: the VJP is the
  product of the cotangent summed down to the argument (``unbroadcast``), the JVP the
  product of the tangent brought up to the result (``fit``).  For a holomorphic function
  (and for every real one) both modes multiply by the same derivative; where they do not
  (``abs`` on complex values) ``forward=`` gives the forward products;
* ``def_unary``: the same for a function whose result has its argument's shape and dtype
  (sin, exp, ...), whose product needs neither step and serves as both rules;
* ``def_from_impl(fun, argnums)``: rules of both modes from a traced re-implementation.

A NumPy ufunc that Python's operators also reach (``x * y`` on a box calls
``numpy_wrapper.multiply_op``) has an operator primitive beside it; every helper here
registers the operator primitive with the very rules of its ufunc.

Reverse rules are applied in the backward pass (``defvjp_direct``: no closure is made per
call) and ``uses`` says what they read of the answer and the arguments, so that nodes keep
nothing else.  The closures made here are made once, when the rules are registered.
"""

import numpy as onp

from .._engine import engine as _engine
from ..core import def_linear, defjvp, defjvp_argnums, defvjp_argnums, defvjp_direct, make_jvp, make_vjp
from ..tracer import getval
from . import numpy_wrapper as anp
from ._shapes import arrays_for_lists, fit, unbroadcast

# what the reverse rules of a primitive read (``core.defvjp_direct``'s ``uses``)
ANS, ARGS, NOTHING, ANS_ARGS = ("ans",), ("args",), (), ("ans", "args")
_ndarray, _float64 = onp.ndarray, onp.float64
_same_layout = _engine.same_layout
LINEAR = "linear"  # forward=LINEAR: linear in every argument (core.def_linear)
FROM_IMPL = "impl"  # in def_from_impl's forward=: the derivative of the re-implementation


def _with_operator_twin(fun):
    """``fun`` and, for a ufunc that Python's operators reach, its operator primitive."""
    twin = anp.OPERATOR_PRIMITIVES.get(getattr(fun, "fun", None))
    return (fun,) if twin is None else (fun, twin)


def def_rules(fun, reverse, forward, uses=ANS_ARGS, argnums=None, reads=None):
    """Both modes of ``fun``: ``reverse[i](g, ans, *args, **kwargs)`` is the cotangent of
    argument i (``core.defvjp_direct``), ``forward[i](t, ans, *args, **kwargs)`` the tangent
    of the result given the tangent ``t`` of argument i (``core.defjvp``: ``"same"`` when
    fun is linear in that argument, ``None`` for a zero derivative), or ``forward=LINEAR``.
    ``reads[i]``: the arguments whose values ``reverse[i]`` reads (``core.defvjp_direct``)."""
    for prim in _with_operator_twin(fun):
        defvjp_direct(prim, *reverse, argnums=argnums, uses=uses, reads=reads)
        if forward == LINEAR:
            def_linear(prim)
        else:
            defjvp(prim, *forward, argnums=argnums)


def def_rules_argnums(fun, reverse, forward):
    """Both modes of ``fun`` by one rule each for all the differentiated arguments:
    ``reverse(argnums, ans, args, kwargs)`` returns ``g -> cotangents`` and
    ``forward(argnums, tangents, ans, args, kwargs)`` the result's tangent (or
    ``forward=LINEAR``)."""
    for prim in _with_operator_twin(fun):
        defvjp_argnums(prim, reverse)
        if forward == LINEAR:
            def_linear(prim)
        else:
            defjvp_argnums(prim, forward)


# ---- elementwise functions: both modes from the products of the derivatives ------------


# The reverse rules of the two-argument ufuncs run on every node of a chain of scalar or
# small-array operations: they take their arguments by name and do unbroadcast's common
# case (the cotangent already in the argument's space) themselves, a call fewer per rule.


def _reverse_of(product, argnum, nargs):
    if nargs == 2:
        if argnum == 0:

            def reverse(g, ans, x, y, *args, **kwargs):
                d = product(g, ans, x, y)
                td, tx = type(d), type(x)
                if td is _float64:
                    if tx is _float64 or tx is float:
                        return d
                elif td is _ndarray and tx is _ndarray and _same_layout(d, x):
                    return d
                return None if d is None else unbroadcast(d, x)

        else:

            def reverse(g, ans, x, y, *args, **kwargs):
                d = product(g, ans, x, y)
                td, ty = type(d), type(y)
                if td is _float64:
                    if ty is _float64 or ty is float:
                        return d
                elif td is _ndarray and ty is _ndarray and _same_layout(d, y):
                    return d
                return None if d is None else unbroadcast(d, y)

    else:

        def reverse(g, ans, *args, **kwargs):
            d = product(g, ans, *args)
            return None if d is None else unbroadcast(d, args[argnum])

    reverse.product = product
    return reverse


def _forward_of(product, nargs, fit_tangent):
    if nargs == 2:

        def forward(t, ans, x, y, *args, **kwargs):
            d = product(t, ans, x, y)
            return None if d is None else fit_tangent(d, ans)

    else:

        def forward(t, ans, *args, **kwargs):
            d = product(t, ans, *args)
            return None if d is None else fit_tangent(d, ans)

    forward.product = product
    return forward


def def_elementwise(fun, *products, uses=ARGS, forward=None, argnums=None, nargs=None, fit_tangent=fit, reads=None):
    """Both modes of an elementwise ``fun`` from ``products[i](t, ans, *args)``, the
    tangent or cotangent ``t`` times d ans / d args[i] (``None``: a zero derivative).

    The products receive the positional arguments only (keyword arguments of a ufunc,
    ``out=``, ``dtype=``, ..., do not change its derivative).  ``forward``: the products of
    the forward mode, where they are not the reverse ones (non-holomorphic functions).
    ``argnums``: the arguments the products belong to (the others have no rule: their
    derivative raises NotImplementedError); ``nargs``: how many arguments fun takes.  The
    cotangents are summed down to the arguments (``unbroadcast``), the tangents brought
    to the result with ``fit_tangent``.  ``reads[i]``: the arguments whose values
    ``products[i]`` reads (of the others, unbroadcast reads shape and dtype)."""
    argnums = tuple(range(len(products))) if argnums is None else tuple(argnums)
    nargs = len(products) if nargs is None else nargs
    forward = products if forward is None else forward
    reverse = [None if p is None else _reverse_of(p, i, nargs) for i, p in zip(argnums, products)]
    forward = [None if p is None else _forward_of(p, nargs, fit_tangent) for p in forward]
    def_rules(fun, reverse, forward, uses=uses, argnums=argnums, reads=reads)


def def_unary(fun, product, uses=ARGS, forward=None):
    """Both modes of a function of one argument whose result has the argument's shape and
    dtype (sin, exp, ...) from ``product(t, ans, x, *args, **kwargs)``, the tangent or
    cotangent ``t`` times d ans / dx (``forward``: the forward product, where it differs).

    The product is registered as it is in both modes: nothing runs between the engine and
    it (these rules run on every node of a scalar chain), so it takes the call's other
    arguments too (a ufunc's ``out=``, ``where=``, ...), which do not change the
    derivative."""
    def_rules(fun, [product], [product if forward is None else forward], uses=uses)


# ---- rules from a traced re-implementation ---------------------------------------------

# primitive -> (impl, argnums): the functions whose rules come from def_from_impl
IMPLS = {}


def vjp_from_impl(impl, argnum):
    """A reverse rule for argument ``argnum`` of a primitive whose value ``impl`` computes
    with traced operations: the VJP of ``impl`` itself at the same arguments."""

    def rule(g, ans, *args, **kwargs):
        args = arrays_for_lists(args)

        def f(x):
            return impl(*args[:argnum], x, *args[argnum + 1 :], **kwargs)

        return make_vjp(f, args[argnum])[0](g)

    return rule


def jvp_from_impl(impl, argnum):
    """The forward counterpart of ``vjp_from_impl``."""

    def rule(t, ans, *args, **kwargs):
        args = arrays_for_lists(args)

        def f(x):
            return impl(*args[:argnum], x, *args[argnum + 1 :], **kwargs)

        return make_jvp(f, args[argnum])(t)[1]

    return rule


def fitted(rule):
    """A forward rule whose tangent is brought to the result's space (unless the result is a
    list or tuple, whose items the rule's tangent already matches)."""

    def fitted_rule(t, ans, *args, **kwargs):
        d = rule(t, ans, *args, **kwargs)
        return d if isinstance(getval(ans), (list, tuple)) else fit(d, ans)

    return fitted_rule


def def_from_impl(fun, argnums=(0,), forward=None):
    """Decorator: ``impl`` is a traced implementation of primitive ``fun``; the rules of
    both modes for ``argnums`` are the derivatives of ``impl`` (``forward``: forward rules
    to use instead, e.g. ``"same"`` for an argument fun is linear in, ``FROM_IMPL`` for
    the derivative of ``impl``; or ``LINEAR``).  The arguments not
    in ``argnums`` have no rule: their derivative raises NotImplementedError."""

    def register(impl):
        reverse = [vjp_from_impl(impl, i) for i in argnums]
        jvps = [FROM_IMPL] * len(argnums) if forward is None else forward
        if jvps != LINEAR:
            jvps = [fitted(jvp_from_impl(impl, i)) if f == FROM_IMPL else f for i, f in zip(argnums, jvps)]
        def_rules(fun, reverse, jvps, argnums=argnums)
        IMPLS[fun] = (impl, tuple(argnums))
        return impl

    return register
