# Boxes: a value being traced, with its trace and the node that recorded it; and the
# operators of array-like boxes (compiled engine, included in _core.pyx; _core_boxes.py
# is the pure one).

cdef dict _box_types = {}       # value type -> Box subclass (Box.type_mappings)
# The trace of a box made outside any trace (Box(value, None, None), as autograd allows):
# below every real trace id, so a primitive never takes it for the innermost trace.
cdef long long _NO_TRACE = -4611686018427387904   # -(2 ** 62), as in _core_boxes.py
cdef set _plain_box_types = set()   # Box subclasses without their own __init__: filled in C


cdef class Box:
    """A value being traced: ``_value`` at trace ``_trace``, recorded by ``_node``."""
    type_mappings = _box_types
    types = set()

    def __init__(self, value, trace, node):
        self._value = value
        self._trace = _NO_TRACE if trace is None else trace
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
cdef bint _cached_as_box = False   # and its boxes are allocated as Box's (fg_new_plain_box)


class _ClassStatementClass:
    """A class as a class statement makes it: its deallocator is CPython's generic one."""


cdef extern from *:
    """
    /* Where Box's fields are in its instances (0: not known; fg_find_box_fields). */
    static Py_ssize_t fg_box_value_at, fg_box_trace_at, fg_box_node_at, fg_box_weakref_at;

    /* Find them in ``probe``, a Box holding ``value``, ``trace`` and ``node`` (distinct
       and unlike anything else in it): the words of the object after its header that hold
       them.  A field not found once leaves its offset 0, and fg_allocates_as_box false. */
    static void fg_find_box_fields(PyObject *probe, PyObject *value, long long trace, PyObject *node) {
        Py_ssize_t at, size = Py_TYPE(probe)->tp_basicsize;
        int found = 0;
        for (at = sizeof(PyObject); at + (Py_ssize_t)sizeof(void *) <= size; at += sizeof(void *)) {
            char *p = (char *)probe + at;
            if (*(PyObject **)p == value) { fg_box_value_at = at; found++; }
            if (*(PyObject **)p == node) { fg_box_node_at = at; found++; }
            if (*(long long *)p == trace) { fg_box_trace_at = at; found++; }
        }
        if (found != 3)
            fg_box_value_at = fg_box_node_at = fg_box_trace_at = 0;
        fg_box_weakref_at = Py_TYPE(probe)->tp_weaklistoffset;
    }

    /* The memory of up to FG_BOX_BLOCKS freed plain boxes (fg_plain_box_dealloc), taken again
       for new boxes: 2 KiB at most, as CPython keeps freed floats and tuples. */
    #define FG_BOX_BLOCKS 32
    static PyObject *fg_box_blocks[FG_BOX_BLOCKS];
    static int fg_box_nblocks;

    /* A box of a type whose instances are Box's and are allocated and freed as Box's
       (fg_allocates_as_box): allocated with its GC header, its four fields set once, then
       tracked.  tp_new would zero the whole object (a memset call), store None in each
       field, and _new_box would then replace them. */
    static PyObject *fg_new_plain_box(PyObject *type, PyObject *value, long long trace, PyObject *node) {
        PyObject *o;
        char *p;
        if (fg_box_nblocks > 0)
            o = PyObject_Init(fg_box_blocks[--fg_box_nblocks], (PyTypeObject *)type);
        else if ((o = _PyObject_GC_New((PyTypeObject *)type)) == NULL)
            return NULL;
        p = (char *)o;
        Py_INCREF(value);
        Py_INCREF(node);
        *(PyObject **)(p + fg_box_value_at) = value;
        *(long long *)(p + fg_box_trace_at) = trace;
        *(PyObject **)(p + fg_box_node_at) = node;
        *(PyObject **)(p + fg_box_weakref_at) = NULL;
        PyObject_GC_Track(o);
        return o;
    }

    /* Whether fg_new_plain_box may make instances of ``type``: Box's tp_new, the generic
       allocator and GC free, Box's size (no field, slot or instance dict of its own), and
       Box's four fields filling the object after its header. */
    static int fg_allocates_as_box(PyObject *type, PyObject *box_type) {
        PyTypeObject *t = (PyTypeObject *)type, *b = (PyTypeObject *)box_type;
        int flat = fg_box_value_at == (Py_ssize_t)sizeof(PyObject)
            && fg_box_trace_at == fg_box_value_at + (Py_ssize_t)sizeof(PyObject *)
            && fg_box_node_at == fg_box_trace_at + (Py_ssize_t)sizeof(long long)
            && fg_box_weakref_at == fg_box_node_at + (Py_ssize_t)sizeof(PyObject *)
            && b->tp_basicsize == fg_box_weakref_at + (Py_ssize_t)sizeof(PyObject *);
    #ifdef Py_TPFLAGS_MANAGED_DICT
        if (t->tp_flags & Py_TPFLAGS_MANAGED_DICT)
            return 0;
    #endif
        return flat && t->tp_new == b->tp_new && t->tp_alloc == PyType_GenericAlloc
            && t->tp_free == PyObject_GC_Del && t->tp_basicsize == b->tp_basicsize
            && t->tp_itemsize == 0 && t->tp_dictoffset == 0
            && t->tp_weaklistoffset == fg_box_weakref_at && (t->tp_flags & Py_TPFLAGS_HAVE_GC);
    }

    /* Freeing the boxes of a class statement's Box subclass (ArrayBox).  CPython gives such
       a class its generic deallocator, which supports what the class might have (a __del__,
       slots, an instance dict, weak references of its own) before calling Box's.  A plain
       box type has none of these, so its boxes go straight to Box's deallocator, which
       clears Box's fields and weak references; the class's reference held by each instance
       is dropped here, as a heap type's deallocator must.  Subclasses made later get
       CPython's deallocator again, which calls this one as their base's (and drops nothing
       of its own then: their base is a heap type). */
    static destructor fg_class_dealloc;   /* CPython's, read off a class statement's class */
    static destructor fg_box_dealloc;     /* Box's */

    static void fg_plain_box_dealloc(PyObject *o) {
        PyTypeObject *t = Py_TYPE(o);
        char *p = (char *)o;
        if (t->tp_dealloc != fg_plain_box_dealloc) {
            fg_box_dealloc(o);   /* a subclass's box, from CPython's deallocator */
        } else if (t->tp_finalize != NULL) {
            if (PyObject_CallFinalizerFromDealloc(o) < 0)
                return;   /* a __del__ given to the class since; it resurrected the box */
            fg_box_dealloc(o);
        } else if (fg_box_nblocks == FG_BOX_BLOCKS || PyObject_GC_IsFinalized(o)) {
            fg_box_dealloc(o);
        } else {
            /* What Box's deallocator does, keeping the memory for the next box: a chain of
               operations frees a box at nearly every step and makes another. */
            PyObject_GC_UnTrack(o);
            if (*(PyObject **)(p + fg_box_weakref_at) != NULL)
                PyObject_ClearWeakRefs(o);
            Py_CLEAR(*(PyObject **)(p + fg_box_value_at));
            Py_CLEAR(*(PyObject **)(p + fg_box_node_at));
            if (fg_box_nblocks < FG_BOX_BLOCKS)   /* (freeing the fields may have kept others) */
                fg_box_blocks[fg_box_nblocks++] = o;
            else
                PyObject_GC_Del(o);
        }
        Py_DECREF(t);
    }

    static void fg_adopt_plain_box_dealloc(PyObject *type, PyObject *box_type, PyObject *class_statement_class) {
        PyTypeObject *t = (PyTypeObject *)type, *base = t;
        if (fg_class_dealloc == NULL) {
            fg_class_dealloc = ((PyTypeObject *)class_statement_class)->tp_dealloc;
            fg_box_dealloc = ((PyTypeObject *)box_type)->tp_dealloc;
        }
        while (base != NULL && base->tp_dealloc == fg_class_dealloc)
            base = base->tp_base;
        if (t->tp_dealloc == fg_class_dealloc && (t->tp_flags & Py_TPFLAGS_HEAPTYPE)
                && base != NULL && base->tp_dealloc == fg_box_dealloc
                && t->tp_finalize == NULL && t->tp_del == NULL)
            t->tp_dealloc = fg_plain_box_dealloc;
    }
    """
    void fg_find_box_fields(object probe, object value, long long trace, object node)
    object fg_new_plain_box(object type, object value, long long trace, object node)
    bint fg_allocates_as_box(object type, object box_type)
    void fg_adopt_plain_box_dealloc(object type, object box_type, object class_statement_class)


