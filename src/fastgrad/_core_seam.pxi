# The one seam between the engine and the layers above it (compiled engine, included in
# _core.pyx; _core_seam.py is the pure one and lists the entries and who binds each).
# Each entry is kept in a C variable of the engine, read where it is needed.

@cython.final
cdef class Hooks:
    """The runtime switches that the engine reads on every node: one object, owned by the
    layer above (fastgrad._hooks binds it), whose fields that layer changes.

    - ``debug``: debug-mode checks (fastgrad._debug) or None: ``recorded(node)`` when a
      node is recorded, ``before_backward(node)`` before its rule runs and
      ``checked(node, argnum, g, cotangent)`` for each cotangent it gives;
    - ``record_replay``: while a recompute block is open (fastgrad._recompute), the
      function ``(node, ans, args, kwargs) -> replay or None`` called for each node
      recorded; a node given a replay drops its saved values."""

    def __init__(self):
        self.debug = self.record_replay = None


cdef object _generic_add = None          # (prev or None, prev_owned, g) -> (sum, owned)
cdef object _sparse_type = None          # the sparse cotangent type, added in place via .mut_add
cdef object _start_sum = None            # sparse g -> the first term of a sum it starts
cdef object _finish_sum = None           # an owned non-scalar sum -> the value rules may read
cdef object _replayed_cotangents = None  # (node, g, memo) -> cotangents of a node with a replay
cdef object _explain_failure = None      # (primitive, args, kwargs, error) -> error to raise, or None
cdef Hooks _hooks = Hooks()              # the runtime switches (all off until one is bound)

_ENTRIES = ("generic_add", "sparse_type", "start_sum", "finish_sum", "replayed_cotangents", "explain_failure", "hooks",
            "box_operators", "box_fast_types", "box_general_types", "numpy_loops", "scalar_kernels",
            "scalar_vjps")
_OPERATOR_NAMES = ("add", "sub", "mul", "truediv", "pow", "mod", "matmul", "neg")
_TABLES = ("box_operators", "scalar_kernels", "scalar_vjps")
cdef dict _bound = dict.fromkeys(_ENTRIES)   # what is bound now, as bind keeps it
_bound.update(hooks=_hooks, box_operators={}, box_fast_types=frozenset(), box_general_types=frozenset(),
              numpy_loops={}, scalar_kernels={}, scalar_vjps={})


def bind(**entries):
    """Hand the engine what it takes from the layers above (the entries are listed in
    _core_seam.py); unknown names and ill-typed values raise TypeError (an unknown scalar
    kernel or NumPy loop, or a kernel whose loop is not bound, ValueError), and nothing is
    changed then.  -> {name: previous value} of the entries given."""
    global _generic_add, _sparse_type, _start_sum, _finish_sum, _replayed_cotangents, _hooks, _explain_failure
    checked = {name: _checked(name, value) for name, value in entries.items()}
    # the kernels switched on must find their NumPy loops bound once this call is done
    cdef dict loops = _loop_ufuncs, probed = None
    if "numpy_loops" in checked:
        probed = _probe_numpy_loops(checked["numpy_loops"])
        loops = {name: checked["numpy_loops"][name] for name, found in probed.items() if type(found) is tuple}
    for name in ("scalar_kernels", "scalar_vjps"):
        if name in checked:
            _check_kernel_loops(name, checked[name], loops)
    previous = {name: _bound[name] for name in checked}
    _bound.update(checked)
    _generic_add, _sparse_type = _bound["generic_add"], _bound["sparse_type"]
    _start_sum, _finish_sum = _bound["start_sum"], _bound["finish_sum"]
    _replayed_cotangents, _hooks = _bound["replayed_cotangents"], _bound["hooks"]
    _explain_failure = _bound["explain_failure"]
    if "box_operators" in checked or "box_fast_types" in checked or "box_general_types" in checked:
        _install_box_operators(_bound["box_operators"], _bound["box_fast_types"], _bound["box_general_types"])
    if probed is not None:
        _install_numpy_loops(checked["numpy_loops"], probed)
    if "scalar_kernels" in checked:
        _install_scalar_kernels(previous["scalar_kernels"], checked["scalar_kernels"])
    if "scalar_vjps" in checked:
        _install_scalar_vjps(previous["scalar_vjps"], checked["scalar_vjps"])
    return previous


