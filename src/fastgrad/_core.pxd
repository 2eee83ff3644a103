# The compiled engine's typed contract: one field per line, each saying what it holds.
# _core_py.py is the same engine in plain Python; keep the two in step.

cdef class Box:
    cdef public object _value        # the traced value (itself a Box of an outer trace at higher order)
    cdef public long long _trace     # id of the trace that made this box; nested traces have larger ids
    cdef public object _node         # the node that recorded how _value was computed
    cdef object __weakref__


cdef class Primitive:
    cdef public object fun           # the raw function, called on plain values
    cdef public object _notrace_types  # frozenset of node types under which calls are not recorded, or None
    cdef dict __dict__               # __name__, __doc__, __wrapped__ and the raw function's attributes


cdef class NotracePrimitive(Primitive):
    pass


cdef class Node:
    pass


cdef class VJPRule:
    cdef readonly object fun         # the primitive, for error messages
    cdef readonly dict entries       # argnum -> (kind, function): ZERO, MAKER or DIRECT
    cdef readonly bint saves_ans     # the rules read ans (else nodes keep None in its place)
    cdef readonly bint saves_args    # the rules read the arguments (else nodes keep Nones)
    cpdef object one(self, object argnum, object g, object ans, tuple args, dict kwargs)


cdef class JVPRule:
    cdef readonly object fun         # the primitive, for error messages and SAME rules
    cdef readonly dict entries       # argnum -> (kind, function): ZERO, DIRECT or SAME
    cdef readonly object default     # entry for argnums not in entries (def_linear), or None
    cpdef object one(self, object argnum, object g, object ans, tuple args, dict kwargs)


cdef class VJPNode(Node):
    cdef readonly tuple parents          # nodes of the boxed arguments, in argument order
    cdef readonly tuple parent_argnums   # their positions in args
    cdef readonly object fun             # the primitive that was called
    cdef readonly object rule            # primitive_vjps[fun] when recorded (None: no rule)
    cdef readonly object value           # the output (what rules call ans)
    cdef readonly tuple args             # the unboxed positional arguments
    cdef readonly object _kwargs         # the keyword arguments (a dict), or None when there were none
    cdef object pending                  # cotangent summed so far by the running backward pass (None: none yet)
    cdef bint owned                      # pending is an array that pass allocated (so it may add into it)
    cdef Py_ssize_t waiting              # consumers of this node that pass has not processed yet
    cdef unsigned long long stamp        # id of the backward pass using the three fields above (0: none)
    cdef object __weakref__
    cdef void release(self)


cdef class JVPNode(Node):
    cdef public object g                 # tangent of the output; None is a symbolic zero
    cdef object __weakref__


cdef class GCPause:
    pass
