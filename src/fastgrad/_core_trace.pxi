# Tracing: primitives (whose calls on boxes record nodes), the base of node types, traces,
# and the order of a traced graph (compiled engine, included in _core.pyx; _core_trace.py
# is the pure one).

notrace_primitives = {}    # node type -> set of primitives that are not recorded under it
cdef long long _last_trace = 0  # trace ids: only ever incremented with the GIL held
# The ids of the traces open now, in any thread.  A box of a trace that has ended can never
# reach that trace's backward pass (its end is fixed), so a primitive given one beside boxes of
# a later trace takes it as the value it holds (_ended); autograd, whose ids are nesting depths,
# gives sibling traces one id and comes to the same values.  A C array in no particular order
# (as many entries as traces open at once), so that opening and closing a trace cost a store.
cdef long long* _open_traces = NULL
cdef Py_ssize_t _n_open = 0, _open_capacity = 0


cdef int _mark_open(long long t) except -1:
    global _open_traces, _open_capacity, _n_open
    cdef long long* grown
    if _n_open == _open_capacity:
        grown = <long long*>realloc(_open_traces, (2 * _open_capacity + 8) * sizeof(long long))
        if grown is NULL:
            raise MemoryError()
        _open_traces, _open_capacity = grown, 2 * _open_capacity + 8
    _open_traces[_n_open] = t
    _n_open += 1
    return 0


cdef void _mark_closed(long long t) noexcept:
    global _n_open
    cdef Py_ssize_t i = _n_open - 1
    while i >= 0:       # mostly the last one: traces nest
        if _open_traces[i] == t:
            _n_open -= 1
            _open_traces[i] = _open_traces[_n_open]
            return
        i -= 1


cdef inline long long _draw_trace_id():
    global _last_trace
    _last_trace += 1
    return _last_trace


def open_trace():
    """A fresh trace id (above every id drawn before), open until ``close_trace(id)``."""
    cdef long long t = _draw_trace_id()
    _mark_open(t)
    return t


def close_trace(long long t):
    _mark_closed(t)


cdef bint _ended(long long t) noexcept:
    """Whether ``t`` is the id of a trace drawn here that has ended (ids a library chose
    itself, such as 0, never end)."""
    cdef Py_ssize_t i
    if not 0 < t <= _last_trace:
        return False
    for i in range(_n_open):
        if _open_traces[i] == t:
            return False
    return True


cdef object _outside_any_trace(object prim, object box):
    """The error for a box made outside any trace given to a primitive (as in _core_trace.py)."""
    return TypeError(
        "{}: an argument ({}) is a box made outside any trace (its trace is None); make boxes "
        "with a trace id, from fastgrad.tracer.trace or trace_stack.new_trace()".format(
            getattr(prim, "__name__", prim), type(box).__name__
        )
    )


cdef object _hidden_boxes(object prim, object ans, long long top, PyObject** vals, Py_ssize_t n):
    """The error for a primitive's output that is, or is an object array holding, a box of its
    own trace or a later one, else None (as in _core_trace.py); ``vals``: its ``n`` arguments,
    the boxes of its trace unboxed."""
    cdef Py_ssize_t i
    if _is_box(ans):
        if (<Box>ans)._trace < top or getattr(prim, "_returns_held_values", False):
            return None
        for i in range(n):
            if _is_box(<object>vals[i]) and (<Box>vals[i])._trace >= top:
                return None
        items, what = (ans,), "is a traced value"
    else:
        items, what = ans.flat, "holds traced values"
    for item in items:
        if _is_box(item) and (<Box>item)._trace >= top:
            return TypeError(
                "{}: its output {} ({}) that differentiation cannot follow: the function was "
                "given traced values inside a list, tuple or object array, or made them itself. "
                "Pass traced values as arrays (for example fastgrad.numpy.array(...) or "
                "stack(...)) instead".format(getattr(prim, "__name__", prim), what, type(item).__name__)
            )
    return None


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
        self._ufunc = None
        for name, value in getattr(fun, "__dict__", {}).items():
            setattr(self, name, value)
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(self, attr, getattr(fun, attr, None))
        if self.__qualname__ is None:  # (NumPy 1's ufuncs have no __qualname__)
            self.__qualname__ = self.__name__
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


cdef object _ndarray_array_ufunc = ndarray.__array_ufunc__


cdef inline bint _is_common(object a):
    """``a`` is of a type that never overrides ``__array_ufunc__`` (pointer comparisons)."""
    cdef PyObject* tp = <PyObject*>Py_TYPE(a)   # (compared as pointers: no reference counted)
    return (tp == <PyObject*>float or tp == <PyObject*>_ndarray or tp == <PyObject*>_float64
            or tp == <PyObject*>int or a is None)


