"""Differentiation with respect to, and through, lists, tuples and dicts.

A container being traced is a ``SequenceBox`` (list, tuple, named tuple) or a ``DictBox``
(dict, OrderedDict).  Reading an element records ``container_take``; its reverse rule
hands back a sparse cotangent (``container_untake``) that adds the element's cotangent
into the container's at one position, so a container read n times costs one zero
container plus O(1) per read.  A read of an element of an element (``params[i][j]``, or
``W, b = params[i]``) is recorded as one ``container_take_path`` on the outer container, so
no cotangent is accumulated for the inner one.  A gradient with respect to a container of
float64 arrays only (the usual parameters) records no reads at all: each array is traced
from a root of its own (``_split_input``, at the end of this module).

``make_sequence`` / ``make_dict`` build containers out of traced values; ``list``, ``tuple``
and ``dict`` here are the builtins, except that they record that construction when an
element is traced.

The vector space of a container is the product of its elements' spaces; gradients come
back in the container type they were taken with (list in, list out, named tuple in, named
tuple out, and so on).
"""

import builtins as _b
from collections import OrderedDict as _OrderedDict
from functools import partial as _partial
from operator import index as _operator_index

from numpy import ndarray as _ndarray, float64 as _float64, zeros as _np_zeros, dtype as _np_dtype

from .core import (
    SparseObject,
    register_input_splitter,
    VJPNode as _VJPNode,
    VSpace,
    def_linear,
    defjvp,
    defjvp_argnums,
    defvjp_argnums,
    defvjp_direct,
    vspace,
)
from ._engine import engine as _engine
from .tracer import Box, getval, new_box, primitive

# names autograd.builtins has too
from .core import defjvp_argnum, defvjp, defvjp_argnum  # noqa: F401
from .tracer import notrace_primitive  # noqa: F401
from ._helpers import subvals  # noqa: F401

_F64 = _np_dtype("float64")

__all__ = [
    "SequenceBox",
    "DictBox",
    "ContainerVSpace",
    "SequenceVSpace",
    "ListVSpace",
    "TupleVSpace",
    "NamedTupleVSpace",
    "DictVSpace",
    "container_take",
    "container_untake",
    "container_take_path",
    "container_untake_path",
    "make_sequence",
    "make_dict",
    "sequence_extend_right",
    "sequence_extend_left",
    "sequence_cast",
    "isinstance",
    "type",
    "list",
    "tuple",
    "dict",
    "register_container_type",
    "traced_container",
]

# The builtins under the names this module redefines (autograd exports these aliases).
isinstance_, type_, list_, tuple_, dict_ = _b.isinstance, _b.type, _b.list, _b.tuple, _b.dict
# The same, for use inside this module, which redefines those names below.
_tuple = _b.tuple
_list = _b.list
_type = _b.type
_isinstance = _b.isinstance
_dict = _b.dict

_SCALARS = (float, complex, _float64)


# ---- building containers of a given type -----------------------------------------------


def _is_namedtuple_type(t):
    return issubclass(t, _tuple) and hasattr(t, "_fields") and hasattr(t, "_make")


def _construct(seq_type, elements):
    """A ``seq_type`` (list, tuple or a named tuple class) holding ``elements``."""
    if seq_type is _list or seq_type is _tuple:
        return seq_type(elements)
    if _is_namedtuple_type(seq_type):
        return seq_type._make(elements)
    return seq_type(elements)


def _plain_type(seq):
    """The type ``seq + other`` has: list for lists, plain tuple for every tuple."""
    return _list if _isinstance(seq, _list) else _tuple


# ---- primitives ---------------------------------------------------------------------------


def _dense(A):
    """A container, with a sparse one (a tangent in forward-over-reverse) made dense first."""
    return A.mut_add(A.vs.zeros()) if type(A) is SparseObject else A


@primitive
def container_take(A, idx):
    """``A[idx]`` for a list, tuple or dict ``A`` (``idx`` an int, a slice or a key).

    ``box[idx]`` on a traced container records this primitive.

    >>> from fastgrad import grad
    >>> from fastgrad.builtins import container_take
    >>> container_take([1.0, 2.0], 1)
    2.0
    >>> grad(lambda xs: container_take(xs, 1) * 3.0)([1.0, 2.0])
    [array(0.), array(3.)]
    """
    return _dense(A)[idx]


@primitive
def container_untake(x, idx, vs):
    """The cotangent of a container of space ``vs`` that is ``x`` at ``idx`` and zero elsewhere,
    as a sparse object: it adds ``x`` into a dense cotangent instead of building zeros.

    >>> from fastgrad.builtins import container_untake
    >>> from fastgrad.extend import vspace
    >>> sparse = container_untake(5.0, 1, vspace([1.0, 2.0]))
    >>> sparse.mut_add([0.0, 0.0])
    [0.0, 5.0]
    """

    def mut_add(acc):
        return vs._add_at(acc, idx, x)

    return SparseObject(vs, mut_add)


@primitive
def container_take_path(A, path):
    """``A[path[0]][path[1]]...``: a read from nested containers, recorded as one step.

    Reading an element of an element (``params[i][j]``, or unpacking ``W, b = params[i]``)
    records this instead of a second ``container_take``, so the cotangent goes straight into
    the outer container's and no cotangent is accumulated for the inner one.

    >>> from fastgrad.builtins import container_take_path
    >>> container_take_path([(1.0, 2.0), 3.0], (0, 1))
    2.0
    """
    A = _dense(A)
    for idx in path:
        A = A[idx]
    return A


