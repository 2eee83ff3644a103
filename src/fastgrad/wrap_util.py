"""Turning unary differential operators into n-ary ones, with generated names and docstrings.

A differential operator is written for a function of one argument, ``op(fun, x)``;
``unary_to_nary`` turns it into ``op(fun, argnum=0)``, which returns a function with
``fun``'s signature that differentiates with respect to positional argument ``argnum``
(an int, negative allowed, or a tuple/list of ints, in which case the operator sees the
tuple of those arguments).
"""
from operator import index as _index

from .util import subval, subvals  # noqa: F401  (subval: autograd's wrap_util exports it)


def get_name(f):
    """``f.__name__``, or ``"[unknown name]"``."""
    return getattr(f, "__name__", "[unknown name]")


def get_doc(f):
    """``f.__doc__`` (``""`` if ``f`` has no such attribute)."""
    return getattr(f, "__doc__", "")


def wraps(fun, namestr="{fun}", docstr="{doc}", **kwargs):
    """Decorator setting the wrapper's ``__name__`` and ``__doc__`` from templates.

    ``{fun}`` is ``fun``'s name, ``{doc}`` its docstring, other fields come from ``kwargs``.
    A wrapper whose attributes cannot be set is returned unchanged."""
    def _wraps(f):
        try:
            f.__name__ = namestr.format(fun=get_name(fun), **kwargs)
            f.__doc__ = docstr.format(fun=get_name(fun), doc=get_doc(fun), **kwargs)
        except (AttributeError, TypeError):
            pass
        return f
    return _wraps


_NARY_NAME = "{op}_of_{fun}_wrt_argnum_{argnum}"
_NARY_DOC = ("    {op} of function {fun} with respect to argument number {argnum}. Takes the\n"
             "    same arguments as {fun} but returns the {op}.\n    ")


def wrap_nary_f(fun, op, argnum):
    """``wraps`` with the generated name ``<op>_of_<fun>_wrt_argnum_<argnum>`` and docstring."""
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
    return IndexError("argnum {} is out of range: the function was called with {} positional "
                      "argument{}".format(argnum, nargs, "" if nargs == 1 else "s"))


def _resolve(argnum, nargs):
    if not -nargs <= argnum < nargs:
        raise _out_of_range(argnum, nargs)
    return argnum % nargs


def unary_to_nary(unary_operator):
    """Make ``op(fun, x, *op_args, **op_kwargs)`` into ``op(fun, argnum=0, *op_args, **op_kwargs)``.

    The result returns a function of ``(*args, **kwargs)`` that applies the unary
    operator to ``x -> fun(*args with x at argnum, **kwargs)`` at ``x = args[argnum]``.
    Keyword arguments are passed through untouched.  With a tuple/list ``argnum`` the
    operator sees the tuple of those arguments, so its result is a tuple (one entry per
    argnum, in the order given)."""
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
    return nary_operator
