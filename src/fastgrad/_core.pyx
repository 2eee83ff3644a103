# The compiled engine: the per-primitive and per-node work of differentiation.
#
# Same names and algorithms as _core_py.py (read that first: it is the specification).
# What differs is only how: C fields instead of attributes, tuples built in place,
# rules called through vectorcall, cotangent sums with exact-type fast paths, and C
# kernels for float64 scalars (_scalar_kernels.pxi; the pure engine has none).
cimport cython
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_DECREF, Py_REFCNT
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from cpython.dict cimport PyDict_GetItem, PyDict_DelItem
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.long cimport PyLong_AsSsize_t
from libc.string cimport memcmp, memcpy
cimport numpy as cnp

cnp.import_array()   # NumPy's C API: array metadata read from the struct (no attribute lookups)

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
cdef enum:
    K_ZERO = 0      # the same kinds, as C constants
    K_MAKER = 1
    K_DIRECT = 2
    K_SAME = 3
    MAX_STACK_ARGS = 8

cdef dict _vjps = primitive_vjps
cdef dict _jvps = primitive_jvps
cdef dict _box_types = {}       # value type -> Box subclass (Box.type_mappings)
cdef set _plain_box_types = set()   # Box subclasses without their own __init__: filled in C
cdef long long _last_trace = 0  # trace ids: only ever incremented with the GIL held
cdef object _generic_add = None # set by core: (prev or None, prev_owned, g) -> (sum, owned)
cdef object _sparse_type = None # set by core: the sparse cotangent type, added in place via .mut_add
cdef object _start_sum = None   # set by builtins: sparse g -> the first term of a sum it starts
cdef object _finish_sum = None  # set by builtins: an owned non-scalar sum -> the value rules may read
cdef object _debug = None       # debug-mode checks (see fastgrad._debug), or None: one test per node
cdef object _recompute_record = None      # fastgrad._recompute.record while a recompute block is open
cdef object _recompute_cotangents = None  # fastgrad._recompute.cotangents: backward of a node with a replay
cdef tuple _EMPTY = ()
cdef object _ndarray = ndarray
cdef object _float64 = float64


cdef extern from "Python.h":
    int PyGC_Enable()
    int PyGC_Disable()

cdef Py_ssize_t _gc_pauses = 0     # differentiations in progress (all threads, nested included)
cdef int _gc_was_enabled = 0       # the collector's state before the outermost one began


cdef extern from "_buffer_cache.h":
    void fg_cache_begin()
    void fg_cache_end()
    void fg_cache_release()
    Py_ssize_t fg_cache_kept_count()
    size_t fg_cache_kept_total()
    Py_ssize_t fg_cache_user_count()
    bint fg_cache_installed()


def pause_gc():
    """Stop the cyclic collector until the matching resume_gc (counted, so nested and
    concurrent differentiations restore it exactly once), and keep large freed array
    buffers for reuse meanwhile (_buffer_cache.h).  Atomic under the GIL."""
    global _gc_pauses, _gc_was_enabled
    if _gc_pauses == 0:
        _gc_was_enabled = PyGC_Disable()
    _gc_pauses += 1
    fg_cache_begin()


def resume_gc():
    global _gc_pauses
    if _gc_pauses > 0:
        _gc_pauses -= 1
        fg_cache_end()
        if _gc_pauses == 0 and _gc_was_enabled:
            PyGC_Enable()


def buffer_cache_begin():
    """A gradient call of the pure engine begins: keep large freed buffers (it has no C of
    its own; the cache is an allocator, not part of the engine)."""
    fg_cache_begin()


def buffer_cache_end():
    """That call ends; after the last one, the kept buffers are freed (harmless extra calls)."""
    fg_cache_end()


def buffer_cache_release():
    """Free the buffers kept for the next gradient call (none while a call is in progress)."""
    fg_cache_release()


def buffer_cache_state():
    """(handler installed, gradient calls using it, buffers kept, bytes kept)."""
    return fg_cache_installed(), fg_cache_user_count(), fg_cache_kept_count(), fg_cache_kept_total()


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


def set_cotangent_sum_hooks(start, finish):
    """``start(g)``: the sum a sparse cotangent g starts (default ``g.mut_add(g.vs.zeros())``);
    ``finish(total)``: what an owned sum that is not a scalar or an array becomes before a
    rule reads it (default: itself).  None restores a default."""
    global _start_sum, _finish_sum
    _start_sum, _finish_sum = start, finish


def set_recompute_hooks(record, cotangents):
    """Install fastgrad._recompute's entries (``record`` None: no block is open)."""
    global _recompute_record, _recompute_cotangents
    _recompute_record, _recompute_cotangents = record, cotangents


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
        global _cached_value_type
        Box.types.add(cls)
        _box_types[value_type] = cls
        _box_types[cls] = cls   # a box of a box (higher order) gets the same box type
        if cls.__init__ is Box.__init__:
            _plain_box_types.add(cls)
        else:
            _plain_box_types.discard(cls)
        _cached_value_type = None


# The last value type boxed and its box type: most boxes of a program are of one type
# (ArrayBox), so two dict/set lookups per box become one pointer comparison.  Box.register
# resets it (the mappings are changed through it).
cdef object _cached_value_type = None
cdef object _cached_box_type = None
cdef bint _cached_plain = False


