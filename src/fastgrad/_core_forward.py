"""Forward mode: a node holds the tangent of its output (pure engine; _core_forward.pxi
is the compiled one)."""

from ._core_rules import DIRECT, SAME, _missing, primitive_jvps
from ._core_sums import _accumulate
from ._core_trace import Node


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
