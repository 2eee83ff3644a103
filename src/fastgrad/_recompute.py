"""Recomputation of saved intermediate arrays (``fastgrad.recompute``), for both engines.

A reverse-mode tape keeps, until the backward pass, every array a rule will read: for a
deep network that is one array per layer (PERF.md's W9: 50 x ``tanh(A @ Z)`` keeps 50
300x300 arrays, as autograd and a hand-written adjoint do).  Inside a ``recompute()``
block the engine keeps, of the large arrays fastgrad's own NumPy primitives make, only one
in every ``every``; the backward pass recomputes the others from the nearest kept ones, a
stretch of the graph at a time, and drops each as soon as the node that needed it is done.
Peak memory goes from n arrays to about n / every + every, for one more forward
evaluation of the recomputed primitives.

How the engines use this module (the same calls in both):
- when a VJPNode is recorded while some thread is inside a block (``record`` is then
  fastgrad._hooks's ``record_replay``), ``record(node, ans, args, kwargs)``; a ``Replay``
  it returns goes into ``node.replay`` and the node drops its saved output and arguments;
- in the backward pass, a node with a replay gets its cotangents from ``cotangents(node,
  g, memo)`` (bound to the engine as ``replayed_cotangents``), where ``memo`` is a dict
  private to that pass (outputs recomputed so far); the pass removes a node's entry once
  the node is processed (its consumers, the only readers, are all done by then).

Only primitives of fastgrad.numpy and fastgrad.scipy are recomputed: they are pure
functions of their arguments, so a second call gives the same bits.  A user's primitive
may have side effects or draw random numbers, and keeps what its rule reads, as do calls
on boxes of an outer trace (higher-order derivatives).
"""

import functools
import sys

import numpy as np

from ._engine import engine

_MISSING = object()  # Replay.out of an output that is recomputed
_NO_KWARGS = {}  # shared, never modified: rules are called with **kwargs


class Replay:
    """How to compute a node's output again: ``fun(*args, **kwargs)``, where each
    (position, parent node) of ``holes`` puts that parent's output at that position of
    ``args``; ``out`` is the output itself where it was kept (else _MISSING)."""

    __slots__ = ("fun", "args", "kwargs", "holes", "out")

    def __init__(self, fun, args, kwargs, holes, out):
        self.fun, self.args, self.kwargs, self.holes, self.out = fun, args, kwargs, holes, out


class _Policy:
    __slots__ = ("every", "min_bytes", "since_kept")

    def __init__(self, every, min_bytes):
        self.every, self.min_bytes, self.since_kept = every, min_bytes, 0


_replayable = frozenset()  # the built-in primitives (see _collect_replayable)
_seen_modules = -1


def _collect_replayable():
    """Every Primitive defined by fastgrad.numpy and fastgrad.scipy (their public functions,
    operators and the helpers their rules use), except scipy.integrate's, which call the
    user's function.  Collected again when new modules have been imported (two threads
    doing it at once find the same set: no lock, which a fork could leave held)."""
    global _replayable, _seen_modules
    if len(sys.modules) == _seen_modules:
        return
    found = set()
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("fastgrad.numpy", "fastgrad.scipy")):
            continue
        if name.startswith("fastgrad.scipy.integrate"):
            continue
        for value in list(vars(module).values()):
            if type(value) is engine.Primitive:
                found.add(value)
    _replayable, _seen_modules = frozenset(found), len(sys.modules)


def _kind(x, args, min_bytes):
    """ "small" (kept) unless x is an array of at least min_bytes; then "view" if it is a
    view of one of the arguments (kept, it would keep its base alive; recomputed, it costs
    nothing), else "large" (a buffer of its own, or of a temporary of the primitive's)."""
    if type(x) is not np.ndarray or x.nbytes < min_bytes:
        return "small"
    base = x.base
    if base is not None:
        for a in args:
            if type(a) is np.ndarray and (base is a or base is a.base):
                return "view"
    return "large"


def record(node, ans, args, kwargs):
    """The Replay for a node just recorded, or None to keep its saved values as usual."""
    policies = engine.recompute_policies()
    if not policies or node.fun not in _replayable:
        return None
    for a in args:
        if engine.isbox(a):
            return None
    if kwargs:
        for a in kwargs.values():
            if engine.isbox(a):
                return None
    policy = policies[-1]
    out, kind = ans, _kind(ans, args, policy.min_bytes)
    if kind == "view":
        out = _MISSING
    elif kind == "large":
        policy.since_kept += 1
        if policy.since_kept < policy.every:
            out = _MISSING
        else:
            policy.since_kept = 0
    holes = tuple([(i, p) for i, p in zip(node.parent_argnums, node.parents) if p.replay is not None])
    if holes:
        args = list(args)
        for i, _ in holes:
            args[i] = None  # the parent's output: recomputed, not held
        args = tuple(args)
    return Replay(node.fun.fun, args, kwargs if kwargs else _NO_KWARGS, holes, out)


