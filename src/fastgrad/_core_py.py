"""The engine in plain Python: the executable specification of the compiled one (_core.pyx),
with the same names and algorithms.  Only fastgrad._engine imports it.

A primitive called on a box records a node that keeps what its rule will read; nothing is
prepared.  The backward pass counts each node's consumers, then visits the nodes from the
output back to the roots, each once all its consumers are done: its rule pulls its
cotangent back to its parents, where the contributions are summed.  The rest of the
engine, in the order _core.pyx includes its mirror (_core_<name>.pxi): _core_seam (bind,
Hooks), _core_gc (the collector's pause), _core_blocks (open recompute blocks),
_core_boxes, _core_trace (Primitive, Node, trace), _core_rules (registries, VJPRule),
_core_sums (sums of cotangents), _core_forward.
"""

import itertools
import threading

from numpy import broadcast_to as _broadcast_to, float64, ndarray, zeros as _zeros

from ._core_seam import Hooks, bind, _bound, scalar_kernel_names  # noqa: F401
from ._core_gc import GCPause, arena_regions_state, buffer_cache_begin, buffer_cache_end, buffer_cache_release  # noqa: F401
from ._core_gc import buffer_cache_state, gc_pause_depth, pause_gc, resume_gc  # noqa: F401
from ._core_blocks import RecomputeBlock, open_recompute_blocks, recompute_policies  # noqa: F401
from ._core_boxes import ArithmeticBox, Box, getval, isbox, new_box, use_compiled_operators  # noqa: F401
from ._core_trace import Node, NotracePrimitive, Primitive, notrace_primitives, register_notrace, toposort  # noqa: F401
from ._core_trace import call_without_ufunc_dispatch, close_trace, open_trace, trace  # noqa: F401
from ._core_rules import DIRECT, MAKER, SAME, ZERO, VJPRule, _missing, _node_vjp, primitive_jvps  # noqa: F401
from ._core_rules import primitive_vjps
from ._core_sums import _accumulate, _first_contribution, _own, _readable, same_layout  # noqa: F401
from ._core_forward import JVPNode, JVPRule  # noqa: F401


class VJPNode(Node):
    """A recorded primitive call, for the reverse mode.  The last four fields are the
    backward pass's bookkeeping, valid while ``stamp`` is that pass's (see below)."""

    _RECORD = ("parents", "parent_argnums", "fun", "rule", "value", "args", "kwargs", "replay")
    _BOOKKEEPING = ("pending", "owned", "waiting", "stamp")
    __slots__ = _RECORD + _BOOKKEEPING + ("__weakref__",)

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        """Record: keep what the rule reads (looked up now: later registry edits do not apply)."""
        self.parents, self.parent_argnums, self.fun = parents, parent_argnums, fun
        self.value, self.args, self.kwargs, self.replay, self.stamp = value, args, kwargs, None, 0
        self.rule = rule = primitive_vjps.get(fun)
        if type(rule) is VJPRule:
            if not rule.saves_ans:
                self.value = None
            if not rule.saves_args:
                self.args = (None,) * len(args)
            elif rule.reads is not None:
                self.args = _keep_read_args(rule.reads, parent_argnums, self.args)
        hooks = _bound.hooks
        debug, record_replay = hooks.debug, hooks.record_replay
        if debug is not None:
            debug.recorded(self)
        elif record_replay is not None:  # in a recompute block: a replay instead of saved values
            self.replay = record_replay(self, value, args, kwargs)
            if self.replay is not None:
                self.value, self.args = None, (None,) * len(args)

    def initialize_root(self):
        self.parents, self.parent_argnums, self.fun, self.rule = (), (), None, None
        self.value = self.args = self.kwargs = self.replay = None
        self.stamp = 0

    def vjp(self, g):
        """Cotangents for ``parents`` (None = zero) given the cotangent ``g`` of the output."""
        return _node_vjp(self, g, None)

    def release(self):
        self.parents = self.args = ()
        self.kwargs = self.value = self.rule = self.replay = None