cdef inline object _new_box(object value, long long trace, object node):
    global _cached_value_type, _cached_box_type, _cached_plain
    tp = type(value)
    if tp is not _cached_value_type:
        found = PyDict_GetItem(_box_types, tp)
        box_type = <object>found if found is not NULL else _box_type_of_subclass(tp)
        _cached_value_type, _cached_box_type = tp, box_type
        _cached_plain = box_type in _plain_box_types
    if not _cached_plain:
        return _cached_box_type(value, trace, node)
    cdef Box box = (<PyTypeObject*>_cached_box_type).tp_new(_cached_box_type, <PyObject*>_EMPTY, NULL)
    box._value = value
    box._trace = trace
    box._node = node
    return box


cdef inline bint _is_box(object a):
    """isinstance(a, Box), deciding the commonest types (the cached box type, floats,
    arrays) without walking the type's MRO."""
    tp = type(a)
    if tp is _cached_box_type:
        return True
    if tp is _float64 or tp is float or tp is _ndarray:
        return False
    return isinstance(a, Box)


cdef object _box_type_of_subclass(object tp):
    """The box type of the nearest registered base of ``tp`` (e.g. a named tuple's tuple),
    remembered for ``tp``; TypeError if there is none."""
    for base in tp.__mro__[1:]:
        if base in _box_types:
            _box_types[tp] = _box_types[base]
            return _box_types[base]
    raise TypeError(_cannot_differentiate_type(tp))


# ---- operators of array-like boxes, without a Python frame per operator ------------------

cdef enum:                      # the operators, as indices into _fast_ops / _general_ops
    OP_ADD, OP_SUB, OP_MUL, OP_TRUEDIV, OP_POW, OP_MOD, OP_MATMUL, OP_NEG, N_OPS
_OP_NAMES = ("add", "sub", "mul", "truediv", "pow", "mod", "matmul", "neg")

cdef list _fast_ops = [None] * N_OPS     # operator -> primitive for fast value types (None: not set)
cdef list _general_ops = [None] * N_OPS  # operator -> primitive for every other case
cdef object _fast_value_types = frozenset()     # box values whose operators may use the fast one
cdef bint _fast_ndarray = False, _fast_float64 = False   # ndarray / float64 are among them
cdef tuple _general_other_types = ()            # other operands that always take the general one


def set_box_arithmetic(ops, fast_value_types, general_other_types):
    """Give ArithmeticBox its operators: ``ops[name] = (fast, general)`` primitives for the
    names add sub mul truediv pow mod matmul neg.  The fast one is used when the box's
    value type is in ``fast_value_types`` and the other operand's type is not in
    ``general_other_types``."""
    global _fast_value_types, _general_other_types, _fast_ndarray, _fast_float64
    for i, name in enumerate(_OP_NAMES):
        _fast_ops[i], _general_ops[i] = ops.get(name, (None, None))
    _fast_value_types = frozenset(fast_value_types)
    _fast_ndarray, _fast_float64 = _ndarray in _fast_value_types, _float64 in _fast_value_types
    _general_other_types = tuple(general_other_types)


cdef inline bint _fast_operands(object value, object other):
    """The fast primitive applies: the box's value type is a fast one (arrays and NumPy
    scalars, checked by pointer first) and the other operand is not a general type."""
    tv = type(value)
    if tv is _ndarray:
        if not _fast_ndarray:
            return False
    elif tv is _float64:
        if not _fast_float64:
            return False
    elif tv not in _fast_value_types:
        return False
    to = type(other)
    for t in _general_other_types:
        if to is t:
            return False
    return True


cdef object _box_binop(int op, object box, object other, bint reflected):
    prim = _fast_ops[op] if _fast_operands((<Box>box)._value, other) else _general_ops[op]
    if prim is None:
        return NotImplemented
    cdef PyObject* argv[2]
    if reflected:
        argv[0], argv[1] = <PyObject*>other, <PyObject*>box
    else:
        argv[0], argv[1] = <PyObject*>box, <PyObject*>other
    if isinstance(prim, Primitive):
        return _call_primitive(<Primitive>prim, argv, 2, NULL)
    return PyObject_Vectorcall(prim, argv, 2, NULL)


_POW_MODULO = "pow() with a modulus is not differentiable (use x ** y % m on floats instead)"


cdef class ArithmeticBox(Box):
    """A Box whose arithmetic operators call the primitives given to set_box_arithmetic."""

    def __add__(self, other):
        return _box_binop(OP_ADD, self, other, False)

    def __radd__(self, other):
        return _box_binop(OP_ADD, self, other, True)

    def __sub__(self, other):
        return _box_binop(OP_SUB, self, other, False)

    def __rsub__(self, other):
        return _box_binop(OP_SUB, self, other, True)

    def __mul__(self, other):
        return _box_binop(OP_MUL, self, other, False)

    def __rmul__(self, other):
        return _box_binop(OP_MUL, self, other, True)

    def __truediv__(self, other):
        return _box_binop(OP_TRUEDIV, self, other, False)

    def __rtruediv__(self, other):
        return _box_binop(OP_TRUEDIV, self, other, True)

    def __pow__(self, other, modulo):
        if modulo is not None:
            raise TypeError(_POW_MODULO)
        return _box_binop(OP_POW, self, other, False)

    def __rpow__(self, other, modulo):
        if modulo is not None:
            raise TypeError(_POW_MODULO)
        return _box_binop(OP_POW, self, other, True)

    def __mod__(self, other):
        return _box_binop(OP_MOD, self, other, False)

    def __rmod__(self, other):
        return _box_binop(OP_MOD, self, other, True)

    def __matmul__(self, other):
        return _box_binop(OP_MATMUL, self, other, False)

    def __rmatmul__(self, other):
        return _box_binop(OP_MATMUL, self, other, True)

    def __neg__(self):
        prim = _fast_ops[OP_NEG] if _fast_operands(self._value, None) else _general_ops[OP_NEG]
        if prim is None:
            return NotImplemented
        return prim(self)