def _output(node, memo):
    """The output of a node with a replay: kept, recomputed already in this pass, or
    recomputed now together with every missing output it depends on (without recursion:
    a graph may be a chain of 10^6 nodes)."""
    out = node.replay.out
    if out is not _MISSING:
        return out
    found = memo.get(node, _MISSING)
    if found is not _MISSING:
        return found
    # (NumPy's floating-point state is left alone: a with errstate block here would leave
    # it changed if a Ctrl-C landed between its entry and the block.  A warning the forward
    # pass gave may be given again.)
    stack = [node]
    while stack:
        top = stack[-1]
        if top in memo:
            stack.pop()
            continue
        missing = [p for _, p in top.replay.holes if p.replay.out is _MISSING and p not in memo]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        memo[top] = top.replay.fun(*_arguments(top, memo), **top.replay.kwargs)
    return memo[node]


def _arguments(node, memo):
    """The node's positional arguments, its parents' outputs put back in the holes."""
    replay = node.replay
    if not replay.holes:
        return replay.args
    args = list(replay.args)
    for i, p in replay.holes:
        args[i] = _output(p, memo)
    return tuple(args)


def cotangents(node, g, memo):
    """What ``node.vjp(g)`` gives, with the node's saved values recomputed as needed."""
    rule, argnums = node.rule, node.parent_argnums
    if type(rule) is engine.VJPRule:
        ans = _output(node, memo) if rule.saves_ans else None
        args = _arguments(node, memo) if rule.saves_args else (None,) * len(node.replay.args)
        kwargs = node.replay.kwargs
        return [rule.one(i, g, ans, args, kwargs) for i in argnums]
    if rule is None:
        raise engine._missing("VJP", node.fun, argnums)
    return rule(argnums, _output(node, memo), _arguments(node, memo), node.replay.kwargs)(g)


engine.bind(replayed_cotangents=cotangents)


class recompute(engine.RecomputeBlock):
    """A block (``with fastgrad.recompute():``, or a decorator) inside which gradients keep
    only one in every ``every`` large intermediate array and recompute the others during
    the backward pass: peak memory of n saved arrays drops to about n / every + every, for
    about one more forward evaluation.  Gradients are the same, bit for bit.

    ``min_bytes``: arrays smaller than this are always kept (recomputing them saves little).
    Only fastgrad.numpy / fastgrad.scipy primitives are recomputed (your own primitives may
    have side effects); it applies to the graphs recorded in this thread inside the block,
    whenever their backward pass runs.  A floating-point warning the forward pass gave may be
    given again by the recomputation.  Debug mode (``set_debug``) turns it off.  For control
    over what is recomputed, see ``checkpoint``.

    >>> import fastgrad
    >>> import fastgrad.numpy as np
    >>> A = np.eye(300) * 0.5
    >>> def deep(Z):
    ...     for _ in range(50):
    ...         Z = np.tanh(A @ Z)
    ...     return np.sum(Z)
    >>> Z = np.ones((300, 300))
    >>> with fastgrad.recompute(every=8):
    ...     g = fastgrad.grad(deep)(Z)
    >>> bool(np.array_equal(g, fastgrad.grad(deep)(Z)))
    True
    """

    def __init__(self, every: int = 8, min_bytes: int = 1 << 16) -> None:
        if type(every) is not int or every < 1:
            raise ValueError("recompute: every must be a positive int, got {!r}".format(every))
        if type(min_bytes) is not int or min_bytes < 0:
            raise ValueError("recompute: min_bytes must be a non-negative int, got {!r}".format(min_bytes))
        self.every, self.min_bytes = every, min_bytes

    def _new_policy(self):
        """The policy of this block for this thread's graphs (RecomputeBlock.__enter__)."""
        _collect_replayable()
        return _Policy(self.every, self.min_bytes)

    _record = staticmethod(record)

    def __call__(self, fun):
        @functools.wraps(fun)
        def inside(*args, **kwargs):
            with recompute(self.every, self.min_bytes):
                return fun(*args, **kwargs)

        return inside
