"""The registry and vector spaces (the names of autograd.core), in Python.

Rules are data: ``primitive_vjps[f]`` / ``primitive_jvps[f]`` hold one rule object per
primitive, read by the engine when it records a call.  Vector spaces give the engine
what it needs for values other than floats and arrays: zeros, and adding cotangents.

``VJPNode`` and ``JVPNode`` (the engine's node types, re-exported here) record one
primitive call each, in reverse and forward mode:

>>> import fastgrad.numpy as np
>>> from fastgrad.core import JVPNode, VJPNode
>>> from fastgrad.tracer import trace
>>> value, node = trace(VJPNode.new_root(), np.sin, 0.0)
>>> type(node).__name__, node.fun.__name__
('VJPNode', 'sin')
>>> value, node = trace(JVPNode.new_root(2.0), np.sin, 0.0)   # tangent 2.0 at the input
>>> type(node).__name__, node.g                                # the output's tangent
('JVPNode', 2.0)
"""

import warnings
from functools import reduce

from numpy import float64 as _float64, ndarray

from ._engine import engine

# (Node, new_box, notrace_primitive, func and toposort are re-exported: autograd.core has them)
from .tracer import Box, Node, getval, isbox, new_box, notrace_primitive, trace  # noqa: F401
from .tracer import primitive as _plain_primitive
from ._helpers import func, subval, toposort  # noqa: F401

VJPNode = engine.VJPNode
JVPNode = engine.JVPNode
primitive_vjps = engine.primitive_vjps
primitive_jvps = engine.primitive_jvps
_VJPRule, _JVPRule = engine.VJPRule, engine.JVPRule
_ZERO, _MAKER, _DIRECT, _SAME = engine.ZERO, engine.MAKER, engine.DIRECT, engine.SAME


# ---- reverse mode ---------------------------------------------------------------------


def make_vjp(fun, x):
    """``(vjp, value)``: trace ``fun`` at ``x``; ``vjp(g)`` pulls a cotangent back to ``x``.

    ``vjp`` can be called many times (the graph is kept while it is alive).

    >>> import fastgrad.numpy as np
    >>> from fastgrad.core import make_vjp
    >>> vjp, value = make_vjp(np.sin, 0.0)
    >>> value, vjp(2.0)
    (0.0, 2.0)
    """
    return _trace_vjp(fun, x, consume=False)


def _trace_vjp(fun, x, consume):
    split = input_splitters[type(x)](x) if type(x) in input_splitters else None
    if split is None:
        _reject_integers(x)
        root, traced = VJPNode.new_root(), fun
    else:
        root = split.roots[0]

        def traced(start_box):
            return fun(split.boxes(start_box._trace))

    end_value, end_node = trace(root, traced, x)

    def vjp(g):
        if end_node is None:
            return vspace(x).zeros()
        if split is not None:
            return split.gradient(engine.backward_pass(g, end_node, consume, split.roots))
        result = engine.backward_pass(g, end_node, consume)
        if result is None:
            return vspace(x).zeros()
        if type(result) is ndarray and not result.flags.writeable:
            result = result.copy()  # rules may pass back read-only broadcast views
        return result

    return vjp, end_value


input_splitters = {}  # type -> splitter(x): how to trace an input of exactly that type part by part


def register_input_splitter(value_type, splitter):
    """Trace inputs of exactly ``value_type`` part by part where ``splitter`` says so.

    ``splitter(x)`` returns None (``x`` is traced whole, as usual) or a split of it:
    ``split.roots``, a list of root nodes (the first is ``x``'s own; the list may grow while
    ``x`` is boxed); ``split.boxes(trace_id)``, ``x`` boxed for that trace with each part on
    a root of its own; ``split.gradient(cotangents)``, the gradient for ``x`` from the
    roots' cotangents (a list in the order of ``roots``, None where nothing arrived).
    fastgrad.builtins registers one for lists, tuples and dicts of float64 arrays (a
    model's parameters), so that reading their elements records nothing.
    """
    input_splitters[value_type] = splitter


