# The compiled engine: the per-primitive and per-node work of differentiation.
#
# Same names and algorithms as the pure engine, _core_py.py (read that first: it is the
# specification), file for file: this file is _core_py.py (the node, the record step, the
# backward pass), and each included .pxi is the pure module of the same name, in the same
# order.  What differs is only how: C fields instead of attributes, tuples built in place,
# rules called through vectorcall, cotangent sums with exact-type fast paths, and C kernels
# for float64 scalars (_scalar_kernels.pxi; the pure engine has none).  _core.pxd is the
# typed contract: every C field, with what it holds.
cimport cython
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from cpython.ref cimport Py_INCREF, Py_DECREF, Py_REFCNT
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from cpython.dict cimport PyDict_GetItem, PyDict_GetItemWithError, PyDict_DelItem
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_AsSsize_t
from libc.stdlib cimport realloc
from libc.string cimport memcmp, memcpy
cimport numpy as cnp

cnp.import_array()   # NumPy's C API: array metadata read from the struct (no attribute lookups)

import operator as _operator
import os as _os
import threading as _threading
import types as _types
import warnings

from numpy import ndarray, float64

cdef extern from "Python.h":
    object PyObject_Vectorcall(object callable, PyObject** args, size_t nargsf, PyObject* kwnames)
    object PyObject_Call(object callable, object args, PyObject* kwargs)
    # the same calls, giving NULL on an error with no check by Cython (see _call_raw)
    PyObject* PyObject_Vectorcall_unchecked "PyObject_Vectorcall"(object callable, PyObject** args, size_t nargsf,
                                                                  PyObject* kwnames)
    PyObject* PyObject_Call_unchecked "PyObject_Call"(object callable, object args, PyObject* kwargs)

cdef tuple _EMPTY = ()
cdef object _ndarray = ndarray
cdef object _float64 = float64
cdef enum:
    K_ZERO = 0      # the kinds of per-argument rules (_core_rules), as C constants
    K_MAKER = 1
    K_DIRECT = 2
    K_SAME = 3
    MAX_STACK_ARGS = 8   # arguments passed on the C stack, without a tuple

include "_core_seam.pxi"
include "_core_gc.pxi"
include "_core_blocks.pxi"
include "_core_boxes.pxi"
include "_core_trace.pxi"
include "_core_rules.pxi"
include "_core_sums.pxi"
include "_core_forward.pxi"
include "_scalar_kernels.pxi"     # (compiled only)


# Nodes are freed in long chains (a 10^6-primitive graph): the trashcan turns the nested
# deallocation of parent after parent into a loop, so a node may hold its single parent
# directly, without a tuple (48 bytes less per node).
@cython.final
@cython.trashcan(True)
cdef class VJPNode(Node):
    """A recorded primitive call, for the reverse mode.  The last four fields (see
    _core.pxd) are the backward pass's bookkeeping, valid while ``stamp`` is that pass's."""

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        parents, args = tuple(parents), tuple(args)
        self.nparents = <int>len(parents)
        self._parents = parents[0] if self.nparents == 1 else parents
        self.parent_argnums, self.fun = tuple(parent_argnums), fun
        self.value, self._kwargs = value, dict(kwargs) if kwargs else None
        _set_args(self, fg_tuple_items(args), len(args), args)
        self.rule = _vjp_rule_of(fun)   # looked up now: later registry edits do not apply

    def initialize_root(self):
        self._parents, self.nparents = _EMPTY, 0
        self.parent_argnums = _EMPTY
        _set_args(self, NULL, 0, None)

    @staticmethod
    def new_root():
        """A node that starts a trace (Node.new_root without its two Python-level calls:
        a gradient with respect to a container makes one per element)."""
        cdef VJPNode root = VJPNode.__new__(VJPNode)
        root._parents, root.nparents = _EMPTY, 0
        root.parent_argnums = _EMPTY
        _set_args(root, NULL, 0, None)
        return root

    @property
    def parents(self):
        """The nodes of the boxed arguments, in argument order (a tuple)."""
        return (self._parents,) if self.nparents == 1 else self._parents

    @property
    def args(self):
        """The unboxed positional arguments (a tuple; Nones where the rule reads none)."""
        if self.nargs > 2:
            return self._args
        return (self._arg0, self._arg1)[:self.nargs]

    @property
    def kwargs(self):
        return {} if self._kwargs is None else self._kwargs

    def vjp(self, g):
        """Cotangents for ``parents`` (None = zero) given the cotangent ``g`` of the output."""
        return _node_vjp(self, g, None)


