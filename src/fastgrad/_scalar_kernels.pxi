# Scalar kernels (included in _core.pyx): C arithmetic for primitives and reverse rules
# on float64 scalars, with results bit for bit NumPy's on every CPU (see _scalar_kernels.h
# for why and when): IEEE operations, and NumPy's own inner loops for sin, cos, exp, ...
# fastgrad.numpy binds those loops (bind's numpy_loops) and switches the kernels on per
# primitive and per rule (fastgrad/numpy/_scalar_kernels.py); the pure engine has none
# and gives the same values by running the Python code they stand for.

from libc.math cimport NAN, isfinite
from libc.string cimport memcmp, memcpy, strcmp

cdef extern from "_scalar_kernels.h":
    ctypedef void (*fg_numpy_loop)(char**, const cnp.npy_intp*, const cnp.npy_intp*, void*)
    ctypedef struct fg_ufunc_loop:
        fg_numpy_loop* functions
        void** data
        int index
        cnp.npy_intp steps[3]
    ctypedef struct fg_probe_record:
        fg_numpy_loop loop
        int nargs
        int calls, consistent
        cnp.npy_intp n
        cnp.npy_intp steps[3]
        void* data
    ctypedef struct fg_named1:
        const char* name
        fg_kernel1 f
        int loop
    ctypedef struct fg_named2:
        const char* name
        fg_kernel2 f
        int loop
    ctypedef struct fg_named_vjp:
        const char* name
        fg_vjp_kernel f
        int reads
        int loop
    enum:
        FG_N_LOOPS
        FG_FIRST_BINARY
        FG_IEEE
        FG_FP_ERRORS
    const char** fg_loop_names
    fg_ufunc_loop* fg_loops
    fg_probe_record fg_probe
    void fg_probe_loop(char**, const cnp.npy_intp*, const cnp.npy_intp*, void*)
    double fg_run_loop(const fg_ufunc_loop* u, double x)
    double fg_run_loop2(const fg_ufunc_loop* u, double x, double y)
    const fg_named1* fg_unary_kernels
    const fg_named2* fg_binary_kernels
    const fg_named_vjp* fg_vjp_kernels
    bint fg_is_clean(double r)
    bint fg_quiet1(fg_kernel1 f, double x, double* out)
    bint fg_quiet2(fg_kernel2 f, double x, double y, double* out)
    bint fg_quiet_vjp(fg_vjp_kernel f, double g, double ans, double x, double y, double* out)
    bint fg_quiet_add(double a, double b, double* out)
    bint fg_sum(double a, double b, double* out)
    bint fg_zero_from_zero(double g, double r)
    bint fg_is_python_two(PyObject* y)
    int FG_READS_ANS, FG_READS_X, FG_READS_Y, FG_Y_IS_TWO
    double fg_v_neg_g(double, double, double, double)
    double fg_v_g_times_y(double, double, double, double)
    double fg_v_x_times_g(double, double, double, double)
    double fg_v_g_over_y(double, double, double, double)

cdef extern from *:
    """
    /* A NumPy float64 scalar holding v: float64 subclasses Python's float and shares its
       layout, so the value goes where PyFloat_AS_DOUBLE reads it.  NumPy's scalars come
       from PyObject_Malloc and go back by PyObject_Free (its tp_free); its tp_alloc also
       zeroes the block, which is not needed when every field is written here, as it is
       for a float64 of that layout (no GC header, no items: fg_float64_has_float_layout,
       decided once at import by fg_check_float64_layout). */
    static int fg_float64_has_float_layout;

    static void fg_check_float64_layout(PyObject *float64_type) {
        PyTypeObject *t = (PyTypeObject *)float64_type;
        fg_float64_has_float_layout = t->tp_basicsize == (Py_ssize_t)sizeof(PyFloatObject)
            && t->tp_itemsize == 0 && !(t->tp_flags & Py_TPFLAGS_HAVE_GC);
    }

    static PyObject *fg_new_float64(PyObject *float64_type, double v) {
        PyTypeObject *t = (PyTypeObject *)float64_type;
        PyObject *o;
        if (fg_float64_has_float_layout) {
            o = (PyObject *)PyObject_Malloc(sizeof(PyFloatObject));
            if (o == NULL)
                return PyErr_NoMemory();
            PyObject_Init(o, t);
        } else {
            o = t->tp_alloc(t, 0);
            if (o == NULL)
                return NULL;
        }
        ((PyFloatObject *)o)->ob_fval = v;
        return o;
    }

    /* Store v in a float64 (or float) object: its value is where PyFloat_AS_DOUBLE reads it. */
    static void fg_set_float_value(PyObject *o, double v) { ((PyFloatObject *)o)->ob_fval = v; }

    /* An int operand's value (x * 2, 1 - x, where NumPy gives a float64 too), when it is
       an int (not a bool) with |x| <= 2**53: converting it to a double is exact, and NumPy
       computes on that double whatever its promotion rules (NEP 50's or the legacy ones),
       so a kernel gives NumPy's bits.  NaN (which no int converts to) for anything else.
       Out of line, and no address taken in the callers: their path for two floats stays
       as short as it was. */
    static FG_NOINLINE double fg_int_operand(PyObject *x) {
        int overflow = 0;
        long long v;
        if (!PyLong_CheckExact(x))
            return NAN;
        v = PyLong_AsLongLongAndOverflow(x, &overflow);
        if (overflow || v > 9007199254740992LL || v < -9007199254740992LL)
            return NAN;
        return (double)v;
    }
    """
    object fg_new_float64(object float64_type, double v)
    void fg_set_float_value(object o, double v)
    void fg_check_float64_layout(object float64_type)
    double fg_int_operand(PyObject* x)