# A node of a rule that reads only the shape and dtype of an argument keeps a large array
# there as a stand-in: so a chain like ``x = x + 1`` over big arrays frees each x after the
# next step, as autograd does (its rules close over the arguments' metadata only).  Smaller
# arrays are kept as they are: their memory is small and a stand-in would cost more time.
STAND_IN_MIN_BYTES = 1 << 16


def _stand_in_ok(a):
    """``a`` is an ndarray of numbers of at least STAND_IN_MIN_BYTES."""
    return type(a) is ndarray and a.nbytes >= STAND_IN_MIN_BYTES and a.itemsize <= 64 and a.dtype.kind in "biufc"


def _shape_stand_in(x):
    """A read-only array of ``x``'s shape and dtype that holds no memory (zeros)."""
    return _broadcast_to(_zeros((), x.dtype), x.shape)


def _keep_read_args(reads, argnums, args):
    """The arguments a node keeps: a stand-in for each large array whose values no rule of
    the call's differentiated arguments (``argnums``) reads (``reads``: VJPRule's masks)."""
    read = 0
    for i in argnums:
        read |= reads[i] if 0 <= i < 8 else 0xFFFFFFFF
    kept = None  # (made only when an argument is replaced: most nodes keep their tuple)
    for j in range(min(len(args), 32)):
        if not (read >> j) & 1 and _stand_in_ok(args[j]):
            if kept is None:
                kept = list(args)
            kept[j] = _shape_stand_in(args[j])
    return args if kept is None else tuple(kept)


def backward_pass(g, end_node, consume=False, roots=None):
    """The cotangent of the root given ``g`` for ``end_node``; None if nothing reaches it.

    ``consume=True`` releases every node as soon as it is processed (single-use graphs).
    With ``roots`` (a list of the graph's root nodes, for a trace that started from several
    boxes), a list of their cotangents in that order (None where nothing reaches), every
    array among them one the caller alone holds (copied unless the pass made it)."""
    found = _backward_on_nodes(g, end_node, consume, roots) if type(end_node) is VJPNode else _CONFLICT
    if found is _CONFLICT:
        return backward_pass_with_dicts(g, end_node, consume, roots)
    return found if roots is None else [None if f is None else _own(*f) for f in found]


_CONFLICT = object()  # the graph has other node types, or another pass is using its nodes
_pass_ids = itertools.count(1)  # stamps of node passes, unique across threads
_active = set()  # stamps of the node passes running now (any thread)
_marking = threading.RLock()  # this engine's threads can switch anywhere: one marks at a time
_FAST = (float, complex, float64, ndarray)  # cotangent types a sum leaves as they are


def _backward_on_nodes(g, end, consume, roots):
    """The pass with its bookkeeping in the nodes: ``waiting`` (consumers not done yet),
    ``pending`` (the sum of their cotangents so far; ``owned``: an array this pass made)
    and ``stamp`` (the pass these belong to).  No list of the nodes is kept: each can be
    freed once done.  -> the root's cotangent, or with ``roots`` their (cotangent, owned)
    or None; _CONFLICT before computing anything if the nodes cannot be used."""
    stamp = next(_pass_ids)
    try:
        _active.add(stamp)
        if not _count_consumers(end, stamp):
            return _CONFLICT
        end.pending, end.owned = g, False
        ready, result, memo = [end], None, {}  # memo: outputs recomputed for nodes with a replay
        while ready:
            node = ready.pop()  # all its consumers are done: its cotangent is complete
            g, node.pending = node.pending, None
            if g is not None:
                if node.owned and type(g) not in _FAST:
                    g = _readable(g)
                if node.parents:
                    _pull_back(node, g, memo)
                elif roots is None:
                    result = g
                else:
                    node.pending = g  # collected below (node.owned says whose it is)
            memo.pop(node, None)  # its consumers, the only readers, are all done
            for parent in node.parents:
                parent.waiting -= 1
                if parent.waiting == 0:
                    ready.append(parent)
            if node.parents or roots is None:
                node.stamp = 0  # (a root keeps it, meaning "reached by this pass", until collected)
            if consume:
                node.release()
        return result if roots is None else [_take_root(r, stamp) for r in roots]
    finally:
        _active.discard(stamp)


