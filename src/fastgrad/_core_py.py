"""The engine in plain Python: the executable specification of ``_core.pyx``.

Same names, same algorithms as the compiled engine.  Only ``_engine`` imports this.
A primitive call records a node holding what its rule needs (answer, arguments, the
rule itself); the rule runs in the backward pass, which visits nodes in reverse
topological order and sums each node's cotangents over its consumers.
"""

import gc
import itertools
import threading
import types
import warnings

from numpy import ndarray, float64

primitive_vjps = {}  # primitive -> VJPRule, or any f(argnums, ans, args, kwargs) -> (g -> cotangents)
primitive_jvps = {}  # primitive -> JVPRule, or any f(argnums, gs, ans, args, kwargs) -> tangent
notrace_primitives = {}  # node type -> set of primitives that are not recorded under it

# Unique across threads, so no trace state is shared: a nested trace always gets a larger id.
_trace_ids = itertools.count(1)
ZERO, MAKER, DIRECT, SAME = 0, 1, 2, 3  # kinds of per-argument rules
_IMMUTABLE = (float, complex, float64)  # cotangent types summed with `+`, never in place
_generic_add = None  # set by core: (prev or None, prev_owned, g) -> (sum, owned)
_sparse_type = None  # set by core: the sparse cotangent type, added via .mut_add


# Large freed array buffers are kept for reuse during a gradient call by a NumPy memory
# handler written in C (_buffer_cache.h, in the compiled module).  It is an allocator, not
# part of the engine, so this engine uses it too when the compiled module is built: glibc
# otherwise hands big blocks back to the kernel and faults fresh pages in (W4).
try:
    from ._core import buffer_cache_begin as _cache_begin, buffer_cache_end as _cache_end
    from ._core import buffer_cache_state
except ImportError:

    def _cache_begin():
        pass

    _cache_end = _cache_begin

    def buffer_cache_state():
        """Without the compiled module no buffers are kept: (installed, calls, kept, bytes)."""
        return False, 0, 0, 0


_gc_lock = threading.Lock()
_gc_state = [0, False]  # differentiations in progress, collector state before the first

# Ctrl-C arrives as a KeyboardInterrupt on entering a Python function or right after a call
# returns (not on returning from __enter__ to its with statement).  pause_gc undoes its pause
# if one lands part way; resume_gc can only be interrupted once its work is done, except on
# entering it: no Python code can guard that moment (a with statement does not call __exit__
# again, so that pause never ends).  The compiled GCPause is C and has no such moment.


def pause_gc():
    """Stop the cyclic collector until the matching resume_gc (counted across threads)."""
    counted = False
    try:
        with _gc_lock:
            if _gc_state[0] == 0:
                _gc_state[1] = gc.isenabled()
            _gc_state[0] += 1
            counted = True
            gc.disable()
            _cache_begin()
    except BaseException:  # interrupted part way: as if never called (inline: a call could be)
        if counted:
            with _gc_lock:
                _gc_state[0] -= 1
                if _gc_state[0] == 0 and _gc_state[1]:
                    gc.enable()
            _cache_end()  # (if the cache had not begun, an extra end does nothing)
        raise


def resume_gc(*exc_info):
    """End one pause (the arguments, which a with statement passes, are ignored)."""
    with _gc_lock:
        if _gc_state[0] > 0:
            _gc_state[0] -= 1
            if _gc_state[0] == 0 and _gc_state[1]:
                gc.enable()
            ended = True
        else:
            ended = False
    if ended:
        _cache_end()  # last: a Ctrl-C landing before it leaves buffers kept, nothing worse


def gc_pause_depth():
    """How many differentiations are pausing the collector now (0 when none)."""
    return _gc_state[0]


class GCPause:
    """``with GCPause():`` pauses the collector for the block."""

    __slots__ = ()
    __enter__ = staticmethod(pause_gc)  # the functions themselves: no frame, so no moment,
    __exit__ = staticmethod(resume_gc)  # between the with statement and their work


_start_sum = None  # set by builtins: sparse g -> the first term of a sum it starts
_finish_sum = None  # set by builtins: an owned non-scalar sum -> the value rules may read