def _reject_integers(x):
    """Only float and complex values have derivatives: reject integer, boolean, object and
    string scalars and object or string arrays (also inside containers) with a clear message
    before tracing starts.  Integer and boolean *arrays* are accepted, as autograd accepts
    them (libraries built on it pass data arrays through the differentiated arguments):
    their cotangents are float arrays (see ArrayVSpace.cotangent_dtype)."""
    tp = type(x)
    if tp is float or tp is _float64 or tp is ndarray and x.dtype.kind in "fbiu":
        return
    if tp is list or tp is tuple or isinstance(x, (list, tuple)):
        for item in x:
            _reject_integers(item)
    elif isinstance(x, dict):
        for item in x.values():
            _reject_integers(item)
    else:
        kind = getattr(getattr(x, "dtype", None), "kind", None)
        if kind == "f" or kind == "c" or tp is float or tp is complex:
            return
        if kind in ("b", "i", "u") and isinstance(getval(x), ndarray):
            return
        if kind in ("b", "i", "u") or (kind is None and isinstance(x, int) and not isbox(x)):
            raise TypeError(
                "Can't differentiate w.r.t. type {}{}: integers cannot be differentiated, "
                "pass floats instead (e.g. 1.0 or x.astype(float))".format(tp, _dtype_note(x))
            )
        if kind is not None:
            raise TypeError(
                "Can't differentiate w.r.t. type {}{}: only float and complex values can "
                "be differentiated (convert with x.astype(float))".format(tp, _dtype_note(x))
            )


def _dtype_note(x):
    return " with dtype {}".format(x.dtype) if hasattr(x, "dtype") else ""


def check_output_space(op, ans, integer_arrays=False):
    """The vector space of a differentiated function's output, or a TypeError that names
    the returned type when it is not a float or complex value.  ``integer_arrays``: an
    integer or boolean array is differentiated too, as autograd's jacobian and
    elementwise_grad do (its space is float64's, as an integer input's is)."""
    value = getval(ans)
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    integer_array = integer_arrays and kind in ("i", "u", "b") and type(value) is ndarray
    if kind is not None and kind not in ("f", "c") and not integer_array and not _opaque_objects(value):
        raise TypeError(
            "{} requires the function to return a float or a float array, but it "
            "returned a value of type {} with dtype {}".format(op, type(value), value.dtype)
        )
    try:
        return vspace(ans)
    except TypeError:
        raise TypeError(
            "{} requires the function to return a float or a float array, but it returned a value of type {}".format(
                op, type(value)
            )
        ) from None


def _opaque_objects(value):
    """Whether ``value`` is an object array of values that are not traced: a primitive's
    output that its own rule differentiates (a library's device returning objects that support
    scalar products and sums), which autograd differentiates as it does any array.  An object
    array holding traced values is refused: their derivatives cannot reach the output."""
    return type(value) is ndarray and value.dtype.kind == "O" and not any(isbox(e) for e in value.flat)


def backward_pass(g, end_node):
    """The cotangent of the root of ``end_node``'s graph given ``g`` for ``end_node``.

    >>> from fastgrad.core import VJPNode, backward_pass
    >>> from fastgrad.tracer import trace
    >>> value, end_node = trace(VJPNode.new_root(), lambda x: 3.0 * x ** 2, 2.0)
    >>> value, backward_pass(1.0, end_node)
    (12.0, 12.0)
    """
    return engine.backward_pass(g, end_node, False)