cdef inline void _set_args(VJPNode node, PyObject** argv, Py_ssize_t n, object as_tuple):
    """Keep the n arguments: up to two in fields, more in a tuple (``as_tuple`` if it is one)."""
    node.nargs = <int>n
    if n > 2:
        node._arg0 = node._arg1 = None
        node._args = as_tuple if type(as_tuple) is tuple else _tuple_of(argv, n)
    else:
        node._arg0 = <object>argv[0] if n > 0 else None
        node._arg1 = <object>argv[1] if n > 1 else None
        node._args = None


# A node of a rule that reads only the shape and dtype of an argument keeps a large array
# there as a stand-in: so a chain like ``x = x + 1`` over big arrays frees each x after the
# next step, as autograd does (its rules close over the arguments' metadata only).  Smaller
# arrays are kept as they are: their memory is small and a stand-in would cost more time.
STAND_IN_MIN_BYTES = 1 << 16

cdef extern from *:
    """
    /* the memory every stand-in reads: zeros, aligned and long enough for any numeric item */
    static union { long double ld[4]; double d[8]; char c[64]; } fg_zero_bytes;

    static int fg_stand_in_ok(PyObject *a, Py_ssize_t min_bytes) {
        PyArrayObject *x;
        char kind;
        if (Py_TYPE(a) != &PyArray_Type)
            return 0;
        x = (PyArrayObject *)a;
        if (PyArray_NBYTES(x) < min_bytes || PyArray_ITEMSIZE(x) > (npy_intp)sizeof(fg_zero_bytes))
            return 0;
        kind = PyArray_DESCR(x)->kind;
        return kind == 'b' || kind == 'i' || kind == 'u' || kind == 'f' || kind == 'c';
    }

    /* a read-only array of x's shape and dtype, every stride 0, on fg_zero_bytes */
    static PyObject *fg_shape_stand_in(PyObject *a) {
        PyArrayObject *x = (PyArrayObject *)a;
        npy_intp strides[NPY_MAXDIMS] = {0};
        PyArray_Descr *descr = PyArray_DESCR(x);
        Py_INCREF(descr);   /* (PyArray_NewFromDescr takes this reference) */
        return PyArray_NewFromDescr(&PyArray_Type, descr, PyArray_NDIM(x), PyArray_DIMS(x), strides,
                                    (void *)&fg_zero_bytes, 0, NULL);
    }
    """
    bint fg_stand_in_ok(PyObject* a, Py_ssize_t min_bytes)
    object fg_shape_stand_in(object a)

cdef Py_ssize_t _stand_in_min_bytes = STAND_IN_MIN_BYTES


def _stand_in_ok(a):
    """``a`` is an ndarray of numbers of at least STAND_IN_MIN_BYTES."""
    return fg_stand_in_ok(<PyObject*>a, _stand_in_min_bytes)


def _shape_stand_in(x):
    """A read-only array of ``x``'s shape and dtype that holds no memory (zeros)."""
    return fg_shape_stand_in(x)


cdef inline bint _any_large_array(PyObject** argv, Py_ssize_t n):
    """Whether an argument may be kept as a stand-in (a scalar chain's nodes: two type checks)."""
    cdef Py_ssize_t j
    if n <= 2:   # (most calls: no loop, and a scalar's type is all that is read)
        return (n > 0 and fg_stand_in_ok(argv[0], _stand_in_min_bytes)) or \
            (n > 1 and fg_stand_in_ok(argv[1], _stand_in_min_bytes))
    for j in range(n if n < 32 else 32):
        if fg_stand_in_ok(argv[j], _stand_in_min_bytes):
            return True
    return False


