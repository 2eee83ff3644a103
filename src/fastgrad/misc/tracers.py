"""Tracers that record a function's graph of primitive calls instead of differentiating.

``const_graph(fun, *args, **kwargs)``: a version of ``fun`` (with ``args``/``kwargs``
partially applied in front) that traces ``fun`` on its first call and, on later calls,
replays the recorded primitive calls on the new inputs without running ``fun``'s Python
code again.  Use it only for functions whose graph does not depend on the input values
(no data-dependent control flow).

``full_graph(fun, *args, **kwargs)``: trace ``fun`` at ``args`` and return the output's
node; every node has ``value`` (the value computed there) and ``recipe`` =
``(primitive, args, kwargs, [(argnum, parent node), ...])``.
"""

from functools import partial

from ..tracer import Node, trace
from ..util import subvals, toposort  # noqa: F401  (subvals: autograd's module has it)
from ..wrap_util import wraps

__all__ = ["const_graph", "const_graph_unary", "full_graph", "ConstGraphNode", "FullGraphNode"]


class ConstGraphNode(Node):
    """Records, per primitive call, how to recompute it from its parents' new values.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.misc.tracers import ConstGraphNode
    >>> from fastgrad.tracer import trace
    >>> value, end = trace(ConstGraphNode.new_root(), lambda x: np.exp(x) * 2.0, 0.0)
    >>> value, end.fun.__name__
    (2.0, 'multiply')
    >>> bool(np.isclose(end.replay([np.exp(1.0)]), 2.0 * np.exp(1.0)))   # exp(x) at x = 1
    True
    """

    __slots__ = ("parents", "fun", "args", "kwargs", "argnums")

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        self.parents = parents
        self.fun, self.args, self.kwargs, self.argnums = fun, list(args), kwargs, parent_argnums

    def initialize_root(self):
        self.parents = ()
        self.fun = self.args = self.kwargs = self.argnums = None

    def replay(self, parent_values):
        args = self.args
        for i, v in zip(self.argnums, parent_values):
            args[i] = v
        return self.fun(*args, **self.kwargs)


def const_graph_unary(fun):
    """``fun`` of one argument, traced once and replayed afterwards.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.misc.tracers import const_graph_unary
    >>> double_exp = const_graph_unary(lambda x: np.exp(x) * 2.0)
    >>> double_exp(0.0), bool(np.isclose(double_exp(1.0), 2.0 * np.exp(1.0)))
    (2.0, True)
    """
    graph = []
    pending = [fun]

    def cached(x):
        if not graph:
            root = ConstGraphNode.new_root()
            value, end = trace(root, pending[0], x)
            if end is None:
                raise ValueError(
                    "const_graph: the output of {} does not depend on its input".format(getattr(fun, "__name__", fun))
                )
            graph.extend(reversed(list(toposort(end))))
            pending.clear()
            return value
        values = {graph[0]: x}
        for node in graph[1:]:
            values[node] = node.replay([values[p] for p in node.parents])
        return values[graph[-1]]

    return cached


def const_graph(fun, *args, **kwargs):
    """``fun`` (with ``args`` and ``kwargs`` applied first) traced once, replayed later.

    The returned function takes the remaining positional arguments.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.misc import const_graph
    >>> calls = []
    >>> def f(x):
    ...     calls.append(x)
    ...     return np.sum(np.sin(x) * x)
    >>> fast_f = const_graph(f)
    >>> fast_f(np.zeros(2))
    0.0
    >>> bool(np.isclose(fast_f(np.ones(2)), 2 * np.sin(1.0))), len(calls)   # f ran once
    (True, 1)
    """
    partial_fun = partial(fun, *args, **kwargs)
    unary = const_graph_unary(lambda xs: partial_fun(*xs))

    @wraps(fun)
    def replayed(*xs):
        return unary(xs)

    return replayed


class FullGraphNode(Node):
    """A node that keeps the whole computation: its value and how it was made.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.misc.tracers import FullGraphNode
    >>> from fastgrad.tracer import trace
    >>> value, end = trace(FullGraphNode.new_root(1.0), lambda x: np.exp(x) + 1.0, 1.0)
    >>> fun, args, kwargs, parents = end.recipe
    >>> fun.__name__, [parent.recipe[0].__name__ for argnum, parent in parents]
    ('add', ['exp'])
    """

    __slots__ = ("value", "recipe")

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        self.value = value
        self.recipe = (fun, args, kwargs, list(zip(parent_argnums, parents)))

    def initialize_root(self, value=None):
        self.value = value
        self.recipe = (lambda x: x, (value,), {}, [])


def full_graph(fun, *args, **kwargs):
    """Trace ``fun(*args, **kwargs)`` and return the output's FullGraphNode.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.misc.tracers import full_graph
    >>> node = full_graph(lambda x, y: np.sin(x) * y, 0.5, 2.0)
    >>> fun, args, kwargs, parents = node.recipe
    >>> fun.__name__, [(argnum, parent.recipe[0].__name__) for argnum, parent in parents]
    ('multiply', [(0, 'sin'), (1, 'container_take')])
    >>> bool(np.isclose(node.value, 2.0 * np.sin(0.5)))
    True
    """
    xs = tuple(args)
    root = FullGraphNode.new_root(xs)
    _, end = trace(root, lambda boxed: fun(*boxed, **kwargs), xs)
    return root if end is None else end
