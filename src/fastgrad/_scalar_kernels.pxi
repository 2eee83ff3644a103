# Scalar kernels (included in _core.pyx): C arithmetic for primitives and reverse rules
# on float64 scalars, with results bit for bit NumPy's (see _scalar_kernels.h for why
# and when).  fastgrad.numpy switches them on per primitive and per rule after checking
# them (fastgrad/numpy/_scalar_kernels.py); the pure engine has none and gives the same
# values by running the Python code they stand for.

from libc.string cimport strcmp

cdef extern from "_scalar_kernels.h":
    ctypedef struct fg_named1:
        const char* name
        fg_kernel1 f
    ctypedef struct fg_named2:
        const char* name
        fg_kernel2 f
    ctypedef struct fg_named_vjp:
        const char* name
        fg_vjp_kernel f
        int reads
    const fg_named1* fg_unary_kernels
    const fg_named2* fg_binary_kernels
    const fg_named_vjp* fg_vjp_kernels
    bint fg_is_clean(double r)
    int FG_READS_ANS, FG_READS_X, FG_READS_Y
    double fg_v_neg_g(double, double, double, double)
    double fg_v_g_times_y(double, double, double, double)
    double fg_v_x_times_g(double, double, double, double)
    double fg_v_g_over_y(double, double, double, double)

cdef extern from *:
    """
    /* A NumPy float64 scalar holding v: float64 subclasses Python's float and shares its
       layout, so the value goes where PyFloat_AS_DOUBLE reads it. */
    static PyObject *fg_new_float64(PyObject *float64_type, double v) {
        PyTypeObject *t = (PyTypeObject *)float64_type;
        PyObject *o = t->tp_alloc(t, 0);
        if (o != NULL) ((PyFloatObject *)o)->ob_fval = v;
        return o;
    }
    """
    object fg_new_float64(object float64_type, double v)

cdef int READS_IDENTITY = -1    # kernel_reads value of a rule that returns g itself ("g")


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
            if fg_is_clean(r):
                return fg_new_float64(_float64, r)
    elif n == 2 and self.kernel2 is not NULL:
        a = <object>argv[0]
        b = <object>argv[1]
        if _is_float(a) and _is_float(b) and (
                not self.kernel_needs_float64 or type(a) is _float64 or type(b) is _float64):
            r = self.kernel2(PyFloat_AS_DOUBLE(a), PyFloat_AS_DOUBLE(b))
            if fg_is_clean(r):
                return fg_new_float64(_float64, r)
    return None


cdef inline bint _cotangent_value(object g, double* out):
    """The value of a float64 cotangent: a float64 scalar, or the 0-d float64 array that
    grad seeds with (the Python rules give a float64 scalar for both)."""
    if type(g) is _float64:
        out[0] = PyFloat_AS_DOUBLE(g)
        return True
    if type(g) is _ndarray and cnp.PyArray_NDIM(<cnp.ndarray>g) == 0 \
            and cnp.PyArray_TYPE(<cnp.ndarray>g) == cnp.NPY_DOUBLE:
        memcpy(out, cnp.PyArray_DATA(<cnp.ndarray>g), sizeof(double))
        return True
    return False


cdef object _vjp_by_kernel(VJPRule rule, Py_ssize_t i, object g, object ans, PyObject** argv,
                           Py_ssize_t n, dict kwargs):
    """The cotangent of argument ``i`` by the rule's kernel, or None when it does not
    apply: g must be a float64 and every value the kernel reads a float64 or float (or,
    for the one-operation rules of + - * /, all arrays of one shape and dtype)."""
    cdef int reads = rule.kernel_reads[i]
    cdef double x = 0.0, y = 0.0, a = 0.0, gv = 0.0, r
    if kwargs:
        return None
    if type(g) is _ndarray and cnp.PyArray_NDIM(<cnp.ndarray>g) > 0:
        return _vjp_on_arrays(rule, i, g, argv, n)
    if not _cotangent_value(g, &gv):
        return None
    if reads & FG_READS_X or reads == READS_IDENTITY and i == 0:
        if n < 1 or not _is_float(<object>argv[0]):
            return None
        x = PyFloat_AS_DOUBLE(<object>argv[0])
    if reads & FG_READS_Y or reads == READS_IDENTITY and i == 1:
        if n < 2 or not _is_float(<object>argv[1]):
            return None
        y = PyFloat_AS_DOUBLE(<object>argv[1])
    if reads == READS_IDENTITY:
        return g
    if reads & FG_READS_ANS:
        if not _is_float(ans):
            return None
        a = PyFloat_AS_DOUBLE(ans)
    r = rule.kernels[i](gv, a, x, y)
    if fg_is_clean(r):
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