def defvjp_argnums(fun, vjpmaker):
    """``vjpmaker(argnums, ans, args, kwargs)`` returns ``g -> cotangents for argnums``.

    One maker for all the arguments being differentiated (``argnums``, a tuple).

    >>> from fastgrad import grad
    >>> from fastgrad.extend import defvjp_argnums, primitive
    >>> @primitive
    ... def weighted(x, y):
    ...     return 2.0 * x + 3.0 * y
    >>> def weighted_vjp(argnums, ans, args, kwargs):
    ...     return lambda g: [g * (2.0, 3.0)[i] for i in argnums]
    >>> defvjp_argnums(weighted, weighted_vjp)
    >>> grad(weighted, (0, 1))(1.0, 1.0)
    (array(2.), array(3.))
    """
    primitive_vjps[fun] = vjpmaker


def defvjp_argnum(fun, vjpmaker):
    """``vjpmaker(argnum, ans, args, kwargs)`` returns ``g -> cotangent for argnum``.

    >>> from fastgrad import grad
    >>> from fastgrad.extend import defvjp_argnum, primitive
    >>> @primitive
    ... def weighted(x, y):
    ...     return 2.0 * x + 3.0 * y
    >>> defvjp_argnum(weighted, lambda argnum, ans, args, kwargs: lambda g: g * (2.0, 3.0)[argnum])
    >>> grad(weighted, (0, 1))(1.0, 1.0)
    (array(2.), array(3.))
    """

    def vjp_argnums(argnums, ans, args, kwargs):
        vjps = [vjpmaker(argnum, ans, args, kwargs) for argnum in argnums]
        return lambda g: [vjp(g) for vjp in vjps]

    primitive_vjps[fun] = vjp_argnums


def _rule_table(kind, rules, argnums):
    argnums = range(len(rules)) if argnums is None else argnums
    return {i: (_ZERO, None) if r is None else (kind, r) for i, r in zip(argnums, rules)}


def defvjp(fun, *vjpmakers, argnums=None):
    """One maker per argument: ``maker(ans, *args, **kwargs)`` returns ``g -> cotangent``.

    ``None`` means the gradient w.r.t. that argument is zero.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import grad
    >>> from fastgrad.extend import defvjp, primitive
    >>> @primitive
    ... def scaled_sum(x, a):
    ...     return a * np.sum(x)
    >>> defvjp(scaled_sum,
    ...        lambda ans, x, a: lambda g: g * a * np.ones_like(x),
    ...        lambda ans, x, a: lambda g: g * np.sum(x))
    >>> grad(scaled_sum, argnum=(0, 1))(np.ones(2), 3.0)
    (array([3., 3.]), array(2.))
    >>> @primitive
    ... def shifted(x, n):
    ...     return x + n
    >>> defvjp(shifted, lambda ans, x, n: lambda g: g, None)   # no gradient for n
    >>> grad(shifted)(1.0, 2.0)
    array(1.)
    """
    primitive_vjps[fun] = _VJPRule(fun, _rule_table(_MAKER, vjpmakers, argnums))


def defvjp_direct(fun, *rules, argnums=None, uses=("ans", "args"), reads=None):
    """fastgrad's fast form: ``rule(g, ans, *args, **kwargs)`` returns the cotangent.

    Applied during the backward pass, so no closure is made per call; ``None`` (as a rule
    or as a rule's result) is a symbolic zero.  ``uses`` names what the rules read of
    ``"ans"`` and ``"args"``: what they do not read is not kept (they receive None), e.g.
    ``uses=("ans",)`` for tanh, whose derivative is a function of its output.  ``reads``
    (one entry per rule): the positions of the arguments whose values that rule reads; of
    the others it may read only the shape and dtype, e.g. ``reads=((1,), (0,))`` for
    ``x * y`` and ``reads=((), ())`` for ``x + y``.  A node then keeps a large array that
    no rule of its call reads as a stand-in of that shape and dtype (its values zeros), so
    the array's memory is released after the forward pass, as autograd's closures release it.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import grad
    >>> from fastgrad.core import defvjp_direct
    >>> from fastgrad.extend import primitive
    >>> @primitive
    ... def softplus(x):
    ...     return np.log1p(np.exp(x))
    >>> defvjp_direct(softplus, lambda g, ans, x: g * (1.0 - np.exp(-ans)), uses=("ans",))
    >>> bool(np.isclose(grad(softplus)(0.3), 1.0 / (1.0 + np.exp(-0.3))))
    True
    """
    unknown = set(uses) - {"ans", "args"}
    if unknown:
        raise ValueError("uses may contain 'ans' and 'args', got {}".format(sorted(unknown)))
    table = _rule_table(_DIRECT, rules, argnums)
    masks = None if reads is None else _read_masks(reads, argnums if argnums is not None else range(len(rules)))
    primitive_vjps[fun] = _VJPRule(fun, table, "ans" in uses, "args" in uses, masks)