# A Python subclass of ArithmeticBox (ArrayBox) gets CPython's generic slot functions,
# which look the operator up by name and call it as a method on every `a * b`.  Giving
# the subclass ArithmeticBox's own C slots skips that (W1: ~5% of the forward pass).
cdef extern from *:
    """
    static void fg_copy_number_slot(PyObject *dst, PyObject *src, int which) {
        PyNumberMethods *d = ((PyTypeObject *)dst)->tp_as_number;
        PyNumberMethods *s = ((PyTypeObject *)src)->tp_as_number;
        switch (which) {
            case 0: d->nb_add = s->nb_add; break;
            case 1: d->nb_subtract = s->nb_subtract; break;
            case 2: d->nb_multiply = s->nb_multiply; break;
            case 3: d->nb_true_divide = s->nb_true_divide; break;
            case 4: d->nb_power = s->nb_power; break;
            case 5: d->nb_remainder = s->nb_remainder; break;
            case 6: d->nb_matrix_multiply = s->nb_matrix_multiply; break;
            case 7: d->nb_negative = s->nb_negative; break;
        }
        PyType_Modified((PyTypeObject *)dst);
    }
    """
    void fg_copy_number_slot(object dst, object src, int which)

_SLOT_METHODS = (("__add__", "__radd__"), ("__sub__", "__rsub__"), ("__mul__", "__rmul__"),
                 ("__truediv__", "__rtruediv__"), ("__pow__", "__rpow__"), ("__mod__", "__rmod__"),
                 ("__matmul__", "__rmatmul__"), ("__neg__",))


def use_compiled_operators(cls):
    """Make the Python subclass ``cls`` of ArithmeticBox run its operators through
    ArithmeticBox's C slots, for each operator ``cls`` does not override."""
    if not (isinstance(cls, type) and issubclass(cls, ArithmeticBox)):
        raise TypeError("use_compiled_operators needs a subclass of ArithmeticBox")
    for which, names in enumerate(_SLOT_METHODS):
        if all(getattr(cls, n) is getattr(ArithmeticBox, n) for n in names):
            fg_copy_number_slot(cls, ArithmeticBox, which)


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

    def __cinit__(self, *args, **kwargs):
        # the C entry for calls from Python, for the two engine types only (a Python
        # subclass may define its own __call__, which vectorcall would skip)
        if type(self) is Primitive:
            self._vectorcall = FG_PRIMITIVE_VECTORCALL
        elif type(self) is NotracePrimitive:
            self._vectorcall = FG_NOTRACE_VECTORCALL

    def __init__(self, fun):
        self.fun = fun
        self._notrace_types = None
        for name, value in getattr(fun, "__dict__", {}).items():
            setattr(self, name, value)
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(self, attr, getattr(fun, attr, None))
        self.__wrapped__ = fun

    def __call__(self, *args, **kwargs):
        # Calls normally arrive through the C entries below (vectorcall or tp_call).
        return _call_primitive(self, fg_tuple_items(args), len(args), <PyObject*>kwargs if kwargs else NULL)

    def __get__(self, obj, objtype):
        return self if obj is None else _types.MethodType(self, obj)

    def __repr__(self):
        return "<fastgrad primitive {}>".format(getattr(self, "__name__", None))


cdef class NotracePrimitive(Primitive):
    """A primitive that is never recorded: boxes are unwrapped and the raw function is called."""

    def __call__(self, *args, **kwargs):
        return _call_notrace(self, fg_tuple_items(args), len(args), <PyObject*>kwargs if kwargs else NULL)


cdef object _call_primitive(Primitive self, PyObject** argv, Py_ssize_t n, PyObject* kw):
    """Call ``self`` on the ``n`` arguments at ``argv`` (and the keyword dict ``kw``, or NULL),
    recording a node if any argument is a box: the innermost trace's boxes are unboxed and
    become the node's parents."""
    cdef Py_ssize_t i, j, count = 0
    cdef long long top = -1, t
    cdef object a, node_type = None
    for i in range(n):
        a = <object>argv[i]
        if _is_box(a):
            t = (<Box>a)._trace
            if t > top:
                top, count, node_type = t, 1, type((<Box>a)._node)
            elif t == top:
                count += 1
    if top < 0:
        return _call_raw(self, argv, n, kw)

    # Unbox the arguments of the innermost trace; note whether any box is left.  One
    # parent is kept as the node itself, more in a tuple.  The unboxed values go into a
    # C array (borrowed from their boxes, which the caller holds): the node keeps up to two
    # of them without a tuple.
    cdef PyObject* vals_on_stack[MAX_STACK_ARGS]
    cdef PyObject** vals = vals_on_stack
    cdef tuple vals_tuple = None
    cdef tuple argnums
    cdef object parents = PyTuple_New(count) if count > 1 else None
    cdef bint boxes_left = False
    cdef unsigned int mask = 0     # which of the first 8 arguments are boxed, to share argnums tuples
    if n > MAX_STACK_ARGS:
        vals_tuple = _tuple_of(argv, n)
        vals = fg_tuple_items(vals_tuple)
    j = 0
    for i in range(n):
        a = <object>argv[i]
        if _is_box(a):
            if (<Box>a)._trace == top:
                node = (<Box>a)._node
                if count == 1:
                    parents = node
                else:
                    Py_INCREF(node)
                    PyTuple_SET_ITEM(parents, j, node)
                mask |= (1u << i) if i < 8 else 0x100u
                j += 1
                a = (<Box>a)._value
                if _is_box(a):
                    boxes_left = True
                if vals_tuple is not None:      # replace the box by its value in the tuple
                    Py_INCREF(a)
                    Py_DECREF(<object>vals[i])
                    PyTuple_SET_ITEM(vals_tuple, i, a)
            else:
                boxes_left = True
        if vals_tuple is None:
            vals[i] = <PyObject*>a

    argnums = _argnums_of(argv, n, top, mask)
    if boxes_left:   # boxes of outer traces: dispatch again, outermost last
        ans = PyObject_Call(self, _tuple_of(vals, n) if vals_tuple is None else vals_tuple, kw)
    else:
        ans = _call_raw(self, vals, n, kw)
    if self._notrace_types is not None and node_type in self._notrace_types:
        return ans
    kwargs = <object>kw if kw is not NULL else None
    if node_type is VJPNode:
        node = _vjp_node(ans, self, vals, n, kwargs, argnums, parents, count)
    else:
        node = node_type(ans, self, _tuple_of(vals, n) if vals_tuple is None else vals_tuple,
                         {} if kwargs is None else kwargs, argnums,
                         (parents,) if count == 1 else parents)
    return _new_box(ans, top, node)


