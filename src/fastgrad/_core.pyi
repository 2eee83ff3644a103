# Type stub of the compiled engine, fastgrad._core (built from _core.pyx).
# The pure-Python twin, fastgrad._core_py, has the same names.  Users reach these through
# fastgrad.tracer and fastgrad.core; nothing but fastgrad._engine imports this module.
from typing import Any, Callable, ClassVar, Dict, List, Optional, Set, Tuple, final

from typing_extensions import disjoint_base

# Cython's doctest table (autotestdict; empty: the engine's examples live in the Python layer).
__test__: Dict[str, str]

# Registries: the primitive -> its reverse / forward rules; node type -> untraced primitives.
@disjoint_base
class RuleTable(Dict[Any, Any]):
    """A dict that counts its changes: primitives keep the rule they found until it moves."""

    @property
    def version(self) -> int: ...

primitive_vjps: RuleTable
primitive_jvps: Dict[Any, Any]
notrace_primitives: Dict[type, Set[Any]]

# Kinds of rule entries in VJPRule / JVPRule tables.
ZERO: int
MAKER: int
DIRECT: int
SAME: int
STAND_IN_MIN_BYTES: int  # a node keeps an array at least this large that its rule reads only the shape of as a stand-in

@final
class Hooks:
    """The runtime switches the engine reads on every node (bound as ``hooks``)."""

    debug: Any  # debug-mode checks: recorded(node), before_backward(node), checked(node, argnum, g, cotangent)
    record_replay: Optional[Callable[[Any, Any, Tuple[Any, ...], Any], Any]]  # while a recompute block is open
    def __init__(self) -> None: ...

def bind(
    *,
    generic_add: Optional[Callable[[Any, bool, Any], Tuple[Any, bool]]] = ...,
    sparse_type: Optional[type] = ...,
    start_sum: Optional[Callable[[Any], Any]] = ...,
    finish_sum: Optional[Callable[[Any], Any]] = ...,
    replayed_cotangents: Optional[Callable[[Any, Any, Dict[Any, Any]], Any]] = ...,
    hooks: Hooks = ...,
    box_operators: Dict[str, Tuple[Any, Any]] = ...,
    box_fast_types: Any = ...,
    box_general_types: Any = ...,
    numpy_loops: Dict[str, Any] = ...,
    scalar_kernels: Dict[Any, Tuple[str, bool]] = ...,
    scalar_vjps: Dict[Tuple[Any, int], Tuple[str, bool]] = ...,
) -> Dict[str, Any]:
    """The one seam: hand the engine what it takes from the layers above (see
    fastgrad._core_seam); returns the previous values of the entries given."""

# The collector's pause during differentiation, and the buffer cache (_core_gc).
def pause_gc() -> None: ...
def resume_gc() -> None: ...
def gc_pause_depth() -> int: ...

@final
class GCPause:
    def __enter__(self) -> None: ...
    def __exit__(self, *exc: Any) -> bool: ...

class RecomputeBlock:
    """Base of fastgrad.recompute: entering pushes ``self._new_policy()`` for this thread and
    sets the replay hook to ``self._record``; leaving pops it."""
    def __enter__(self) -> Any: ...
    def __exit__(self, *exc_info: Any) -> bool: ...

def recompute_policies() -> Optional[List[Any]]: ...
def open_recompute_blocks() -> int: ...
def buffer_cache_begin() -> None: ...
def buffer_cache_end() -> None: ...
def buffer_cache_release() -> None: ...
def buffer_cache_state() -> Tuple[bool, int, int, int]: ...
def arena_regions_state() -> Tuple[int, int]: ...
def use_compiled_operators(cls: type) -> None:
    """Give the Python subclass ``cls`` of ArithmeticBox the C operator slots (for each
    operator it does not override)."""

