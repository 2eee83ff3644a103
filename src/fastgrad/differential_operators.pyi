# Type stub of fastgrad.differential_operators, for editors and static type checkers.
#
# The operators written as ``@unary_to_nary def op(fun, x)`` are called as
# ``op(fun, argnum=0)``; a decorator hides that from static analysis, so the signatures are
# declared here.  (At run time unary_to_nary gives the operators the same parameters;
# `python -m mypy.stubtest fastgrad.differential_operators` checks that the two agree.)
#
# What the types say:
# - the function an operator returns takes ``fun``'s parameters (a ParamSpec), so a call
#   with a wrong argument is an error where it is written;
# - with the default ``argnum=0`` a gradient has the type of the first argument (a float in,
#   a float out; an ndarray in, an ndarray out; a dict of arrays in, the same dict type out),
#   and that argument is positional-only (only positional arguments are differentiated);
# - with another int ``argnum`` the result is ``Any``; with a tuple or list of ints, a tuple;
# - a NumPy ufunc (``grad(np.tanh)``) is matched first: its overloaded signature would
#   otherwise fix the argument to its first overload's (scalars); the gradient has the type
#   of the argument there too.
# The first overload of each operator (argnum=0) is a special case of the second
# (``argnum: int``) with a more precise result; mypy's overload-overlap check flags any such
# pair whose results differ, hence the ignore comments on the first overloads.
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, Literal, ParamSpec, Protocol, TypeVar, overload

from numpy import ufunc as _ufunc

__all__ = [
    "grad",
    "value_and_grad",
    "make_vjp",
    "elementwise_grad",
    "jacobian",
    "grad_and_aux",
    "tensor_jacobian_product",
    "vector_jacobian_product",
    "grad_named",
    "holomorphic_grad",
    "make_jvp",
    "deriv",
    "hessian",
    "make_hvp",
    "hessian_tensor_product",
    "hessian_vector_product",
    "make_ggnvp",
    "multigrad_dict",
    "checkpoint",
    "make_jvp_reversemode",
    "stop_gradient",
]

_P = ParamSpec("_P")
_X = TypeVar("_X")  # the type of the differentiated (first) argument
_R = TypeVar("_R")  # the type of fun's output
_A = TypeVar("_A")  # the type of an auxiliary output

class _GradientOfFirst(Protocol):
    """A function of a ufunc's arguments returning a gradient of the first one's type."""
    def __call__(self, x: _X, /, *args: Any, **kwargs: Any) -> _X: ...

class _ValueAndGradientOfFirst(Protocol):
    def __call__(self, x: _X, /, *args: Any, **kwargs: Any) -> tuple[Any, _X]: ...

# An argnum: one position (negative allowed), or several (the result is then a tuple).
Argnum = int | Sequence[int]

# Gradients: shaped like the argument.
@overload
def grad(fun: _ufunc, argnum: Literal[0] = 0) -> _GradientOfFirst: ...
@overload
def grad(fun: Callable[Concatenate[_X, _P], Any], argnum: Literal[0] = 0) -> Callable[Concatenate[_X, _P], _X]: ...  # type: ignore[overload-overlap]
@overload
def grad(fun: Callable[_P, Any], argnum: int) -> Callable[_P, Any]: ...
@overload
def grad(fun: Callable[_P, Any], argnum: Sequence[int]) -> Callable[_P, tuple[Any, ...]]: ...
@overload
def value_and_grad(fun: _ufunc, argnum: Literal[0] = 0) -> _ValueAndGradientOfFirst: ...  # type: ignore[overload-overlap]
@overload
def value_and_grad(  # type: ignore[overload-overlap]
    fun: Callable[Concatenate[_X, _P], _R], argnum: Literal[0] = 0
) -> Callable[Concatenate[_X, _P], tuple[_R, _X]]: ...
@overload
def value_and_grad(fun: Callable[_P, _R], argnum: int) -> Callable[_P, tuple[_R, Any]]: ...
@overload
def value_and_grad(fun: Callable[_P, _R], argnum: Sequence[int]) -> Callable[_P, tuple[_R, tuple[Any, ...]]]: ...
@overload
def grad_and_aux(  # type: ignore[overload-overlap]
    fun: Callable[Concatenate[_X, _P], tuple[Any, _A]], argnum: Literal[0] = 0
) -> Callable[Concatenate[_X, _P], tuple[_X, _A]]: ...
@overload
def grad_and_aux(fun: Callable[_P, tuple[Any, _A]], argnum: int) -> Callable[_P, tuple[Any, _A]]: ...
@overload
def grad_and_aux(
    fun: Callable[_P, tuple[Any, _A]], argnum: Sequence[int]
) -> Callable[_P, tuple[tuple[Any, ...], _A]]: ...
@overload
def elementwise_grad(fun: _ufunc, argnum: Literal[0] = 0) -> _GradientOfFirst: ...
@overload
def elementwise_grad(  # type: ignore[overload-overlap]
    fun: Callable[Concatenate[_X, _P], Any], argnum: Literal[0] = 0
) -> Callable[Concatenate[_X, _P], _X]: ...
@overload
def elementwise_grad(fun: Callable[_P, Any], argnum: int) -> Callable[_P, Any]: ...
@overload
def elementwise_grad(fun: Callable[_P, Any], argnum: Sequence[int]) -> Callable[_P, tuple[Any, ...]]: ...
@overload
def holomorphic_grad(fun: _ufunc, argnum: Literal[0] = 0) -> _GradientOfFirst: ...
@overload
def holomorphic_grad(  # type: ignore[overload-overlap]
    fun: Callable[Concatenate[_X, _P], Any], argnum: Literal[0] = 0
) -> Callable[Concatenate[_X, _P], _X]: ...
@overload
def holomorphic_grad(fun: Callable[_P, Any], argnum: int) -> Callable[_P, Any]: ...
@overload
def holomorphic_grad(fun: Callable[_P, Any], argnum: Sequence[int]) -> Callable[_P, tuple[Any, ...]]: ...
def grad_named(fun: Callable[_P, Any], argname: str) -> Callable[_P, Any]: ...
def multigrad_dict(fun: Callable[_P, Any]) -> Callable[_P, OrderedDict[str, Any]]: ...