def _read_masks(reads, argnums):
    """defvjp_direct's ``reads`` as the bit mask of each argnum 0-7 (all bits where unknown)."""
    reads, argnums = list(reads), list(argnums)
    if len(reads) != len(argnums):
        raise ValueError("reads needs one entry per rule ({}), got {}".format(len(argnums), len(reads)))
    masks = [0xFFFFFFFF] * 8
    for argnum, positions in zip(argnums, reads):
        mask = 0
        for p in positions:
            if type(p) is not int or p < 0:
                raise ValueError("reads: argument positions are non-negative ints, got {!r}".format(p))
            mask |= 1 << p if p < 32 else 0xFFFFFFFF
        if type(argnum) is int and 0 <= argnum < 8:
            masks[argnum] = mask & 0xFFFFFFFF
    return tuple(masks)


def translate_vjp(vjpfun, fun, argnum):
    """The maker for argument ``argnum`` of ``fun`` given in a ``defvjp`` slot: ``None``
    becomes a maker of zero cotangents, a callable is returned as it is.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.core import translate_vjp
    >>> zero_maker = translate_vjp(None, np.sin, 0)
    >>> zero_maker(np.sin(np.ones(2)), np.ones(2))(1.0)
    array([0., 0.])
    >>> translate_vjp(np.cos, np.sin, 0) is np.cos
    True
    """
    if vjpfun is None:
        return lambda ans, *args, **kwargs: lambda g: vspace(args[argnum]).zeros()
    if callable(vjpfun):
        return vjpfun
    raise TypeError("Can't handle VJP {}".format(vjpfun))


def identity_vjp(argnums, *args):
    """A VJP that passes the cotangent through unchanged.

    >>> from fastgrad.core import identity_vjp
    >>> identity_vjp((0,), 1.0)(5.0)
    5.0
    """
    return lambda g: g


# ---- autograd's legacy registration methods ------------------------------------------------

_LEGACY = "{}.{} is deprecated since autograd 1.2; use fastgrad.extend.{} instead"


class _LegacyPrimitive(engine.Primitive):
    """A primitive that also offers the pre-1.2 registration methods of autograd.

    Each forwards to the modern registry, keeping the rules already given for other
    arguments."""

    def _merge(self, argnum, entry):
        rule = primitive_vjps.get(self)
        entries = dict(rule.entries) if type(rule) is _VJPRule else {}
        entries[argnum] = entry
        primitive_vjps[self] = _VJPRule(self, entries)

    def defvjp(self, vjpfun, argnum=0):
        """Old form: ``vjpfun(g, ans, vs, gvs, *args, **kwargs)``."""
        warnings.warn(_LEGACY.format(self.__name__, "defvjp", "defvjp"), UserWarning, stacklevel=2)

        def rule(g, ans, *args, **kwargs):
            return vjpfun(g, ans, vspace(args[argnum]), vspace(g), *args, **kwargs)

        self._merge(argnum, (_DIRECT, rule))

    def defvjp_is_zero(self, argnums=(0,)):
        warnings.warn(_LEGACY.format(self.__name__, "defvjp_is_zero", "defvjp"), UserWarning, stacklevel=2)
        for argnum in argnums:
            self._merge(argnum, (_ZERO, None))

    def defgrad(self, gradfun, argnum=0):
        """Old form: ``gradfun(ans, *args, **kwargs)`` returns ``g -> cotangent``."""
        warnings.warn(_LEGACY.format(self.__name__, "defgrad", "defvjp"), UserWarning, stacklevel=2)
        self._merge(argnum, (_MAKER, gradfun))