fg_check_float64_layout(_float64)   # (the only type fg_new_float64 is given)

cdef int READS_IDENTITY = -1    # kernel_reads value of a rule that returns g itself ("g")
cdef int READS_SCATTER = -2     # ... of indexing's transpose, added into the parent's sum ("A[idx]+=g")
cdef str SCATTER_KERNEL = "A[idx]+=g"
cdef str ELEMENT_KERNEL = "A[idx]"  # the forward kernel of indexing: one element of a float64 array


cdef inline bint _is_float(object x):
    return type(x) is _float64 or type(x) is float


cdef object _by_kernel(Primitive self, PyObject** argv, Py_ssize_t n):
    """``self.fun(*argv[:n])`` computed by the primitive's kernel, or None when the kernel
    does not apply (wrong number or types of arguments, or a result NumPy might warn about)."""
    cdef double r
    if n == 1 and self.kernel1 is not NULL:
        a = <object>argv[0]
        if type(a) is _float64 or (type(a) is float and not self.kernel_needs_float64):
            r = self.kernel1(PyFloat_AS_DOUBLE(a))
            if fg_is_clean(r) or fg_quiet1(self.kernel1, PyFloat_AS_DOUBLE(a), &r):
                return fg_new_float64(_float64, r)
    elif n == 2 and self.kernel2 is not NULL:
        a = <object>argv[0]
        b = <object>argv[1]
        if _is_float(a) and _is_float(b) and (
                not self.kernel_needs_float64 or type(a) is _float64 or type(b) is _float64):
            r = self.kernel2(PyFloat_AS_DOUBLE(a), PyFloat_AS_DOUBLE(b))
            if fg_is_clean(r) or fg_quiet2(self.kernel2, PyFloat_AS_DOUBLE(a), PyFloat_AS_DOUBLE(b), &r):
                return fg_new_float64(_float64, r)
        elif type(a) is int or type(b) is int:
            return _by_kernel_with_int_ptr(self, a, b)
    return None


cdef object _by_kernel_with_int(Primitive self, object a, object b):
    """_by_kernel's binary case where one operand is an int (x * 2, 1 - x) and the other
    a float64 or float: NumPy gives a float64 then too (fg_int_operand)."""
    cdef double x, y, r
    if _is_float(a):
        x, y = PyFloat_AS_DOUBLE(a), fg_int_operand(<PyObject*>b)
    elif _is_float(b):
        x, y = fg_int_operand(<PyObject*>a), PyFloat_AS_DOUBLE(b)
    else:
        return None
    if x != x or y != y or (self.kernel_needs_float64 and type(a) is not _float64 and type(b) is not _float64):
        return None
    r = self.kernel2(x, y)
    if fg_is_clean(r) or fg_quiet2(self.kernel2, x, y, &r):
        return fg_new_float64(_float64, r)
    return None


# Called through a pointer, so that the C compiler keeps it out of _by_kernel, which is
# inlined into every primitive call.
cdef object (*_by_kernel_with_int_ptr)(Primitive, object, object)
_by_kernel_with_int_ptr = _by_kernel_with_int