def same_layout(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are ndarrays of the same shape and dtype."""

# Scalar kernels (compiled engine only; the pure engine's names are empty): C arithmetic
# for primitives and reverse rules on float64 scalars (_scalar_kernels.h), switched on
# through bind's scalar_kernels and scalar_vjps; those for sin, cos, exp, ... call NumPy's
# own loops, bound through bind's numpy_loops.
def scalar_kernel_names() -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]:
    """(unary forward, binary forward, reverse) kernel names."""

def scalar_kernel_loop(name: str) -> Optional[str]:
    """The NumPy loop the kernel ``name`` calls, or None for an IEEE kernel (compiled engine only)."""

def numpy_loop_names() -> Tuple[str, ...]:
    """The ufuncs whose float64 loops kernels call (compiled engine only)."""

def bound_numpy_loops() -> Dict[str, Any]:
    """name -> ufunc, for the loops bound now (compiled engine only)."""

def numpy_loop_status() -> Dict[str, Optional[str]]:
    """name -> None for each loop bound now, else why not (compiled engine only)."""

def eval_scalar_kernel(name: str, *xs: float) -> float:
    """The forward kernel ``name`` at ``xs`` (compiled engine only)."""

def eval_primitive_kernel(prim: Primitive, *args: Any) -> Any:
    """``prim(*args)`` by its forward kernel, or None where it does not apply (compiled
    engine only)."""

def eval_scalar_vjp(name: str, g: float, ans: float, x: float, y: float) -> float:
    """The reverse kernel ``name`` at (g, ans, x, y) (compiled engine only)."""

def eval_rule_kernel(rule: VJPRule, argnum: int, g: Any, ans: Any, args: Tuple[Any, ...]) -> Any:
    """The cotangent by the rule's reverse kernel, or None where it does not apply
    (compiled engine only)."""

@disjoint_base
class Box:
    """A value being traced."""

    type_mappings: ClassVar[Dict[type, type]]
    types: ClassVar[Set[type]]
    _value: Any
    _trace: int
    _node: Any
    def __init__(self, value: Any, trace: int, node: Any) -> None: ...
    def __bool__(self) -> bool: ...
    @classmethod
    def register(cls, value_type: type) -> None: ...

class ArithmeticBox(Box):
    """A Box whose arithmetic operators call the primitives bound as box_operators."""
    def __add__(self, other: Any) -> Any: ...
    def __radd__(self, other: Any) -> Any: ...
    def __sub__(self, other: Any) -> Any: ...
    def __rsub__(self, other: Any) -> Any: ...
    def __mul__(self, other: Any) -> Any: ...
    def __rmul__(self, other: Any) -> Any: ...
    def __truediv__(self, other: Any) -> Any: ...
    def __rtruediv__(self, other: Any) -> Any: ...
    def __pow__(self, other: Any, modulo: Any = ..., /) -> Any: ...
    def __rpow__(self, other: Any, modulo: Any = ..., /) -> Any: ...
    def __mod__(self, other: Any) -> Any: ...
    def __rmod__(self, other: Any) -> Any: ...
    def __matmul__(self, other: Any) -> Any: ...
    def __rmatmul__(self, other: Any) -> Any: ...
    def __neg__(self) -> Any: ...

def new_box(value: Any, trace: int, node: Any) -> Box: ...
def isbox(x: Any) -> bool: ...
def getval(x: Any) -> Any: ...

@disjoint_base
class Primitive:
    """A function whose calls on boxes are recorded."""

    fun: Callable[..., Any]
    _notrace_types: Optional[frozenset[Any]]
    _ufunc: Any
    __name__: str
    __qualname__: str
    __doc__: Optional[str]
    __wrapped__: Callable[..., Any]
    def __init__(self, fun: Callable[..., Any]) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, obj: Any, objtype: Any = ..., /) -> Any: ...

class NotracePrimitive(Primitive):
    """A primitive that unboxes its arguments and is never recorded."""

def call_without_ufunc_dispatch(prim: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a primitive as ArrayBox.__array_ufunc__ does (NotImplemented if unboxable)."""

def register_notrace(node_type: type, prim: Any) -> None: ...
def trace(start_node: Any, fun: Callable[[Any], Any], x: Any) -> Tuple[Any, Any]: ...
def open_trace() -> int:
    """A fresh trace id, open until close_trace(id)."""

def close_trace(t: int) -> None: ...

class Node:
    """Base of node types (subclassable from Python)."""
    def __init__(
        self,
        value: Any,
        fun: Any,
        args: Tuple[Any, ...],
        kwargs: Dict[str, Any],
        parent_argnums: Tuple[int, ...],
        parents: Tuple[Any, ...],
    ) -> None: ...
    def initialize_root(self, *args: Any, **kwargs: Any) -> None: ...
    @classmethod
    def new_root(cls, *args: Any, **kwargs: Any) -> Any: ...

@final
class VJPRule:
    """The reverse rules of one primitive: argnum -> (kind, function).  ``saves_ans`` /
    ``saves_args`` False: the rules never read ans / the arguments, so nodes do not keep them."""

    fun: Any
    entries: Dict[int, Tuple[int, Optional[Callable[..., Any]]]]
    saves_ans: bool
    saves_args: bool
    reads: Optional[Tuple[int, ...]]
    def __init__(
        self,
        fun: Any,
        entries: Dict[int, Tuple[int, Optional[Callable[..., Any]]]],
        saves_ans: bool = ...,
        saves_args: bool = ...,
        reads: Optional[Tuple[int, ...]] = ...,
    ) -> None: ...
    def one(self, argnum: int, g: Any, ans: Any, args: Tuple[Any, ...], kwargs: Optional[Dict[str, Any]]) -> Any: ...
    def __call__(
        self, argnums: Tuple[int, ...], ans: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any]
    ) -> Callable[[Any], Tuple[Any, ...]]: ...