def primitive(f_raw):
    """The primitive decorator, with autograd's deprecated ``.defvjp``/``.defgrad`` methods.

    ``fastgrad.primitive`` is this one (as ``autograd.primitive``); otherwise it works as
    ``fastgrad.extend.primitive``.  Each legacy method warns and registers the rule in
    the modern registry.

    >>> import warnings
    >>> from fastgrad import grad, primitive
    >>> @primitive
    ... def cube(x):
    ...     return x ** 3
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     cube.defgrad(lambda ans, x: lambda g: 3 * g * x ** 2)
    >>> print(caught[0].message)
    cube.defgrad is deprecated since autograd 1.2; use fastgrad.extend.defvjp instead
    >>> grad(cube)(2.0)
    12.0
    """
    return _LegacyPrimitive(f_raw)


# ---- forward mode ---------------------------------------------------------------------


def make_jvp(fun, x):
    """``jvp(g) -> (value, tangent)``: runs ``fun`` at ``x`` pushing the tangent ``g`` forward.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.core import make_jvp
    >>> make_jvp(np.sin, 0.0)(2.0)
    (0.0, 2.0)
    """
    _reject_integers(x)

    def jvp(g):
        start_node = JVPNode.new_root(g)
        end_value, end_node = trace(start_node, fun, x)
        if end_node is None or end_node.g is None:
            return end_value, vspace(end_value).zeros()
        return end_value, end_node.g

    return jvp


def defjvp_argnums(fun, jvpmaker):
    """``jvpmaker(argnums, gs, ans, args, kwargs)`` returns the output tangent.

    ``gs`` holds the tangents of the arguments ``argnums``.

    >>> from fastgrad import make_jvp
    >>> from fastgrad.extend import defjvp_argnums, primitive
    >>> @primitive
    ... def weighted(x, y):
    ...     return 2.0 * x + 3.0 * y
    >>> def weighted_jvp(argnums, gs, ans, args, kwargs):
    ...     return sum(g * (2.0, 3.0)[i] for i, g in zip(argnums, gs))
    >>> defjvp_argnums(weighted, weighted_jvp)
    >>> make_jvp(weighted, (0, 1))(1.0, 1.0)((1.0, 1.0))
    (5.0, 5.0)
    """
    primitive_jvps[fun] = jvpmaker


def defjvp_argnum(fun, jvpmaker):
    """``jvpmaker(argnum, g, ans, args, kwargs)`` returns that argument's tangent contribution.

    >>> from fastgrad import deriv
    >>> from fastgrad.extend import defjvp_argnum, primitive
    >>> @primitive
    ... def weighted(x, y):
    ...     return 2.0 * x + 3.0 * y
    >>> defjvp_argnum(weighted, lambda argnum, g, ans, args, kwargs: g * (2.0, 3.0)[argnum])
    >>> deriv(weighted, 1)(1.0, 1.0)
    3.0
    """

    def jvp_argnums(argnums, gs, ans, args, kwargs):
        return sum_outgrads([jvpmaker(i, g, ans, args, kwargs) for i, g in zip(argnums, gs)])

    primitive_jvps[fun] = jvp_argnums