cdef inline object _new_box(object value, long long trace, object node):
    global _cached_value_type, _cached_box_type, _cached_plain, _cached_as_box
    tp = type(value)
    if tp is not _cached_value_type:
        found = PyDict_GetItem(_box_types, tp)
        box_type = <object>found if found is not NULL else _box_type_of_subclass(tp)
        _cached_value_type, _cached_box_type = tp, box_type
        _cached_plain = box_type in _plain_box_types
        _cached_as_box = _cached_plain and fg_allocates_as_box(box_type, Box)
        if _cached_as_box:
            fg_adopt_plain_box_dealloc(box_type, Box, _ClassStatementClass)
    if _cached_as_box:
        return fg_new_plain_box(_cached_box_type, value, trace, node)
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
    cdef PyObject* tp = <PyObject*>Py_TYPE(a)   # (compared as pointers: no reference counted)
    if tp == <PyObject*>_cached_box_type:
        return True
    if tp == <PyObject*>_float64 or tp == <PyObject*>float or tp == <PyObject*>_ndarray:
        return False
    return isinstance(a, Box)


_probe_value, _probe_node = object(), object()
fg_find_box_fields(Box(_probe_value, 0x5EED5EED5EED5EED, _probe_node), _probe_value, 0x5EED5EED5EED5EED, _probe_node)
del _probe_value, _probe_node