cdef inline object _add_float64(object a, object b):
    """a + b for two float64 scalars, in C when the sum is a normal number."""
    cdef double r = PyFloat_AS_DOUBLE(a) + PyFloat_AS_DOUBLE(b)
    if fg_is_clean(r):
        return fg_new_float64(_float64, r)
    return a + b


# ---- switching kernels on (through bind's scalar_kernels and scalar_vjps) ----------------

def scalar_kernel_names():
    """The kernels of this engine: (unary forward, binary forward, reverse) names."""
    cdef int k = 0
    unary, binary, reverse = [], [], ["g"]
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


cdef fg_kernel1 _kernel1(str name) except? NULL:
    cdef bytes key = name.encode()
    cdef int k = 0
    while fg_unary_kernels[k].name is not NULL:
        if strcmp(fg_unary_kernels[k].name, key) == 0:
            return fg_unary_kernels[k].f
        k += 1
    return NULL


cdef fg_kernel2 _kernel2(str name) except? NULL:
    cdef bytes key = name.encode()
    cdef int k = 0
    while fg_binary_kernels[k].name is not NULL:
        if strcmp(fg_binary_kernels[k].name, key) == 0:
            return fg_binary_kernels[k].f
        k += 1
    return NULL


cdef int _vjp_kernel_index(str name) except -2:
    cdef bytes key = name.encode()
    cdef int k = 0
    while fg_vjp_kernels[k].name is not NULL:
        if strcmp(fg_vjp_kernels[k].name, key) == 0:
            return k
        k += 1
    raise ValueError("no reverse scalar kernel named {!r}".format(name))


cdef _set_scalar_kernel(Primitive prim, name, bint needs_float64):
    """Compute ``prim`` on float64/float scalars with the forward kernel ``name`` (one of
    scalar_kernel_names()[0] or [1]); ``None`` switches it off.  ``needs_float64``: fun
    gives a float64 only when an argument is one (Python's operators on two floats give
    a float), so the kernel leaves two floats to fun."""
    prim.kernel1, prim.kernel2, prim.kernel_fun = NULL, NULL, None
    if name is None:
        return
    prim.kernel1 = _kernel1(name)
    if prim.kernel1 is NULL:
        prim.kernel2 = _kernel2(name)
        if prim.kernel2 is NULL:
            raise ValueError("no forward scalar kernel named {!r}".format(name))
    prim.kernel_fun, prim.kernel_needs_float64 = prim.fun, needs_float64


cdef _set_scalar_vjp(VJPRule rule, int argnum, name, bint checks_target):
    """Compute ``rule``'s DIRECT entry for ``argnum`` (0 or 1) on float64 scalars with the
    reverse kernel ``name`` (``"g"``: the rule returns g itself); ``None`` switches it off.
    ``checks_target``: the rule casts its result to that argument's type (unbroadcast), so
    the kernel applies only when the argument is a float64 or a float too ("g" always
    checks)."""
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
    cdef int k = _vjp_kernel_index(name)
    rule.kernels[argnum], rule.kernel_reads[argnum] = fg_vjp_kernels[k].f, fg_vjp_kernels[k].reads
    if checks_target:
        rule.kernel_reads[argnum] |= FG_READS_X if argnum == 0 else FG_READS_Y


def eval_scalar_kernel(name, *xs):
    """The forward kernel ``name`` at the floats ``xs``, as a Python float (for checks)."""
    cdef fg_kernel1 f1 = _kernel1(name)
    cdef fg_kernel2 f2 = NULL
    if f1 is not NULL:
        x, = xs
        return f1(x)
    f2 = _kernel2(name)
    if f2 is NULL:
        raise ValueError("no forward scalar kernel named {!r}".format(name))
    x, y = xs
    return f2(x, y)


def eval_scalar_vjp(name, double g, double ans, double x, double y):
    """The reverse kernel ``name`` at (g, ans, x, y), as a Python float (for checks)."""
    if name == "g":
        return g
    return fg_vjp_kernels[_vjp_kernel_index(name)].f(g, ans, x, y)