cdef inline object _call_raw(Primitive self, PyObject** argv, Py_ssize_t n, PyObject* kw):
    """``self.fun(*argv[:n], **kw)``: by the primitive's scalar kernel when it has one and
    the arguments are float64 / float scalars, else by calling ``fun``."""
    if kw is NULL:
        if self.kernel_fun is not None and self.kernel_fun is self.fun:
            ans = _by_kernel(self, argv, n)
            if ans is not None:
                return ans
        return PyObject_Vectorcall(self.fun, argv, n, NULL)
    return PyObject_Call(self.fun, _tuple_of(argv, n), kw)


cdef tuple _tuple_of(PyObject** argv, Py_ssize_t n):
    cdef tuple t = PyTuple_New(n)
    for i in range(n):
        Py_INCREF(<object>argv[i])
        PyTuple_SET_ITEM(t, i, <object>argv[i])
    return t


cdef list _argnums_by_mask = [tuple([i for i in range(8) if m & (1 << i)]) for m in range(256)]

cdef tuple _argnums_of(PyObject** argv, Py_ssize_t n, long long top, unsigned int mask):
    """Positions of the boxes of trace ``top`` among the arguments: one shared tuple per
    pattern among the first 8 arguments (recording stores no tuple of its own)."""
    if mask < 256:
        return <tuple>_argnums_by_mask[mask]
    return tuple([i for i in range(n) if isinstance(<object>argv[i], Box)
                  and (<Box><object>argv[i])._trace == top])


cdef object _call_notrace(Primitive self, PyObject** argv, Py_ssize_t n, PyObject* kw):
    cdef Py_ssize_t i
    cdef tuple argvals = PyTuple_New(n)
    for i in range(n):
        a = getval(<object>argv[i])
        Py_INCREF(a)
        PyTuple_SET_ITEM(argvals, i, a)
    return PyObject_Call(self.fun, argvals, kw)


# Calls from Python reach the two primitive types through vectorcall: CPython passes the
# arguments as an array (no tuple is made per call) and keyword names separately (turned
# into a dict only when there are keywords; the node keeps None otherwise).  tp_call, for
# callers that build a tuple anyway, passes the tuple's item array.
cdef extern from *:
    """
    typedef PyObject *(*fg_callfunc)(PyObject *, PyObject **, Py_ssize_t, PyObject *);
    static fg_callfunc fg_primitive_impl = NULL, fg_notrace_impl = NULL;
    static PyObject **fg_tuple_items(PyObject *t) { return ((PyTupleObject *)t)->ob_item; }
    static PyObject *fg_call_keywords(fg_callfunc impl, PyObject *self, PyObject *const *args,
                                      size_t nargsf, PyObject *kwnames) {
        Py_ssize_t n = PyVectorcall_NARGS(nargsf), i, nkw;
        PyObject *kw, *result;
        if (kwnames == NULL || (nkw = PyTuple_GET_SIZE(kwnames)) == 0)
            return impl(self, (PyObject **)args, n, NULL);
        kw = PyDict_New();
        if (kw == NULL) return NULL;
        for (i = 0; i < nkw; i++) {
            if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[n + i]) < 0) {
                Py_DECREF(kw);
                return NULL;
            }
        }
        result = impl(self, (PyObject **)args, n, kw);
        Py_DECREF(kw);
        return result;
    }
    static PyObject *fg_primitive_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                             PyObject *kwnames) {
        return fg_call_keywords(fg_primitive_impl, self, args, nargsf, kwnames);
    }
    static PyObject *fg_notrace_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                           PyObject *kwnames) {
        return fg_call_keywords(fg_notrace_impl, self, args, nargsf, kwnames);
    }
    static PyObject *fg_primitive_tp_call(PyObject *self, PyObject *args, PyObject *kw) {
        return fg_primitive_impl(self, fg_tuple_items(args), PyTuple_GET_SIZE(args),
                                 (kw && PyDict_GET_SIZE(kw)) ? kw : NULL);
    }
    static PyObject *fg_notrace_tp_call(PyObject *self, PyObject *args, PyObject *kw) {
        return fg_notrace_impl(self, fg_tuple_items(args), PyTuple_GET_SIZE(args),
                               (kw && PyDict_GET_SIZE(kw)) ? kw : NULL);
    }
    #define FG_PRIMITIVE_VECTORCALL ((void *)fg_primitive_vectorcall)
    #define FG_NOTRACE_VECTORCALL ((void *)fg_notrace_vectorcall)
    static void fg_install_calls(PyObject *primitive_type, PyObject *notrace_type,
                                 Py_ssize_t vectorcall_offset) {
        PyTypeObject *types[2] = {(PyTypeObject *)primitive_type, (PyTypeObject *)notrace_type};
        for (int i = 0; i < 2; i++) {
            types[i]->tp_vectorcall_offset = vectorcall_offset;
            types[i]->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
            PyType_Modified(types[i]);
        }
        types[0]->tp_call = fg_primitive_tp_call;
        types[1]->tp_call = fg_notrace_tp_call;
    }
    """
    ctypedef PyObject* (*fg_callfunc)(PyObject*, PyObject**, Py_ssize_t, PyObject*)
    fg_callfunc fg_primitive_impl
    fg_callfunc fg_notrace_impl
    PyObject** fg_tuple_items(tuple t)
    void* FG_PRIMITIVE_VECTORCALL
    void* FG_NOTRACE_VECTORCALL
    void fg_install_calls(object primitive_type, object notrace_type, Py_ssize_t vectorcall_offset)