def set_cotangent_sum_hooks(start, finish):
    """``start(g)``: the sum a sparse cotangent g starts; ``finish(total)``: what an owned sum
    that is not a scalar or an array becomes before a rule reads it."""
    global _start_sum, _finish_sum
    _start_sum, _finish_sum = start, finish


def set_generic_add(fn):
    global _generic_add
    _generic_add = fn


def set_sparse_type(tp):
    global _sparse_type
    _sparse_type = tp


_debug = None  # debug-mode checks (see fastgrad._debug), or None


_recompute_record = None  # fastgrad._recompute.record while a recompute block is open
_recompute_cotangents = None  # fastgrad._recompute.cotangents: backward of a node with a replay


def set_recompute_hooks(record, cotangents):
    """Install fastgrad._recompute's entries (``record`` None: no block is open)."""
    global _recompute_record, _recompute_cotangents
    _recompute_record, _recompute_cotangents = record, cotangents


def set_debug_hooks(hooks):
    """``hooks.recorded(node)``, ``hooks.before_backward(node)`` and
    ``hooks.checked(node, argnum, g, cotangent)`` are called when not None."""
    global _debug
    _debug = hooks


class Box:
    """A value being traced: ``_value`` at trace ``_trace``, recorded by ``_node``."""

    __slots__ = ("_value", "_trace", "_node", "__weakref__")
    type_mappings = {}
    types = set()

    def __init__(self, value, trace, node):
        self._value, self._trace, self._node = value, trace, node

    def __bool__(self):
        return bool(self._value)

    def __str__(self):
        return "Autograd {0} with value {1}".format(type(self).__name__, str(self._value))

    @classmethod
    def register(cls, value_type):
        Box.types.add(cls)
        Box.type_mappings[value_type] = cls
        Box.type_mappings[cls] = cls  # a box of a box (higher order) gets the same box type


def new_box(value, trace, node):
    box_type = Box.type_mappings.get(type(value)) or _box_type_of_subclass(type(value))
    return box_type(value, trace, node)


def _box_type_of_subclass(tp):
    """The box type of the nearest registered base of ``tp`` (e.g. a named tuple's tuple),
    remembered for ``tp``; TypeError if there is none."""
    for base in tp.__mro__[1:]:
        if base in Box.type_mappings:
            Box.type_mappings[tp] = Box.type_mappings[base]
            return Box.type_mappings[base]
    raise TypeError(_cannot_differentiate_type(tp))


def _cannot_differentiate_type(tp):
    msg = "Can't differentiate w.r.t. type {}".format(tp)
    if issubclass(tp, int):
        msg += ": integers cannot be differentiated, pass floats instead (e.g. 1.0 or x.astype(float))"
    return msg


_box_ops = {}  # operator name -> (fast primitive, general primitive)
_fast_value_types = frozenset()  # box values whose operators may use the fast one
_general_other_types = frozenset()  # other operands that always take the general one


def set_box_arithmetic(ops, fast_value_types, general_other_types):
    """Give ArithmeticBox its operators: ``ops[name] = (fast, general)`` primitives."""
    global _fast_value_types, _general_other_types
    _box_ops.clear()
    _box_ops.update(ops)
    _fast_value_types, _general_other_types = frozenset(fast_value_types), frozenset(general_other_types)


def _box_binop(name, box, other, reflected):
    pair = _box_ops.get(name)
    if pair is None:
        return NotImplemented
    fast = type(box._value) in _fast_value_types and type(other) not in _general_other_types
    prim = pair[0] if fast else pair[1]
    return prim(other, box) if reflected else prim(box, other)


def _binop_methods(name):
    return (
        lambda self, other: _box_binop(name, self, other, False),
        lambda self, other: _box_binop(name, self, other, True),
    )


_POW_MODULO = "pow() with a modulus is not differentiable (use x ** y % m on floats instead)"