def defjvp(fun, *jvpfuns, argnums=None):
    """One rule per argument: ``jvp(g, ans, *args, **kwargs)``; ``None`` = zero, ``"same"`` =
    apply ``fun`` itself to the tangent in that slot (the argument enters linearly).

    >>> from fastgrad import deriv
    >>> from fastgrad.extend import defjvp, primitive
    >>> @primitive
    ... def cube(x):
    ...     return x ** 3
    >>> defjvp(cube, lambda g, ans, x: 3.0 * x ** 2 * g)
    >>> deriv(cube)(2.0)
    12.0
    >>> @primitive
    ... def scale(x, a):
    ...     return a * x
    >>> defjvp(scale, "same", lambda g, ans, x, a: g * x)   # linear in x
    >>> deriv(scale)(2.0, 3.0), deriv(scale, 1)(2.0, 3.0)
    (3.0, 2.0)
    """
    argnums = range(len(jvpfuns)) if argnums is None else argnums
    table = {
        i: (_ZERO, None) if r is None else (_SAME, None) if r == "same" else (_DIRECT, r)
        for i, r in zip(argnums, jvpfuns)
    }
    primitive_jvps[fun] = _JVPRule(fun, table, None)


def def_linear(fun):
    """``fun`` is linear in each argument: its JVP applies ``fun`` to the tangent.

    The VJP (the transpose) is registered separately.

    >>> from fastgrad import deriv, grad
    >>> from fastgrad.extend import def_linear, defvjp, primitive
    >>> @primitive
    ... def double(x):
    ...     return 2.0 * x
    >>> def_linear(double)
    >>> defvjp(double, lambda ans, x: lambda g: double(g))   # the transpose
    >>> deriv(double)(5.0), grad(double)(5.0)
    (2.0, 2.0)
    """
    primitive_jvps[fun] = _JVPRule(fun, {}, (_SAME, None))


def translate_jvp(jvpfun, fun, argnum):
    """The rule ``jvp(g, ans, *args, **kwargs)`` for argument ``argnum`` of ``fun`` given in a
    ``defjvp`` slot: ``None`` gives zeros, ``"same"`` applies ``fun`` to the tangent in
    that slot, a callable is returned as it is.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.core import translate_jvp
    >>> translate_jvp("same", np.multiply, 0)(0.5, 6.0, 2.0, 3.0)   # multiply(0.5, 3.0)
    1.5
    >>> translate_jvp(None, np.sin, 0)(1.0, np.sin(np.ones(2)), np.ones(2))
    array([0., 0.])
    """
    if jvpfun is None:
        return lambda g, ans, *args, **kwargs: vspace(ans).zeros()
    if jvpfun == "same":
        return lambda g, ans, *args, **kwargs: fun(*subval(args, argnum, g), **kwargs)
    if callable(jvpfun):
        return jvpfun
    raise TypeError("Can't handle JVP {}".format(jvpfun))


def identity_jvp(g, *args, **kwargs):
    """A JVP that passes the tangent through unchanged.

    >>> from fastgrad.core import identity_jvp
    >>> identity_jvp(5.0, 1.0, 2.0)
    5.0
    """
    return g


# ---- adding cotangents ----------------------------------------------------------------


def add_outgrads(prev_g_flagged, g):
    """``(sum, owned)`` of a pending ``(value, owned)`` (or None) and a new contribution.

    ``owned`` says whether the sum is a new value that may be added into in place.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.core import add_outgrads
    >>> first = add_outgrads(None, np.ones(2))
    >>> first
    (array([1., 1.]), False)
    >>> add_outgrads(first, np.ones(2))
    (array([2., 2.]), True)
    """
    prev, prev_owned = prev_g_flagged if prev_g_flagged is not None else (None, False)
    sparse = type(g) in sparse_object_types
    if prev is None:
        return (sparse_add(vspace(g), None, g), True) if sparse else (g, False)
    vs = vspace(g)
    if type(prev) in sparse_object_types:  # a sparse first term (forward mode keeps them)
        prev, prev_owned = sparse_add(vs, None, prev), True
    if prev_owned:
        return (sparse_add(vs, prev, g) if sparse else vs.mut_add(prev, g)), True
    if sparse:
        return sparse_add(vs, vs.mut_add(None, prev), g), True
    return vs.add(prev, g), True


