"""Turning unary differential operators into n-ary ones, with generated names and docstrings.

A differential operator is written for a function of one argument, ``op(fun, x)``;
``unary_to_nary`` turns it into ``op(fun, argnum=0)``, which returns a function with
``fun``'s signature that differentiates with respect to positional argument ``argnum``
(an int, negative allowed, or a tuple/list of ints, in which case the operator sees the
tuple of those arguments).

>>> from fastgrad.wrap_util import unary_to_nary
>>> @unary_to_nary
... def twice(fun, x):
...     return 2 * fun(x)
>>> twice(lambda a, b: a - b, argnum=1)(5.0, 3.0)   # 2 * (5 - 3), as a function of b
4.0
"""

import inspect as _inspect
from operator import index as _index
from typing import Any as _Any, Callable as _Callable, Sequence as _Sequence, Union as _Union

from ._helpers import subval, subvals  # noqa: F401  (subval: autograd's wrap_util exports it)


def get_name(f):
    """``f.__name__``, or ``"[unknown name]"``.

    >>> from fastgrad.wrap_util import get_name
    >>> get_name(len), get_name(3)
    ('len', '[unknown name]')
    """
    return getattr(f, "__name__", "[unknown name]")


def get_doc(f):
    """``f.__doc__`` (``""`` if ``f`` has no such attribute).

    >>> from fastgrad.wrap_util import get_doc
    >>> def documented():
    ...     "Some words."
    >>> get_doc(documented)
    'Some words.'
    """
    return getattr(f, "__doc__", "")


def wraps(fun, namestr="{fun}", docstr="{doc}", **kwargs):
    """Decorator setting the wrapper's ``__name__`` and ``__doc__`` from templates.

    ``{fun}`` is ``fun``'s name, ``{doc}`` its docstring, other fields come from ``kwargs``.
    A wrapper whose attributes cannot be set is returned unchanged.

    >>> from fastgrad.wrap_util import wraps
    >>> def area(r):
    ...     "Area of a disc."
    ...     return 3.14159 * r ** 2
    >>> @wraps(area, "logged_{fun}", "{doc} (logged by {who})", who="me")
    ... def wrapper(r):
    ...     return area(r)
    >>> wrapper.__name__, wrapper.__doc__
    ('logged_area', 'Area of a disc. (logged by me)')
    """

    def _wraps(f):
        try:
            f.__name__ = namestr.format(fun=get_name(fun), **kwargs)
            f.__doc__ = docstr.format(fun=get_name(fun), doc=get_doc(fun), **kwargs)
        except (AttributeError, TypeError):
            pass
        return f

    return _wraps


_NARY_NAME = "{op}_of_{fun}_wrt_argnum_{argnum}"
_NARY_DOC = (
    "    {op} of function {fun} with respect to argument number {argnum}. Takes the\n"
    "    same arguments as {fun} but returns the {op}.\n    "
)


def wrap_nary_f(fun, op, argnum):
    """``wraps`` with the generated name ``<op>_of_<fun>_wrt_argnum_<argnum>`` and docstring.

    >>> from fastgrad.wrap_util import wrap_nary_f
    >>> def loss(w):
    ...     return w ** 2
    >>> def grad(fun, x):
    ...     pass
    >>> @wrap_nary_f(loss, grad, 0)
    ... def grad_of_loss(w):
    ...     return 2 * w
    >>> grad_of_loss.__name__
    'grad_of_loss_wrt_argnum_0'
    >>> print(grad_of_loss.__doc__)
        grad of function loss with respect to argument number 0. Takes the
        same arguments as loss but returns the grad.
    <BLANKLINE>
    """
    return wraps(fun, _NARY_NAME, _NARY_DOC, op=get_name(op), argnum=argnum)


def _bad_argnum(argnum):
    return TypeError("argnum must be an int or a tuple/list of ints, got {!r}".format(argnum))


def _as_argnum(i, argnum):
    """``i`` as an int (numpy integers accepted, bools not)."""
    if isinstance(i, bool):
        raise _bad_argnum(argnum)
    try:
        return _index(i)
    except TypeError:
        raise _bad_argnum(argnum) from None


def _out_of_range(argnum, nargs):
    return IndexError(
        "argnum {} is out of range: the function was called with {} positional argument{}".format(
            argnum, nargs, "" if nargs == 1 else "s"
        )
    )


def _resolve(argnum, nargs):
    if not -nargs <= argnum < nargs:
        raise _out_of_range(argnum, nargs)
    return argnum % nargs


_ARGNUM = _Union[int, _Sequence[int]]