class ArithmeticBox(Box):
    """A Box whose arithmetic operators call the primitives given to set_box_arithmetic."""

    __slots__ = ()
    __add__, __radd__ = _binop_methods("add")
    __sub__, __rsub__ = _binop_methods("sub")
    __mul__, __rmul__ = _binop_methods("mul")
    __truediv__, __rtruediv__ = _binop_methods("truediv")

    def __pow__(self, other, modulo=None):
        if modulo is not None:
            raise TypeError(_POW_MODULO)
        return _box_binop("pow", self, other, False)

    def __rpow__(self, other, modulo=None):
        if modulo is not None:
            raise TypeError(_POW_MODULO)
        return _box_binop("pow", self, other, True)

    __mod__, __rmod__ = _binop_methods("mod")
    __matmul__, __rmatmul__ = _binop_methods("matmul")

    def __neg__(self):
        pair = _box_ops.get("neg")
        if pair is None:
            return NotImplemented
        return (pair[0] if type(self._value) in _fast_value_types else pair[1])(self)


# The compiled engine's scalar kernels (C arithmetic on float64 scalars) have no pure
# counterpart: this engine runs the Python code they stand for, with the same results.
def scalar_kernel_names():
    return (), (), ()


def set_scalar_kernel(prim, name, needs_float64=False):
    pass


def set_scalar_vjp(rule, argnum, name, checks_target=False):
    pass


def use_compiled_operators(cls):
    """The compiled engine gives ``cls`` ArithmeticBox's C operator slots; nothing to do here."""


def isbox(x):
    return isinstance(x, Box)


def getval(x):
    while isinstance(x, Box):
        x = x._value
    return x


class Primitive:
    """A function whose calls on boxes are recorded, so that its rules apply in differentiation."""

    def __init__(self, fun):
        self.fun = fun
        self.__dict__.update(getattr(fun, "__dict__", {}))
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(self, attr, getattr(fun, attr, None))
        self.__wrapped__ = fun

    def __call__(self, *args, **kwargs):
        top, node_type = -1, None
        for a in args:
            if isinstance(a, Box) and a._trace > top:
                top, node_type = a._trace, type(a._node)
        if top < 0:
            return self.fun(*args, **kwargs)
        argvals, argnums, parents = list(args), [], []
        for i, a in enumerate(args):
            if isinstance(a, Box) and a._trace == top:
                argvals[i] = a._value
                argnums.append(i)
                parents.append(a._node)
        ans = self(*argvals, **kwargs)  # values may be boxes of outer traces: dispatch again
        if self in notrace_primitives.get(node_type, ()):
            return ans
        node = node_type(ans, self, tuple(argvals), kwargs, tuple(argnums), tuple(parents))
        return new_box(ans, top, node)

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self):
        return "<fastgrad primitive {}>".format(self.__name__)


class NotracePrimitive(Primitive):
    """A primitive that is never recorded: boxes are unwrapped and the raw function is called."""

    def __call__(self, *args, **kwargs):
        return self.fun(*[getval(a) for a in args], **kwargs)


def register_notrace(node_type, prim):
    notrace_primitives.setdefault(node_type, set()).add(prim)


def trace(start_node, fun, x):
    t = next(_trace_ids)
    start_box = new_box(x, t, start_node)
    end_box = fun(start_box)
    if isinstance(end_box, Box) and end_box._trace == t:
        return end_box._value, end_box._node
    warnings.warn("Output seems independent of input.", UserWarning, stacklevel=2)
    return end_box, None


class Node:
    """Base of node types; subclass it and pass an instance (from ``new_root``) to ``trace``."""

    __slots__ = ()

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


class VJPRule:
    """The reverse rules of one primitive, one per argument: (kind, function) by argnum.

    ``saves_ans`` / ``saves_args`` False: the rules do not read ans / the arguments, so
    nodes keep None in their place (the memory is released after the forward pass)."""

    __slots__ = ("fun", "entries", "saves_ans", "saves_args")

    def __init__(self, fun, entries, saves_ans=True, saves_args=True):
        self.fun, self.entries = fun, entries
        self.saves_ans, self.saves_args = saves_ans, saves_args

    def one(self, argnum, g, ans, args, kwargs):
        try:
            kind, f = self.entries[argnum]
        except KeyError:
            raise _missing("VJP", self.fun, (argnum,)) from None
        if kind == DIRECT:
            return f(g, ans, *args, **kwargs)
        if kind == MAKER:
            return f(ans, *args, **kwargs)(g)
        return None

    def __call__(self, argnums, ans, args, kwargs):  # autograd's vjp_argnums convention
        return lambda g: tuple([self.one(i, g, ans, args, kwargs) for i in argnums])


