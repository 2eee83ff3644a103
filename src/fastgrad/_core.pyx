# The compiled engine: the per-primitive and per-node work of differentiation.
#
# Same names and algorithms as _core_py.py (read that first: it is the specification).
# What differs is only how: C fields instead of attributes, tuples built in place,
# rules called through vectorcall, and cotangent sums with exact-type fast paths.
cimport cython
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from cpython.dict cimport PyDict_GetItem, PyDict_DelItem

import types as _types
import warnings

from numpy import ndarray, float64

cdef extern from "Python.h":
    object PyObject_Vectorcall(object callable, PyObject** args, size_t nargsf, PyObject* kwnames)
    object PyObject_Call(object callable, object args, PyObject* kwargs)

primitive_vjps = {}        # primitive -> VJPRule, or any f(argnums, ans, args, kwargs) -> (g -> cotangents)
primitive_jvps = {}        # primitive -> JVPRule, or any f(argnums, gs, ans, args, kwargs) -> tangent
notrace_primitives = {}    # node type -> set of primitives that are not recorded under it

ZERO, MAKER, DIRECT, SAME = 0, 1, 2, 3
DEF MAX_STACK_ARGS = 8

cdef dict _vjps = primitive_vjps
cdef dict _jvps = primitive_jvps
cdef dict _box_types = {}       # value type -> Box subclass (Box.type_mappings)
cdef set _plain_box_types = set()   # Box subclasses without their own __init__: filled in C
cdef long long _last_trace = 0  # trace ids: only ever incremented with the GIL held
cdef object _generic_add = None # set by core: (prev or None, prev_owned, g) -> (sum, owned)
cdef object _sparse_type = None # set by core: the sparse cotangent type, added in place via .mut_add
cdef object _debug = None       # debug-mode checks (see fastgrad._debug), or None: one test per node
cdef tuple _EMPTY = ()
cdef object _ndarray = ndarray
cdef object _float64 = float64


cdef extern from "Python.h":
    int PyGC_Enable()
    int PyGC_Disable()

cdef Py_ssize_t _gc_pauses = 0     # differentiations in progress (all threads, nested included)
cdef int _gc_was_enabled = 0       # the collector's state before the outermost one began


def pause_gc():
    """Stop the cyclic collector until the matching resume_gc (counted, so nested and
    concurrent differentiations restore it exactly once).  Atomic under the GIL."""
    global _gc_pauses, _gc_was_enabled
    if _gc_pauses == 0:
        _gc_was_enabled = PyGC_Disable()
    _gc_pauses += 1


def resume_gc():
    global _gc_pauses
    if _gc_pauses > 0:
        _gc_pauses -= 1
        if _gc_pauses == 0 and _gc_was_enabled:
            PyGC_Enable()


def gc_pause_depth():
    """How many differentiations are pausing the collector now (0 when none)."""
    return _gc_pauses


@cython.final
cdef class GCPause:
    """``with GCPause():`` pauses the collector for the block: entering and leaving are C
    calls, so no interrupt can fall between pausing and the block's cleanup."""

    def __enter__(self):
        pause_gc()

    def __exit__(self, *exc):
        resume_gc()
        return False


def set_generic_add(fn):
    global _generic_add
    _generic_add = fn


def set_sparse_type(tp):
    global _sparse_type
    _sparse_type = tp


def set_debug_hooks(hooks):
    """``hooks.recorded(node)``, ``hooks.before_backward(node)`` and
    ``hooks.checked(node, argnum, g, cotangent)`` are called when not None."""
    global _debug
    _debug = hooks


cdef class Box:
    """A value being traced: ``_value`` at trace ``_trace``, recorded by ``_node``."""
    type_mappings = _box_types
    types = set()

    def __init__(self, value, trace, node):
        self._value = value
        self._trace = trace
        self._node = node

    def __bool__(self):
        return bool(self._value)

    def __str__(self):
        return "Autograd {0} with value {1}".format(type(self).__name__, str(self._value))

    @classmethod
    def register(cls, value_type):
        Box.types.add(cls)
        _box_types[value_type] = cls
        _box_types[cls] = cls   # a box of a box (higher order) gets the same box type
        if cls.__init__ is Box.__init__:
            _plain_box_types.add(cls)
        else:
            _plain_box_types.discard(cls)


