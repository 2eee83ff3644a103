# The compiled engine's typed contract: one field per line, each saying what it holds.
# _core_py.py and its modules are the same engine in plain Python; keep the two in step.

cdef extern from "_scalar_kernels.h":
    ctypedef double (*fg_kernel1)(double)
    ctypedef double (*fg_kernel2)(double, double)
    ctypedef double (*fg_vjp_kernel)(double, double, double, double)


from cpython.object cimport PyObject


cdef class Hooks:                    # _core_seam: the runtime switches, read on every node
    cdef public object debug         # debug-mode checks (fastgrad._debug), or None
    cdef public object record_replay # while a recompute block is open: (node, ans, args, kwargs) -> replay or None


cdef class Box:
    cdef public object _value        # the traced value (itself a Box of an outer trace at higher order)
    cdef public long long _trace     # id of the trace that made this box; nested traces have larger ids
    cdef public object _node         # the node that recorded how _value was computed
    cdef object __weakref__


cdef class Primitive:
    cdef public object fun           # the raw function, called on plain values
    cdef public object _notrace_types  # frozenset of node types under which calls are not recorded, or None
    cdef public object _ufunc        # the NumPy ufunc of a ufunc or operator primitive (NEP 13 dispatch), or None
    cdef fg_kernel1 kernel1          # C version of fun on one float64/float, or NULL (see _scalar_kernels.h)
    cdef fg_kernel2 kernel2          # C version of fun on two float64/float, or NULL
    cdef object kernel_fun           # the fun the kernel stands for: it applies only while fun is this
    cdef bint kernel_needs_float64   # fun gives a float64 only if an argument is one (Python's operators)
    cdef bint kernel_element         # fun is A[idx]: one element of a float64 array is read in C
    cdef void* _vectorcall           # CPython's vectorcall entry for this object (calls without a tuple)
    cdef object _vjp_rule            # primitive_vjps.get(self) as of primitive_vjps.version _vjp_rule_version
    cdef unsigned long long _vjp_rule_version  # (0: not looked up yet; versions start at 1)
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
    cdef readonly object reads       # None (every rule reads every argument), or for argnums 0-7 a bit mask each: the arguments that rule reads the values of (of the others only shape and dtype)
    cdef unsigned int read_masks[8]  # reads as C integers (all bits set where reads is None)
    cdef bint has_reads              # reads is not None
    cdef int kinds[8]                # entries[i]'s kind for argnums 0-7 (-1: no entry)
    cdef tuple funcs                 # entries[i]'s function for argnums 0-7 (None where there is none)
    cdef fg_vjp_kernel kernels[2]     # C version of entries[0], entries[1] on float64 scalars, or NULL
    cdef int kernel_reads[2]          # FG_READS_* flags of those kernels; -1: the rule returns g itself
    cdef object rule_for(self, Py_ssize_t argnum, object g, object ans, PyObject** argv,
                         Py_ssize_t n, dict kwargs, bint g_is_spare)
    cpdef object one(self, object argnum, object g, object ans, tuple args, dict kwargs)


cdef class JVPRule:
    cdef readonly object fun         # the primitive, for error messages and SAME rules
    cdef readonly dict entries       # argnum -> (kind, function): ZERO, DIRECT or SAME
    cdef readonly object default     # entry for argnums not in entries (def_linear), or None
    cpdef object one(self, object argnum, object g, object ans, tuple args, dict kwargs)


cdef class VJPNode(Node):
    cdef object _parents                 # the node of the boxed argument if there is one, else a tuple of them
    cdef readonly tuple parent_argnums   # positions of the boxed arguments in args
    cdef readonly object fun             # the primitive that was called
    cdef readonly object rule            # primitive_vjps[fun] when recorded (None: no rule)
    cdef readonly object value           # the output (what rules call ans)
    cdef object _arg0                    # the first unboxed positional argument, when there are at most two
    cdef object _arg1                    # the second (None when there is none)
    cdef tuple _args                     # all of them when there are more than two, else None
    cdef readonly object _kwargs         # the keyword arguments (a dict), or None when there were none
    cdef readonly object replay          # how to recompute its output and arguments (fastgrad.recompute), or None
    cdef object pending                  # cotangent summed so far by the running backward pass (None: none yet)
    cdef bint owned                      # pending is an array that pass allocated (so it may add into it)
    cdef int nparents                    # how many boxed arguments (one is kept without a tuple: W5 memory)
    cdef int nargs                       # how many arguments (two or fewer are kept without a tuple)
    cdef int waiting                     # consumers of this node that pass has not processed yet
    cdef unsigned long long stamp        # id of the backward pass using pending/owned/waiting (0: none)
    cdef object __weakref__


cdef class JVPNode(Node):
    cdef public object g                 # tangent of the output; None is a symbolic zero
    cdef object __weakref__


cdef class GCPause:
    pass