def new_box(value, trace, node):
    return _new_box(value, trace, node)


cdef object _box_type_of_subclass(object tp):
    """The box type of the nearest registered base of ``tp`` (e.g. a named tuple's tuple),
    remembered for ``tp``; TypeError if there is none, or if ``tp`` is an unregistered
    ndarray subclass (its arithmetic may differ from ndarray's)."""
    if issubclass(tp, _ndarray):
        raise TypeError(_cannot_differentiate_type(tp))
    for base in tp.__mro__[1:]:
        if base in _box_types:
            _box_types[tp] = _box_types[base]
            return _box_types[base]
    raise TypeError(_cannot_differentiate_type(tp))


def _cannot_differentiate_type(tp):
    msg = "Can't differentiate w.r.t. type {}".format(tp)
    if issubclass(tp, int):
        msg += ": integers cannot be differentiated, pass floats instead (e.g. 1.0 or x.astype(float))"
    elif issubclass(tp, _ndarray):
        msg += (
            ": an ndarray subclass is not differentiated as an ndarray (its arithmetic may differ);"
            " pass np.asarray(x), or register a box and a vector space for the subclass"
        )
    return msg


def isbox(x):
    return isinstance(x, Box)


cpdef object getval(object x):
    while isinstance(x, Box):
        x = (<Box>x)._value
    return x


# ---- operators of array-like boxes: the primitives bound as box_operators, called without
# a Python frame per operator

cdef enum:                      # the operators (_OPERATOR_NAMES), as indices into _fast_ops / _general_ops
    OP_ADD, OP_SUB, OP_MUL, OP_TRUEDIV, OP_POW, OP_MOD, OP_MATMUL, OP_NEG, N_OPS

cdef list _fast_ops = [None] * N_OPS     # operator -> primitive for fast value types (None: not set)
cdef list _general_ops = [None] * N_OPS  # operator -> primitive for every other case
cdef object _fast_value_types = frozenset()     # box values whose operators may use the fast one
cdef bint _fast_ndarray = False, _fast_float64 = False   # ndarray / float64 are among them
cdef tuple _general_other_types = ()            # other operands that always take the general one


cdef _install_box_operators(dict ops, fast_value_types, general_other_types):
    """The bound box_operators, box_fast_types and box_general_types into C tables (see
    _core_seam.py): ``ops[name] = (fast, general)`` primitives for the names add sub mul
    truediv pow mod matmul neg.  The fast one is used when the box's value type is in
    ``fast_value_types`` and the other operand's type is not in ``general_other_types``."""
    global _fast_value_types, _general_other_types, _fast_ndarray, _fast_float64
    for i, name in enumerate(_OPERATOR_NAMES):
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
    # (pointer compares over the tuple's items, without a reference taken per item)
    cdef PyObject* to = <PyObject*>Py_TYPE(other)
    cdef Py_ssize_t i
    for i in range(PyTuple_GET_SIZE(_general_other_types)):
        if PyTuple_GET_ITEM(_general_other_types, i) == to:
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
    """A Box whose arithmetic operators call the primitives bound as box_operators."""

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