cdef inline object _new_box(object value, long long trace, object node):
    cdef PyObject* found = PyDict_GetItem(_box_types, type(value))
    box_type = <object>found if found is not NULL else _box_type_of_subclass(type(value))
    if box_type not in _plain_box_types:
        return box_type(value, trace, node)
    cdef Box box = (<PyTypeObject*>box_type).tp_new(box_type, <PyObject*>_EMPTY, NULL)
    box._value = value
    box._trace = trace
    box._node = node
    return box


cdef object _box_type_of_subclass(object tp):
    """The box type of the nearest registered base of ``tp`` (e.g. a named tuple's tuple),
    remembered for ``tp``; TypeError if there is none."""
    for base in tp.__mro__[1:]:
        if base in _box_types:
            _box_types[tp] = _box_types[base]
            return _box_types[base]
    raise TypeError(_cannot_differentiate_type(tp))


# ---- operators of array-like boxes, without a Python frame per operator ------------------

cdef dict _box_ops = {}                  # operator name -> (fast primitive, general primitive)
cdef object _fast_value_types = frozenset()     # box values whose operators may use the fast one
cdef object _general_other_types = frozenset()  # other operands that always take the general one


def set_box_arithmetic(ops, fast_value_types, general_other_types):
    """Give ArithmeticBox its operators: ``ops[name] = (fast, general)`` primitives for the
    names add sub mul truediv pow mod matmul neg.  The fast one is used when the box's
    value type is in ``fast_value_types`` and the other operand's type is not in
    ``general_other_types``."""
    global _fast_value_types, _general_other_types
    _box_ops.clear()
    _box_ops.update(ops)
    _fast_value_types = frozenset(fast_value_types)
    _general_other_types = frozenset(general_other_types)


cdef object _box_binop(str name, object box, object other, bint reflected):
    pair = _box_ops.get(name)
    if pair is None:
        return NotImplemented
    if type((<Box>box)._value) in _fast_value_types and type(other) not in _general_other_types:
        prim = (<tuple>pair)[0]
    else:
        prim = (<tuple>pair)[1]
    args = (other, box) if reflected else (box, other)
    if isinstance(prim, Primitive):
        return _call_primitive(<Primitive>prim, args, NULL)
    return prim(*args)


_POW_MODULO = "pow() with a modulus is not differentiable (use x ** y % m on floats instead)"


cdef class ArithmeticBox(Box):
    """A Box whose arithmetic operators call the primitives given to set_box_arithmetic."""

    def __add__(self, other):
        return _box_binop("add", self, other, False)

    def __radd__(self, other):
        return _box_binop("add", self, other, True)

    def __sub__(self, other):
        return _box_binop("sub", self, other, False)

    def __rsub__(self, other):
        return _box_binop("sub", self, other, True)

    def __mul__(self, other):
        return _box_binop("mul", self, other, False)

    def __rmul__(self, other):
        return _box_binop("mul", self, other, True)

    def __truediv__(self, other):
        return _box_binop("truediv", self, other, False)

    def __rtruediv__(self, other):
        return _box_binop("truediv", self, other, True)

    def __pow__(self, other, modulo):
        if modulo is not None:
            raise TypeError(_POW_MODULO)
        return _box_binop("pow", self, other, False)

    def __rpow__(self, other, modulo):
        if modulo is not None:
            raise TypeError(_POW_MODULO)
        return _box_binop("pow", self, other, True)

    def __mod__(self, other):
        return _box_binop("mod", self, other, False)

    def __rmod__(self, other):
        return _box_binop("mod", self, other, True)

    def __matmul__(self, other):
        return _box_binop("matmul", self, other, False)

    def __rmatmul__(self, other):
        return _box_binop("matmul", self, other, True)

    def __neg__(self):
        pair = _box_ops.get("neg")
        if pair is None:
            return NotImplemented
        prim = (<tuple>pair)[0] if type(self._value) in _fast_value_types else (<tuple>pair)[1]
        return prim(self)


def new_box(value, trace, node):
    return _new_box(value, trace, node)


def _cannot_differentiate_type(tp):
    msg = "Can't differentiate w.r.t. type {}".format(tp)
    if issubclass(tp, int):
        msg += ": integers cannot be differentiated, pass floats instead (e.g. 1.0 or x.astype(float))"
    return msg