@primitive
def container_untake_path(x, path, vs):
    """The sparse cotangent of a container of space ``vs`` that is ``x`` at ``path``.

    >>> from fastgrad.builtins import container_untake_path
    >>> from fastgrad.extend import vspace
    >>> vs = vspace([(1.0, 2.0), 3.0])
    >>> container_untake_path(5.0, (0, 1), vs).mut_add(vs.zeros())
    [(array(0.), array(5.)), array(0.)]
    """

    def mut_add(acc):
        return _add_at_path(acc, path, x)

    return SparseObject(vs, mut_add)


@primitive
def make_sequence(seq_type, *elements):
    """``seq_type(elements)``: a list, tuple or named tuple built from (traced) elements.

    >>> from fastgrad import grad
    >>> from fastgrad.builtins import make_sequence
    >>> make_sequence(tuple, 1.0, 2.0)
    (1.0, 2.0)
    >>> grad(lambda x: make_sequence(list, x, 2.0 * x)[1])(1.0)
    2.0
    """
    return _construct(seq_type, elements)


@primitive
def make_dict(dict_type, keys, *values):
    """``dict_type(zip(keys, values))``: a dict (or OrderedDict) built from traced values.

    >>> from fastgrad import grad
    >>> from fastgrad.builtins import make_dict
    >>> make_dict(dict, ("a", "b"), 1.0, 2.0)
    {'a': 1.0, 'b': 2.0}
    >>> grad(lambda x: make_dict(dict, ("a", "b"), x, 3.0 * x)["b"])(1.0)
    3.0
    """
    return dict_type(zip(keys, values))


@primitive
def sequence_extend_right(seq, *elements):
    """``seq + elements`` (as the builtin: a list for a list, a plain tuple for any tuple).

    >>> from fastgrad.builtins import sequence_extend_right
    >>> sequence_extend_right([1.0], 2.0, 3.0)
    [1.0, 2.0, 3.0]
    """
    return seq + _plain_type(seq)(elements)


@primitive
def sequence_extend_left(seq, *elements):
    """``elements + seq`` (a list for a list, a plain tuple for any tuple).

    >>> from fastgrad.builtins import sequence_extend_left
    >>> sequence_extend_left((3.0,), 1.0, 2.0)
    (1.0, 2.0, 3.0)
    """
    return _plain_type(seq)(elements) + seq


@primitive
def sequence_cast(seq, seq_type):
    """The elements of ``seq`` in a ``seq_type`` (list, tuple or named tuple).

    >>> from fastgrad.builtins import sequence_cast
    >>> sequence_cast([1.0, 2.0], tuple)
    (1.0, 2.0)
    """
    return _construct(seq_type, seq)


def _type_of(x):
    return _type(getval(x))


def _take_vjp(g, ans, A, idx):
    return container_untake(g, idx, _leaf_space(getval(A)))


def _untake_vjp(g, ans, x, idx, vs):
    return container_take(g, idx)


def _take_path_vjp(g, ans, A, path):
    return container_untake_path(g, path, _leaf_space(getval(A)))


def _untake_path_vjp(g, ans, x, path, vs):
    return container_take_path(g, path)


def _zeros_like(x):
    return vspace(x).zeros()


def _element(g, idx):
    """``g[idx]`` of the cotangent ``g`` of a container.  A rule written for autograd may give
    an array as the cotangent of a list or tuple (a row per element); autograd indexes it as it
    is, so an array is indexed as an array (a traced one records NumPy's indexing)."""
    if _isinstance(getval(g), (_list, _tuple, _dict, SparseObject)):
        return container_take(g, idx)
    return g[idx]


def _make_sequence_vjp(argnums, ans, args, kwargs):
    return lambda g: [_element(g, i - 1) for i in argnums]


def _make_sequence_jvp(argnums, gs, ans, args, kwargs):
    tangents = [None] * len(args)
    for i, g in zip(argnums, gs):
        tangents[i] = g
    elements = [_zeros_like(a) if t is None else t for a, t in zip(args[1:], tangents[1:])]
    return make_sequence(args[0], *elements)


def _make_dict_vjp(argnums, ans, args, kwargs):
    keys = args[1]
    return lambda g: [container_take(g, keys[i - 2]) for i in argnums]


def _make_dict_jvp(argnums, gs, ans, args, kwargs):
    tangents = [None] * len(args)
    for i, g in zip(argnums, gs):
        tangents[i] = g
    values = [_zeros_like(a) if t is None else t for a, t in zip(args[2:], tangents[2:])]
    return make_dict(args[0], args[1], *values)


def _part_of(g, start, stop, seq):
    """``g[start:stop]`` as a cotangent for ``seq`` (same sequence type as ``seq``)."""
    part = _element(g, slice(start, stop))
    seq_type = _type_of(seq)
    if seq_type is _type_of(part) or not _isinstance(getval(part), (_list, _tuple)):
        return part  # (an array's rows stay an array, as autograd gives them)
    return sequence_cast(part, seq_type)


def _extend_right_vjp(argnums, ans, args, kwargs):
    seq = args[0]
    n = len(seq)
    return lambda g: [_part_of(g, 0, n, seq) if i == 0 else _element(g, n + i - 1) for i in argnums]


