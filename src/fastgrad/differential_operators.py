"""The differential operators: functions that take a function and return its derivative.

Each ``@unary_to_nary`` operator is written for one argument ``x`` and becomes
``op(fun, argnum=0)``; see ``wrap_util``.  ``argnum`` may be a tuple of ints, and
arguments and outputs may be lists, tuples, dicts (and named tuples, OrderedDicts)
nested to any depth, holding arrays and floats.

Operators that accept non-scalar outputs (``make_vjp``, ``jacobian``, ``make_jvp``, ...)
also accept a ``fun`` that returns a plain container holding traced values: the
container is recorded as one traced value (autograd treats such an output as constant).

The operators are annotated for editors: ``unary_to_nary`` gives each n-ary operator the
signature it is called with (``grad(fun, argnum=0) -> Callable[..., Any]``).  Static type
checkers read ``differential_operators.pyi``, which says more than run-time annotations
can: the returned function takes ``fun``'s parameters, and with ``argnum=0`` a gradient has
the type of the first argument.

>>> import fastgrad.numpy as np
>>> from fastgrad import grad
>>> grad(lambda x, y: np.sum(x * y), argnum=1)(np.ones(2), np.arange(2.0))
array([1., 1.])
"""

import functools
import inspect
import warnings
from collections import OrderedDict
from operator import index as _index
from typing import Any, Callable, ParamSpec, Sequence, TypeVar, Union

import numpy as _onp

from . import _backends
from . import numpy as np
from ._gc import gc_paused
from .builtins import _container_space_types, register_container_type, traced_container
from .builtins import tuple as atuple  # noqa: F401  (autograd.differential_operators has it)
from .core import (
    _trace_vjp,
    check_output_space,
    defjvp_argnums,
    defvjp_argnum,  # noqa: F401  (autograd.differential_operators has it)
    defvjp_argnums,
    make_jvp as _make_jvp,
    make_vjp as _make_vjp,  # noqa: F401  (as autograd's: libraries call it, geomstats among them)
    vspace,
)
from .tracer import getval, isbox, primitive
from .wrap_util import get_name, unary_to_nary

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

Argnum = Union[int, Sequence[int]]  # an argnum: one position, or several
_P = ParamSpec("_P")  # the parameters of a function
_R = TypeVar("_R")  # the type of its output
_X = TypeVar("_X")  # the type of a value

_SCALAR_ONLY = "{} only applies to real scalar-output functions. Try jacobian, elementwise_grad or holomorphic_grad."


_output_space = check_output_space  # vspace(ans), or a TypeError naming the returned type


def _scalar_output_space(op, ans, title=None):
    if isinstance(ans, (list, tuple, dict)):
        # (autograd differentiates a one-element container as if it were independent of the
        # input, giving zeros, and value_and_grad returned it with its boxes inside)
        raise TypeError(_SCALAR_ONLY.format(title or op))
    vs = _output_space(op, ans)
    if vs.size != 1 or vs.iscomplex:
        raise TypeError(_SCALAR_ONLY.format(title or op))
    return vs


# The seed of a float64 scalar output: vspace(ans).ones() is a fresh 0-d array; a shared
# read-only one is equivalent (the engine never writes into a cotangent it did not make, and
# a read-only result is copied before it is returned) and saves making a space per call.
_ONE = _onp.ones(())
_ONE.setflags(write=False)
_FLOAT64 = _onp.float64
_F64 = _ONE.dtype
_NDARRAY = _onp.ndarray


def _scalar_seed(op, ans, title=None):
    """The all-ones cotangent of a real scalar output (TypeError for any other output)."""
    t = type(ans)
    if t is float or t is _FLOAT64 or (t is _NDARRAY and ans.dtype is _F64 and not ans.shape):
        return _ONE  # (and of a 0-d float64 array, whose ones() is the same value)
    return _scalar_output_space(op, ans, title).ones()


def _register_container_types(value):
    """Register the list/tuple/dict subclasses (named tuples, ...) found in ``value`` as
    containers, so that ``traced_container`` records them."""
    t = type(value)
    if t not in _container_space_types:
        register_container_type(t)
    for element in value.values() if isinstance(value, dict) else value:
        if isinstance(element, (list, tuple, dict)):
            _register_container_types(element)