def sum_outgrads(gs):
    """The sum of the cotangents (or tangents) ``gs``, none of which is changed.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.core import sum_outgrads
    >>> sum_outgrads([np.ones(2), np.ones(2), np.arange(2.0)])
    array([2., 3.])
    """
    return reduce(add_outgrads, gs, None)[0]


def _engine_add(prev, prev_owned, g):
    """The engine's sum of cotangents without a fast path (boxes, sparse, containers)."""
    return add_outgrads((prev, prev_owned) if prev is not None else None, g)


# ---- vector spaces ----------------------------------------------------------------------


class VSpace:
    """The space a value lives in: its zeros, ones, basis, and linear operations.

    Subclass it for a new value type and register it with ``VSpace.register(value_type)``.
    The public operations are primitives so that they can themselves be differentiated.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.extend import VSpace, vspace
    >>> vs = vspace(np.ones((2, 3)))
    >>> isinstance(vs, VSpace), vs.size, vs.shape
    (True, 6, (2, 3))
    >>> vs.inner_prod(np.ones((2, 3)), np.full((2, 3), 2.0))
    12.0
    >>> vs.zeros().shape
    (2, 3)
    """

    __slots__ = ()
    mappings = {}
    iscomplex = False

    def __init__(self, value):
        pass

    def zeros(self):
        raise NotImplementedError(repr(self))

    def ones(self):
        raise NotImplementedError(repr(self))

    def standard_basis(self):
        raise NotImplementedError(repr(self))

    def randn(self):
        raise NotImplementedError(repr(self))

    @_plain_primitive
    def mut_add(self, x_prev, x_new):
        return self._mut_add(self.zeros() if x_prev is None else x_prev, x_new)

    @_plain_primitive
    def add(self, x_prev, x_new):
        return self._add(x_prev, x_new)

    @_plain_primitive
    def scalar_mul(self, x, a):
        return self._scalar_mul(x, a)

    @_plain_primitive
    def inner_prod(self, x, y):
        return self._inner_prod(x, y)

    @_plain_primitive
    def covector(self, x):
        return self._covector(x)

    def _add(self, x, y):
        return x + y

    def _mut_add(self, x, y):
        x += y
        return x

    def _scalar_mul(self, x, a):
        return x * a

    def _inner_prod(self, x, y):
        raise NotImplementedError(repr(self))

    def _covector(self, x):
        return x

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return "{}_{}".format(type(self).__name__, getattr(self, "__dict__", {}))

    @classmethod
    def register(cls, value_type, vspace_maker=None):
        VSpace.mappings[value_type] = vspace_maker or cls

    def examples(self):
        # a few values of the space, to test rules on
        return [self.zeros(), self.ones(), self.randn()]


def vspace(value):
    """The vector space of ``value`` (looking through boxes; a subclass of a registered type,
    such as a named tuple, gets its base's space).

    >>> import fastgrad.numpy as np
    >>> from fastgrad.extend import vspace
    >>> vspace(np.zeros(3))
    ArrayVSpace_{'shape': (3,), 'dtype': dtype('float64')}
    >>> vspace(1.0 + 2.0j).size, vspace([1.0, np.ones(2)]).size
    (2, 3)
    """
    try:
        return VSpace.mappings[type(value)](value)
    except KeyError:
        if isbox(value):
            return vspace(getval(value))
        for base in type(value).__mro__[1:]:
            maker = VSpace.mappings.get(base)
            if maker is not None:
                VSpace.mappings[type(value)] = maker
                return maker(value)
        raise TypeError(
            "Can't find vector space for value {} of type {}. Valid types are {}".format(
                value, type(value), sorted(map(str, VSpace.mappings))
            )
        ) from None


def _inner_prod_rule(g, ans, vs, x, y, other):
    return vs.covector(vs.scalar_mul(other, g))