# Vector-Jacobian products: ``(vjp, value)``; vjp takes a cotangent shaped like the output.
@overload
def make_vjp(fun: _ufunc, argnum: Argnum = 0) -> Callable[..., tuple[Callable[[Any], Any], Any]]: ...
@overload
def make_vjp(  # type: ignore[overload-overlap]
    fun: Callable[Concatenate[_X, _P], _R], argnum: Literal[0] = 0
) -> Callable[Concatenate[_X, _P], tuple[Callable[[Any], _X], _R]]: ...
@overload
def make_vjp(fun: Callable[_P, _R], argnum: int | Sequence[int]) -> Callable[_P, tuple[Callable[[Any], Any], _R]]: ...

# Jacobians and Hessians: arrays of shape out.shape + in.shape (nested blocks for
# containers and argnum tuples), hence Any.
@overload
def jacobian(fun: _ufunc, argnum: Argnum = 0) -> Callable[..., Any]: ...
@overload
def jacobian(fun: Callable[_P, Any], argnum: Argnum = 0) -> Callable[_P, Any]: ...
@overload
def hessian(fun: _ufunc, argnum: Argnum = 0) -> Callable[..., Any]: ...
@overload
def hessian(fun: Callable[_P, Any], argnum: Argnum = 0) -> Callable[_P, Any]: ...

# Products with a tensor: the returned function takes fun's arguments and then the tensor,
# which a ParamSpec cannot express.
def tensor_jacobian_product(fun: Callable[..., Any], argnum: Argnum = 0) -> Callable[..., Any]: ...
def vector_jacobian_product(fun: Callable[..., Any], argnum: Argnum = 0) -> Callable[..., Any]: ...
def hessian_tensor_product(fun: Callable[..., Any], argnum: Argnum = 0) -> Callable[..., Any]: ...
def hessian_vector_product(fun: Callable[..., Any], argnum: Argnum = 0) -> Callable[..., Any]: ...

# Forward mode.
@overload
def make_jvp(fun: _ufunc, argnum: Argnum = 0) -> Callable[..., Callable[[Any], tuple[Any, Any]]]: ...
@overload
def make_jvp(  # type: ignore[overload-overlap]
    fun: Callable[Concatenate[_X, _P], _R], argnum: Literal[0] = 0
) -> Callable[Concatenate[_X, _P], Callable[[_X], tuple[_R, Any]]]: ...
@overload
def make_jvp(fun: Callable[_P, _R], argnum: int | Sequence[int]) -> Callable[_P, Callable[[Any], tuple[_R, Any]]]: ...
@overload
def deriv(fun: _ufunc, argnum: Argnum = 0) -> Callable[..., Any]: ...
@overload
def deriv(fun: Callable[_P, Any], argnum: Argnum = 0) -> Callable[_P, Any]: ...
@overload
def make_jvp_reversemode(fun: _ufunc, argnum: Argnum = 0) -> Callable[..., Callable[[Any], Any]]: ...
@overload
def make_jvp_reversemode(  # type: ignore[overload-overlap]
    fun: Callable[Concatenate[_X, _P], Any], argnum: Literal[0] = 0
) -> Callable[Concatenate[_X, _P], Callable[[_X], Any]]: ...
@overload
def make_jvp_reversemode(fun: Callable[_P, Any], argnum: int | Sequence[int]) -> Callable[_P, Callable[[Any], Any]]: ...

# Second order: ``(hvp, gradient)`` at a point; hvp maps a vector shaped like the argument
# to one of the same shape.
@overload
def make_hvp(fun: _ufunc, argnum: Argnum = 0) -> Callable[..., tuple[Callable[[Any], Any], Any]]: ...
@overload
def make_hvp(  # type: ignore[overload-overlap]
    fun: Callable[Concatenate[_X, _P], Any], argnum: Literal[0] = 0
) -> Callable[Concatenate[_X, _P], tuple[Callable[[_X], _X], _X]]: ...
@overload
def make_hvp(fun: Callable[_P, Any], argnum: int | Sequence[int]) -> Callable[_P, tuple[Callable[[Any], Any], Any]]: ...
def make_ggnvp(
    f: Callable[_P, Any], g: Callable[[Any], Any] = ..., f_argnum: Argnum = 0
) -> Callable[_P, Callable[[Any], Any]]: ...

# Wrappers that keep the function's type.
def checkpoint(fun: Callable[_P, _R]) -> Callable[_P, _R]: ...
def stop_gradient(x: _X) -> _X: ...