def _extend_left_vjp(argnums, ans, args, kwargs):
    seq = args[0]
    m = len(args) - 1
    return lambda g: [_part_of(g, m, None, seq) if i == 0 else _element(g, i - 1) for i in argnums]


def _extend_jvp(fun):
    def jvp(argnums, gs, ans, args, kwargs):
        tangents = [None] * len(args)
        for i, g in zip(argnums, gs):
            tangents[i] = g
        full = [_zeros_like(a) if t is None else t for a, t in zip(args, tangents)]
        return fun(*full)

    return jvp


# A read returns what the container holds, which may be a box of the trace recording the read:
# a library's primitive may return results computed from traced values its arguments carry,
# its own rule accounting for them (PennyLane's execution of circuits).  The read's node leads
# to that primitive's, so the engines' check for boxes hidden in an output passes these by.
container_take._returns_held_values = True
container_take_path._returns_held_values = True

defvjp_direct(container_take, _take_vjp)
def_linear(container_take)
defvjp_direct(container_untake, _untake_vjp)
defjvp(container_untake, "same")
defvjp_direct(container_take_path, _take_path_vjp)
def_linear(container_take_path)
defvjp_direct(container_untake_path, _untake_path_vjp)
defjvp(container_untake_path, "same")
defvjp_argnums(make_sequence, _make_sequence_vjp)
defjvp_argnums(make_sequence, _make_sequence_jvp)
defvjp_argnums(make_dict, _make_dict_vjp)
defjvp_argnums(make_dict, _make_dict_jvp)
defvjp_argnums(sequence_extend_right, _extend_right_vjp)
defjvp_argnums(sequence_extend_right, _extend_jvp(sequence_extend_right))
defvjp_argnums(sequence_extend_left, _extend_left_vjp)
defjvp_argnums(sequence_extend_left, _extend_jvp(sequence_extend_left))
defvjp_direct(sequence_cast, lambda g, ans, seq, seq_type: sequence_cast(g, _type_of(seq)))
def_linear(sequence_cast)


# ---- boxes ----------------------------------------------------------------------------------


def _origin(box):
    """(box of the outer container, path) if ``box`` is a reverse-mode read of an element of
    a traced container (by ``container_take`` or ``container_take_path``), else None."""
    node = box._node
    if _type(node) is _VJPNode:
        fun = node.fun
        if fun is container_take:
            args = node.args
            if args is not None and not _isinstance(args[1], slice):
                return new_box(args[0], box._trace, node.parents[0]), (args[1],)
        elif fun is container_take_path:
            args = node.args
            if args is not None:
                return new_box(args[0], box._trace, node.parents[0]), args[1]
    return None


def _take(box, idx):
    """``box[idx]``, recorded."""
    if _isinstance(idx, Box):
        idx = getval(idx)
    if not _isinstance(idx, slice):
        origin = _origin(box)
        if origin is not None:
            return container_take_path(origin[0], origin[1] + (idx,))
    return container_take(box, idx)


def _take_all(box, indices):
    """An iterator of ``box[i]`` for ``i`` in ``indices`` (none of them a slice), recorded."""
    origin = _origin(box)
    if origin is None:
        return map(_partial(container_take, box), indices)
    outer, prefix = origin
    return map(_partial(container_take_path, outer), [prefix + (i,) for i in indices])


class SequenceBox(Box):
    """A traced list or tuple (named tuples included): reads are recorded, so gradients flow
    from the elements back to the container.

    >>> from fastgrad import grad
    >>> def f(params):
    ...     print(type(params).__name__)
    ...     w, b = params
    ...     return 2.0 * w + b
    >>> grad(f)([1.0, 3.0])
    SequenceBox
    [array(2.), array(1.)]
    """

    __slots__ = ()

    __getitem__ = _take

    def __len__(self):
        return len(self._value)

    def __iter__(self):
        return _take_all(self, range(len(self._value)))

    def __contains__(self, elt):
        return getval(elt) in getval(self)

    def index(self, elt, *bounds):
        return getval(self).index(getval(elt), *bounds)

    def count(self, elt):
        return getval(self).count(getval(elt))

    def __add__(self, other):
        if not _same_kind(getval(self), getval(other)):
            return NotImplemented
        return sequence_extend_right(self, *other)

    def __radd__(self, other):
        if not _same_kind(getval(self), getval(other)):
            return NotImplemented
        return sequence_extend_left(self, *other)

    def __mul__(self, n):
        try:
            n = _operator_index(n)
        except TypeError:
            return NotImplemented
        return make_sequence(_plain_type(getval(self)), *(_list(self) * n))

    __rmul__ = __mul__

    def __getattr__(self, name):
        # The fields of a named tuple (e.g. numpy.linalg's EighResult.eigenvalues).
        if not name.startswith("_"):
            fields = getattr(_type_of(self), "_fields", ())
            if name in fields:
                return _take(self, fields.index(name))
        elif name == "_fields" and _is_namedtuple_type(_type_of(self)):
            return _type_of(self)._fields
        raise AttributeError("'{}' object has no attribute '{}'".format(_type(self).__name__, name))


def _same_kind(a, b):
    return (_isinstance(a, _list) and _isinstance(b, _list)) or (_isinstance(a, _tuple) and _isinstance(b, _tuple))