fg_primitive_impl = <fg_callfunc>_call_primitive
fg_notrace_impl = <fg_callfunc>_call_notrace
cdef Primitive _probe = Primitive.__new__(Primitive, None)   # for the field's offset
fg_install_calls(Primitive, NotracePrimitive, <char*>&_probe._vectorcall - <char*><PyObject*>_probe)
_probe = None


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


cdef object _call_with(object f, object first, object second, bint two, PyObject** argv,
                       Py_ssize_t n, dict kwargs):
    """f(first[, second], *argv[:n], **kwargs) without building a tuple when it can be avoided."""
    cdef Py_ssize_t i, lead = 2 if two else 1
    cdef PyObject* stack[MAX_STACK_ARGS + 2]
    if not kwargs and n <= MAX_STACK_ARGS:
        stack[0] = <PyObject*>first
        stack[1] = <PyObject*>second
        for i in range(n):
            stack[lead + i] = argv[i]
        return PyObject_Vectorcall(f, stack, n + lead, NULL)
    cdef tuple full = PyTuple_New(n + lead)
    Py_INCREF(first)
    PyTuple_SET_ITEM(full, 0, first)
    if two:
        Py_INCREF(second)
        PyTuple_SET_ITEM(full, 1, second)
    for i in range(n):
        a = <object>argv[i]
        Py_INCREF(a)
        PyTuple_SET_ITEM(full, lead + i, a)
    return PyObject_Call(f, full, <PyObject*>kwargs if kwargs else NULL)


@cython.final
cdef class VJPRule:
    """The reverse rules of one primitive, one per argument: (kind, function) by argnum."""

    def __init__(self, fun, dict entries, bint saves_ans=True, bint saves_args=True):
        cdef Py_ssize_t i
        self.fun = fun
        self.entries = entries
        self.saves_ans = saves_ans
        self.saves_args = saves_args
        funcs = [None] * 8
        for i in range(8):
            self.kinds[i] = -1
        for argnum, (kind, f) in entries.items():
            if type(argnum) is int and 0 <= argnum < 8:
                self.kinds[argnum], funcs[argnum] = kind, f
        self.funcs = tuple(funcs)
        self.kernels[0] = self.kernels[1] = NULL
        self.kernel_reads[0] = self.kernel_reads[1] = 0

    cdef object rule_for(self, Py_ssize_t i, object g, object ans, PyObject** argv, Py_ssize_t n,
                         dict kwargs):
        """``one`` for an argnum 0 <= i < 8 and the arguments ``argv[:n]``, from the C tables."""
        cdef int kind = self.kinds[i]
        if kind == K_DIRECT:
            if i < 2 and self.kernel_reads[i] != 0:
                cot = _vjp_by_kernel(self, i, g, ans, argv, n, kwargs)
                if cot is not None:
                    return cot
            return _call_with(<object>PyTuple_GET_ITEM(self.funcs, i), g, ans, True, argv, n, kwargs)
        if kind == K_MAKER:
            return _call_with(<object>PyTuple_GET_ITEM(self.funcs, i), ans, None, False, argv, n, kwargs)(g)
        if kind == K_ZERO:
            return None
        raise _missing("VJP", self.fun, (i,))

    cpdef object one(self, object argnum, object g, object ans, tuple args, dict kwargs):
        cdef Py_ssize_t i
        cdef Py_ssize_t n = PyTuple_GET_SIZE(args)
        if type(argnum) is int:
            i = PyLong_AsSsize_t(argnum)
            if 0 <= i < 8:
                return self.rule_for(i, g, ans, fg_tuple_items(args), n, kwargs)
        cdef PyObject* found = PyDict_GetItem(self.entries, argnum)
        if found is NULL:
            raise _missing("VJP", self.fun, (argnum,))
        kind, f = <object>found
        if kind == DIRECT:
            return _call_with(f, g, ans, True, fg_tuple_items(args), n, kwargs)
        if kind == MAKER:
            return _call_with(f, ans, None, False, fg_tuple_items(args), n, kwargs)(g)
        return None

    def __call__(self, argnums, ans, args, kwargs):   # autograd's vjp_argnums convention
        return lambda g: tuple([self.one(i, g, ans, args, kwargs) for i in argnums])