def isbox(x):
    return isinstance(x, Box)


cpdef object getval(object x):
    while isinstance(x, Box):
        x = (<Box>x)._value
    return x


cdef class Primitive:
    """A function whose calls on boxes are recorded, so that its rules apply in differentiation."""

    def __init__(self, fun):
        self.fun = fun
        self._notrace_types = None
        for name, value in getattr(fun, "__dict__", {}).items():
            setattr(self, name, value)
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(self, attr, getattr(fun, attr, None))
        self.__wrapped__ = fun

    def __call__(self, *args, **kwargs):
        # Calls normally arrive through _primitive_tp_call (no keyword dict is made per call).
        return _call_primitive(self, args, <PyObject*>kwargs if kwargs else NULL)

    def __get__(self, obj, objtype):
        return self if obj is None else _types.MethodType(self, obj)

    def __repr__(self):
        return "<fastgrad primitive {}>".format(getattr(self, "__name__", None))


cdef class NotracePrimitive(Primitive):
    """A primitive that is never recorded: boxes are unwrapped and the raw function is called."""

    def __call__(self, *args, **kwargs):
        return _call_notrace(self, args, <PyObject*>kwargs if kwargs else NULL)


cdef object _call_primitive(Primitive self, tuple args, PyObject* kw):
    """Call ``self`` on ``args`` (and the keyword dict ``kw``, or NULL), recording a node if any
    argument is a box: the innermost trace's boxes are unboxed and become the node's parents."""
    cdef Py_ssize_t n = PyTuple_GET_SIZE(args), i, j, count = 0
    cdef long long top = -1, t
    cdef object a, node_type = None
    for i in range(n):
        a = <object>PyTuple_GET_ITEM(args, i)
        if isinstance(a, Box):
            t = (<Box>a)._trace
            if t > top:
                top, count, node_type = t, 1, type((<Box>a)._node)
            elif t == top:
                count += 1
    if top < 0:
        return PyObject_Call(self.fun, args, kw)

    # Unbox the arguments of the innermost trace; note whether any box is left.
    cdef tuple argvals = PyTuple_New(n)
    cdef tuple argnums
    cdef tuple parents = PyTuple_New(count)
    cdef bint boxes_left = False
    cdef unsigned int mask = 0     # which of the first 8 arguments are boxed, to share argnums tuples
    j = 0
    for i in range(n):
        a = <object>PyTuple_GET_ITEM(args, i)
        if isinstance(a, Box):
            if (<Box>a)._trace == top:
                node = (<Box>a)._node
                Py_INCREF(node)
                PyTuple_SET_ITEM(parents, j, node)
                mask |= (1u << i) if i < 8 else 0x100u
                j += 1
                a = (<Box>a)._value
                if isinstance(a, Box):
                    boxes_left = True
            else:
                boxes_left = True
        Py_INCREF(a)
        PyTuple_SET_ITEM(argvals, i, a)

    argnums = _argnums_of(args, top, mask)
    if boxes_left:   # boxes of outer traces: dispatch again, outermost last
        ans = PyObject_Call(self, argvals, kw)
    else:
        ans = PyObject_Call(self.fun, argvals, kw)
    if self._notrace_types is not None and node_type in self._notrace_types:
        return ans
    kwargs = <object>kw if kw is not NULL else None
    if node_type is VJPNode:
        node = _vjp_node(ans, self, argvals, kwargs, argnums, parents)
    else:
        node = node_type(ans, self, argvals, {} if kwargs is None else kwargs, argnums, parents)
    return _new_box(ans, top, node)


cdef list _argnums_by_mask = [tuple([i for i in range(8) if m & (1 << i)]) for m in range(256)]

cdef tuple _argnums_of(tuple args, long long top, unsigned int mask):
    """Positions of the boxes of trace ``top`` in ``args``: one shared tuple per pattern
    among the first 8 arguments (recording stores no tuple of its own)."""
    if mask < 256:
        return <tuple>_argnums_by_mask[mask]
    return tuple([i for i, a in enumerate(args) if isinstance(a, Box) and (<Box>a)._trace == top])