cdef bint _needs_ufunc_dispatch(PyObject** argv, Py_ssize_t n):
    """Whether a ufunc primitive's call belongs to NumPy's dispatch (NEP 13), as in autograd:
    an argument that is not a box overrides ``__array_ufunc__`` (an xarray DataArray, say)
    and a box is array-like, so the other operand gets its turn.  Called only when the box
    scan of _call_primitive_impl saw an argument of an uncommon type (_is_common), which
    this check passes over too."""
    cdef Py_ssize_t i
    for i in range(n):
        a = <object>argv[i]
        if _is_common(a) or _is_box(a):
            continue
        f = getattr(type(a), "__array_ufunc__", None)
        if f is not None and f is not _ndarray_array_ufunc:
            break
    else:
        return False
    for i in range(n):
        a = <object>argv[i]
        if _is_box(a) and getattr(type(a), "__array_ufunc__", None) is not None:
            return True
    return False


cdef object _call_primitive(Primitive self, PyObject** argv, Py_ssize_t n, PyObject* kw):
    """Call ``self`` on the ``n`` arguments at ``argv`` (and the keyword dict ``kw``, or NULL),
    recording a node if any argument is a box: the innermost trace's boxes are unboxed and
    become the node's parents."""
    return _call_primitive_impl(self, argv, n, kw, True)


def call_without_ufunc_dispatch(prim, *args, **kwargs):
    """Call the primitive ``prim`` as ``ArrayBox.__array_ufunc__`` does, from NumPy's
    dispatch: not handing the call back to it, and giving NotImplemented (so NumPy tries the
    next operand's ``__array_ufunc__``) when the output cannot be boxed."""
    if type(prim) is not Primitive:
        return prim(*args, **kwargs)
    return _call_primitive_impl(<Primitive>prim, fg_tuple_items(args), len(args),
                                <PyObject*>kwargs if kwargs else NULL, False)


cdef object _call_primitive_impl(Primitive self, PyObject** argv, Py_ssize_t n, PyObject* kw,
                                 bint dispatch):
    """_call_primitive; ``dispatch`` false: from ufunc dispatch (call_without_ufunc_dispatch)."""
    cdef Py_ssize_t i, j, count = 0
    cdef long long top = -1, t
    # the arguments, their boxes' nodes and the innermost trace's node type are borrowed (as
    # pointers) from the caller's arguments: no reference counted per argument
    cdef PyObject* a
    cdef PyObject* node_type = NULL
    cdef bint uncommon = False     # an argument that is neither a box nor of a common type
    for i in range(n):
        a = argv[i]
        if _is_box(<object>a):
            t = (<Box>a)._trace
            if t > top:
                top, count, node_type = t, 1, <PyObject*>Py_TYPE((<Box>a)._node)
            elif t == top:
                count += 1
            elif t == _NO_TRACE:
                raise _outside_any_trace(self, <object>a)
        elif not uncommon and not _is_common(<object>a):
            uncommon = True
    if top < 0:
        return _call_raw(self, argv, n, kw)
    if uncommon and self._ufunc is not None and dispatch and _needs_ufunc_dispatch(argv, n):
        return PyObject_Call(self._ufunc, _tuple_of(argv, n), kw)

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
    cdef PyObject* parent
    j = 0
    for i in range(n):
        a = argv[i]
        if _is_box(<object>a):
            if (<Box>a)._trace == top:
                parent = <PyObject*>(<Box>a)._node
                if count == 1:
                    parents = <object>parent
                else:
                    Py_INCREF(<object>parent)
                    PyTuple_SET_ITEM(parents, j, <object>parent)
                mask |= (1u << i) if i < 8 else 0x100u
                j += 1
                a = <PyObject*>(<Box>a)._value
                if _is_box(<object>a):
                    boxes_left = True
                if vals_tuple is not None:      # replace the box by its value in the tuple
                    Py_INCREF(<object>a)
                    Py_DECREF(<object>vals[i])
                    PyTuple_SET_ITEM(vals_tuple, i, <object>a)
            else:
                boxes_left = True
        if vals_tuple is None:
            vals[i] = a

    argnums = _argnums_of(argv, n, top, mask)
    if boxes_left:   # boxes of outer traces: dispatch again, outermost last
        _take_ended_as_values_ptr(vals, vals_tuple, n, top)
        if dispatch:
            ans = PyObject_Call(self, _tuple_of(vals, n) if vals_tuple is None else vals_tuple, kw)
        else:
            ans = _call_primitive_impl(self, vals, n, kw, False)
            if ans is NotImplemented:
                return ans
    else:
        ans = _call_raw(self, vals, n, kw)
    if self._notrace_types is not None and <object>node_type in self._notrace_types:
        return ans
    if not dispatch and not _can_box(ans):
        return NotImplemented
    # hidden boxes: a float64, the commonest output, can hold none (one test skips the others)
    if type(ans) is not _float64 and (
        (type(ans) is _ndarray and cnp.PyArray_TYPE(<cnp.ndarray>ans) == cnp.NPY_OBJECT) or _is_box(ans)
    ):
        err = _hidden_boxes(self, ans, top, vals, n)
        if err is not None:
            raise err
    kwargs = <object>kw if kw is not NULL else None
    if node_type == <PyObject*>VJPNode:
        node = _vjp_node(ans, self, vals, n, kwargs, argnums, parents, count)
    else:
        node = (<object>node_type)(ans, self, _tuple_of(vals, n) if vals_tuple is None else vals_tuple,
                         {} if kwargs is None else kwargs, argnums,
                         (parents,) if count == 1 else parents)
    return _new_box(ans, top, node)


