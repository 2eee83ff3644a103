"""Flatten nested containers of arrays and scalars into one 1-d array, and back.

``flatten(value) -> (vector, unflatten)``: the leaves (arrays and scalars inside lists,
tuples and dicts, dict keys in sorted order) raveled and concatenated.  ``unflatten(v)``
rebuilds the containers from any vector of the same length, each leaf with its original
shape and dtype (scalars come back as 0-d arrays).  Both directions are differentiable:
traced leaves (or a traced vector) give a traced result.

The structure is read once, when flattening; ``unflatten`` only slices and reshapes, which
makes the round trip much cheaper than going through a VJP.
"""

from collections import OrderedDict

import numpy as onp

from ..numpy import numpy_wrapper as anp
from ..core import make_vjp  # noqa: F401  (autograd's flatten module has it)
from ..tracer import Box, getval

__all__ = ["flatten", "flatten_func"]

_ndarray = onp.ndarray
_generic = onp.generic
_LEAF = 0
_SEQ = 1
_DICT = 2


def _bad_leaf(x):
    return TypeError("Can't differentiate w.r.t. type {}".format(type(x)))


def _walk(x, leaves, any_box):
    """The structure of ``x`` (nested tuples), appending its leaves to ``leaves``."""
    t = type(x)
    if t is _ndarray or isinstance(x, _generic):
        if x.dtype.kind not in "fc":
            raise _bad_leaf(x)
        leaves.append(x)
        return _LEAF
    if t is float:
        leaves.append(x)
        return _LEAF
    if t is list or t is tuple or isinstance(x, (list, tuple)):
        return (_SEQ, t, [_walk(e, leaves, any_box) for e in x])
    if isinstance(x, dict):
        keys = list(x)
        order = sorted(keys)
        children = {k: _walk(x[k], leaves, any_box) for k in order}
        return (_DICT, t, keys, order, children)
    if isinstance(x, Box):
        v = x._value
        while isinstance(v, Box):
            v = v._value
        if isinstance(v, (list, tuple)):
            return (_SEQ, type(v), [_walk(x[i], leaves, any_box) for i in range(len(v))])
        if isinstance(v, dict):
            keys = list(v)
            order = sorted(keys)
            return (_DICT, type(v), keys, order, {k: _walk(x[k], leaves, any_box) for k in order})
        any_box.append(True)
        _walk(v, [], [])  # reject integers and unknown types as for plain values
        leaves.append(x)
        return _LEAF
    if t is complex:
        leaves.append(x)
        return _LEAF
    raise _bad_leaf(x)


def _rebuild(spec, parts, pos):
    if spec is _LEAF:
        p = parts[pos[0]]
        pos[0] += 1
        return p
    if spec[0] == _SEQ:
        _, t, children = spec
        items = [_rebuild(c, parts, pos) for c in children]
        if t is list:
            return items
        if t is tuple:
            return tuple(items)
        if hasattr(t, "_fields"):
            return t(*items)
        return t(items)
    _, t, keys, order, children = spec
    values = {k: _rebuild(children[k], parts, pos) for k in order}
    if t is dict:
        return {k: values[k] for k in keys}
    if t is OrderedDict:
        return OrderedDict((k, values[k]) for k in keys)
    return t((k, values[k]) for k in keys)


def flatten(value):
    """``(vector, unflatten)`` for a nested container of arrays and scalars.

    The leaves are concatenated in order, dict keys sorted (see the module docstring);
    ``unflatten`` builds the container back from any vector of that length.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.misc import flatten
    >>> vector, unflatten = flatten({"w": np.ones((2, 2)), "b": [0.5, np.zeros(1)]})
    >>> vector
    array([0.5, 0. , 1. , 1. , 1. , 1. ])
    >>> unflatten(2 * vector)
    {'w': array([[2., 2.],
           [2., 2.]]), 'b': [array(1.), array([0.])]}
    """
    leaves, boxed = [], []
    spec = _walk(value, leaves, boxed)
    shapes, dtypes, bounds = [], [], []
    start = 0
    for leaf in leaves:
        v = getval(leaf)
        if type(v) is _ndarray or isinstance(v, _generic):
            shape, dtype, size = v.shape, v.dtype, v.size
        else:
            a = onp.asarray(v)
            shape, dtype, size = a.shape, a.dtype, a.size
        shapes.append(shape)
        dtypes.append(dtype)
        bounds.append((start, start + size))
        start += size
    if boxed:
        vector = anp.concatenate([anp.ravel(leaf) for leaf in leaves])
    elif leaves:
        vector = onp.concatenate([onp.ravel(leaf) for leaf in leaves])
    else:
        vector = onp.zeros(0)
    vdtype = getval(vector).dtype
    layout = list(zip(bounds, shapes, [None if d == vdtype else d for d in dtypes]))

    def unflatten(vec):
        if isinstance(vec, Box):
            parts = []
            for (a, b), shape, dtype in layout:
                p = anp.reshape(vec[a:b], shape)
                parts.append(p if dtype is None or getval(vec).dtype == dtype else anp.astype_method(p, dtype))
        else:
            vec = onp.asarray(vec)
            same = vec.dtype == vdtype
            parts = []
            for (a, b), shape, dtype in layout:
                p = vec[a:b].reshape(shape)
                if dtype is not None or not same:
                    p = p.astype(dtype if dtype is not None else vdtype, copy=False)
                parts.append(p.copy() if p.base is not None else p)
        if spec is _LEAF:
            return parts[0]
        return _rebuild(spec, parts, [0])

    return vector, unflatten


def flatten_func(func, example):
    """``(flat_func, unflatten, flat_example)``: ``func`` taking a flat vector in place of a
    container shaped like ``example`` (extra arguments are passed through).

    >>> import fastgrad.numpy as np
    >>> from fastgrad import grad
    >>> from fastgrad.misc import flatten_func
    >>> def loss(params):
    ...     return np.sum(params["w"] ** 2) + params["b"]
    >>> flat_loss, unflatten, x0 = flatten_func(loss, {"w": np.ones(2), "b": 0.5})
    >>> x0, flat_loss(x0)
    (array([0.5, 1. , 1. ]), 2.5)
    >>> unflatten(grad(flat_loss)(x0))
    {'w': array([2., 2.]), 'b': array(1.)}
    """
    flat_example, unflatten = flatten(example)

    def flat_func(flat, *args, **kwargs):
        return func(unflatten(flat), *args, **kwargs)

    return flat_func, unflatten, flat_example