cdef object _element_of(object a, object idx):
    """``a[idx]`` when ``a`` is a float64 ndarray in native byte order and ``idx`` names one
    element of it (an int, or a tuple of ints, in range): that element, a float64 holding
    its bytes, as NumPy returns it.  None for anything else (NumPy indexes then, and raises
    its own errors)."""
    cdef cnp.npy_intp position[32]
    cdef Py_ssize_t nd = _float64_dims(a)
    cdef double v
    if nd == 0 or not _element_position(idx, cnp.PyArray_DIMS(<cnp.ndarray>a), nd, position):
        return None
    memcpy(&v, _element_at(<cnp.ndarray>a, position, nd), sizeof(double))   # (a may be unaligned)
    return fg_new_float64(_float64, v)


cdef inline bint _cotangent_value(object g, double* out):
    """The value of a float64 cotangent: a float64 scalar, or the 0-d float64 array in
    native byte order that grad seeds with (the Python rules give a float64 scalar for both)."""
    if type(g) is _float64:
        out[0] = PyFloat_AS_DOUBLE(g)
        return True
    if type(g) is _ndarray and cnp.PyArray_NDIM(<cnp.ndarray>g) == 0 \
            and cnp.PyArray_TYPE(<cnp.ndarray>g) == cnp.NPY_DOUBLE \
            and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>g):
        memcpy(out, cnp.PyArray_DATA(<cnp.ndarray>g), sizeof(double))
        return True
    return False


cdef object _vjp_by_kernel(VJPRule rule, Py_ssize_t i, object g, object ans, PyObject** argv,
                           Py_ssize_t n, dict kwargs, bint g_is_spare):
    """The cotangent of argument ``i`` by the rule's kernel, or None when it does not
    apply: g must be a float64 and every value the kernel reads a float64 or float, but
    for the other operand of a binary rule, which may be an int (fg_int_operand) (or, for
    the one-operation rules of + - * /, all arrays of one shape and dtype).  ``g_is_spare``:
    g is a float64 that only the caller holds and will not read again, so the result may
    be written into it (_reuse_float64)."""
    cdef int reads = rule.kernel_reads[i]
    cdef double x = 0.0, y = 0.0, a = 0.0, gv = 0.0, r
    if kwargs or reads == READS_SCATTER:   # (that one adds into the sum itself: _added_at_index)
        return None
    if type(g) is _ndarray and cnp.PyArray_NDIM(<cnp.ndarray>g) > 0:
        return _vjp_on_arrays(rule, i, g, argv, n)
    if not _cotangent_value(g, &gv):
        return None
    if reads > 0 and reads & FG_Y_IS_TWO and not (n >= 2 and fg_is_python_two(argv[1])):
        return None
    # the other operand of a binary rule may be an int (g * 2); the argument itself, which
    # the rule's result is cast to, is a float64 or a float
    if reads & FG_READS_X or reads == READS_IDENTITY and i == 0:
        if n < 1:
            return None
        if _is_float(<object>argv[0]):
            x = PyFloat_AS_DOUBLE(<object>argv[0])
        elif i == 1:
            x = fg_int_operand(argv[0])
            if x != x:
                return None
        else:
            return None
    if reads & FG_READS_Y or reads == READS_IDENTITY and i == 1:
        if n < 2:
            return None
        if _is_float(<object>argv[1]):
            y = PyFloat_AS_DOUBLE(<object>argv[1])
        elif i == 0:
            y = fg_int_operand(argv[1])
            if y != y:
                return None
        else:
            return None
    if reads == READS_IDENTITY:
        return g
    if reads & FG_READS_ANS:
        if not _is_float(ans):
            return None
        a = PyFloat_AS_DOUBLE(ans)
    r = rule.kernels[i](gv, a, x, y)
    if fg_is_clean(r) or fg_zero_from_zero(gv, r) or fg_quiet_vjp(rule.kernels[i], gv, a, x, y, &r):
        if g_is_spare and type(g) is _float64:
            return _reuse_float64(g, r)
        return fg_new_float64(_float64, r)
    return None


cdef inline bint _like(object a, object g):
    return type(a) is _ndarray and _same_layout(a, g)


