"""The registries of rules, and reverse rules applied to a recorded node (pure engine;
_core_rules.pxi is the compiled one)."""

from ._core_seam import _bound


def _counted(change):
    """``change``, a dict method, followed by a count of the change (even a failed one: a
    count too many costs a lookup, one too few would keep a stale rule)."""

    def counted(self, *args, **kwargs):
        try:
            return change(self, *args, **kwargs)
        finally:
            self._version += 1

    counted.__name__ = change.__name__
    return counted


class RuleTable(dict):
    """A dict that counts its changes in ``version``: the compiled engine's primitives keep
    the reverse rule they last found here until the count moves; this engine looks it up at
    every record."""

    __slots__ = ("_version",)

    def __init__(self, *args, **kwargs):
        self._version = getattr(self, "_version", 0)  # (a second __init__ counts on)
        _counted(dict.__init__)(self, *args, **kwargs)

    @property
    def version(self):
        return self._version

    __setitem__ = _counted(dict.__setitem__)
    __delitem__ = _counted(dict.__delitem__)
    __ior__ = _counted(dict.__ior__)
    update = _counted(dict.update)
    setdefault = _counted(dict.setdefault)
    pop = _counted(dict.pop)
    popitem = _counted(dict.popitem)
    clear = _counted(dict.clear)

    def __reduce__(self):
        # copy.copy and pickle: a new table with these entries (the count is this table's own)
        return (type(self), (dict(self),))


primitive_vjps = RuleTable()  # primitive -> VJPRule, or any f(argnums, ans, args, kwargs) -> (g -> cotangents)
primitive_jvps = {}  # primitive -> JVPRule, or any f(argnums, gs, ans, args, kwargs) -> tangent
ZERO, MAKER, DIRECT, SAME = 0, 1, 2, 3  # kinds of per-argument rules


def _missing(mode, fun, argnums):
    name = getattr(fun, "__name__", repr(fun))
    return NotImplementedError("{} of {} wrt argnums {} not defined".format(mode, name, tuple(argnums)))


class VJPRule:
    """The reverse rules of one primitive, one per argument: (kind, function) by argnum.

    ``saves_ans`` / ``saves_args`` False: the rules do not read ans / the arguments, so
    nodes keep None in their place (the memory is released after the forward pass).
    ``reads``: None (each rule reads every argument), or a bit mask for each argnum 0-7: the
    arguments whose values that rule reads; of the others it reads only shape and dtype, so
    a node keeps a large array there as a stand-in (``_keep_read_args``)."""

    __slots__ = ("fun", "entries", "saves_ans", "saves_args", "reads")

    def __init__(self, fun, entries, saves_ans=True, saves_args=True, reads=None):
        self.fun, self.entries = fun, entries
        self.saves_ans, self.saves_args = saves_ans, saves_args
        self.reads = reads

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


def _node_vjp(node, g, memo):
    """The cotangents of a VJPNode's parents (None = zero) given ``g`` for its output, by
    its rule; ``memo``: the running pass's recomputed outputs (or None)."""
    if node.replay is not None:
        return _bound.replayed_cotangents(node, g, {} if memo is None else memo)
    rule, argnums = node.rule, node.parent_argnums
    if type(rule) is VJPRule:
        return [rule.one(i, g, node.value, node.args, node.kwargs) for i in argnums]
    if rule is None:
        raise _missing("VJP", node.fun, argnums)
    return rule(argnums, node.value, node.args, node.kwargs)(g)