def _nary_signature(unary_operator):
    """The signature of the n-ary operator made from an annotated ``unary_operator``.

    ``op(fun, x, *rest) -> R`` gives ``op(fun, argnum: int | Sequence[int] = 0, *rest) ->
    Callable[..., R]``: the n-ary operator returns a function of ``fun``'s arguments.  None
    for an operator without annotations, which keeps the generic signature
    ``(fun, argnum=0, *nary_op_args, **nary_op_kwargs)`` (autograd's)."""
    if not getattr(unary_operator, "__annotations__", None):
        return None
    try:
        signature = _inspect.signature(unary_operator)
        fun, _x, *rest = signature.parameters.values()
        argnum = _inspect.Parameter("argnum", _inspect.Parameter.POSITIONAL_OR_KEYWORD, default=0, annotation=_ARGNUM)
        returns = signature.return_annotation
        returns = _Any if returns is signature.empty else returns
        return signature.replace(parameters=[fun, argnum, *rest], return_annotation=_Callable[..., returns])
    except (TypeError, ValueError):  # not introspectable, or fewer than two parameters
        return None


def unary_to_nary(unary_operator):
    """Make ``op(fun, x, *op_args, **op_kwargs)`` into ``op(fun, argnum=0, *op_args, **op_kwargs)``.

    The result returns a function of ``(*args, **kwargs)`` that applies the unary
    operator to ``x -> fun(*args with x at argnum, **kwargs)`` at ``x = args[argnum]``.
    Keyword arguments are passed through untouched.  With a tuple/list ``argnum`` the
    operator sees the tuple of those arguments, so its result is a tuple (one entry per
    argnum, in the order given).

    If the unary operator is annotated, the n-ary one gets the signature it is called
    with (``inspect.signature``, ``help`` and IPython show it): ``x`` is replaced by
    ``argnum: int | Sequence[int] = 0`` and a return annotation ``R`` becomes
    ``Callable[..., R]``.  This costs nothing when the operator is used.

    >>> import inspect
    >>> import fastgrad.numpy as np
    >>> from fastgrad.wrap_util import unary_to_nary
    >>> @unary_to_nary
    ... def slope(fun, x, h=1e-6):
    ...     return (fun(x + h) - fun(x - h)) / (2 * h)
    >>> f = slope(lambda a, b: a * b ** 2, 1)      # d/db of a * b**2
    >>> f.__name__
    'slope_of_<lambda>_wrt_argnum_1'
    >>> bool(np.isclose(f(3.0, 2.0), 12.0))
    True
    >>> @unary_to_nary
    ... def value_at(fun, x: float) -> float:
    ...     return fun(x)
    >>> list(inspect.signature(value_at).parameters)
    ['fun', 'argnum']
    >>> inspect.signature(value_at).return_annotation
    typing.Callable[..., float]
    """

    def nary_operator(fun, argnum=0, *nary_op_args, **nary_op_kwargs):
        name = get_name(fun)
        if isinstance(argnum, (tuple, list)):
            nums = tuple([_as_argnum(i, argnum) for i in argnum])

            @wrap_nary_f(fun, unary_operator, argnum)
            def nary_f(*args, **kwargs):
                nargs = len(args)
                resolved = [_resolve(i, nargs) for i in nums]
                x = tuple([args[i] for i in resolved])

                def unary_f(x):
                    return fun(*subvals(args, zip(resolved, x)), **kwargs)

                unary_f.__name__ = name
                return unary_operator(unary_f, x, *nary_op_args, **nary_op_kwargs)
        else:
            num = _as_argnum(argnum, argnum)

            @wrap_nary_f(fun, unary_operator, argnum)
            def nary_f(*args, **kwargs):
                try:
                    x = args[num]
                except IndexError:
                    raise _out_of_range(num, len(args)) from None

                def unary_f(x):
                    values = list(args)
                    values[num] = x
                    return fun(*values, **kwargs)

                unary_f.__name__ = name
                return unary_operator(unary_f, x, *nary_op_args, **nary_op_kwargs)

        return nary_f

    nary_operator.__name__ = get_name(unary_operator)
    nary_operator.__qualname__ = getattr(unary_operator, "__qualname__", nary_operator.__name__)
    nary_operator.__module__ = getattr(unary_operator, "__module__", None)
    nary_operator.__doc__ = get_doc(unary_operator)
    signature = _nary_signature(unary_operator)
    if signature is not None:
        nary_operator.__signature__ = signature
        nary_operator.__annotations__ = {
            **{p.name: p.annotation for p in signature.parameters.values() if p.annotation is not p.empty},
            "return": signature.return_annotation,
        }
    return nary_operator