cdef object _vjp_on_arrays(VJPRule rule, Py_ssize_t i, object g, PyObject** argv, Py_ssize_t n):
    """The rules g, -g, g * y, x * g and g / y when g and the arguments they read and
    unbroadcast to are arrays of g's shape and dtype: the one NumPy operation the Python
    rule does (unbroadcast then returns it as it is), without calling the rule.  None
    when that is not the case."""
    cdef int reads = rule.kernel_reads[i]
    cdef fg_vjp_kernel k = rule.kernels[i]
    if n <= i:
        return None
    target = <object>argv[i]
    if reads == READS_IDENTITY:
        return g if _like(target, g) else None
    if reads & (FG_READS_X if i == 0 else FG_READS_Y) and not _like(target, g):
        return None   # a binary rule: it would unbroadcast or cast
    if k == fg_v_neg_g:
        return -g
    if n < 2:
        return None
    x, y = <object>argv[0], <object>argv[1]
    if k == fg_v_g_times_y and _like(y, g):
        return g * y
    if k == fg_v_x_times_g and _like(x, g):
        return x * g
    if k == fg_v_g_over_y and _like(y, g):
        return g / y
    return None


cdef bint _added_at_index(VJPNode node, VJPNode parent, object g) except -1:
    """For a node of ``A[idx]`` whose rule is indexing's transpose (A's zeros with g added
    at idx, a sparse cotangent): add g straight into the parent's pending sum, as that
    sparse cotangent's ``mut_add`` would, without making it.  Only where the result is the
    same bits: A a float64 array in native byte order (_float64_dims), idx an int or a
    tuple of ints naming one element, g a float64 or a float (or grad's 0-d seed), the sum
    not begun (it starts as A's zeros) or an array of A's layout the pass owns, and a
    finite sum (NumPy's scalar addition would warn otherwise).  False, changing nothing,
    where the rule must run."""
    cdef cnp.ndarray a, total
    cdef cnp.npy_intp position[32]
    cdef Py_ssize_t nd
    cdef double gv, r
    if node.nargs != 2 or node._kwargs is not None:
        return False
    if PyLong_AsSsize_t(<object>PyTuple_GET_ITEM(node.parent_argnums, 0)) != 0:
        return False   # the index is the boxed argument: its rule is another
    nd = _float64_dims(node._arg0)   # (a byte-swapped A's cotangent keeps A's byte order)
    if nd == 0:
        return False
    a = <cnp.ndarray>node._arg0
    if type(g) is float:
        gv = PyFloat_AS_DOUBLE(g)
    elif not _cotangent_value(g, &gv):
        return False
    if not _element_position(node._arg1, cnp.PyArray_DIMS(a), nd, position):
        return False
    pending = parent.pending
    if pending is None:
        r = 0.0 + gv
        if not isfinite(r):
            return False
        total = cnp.PyArray_ZEROS(<int>nd, cnp.PyArray_DIMS(a), cnp.NPY_DOUBLE, 0)
    elif parent.owned and type(pending) is _ndarray and _same_layout(pending, a) \
            and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>pending):
        total = <cnp.ndarray>pending
    else:
        return False
    cdef double* element = <double*>_element_at(total, position, nd)
    r = element[0] + gv
    if not isfinite(r):
        return False
    element[0] = r
    if pending is None:
        parent.pending, parent.owned = total, True
    return True


cdef inline Py_ssize_t _float64_dims(object a):
    """The number of dimensions of ``a`` when it is what the element kernels read and
    write: an ndarray (not a subclass) of float64 in native byte order, with 1 to 32
    dimensions.  0 for anything else."""
    cdef Py_ssize_t nd
    if type(a) is not _ndarray or cnp.PyArray_TYPE(<cnp.ndarray>a) != cnp.NPY_DOUBLE \
            or not cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>a):
        return 0
    nd = cnp.PyArray_NDIM(<cnp.ndarray>a)
    return nd if nd <= 32 else 0


cdef inline char* _element_at(cnp.ndarray a, cnp.npy_intp* position, Py_ssize_t nd):
    """The address of the element of ``a`` (``nd`` dimensions) at ``position``."""
    cdef Py_ssize_t d, offset = 0
    for d in range(nd):
        offset += position[d] * cnp.PyArray_STRIDES(a)[d]
    return cnp.PyArray_BYTES(a) + offset