cdef int _take_ended_as_values(PyObject** vals, tuple vals_tuple, Py_ssize_t n, long long top) except -1:
    """Replace each box of a trace that has ended (below ``top``) among the ``n`` values by the
    value it holds: a constant from now on.  ``vals`` borrows from the arguments' boxes, or
    holds the items of ``vals_tuple``."""
    cdef Py_ssize_t i
    cdef object a
    for i in range(n):
        a = <object>vals[i]
        while _is_box(a) and (<Box>a)._trace < top and _ended((<Box>a)._trace):
            a = (<Box>a)._value
        if a is <object>vals[i]:
            continue
        if vals_tuple is not None:
            Py_INCREF(a)
            Py_DECREF(<object>vals[i])
            PyTuple_SET_ITEM(vals_tuple, i, a)
        else:
            vals[i] = <PyObject*>a
    return 0


# Called through a pointer, so that the C compiler keeps this rare step out of the body of
# _call_primitive_impl (inlined there, it costs every primitive call ~40 instructions).
cdef int (*_take_ended_as_values_ptr)(PyObject**, tuple, Py_ssize_t, long long) except -1
_take_ended_as_values_ptr = _take_ended_as_values


cdef inline object _call_raw(Primitive self, PyObject** argv, Py_ssize_t n, PyObject* kw):
    """``self.fun(*argv[:n], **kw)``: by the primitive's scalar kernel when it has one and
    the arguments are float64 / float scalars, else by calling ``fun``.  A failure on
    another array library's values is explained (the seam's ``explain_failure``)."""
    cdef PyObject* r
    if kw is NULL:
        if self.kernel_fun is not None and self.kernel_fun is self.fun:
            if self.kernel_element:   # (A[idx]: apart, so that _by_kernel stays inlined here)
                ans = _element_of(<object>argv[0], <object>argv[1]) if n == 2 else None
            else:
                ans = _by_kernel(self, argv, n)
            if ans is not None:
                return ans
        r = PyObject_Vectorcall_unchecked(self.fun, argv, n, NULL)
    else:
        r = PyObject_Call_unchecked(self.fun, _tuple_of(argv, n), kw)
    if r is NULL:   # (the check costs nothing on success; a try block would)
        _raise_explained(self, argv, n, kw)
    ans = <object>r
    Py_DECREF(ans)  # (the call's own reference, now held by ans)
    return ans


cdef inline int _pending_error() except -1:
    return -1       # the error is already set: Cython raises it


cdef int _raise_explained(Primitive self, PyObject** argv, Py_ssize_t n, PyObject* kw) except -1:
    """Raise the error set by a failed call of ``self.fun``: explained by the seam's
    ``explain_failure`` when it is a TypeError, ValueError or NotImplementedError and the
    explanation is not None, else as it is."""
    try:
        _pending_error()
    except (TypeError, ValueError, NotImplementedError) as e:
        if _explain_failure is None:
            raise
        err = _explain_failure(self, _tuple_of(argv, n), <object>kw if kw is not NULL else {}, e)
        if err is None:
            raise
        raise err from e
    return -1


cdef bint _can_box(object value):
    if type(value) in _box_types:
        return True
    try:
        _box_type_of_subclass(type(value))
    except TypeError:
        return False
    return True


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
            /* A primitive bound as a method (ArrayBox.__getitem__, box.sum) is the primitive
               called with the box first: saying so lets CPython call it so, without making
               a bound method object per call (x[i] in a loop). */
            types[i]->tp_flags |= Py_TPFLAGS_METHOD_DESCRIPTOR;
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
    cdef long long t = _draw_trace_id()
    _mark_open(t)
    try:
        start_box = _new_box(x, t, start_node)
        end_box = fun(start_box)
    finally:
        _mark_closed(t)
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