cdef void _keep_read_args(VJPNode node, VJPRule rule, tuple argnums) except *:
    """In ``node``'s saved arguments, a stand-in for each large array whose values no rule of
    the call's differentiated arguments (``argnums``) reads."""
    cdef unsigned int read = 0
    cdef Py_ssize_t i, j, n = node.nargs
    for a in argnums:
        i = PyLong_AsSsize_t(a)
        read |= rule.read_masks[i] if 0 <= i < 8 else 0xFFFFFFFFu
    if read == 0xFFFFFFFFu:
        return
    if n <= 2:
        if n > 0 and not read & 1u and fg_stand_in_ok(<PyObject*>node._arg0, _stand_in_min_bytes):
            node._arg0 = fg_shape_stand_in(node._arg0)
        if n > 1 and not read & 2u and fg_stand_in_ok(<PyObject*>node._arg1, _stand_in_min_bytes):
            node._arg1 = fg_shape_stand_in(node._arg1)
        return
    args = list(node._args)
    for j in range(min(n, 32)):
        if not (read >> j) & 1u and fg_stand_in_ok(<PyObject*>args[j], _stand_in_min_bytes):
            args[j] = fg_shape_stand_in(args[j])
    node._args = tuple(args)


cdef inline PyObject** _node_argv(VJPNode node, PyObject** buffer):
    """The node's arguments as an array (``buffer`` holds two)."""
    if node.nargs > 2:
        return fg_tuple_items(node._args)
    buffer[0], buffer[1] = <PyObject*>node._arg0, <PyObject*>node._arg1
    return buffer


cdef inline void _release(VJPNode node) noexcept:
    """Drop what a processed node holds (its parents, saved values and rule)."""
    node._parents, node.nparents = _EMPTY, 0
    node._arg0 = node._arg1 = node._args = None
    node.value = node._kwargs = node.rule = node.replay = None


cdef inline PyObject* _parent_ptr(VJPNode node, Py_ssize_t k):
    """The node's k-th parent, borrowed from the node (no reference counted)."""
    return <PyObject*>node._parents if node.nparents == 1 else PyTuple_GET_ITEM(node._parents, k)


cdef inline object _parent(VJPNode node, Py_ssize_t k):
    """_parent_ptr, as an object."""
    return <object>_parent_ptr(node, k)


cdef PyObject* _NONE_ARGS[8]     # what a rule that reads no arguments receives (filled at import)