class DictBox(Box):
    """A traced dict (or OrderedDict): ``[]``, ``get``, ``values``, ``items`` are recorded.

    >>> from fastgrad import grad
    >>> def f(params):
    ...     print(type(params).__name__)
    ...     return params["w"] * params.get("b")
    >>> grad(f)({"w": 2.0, "b": 3.0})
    DictBox
    {'w': array(3.), 'b': array(2.)}
    """

    __slots__ = ()

    __getitem__ = _take

    def __len__(self):
        return len(self._value)

    def __iter__(self):
        return iter(getval(self))

    def __contains__(self, key):
        return key in getval(self)

    def keys(self):
        return _list(getval(self).keys())

    def values(self):
        return _list(_take_all(self, _list(getval(self))))

    def items(self):
        keys = _list(getval(self))
        return _list(zip(keys, _take_all(self, keys)))

    def get(self, key, default=None):
        return _take(self, key) if key in getval(self) else default


# ---- vector spaces ----------------------------------------------------------------------------

# Element-wise sums and zeros of (nested) values, with fast paths for the common exact types
# (arrays, Python/NumPy floats, and plain list/tuple/dict), so that accumulating a cotangent
# into a container builds no vector-space objects; anything else goes through its vspace.

_container_space_types = {}  # value type -> ContainerVSpace subclass (see register_container_type)
_vspace_makers = VSpace.mappings
_new_object = object.__new__


def _leaf_space(x):
    """vspace(x); for a container, one that computes its element spaces only if needed
    (the reverse rule of indexing makes one per use, and most only add at one position)."""
    t = _type(x)
    vs_type = _container_space_types.get(t)
    if vs_type is not None and _vspace_makers.get(t) is vs_type:
        vs = _new_object(vs_type)
        vs._type, vs._example, vs._shape = t, x, None
        return vs
    return vspace(x)


def _leaf_add(a, b):
    ta = _type(a)
    if ta is _Zero:
        return _zero_plus(a.example, b)
    if ta is _type(b):
        if ta is _ndarray:
            if a.shape == b.shape:
                return a + b
        elif ta in _SCALARS:
            return a + b
        elif ta is _tuple:
            return _tuple([_leaf_add(u, v) for u, v in zip(a, b)])
        elif ta is _list:
            return [_leaf_add(u, v) for u, v in zip(a, b)]
    return _leaf_space(a)._add(a, b)


def _leaf_mut_add(a, b):
    """a + b, in place into ``a`` where possible: ``a`` always belongs to the sum being built
    (it was made by zeros() or by an earlier sum), ``b`` never is written to."""
    ta = _type(a)
    if ta is _Zero:
        return _zero_plus(a.example, b)
    if ta is _type(b):
        if ta is _ndarray:
            if a.shape == b.shape and (a.dtype is b.dtype or a.dtype == b.dtype):
                a += b
                return a
        elif ta in _SCALARS:
            return a + b
        elif ta is _tuple:
            return _tuple([_leaf_mut_add(u, v) for u, v in zip(a, b)])
        elif ta is _list:
            for i, v in enumerate(b):
                a[i] = _leaf_mut_add(a[i], v)
            return a
    elif ta is _ndarray and (_type(b) is float or _type(b) is _float64) and not a.shape:
        a += b  # the 0-d array zeros() makes for a float element, plus a float cotangent
        return a
    return _leaf_space(a)._mut_add(a, b)


# ---- sums of container cotangents that start without zeros -------------------------------
# The reverse rule of reading an element of a traced container gives a sparse cotangent
# (the element's cotangent at one position).  The engine sums those into a container that
# starts as zeros; here the zeros of array and float leaves are _Zero markers instead, so
# a leaf that gets one contribution costs one copy-like add, not a zero-filled array and
# an add, and a leaf that gets none costs nothing until the sum is read.  The engine calls
# finish_cotangent before a sum is read (by a rule, or as the result), which makes the
# remaining markers real zeros: nothing outside the engine's accumulators sees a _Zero.


class _Zero:
    """The zero of ``example``'s space, in a container cotangent being summed."""

    __slots__ = ("example",)

    def __init__(self, example):
        self.example = example


def _lazy_zeros(x):
    """What _leaf_zeros(x) gives, with _Zero markers for array and float leaves."""
    tx = _type(x)
    if tx is _ndarray or tx is float or tx is _float64:
        return _Zero(x)
    if tx is _tuple:
        return _tuple([_lazy_zeros(e) for e in x])
    if tx is _list:
        return [_lazy_zeros(e) for e in x]
    return _leaf_zeros(x)


def _zero_plus(example, b):
    """zeros like ``example``, plus b (the sum _leaf_mut_add(_leaf_zeros(example), b) makes)."""
    if _type(example) is _ndarray and _type(b) is _ndarray and b.shape == example.shape and b.dtype == example.dtype:
        return b.copy()  # the same values (a -0.0 stays -0.0; 0 + b would make it 0.0)
    return _leaf_mut_add(_leaf_zeros(example), b)


def start_cotangent_sum(g):
    """The first term of a sum of cotangents that ``g``, a sparse cotangent, starts."""
    vs = g.vs
    if _isinstance(vs, ContainerVSpace) and vs._shape is None and vs._type in _MARKED_TYPES:
        return g.mut_add(vs._build([_lazy_zeros(e) for e in vs._elements(vs._example)]))
    return g.mut_add(vs.zeros())  # (named tuples and other container types: real zeros)