# Nodes are freed in long chains (a 10^6-primitive graph): the trashcan turns the nested
# deallocation of parent after parent into a loop, so a node may hold its single parent
# directly, without a tuple (48 bytes less per node).
@cython.final
@cython.trashcan(True)
cdef class VJPNode(Node):
    """A recorded primitive call, for the reverse mode."""

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        parents, args = tuple(parents), tuple(args)
        self.nparents = <int>len(parents)
        self._parents = parents[0] if self.nparents == 1 else parents
        self.parent_argnums, self.fun = tuple(parent_argnums), fun
        self.value, self._kwargs = value, dict(kwargs) if kwargs else None
        _set_args(self, fg_tuple_items(args), len(args), args)
        self.rule = _vjps.get(fun)   # looked up now: later registry edits do not apply

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


cdef inline PyObject** _node_argv(VJPNode node, PyObject** buffer):
    """The node's arguments as an array (``buffer`` holds two)."""
    if node.nargs > 2:
        return fg_tuple_items(node._args)
    buffer[0], buffer[1] = <PyObject*>node._arg0, <PyObject*>node._arg1
    return buffer


cdef inline void _release(VJPNode node):
    """Drop what a processed node holds (its parents, saved values and rule)."""
    node._parents, node.nparents = _EMPTY, 0
    node._arg0 = node._arg1 = node._args = None
    node.value = node._kwargs = node.rule = node.replay = None


cdef inline object _parent(VJPNode node, Py_ssize_t k):
    """The node's k-th parent (borrowed from the node)."""
    return node._parents if node.nparents == 1 else <object>PyTuple_GET_ITEM(node._parents, k)


cdef PyObject* _NONE_ARGS[8]     # what a rule that reads no arguments receives (filled at import)


cdef VJPNode _vjp_node(object ans, object fun, PyObject** argv, Py_ssize_t n, object kwargs,
                       tuple argnums, object parents, Py_ssize_t nparents):
    """A new node; ``parents`` is the parent itself when ``nparents`` is 1, else a tuple."""
    cdef VJPNode node = VJPNode.__new__(VJPNode)
    node._parents, node.nparents = parents, <int>nparents
    node.parent_argnums, node.fun = argnums, fun
    node.value, node._kwargs = ans, kwargs
    rule = _vjps.get(fun)
    node.rule = rule
    if type(rule) is VJPRule and not (<VJPRule>rule).saves_ans:
        node.value = None          # keep only what the rule reads (memory: W9 keeps half as much)
    if type(rule) is VJPRule and not (<VJPRule>rule).saves_args:
        if n <= 8:
            _set_args(node, _NONE_ARGS, n, None)
        else:
            _set_args(node, NULL, n, (None,) * n)
    else:
        _set_args(node, argv, n, None)
    if _debug is not None:
        _debug.recorded(node)
    elif _recompute_record is not None:
        _attach_replay(node, ans, argv, n, kwargs)
    return node


cdef void _attach_replay(VJPNode node, object ans, PyObject** argv, Py_ssize_t n,
                         object kwargs) except *:
    """Inside a recompute block: the node keeps a replay instead of its saved values."""
    replay = _recompute_record(node, ans, _tuple_of(argv, n), kwargs)
    if replay is not None:
        node.replay, node.value = replay, None
        if n <= 8:
            _set_args(node, _NONE_ARGS, n, None)
        else:
            _set_args(node, NULL, n, (None,) * n)


for _i in range(8):
    _NONE_ARGS[_i] = <PyObject*>None


cdef object _node_vjp(VJPNode node, object g, dict memo):
    """The node's cotangents; ``memo``: the running pass's recomputed outputs (or None)."""
    if node.replay is not None:
        return _recompute_cotangents(node, g, {} if memo is None else memo)
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


include "_scalar_kernels.pxi"


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


cdef inline bint _same_layout(object a, object b):
    """Two ndarrays of the same shape and dtype (a.shape == b.shape and a.dtype == b.dtype)."""
    cdef cnp.ndarray x = <cnp.ndarray>a, y = <cnp.ndarray>b
    cdef int nd = cnp.PyArray_NDIM(x)
    if nd != cnp.PyArray_NDIM(y):
        return False
    if nd and memcmp(cnp.PyArray_DIMS(x), cnp.PyArray_DIMS(y), nd * sizeof(cnp.npy_intp)) != 0:
        return False
    return <void*>cnp.PyArray_DESCR(x) == <void*>cnp.PyArray_DESCR(y) or x.dtype == y.dtype


def same_layout(a, b):
    """``a`` and ``b`` are ndarrays of the same shape and dtype (read from the arrays'
    structs: unbroadcast's test of whether a cotangent already fits its argument)."""
    return type(a) is _ndarray and type(b) is _ndarray and _same_layout(a, b)


cdef inline bint _exclusive(object a):
    """An ndarray (a rule's result) that nothing else can see: the caller holds the only
    reference, it owns its data and is writable.  The pass may then add into it, as into
    a sum it made itself.  Not a 0-d array: NumPy's arithmetic gives scalars for those,
    and a sum made in place would stay an array (the pure engine would give a scalar)."""
    return Py_REFCNT(a) == 1 and cnp.PyArray_NDIM(<cnp.ndarray>a) > 0 \
        and cnp.PyArray_BASE(<cnp.ndarray>a) is NULL and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>a)


