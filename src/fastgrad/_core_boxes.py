"""Boxes: a value being traced, with its trace and the node that recorded it; and the
operators of array-like boxes (pure engine; _core_boxes.pxi is the compiled one)."""

from numpy import ndarray as _ndarray

from ._core_seam import _bound


# The trace of a box made outside any trace (Box(value, None, None), as autograd allows):
# below every real trace id, so a primitive never takes it for the innermost trace.
_NO_TRACE = -(2**62)


class Box:
    """A value being traced: ``_value`` at trace ``_trace``, recorded by ``_node``."""

    __slots__ = ("_value", "_trace", "_node", "__weakref__")
    type_mappings = {}
    types = set()

    def __init__(self, value, trace, node):
        self._value, self._trace, self._node = value, _NO_TRACE if trace is None else trace, node

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
    remembered for ``tp``; TypeError if there is none, or if ``tp`` is an unregistered
    ndarray subclass (its arithmetic may differ from ndarray's)."""
    if issubclass(tp, _ndarray):
        raise TypeError(_cannot_differentiate_type(tp))
    for base in tp.__mro__[1:]:
        if base in Box.type_mappings:
            Box.type_mappings[tp] = Box.type_mappings[base]
            return Box.type_mappings[base]
    raise TypeError(_cannot_differentiate_type(tp))


def _cannot_differentiate_type(tp):
    msg = "Can't differentiate w.r.t. type {}".format(tp)
    if issubclass(tp, int):
        msg += ": integers cannot be differentiated, pass floats instead (e.g. 1.0 or x.astype(float))"
    elif issubclass(tp, _ndarray):
        # An ndarray subclass may change what the operators mean (np.matrix's * is a matrix
        # product, a masked array's reductions skip elements), so ndarray's rules would give
        # wrong numbers: as autograd, such a subclass is differentiated only once a box type
        # is registered for it.
        msg += (
            ": an ndarray subclass is not differentiated as an ndarray (its arithmetic may differ);"
            " pass np.asarray(x), or register a box and a vector space for the subclass"
        )
    return msg


def isbox(x):
    return isinstance(x, Box)


def getval(x):
    while isinstance(x, Box):
        x = x._value
    return x


# ---- operators of array-like boxes: the primitives _bound as box_operators ----------------


def _box_binop(name, box, other, reflected):
    pair = _bound.box_operators.get(name)
    if pair is None:
        return NotImplemented
    fast = type(box._value) in _bound.box_fast_types and type(other) not in _bound.box_general_types
    prim = pair[0] if fast else pair[1]
    return prim(other, box) if reflected else prim(box, other)


def _binop_methods(name):
    return (
        lambda self, other: _box_binop(name, self, other, False),
        lambda self, other: _box_binop(name, self, other, True),
    )


_POW_MODULO = "pow() with a modulus is not differentiable (use x ** y % m on floats instead)"


class ArithmeticBox(Box):
    """A Box whose arithmetic operators call the primitives _bound as box_operators."""

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
        pair = _bound.box_operators.get("neg")
        if pair is None:
            return NotImplemented
        return (pair[0] if type(self._value) in _bound.box_fast_types else pair[1])(self)


def use_compiled_operators(cls):
    """The compiled engine gives ``cls`` ArithmeticBox's C operator slots; nothing to do here."""