cdef object _call_notrace(Primitive self, tuple args, PyObject* kw):
    cdef Py_ssize_t n = PyTuple_GET_SIZE(args), i
    cdef tuple argvals = PyTuple_New(n)
    for i in range(n):
        a = getval(<object>PyTuple_GET_ITEM(args, i))
        Py_INCREF(a)
        PyTuple_SET_ITEM(argvals, i, a)
    return PyObject_Call(self.fun, argvals, kw)


# Python's call protocol hands a type's tp_call the positional tuple and the keyword dict
# or NULL.  A `def __call__(*args, **kwargs)` would build an empty dict on every call and
# keep it on the node, so the two primitive types get these C entry points instead.
cdef extern from *:
    """
    typedef PyObject *(*fg_callfunc)(PyObject *, PyObject *, PyObject *);
    static fg_callfunc fg_primitive_impl = NULL, fg_notrace_impl = NULL;
    static PyObject *fg_primitive_tp_call(PyObject *self, PyObject *args, PyObject *kw) {
        return fg_primitive_impl(self, args, (kw && PyDict_GET_SIZE(kw)) ? kw : NULL);
    }
    static PyObject *fg_notrace_tp_call(PyObject *self, PyObject *args, PyObject *kw) {
        return fg_notrace_impl(self, args, (kw && PyDict_GET_SIZE(kw)) ? kw : NULL);
    }
    static void fg_install_calls(PyObject *primitive_type, PyObject *notrace_type) {
        ((PyTypeObject *)primitive_type)->tp_call = fg_primitive_tp_call;
        ((PyTypeObject *)notrace_type)->tp_call = fg_notrace_tp_call;
        PyType_Modified((PyTypeObject *)primitive_type);
        PyType_Modified((PyTypeObject *)notrace_type);
    }
    """
    ctypedef PyObject* (*fg_callfunc)(PyObject*, PyObject*, PyObject*)
    fg_callfunc fg_primitive_impl
    fg_callfunc fg_notrace_impl
    void fg_install_calls(object primitive_type, object notrace_type)

fg_primitive_impl = <fg_callfunc>_call_primitive
fg_notrace_impl = <fg_callfunc>_call_notrace
fg_install_calls(Primitive, NotracePrimitive)


def register_notrace(node_type, prim):
    notrace_primitives.setdefault(node_type, set()).add(prim)
    if isinstance(prim, Primitive):
        current = (<Primitive>prim)._notrace_types or frozenset()
        (<Primitive>prim)._notrace_types = current | {node_type}


def trace(start_node, fun, x):
    global _last_trace
    _last_trace += 1
    cdef long long t = _last_trace
    start_box = _new_box(x, t, start_node)
    end_box = fun(start_box)
    if isinstance(end_box, Box) and (<Box>end_box)._trace == t:
        return (<Box>end_box)._value, (<Box>end_box)._node
    warnings.warn("Output seems independent of input.", UserWarning, stacklevel=2)
    return end_box, None


cdef class Node:
    """Base of node types; subclass it and pass an instance (from ``new_root``) to ``trace``."""

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        raise NotImplementedError("Node subclasses must define __init__")

    def initialize_root(self, *args, **kwargs):
        raise NotImplementedError("Node subclasses must define initialize_root")

    @classmethod
    def new_root(cls, *args, **kwargs):
        root = cls.__new__(cls)
        root.initialize_root(*args, **kwargs)
        return root


def _missing(mode, fun, argnums):
    name = getattr(fun, "__name__", repr(fun))
    return NotImplementedError("{} of {} wrt argnums {} not defined".format(mode, name, tuple(argnums)))


cdef object _call_with(object f, object first, object second, bint two, tuple args, dict kwargs):
    """f(first[, second], *args, **kwargs) without building a tuple when it can be avoided."""
    cdef Py_ssize_t n = PyTuple_GET_SIZE(args), i, lead = 2 if two else 1
    cdef PyObject* stack[MAX_STACK_ARGS + 2]
    if not kwargs and n <= MAX_STACK_ARGS:
        stack[0] = <PyObject*>first
        stack[1] = <PyObject*>second
        for i in range(n):
            stack[lead + i] = PyTuple_GET_ITEM(args, i)
        return PyObject_Vectorcall(f, stack, n + lead, NULL)
    cdef tuple full = PyTuple_New(n + lead)
    Py_INCREF(first)
    PyTuple_SET_ITEM(full, 0, first)
    if two:
        Py_INCREF(second)
        PyTuple_SET_ITEM(full, 1, second)
    for i in range(n):
        a = <object>PyTuple_GET_ITEM(args, i)
        Py_INCREF(a)
        PyTuple_SET_ITEM(full, lead + i, a)
    return PyObject_Call(f, full, <PyObject*>kwargs if kwargs else NULL)