def _count_consumers(end, stamp):
    """Mark the graph for this pass, each node's ``waiting`` its number of consumers in it.
    False if a node is of another type or in use by another pass (the nodes marked so far
    keep a stamp that is stale once this pass ends: the next pass overwrites it)."""
    with _marking:
        if _in_use(end, stamp):
            return False
        end.stamp, end.waiting = stamp, 0
        stack = [end]
        while stack:
            for parent in stack.pop().parents:
                if type(parent) is not VJPNode or _in_use(parent, stamp):
                    return False
                if parent.stamp == stamp:
                    parent.waiting += 1
                else:
                    parent.stamp, parent.waiting, parent.pending = stamp, 1, None
                    stack.append(parent)
    return True


def _in_use(node, stamp):
    """The node's fields belong to another pass that is still running."""
    return node.stamp != 0 and node.stamp != stamp and node.stamp in _active


def _pull_back(node, g, memo):
    """The node's rule pulls ``g`` back to its parents; each adds it to its pending sum."""
    debug = _bound.hooks.debug
    if debug is not None:
        debug.before_backward(node)
    for parent, argnum, cot in zip(node.parents, node.parent_argnums, _node_vjp(node, g, memo)):
        if debug is not None:
            debug.checked(node, argnum, g, cot)
        if cot is None:
            continue
        if parent.pending is None:
            parent.pending, parent.owned = _first_contribution(cot)
        else:
            parent.pending, parent.owned = _accumulate(parent.pending, parent.owned, cot)


def _take_root(root, stamp):
    """(cotangent, owned) of a root this pass reached with a cotangent, else None."""
    if root.stamp != stamp or root.pending is None:
        return None
    found = root.pending, root.owned
    root.pending, root.stamp = None, 0
    return found


# ---- the same pass with its bookkeeping in dicts -------------------------------------------


def backward_pass_with_dicts(g, end_node, consume=False, roots=None):
    """What backward_pass gives, by a pass over toposort's order with the pending sums in a
    dict: for graphs with node types of the user's, and for a second pass over a graph that
    another pass is using (public so that tests can run both algorithms on any graph)."""
    pending, owned, result, reached = {end_node: g}, set(), None, {}
    memo = {}  # outputs recomputed for nodes with a replay
    for node in toposort(end_node):
        g = pending.pop(node, None)
        if g is None:
            memo.pop(node, None)
            continue
        if node in owned and type(g) not in _FAST:
            g = _readable(g)
        if not node.parents:
            result, reached[node] = g, (g, node in owned)
            continue
        is_vjp_node = type(node) is VJPNode
        debug = _bound.hooks.debug if is_vjp_node else None
        if debug is not None:
            debug.before_backward(node)
        cots = _node_vjp(node, g, memo) if is_vjp_node else node.vjp(g)
        memo.pop(node, None)
        for k, (parent, cot) in enumerate(zip(node.parents, cots)):
            if debug is not None:
                debug.checked(node, node.parent_argnums[k], g, cot)
            if cot is None:
                continue
            if parent in pending:
                total, is_owned = _accumulate(pending[parent], parent in owned, cot)
            else:
                total, is_owned = _first_contribution(cot)
            pending[parent] = total
            if is_owned:
                owned.add(parent)
            else:
                owned.discard(parent)
        if consume and is_vjp_node and not _in_use(node, 0):  # (not one a node pass is using)
            node.release()
    return result if roots is None else [_own(*reached[r]) if r in reached else None for r in roots]
