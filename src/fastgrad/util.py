"""Small helpers shared by the Python layer (autograd.util's names)."""

import operator
import warnings


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


def quick_grad_check(fun, arg0, extra_args=(), kwargs=None, verbose=True, eps=1e-4, rtol=1e-4, atol=1e-6, rs=None):
    """Deprecated (as in autograd): checks the gradient of ``fun(arg0, *extra_args, **kwargs)``
    with respect to ``arg0`` against central differences along a random direction, raising
    AssertionError on a mismatch.  Use ``fastgrad.test_util.check_grads`` instead.

    ``verbose``, ``eps``, ``rtol``, ``atol`` and ``rs`` are accepted for compatibility and
    ignored: the check uses test_util's tolerances and numpy's global random state, and
    prints nothing, as autograd 1.9.1's does.

    >>> import warnings
    >>> import fastgrad.numpy as np
    >>> from fastgrad.util import quick_grad_check
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     quick_grad_check(lambda x, a: np.sum(np.sin(a * x)), np.array([0.1, 0.7]), (2.0,))
    >>> print(caught[0].message)
    quick_grad_check is deprecated; use fastgrad.test_util.check_grads
    """
    warnings.warn("quick_grad_check is deprecated; use fastgrad.test_util.check_grads", UserWarning, stacklevel=2)
    from .test_util import check_grads

    kwargs = {} if kwargs is None else kwargs
    check_grads(lambda x: fun(x, *extra_args, **kwargs), modes=["rev"], order=1)(arg0)