cdef object _accumulate(object prev, bint prev_owned, object g, bint* owned):
    """prev + g, in place only into an array this pass allocated (or one nothing else can
    see); ``owned[0]``: the sum is such an array (or an immutable scalar)."""
    tp = type(prev)
    owned[0] = True
    if tp is type(g):
        if tp is _float64:
            return _add_float64(prev, g)
        if tp is float or tp is complex:
            return prev + g
        if tp is _ndarray and _same_layout(prev, g):
            if prev_owned:
                prev += g
                return prev
            if _exclusive(g):
                g += prev      # = prev + g (addition commutes), without a new array
                return g
            return prev + g
    elif prev_owned and type(g) is _sparse_type and not isinstance(prev, Box):
        return g.mut_add(prev)
    if prev_owned and _finish_sum is not None and not _is_fast(tp):
        prev = _finish_sum(prev)   # the generic add may record it (higher order): no markers
    return _by_generic_add(prev, prev_owned, g, owned)


cdef object _first_contribution(object g, bint* owned):
    """How a first cotangent is kept: borrowed (``owned[0]`` False) if it is a plain value,
    else via the hook (which turns a sparse cotangent into an array of its own)."""
    tp = type(g)
    if _is_fast(tp):
        owned[0] = tp is _ndarray and _exclusive(g)
        return g
    if tp is _sparse_type:
        owned[0] = True
        return g.mut_add(g.vs.zeros()) if _start_sum is None else _start_sum(g)
    return _by_generic_add(None, False, g, owned)


cdef object _by_generic_add(object prev, bint prev_owned, object g, bint* owned):
    total, is_owned = _generic_add(prev, prev_owned, g)
    owned[0] = is_owned
    return total


cdef object _CONFLICT = object()   # the node fields are in use by another pass over this graph
cdef unsigned long long _last_pass = 0


def backward_pass(object g, object end_node, bint consume=False, list roots=None):
    """The cotangent of the root given ``g`` for ``end_node``; None if nothing reaches it.

    ``consume=True`` releases every node as soon as it is processed (single-use graphs).
    With ``roots`` (a list of the graph's root nodes, for a trace that started from several
    boxes), a list of their cotangents in that order (None where nothing reaches), every
    array among them one the caller alone holds (copied unless the pass made it)."""
    cdef dict reached
    result = _CONFLICT
    if type(end_node) is VJPNode:
        result = _backward_on_nodes(g, <VJPNode>end_node, consume, roots)
    if roots is None:
        return _backward_with_dicts(g, end_node, consume, None) if result is _CONFLICT else result
    if result is _CONFLICT:
        reached = {}
        _backward_with_dicts(g, end_node, consume, reached)
        result = [reached.get(r) for r in roots]
    # each entry: (cotangent, owned) for a root the pass reached, else None
    return [None if found is None else _own(found[0], found[1]) for found in result]


cdef inline object _own(object g, bint owned):
    """A root's cotangent as the caller's own array: copied unless the pass made it."""
    return g.copy() if type(g) is _ndarray and not owned else g


cdef set _active_passes = set()   # stamps of the node-field passes running now (any thread)


# Stacks of nodes as a list plus a top index: list.pop shrinks (reallocates) a list whose
# length swings between 0 and 2, as the stacks of a chain-like graph do on every node.
cdef inline void _push(list stack, Py_ssize_t* top, object x):
    if top[0] < len(stack):
        stack[top[0]] = x
    else:
        stack.append(x)
    top[0] += 1


cdef inline object _pop(list stack, Py_ssize_t* top):
    top[0] -= 1
    x = stack[top[0]]
    stack[top[0]] = None   # the stack holds no reference to a node once it is taken
    return x


cdef inline bint _in_use(VJPNode p, unsigned long long stamp):
    """p's fields belong to another pass that is still running.  A stamp left behind by a
    pass that ended with an exception is stale: that pass is no longer active."""
    return p.stamp != 0 and p.stamp != stamp and p.stamp in _active_passes


cdef object _backward_on_nodes(object g, VJPNode end, bint consume, list roots):
    """The backward pass with its bookkeeping (consumer counts, pending sums) in node fields.

    Visits nodes in the same order as toposort.  Gives up (_CONFLICT) before computing
    anything if the graph has foreign node types or is in use by another pass (a rule of
    that pass, or another thread, running a pass over the same graph).  No list of the
    graph's nodes is kept: each node can be freed as soon as it is processed (memory and
    cache traffic stay flat on long graphs), and a pass that raises leaves only stale
    stamps, which the next pass overwrites (marking a node also clears its pending sum).
    With ``roots``: for each of them, (cotangent, owned) if this pass reached it, else None."""
    global _last_pass
    _last_pass += 1
    cdef unsigned long long stamp = _last_pass
    cdef VJPNode node, parent
    cdef list stack = [end], ready = [end]
    cdef Py_ssize_t n_stack = 1, n_ready = 1
    cdef tuple argnums
    cdef Py_ssize_t k, nparents
    cdef dict memo = None   # outputs recomputed for nodes with a replay (fastgrad.recompute)
    if _in_use(end, stamp):
        return _CONFLICT
    _active_passes.add(stamp)
    try:
        end.stamp, end.waiting = stamp, 0
        while n_stack:
            node = <VJPNode>_pop(stack, &n_stack)
            for k in range(node.nparents):
                p = _parent(node, k)
                if type(p) is not VJPNode or _in_use(<VJPNode>p, stamp):
                    return _CONFLICT
                parent = <VJPNode>p
                if parent.stamp == stamp:
                    parent.waiting += 1
                else:
                    parent.stamp, parent.waiting, parent.pending = stamp, 1, None
                    _push(stack, &n_stack, parent)

        end.pending, end.owned = g, False
        result = None
        while n_ready:
            node = <VJPNode>_pop(ready, &n_ready)
            g, node.pending = node.pending, None
            nparents = node.nparents
            if node.owned and _finish_sum is not None and g is not None and not _is_fast(type(g)):
                g = _finish_sum(g)
            if g is not None:
                if nparents == 0:
                    if roots is not None:
                        node.pending = g   # (node.owned still says whose it is) collected below
                    else:
                        result = g
                elif _debug is not None:
                    _debug.before_backward(node)
                    for p, argnum, cot in zip(node.parents, node.parent_argnums, _node_vjp(node, g, memo)):
                        _debug.checked(node, argnum, g, cot)
                        if cot is not None:
                            _add_to_node(<VJPNode>p, cot)
                elif node.replay is not None:
                    memo = _pull_back_replayed(node, g, memo)
                elif type(node.rule) is VJPRule:
                    argnums = node.parent_argnums
                    for k in range(nparents):
                        cot = _rule_cotangent(<VJPRule>node.rule, <object>PyTuple_GET_ITEM(argnums, k), g, node)
                        if cot is not None:
                            _add_to_node(<VJPNode>_parent(node, k), cot)
                else:
                    for p, cot in zip(node.parents, _node_vjp(node, g, None)):
                        if cot is not None:
                            _add_to_node(<VJPNode>p, cot)
            if memo is not None:
                memo.pop(node, None)   # its consumers, the only readers, are all done
            for k in range(nparents):
                parent = <VJPNode>_parent(node, k)
                parent.waiting -= 1
                if parent.waiting == 0:
                    _push(ready, &n_ready, parent)
            if nparents or roots is None:
                node.stamp = 0   # (a root keeps the stamp: it says "reached by this pass")
            if consume:
                _release(node)
        if roots is not None:
            # (cotangent, owned) of each root this pass reached, else None; collected while
            # the stamp is active, so no other pass can be using these fields meanwhile
            return [_take_root(<VJPNode?>r, stamp) for r in roots]
        return result
    finally:
        _active_passes.discard(stamp)