def _traced(out):
    """``out``, or if it is a plain container holding traced values, one traced value."""
    if isinstance(out, (list, tuple, dict)):
        _register_container_types(out)
        return traced_container(out)
    return out


def _traced_output(fun):
    """``fun`` with a plain container output holding traced values made one traced value."""

    def fun_traced_output(x):
        return _traced(fun(x))

    fun_traced_output.__name__ = get_name(fun)
    return fun_traced_output


# ---- reverse mode ------------------------------------------------------------------------


@unary_to_nary
def grad(fun: Callable[..., Any], x: Any) -> Any:
    """
    Returns a function which computes the gradient of ``fun`` with respect to positional
    argument number ``argnum`` (an int, or a tuple/list of ints for a tuple of gradients).

    The returned function takes the same arguments as ``fun`` and returns the gradient
    instead of the value.  ``fun`` must return a real scalar (a float, or a float array of
    size 1).  The gradient has the structure, shape and dtype of the argument: a list in
    gives a list out, a dict a dict, and so on.  Keyword arguments are passed to ``fun``
    untouched and are not differentiated.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import grad
    >>> grad(np.sin)(0.0)
    1.0
    >>> grad(lambda w, b: np.sum(w ** 2) + b, argnum=(0, 1))(np.array([1.0, 2.0]), 3.0)
    (array([2., 4.]), array(1.))
    >>> grad(lambda p: p["w"] * p["b"])({"w": 2.0, "b": 5.0})
    {'w': array(5.), 'b': array(2.)}
    """
    with gc_paused():
        vjp, ans = _trace_vjp(fun, x, consume=True)
        return vjp(_scalar_seed("grad", ans, "Grad"))  # autograd's capital


@unary_to_nary
def value_and_grad(fun: Callable[..., Any], x: Any) -> tuple[Any, Any]:
    """Returns a function giving ``(fun(*args), gradient)`` from a single forward pass.

    Same rules as ``grad``: ``fun`` must return a real scalar.

    >>> from fastgrad import value_and_grad
    >>> value_and_grad(lambda x: x ** 2)(3.0)
    (9.0, 6.0)
    """
    with gc_paused():
        vjp, ans = _trace_vjp(fun, x, consume=True)
        return ans, vjp(_scalar_seed("value_and_grad", ans))


@unary_to_nary
def make_vjp(fun: Callable[..., Any], x: Any) -> tuple[Callable[[Any], Any], Any]:
    """Returns a function giving ``(vjp, value)``, where ``vjp(g)`` is the vector-Jacobian
    product ``g^T J`` of ``fun`` at the given arguments and ``value`` is ``fun``'s output.

    ``vjp`` may be called many times (the recorded computation is kept while it lives).
    ``g`` has the structure of the output, the result that of the argument.  If the
    output does not depend on the argument, ``vjp`` returns zeros (with a warning).

    >>> import fastgrad.numpy as np
    >>> from fastgrad import make_vjp
    >>> vjp, value = make_vjp(np.sin)(0.0)
    >>> value, vjp(2.0)
    (0.0, 2.0)
    """
    return _trace_vjp(_traced_output(fun), x, consume=False)


@unary_to_nary
def elementwise_grad(fun: Callable[..., Any], x: Any) -> Any:
    """Returns a function computing the sum over outputs of the Jacobian of ``fun``: one
    vector-Jacobian product with an all-ones cotangent, shaped like the argument.

    For a function that acts elementwise this is the derivative of each element.  The
    output must be real.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import elementwise_grad
    >>> elementwise_grad(np.sin)(np.zeros(3))
    array([1., 1., 1.])
    """
    with gc_paused():
        vjp, ans = _trace_vjp(_traced_output(fun), x, consume=True)
        vs = _output_space("elementwise_grad", ans, integer_arrays=True)
        if vs.iscomplex:
            raise TypeError("Elementwise_grad only applies to real-output functions.")
        return vjp(vs.ones())