cdef extern from *:
    """
    /* A VJPNode's memory, as Cython lays out the fields _core.pxd declares (checked once, at
       import: _check_node_layout). */
    typedef struct {
        PyObject_HEAD
        PyObject *parents, *parent_argnums, *fun, *rule, *value, *arg0, *arg1, *args, *kwargs,
                 *replay, *pending;
        int owned, nparents, nargs, waiting;
        unsigned long long stamp;
        PyObject *weakref;
    } fg_node_layout;

    /* A recorded node, allocated with its GC header and each field set once, then tracked.
       VJPNode's tp_new would zero the object (a memset call) and store None in every field,
       most of which _vjp_node would then replace, counting references to None each time. */
    static PyObject *fg_new_vjp_node(PyObject *type, PyObject *parents, int nparents,
                                     PyObject *argnums, PyObject *fun, PyObject *rule,
                                     PyObject *value, PyObject *arg0, PyObject *arg1,
                                     PyObject *args, PyObject *kwargs, int nargs) {
        fg_node_layout *o = (fg_node_layout *)_PyObject_GC_New((PyTypeObject *)type);
        if (o == NULL)
            return NULL;
        Py_INCREF(parents);  o->parents = parents;
        Py_INCREF(argnums);  o->parent_argnums = argnums;
        Py_INCREF(fun);      o->fun = fun;
        Py_INCREF(rule);     o->rule = rule;
        Py_INCREF(value);    o->value = value;
        Py_INCREF(arg0);     o->arg0 = arg0;
        Py_INCREF(arg1);     o->arg1 = arg1;
        Py_INCREF(args);     o->args = args;
        Py_INCREF(kwargs);   o->kwargs = kwargs;
        Py_INCREF(Py_None);  o->replay = Py_None;
        Py_INCREF(Py_None);  o->pending = Py_None;
        o->owned = 0;
        o->nparents = nparents;
        o->nargs = nargs;
        o->waiting = 0;
        o->stamp = 0;
        o->weakref = NULL;
        PyObject_GC_Track((PyObject *)o);
        return (PyObject *)o;
    }

    /* Whether ``probe``, a VJPNode whose object fields hold the eleven items of ``fields``
       in _core.pxd's order and whose C fields hold 1, 2, 3, 4 and 5, is laid out as
       fg_node_layout. */
    static int fg_node_layout_matches(PyObject *probe, PyObject *fields) {
        static const size_t at[11] = {
            offsetof(fg_node_layout, parents), offsetof(fg_node_layout, parent_argnums),
            offsetof(fg_node_layout, fun), offsetof(fg_node_layout, rule),
            offsetof(fg_node_layout, value), offsetof(fg_node_layout, arg0),
            offsetof(fg_node_layout, arg1), offsetof(fg_node_layout, args),
            offsetof(fg_node_layout, kwargs), offsetof(fg_node_layout, replay),
            offsetof(fg_node_layout, pending)};
        fg_node_layout *o = (fg_node_layout *)probe;
        PyTypeObject *t = Py_TYPE(probe);
        int i;
        if (t->tp_basicsize != (Py_ssize_t)sizeof(fg_node_layout) || t->tp_itemsize != 0
                || t->tp_weaklistoffset != (Py_ssize_t)offsetof(fg_node_layout, weakref)
                || t->tp_dictoffset != 0 || PyTuple_GET_SIZE(fields) != 11)
            return 0;
        for (i = 0; i < 11; i++)
            if (*(PyObject **)((char *)probe + at[i]) != PyTuple_GET_ITEM(fields, i))
                return 0;
        return o->owned == 1 && o->nparents == 2 && o->nargs == 3 && o->waiting == 4 && o->stamp == 5;
    }
    """
    PyObject* fg_new_vjp_node(PyObject* type, object parents, int nparents, object argnums,
                              object fun, object rule, object value, PyObject* arg0, PyObject* arg1,
                              object args, object kwargs, int nargs) except NULL
    bint fg_node_layout_matches(object probe, tuple fields)


def _check_node_layout():
    """Raise ImportError unless fg_new_vjp_node makes VJPNodes as Cython lays them out."""
    cdef VJPNode probe = VJPNode.__new__(VJPNode)
    fields = tuple([(object(),) if i in (1, 7) else object() for i in range(11)])   # (two are tuples)
    (probe._parents, probe.parent_argnums, probe.fun, probe.rule, probe.value, probe._arg0,
     probe._arg1, probe._args, probe._kwargs, probe.replay, probe.pending) = fields
    probe.owned, probe.nparents, probe.nargs, probe.waiting, probe.stamp = True, 2, 3, 4, 5
    if not fg_node_layout_matches(probe, fields):
        raise ImportError("fastgrad._core: VJPNode's fields (_core.pxd) are not laid out as "
                          "fg_node_layout (_core.pyx) expects; update fg_node_layout")


_check_node_layout()