cdef bint _element_position(object idx, cnp.npy_intp* dims, Py_ssize_t nd, cnp.npy_intp* position) except -1:
    """``position``: the element that ``idx`` (an int for a 1-d array, or a tuple of nd
    ints; negative ones count from the end) names in an array of shape ``dims``.  False if
    idx is anything else or out of range."""
    cdef Py_ssize_t d
    if type(idx) is int:
        return nd == 1 and _index_in(idx, dims[0], position)
    if type(idx) is not tuple or PyTuple_GET_SIZE(idx) != nd:
        return False
    for d in range(nd):
        if not _index_in(<object>PyTuple_GET_ITEM(idx, d), dims[d], &position[d]):
            return False
    return True


cdef inline bint _index_in(object item, cnp.npy_intp size, cnp.npy_intp* out) except -1:
    """``out``: the position the int ``item`` names along an axis of ``size`` (negative ones
    count from the end).  False if item is not an int or is out of range."""
    cdef int overflow = 0
    cdef long long i
    if type(item) is not int:
        return False
    i = PyLong_AsLongLongAndOverflow(item, &overflow)
    if overflow:
        return False
    if i < 0:
        i += size
    if not 0 <= i < size:
        return False
    out[0] = <cnp.npy_intp>i
    return True


cdef inline object _reuse_float64(object spare, double v):
    """``spare``, a float64 nothing but the caller can reach, now holding ``v``: the same
    value as a new float64 of v, without allocating one and freeing ``spare``.  A float64
    keeps nothing derived from its value (its hash is computed when asked for) and has no
    weak references, so no one can tell the object was reused.  A chain of scalar
    primitives passes one cotangent object from node to node this way."""
    fg_set_float_value(spare, v)
    return spare


cdef inline object _add_float64(object a, object b):
    """a + b for two float64 scalars, in C when the sum is a normal number."""
    cdef double r
    if fg_sum(PyFloat_AS_DOUBLE(a), PyFloat_AS_DOUBLE(b), &r):
        return fg_new_float64(_float64, r)
    return a + b


# ---- NumPy's loops (bound through bind's numpy_loops) -----------------------------------

cdef dict _loop_ufuncs = {}   # name of a bound loop -> the ufunc whose table fg_loops reads
cdef dict _loop_status = {}   # name -> None (bound) or why it is not, as of the last binding


cdef int _loop_id(str name) except -2:
    cdef bytes key = name.encode()
    for k in range(FG_N_LOOPS):
        if strcmp(fg_loop_names[k], key) == 0:
            return k
    raise ValueError("no NumPy loop named {!r} among the kernels' ({})".format(
        name, ", ".join(numpy_loop_names())))


def numpy_loop_names():
    """The ufuncs whose float64 loops kernels call (bound through bind's numpy_loops)."""
    return tuple([fg_loop_names[k].decode() for k in range(FG_N_LOOPS)])


def bound_numpy_loops():
    """name -> ufunc, for the loops bound now."""
    return dict(_loop_ufuncs)


def numpy_loop_status():
    """name -> None for each loop bound now, else why it is not (every loop name)."""
    return {name: _loop_status.get(name, "unbound") for name in numpy_loop_names()}


cdef _check_numpy_loops(dict ufuncs):
    """bind's numpy_loops names loops of the kernels (ValueError otherwise)."""
    for name in ufuncs:
        if type(name) is not str:
            raise TypeError("bind: numpy_loops maps loop names to ufuncs, not {!r}".format(name))
        _loop_id(name)