@unary_to_nary
def grad_and_aux(fun: Callable[..., Any], x: Any) -> tuple[Any, Any]:
    """Returns a function giving ``(gradient, aux)`` for a ``fun`` that returns
    ``(value, aux)``: the gradient of ``value``, and ``aux`` from the same forward pass.
    (As in autograd, a non-scalar ``value`` gives the sum over its elements' gradients.)

    ``aux`` may be anything (autograd requires differentiable data there); traced values
    in it are returned as plain values.

    >>> from fastgrad import grad_and_aux
    >>> grad_and_aux(lambda x: (x ** 2, "note"))(3.0)
    (6.0, 'note')
    """
    aux = []

    def value_only(x):
        value, extra = fun(x)
        aux.append(_unbox_level(extra, x))
        return value

    value_only.__name__ = get_name(fun)

    with gc_paused():
        vjp, ans = _trace_vjp(value_only, x, consume=True)
        return vjp(_output_space("grad_and_aux", ans).ones()), aux[0]


def _unbox_level(value, start_box):
    """Strip the boxes of ``start_box``'s trace (and inner ones) from ``value``, inside
    containers too, keeping the boxes of outer traces (higher-order differentiation)."""
    if not isbox(start_box):
        return value
    while isbox(value) and value._trace >= start_box._trace:
        value = value._value
    if type(value) is list or type(value) is tuple:
        elements = [_unbox_level(e, start_box) for e in value]
        if any([a is not b for a, b in zip(elements, value)]):
            return type(value)(elements)
    elif type(value) is dict:
        items = {k: _unbox_level(v, start_box) for k, v in value.items()}
        if any([items[k] is not v for k, v in value.items()]):
            return items
    return value


# ---- Jacobians ----------------------------------------------------------------------------


def _is_container(value):
    return isinstance(getval(value), (list, tuple, dict))


def _leaf_paths(value, prefix=()):
    """The paths (tuples of indices/keys) to the leaves of a nested container value, in the
    order of its vector space (dicts in their own order)."""
    value = getval(value)
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return [prefix]
    paths = []
    for key, element in items:
        paths.extend(_leaf_paths(element, prefix + (key,)))
    return paths


def _at(value, path):
    """``value[path[0]][path[1]]...`` (recorded when ``value`` is traced)."""
    for key in path:
        value = value[key]
    return value


def _peek(value, path):
    """The plain value at ``path`` (nothing recorded)."""
    value = getval(value)
    for key in path:
        value = getval(value[key])
    return value


def _rebuild(like, leaves):
    """A container of ``like``'s structure and types whose leaves are taken from the
    iterator ``leaves``."""
    like = getval(like)
    if isinstance(like, dict):
        return type(like)([(k, _rebuild(v, leaves)) for k, v in like.items()])
    if isinstance(like, (list, tuple)):
        elements = [_rebuild(e, leaves) for e in like]
        if type(like) is list or type(like) is tuple:
            return type(like)(elements)
        if hasattr(type(like), "_make"):
            return type(like)._make(elements)
        return type(like)(elements)
    return next(leaves)


def _zeros(shape, like):
    """float64 zeros of ``shape`` on the backend of ``like`` (a Dask or CuPy value: theirs)."""
    like = getval(like)
    backend = _backends.backend_of(like)
    return _onp.zeros(shape) if backend is _backends.NUMPY else backend.zeros(shape, _onp.float64)


def _jacobian_blocks(vjp, ans, ans_vs, x):
    """The Jacobian of a function with container output and/or input, as nested blocks:
    the output's structure whose leaves are the input's structure whose leaves are arrays
    of shape ``out_leaf.shape + in_leaf.shape`` (JAX's layout)."""
    rows = [vjp(basis) for basis in ans_vs.standard_basis()]
    in_paths = _leaf_paths(x)
    in_shapes = [_onp.shape(_peek(x, p)) for p in in_paths]
    blocks, start = [], 0
    for out_path in _leaf_paths(ans):
        out_leaf = _peek(ans, out_path)
        out_shape, size = _onp.shape(out_leaf), vspace(out_leaf).size
        row_block = rows[start : start + size]
        start += size
        per_input = []
        for in_path, in_shape in zip(in_paths, in_shapes):
            if size == 0:
                per_input.append(_zeros(out_shape + in_shape, out_leaf))
            else:
                column = [_at(row, in_path) for row in row_block]
                per_input.append(np.reshape(np.stack(column), out_shape + in_shape))
        blocks.append(_rebuild(x, iter(per_input)))
    return _traced(_rebuild(ans, iter(blocks)))