def _checked(name, value):
    """``value`` as the engine keeps it for entry ``name``, or TypeError."""
    if name not in _ENTRIES:
        raise TypeError("bind: unknown entry {!r} (the entries are {})".format(name, ", ".join(_ENTRIES)))
    if name == "hooks":
        if type(value) is not Hooks:
            raise TypeError("bind: hooks must be a Hooks of this engine, not {!r}".format(type(value)))
    elif name == "sparse_type":
        if value is not None and not isinstance(value, type):
            raise TypeError("bind: sparse_type must be a type or None, not {!r}".format(value))
    elif name in ("box_fast_types", "box_general_types"):
        value = frozenset(value)
        if not all(isinstance(t, type) for t in value):
            raise TypeError("bind: {} must be types".format(name))
    elif name == "numpy_loops":
        if not isinstance(value, dict):
            raise TypeError("bind: numpy_loops must be a dict, not {!r}".format(type(value)))
        value = dict(value)
        _check_numpy_loops(value)
    elif name in _TABLES:
        if not isinstance(value, dict):
            raise TypeError("bind: {} must be a dict, not {!r}".format(name, type(value)))
        if not all(type(pair) is tuple and len(pair) == 2 for pair in value.values()):
            raise TypeError("bind: the values of {} are pairs".format(name))
        if name == "box_operators" and set(value) - set(_OPERATOR_NAMES):
            raise TypeError("bind: box_operators maps the operator names {} to (fast, general) "
                            "primitives".format(", ".join(_OPERATOR_NAMES)))
        if name != "box_operators":
            _check_kernels(name, value)
        value = dict(value)
    elif value is not None and not callable(value):
        raise TypeError("bind: {} must be callable or None, not {!r}".format(name, value))
    return value


cdef _check_kernels(str name, dict table):
    """The kernels a table names exist, for primitives or DIRECT rules of argnums 0 and 1."""
    unary, binary, reverse = scalar_kernel_names()
    for key, (kernel, flag) in table.items():
        if name == "scalar_kernels":
            if not isinstance(key, Primitive) or kernel not in unary + binary:
                raise ValueError("bind: scalar_kernels maps primitives to (one of {}, needs_float64), "
                                 "not {!r}: {!r}".format(unary + binary, key, kernel))
            if kernel == ELEMENT_KERNEL and (<Primitive>key).fun is not _operator.getitem:
                raise ValueError("bind: the kernel {!r} is for a primitive of operator.getitem, not {!r}".format(
                    kernel, key))
        elif not (type(key) is tuple and len(key) == 2 and type(key[0]) is VJPRule and key[1] in (0, 1)
                  and (<VJPRule>key[0]).kinds[<int>key[1]] == K_DIRECT and kernel in reverse):
            raise ValueError("bind: scalar_vjps maps (VJPRule, argnum 0 or 1 of a DIRECT rule) to "
                             "(one of {}, checks_target), not {!r}: {!r}".format(reverse, key, kernel))
        elif kernel == SCATTER_KERNEL and key[1] != 0:
            raise ValueError("bind: the kernel {!r} is for argnum 0 (the indexed array), not {!r}".format(
                kernel, key[1]))


cdef _install_scalar_kernels(dict before, dict now):
    for prim in before:
        if prim not in now:
            _set_scalar_kernel(prim, None, False)
    for prim, (kernel, needs_float64) in now.items():
        _set_scalar_kernel(prim, kernel, needs_float64)


cdef _install_scalar_vjps(dict before, dict now):
    for key in before:
        if key not in now:
            _set_scalar_vjp(key[0], key[1], None, False)
    for (rule, argnum), (kernel, checks_target) in now.items():
        _set_scalar_vjp(rule, argnum, kernel, checks_target)