def finish_cotangent(g):
    """``g`` with its _Zero markers made zeros (the same container, rebuilt if a tuple)."""
    t = _type(g)
    if t is _Zero:
        return _leaf_zeros(g.example)
    if t is _list or t is _dict:
        for k in range(len(g)) if t is _list else _list(g):
            e = g[k]
            if _type(e) in _MARKED_TYPES:
                g[k] = finish_cotangent(e)
        return g
    if t is _tuple:
        for e in g:
            if _type(e) in _MARKED_TYPES:
                return _tuple([finish_cotangent(e) for e in g])
        return g
    return g


_MARKED_TYPES = frozenset([_Zero, _list, _tuple, _dict])  # may hold a _Zero


def _leaf_zeros(x):
    tx = _type(x)
    if tx is _ndarray:  # (an integer or boolean array's cotangents are float64, as its space)
        return _np_zeros(x.shape, x.dtype if x.dtype.kind in "fc" else _F64)
    if tx is _tuple:
        return _tuple([_leaf_zeros(e) for e in x])
    if tx is _list:
        return [_leaf_zeros(e) for e in x]
    return _leaf_space(x).zeros()


def _leaf_add_at(acc, idx, x):
    """``acc`` (a container of the sum being built) with ``x`` added at ``idx``."""
    t = _type(acc)
    if t is _list or t is _dict:
        acc[idx] = _leaf_mut_add(acc[idx], x)
        return acc
    if t is _tuple:
        elements = _list(acc)
        elements[idx] = _leaf_mut_add(elements[idx], x)
        return _tuple(elements)
    space = _leaf_space(acc)
    add_at = getattr(space, "_add_at", None)
    if add_at is not None:
        return add_at(acc, idx, x)
    # a space with only autograd's public protocol (e.g. one a library registered for an
    # ndarray subclass): add the value that is ``x`` at ``idx`` and zero elsewhere
    spread = space.zeros()
    spread[idx] = x
    return space.mut_add(acc, spread)


def _add_at_path(acc, path, x):
    """``acc`` with ``x`` added at ``acc[path[0]][path[1]]...``; the containers inside ``acc``
    belong to the sum being built too, so lists and dicts among them are updated in place."""
    if len(path) == 1:
        return _leaf_add_at(acc, path[0], x)
    idx = path[0]
    inner = acc[idx]
    new_inner = _add_at_path(inner, path[1:], x)
    if new_inner is inner:
        return acc
    if _isinstance(acc, (_list, _dict)):
        acc[idx] = new_inner
        return acc
    elements = _list(acc)  # a tuple or named tuple: rebuilt
    elements[idx] = new_inner
    return _construct(_type(acc), elements)


class ContainerVSpace(VSpace):
    """The space of a container: the product of the spaces of its elements.

    ``shape`` is the container of the elements' spaces (same type and keys as the value);
    ``size`` is the sum of their sizes.  Subclasses say how to list a value's elements in
    ``shape``'s order (``_elements``) and how to build a value from such a list (``_build``).

    >>> import fastgrad.numpy as np
    >>> from fastgrad.builtins import ContainerVSpace
    >>> from fastgrad.extend import vspace
    >>> vs = vspace({"w": np.ones(2), "b": 1.0})
    >>> isinstance(vs, ContainerVSpace), vs.size
    (True, 3)
    >>> vs.ones()
    {'w': array([1., 1.]), 'b': array(1.)}
    """

    __slots__ = ("_type", "_shape", "_example")

    def __init__(self, value):
        self._type, self._example = _type(value), None
        self._shape = self._map_spaces(value)

    # _leaf_space also makes spaces with ``_shape = None`` and ``_example`` set: their
    # element spaces are computed only if an operation needs them.

    @property
    def shape(self):
        if self._shape is None:
            self._shape = self._map_spaces(self._example)
            self._example = None
        return self._shape

    def _spaces(self):
        return self._elements(self.shape)

    @property
    def size(self):
        return sum([vs.size for vs in self._spaces()])

    @property
    def iscomplex(self):
        return any([vs.iscomplex for vs in self._spaces()])

    def _build_any(self, elements):
        """A value of this space from ``elements``, recorded if any of them is traced."""
        for e in elements:
            if _isinstance(e, Box):
                return self._build_traced(elements)
        return self._build(elements)

    def zeros(self):
        if self._shape is None:
            return self._build([_leaf_zeros(e) for e in self._elements(self._example)])
        return self._build([vs.zeros() for vs in self._spaces()])

    def ones(self):
        return self._build([vs.ones() for vs in self._spaces()])

    def randn(self):
        return self._build([vs.randn() for vs in self._spaces()])

    def standard_basis(self):
        spaces = self._spaces()
        for i, vs in enumerate(spaces):
            for basis_vector in vs.standard_basis():
                elements = [other.zeros() for other in spaces]
                elements[i] = basis_vector
                yield self._build(elements)

    def _add(self, x, y):
        return self._build_any([_leaf_add(a, b) for a, b in zip(self._elements(x), self._elements(y))])

    def _scalar_mul(self, x, a):
        return self._build_any([vs._scalar_mul(e, a) for vs, e in zip(self._spaces(), self._elements(x))])

    def _inner_prod(self, x, y):
        total = 0.0
        for vs, a, b in zip(self._spaces(), self._elements(x), self._elements(y)):
            total = total + vs._inner_prod(a, b)
        return total

    def _covector(self, x):
        return self._build_any([vs._covector(e) for vs, e in zip(self._spaces(), self._elements(x))])

    def __eq__(self, other):
        return _type(self) is _type(other) and self._type is other._type and self.shape == other.shape

    __hash__ = VSpace.__hash__

    def __repr__(self):
        return "{}_{}".format(_type(self).__name__, {"shape": self.shape})