class VJPNode(Node):
    """A recorded primitive call, for the reverse mode."""

    __slots__ = ("parents", "parent_argnums", "fun", "rule", "value", "args", "kwargs", "replay", "__weakref__")

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        self.parents, self.parent_argnums, self.fun = parents, parent_argnums, fun
        self.value, self.args, self.kwargs, self.replay = value, args, kwargs, None
        self.rule = rule = primitive_vjps.get(fun)  # looked up now: later registry edits do not apply
        if type(rule) is VJPRule:
            if not rule.saves_ans:
                self.value = None
            if not rule.saves_args:
                self.args = (None,) * len(args)
        if _debug is not None:
            _debug.recorded(self)
        elif _recompute_record is not None:
            # inside a recompute block: a replay instead of the saved values
            self.replay = _recompute_record(self, value, args, kwargs)
            if self.replay is not None:
                self.value, self.args = None, (None,) * len(args)

    def initialize_root(self):
        self.parents, self.parent_argnums, self.fun, self.rule = (), (), None, None
        self.value = self.args = self.kwargs = self.replay = None

    def vjp(self, g):
        """Cotangents for ``parents`` (None = zero) given the cotangent ``g`` of the output."""
        return _node_vjp(self, g, None)

    def release(self):
        self.parents = self.args = ()
        self.kwargs = self.value = self.rule = self.replay = None


def _node_vjp(node, g, memo):
    """The node's cotangents; ``memo``: the running pass's recomputed outputs (or None)."""
    if node.replay is not None:
        return _recompute_cotangents(node, g, {} if memo is None else memo)
    rule, argnums = node.rule, node.parent_argnums
    if type(rule) is VJPRule:
        return [rule.one(i, g, node.value, node.args, node.kwargs) for i in argnums]
    if rule is None:
        raise _missing("VJP", node.fun, argnums)
    return rule(argnums, node.value, node.args, node.kwargs)(g)


def toposort(end_node):
    """Nodes from ``end_node`` back to the root, each after every node that consumes it."""
    child_counts, stack = {}, [end_node]
    while stack:
        node = stack.pop()
        if node in child_counts:
            child_counts[node] += 1
        else:
            child_counts[node] = 1
            stack.extend(node.parents)
    order, ready = [], [end_node]
    while ready:
        node = ready.pop()
        order.append(node)
        for parent in node.parents:
            if child_counts[parent] == 1:
                ready.append(parent)
            else:
                child_counts[parent] -= 1
    return order


def same_layout(a, b):
    """``a`` and ``b`` are ndarrays of the same shape and dtype."""
    return type(a) is ndarray and type(b) is ndarray and a.shape == b.shape and a.dtype == b.dtype


def _accumulate(prev, prev_owned, g):
    """prev + g, in place only into an array this pass allocated.  -> (sum, owned)"""
    tp = type(prev)
    if tp is type(g):
        if tp in _IMMUTABLE:
            return prev + g, True
        if tp is ndarray and same_layout(prev, g):
            if prev_owned:
                prev += g
                return prev, True
            return prev + g, True
    elif prev_owned and type(g) is _sparse_type and not isinstance(prev, Box):
        return g.mut_add(prev), True
    if prev_owned and _finish_sum is not None and tp not in _IMMUTABLE and tp is not ndarray:
        prev = _finish_sum(prev)  # the generic add may record it (higher order): no markers
    return _generic_add(prev, prev_owned, g)


def _first_contribution(g):
    """How a first cotangent is kept: borrowed if it is a plain value, else via the hook
    (which turns a sparse cotangent into an array of its own)."""
    if type(g) in _IMMUTABLE or type(g) is ndarray:
        return g, False
    if type(g) is _sparse_type:
        return (g.mut_add(g.vs.zeros()) if _start_sum is None else _start_sum(g)), True
    return _generic_add(None, False, g)