defvjp_direct(VSpace.add, None, lambda g, ans, vs, x, y: g, lambda g, ans, vs, x, y: g)
defvjp_direct(VSpace.mut_add, None, lambda g, ans, vs, x, y: g, lambda g, ans, vs, x, y: g)
defvjp_direct(VSpace.covector, None, lambda g, ans, vs, x: vs.covector(g))
defvjp_direct(
    VSpace.inner_prod,
    None,
    lambda g, ans, vs, x, y: vs.covector(vs.scalar_mul(y, g)),
    lambda g, ans, vs, x, y: vs.covector(vs.scalar_mul(x, g)),
)
defvjp_direct(
    VSpace.scalar_mul,
    None,
    lambda g, ans, vs, x, a: vs.scalar_mul(g, a),
    # (the scalar's cotangent is <g, x>, real for every space: inner_prod is Re(conj(g) x)
    # for complex ones; vs is x's space, not the scalar's, so no covector of vs is applied)
    lambda g, ans, vs, x, a: vs.inner_prod(g, vs.covector(x)),
)
# add and mut_add are affine in each argument (x + y), not linear: the tangent passes through.
defjvp(VSpace.add, None, identity_jvp, identity_jvp)
defjvp(VSpace.mut_add, None, identity_jvp, identity_jvp)
defjvp(VSpace.covector, None, "same")
defjvp(VSpace.scalar_mul, None, "same", lambda g, ans, vs, x, a: vs.scalar_mul(x, g))
defjvp(
    VSpace.inner_prod, None, lambda g, ans, vs, x, y: vs.inner_prod(g, y), lambda g, ans, vs, x, y: vs.inner_prod(x, g)
)


# ---- sparse cotangents ------------------------------------------------------------------


class SparseObject:
    """A cotangent that knows how to add itself into a dense value of space ``vs``.

    ``mut_add(x)`` adds it into ``x`` in place and returns ``x``; indexing uses this so that
    ``x[i]`` does not make a dense zero array per use.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.extend import SparseObject, vspace
    >>> def add_at_1(x):
    ...     x[1] += 5.0
    ...     return x
    >>> g = SparseObject(vspace(np.zeros(3)), add_at_1)
    >>> g.mut_add(np.ones(3))
    array([1., 6., 1.])
    """

    __slots__ = ("vs", "mut_add")

    def __init__(self, vs, mut_add):
        self.vs, self.mut_add = vs, mut_add


class SparseBox(Box):
    """The box of a ``SparseObject`` (a sparse cotangent being differentiated again).

    >>> from fastgrad.core import SparseBox, SparseObject, vspace
    >>> from fastgrad.tracer import new_box
    >>> box = new_box(SparseObject(vspace(0.0), lambda x: x), 0, None)
    >>> type(box) is SparseBox
    True
    """

    __slots__ = ()


SparseBox.register(SparseObject)
VSpace.register(SparseObject, lambda x: x.vs)
sparse_object_types = {SparseObject, SparseBox}


@_plain_primitive
def sparse_add(vs, x_prev, x_new):
    """Add the sparse ``x_new`` into ``x_prev`` (zeros of ``vs`` if None), in place.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.core import SparseObject, sparse_add, vspace
    >>> vs = vspace(np.zeros(3))
    >>> def add_at_1(x):
    ...     x[1] += 5.0
    ...     return x
    >>> sparse_add(vs, None, SparseObject(vs, add_at_1))
    array([0., 5., 0.])
    """
    return x_new.mut_add(vs.zeros() if x_prev is None else x_prev)


defvjp_direct(sparse_add, None, lambda g, ans, vs, x, y: g, lambda g, ans, vs, x, y: g)


def _sparse_add_jvp_new(g, ans, vs, x_prev, x_new):
    # the tangent of a sparse term may itself be sparse: add it to the dense total densely
    return sparse_add(vs, None, g) if type(g) in sparse_object_types else g


defjvp(sparse_add, None, identity_jvp, _sparse_add_jvp_new)


# What the engine takes from this module (see fastgrad._core_seam).
engine.bind(generic_add=_engine_add, sparse_type=SparseObject)