class SequenceVSpace(ContainerVSpace):
    """Space of a list or tuple; ``shape`` is a sequence of the same type.

    >>> from fastgrad.builtins import SequenceVSpace
    >>> from fastgrad.extend import vspace
    >>> isinstance(vspace([1.0]), SequenceVSpace), isinstance(vspace((1.0,)), SequenceVSpace)
    (True, True)
    """

    __slots__ = ()

    def _map_spaces(self, value):
        return _construct(self._type, [vspace(e) for e in value])

    def _elements(self, x):
        return x

    def _build(self, elements):
        return _construct(self._type, elements)

    def _build_traced(self, elements):
        return make_sequence(self._type, *elements)


class ListVSpace(SequenceVSpace):
    """Space of a list.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.extend import vspace
    >>> vs = vspace([1.0, np.zeros(2)])
    >>> type(vs).__name__, vs.size
    ('ListVSpace', 3)
    >>> vs.zeros()
    [array(0.), array([0., 0.])]
    """

    __slots__ = ()

    def _build(self, elements):
        if self._type is _list:
            return elements if _type(elements) is _list else _list(elements)
        return _construct(self._type, elements)

    def _add_at(self, acc, idx, x):
        """``acc`` (a sum being built) with ``x`` added at ``idx`` (int, or slice and sequence)."""
        if _isinstance(idx, slice):
            for pos, e in zip(range(len(acc))[idx], x):
                acc[pos] = _leaf_mut_add(acc[pos], e)
        else:
            acc[idx] = _leaf_mut_add(acc[idx], x)
        return acc

    def _mut_add(self, x, y):
        for i, b in enumerate(y):
            x[i] = _leaf_mut_add(x[i], b)
        return x


class TupleVSpace(SequenceVSpace):
    """Space of a tuple or a named tuple (the type is kept); ``NamedTupleVSpace`` is the
    same class.

    >>> from collections import namedtuple
    >>> from fastgrad.extend import vspace
    >>> Point = namedtuple("Point", "x y")
    >>> vs = vspace(Point(1.0, 2.0))
    >>> type(vs).__name__, vs.ones()
    ('TupleVSpace', Point(x=array(1.), y=array(1.)))
    """

    __slots__ = ()

    def _build(self, elements):
        return _tuple(elements) if self._type is _tuple else _construct(self._type, elements)

    def _add_at(self, acc, idx, x):
        elements = _list(acc)
        if _isinstance(idx, slice):
            for pos, e in zip(range(len(acc))[idx], x):
                elements[pos] = _leaf_mut_add(elements[pos], e)
        else:
            elements[idx] = _leaf_mut_add(elements[idx], x)
        return self._build(elements)

    def _mut_add(self, x, y):
        return self._build([_leaf_mut_add(a, b) for a, b in zip(x, y)])


NamedTupleVSpace = TupleVSpace  # autograd's name; named tuples use TupleVSpace here


class DictVSpace(ContainerVSpace):
    """Space of a dict or OrderedDict; ``shape`` has the same keys, in the same order.

    >>> from fastgrad.extend import vspace
    >>> vs = vspace({"a": 1.0, "b": 2.0})
    >>> type(vs).__name__, list(vs.shape), vs.zeros()
    ('DictVSpace', ['a', 'b'], {'a': array(0.), 'b': array(0.)})
    """

    __slots__ = ()

    def _map_spaces(self, value):
        return self._type([(k, vspace(v)) for k, v in value.items()])

    def _keys(self):
        return self._shape if self._shape is not None else self._example

    def _elements(self, x):
        return [x[k] for k in self._keys()]

    def _build(self, elements):
        return self._type(zip(self._keys(), elements))

    def _build_traced(self, elements):
        return make_dict(self._type, _tuple(self._keys()), *elements)

    def _add_at(self, acc, key, x):
        acc[key] = _leaf_mut_add(acc[key], x)
        return acc

    def _mut_add(self, x, y):
        for k in self._keys():
            x[k] = _leaf_mut_add(x[k], y[k])
        return x


def register_container_type(value_type):
    """Make a named tuple class or a dict subclass differentiable (list, tuple, dict and
    OrderedDict are registered already).  Returns ``value_type``, so it works as a class
    decorator.  (Named tuples met as arguments or outputs are registered automatically.)

    >>> from collections import namedtuple
    >>> from fastgrad import grad
    >>> from fastgrad.builtins import register_container_type
    >>> Params = register_container_type(namedtuple("Params", "w b"))
    >>> grad(lambda p: p.w * p.b)(Params(2.0, 3.0))
    Params(w=array(3.), b=array(2.))
    """
    if _is_namedtuple_type(value_type) or issubclass(value_type, (_list, _tuple)):
        box_type = SequenceBox
        vs_type = ListVSpace if issubclass(value_type, _list) else TupleVSpace
    elif issubclass(value_type, _dict):
        box_type, vs_type = DictBox, DictVSpace
    else:
        raise TypeError("{} is not a list, tuple, named tuple or dict type".format(value_type))
    box_type.register(value_type)
    vs_type.register(value_type)
    _container_space_types[value_type] = vs_type
    return value_type