cdef dict _pull_back_replayed(VJPNode node, object g, dict memo):
    """A node with a replay (fastgrad.recompute): its rule on recomputed values, the
    cotangents added to its parents.  -> the pass's memo (made on first use)."""
    if memo is None:
        memo = {}
    for p, cot in zip(node.parents, _recompute_cotangents(node, g, memo)):
        if cot is not None:
            _add_to_node(<VJPNode>p, cot)
    return memo


cdef inline object _take_root(VJPNode root, unsigned long long stamp):
    if root.stamp != stamp:
        return None
    found = (root.pending, root.owned)
    root.pending, root.stamp = None, 0
    return found


cdef inline object _rule_cotangent(VJPRule rule, object argnum, object g, VJPNode node):
    """rule.one(argnum, g, ...) for the node, by the C tables when argnum is small."""
    cdef Py_ssize_t i = PyLong_AsSsize_t(argnum) if type(argnum) is int else -1
    cdef PyObject* buffer[2]
    if 0 <= i < 8:
        return rule.rule_for(i, g, node.value, _node_argv(node, buffer), node.nargs, node._kwargs)
    return rule.one(argnum, g, node.value, node.args, node._kwargs)


cdef inline void _add_to_node(VJPNode parent, object cot) except *:
    cdef bint owned
    if parent.pending is None:
        parent.pending = _first_contribution(cot, &owned)
    else:
        parent.pending = _accumulate(parent.pending, parent.owned, cot, &owned)
    parent.owned = owned


cdef object _backward_with_dicts(object g, object end_node, bint consume, dict reached):
    """The same pass with its bookkeeping in dicts: for graphs with user node types, and
    for a second pass over a graph that another pass is using.  With ``reached``, every
    root's (cotangent, owned) goes there instead of the result."""
    cdef list order = toposort(end_node)
    cdef dict pending = {end_node: g}
    cdef set owned = set()
    cdef PyObject* found
    cdef bint is_owned
    cdef dict memo = {}     # outputs recomputed for nodes with a replay (fastgrad.recompute)
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
        if _finish_sum is not None and not _is_fast(type(g)) and node in owned:
            g = _finish_sum(g)
        parents = _parents_of(node)
        if not parents:
            if reached is not None:
                reached[node] = (g, node in owned)
            else:
                result = g
            continue
        if _debug is not None and type(node) is VJPNode:
            _debug.before_backward(node)
        cots = _node_vjp(<VJPNode>node, g, memo) if type(node) is VJPNode else node.vjp(g)
        if memo:
            memo.pop(node, None)   # its consumers, the only other readers, are all done
        for k, (parent, cot) in enumerate(zip(parents, cots)):
            if _debug is not None and type(node) is VJPNode:
                _debug.checked(node, (<VJPNode>node).parent_argnums[k], g, cot)
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
        if consume and type(node) is VJPNode and not _in_use(<VJPNode>node, 0):
            _release(<VJPNode>node)
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
            return _call_with(f, g, ans, True, fg_tuple_items(args), PyTuple_GET_SIZE(args), kwargs)
        if kind == SAME:
            i = argnum
            return PyObject_Call(self.fun, args[:i] + (g,) + args[i + 1:],
                                 <PyObject*>kwargs if kwargs else NULL)
        return None

    def __call__(self, argnums, gs, ans, args, kwargs):   # autograd's jvp_argnums convention
        return _sum_tangents([self.one(i, g, ans, args, kwargs) for i, g in zip(argnums, gs)])


cdef object _sum_tangents(list tangents):
    cdef bint owned = False
    total = None
    for t in tangents:
        if t is None:
            continue
        if total is None:
            total, owned = t, False
        else:
            total = _accumulate(total, owned, t, &owned)
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
