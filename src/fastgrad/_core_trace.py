"""Tracing: primitives (whose calls on boxes record nodes), the base of node types, traces,
and the order of a traced graph (pure engine; _core_trace.pxi is the compiled one)."""

import itertools
import types
import warnings

from numpy import float64, ndarray

from ._core_boxes import _NO_TRACE, Box, _box_type_of_subclass, getval, new_box
from ._core_seam import _bound

notrace_primitives = {}  # node type -> set of primitives that are not recorded under it

# Unique across threads (next() on a count is atomic): a nested trace always gets a larger id.
_trace_ids = itertools.count(1)
_last_trace = 0  # the last id drawn
# The ids of the traces open now, in any thread.  A box of a trace that has ended can never
# reach that trace's backward pass (its end is fixed), so a primitive given one beside boxes of
# a later trace takes it as the value it holds (_ended); autograd, whose ids are nesting depths,
# gives sibling traces one id and comes to the same values.
_open_traces = set()


def _draw_trace_id():
    global _last_trace
    _last_trace = t = next(_trace_ids)
    return t


def open_trace():
    """A fresh trace id (above every id drawn before), open until ``close_trace(id)``."""
    t = _draw_trace_id()
    _open_traces.add(t)
    return t


def close_trace(t):
    _open_traces.discard(t)


def _ended(t):
    """Whether ``t`` is the id of a trace drawn here that has ended (ids a library chose
    itself, such as 0, never end)."""
    return 0 < t <= _last_trace and t not in _open_traces


def _outside_any_trace(prim, box):
    """The error for a box made outside any trace given to a primitive (both engines)."""
    return TypeError(
        "{}: an argument ({}) is a box made outside any trace (its trace is None); make boxes "
        "with a trace id, from fastgrad.tracer.trace or trace_stack.new_trace()".format(
            getattr(prim, "__name__", prim), type(box).__name__
        )
    )


def _hidden_boxes(prim, ans, top, argvals):
    """The error for a primitive's output that is, or is an object array holding, a box of its
    own trace or a later one, else None (both engines); ``argvals``: its arguments, the boxes
    of its trace unboxed.  The function was given such boxes inside a list, a tuple or an
    object array, which the primitive cannot see, and NumPy's object loops computed with them:
    boxed, the output would silently not depend on them (autograd returns an object array of
    boxes as the gradient, or a wrong one).  A box of an outer trace there is a value, as any
    other: that trace follows it.  A single box is no hidden one when a container read returns
    it (``_returns_held_values``: the container's own node leads to it), nor when an argument
    held it in a box of the trace (this call was recorded for it, dispatched again)."""
    if isinstance(ans, Box):
        if (
            ans._trace < top
            or getattr(prim, "_returns_held_values", False)
            or any(isinstance(a, Box) and a._trace >= top for a in argvals)
        ):
            return None
        items, what = (ans,), "is a traced value"
    else:
        items, what = ans.flat, "holds traced values"
    for item in items:
        if isinstance(item, Box) and item._trace >= top:
            return TypeError(
                "{}: its output {} ({}) that differentiation cannot follow: the function was "
                "given traced values inside a list, tuple or object array, or made them itself. "
                "Pass traced values as arrays (for example fastgrad.numpy.array(...) or "
                "stack(...)) instead".format(getattr(prim, "__name__", prim), what, type(item).__name__)
            )
    return None


class Primitive:
    """A function whose calls on boxes are recorded, so that its rules apply in differentiation."""

    _ufunc = None  # the NumPy ufunc of a ufunc or operator primitive (NEP 13 dispatch), or None

    def __init__(self, fun):
        self.fun = fun
        self.__dict__.update(getattr(fun, "__dict__", {}))
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(self, attr, getattr(fun, attr, None))
        if self.__qualname__ is None:  # (NumPy 1's ufuncs have no __qualname__)
            self.__qualname__ = self.__name__
        self.__wrapped__ = fun

    def __call__(self, *args, **kwargs):
        """Call ``fun``; if an argument is a box, record the call (see _call_primitive)."""
        return _call_primitive(self, args, kwargs, True)

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self):
        return "<fastgrad primitive {}>".format(self.__name__)


class NotracePrimitive(Primitive):
    """A primitive that is never recorded: boxes are unwrapped and the raw function is called."""

    def __call__(self, *args, **kwargs):
        return self.fun(*[getval(a) for a in args], **kwargs)


_ndarray_array_ufunc = ndarray.__array_ufunc__


def _is_common(a):
    """``a`` is of a type that never overrides ``__array_ufunc__`` (identity tests)."""
    tp = type(a)
    return tp is float or tp is ndarray or tp is float64 or tp is int or a is None