for _t in (_list, _tuple, _dict, _OrderedDict):
    register_container_type(_t)


def _register_linalg_results():
    # numpy.linalg returns named tuples (EighResult, SVDResult, ...): differentiable too.
    try:
        from numpy.linalg import _linalg
    except ImportError:  # pragma: no cover - older numpy
        return
    for name in ("EigResult", "EighResult", "QRResult", "SlogdetResult", "SVDResult"):
        result_type = getattr(_linalg, name, None)
        if result_type is not None:
            register_container_type(result_type)


_register_linalg_results()


# ---- builtins that look through boxes, and traced constructors ------------------------------


def isinstance(obj, classinfo):
    """The builtin ``isinstance``, applied to the value inside any boxes.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import grad, isinstance
    >>> def f(x):
    ...     print(isinstance(x, np.ndarray))
    ...     return np.sum(x ** 2)
    >>> grad(f)(np.ones(2))
    True
    array([2., 2.])
    """
    return _isinstance(getval(obj), classinfo)


def type(obj, *args):
    """The builtin ``type``; with one argument, the type of the value inside any boxes.

    >>> import builtins
    >>> import fastgrad.numpy as np
    >>> from fastgrad import grad, type
    >>> def f(x):
    ...     print(type(x).__name__, builtins.type(x).__name__)
    ...     return np.sum(x ** 2)
    >>> grad(f)(np.ones(2))
    ndarray ArrayBox
    array([2., 2.])
    """
    if args:
        return _type(obj, *args)
    return _type(getval(obj))


class _ContainerMeta(_type):
    # isinstance/issubclass against fastgrad's list/tuple/dict mean the builtin's, also
    # for traced values, so the classes can replace the builtins in user code.
    def __instancecheck__(cls, obj):
        return _isinstance(getval(obj), cls._builtin)

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, cls._builtin)


class ListMeta(_ContainerMeta):
    pass


class TupleMeta(_ContainerMeta):
    pass


class DictMeta(_ContainerMeta):
    pass


def _any_box(values):
    for v in values:
        if _isinstance(v, Box):
            return True
    return False


def traced_container(value):
    """``value`` itself, or, if it is a plain list/tuple/dict (or named tuple, OrderedDict)
    holding traced values at any depth, the same structure as one traced value.

    ``fastgrad.list([x, (y, 1.0)])`` uses it so that the inner tuple is traced as well
    (autograd leaves such an inner tuple as a constant with boxes inside).

    >>> from fastgrad import grad
    >>> from fastgrad.builtins import traced_container
    >>> def f(x):
    ...     pair = traced_container((x, 2.0 * x))
    ...     print(type(pair).__name__)
    ...     return pair[0] * pair[1]
    >>> grad(f)(3.0)
    SequenceBox
    12.0
    >>> traced_container([1.0, 2.0])    # nothing traced: returned as it is
    [1.0, 2.0]
    """
    t = _type(value)
    if t not in _container_space_types:
        if not issubclass(t, (_list, _tuple, _dict)):
            return value
        register_container_type(t)  # e.g. a user's named tuple, seen for the first time
    if _isinstance(value, _dict):
        values = [traced_container(v) for v in value.values()]
        return make_dict(t, _tuple(value), *values) if _any_box(values) else value
    elements = [traced_container(e) for e in value]
    return make_sequence(t, *elements) if _any_box(elements) else value


def _sequence_of(seq_type, iterable):
    if _isinstance(iterable, SequenceBox):
        return iterable if _type_of(iterable) is seq_type else sequence_cast(iterable, seq_type)
    elements = [traced_container(e) for e in iterable]
    return make_sequence(seq_type, *elements) if _any_box(elements) else seq_type(elements)


class list(_list, metaclass=ListMeta):
    """The builtin ``list``; built from traced elements, the result is traced too.

    >>> from fastgrad import grad, list
    >>> grad(lambda x: list([x, 2.0 * x])[1])(1.0)
    2.0
    >>> list((1, 2)), isinstance([], list)
    ([1, 2], True)
    """

    _builtin = _list

    def __new__(cls, iterable=(), /):
        return _sequence_of(_list, iterable)


class tuple(_tuple, metaclass=TupleMeta):
    """The builtin ``tuple``; built from traced elements, the result is traced too.

    >>> from fastgrad import grad, tuple
    >>> grad(lambda x: tuple([x, 2.0 * x])[1])(1.0)
    2.0
    >>> tuple([1, 2]), isinstance((1, 2), tuple)
    ((1, 2), True)
    """

    _builtin = _tuple

    def __new__(cls, iterable=(), /):
        return _sequence_of(_tuple, iterable)


class dict(_dict, metaclass=DictMeta):
    """The builtin ``dict``; with traced values, the result is traced too.

    >>> from fastgrad import dict, grad
    >>> grad(lambda x: dict(a=x, b=3.0 * x)["b"])(1.0)
    3.0
    >>> dict(a=1), isinstance({}, dict)
    ({'a': 1}, True)
    """

    _builtin = _dict

    def __new__(cls, *args, **kwargs):
        d = _dict(*args, **kwargs)
        values = [traced_container(v) for v in d.values()]
        return make_dict(_dict, _tuple(d), *values) if _any_box(values) else d


