"""Helpers that import nothing of fastgrad: fastgrad.util gives them under autograd's names.

core and wrap_util take them from here, below util, so that util's quick_grad_check can
use test_util (which imports core and wrap_util) without an import cycle.
"""

import operator


def subvals(x, ivs):
    """A tuple like ``x`` with ``x[i] = v`` for every ``(i, v)`` in ``ivs``.

    >>> from fastgrad.util import subvals
    >>> subvals((1, 2, 3), [(0, "a"), (2, "c")])
    ('a', 2, 'c')
    """
    x = list(x)
    for i, v in ivs:
        x[i] = v
    return tuple(x)


def subval(x, i, v):
    """A tuple like ``x`` with ``x[i] = v``.

    >>> from fastgrad.util import subval
    >>> subval((1, 2, 3), 1, "b")
    (1, 'b', 3)
    """
    x = list(x)
    x[i] = v
    return tuple(x)


def func(f):
    """``f`` itself (autograd's helper for reaching the function behind a method; kept
    for compatibility).

    >>> from fastgrad.util import func
    >>> func(len) is len
    True
    """
    return f


def toposort(end_node, parents=operator.attrgetter("parents")):
    """Yield the nodes reachable from ``end_node``, each after all the nodes that consume it.

    Iterative (no recursion), so it works on graphs of any depth.  ``parents(node)`` gives
    a node's inputs (by default its ``parents`` attribute).

    >>> from fastgrad.util import toposort
    >>> inputs = {"loss": ["h", "w"], "h": ["w", "x"], "w": [], "x": []}
    >>> list(toposort("loss", parents=lambda node: inputs[node]))
    ['loss', 'h', 'x', 'w']
    """
    child_counts, stack = {}, [end_node]
    while stack:
        node = stack.pop()
        if node in child_counts:
            child_counts[node] += 1
        else:
            child_counts[node] = 1
            stack.extend(parents(node))
    ready = [end_node]
    while ready:
        node = ready.pop()
        yield node
        for parent in parents(node):
            if child_counts[parent] == 1:
                ready.append(parent)
            else:
                child_counts[parent] -= 1