cdef object _probe_numpy_loop(str name, ufunc):
    """Whether the kernels that need NumPy's loop ``name`` may call the float64 -> float64
    (or float64, float64 -> float64) inner loop of ``ufunc`` (the ufunc of that name): only
    once NumPy is seen running that loop on float64 scalars and on floats (and, for a binary
    ufunc, with an int operand, which the kernels take too).  For each call the probe
    (_scalar_kernels.h) stands in for the loop in the ufunc's table, records what NumPy
    passes (one element, the strides, the loop data) and forwards to the loop.  -> (table
    entry, strides) when proven, else why not (a str).  Nothing of the engine changes."""
    cdef cnp.ufunc u
    cdef int i, k, entry = -1
    cdef int nin = 2 if _loop_id(name) >= FG_FIRST_BINARY else 1
    cdef cnp.PyUFuncGenericFunction loop
    cdef void* data
    cdef double mine, theirs
    cdef fg_ufunc_loop trial
    if ufunc is None:
        return "unbound"
    if FG_FP_ERRORS == 0:
        return "this platform cannot test floating-point exception flags"
    if type(ufunc) is not cnp.ufunc or getattr(ufunc, "__name__", None) != name:
        return "{!r} is not NumPy's ufunc {}".format(ufunc, name)
    u = <cnp.ufunc>ufunc
    if u.nin != nin or u.nout != 1 or u.functions is NULL or u.types is NULL:
        return "{} is not a {} ufunc with a loop table".format(name, "binary" if nin == 2 else "unary")
    for i in range(u.ntypes):   # NumPy takes the first loop whose types match
        if all([u.types[(nin + 1) * i + k] == cnp.NPY_DOUBLE for k in range(nin + 1)]):
            entry = i
            break
    if entry < 0 or u.functions[entry] is NULL:
        return "{} has no float64 loop in its table".format(name)
    loop = u.functions[entry]
    data = NULL if u.data is NULL else u.data[entry]
    if nin == 1:
        calls = [(_float64(0.5),), (0.5,)]
    else:
        calls = [(_float64(0.5), _float64(1.5)), (0.5, 1.5), (_float64(0.5), 2), (0.5, 2), (2, _float64(1.5))]
    # NumPy's first call on a type may take a longer path than the later ones (NumPy 2.4
    # fills a cache there, then calls the loop from a shortcut for scalars, with other
    # strides): the probe watches the calls after it
    for args in calls:
        ufunc(*args)
    fg_probe.loop, fg_probe.nargs, fg_probe.calls, fg_probe.consistent = <fg_numpy_loop>loop, nin + 1, 0, 0
    u.functions[entry] = <cnp.PyUFuncGenericFunction>fg_probe_loop
    try:
        by_numpy = [ufunc(*args) for args in calls + calls]
    finally:
        u.functions[entry] = loop
    if not (fg_probe.calls == len(by_numpy) and fg_probe.consistent and fg_probe.n == 1
            and fg_probe.data == data):
        return ("NumPy did not run the table's float64 loop once per scalar call, on one "
                "element (calls {}, n {}, same arguments {})".format(
                    fg_probe.calls, fg_probe.n, bool(fg_probe.consistent)))
    trial.functions, trial.data, trial.index = <fg_numpy_loop*>u.functions, <void**>u.data, entry
    for k in range(nin + 1):
        trial.steps[k] = fg_probe.steps[k]
    for args, v in zip(calls + calls, by_numpy):   # and the kernel's own call gives NumPy's result
        mine = fg_run_loop(&trial, args[0]) if nin == 1 else fg_run_loop2(&trial, args[0], args[1])
        theirs = PyFloat_AS_DOUBLE(v) if type(v) is _float64 else NAN
        if memcmp(&mine, &theirs, sizeof(double)) != 0:
            return "the loop called here gave {!r}, NumPy {!r}".format(mine, v)
    return (entry,) + tuple([trial.steps[k] for k in range(nin + 1)])


cdef dict _probe_numpy_loops(dict ufuncs):
    """name -> what _probe_numpy_loop found, for every loop name (those not in ``ufuncs``
    are to be unbound)."""
    return {name: _probe_numpy_loop(name, ufuncs.get(name)) for name in numpy_loop_names()}


cdef _install_numpy_loops(dict ufuncs, dict probed):
    """Bind each loop that ``probed`` proved, from its ufunc in ``ufuncs``; unbind the
    others (a kernel whose loop is unbound computes nothing: its primitive or rule runs
    the Python code)."""
    cdef fg_ufunc_loop* slot
    cdef cnp.ufunc u
    cdef Py_ssize_t k
    _loop_ufuncs.clear()
    _loop_status.clear()
    for name, found in probed.items():
        slot = &fg_loops[_loop_id(name)]
        slot.functions = NULL
        if type(found) is not tuple:
            _loop_status[name] = found
            continue
        u = <cnp.ufunc>ufuncs[name]
        slot.data, slot.index = <void**>u.data, found[0]
        for k in range(len(found) - 1):
            slot.steps[k] = found[k + 1]
        slot.functions = <fg_numpy_loop*>u.functions
        _loop_ufuncs[name], _loop_status[name] = u, None


# ---- switching kernels on (through bind's scalar_kernels and scalar_vjps) ----------------

def scalar_kernel_names():
    """The kernels of this engine: (unary forward, binary forward, reverse) names."""
    cdef int k = 0
    unary, binary, reverse = [], [ELEMENT_KERNEL], ["g", SCATTER_KERNEL]
    while fg_unary_kernels[k].name is not NULL:
        unary.append(fg_unary_kernels[k].name.decode())
        k += 1
    k = 0
    while fg_binary_kernels[k].name is not NULL:
        binary.append(fg_binary_kernels[k].name.decode())
        k += 1
    k = 0
    while fg_vjp_kernels[k].name is not NULL:
        reverse.append(fg_vjp_kernels[k].name.decode())
        k += 1
    return tuple(unary), tuple(binary), tuple(reverse)