cdef VJPNode _vjp_node(object ans, object fun, PyObject** argv, Py_ssize_t n, object kwargs,
                       tuple argnums, object parents, Py_ssize_t nparents):
    """Record: a new node that keeps what its rule reads; ``parents`` is the parent itself
    when ``nparents`` is 1, else a tuple."""
    rule = _vjp_rule_of(fun)   # looked up now: later registry edits do not apply
    cdef bint is_vjp_rule = type(rule) is VJPRule
    cdef bint saves_args = not is_vjp_rule or (<VJPRule>rule).saves_args
    cdef PyObject** kept = argv if saves_args else _NONE_ARGS   # (Nones: what the rule reads)
    cdef object args = None
    if n > 2:
        args = _tuple_of(kept, n) if saves_args or n <= 8 else (None,) * n
    # the fields, as _set_args keeps the arguments: up to two in fields, more in a tuple
    cdef VJPNode node = <VJPNode>fg_new_vjp_node(
        <PyObject*>VJPNode, parents, <int>nparents, argnums, fun, rule,
        None if is_vjp_rule and not (<VJPRule>rule).saves_ans else ans,   # (memory: W9 keeps half as much)
        kept[0] if 0 < n <= 2 else <PyObject*>None, kept[1] if n == 2 else <PyObject*>None,
        args, kwargs, <int>n)
    Py_DECREF(node)   # (the cast took a reference of its own)
    if saves_args and is_vjp_rule and (<VJPRule>rule).has_reads and _any_large_array(argv, n):
        _keep_read_args(node, <VJPRule>rule, argnums)
    # (each switch is read once, into a local: another thread may change it at any call)
    debug = _hooks.debug
    if debug is not None:
        debug.recorded(node)
    elif _hooks.record_replay is not None:   # in a recompute block: a replay instead of saved values
        _attach_replay(node, _hooks.record_replay, ans, argv, n, kwargs)
    return node


cdef void _attach_replay(VJPNode node, object record_replay, object ans, PyObject** argv, Py_ssize_t n,
                         object kwargs) except *:
    """Inside a recompute block: the node keeps a replay instead of its saved values."""
    replay = record_replay(node, ans, _tuple_of(argv, n), kwargs)
    if replay is not None:
        node.replay, node.value = replay, None
        if n <= 8:
            _set_args(node, _NONE_ARGS, n, None)
        else:
            _set_args(node, NULL, n, (None,) * n)


for _i in range(8):
    _NONE_ARGS[_i] = <PyObject*>None


def backward_pass(object g, object end_node, bint consume=False, list roots=None):
    """The cotangent of the root given ``g`` for ``end_node``; None if nothing reaches it.

    ``consume=True`` releases every node as soon as it is processed (single-use graphs).
    With ``roots`` (a list of the graph's root nodes, for a trace that started from several
    boxes), a list of their cotangents in that order (None where nothing reaches), every
    array among them one the caller alone holds (copied unless the pass made it)."""
    found = _CONFLICT
    if type(end_node) is VJPNode:
        found = _backward_on_nodes(g, <VJPNode>end_node, consume, roots)
    if found is _CONFLICT:
        return backward_pass_with_dicts(g, end_node, consume, roots)
    return found if roots is None else [None if f is None else _own(f[0], f[1]) for f in found]


cdef object _CONFLICT = object()   # the graph has other node types, or another pass is using its nodes
cdef unsigned long long _last_pass = 0   # stamps of node passes: only ever incremented with the GIL held
cdef set _active_passes = set()   # stamps of the node passes running now (any thread)