def _needs_ufunc_dispatch(args):
    """Whether a ufunc primitive's call belongs to NumPy's dispatch (NEP 13), as in autograd:
    an argument that is not a box overrides ``__array_ufunc__`` (an xarray DataArray, say)
    and a box is array-like, so the other operand gets its turn.  Called only when the box
    scan of _call_primitive saw an argument of an uncommon type (_is_common), which this
    check passes over too."""
    for a in args:
        if _is_common(a) or isinstance(a, Box):
            continue
        f = getattr(type(a), "__array_ufunc__", None)
        if f is not None and f is not _ndarray_array_ufunc:
            break
    else:
        return False
    return any(isinstance(a, Box) and getattr(type(a), "__array_ufunc__", None) is not None for a in args)


def _call_primitive(self, args, kwargs, dispatch):
    """Call ``self``, recording a node if any argument is a box: the boxes of the innermost
    trace are unboxed, become the node's parents, and the output is boxed.  ``dispatch``
    false: from ufunc dispatch (call_without_ufunc_dispatch)."""
    top, node_type, uncommon = -1, None, False
    for a in args:
        if isinstance(a, Box):
            if a._trace > top:
                top, node_type = a._trace, type(a._node)
            elif a._trace == _NO_TRACE:
                raise _outside_any_trace(self, a)
        elif not uncommon and not _is_common(a):
            uncommon = True  # (only then can another operand override __array_ufunc__)
    if top < 0:
        try:
            return self.fun(*args, **kwargs)
        except (TypeError, ValueError, NotImplementedError) as e:
            explain = _bound.explain_failure
            err = None if explain is None else explain(self, tuple(args), kwargs, e)
            if err is None:
                raise
            raise err from e
    if uncommon and self._ufunc is not None and dispatch and _needs_ufunc_dispatch(args):
        return self._ufunc(*args, **kwargs)
    argvals, argnums, parents = list(args), [], []
    for i, a in enumerate(args):
        if isinstance(a, Box) and a._trace == top:
            argnums.append(i)
            parents.append(a._node)
            a = a._value
        # left: boxes of outer traces, and of ended ones, beside or inside the unboxed ones;
        # those of ended traces are constants
        while isinstance(a, Box) and a._trace < top and _ended(a._trace):
            a = a._value
        argvals[i] = a
    # values may be boxes of outer traces: dispatch again
    if dispatch:
        ans = self(*argvals, **kwargs)
    else:
        ans = _call_primitive(self, argvals, kwargs, False)
        if ans is NotImplemented:
            return ans
    if self in notrace_primitives.get(node_type, ()):
        return ans
    if not dispatch and not _can_box(ans):
        return NotImplemented
    if (type(ans) is ndarray and ans.dtype.kind == "O") or isinstance(ans, Box):
        err = _hidden_boxes(self, ans, top, argvals)
        if err is not None:
            raise err
    node = node_type(ans, self, tuple(argvals), kwargs, tuple(argnums), tuple(parents))
    return new_box(ans, top, node)


def call_without_ufunc_dispatch(prim, *args, **kwargs):
    """Call the primitive ``prim`` as ``ArrayBox.__array_ufunc__`` does, from NumPy's
    dispatch: not handing the call back to it, and giving NotImplemented (so NumPy tries the
    next operand's ``__array_ufunc__``) when the output cannot be boxed."""
    if type(prim) is not Primitive:
        return prim(*args, **kwargs)
    return _call_primitive(prim, args, kwargs, False)


def _can_box(value):
    if type(value) in Box.type_mappings:
        return True
    try:
        _box_type_of_subclass(type(value))
    except TypeError:
        return False
    return True


def register_notrace(node_type, prim):
    notrace_primitives.setdefault(node_type, set()).add(prim)


def trace(start_node, fun, x):
    t = _draw_trace_id()
    try:
        _open_traces.add(t)
        start_box = new_box(x, t, start_node)
        end_box = fun(start_box)
    finally:
        _open_traces.discard(t)
    if isinstance(end_box, Box) and end_box._trace == t:
        return end_box._value, end_box._node
    warnings.warn("Output seems independent of input.", UserWarning, stacklevel=2)
    return end_box, None


class Node:
    """Base of node types; subclass it and pass an instance (from ``new_root``) to ``trace``."""

    __slots__ = ()

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        raise NotImplementedError("Node subclasses must define __init__")

    def initialize_root(self, *args, **kwargs):
        raise NotImplementedError("Node subclasses must define initialize_root")

    @classmethod
    def new_root(cls, *args, **kwargs):
        root = cls.__new__(cls)
        root.initialize_root(*args, **kwargs)
        return root


def toposort(end_node):
    """Nodes from ``end_node`` back to the root, each after every node that consumes it."""
    child_counts, stack = {}, [end_node]
    while stack:
        node = stack.pop()
        if node in child_counts:
            child_counts[node] += 1
        else:
            child_counts[node] = 1
            stack.extend(node.parents)
    order, ready = [], [end_node]
    while ready:
        node = ready.pop()
        order.append(node)
        for parent in node.parents:
            if child_counts[parent] == 1:
                ready.append(parent)
            else:
                child_counts[parent] -= 1
    return order