def scalar_kernel_loop(name):
    """The NumPy loop (a numpy_loop_names() name) that the forward or reverse kernel
    ``name`` calls, or None for an IEEE kernel."""
    cdef int k = _unary_index(name)
    cdef int b = _binary_index(name)
    cdef int loop = FG_IEEE
    if k >= 0:
        loop = fg_unary_kernels[k].loop
    elif b >= 0:
        loop = fg_binary_kernels[b].loop
    elif name != "g" and name != SCATTER_KERNEL and name != ELEMENT_KERNEL:
        loop = fg_vjp_kernels[_vjp_kernel_index(name)].loop
    return None if loop == FG_IEEE else fg_loop_names[loop].decode()


cdef int _unary_index(str name) except -2:
    cdef bytes key = name.encode()
    cdef int k = 0
    while fg_unary_kernels[k].name is not NULL:
        if strcmp(fg_unary_kernels[k].name, key) == 0:
            return k
        k += 1
    return -1


cdef int _binary_index(str name) except -2:
    cdef bytes key = name.encode()
    cdef int k = 0
    while fg_binary_kernels[k].name is not NULL:
        if strcmp(fg_binary_kernels[k].name, key) == 0:
            return k
        k += 1
    return -1


cdef fg_kernel2 _kernel2(str name) except? NULL:
    cdef int k = _binary_index(name)
    return NULL if k < 0 else fg_binary_kernels[k].f


cdef int _vjp_kernel_index(str name) except -2:
    cdef bytes key = name.encode()
    cdef int k = 0
    while fg_vjp_kernels[k].name is not NULL:
        if strcmp(fg_vjp_kernels[k].name, key) == 0:
            return k
        k += 1
    raise ValueError("no reverse scalar kernel named {!r}".format(name))


cdef _check_loop(int loop, str kernel, object fun, dict loops):
    """A kernel that calls NumPy's loop ``loop`` may be switched on only while that loop is
    bound (``loops``: name -> ufunc of those bound), and (``fun`` not None) only for the
    ufunc it was bound from."""
    if loop == FG_IEEE:
        return
    name = fg_loop_names[loop].decode()
    if name not in loops:
        raise ValueError("the scalar kernel {!r} calls NumPy's loop for {!r}, which is not bound "
                         "(bind's numpy_loops)".format(kernel, name))
    if fun is not None and fun is not loops[name]:
        raise ValueError("the scalar kernel {!r} stands for {!r} only, not for {!r}".format(
            kernel, loops[name], fun))


cdef _check_kernel_loops(str table_name, dict table, dict loops):
    """Every kernel of bind's scalar_kernels or scalar_vjps ``table`` (kernels known to
    exist) has its NumPy loop among ``loops``, a forward one from its primitive's ufunc."""
    cdef int k
    for key, (kernel, flag) in table.items():
        if table_name == "scalar_kernels":
            k = _unary_index(kernel)
            if k >= 0:
                _check_loop(fg_unary_kernels[k].loop, kernel, (<Primitive>key).fun, loops)
            elif _binary_index(kernel) >= 0:
                _check_loop(fg_binary_kernels[_binary_index(kernel)].loop, kernel, (<Primitive>key).fun, loops)
        elif kernel != "g" and kernel != SCATTER_KERNEL:
            _check_loop(fg_vjp_kernels[_vjp_kernel_index(kernel)].loop, kernel, None, loops)


cdef _set_scalar_kernel(Primitive prim, name, bint needs_float64):
    """Compute ``prim`` on float64/float scalars with the forward kernel ``name`` (one of
    scalar_kernel_names()[0] or [1]); ``None`` switches it off.  ``needs_float64``: fun
    gives a float64 only when an argument is one (Python's operators on two floats give
    a float), so the kernel leaves two floats to fun.  (bind checked that the kernel
    exists and that its NumPy loop, if it calls one, is bound from ``prim``'s ufunc.)"""
    prim.kernel1, prim.kernel2, prim.kernel_fun, prim.kernel_element = NULL, NULL, None, False
    if name is None:
        return
    cdef int k = _unary_index(name)
    if name == ELEMENT_KERNEL:
        prim.kernel_element = True
    elif k >= 0:
        prim.kernel1 = fg_unary_kernels[k].f
    else:
        prim.kernel2 = _kernel2(name)
        if prim.kernel2 is NULL:
            raise ValueError("no forward scalar kernel named {!r}".format(name))
    prim.kernel_fun, prim.kernel_needs_float64 = prim.fun, needs_float64


