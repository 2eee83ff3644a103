# The registries of rules, and reverse rules applied to a recorded node (compiled engine,
# included in _core.pyx; _core_rules.py is the pure one).

cdef class RuleTable(dict):
    """A dict that counts its changes in ``version``.  Every primitive remembers the reverse
    rule it last found here and the version it found it at (_vjp_rule_of), so recording a
    node costs a comparison instead of a hash lookup until the next change."""

    cdef readonly unsigned long long version

    # Each change is counted even when it fails half-way (update() of a bad sequence): a
    # count too many costs one lookup; one too few would keep a stale rule.
    def __init__(self, *args, **kwargs):
        try:
            dict.__init__(self, *args, **kwargs)
        finally:
            self.version += 1

    def __setitem__(self, key, value):
        try:
            dict.__setitem__(self, key, value)
        finally:
            self.version += 1

    def __delitem__(self, key):
        try:
            dict.__delitem__(self, key)
        finally:
            self.version += 1

    def __ior__(self, other):
        try:
            dict.update(self, other)
        finally:
            self.version += 1
        return self

    def update(self, *args, **kwargs):
        try:
            dict.update(self, *args, **kwargs)
        finally:
            self.version += 1

    def setdefault(self, key, default=None, /):
        try:
            return dict.setdefault(self, key, default)
        finally:
            self.version += 1

    def pop(self, *args):
        try:
            return dict.pop(self, *args)
        finally:
            self.version += 1

    def popitem(self):
        try:
            return dict.popitem(self)
        finally:
            self.version += 1

    def clear(self):
        try:
            dict.clear(self)
        finally:
            self.version += 1

    def __reduce__(self):
        # copy.copy and pickle: a new table with these entries (the count is this table's own;
        # the pickling Cython would write for a cdef class keeps the count and drops the entries)
        return (type(self), (dict(self),))


primitive_vjps = RuleTable()   # primitive -> VJPRule, or any f(argnums, ans, args, kwargs) -> (g -> cotangents)
primitive_jvps = {}        # primitive -> JVPRule, or any f(argnums, gs, ans, args, kwargs) -> tangent
ZERO, MAKER, DIRECT, SAME = K_ZERO, K_MAKER, K_DIRECT, K_SAME   # kinds of per-argument rules
cdef RuleTable _vjps = primitive_vjps
cdef dict _jvps = primitive_jvps


cdef inline object _vjp_rule_of(object fun):
    """``primitive_vjps.get(fun)``; a primitive keeps the answer until the table changes."""
    cdef Primitive prim = fun if isinstance(fun, Primitive) else None
    cdef unsigned long long version = _vjps.version   # read first: the lookup may run Python code
    if prim is not None and prim._vjp_rule_version == version:
        return prim._vjp_rule
    cdef PyObject* found = PyDict_GetItemWithError(_vjps, fun)
    rule = <object>found if found is not NULL else None
    if prim is not None:
        prim._vjp_rule, prim._vjp_rule_version = rule, version
    return rule


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

    def __init__(self, fun, dict entries, bint saves_ans=True, bint saves_args=True, reads=None):
        cdef Py_ssize_t i
        self.fun = fun
        self.entries = entries
        self.saves_ans = saves_ans
        self.saves_args = saves_args
        self.reads = reads
        self.has_reads = reads is not None
        for i in range(8):
            self.read_masks[i] = 0xFFFFFFFFu if self.reads is None else <unsigned int>self.reads[i]
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
                         dict kwargs, bint g_is_spare):
        """``one`` for an argnum 0 <= i < 8 and the arguments ``argv[:n]``, from the C tables
        (``g_is_spare``: as for _vjp_by_kernel)."""
        cdef int kind = self.kinds[i]
        if kind == K_DIRECT:
            if i < 2 and (self.kernel_reads[i] != 0 or self.kernels[i] is not NULL):
                cot = _vjp_by_kernel(self, i, g, ans, argv, n, kwargs, g_is_spare)
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
                return self.rule_for(i, g, ans, fg_tuple_items(args), n, kwargs, False)
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


cdef object _node_vjp(VJPNode node, object g, dict memo):
    """The cotangents of a VJPNode's parents (None = zero) given ``g`` for its output, by
    its rule; ``memo``: the running pass's recomputed outputs (or None)."""
    if node.replay is not None:
        return _replayed_cotangents(node, g, {} if memo is None else memo)
    rule, argnums = node.rule, node.parent_argnums
    if type(rule) is VJPRule:
        return [(<VJPRule>rule).one(i, g, node.value, node.args, node._kwargs) for i in argnums]
    if rule is None:
        raise _missing("VJP", node.fun, argnums)
    return rule(argnums, node.value, node.args, node.kwargs)(g)