@cython.final
cdef class VJPRule:
    """The reverse rules of one primitive, one per argument: (kind, function) by argnum."""

    def __init__(self, fun, dict entries, bint saves_ans=True, bint saves_args=True):
        self.fun = fun
        self.entries = entries
        self.saves_ans = saves_ans
        self.saves_args = saves_args

    cpdef object one(self, object argnum, object g, object ans, tuple args, dict kwargs):
        cdef PyObject* found = PyDict_GetItem(self.entries, argnum)
        if found is NULL:
            raise _missing("VJP", self.fun, (argnum,))
        kind, f = <object>found
        if kind == DIRECT:
            return _call_with(f, g, ans, True, args, kwargs)
        if kind == MAKER:
            return _call_with(f, ans, None, False, args, kwargs)(g)
        return None

    def __call__(self, argnums, ans, args, kwargs):   # autograd's vjp_argnums convention
        return lambda g: tuple([self.one(i, g, ans, args, kwargs) for i in argnums])


@cython.final
cdef class VJPNode(Node):
    """A recorded primitive call, for the reverse mode."""

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        self.parents, self.parent_argnums, self.fun = tuple(parents), tuple(parent_argnums), fun
        self.value, self.args, self._kwargs = value, tuple(args), dict(kwargs) if kwargs else None
        self.rule = _vjps.get(fun)   # looked up now: later registry edits do not apply

    def initialize_root(self):
        self.parents = self.parent_argnums = _EMPTY
        self.args = _EMPTY

    @property
    def kwargs(self):
        return {} if self._kwargs is None else self._kwargs

    def vjp(self, g):
        """Cotangents for ``parents`` (None = zero) given the cotangent ``g`` of the output."""
        return _node_vjp(self, g)

    cdef void release(self):
        self.parents = _EMPTY
        self.args = _EMPTY
        self.value = self._kwargs = self.rule = None


cdef VJPNode _vjp_node(object ans, object fun, tuple args, object kwargs, tuple argnums, tuple parents):
    cdef VJPNode node = VJPNode.__new__(VJPNode)
    node.parents, node.parent_argnums, node.fun = parents, argnums, fun
    node.value, node.args, node._kwargs = ans, args, kwargs
    rule = _vjps.get(fun)
    node.rule = rule
    if type(rule) is VJPRule:   # keep only what the rule reads (memory: W9 keeps half as much)
        if not (<VJPRule>rule).saves_ans:
            node.value = None
        if not (<VJPRule>rule).saves_args:
            node.args = _nones(PyTuple_GET_SIZE(args))
    if _debug is not None:
        _debug.recorded(node)
    return node


cdef list _none_tuples = [(None,) * n for n in range(9)]

cdef inline tuple _nones(Py_ssize_t n):
    """A tuple of n Nones: what a rule that does not read the arguments receives."""
    return _none_tuples[n] if n < 9 else (None,) * n


cdef object _node_vjp(VJPNode node, object g):
    rule, argnums = node.rule, node.parent_argnums
    if type(rule) is VJPRule:
        return [(<VJPRule>rule).one(i, g, node.value, node.args, node._kwargs) for i in argnums]
    if rule is None:
        raise _missing("VJP", node.fun, argnums)
    return rule(argnums, node.value, node.args, node.kwargs)(g)


cdef inline tuple _parents_of(object node):
    if type(node) is VJPNode:
        return (<VJPNode>node).parents
    return tuple(node.parents)


cpdef list toposort(object end_node):
    """Nodes from ``end_node`` back to the root, each after every node that consumes it."""
    cdef dict child_counts = {}
    cdef list stack = [end_node], order = [], ready = [end_node]
    cdef PyObject* found
    while stack:
        node = stack.pop()
        found = PyDict_GetItem(child_counts, node)
        if found is not NULL:
            child_counts[node] = <object>found + 1
        else:
            child_counts[node] = 1
            stack.extend(_parents_of(node))
    while ready:
        node = ready.pop()
        order.append(node)
        for parent in _parents_of(node):
            count = child_counts[parent]
            if count == 1:
                ready.append(parent)
            else:
                child_counts[parent] = count - 1
    return order