def backward_pass(g, end_node, consume=False, roots=None):
    """The cotangent of the root given ``g`` for ``end_node``; None if nothing reaches it.

    ``consume=True`` releases every node as soon as it is processed (single-use graphs).
    With ``roots`` (a list of the graph's root nodes, for a trace that started from several
    boxes), a list of their cotangents in that order (None where nothing reaches), every
    array among them one the caller alone holds (copied unless the pass made it)."""
    pending, owned, result = {end_node: g}, set(), None
    reached = None if roots is None else {}
    memo = {}  # outputs recomputed for nodes with a replay (fastgrad.recompute)
    for node in toposort(end_node):
        g = pending.pop(node, None)
        if g is None:
            memo.pop(node, None)
            continue
        if _finish_sum is not None and node in owned and type(g) not in _IMMUTABLE and type(g) is not ndarray:
            g = _finish_sum(g)
        if not node.parents:
            if reached is None:
                result = g
            else:
                reached[node] = g, node in owned
            continue
        debug = _debug is not None and type(node) is VJPNode
        if debug:
            _debug.before_backward(node)
        cots = _node_vjp(node, g, memo) if type(node) is VJPNode else node.vjp(g)
        memo.pop(node, None)  # its consumers, the only other readers, are all done
        for k, (parent, cot) in enumerate(zip(node.parents, cots)):
            if debug:
                _debug.checked(node, node.parent_argnums[k], g, cot)
            if cot is None:
                continue
            prev = pending.get(parent)
            if prev is None:
                total, is_owned = _first_contribution(cot)
            else:
                total, is_owned = _accumulate(prev, parent in owned, cot)
            pending[parent] = total
            if is_owned:
                owned.add(parent)
            else:
                owned.discard(parent)
        if consume and type(node) is VJPNode:
            node.release()
    if reached is None:
        return result
    return [_own(*reached[r]) if r in reached else None for r in roots]


def _own(g, owned):
    """A root's cotangent as the caller's own array: copied unless the pass made it."""
    return g.copy() if type(g) is ndarray and not owned else g


class JVPRule:
    """The forward rules of one primitive: (kind, function) by argnum, else ``default``."""

    __slots__ = ("fun", "entries", "default")

    def __init__(self, fun, entries, default=None):
        self.fun, self.entries, self.default = fun, entries, default

    def one(self, argnum, g, ans, args, kwargs):
        entry = self.entries.get(argnum, self.default)
        if entry is None:
            raise _missing("JVP", self.fun, (argnum,))
        kind, f = entry
        if kind == DIRECT:
            return f(g, ans, *args, **kwargs)
        if kind == SAME:
            return self.fun(*args[:argnum], g, *args[argnum + 1 :], **kwargs)
        return None

    def __call__(self, argnums, gs, ans, args, kwargs):  # autograd's jvp_argnums convention
        return _sum_tangents([self.one(i, g, ans, args, kwargs) for i, g in zip(argnums, gs)])


def _sum_tangents(tangents):
    total, owned = None, False
    for t in tangents:
        if t is None:
            continue
        if total is None:
            total, owned = t, False
        else:
            total, owned = _accumulate(total, owned, t)
    return total


class JVPNode(Node):
    """A primitive call in forward mode: holds the tangent ``g`` of its output (None = zero)."""

    __slots__ = ("g", "__weakref__")

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        rule = primitive_jvps.get(fun)
        if rule is None:
            raise _missing("JVP", fun, parent_argnums)
        live = [(i, p.g) for i, p in zip(parent_argnums, parents) if p.g is not None]
        if type(rule) is JVPRule:
            self.g = _sum_tangents([rule.one(i, g, value, args, kwargs) for i, g in live])
        elif live:
            self.g = rule(tuple([i for i, _ in live]), tuple([g for _, g in live]), value, args, kwargs)
        else:
            self.g = None

    def initialize_root(self, g):
        self.g = g
