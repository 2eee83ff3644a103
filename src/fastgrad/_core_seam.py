"""The one seam between the engine and the layers above it (pure engine; _core_seam.pxi
is the compiled one).

The engine imports nothing of fastgrad.  What it needs from above is handed over by one
call, ``bind(**entries)``, with these entries (and the module that binds each):

- ``generic_add`` (core): ``(prev or None, prev_owned, g) -> (sum, owned)``, the sum of
  cotangents without a fast path (boxes at higher order, containers, user types);
- ``sparse_type`` (core): the sparse cotangent type, added into a sum by its ``mut_add``;
- ``start_sum`` (builtins): ``g -> the first term`` of a sum the sparse cotangent g starts;
- ``finish_sum`` (builtins): an owned sum that is not a scalar or an array -> the value a
  rule may read;
- ``replayed_cotangents`` (_recompute): ``(node, g, memo) -> cotangents`` of a node that
  keeps a replay instead of its values (``memo``: what the running pass recomputed);
- ``explain_failure`` (numpy.numpy_wrapper): ``(primitive, args, kwargs, error) -> error or
  None``, called when a primitive's function raises TypeError, ValueError or
  NotImplementedError: the error to raise instead (from the original), naming the function
  and the array library, when an argument is another library's array; None keeps the
  original (nothing is called when the function succeeds);
- ``hooks`` (_hooks): a ``Hooks``, the runtime switches (below);
- ``box_operators`` (numpy.numpy_boxes): ``{name: (fast, general)}``, the primitives that
  ArithmeticBox's operators add sub mul truediv pow mod matmul neg call;
- ``box_fast_types`` (numpy.numpy_boxes): value types of boxes whose operators may call
  the fast one;
- ``box_general_types`` (numpy.numpy_boxes): types of other operands that always take
  the general one;
- ``numpy_loops`` (numpy._scalar_kernels): ``{loop name: ufunc}``, NumPy's ufuncs whose
  float64 inner loops the scalar kernels call (each bound once NumPy is seen running it);
- ``scalar_kernels`` (numpy._scalar_kernels): ``{primitive: (kernel name, needs_float64)}``;
- ``scalar_vjps`` (numpy._scalar_kernels): ``{(VJPRule, argnum): (kernel name,
  checks_target)}``.

An entry never bound is None (an empty table or set for the last six).  A table replaces
the previous one whole.  ``bind`` checks every entry before it changes any and returns the
previous values of those it changed, so ``bind(**previous)`` restores them.

The scalar kernels are C arithmetic of the compiled engine (_scalar_kernels.pxi); this
engine has none: ``scalar_kernel_names()`` is empty and their tables (and
``numpy_loops``) are kept unused.
"""


class Hooks:
    """The runtime switches that the engine reads on every node: one object, owned by the
    layer above (fastgrad._hooks binds it), whose fields that layer changes.

    - ``debug``: debug-mode checks (fastgrad._debug) or None: ``recorded(node)`` when a
      node is recorded, ``before_backward(node)`` before its rule runs and
      ``checked(node, argnum, g, cotangent)`` for each cotangent it gives;
    - ``record_replay``: while a recompute block is open (fastgrad._recompute), the
      function ``(node, ans, args, kwargs) -> replay or None`` called for each node
      recorded; a node given a replay drops its saved values."""

    __slots__ = ("debug", "record_replay")

    def __init__(self):
        self.debug = self.record_replay = None


_ENTRIES = ("generic_add", "sparse_type", "start_sum", "finish_sum", "replayed_cotangents", "explain_failure", "hooks")
_ENTRIES += ("box_operators", "box_fast_types", "box_general_types", "numpy_loops", "scalar_kernels", "scalar_vjps")
_OPERATOR_NAMES = ("add", "sub", "mul", "truediv", "pow", "mod", "matmul", "neg")
_TABLES = ("box_operators", "scalar_kernels", "scalar_vjps")


class _Bound:
    """What is bound now, read by the other modules of this engine (at first: nothing)."""

    __slots__ = _ENTRIES

    def __init__(self):
        self.generic_add = self.sparse_type = self.start_sum = self.finish_sum = self.replayed_cotangents = None
        self.explain_failure = None
        self.hooks = Hooks()  # (every switch off)
        self.box_operators, self.numpy_loops, self.scalar_kernels, self.scalar_vjps = {}, {}, {}, {}
        self.box_fast_types = self.box_general_types = frozenset()


_bound = _Bound()


def bind(**entries):
    """Hand the engine what it takes from the layers above (the entries are listed in this
    module's docstring); unknown names and ill-typed values raise TypeError, and nothing
    is changed then.  -> {name: previous value} of the entries given."""
    checked = {name: _checked(name, value) for name, value in entries.items()}
    previous = {name: getattr(_bound, name) for name in checked}
    for name, value in checked.items():
        setattr(_bound, name, value)
    return previous


def _checked(name, value):
    """``value`` as the engine keeps it for entry ``name``, or TypeError."""
    if name not in _ENTRIES:
        raise TypeError("bind: unknown entry {!r} (the entries are {})".format(name, ", ".join(_ENTRIES)))
    if name == "hooks":
        if type(value) is not Hooks:
            raise TypeError("bind: hooks must be a Hooks of this engine, not {!r}".format(type(value)))
    elif name == "sparse_type":
        if value is not None and not isinstance(value, type):
            raise TypeError("bind: sparse_type must be a type or None, not {!r}".format(value))
    elif name in ("box_fast_types", "box_general_types"):
        value = frozenset(value)
        if not all(isinstance(t, type) for t in value):
            raise TypeError("bind: {} must be types".format(name))
    elif name == "numpy_loops":
        if not isinstance(value, dict):
            raise TypeError("bind: numpy_loops must be a dict, not {!r}".format(type(value)))
        value = dict(value)  # (kept unused, as the scalar kernels' tables)
    elif name in _TABLES:
        if not isinstance(value, dict):
            raise TypeError("bind: {} must be a dict, not {!r}".format(name, type(value)))
        if not all(type(pair) is tuple and len(pair) == 2 for pair in value.values()):
            raise TypeError("bind: the values of {} are pairs".format(name))
        if name == "box_operators" and set(value) - set(_OPERATOR_NAMES):
            raise TypeError(
                "bind: box_operators maps the operator names {} to (fast, general) primitives".format(
                    ", ".join(_OPERATOR_NAMES)
                )
            )
        value = dict(value)  # (this engine has no scalar kernels: their tables are kept unused)
    elif value is not None and not callable(value):
        raise TypeError("bind: {} must be callable or None, not {!r}".format(name, value))
    return value


def scalar_kernel_names():
    """The kernels of this engine: (unary forward, binary forward, reverse) names; none."""
    return (), (), ()