cdef _set_scalar_vjp(VJPRule rule, int argnum, name, bint checks_target):
    """Compute ``rule``'s DIRECT entry for ``argnum`` (0 or 1) on float64 scalars with the
    reverse kernel ``name`` (``"g"``: the rule returns g itself); ``None`` switches it off.
    ``checks_target``: the rule casts its result to that argument's type (unbroadcast), so
    the kernel applies only when the argument is a float64 or a float too ("g" always
    checks).  (bind checked the kernel and its NumPy loop.)"""
    if not 0 <= argnum < 2:
        raise ValueError("reverse scalar kernels exist for argnums 0 and 1 only")
    if name is not None and rule.kinds[argnum] != K_DIRECT:
        raise ValueError("argnum {} of this rule is not a DIRECT rule".format(argnum))
    rule.kernels[argnum], rule.kernel_reads[argnum] = NULL, 0
    if name is None:
        return
    if name == "g":
        rule.kernel_reads[argnum] = READS_IDENTITY
        return
    if name == SCATTER_KERNEL:
        rule.kernel_reads[argnum] = READS_SCATTER
        return
    cdef int k = _vjp_kernel_index(name)
    rule.kernels[argnum], rule.kernel_reads[argnum] = fg_vjp_kernels[k].f, fg_vjp_kernels[k].reads
    if checks_target:
        rule.kernel_reads[argnum] |= FG_READS_X if argnum == 0 else FG_READS_Y


def eval_scalar_kernel(name, *xs):
    """The forward kernel ``name`` at the floats ``xs``, as a Python float (for checks; a
    kernel whose NumPy loop is unbound gives nan)."""
    cdef int k = _unary_index(name)
    cdef fg_kernel2 f2 = NULL
    if k >= 0:
        x, = xs
        return fg_unary_kernels[k].f(x)
    f2 = _kernel2(name)
    if f2 is NULL:
        raise ValueError("no forward scalar kernel named {!r}".format(name))
    x, y = xs
    return f2(x, y)


cdef object _NOT_BY_KERNEL = object()


def _python_rule_not_run(*args, **kwargs):
    return _NOT_BY_KERNEL


def eval_primitive_kernel(Primitive prim, *args):
    """``prim(*args)`` by its forward kernel, or None where the kernel does not apply and
    ``prim.fun`` would run (for checks; not thread-safe).  It calls the primitive with its
    function swapped for a marker, as eval_rule_kernel does, so that the kernel keeps a
    single caller."""
    fun = prim.fun
    if prim.kernel_fun is None or prim.kernel_fun is not fun or prim.kernel_element:
        return None
    prim.fun = prim.kernel_fun = _python_rule_not_run
    try:
        out = prim(*args)
    finally:
        prim.fun = prim.kernel_fun = fun
    return None if out is _NOT_BY_KERNEL else out


def eval_rule_kernel(VJPRule rule, Py_ssize_t argnum, g, ans, tuple args):
    """The cotangent of argument ``argnum`` (0-7) by the rule's reverse kernel, or None
    where the kernel does not apply and the Python rule would run (for checks; not
    thread-safe).  It runs the rule with its Python function swapped for a marker, so that
    the kernel keeps a single caller (the C compiler inlines it there)."""
    if not 0 <= argnum < 8 or rule.kinds[argnum] != K_DIRECT:
        return None
    funcs = rule.funcs
    rule.funcs = funcs[:argnum] + (_python_rule_not_run,) + funcs[argnum + 1:]
    try:
        cot = rule.rule_for(argnum, g, ans, fg_tuple_items(args), len(args), None, False)
    finally:
        rule.funcs = funcs
    return None if cot is _NOT_BY_KERNEL else cot


def eval_scalar_vjp(name, double g, double ans, double x, double y):
    """The reverse kernel ``name`` at (g, ans, x, y), as a Python float (for checks)."""
    if name == "g":
        return g
    return fg_vjp_kernels[_vjp_kernel_index(name)].f(g, ans, x, y)