_engine.bind(start_sum=start_cotangent_sum, finish_sum=finish_cotangent)


# ---- differentiating with respect to a container of arrays, leaf by leaf ------------------
# grad(f)(params) with params a list, tuple or dict (nested) of float64 arrays, the usual
# shape of a model's parameters.  Each array is traced from a root node of its own and each
# container is a box whose elements are those boxes, so reading params[i] or unpacking
# ``W, b = layer`` records nothing, and the backward pass leaves every array's cotangent at its
# root: no container_take nodes, no sparse cotangents, nothing summed into a container.  A
# container used whole (passed to a primitive, sliced) still records on its own root, and
# what arrives there is added to its arrays' cotangents when the gradient is assembled.
# The function sees what it would see otherwise: a SequenceBox or DictBox of the container.


class _SplitSequenceBox(SequenceBox):
    __slots__ = ("_elements",)  # the element boxes (a list or tuple like the value)

    def __getitem__(self, idx):
        if _type(idx) is int:
            return self._elements[idx]
        return _take(self, idx)

    def __iter__(self):
        return iter(self._elements)


class _SplitDictBox(DictBox):
    __slots__ = ("_elements",)  # key -> element box, in the value's order

    def __getitem__(self, key):
        if _isinstance(key, Box):
            key = getval(key)
        return self._elements[key]

    def values(self):
        return _list(self._elements.values())

    def items(self):
        return _list(self._elements.items())

    def get(self, key, default=None):
        return self._elements.get(key, default)


# They are SequenceBox and DictBox to the user (type names, reprs, documentation).
_SplitSequenceBox.__name__ = _SplitSequenceBox.__qualname__ = "SequenceBox"
_SplitDictBox.__name__ = _SplitDictBox.__qualname__ = "DictBox"


def _splittable(x):
    """``x`` is a list, tuple or dict (exactly those types, nested) of float64 arrays only."""
    t = _type(x)
    if t is _list or t is _tuple:
        items = x
    elif t is _dict:
        items = x.values()
    else:
        return False
    for v in items:
        tv = _type(v)
        if tv is _ndarray:
            if v.dtype.type is not _float64:
                return False
        elif not _splittable(v):
            return False
    return len(x) > 0


def _split_boxes(x, trace_id, node, roots):
    """``x`` boxed for the trace with every container and array on a root of its own
    (``node`` for ``x``); the roots made are appended to ``roots`` in pre-order."""
    t = _type(x)
    if t is _ndarray:
        return new_box(x, trace_id, node)
    if t is _dict:
        box = _SplitDictBox(x, trace_id, node)
        elements = {}
        for k, v in x.items():
            child = _new_root()
            roots.append(child)
            elements[k] = _split_boxes(v, trace_id, child, roots)
    else:
        box = _SplitSequenceBox(x, trace_id, node)
        elements = []
        for v in x:
            child = _new_root()
            roots.append(child)
            elements.append(_split_boxes(v, trace_id, child, roots))
        if t is _tuple:
            elements = _tuple(elements)
    box._elements = elements
    return box


_new_root = _VJPNode.new_root


def _assemble(x, cots, inherited):
    """The gradient for ``x`` from the roots' cotangents (``cots``, an iterator in the order
    of _split_boxes) plus ``inherited``, what reached the enclosing containers for ``x``."""
    own = next(cots)
    if inherited is None:
        total = own
    elif own is None:
        total = inherited
    else:
        total = _leaf_add(inherited, own)
    t = _type(x)
    if t is _ndarray:
        if total is None:
            return _np_zeros(x.shape, x.dtype)
        tt = _type(total)
        if tt is _ndarray and total.shape == x.shape and total.dtype == x.dtype:
            # the pass made ``own`` the caller's; a part of a container's cotangent may not be
            return total.copy() if total is inherited else total
        if _isinstance(total, Box):  # a cotangent traced by an outer trace (higher order)
            v = getval(total)
            if _type(v) is _ndarray and v.shape == x.shape and v.dtype == x.dtype:
                return total
            return _leaf_add(_leaf_zeros(x), total)
        return _leaf_mut_add(_leaf_zeros(x), total)
    if t is _dict:
        return {k: _assemble(v, cots, None if total is None else total[k]) for k, v in x.items()}
    parts = [_assemble(v, cots, None if total is None else total[i]) for i, v in enumerate(x)]
    return _tuple(parts) if t is _tuple else parts


class _Split:
    """How core's make_vjp traces an ``x`` that _splittable accepts (see
    fastgrad.core.register_input_splitter): leaf by leaf, as described above."""

    __slots__ = ("x", "roots")

    def __init__(self, x):
        self.x, self.roots = x, [_new_root()]

    def boxes(self, trace_id):
        return _split_boxes(self.x, trace_id, self.roots[0], self.roots)

    def gradient(self, cotangents):
        return _assemble(self.x, iter(cotangents), None)


def _split_input(x):
    return _Split(x) if _splittable(x) else None


for _t in (_list, _tuple, _dict):
    register_input_splitter(_t, _split_input)