@final
class VJPNode(Node):
    """A recorded primitive call, for the reverse mode."""

    parents: Tuple[Any, ...]
    parent_argnums: Tuple[int, ...]
    fun: Any
    rule: Any
    value: Any
    args: Tuple[Any, ...]
    _kwargs: Optional[Dict[str, Any]]
    replay: Any  # fastgrad._recompute.Replay (recorded inside fastgrad.recompute), or None
    @property
    def kwargs(self) -> Dict[str, Any]: ...
    def initialize_root(self) -> None: ...
    @staticmethod
    def new_root() -> VJPNode:  # (a root needs no arguments)
        """A node that starts a trace."""
    def vjp(self, g: Any) -> List[Any]: ...

def toposort(end_node: Any) -> List[Any]: ...
def backward_pass(g: Any, end_node: Any, consume: bool = ..., roots: list[Any] | None = ...) -> Any: ...
def backward_pass_with_dicts(g: Any, end_node: Any, consume: bool = ..., roots: list[Any] | None = ...) -> Any: ...

@final
class JVPRule:
    """The forward rules of one primitive: argnum -> (kind, function), else ``default``."""

    fun: Any
    entries: Dict[int, Tuple[int, Optional[Callable[..., Any]]]]
    default: Optional[Tuple[int, Optional[Callable[..., Any]]]]
    def __init__(
        self,
        fun: Any,
        entries: Dict[int, Tuple[int, Optional[Callable[..., Any]]]],
        default: Optional[Tuple[int, Optional[Callable[..., Any]]]] = ...,
    ) -> None: ...
    def one(self, argnum: int, g: Any, ans: Any, args: Tuple[Any, ...], kwargs: Optional[Dict[str, Any]]) -> Any: ...
    def __call__(
        self, argnums: Tuple[int, ...], gs: Tuple[Any, ...], ans: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any]
    ) -> Any: ...

@final
class JVPNode(Node):
    """A primitive call in forward mode, holding the tangent of its output (None = zero)."""

    g: Any
    def initialize_root(self, g: Any) -> None: ...