cdef object _backward_on_nodes(object g, VJPNode end, bint consume, list roots):
    """The pass with its bookkeeping in the nodes: ``waiting`` (consumers not done yet),
    ``pending`` (the sum of their cotangents so far; ``owned``: an array this pass made)
    and ``stamp`` (the pass these belong to).  No list of the nodes is kept: each can be
    freed once done (memory and cache traffic stay flat on long graphs).  -> the root's
    cotangent, or with ``roots`` their (cotangent, owned) or None; _CONFLICT before
    computing anything if the nodes cannot be used."""
    global _last_pass
    _last_pass += 1
    cdef unsigned long long stamp = _last_pass
    cdef VJPNode node
    cdef PyObject* parent
    cdef fg_node_stack ready    # nodes whose consumers are all done
    cdef Py_ssize_t k, nparents
    cdef tuple argnums
    cdef dict memo = None   # outputs recomputed for nodes with a replay (made when one needs it)
    fg_stack_init(&ready, True)
    _active_passes.add(stamp)
    try:
        if not _count_consumers(end, stamp):
            return _CONFLICT
        end.pending, end.owned = g, False
        result = None
        fg_stack_push(&ready, end)
        while ready.top:
            node = <VJPNode>fg_stack_pop_owned(&ready)   # all its consumers are done: its cotangent is complete
            g, node.pending = node.pending, None
            nparents = node.nparents
            if g is not None:
                if node.owned and not _is_fast(type(g)):
                    g = _readable(g)
                if nparents == 0:   # a root
                    if roots is None:
                        result = g
                    else:
                        node.pending = g   # collected below (node.owned says whose it is)
                elif type(node.rule) is VJPRule and node.replay is None and _hooks.debug is None:
                    # (_pull_back's commonest case, here: by the rule's C tables, no list made)
                    argnums = node.parent_argnums
                    for k in range(nparents):
                        if k == 0 and (<VJPRule>node.rule).kernel_reads[0] == READS_SCATTER \
                                and _added_at_index(node, <VJPNode>_parent(node, 0), g):
                            continue
                        # the last parent's cotangent may go into g's float64 when nothing
                        # else holds g (_reuse_float64): a chain allocates no cotangents
                        cot = _rule_cotangent(<VJPRule>node.rule, <object>PyTuple_GET_ITEM(argnums, k), g, node,
                                              k == nparents - 1 and Py_REFCNT(g) == 1)
                        if cot is not None:
                            _add_to_node(<VJPNode>_parent(node, k), cot)
                            cot = None   # (the next node's g may be this object: its only holder is then the sum)
                else:
                    if node.replay is not None and memo is None:
                        memo = {}
                    _pull_back(node, g, memo)
            if memo is not None:
                memo.pop(node, None)   # its consumers, the only readers, are all done
            for k in range(nparents):
                parent = _parent_ptr(node, k)   # (borrowed: the pass holds no node but ``node``)
                (<VJPNode>parent).waiting = (<VJPNode>parent).waiting - 1
                if (<VJPNode>parent).waiting == 0:
                    fg_stack_push(&ready, <object>parent)
            if nparents or roots is None:
                node.stamp = 0   # (a root keeps it, meaning "reached by this pass", until collected)
            if consume:
                if Py_REFCNT(node) > 1:   # held elsewhere too: drop what it holds now
                    _release(node)
                node = None   # else it is freed here, and what it holds with it (no None stored first)
        if roots is not None:
            return [_take_root(<VJPNode?>r, stamp) for r in roots]
        return result
    finally:
        fg_stack_free(&ready)   # (nodes left on it after an error)
        _active_passes.discard(stamp)


cdef bint _count_consumers(VJPNode end, unsigned long long stamp) except -1:
    """Mark the graph for this pass, each node's ``waiting`` its number of consumers in it.
    False if a node is of another type or in use by another pass (the nodes marked so far
    keep a stamp that is stale once this pass ends: the next pass overwrites it).  No
    Python code runs meanwhile: no other thread can mark nodes in between."""
    cdef PyObject* node
    cdef PyObject* parent
    cdef fg_node_stack stack   # (borrowed: the graph holds its nodes)
    cdef Py_ssize_t k
    if _in_use(end, stamp):
        return False
    end.stamp, end.waiting = stamp, 0
    fg_stack_init(&stack, False)
    try:
        fg_stack_push(&stack, end)
        while stack.top:
            node = fg_stack_pop_borrowed(&stack)
            for k in range((<VJPNode>node).nparents):
                parent = _parent_ptr(<VJPNode>node, k)
                if <PyObject*>Py_TYPE(<object>parent) != <PyObject*>VJPNode or _in_use(<VJPNode>parent, stamp):
                    return False
                if (<VJPNode>parent).stamp == stamp:
                    (<VJPNode>parent).waiting = (<VJPNode>parent).waiting + 1
                else:
                    (<VJPNode>parent).stamp = stamp
                    (<VJPNode>parent).waiting = 1
                    if (<VJPNode>parent).pending is not None:
                        (<VJPNode>parent).pending = None
                    fg_stack_push(&stack, <object>parent)
        return True
    finally:
        fg_stack_free(&stack)