cdef inline bint _is_fast(object tp):
    return tp is float or tp is _float64 or tp is _ndarray or tp is complex


cdef tuple _accumulate(object prev, bint prev_owned, object g):
    """prev + g, in place only into an array this pass allocated.  -> (sum, owned)"""
    tp = type(prev)
    if tp is type(g):
        if tp is float or tp is _float64 or tp is complex:
            return prev + g, True
        if tp is _ndarray and prev.shape == g.shape and prev.dtype == g.dtype:
            if prev_owned:
                prev += g
                return prev, True
            return prev + g, True
    elif prev_owned and type(g) is _sparse_type and not isinstance(prev, Box):
        return g.mut_add(prev), True
    return _generic_add(prev, prev_owned, g)


cdef tuple _first_contribution(object g):
    """How a first cotangent is kept: borrowed if it is a plain value, else via the hook
    (which turns a sparse cotangent into an array of its own)."""
    tp = type(g)
    if _is_fast(tp):
        return g, False
    if tp is _sparse_type:
        return g.mut_add(g.vs.zeros()), True
    return _generic_add(None, False, g)


cdef object _CONFLICT = object()   # the node fields are in use by another pass over this graph
cdef unsigned long long _last_pass = 0


def backward_pass(object g, object end_node, bint consume=False):
    """The cotangent of the root given ``g`` for ``end_node``; None if nothing reaches it.

    ``consume=True`` releases every node as soon as it is processed (single-use graphs)."""
    if type(end_node) is VJPNode:
        result = _backward_on_nodes(g, <VJPNode>end_node, consume)
        if result is not _CONFLICT:
            return result
    return _backward_with_dicts(g, end_node, consume)


cdef object _backward_on_nodes(object g, VJPNode end, bint consume):
    """The backward pass with its bookkeeping (consumer counts, pending sums) in node fields.

    Visits nodes in the same order as toposort.  Gives up (_CONFLICT) before touching any
    node if the graph has foreign node types or is in use by another pass (a rule of that
    pass, or another thread, running a pass over the same graph)."""
    global _last_pass
    _last_pass += 1
    cdef unsigned long long stamp = _last_pass
    cdef VJPNode node, parent
    cdef list marked = [end], stack = [end], ready = [end]
    cdef tuple parents, argnums
    cdef Py_ssize_t k, nparents
    if end.stamp != 0:
        return _CONFLICT
    end.stamp, end.waiting = stamp, 0
    while stack:
        node = <VJPNode>stack.pop()
        for p in node.parents:
            if type(p) is not VJPNode or ((<VJPNode>p).stamp != 0 and (<VJPNode>p).stamp != stamp):
                for node in marked:
                    node.stamp = 0
                return _CONFLICT
            parent = <VJPNode>p
            if parent.stamp == stamp:
                parent.waiting += 1
            else:
                parent.stamp, parent.waiting = stamp, 1
                marked.append(parent)
                stack.append(parent)

    end.pending, end.owned = g, False
    result = None
    try:
        while ready:
            node = <VJPNode>ready.pop()
            g, node.pending = node.pending, None
            parents = node.parents
            nparents = PyTuple_GET_SIZE(parents)
            if g is not None:
                if nparents == 0:
                    result = g
                elif _debug is not None:
                    _debug.before_backward(node)
                    for p, argnum, cot in zip(parents, node.parent_argnums, _node_vjp(node, g)):
                        _debug.checked(node, argnum, g, cot)
                        if cot is not None:
                            _add_to_node(<VJPNode>p, cot)
                elif type(node.rule) is VJPRule:
                    argnums = node.parent_argnums
                    for k in range(nparents):
                        cot = (<VJPRule>node.rule).one(<object>PyTuple_GET_ITEM(argnums, k), g,
                                                       node.value, node.args, node._kwargs)
                        if cot is not None:
                            _add_to_node(<VJPNode>PyTuple_GET_ITEM(parents, k), cot)
                else:
                    for p, cot in zip(parents, _node_vjp(node, g)):
                        if cot is not None:
                            _add_to_node(<VJPNode>p, cot)
            for k in range(nparents):
                parent = <VJPNode>PyTuple_GET_ITEM(parents, k)
                parent.waiting -= 1
                if parent.waiting == 0:
                    ready.append(parent)
            node.stamp = 0
            if consume:
                node.release()
    except BaseException:
        for node in marked:
            node.stamp, node.pending = 0, None
        raise
    return result


