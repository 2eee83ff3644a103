# Forward mode: a node holds the tangent of its output (compiled engine, included in
# _core.pyx; _core_forward.py is the pure one).

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