cdef inline bint _in_use(VJPNode p, unsigned long long stamp):
    """p's fields belong to another pass that is still running."""
    return p.stamp != 0 and p.stamp != stamp and p.stamp in _active_passes


# Stacks of nodes in C: the stacks of a chain-like graph swing between 0 and 2 nodes at
# every node, which a list does with a store of None and two reference counts per pop.
cdef extern from *:
    """
    /* A stack of node pointers, in place for the first 64.  ``owns``: the stack holds a
       reference to each node on it (fg_stack_pop hands it to the caller); else it borrows
       them, for a walk during which no Python code runs and the graph holds every node. */
    typedef struct {
        PyObject **items;
        Py_ssize_t top, size;
        int owns;
        PyObject *first[64];
    } fg_node_stack;

    static void fg_stack_init(fg_node_stack *s, int owns) {
        s->items = s->first;
        s->top = 0;
        s->size = 64;
        s->owns = owns;
    }

    static int fg_stack_push(fg_node_stack *s, PyObject *node) {
        if (s->top == s->size) {
            PyObject **bigger = PyMem_Malloc(2 * s->size * sizeof(PyObject *));
            if (bigger == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            memcpy(bigger, s->items, s->top * sizeof(PyObject *));
            if (s->items != s->first)
                PyMem_Free(s->items);
            s->items = bigger;
            s->size *= 2;
        }
        if (s->owns)
            Py_INCREF(node);
        s->items[s->top++] = node;
        return 0;
    }

    /* the node on top (a new reference if the stack owns its nodes, else borrowed) */
    static PyObject *fg_stack_pop(fg_node_stack *s) {
        return s->items[--s->top];
    }

    /* empty the stack (dropping its references) and free its memory */
    static void fg_stack_free(fg_node_stack *s) {
        if (s->owns)
            while (s->top)
                Py_DECREF(s->items[--s->top]);
        if (s->items != s->first)
            PyMem_Free(s->items);
        s->items = s->first;
        s->top = 0;
    }
    """
    ctypedef struct fg_node_stack:
        Py_ssize_t top
    void fg_stack_init(fg_node_stack* s, bint owns)
    int fg_stack_push(fg_node_stack* s, object node) except -1
    object fg_stack_pop_owned "fg_stack_pop"(fg_node_stack* s)   # (a new reference)
    PyObject* fg_stack_pop_borrowed "fg_stack_pop"(fg_node_stack* s)
    void fg_stack_free(fg_node_stack* s)


cdef int _pull_back(VJPNode node, object g, dict memo) except -1:
    """The node's rule pulls ``g`` back to its parents; each adds it to its pending sum."""
    debug = _hooks.debug   # (read once for the node: the checks in force when it began)
    if debug is not None:
        debug.before_backward(node)
    for p, argnum, cot in zip(node.parents, node.parent_argnums, _node_vjp(node, g, memo)):
        if debug is not None:
            debug.checked(node, argnum, g, cot)
        if cot is not None:
            _add_to_node(<VJPNode>p, cot)
    return 0