cdef inline void _add_to_node(VJPNode parent, object cot) except *:
    if parent.pending is None:
        parent.pending, parent.owned = _first_contribution(cot)
    else:
        parent.pending, parent.owned = _accumulate(parent.pending, parent.owned, cot)


cdef object _backward_with_dicts(object g, object end_node, bint consume):
    """The same pass with its bookkeeping in dicts: for graphs with user node types, and
    for a second pass over a graph that another pass is using."""
    cdef list order = toposort(end_node)
    cdef dict pending = {end_node: g}
    cdef set owned = set()
    cdef PyObject* found
    result = None
    for idx in range(len(order)):
        node = order[idx]
        found = PyDict_GetItem(pending, node)
        if found is NULL:
            continue
        g = <object>found
        PyDict_DelItem(pending, node)
        parents = _parents_of(node)
        if not parents:
            result = g
            continue
        if _debug is not None and type(node) is VJPNode:
            _debug.before_backward(node)
        cots = _node_vjp(<VJPNode>node, g) if type(node) is VJPNode else node.vjp(g)
        for k, (parent, cot) in enumerate(zip(parents, cots)):
            if _debug is not None and type(node) is VJPNode:
                _debug.checked(node, (<VJPNode>node).parent_argnums[k], g, cot)
            if cot is None:
                continue
            found = PyDict_GetItem(pending, parent)
            if found is NULL:
                total, is_owned = _first_contribution(cot)
            else:
                total, is_owned = _accumulate(<object>found, parent in owned, cot)
            pending[parent] = total
            if is_owned:
                owned.add(parent)
            else:
                owned.discard(parent)
        if consume and type(node) is VJPNode and (<VJPNode>node).stamp == 0:
            (<VJPNode>node).release()
    return result


@cython.final
cdef class JVPRule:
    """The forward rules of one primitive: (kind, function) by argnum, else ``default``."""

    def __init__(self, fun, dict entries, default=None):
        self.fun = fun
        self.entries = entries
        self.default = default

    cpdef object one(self, object argnum, object g, object ans, tuple args, dict kwargs):
        cdef PyObject* found = PyDict_GetItem(self.entries, argnum)
        entry = <object>found if found is not NULL else self.default
        if entry is None:
            raise _missing("JVP", self.fun, (argnum,))
        kind, f = entry
        if kind == DIRECT:
            return _call_with(f, g, ans, True, args, kwargs)
        if kind == SAME:
            i = argnum
            return PyObject_Call(self.fun, args[:i] + (g,) + args[i + 1:],
                                 <PyObject*>kwargs if kwargs else NULL)
        return None

    def __call__(self, argnums, gs, ans, args, kwargs):   # autograd's jvp_argnums convention
        return _sum_tangents([self.one(i, g, ans, args, kwargs) for i, g in zip(argnums, gs)])


cdef object _sum_tangents(list tangents):
    total, owned = None, False
    for t in tangents:
        if t is None:
            continue
        if total is None:
            total, owned = t, False
        else:
            total, owned = _accumulate(total, owned, t)
    return total


@cython.final
cdef class JVPNode(Node):
    """A primitive call in forward mode: holds the tangent ``g`` of its output (None = zero)."""

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        rule = _jvps.get(fun)
        if rule is None:
            raise _missing("JVP", fun, parent_argnums)
        args, kwargs = tuple(args), dict(kwargs)
        live = [(i, (<JVPNode>p).g) for i, p in zip(parent_argnums, parents) if (<JVPNode>p).g is not None]
        if type(rule) is JVPRule:
            self.g = _sum_tangents([(<JVPRule>rule).one(i, g, value, args, kwargs) for i, g in live])
        elif live:
            self.g = rule(tuple([i for i, _ in live]), tuple([g for _, g in live]), value, args, kwargs)
        else:
            self.g = None

    def initialize_root(self, g):
        self.g = g