@unary_to_nary
def jacobian(fun: Callable[..., Any], x: Any) -> Any:
    """
    Returns a function which computes the Jacobian of ``fun`` with respect to positional
    argument number ``argnum``: one forward pass, then one vector-Jacobian product per
    output element.

    For an array (or scalar) input of shape ``(in1, in2, ...)`` and output of shape
    ``(out1, out2, ...)`` the Jacobian has shape ``(out1, out2, ..., in1, in2, ...)``.
    Beyond autograd, inputs and outputs may be containers (and ``argnum`` a tuple): the
    result is then nested blocks, the output's structure holding, for each output leaf,
    the input's structure of arrays of shape ``out_leaf.shape + in_leaf.shape`` (the
    layout of JAX), e.g. ``(dy/da, dy/db)`` for ``argnum=(0, 1)``.  The output must be real.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import jacobian
    >>> jacobian(lambda x: x * 2.0)(np.ones(2))
    array([[2., 0.],
           [0., 2.]])
    >>> jacobian(lambda a, b: a * b, argnum=(0, 1))(np.ones(2), np.full(2, 3.0))
    (array([[3., 0.],
           [0., 3.]]), array([[1., 0.],
           [0., 1.]]))
    """
    with gc_paused():
        vjp, ans = _trace_vjp(_traced_output(fun), x, consume=False)
        ans_vs = _output_space("jacobian", ans, integer_arrays=True)
        if ans_vs.iscomplex:
            if ans_vs.size:  # (one backward pass first: an error of a rule in it comes first, as in autograd)
                vjp(next(iter(ans_vs.standard_basis())))
            raise TypeError(
                "jacobian only applies to real-output functions; for a holomorphic function use holomorphic_grad."
            )
        if _is_container(ans) or _is_container(x):
            return _jacobian_blocks(vjp, ans, ans_vs, x)
        x_shape = vspace(x).shape
        if ans_vs.size == 0:
            return _zeros(ans_vs.shape + x_shape, ans)
        rows = [vjp(basis) for basis in ans_vs.standard_basis()]
        return np.reshape(np.stack(rows), ans_vs.shape + x_shape)


@unary_to_nary
def hessian(fun: Callable[..., Any], x: Any) -> Any:
    """Returns a function computing the Hessian of scalar-output ``fun``: the Jacobian of
    its Jacobian, of shape ``in.shape + in.shape``.

    With a tuple ``argnum`` the result is nested blocks: for ``argnum=(0, 1)``,
    ``((d2f/da da, d2f/da db), (d2f/db da, d2f/db db))``.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import hessian
    >>> hessian(lambda x: np.sum(x ** 3))(np.ones(2))
    array([[6., 0.],
           [0., 6.]])
    """
    return jacobian(jacobian(fun))(x)


def _contract(a, b):
    """``tensordot(b, a, ndim(b))``: ``b`` contracted with the leading axes of ``a`` (all of
    them when the shapes agree), summed over the leaves of matching containers."""
    if _is_container(b):
        total = 0.0
        for path in _leaf_paths(b):
            total = total + _contract(_at(a, path), _at(b, path))
        return total
    return np.tensordot(b, a, _onp.ndim(getval(b)))


def _before_appended(argnum):
    """``argnum`` (of a function of ``*args``) for the same function called with one more
    positional argument appended: negative positions move down by one."""
    if isinstance(argnum, (tuple, list)):
        return type(argnum)([_before_appended(i) for i in argnum])
    try:
        i = _index(argnum)
    except TypeError:
        return argnum  # not an int: the operator reports it
    return i - 1 if i < 0 and not isinstance(argnum, bool) else argnum