cdef inline object _rule_cotangent(VJPRule rule, object argnum, object g, VJPNode node,
                                   bint g_is_spare):
    """rule.one(argnum, g, ...) for the node, by the C tables when argnum is small
    (``g_is_spare``: as for _vjp_by_kernel)."""
    cdef Py_ssize_t i = <Py_ssize_t>argnum if type(argnum) is int else -1   # (inlined for small ints)
    cdef PyObject* buffer[2]
    if 0 <= i < 8:
        return rule.rule_for(i, g, node.value, _node_argv(node, buffer), node.nargs, node._kwargs,
                             g_is_spare)
    return rule.one(argnum, g, node.value, node.args, node._kwargs)


cdef inline int _add_to_node(VJPNode parent, object cot) except -1:
    cdef bint owned
    cdef PyObject* prev = <PyObject*>parent.pending   # (borrowed: the node holds it)
    cdef double total, term
    if prev == <PyObject*>None:
        parent.pending = _first_contribution(cot, &owned)
    elif <PyObject*>Py_TYPE(<object>prev) == <PyObject*>_float64 and Py_REFCNT(<object>prev) == 1 \
            and _is_scalar_term(cot, &term):
        # a float64 sum that only the node holds takes the next scalar term in place
        # (_reuse_float64); an inexact sum goes the general way, where NumPy warns
        if not fg_sum(PyFloat_AS_DOUBLE(<object>prev), term, &total):
            parent.pending = _accumulate(parent.pending, parent.owned, cot, &owned)
        else:
            _reuse_float64(<object>prev, total)
            owned = True
    else:
        parent.pending = _accumulate(parent.pending, parent.owned, cot, &owned)
    parent.owned = owned
    return 0


cdef inline object _take_root(VJPNode root, unsigned long long stamp):
    """(cotangent, owned) of a root this pass reached with a cotangent, else None."""
    if root.stamp != stamp or root.pending is None:
        return None
    found = (root.pending, root.owned)
    root.pending, root.stamp = None, 0
    return found


# ---- the same pass with its bookkeeping in dicts -------------------------------------------

def backward_pass_with_dicts(object g, object end_node, bint consume=False, list roots=None):
    """What backward_pass gives, by a pass over toposort's order with the pending sums in a
    dict: for graphs with node types of the user's, and for a second pass over a graph that
    another pass is using (public so that tests can run both algorithms on any graph)."""
    cdef list order = toposort(end_node)
    cdef dict pending = {end_node: g}, reached = {}
    cdef set owned = set()
    cdef PyObject* found
    cdef bint is_owned, is_vjp_node
    cdef dict memo = {}     # outputs recomputed for nodes with a replay
    result = None
    for idx in range(len(order)):
        node = order[idx]
        found = PyDict_GetItem(pending, node)
        if found is NULL:
            if memo:
                memo.pop(node, None)
            continue
        g = <object>found
        PyDict_DelItem(pending, node)
        if not _is_fast(type(g)) and node in owned:
            g = _readable(g)
        parents = _parents_of(node)
        if not parents:
            result = g
            reached[node] = (g, node in owned)
            continue
        is_vjp_node = type(node) is VJPNode
        debug = _hooks.debug if is_vjp_node else None
        if debug is not None:
            debug.before_backward(node)
        cots = _node_vjp(<VJPNode>node, g, memo) if is_vjp_node else node.vjp(g)
        if memo:
            memo.pop(node, None)   # its consumers, the only other readers, are all done
        for k, (parent, cot) in enumerate(zip(parents, cots)):
            if debug is not None:
                debug.checked(node, (<VJPNode>node).parent_argnums[k], g, cot)
            if cot is None:
                continue
            found = PyDict_GetItem(pending, parent)
            if found is NULL:
                total = _first_contribution(cot, &is_owned)
            else:
                total = _accumulate(<object>found, parent in owned, cot, &is_owned)
            pending[parent] = total
            if is_owned:
                owned.add(parent)
            else:
                owned.discard(parent)
        if consume and is_vjp_node and not _in_use(<VJPNode>node, 0):   # (not one a node pass is using)
            _release(<VJPNode>node)
    if roots is None:
        return result
    taken = [reached.get(r) for r in roots]
    return [None if t is None else _own(t[0], t[1]) for t in taken]