def tensor_jacobian_product(fun: Callable[..., Any], argnum: Argnum = 0) -> Callable[..., Any]:
    """Builds a function that returns the tensor-Jacobian product: the Jacobian of ``fun``
    with respect to argument ``argnum`` left-multiplied by ``tensor``.

    The returned function has arguments ``(*args, tensor, **kwargs)``.  ``tensor`` is
    contracted with the leading axes of ``fun``'s output (with all of them when it has
    the output's shape, giving one vector-Jacobian product ``v^T J``); the result has the
    remaining output axes followed by the argument's axes.

    ``vector_jacobian_product`` is the same function.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import tensor_jacobian_product
    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> tensor_jacobian_product(lambda x: np.dot(A, x))(np.ones(2), np.array([1.0, -1.0]))
    array([-2., -2.])
    """

    def vector_dot_fun(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return _contract(fun(*args, **kwargs), vector)

    return jacobian(vector_dot_fun, _before_appended(argnum))


vector_jacobian_product = tensor_jacobian_product


def grad_named(fun: Callable[_P, Any], argname: str) -> Callable[_P, Any]:
    """Takes gradients with respect to the parameter of ``fun`` named ``argname``.

    The argument must be passed positionally; ``*args`` and ``**kwargs`` parameters
    cannot be named.

    >>> from fastgrad import grad_named
    >>> grad_named(lambda x, y: x * y, "y")(2.0, 3.0)
    2.0
    """
    names = list(inspect.signature(fun).parameters)
    if argname not in names:
        raise ValueError("{} has no parameter named {!r}".format(get_name(fun), argname))
    return grad(fun, names.index(argname))


@unary_to_nary
def holomorphic_grad(fun: Callable[..., Any], x: Any) -> Any:
    """Returns a function computing the complex derivative ``f'(z)`` of a holomorphic ``fun``
    (complex in, complex out), as the gradient of its real part.

    Warns if the argument is not complex.

    >>> from fastgrad import holomorphic_grad
    >>> holomorphic_grad(lambda z: z ** 2)(1.0 + 1.0j)
    (2+2j)
    """
    if not vspace(x).iscomplex:
        warnings.warn("Input to holomorphic_grad is not complex", stacklevel=2)
    return grad(lambda x: np.real(fun(x)))(x)


# ---- forward mode -------------------------------------------------------------------------


@unary_to_nary
def make_jvp(fun: Callable[..., Any], x: Any) -> Callable[[Any], tuple[Any, Any]]:
    """Returns a function ``jvp(v) -> (value, tangent)``: forward mode, pushing the tangent
    ``v`` (shaped like the argument) through ``fun``; each call re-runs ``fun``.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import make_jvp
    >>> make_jvp(np.sin)(0.0)(2.0)
    (0.0, 2.0)
    """
    return _make_jvp(_traced_output(fun), x)


@unary_to_nary
def deriv(fun: Callable[..., Any], x: Any) -> Any:
    """Returns a function computing the forward-mode derivative of ``fun``: its
    Jacobian-vector product with an all-ones tangent (the derivative, for a scalar input).

    >>> import fastgrad.numpy as np
    >>> from fastgrad import deriv
    >>> deriv(np.sin)(0.0)
    1.0
    """
    return _make_jvp(_traced_output(fun), x)(vspace(x).ones())[1]


@unary_to_nary
def make_jvp_reversemode(fun: Callable[..., Any], x: Any) -> Callable[[Any], Any]:
    """Builds a function ``jvp(v) -> J v`` using reverse mode only: the vector-Jacobian
    product is linear in its cotangent, so differentiating it once more (the transpose
    trick) gives Jacobian-vector products without forward rules.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.differential_operators import make_jvp_reversemode
    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> make_jvp_reversemode(lambda x: np.dot(A, x))(np.zeros(2))(np.array([1.0, 0.0]))
    array([1., 3.])
    """
    vjp, y = _trace_vjp(_traced_output(fun), x, consume=False)
    vjp_of_vjp, _ = _trace_vjp(vjp, vspace(y).zeros(), consume=False)
    return vjp_of_vjp


# ---- second order -------------------------------------------------------------------------


@unary_to_nary
def make_hvp(fun: Callable[..., Any], x: Any) -> tuple[Callable[[Any], Any], Any]:
    """Builds a function for evaluating Hessian-vector products at a fixed point: returns
    ``(hvp, gradient)``, where ``hvp(v)`` is ``H v`` and ``gradient`` is ``fun``'s gradient
    there.  The forward pass and gradient are computed once and reused by every ``hvp``.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import make_hvp
    >>> hvp, gradient = make_hvp(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    >>> gradient
    array([ 3., 12.])
    >>> hvp(np.array([1.0, 0.0])), hvp(np.array([0.0, 1.0]))
    (array([6., 0.]), array([ 0., 12.]))
    """
    return _trace_vjp(_traced_output(grad(fun)), x, consume=False)


def hessian_tensor_product(fun: Callable[..., Any], argnum: Argnum = 0) -> Callable[..., Any]:
    """Builds a function that returns the exact Hessian-tensor product ``H v`` of
    scalar-output ``fun`` with respect to argument ``argnum``, without forming ``H``
    (reverse over reverse).

    The returned function has arguments ``(*args, tensor, **kwargs)``.
    ``hessian_vector_product`` is the same function.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import hessian_vector_product
    >>> hessian_vector_product(lambda x: np.sum(x ** 3))(np.ones(2), np.ones(2))
    array([6., 6.])
    """
    fun_grad = grad(fun, argnum)

    def vector_dot_grad(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return _contract(fun_grad(*args, **kwargs), vector)

    return grad(vector_dot_grad, _before_appended(argnum))


hessian_vector_product = hessian_tensor_product


def _half_sum_of_squares(x):
    return 0.5 * np.sum(x**2, axis=-1)


def make_ggnvp(
    f: Callable[..., Any], g: Callable[[Any], Any] = _half_sum_of_squares, f_argnum: Argnum = 0
) -> Callable[..., Callable[[Any], Any]]:
    """Builds a function for evaluating generalized Gauss-Newton-vector products at a point.

    For ``h(x) = g(f(x))`` the GGN matrix is ``J_f^T H_g J_f``; ``make_ggnvp(f, g)(*args)``
    returns ``ggnvp(v)`` computing it times ``v`` (reverse mode only: ``J_f v`` is obtained
    by differentiating the VJP of ``f``).  ``g`` defaults to half the sum of squares over
    the last axis.

    With a linear ``f(x) = A x`` and the default ``g`` the GGN matrix is ``A^T A``:

    >>> import fastgrad.numpy as np
    >>> from fastgrad import make_ggnvp
    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> ggnvp = make_ggnvp(lambda x: np.dot(A, x))(np.ones(2))
    >>> ggnvp(np.array([1.0, 0.0]))
    array([10., 14.])
    """

    @unary_to_nary
    def _make_ggnvp(f, x):
        f_vjp, f_x = _trace_vjp(_traced_output(f), x, consume=False)
        g_hvp, grad_g_x = _trace_vjp(_traced_output(grad(g)), f_x, consume=False)
        f_jvp, _ = _trace_vjp(f_vjp, vspace(grad_g_x).zeros(), consume=False)

        def ggnvp(v):
            return f_vjp(g_hvp(f_jvp(v)))

        return ggnvp

    return _make_ggnvp(f, f_argnum)


# ---- gradients of every argument ----------------------------------------------------------


def multigrad_dict(fun: Callable[_P, Any]) -> Callable[_P, OrderedDict[str, Any]]:
    """Takes gradients with respect to all arguments simultaneously.

    ``multigrad_dict(fun)(*args, **kwargs)`` returns an OrderedDict mapping each parameter
    name of ``fun`` (in signature order, defaults included) to the gradient with respect
    to that argument; a ``*args`` parameter maps to a tuple of gradients and a ``**kwargs``
    one to a dict.  ``fun`` must return a real scalar.  (autograd 1.9.1's version fails.)

    >>> from fastgrad import multigrad_dict
    >>> multigrad_dict(lambda x, y=2.0: x * y)(3.0)
    OrderedDict([('x', array(2.)), ('y', array(3.))])
    """
    signature = inspect.signature(fun)

    def gradient_dict(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        names = list(bound.arguments)
        kinds = [signature.parameters[n].kind for n in names]
        values = tuple([bound.arguments[n] for n in names])

        def fun_of_all(*values):
            call_args, call_kwargs = [], {}
            for name, kind, value in zip(names, kinds, values):
                if kind is inspect.Parameter.VAR_POSITIONAL:
                    call_args.extend(value)
                elif kind is inspect.Parameter.VAR_KEYWORD:
                    call_kwargs.update({k: value[k] for k in getval(value)})
                elif kind is inspect.Parameter.KEYWORD_ONLY:
                    call_kwargs[name] = value
                else:
                    call_args.append(value)
            return fun(*call_args, **call_kwargs)

        fun_of_all.__name__ = get_name(fun)
        gradients = grad(fun_of_all, tuple(range(len(names))))(*values)
        return OrderedDict(zip(names, gradients))

    gradient_dict.__name__ = "multigrad_dict_of_{}".format(get_name(fun))
    gradient_dict.__doc__ = (
        "    multigrad_dict of function {} with respect to all of its arguments: "
        "an OrderedDict\n    of gradients keyed by parameter name.\n    "
    ).format(get_name(fun))
    return gradient_dict


# ---- checkpointing ------------------------------------------------------------------------


def checkpoint(fun: Callable[_P, _R]) -> Callable[_P, _R]:
    """Returns a checkpointed version of ``fun``: its intermediate values are not stored
    during the forward pass but recomputed, one call of ``fun`` at a time, during the
    backward pass.  Trades time (one more evaluation of ``fun``) for memory: only the
    inputs and the output of each call are kept (see arxiv.org/abs/1604.06174).

    Positional and keyword arguments are both differentiable, and may be containers; the
    output may be a container.  Forward mode works too (it simply re-runs ``fun``).
    (autograd 1.9.1's checkpoint keeps every intermediate value.)

    >>> import fastgrad.numpy as np
    >>> from fastgrad import checkpoint, grad
    >>> layer = checkpoint(lambda w, x: np.tanh(w * x))
    >>> loss = lambda w: np.sum(layer(w, layer(w, np.array([0.5, 1.0]))))
    >>> plain = lambda w: np.sum(np.tanh(w * np.tanh(w * np.array([0.5, 1.0]))))
    >>> bool(np.allclose(grad(loss)(0.7), grad(plain)(0.7)))
    True
    """

    def run(layout, *values):
        npos, names = layout
        return fun(*values[:npos], **dict(zip(names, values[npos:])))

    def recompute(argnums, args):
        """``xs -> run(*args with xs at argnums)``, for re-tracing one call."""

        def run_at(xs):
            values = list(args)
            for i, x in zip(argnums, xs):
                values[i] = x
            return _traced(run(*values))

        run_at.__name__ = get_name(fun)
        return run_at

    def checkpoint_vjp(argnums, ans, args, kwargs):
        def vjp(g):
            xs = tuple([args[i] for i in argnums])
            vjp_at, _ = _trace_vjp(recompute(argnums, args), xs, consume=True)
            return vjp_at(g)

        return vjp

    def checkpoint_jvp(argnums, gs, ans, args, kwargs):
        xs = tuple([args[i] for i in argnums])
        return _make_jvp(recompute(argnums, args), xs)(tuple(gs))[1]

    run.__name__ = get_name(fun)
    recorded = primitive(run)
    defvjp_argnums(recorded, checkpoint_vjp)
    defjvp_argnums(recorded, checkpoint_jvp)

    @functools.wraps(fun)
    def checkpointed(*args, **kwargs):
        values = [_traced(a) for a in args]
        if kwargs:
            values.extend([_traced(v) for v in kwargs.values()])
        return recorded((len(args), tuple(kwargs)), *values)

    return checkpointed


# ---- constants ----------------------------------------------------------------------------


def stop_gradient(x: _X) -> _X:
    """``x`` as a constant: its value with every trace removed (inside containers too), so
    that no derivative flows through it, at any order.

    >>> from fastgrad import grad, stop_gradient
    >>> grad(lambda x: x * stop_gradient(x))(3.0)    # d/dx of x * c, with c = x held fixed
    3.0
    """
    x = getval(x)
    if isinstance(x, (list, tuple, dict)):
        if isinstance(x, dict):
            return type(x)([(k, stop_gradient(v)) for k, v in x.items()])
        elements = [stop_gradient(e) for e in x]
        if type(x) is list or type(x) is tuple:
            return type(x)(elements)
        if hasattr(type(x), "_make"):
            return type(x)._make(elements)
        return type(x)(elements)
    return x
