"""Turning unary differential operators into n-ary ones, with generated names and docstrings."""
from .util import subval, subvals


def get_name(f):
    return getattr(f, "__name__", "[unknown name]")


def get_doc(f):
    return getattr(f, "__doc__", "")


def wraps(fun, namestr="{fun}", docstr="{doc}", **kwargs):
    """Decorator giving the wrapper a name and docstring generated from ``fun``'s."""
    def _wraps(f):
        try:
            f.__name__ = namestr.format(fun=get_name(fun), **kwargs)
            f.__doc__ = docstr.format(fun=get_name(fun), doc=get_doc(fun), **kwargs)
        finally:
            return f
    return _wraps


_NARY_NAME = "{op}_of_{fun}_wrt_argnum_{argnum}"
_NARY_DOC = ("    {op} of function {fun} with respect to argument number {argnum}. Takes the\n"
             "    same arguments as {fun} but returns the {op}.\n    ")


def wrap_nary_f(fun, op, argnum):
    return wraps(fun, _NARY_NAME, _NARY_DOC, op=get_name(op), argnum=argnum)


def _check_argnum(argnum, nargs):
    if isinstance(argnum, bool) or not isinstance(argnum, int):
        raise TypeError("argnum must be an int or a tuple/list of ints, got {!r}".format(argnum))
    if not -nargs <= argnum < nargs:
        raise IndexError("argnum {} is out of range: the function was called with {} positional "
                         "argument{}".format(argnum, nargs, "" if nargs == 1 else "s"))
    return argnum % nargs


def unary_to_nary(unary_operator):
    """Make ``op(fun, x)`` into ``op(fun, argnum=0)(*args, **kwargs)``.

    ``argnum`` is an int (negative allowed) or a tuple/list of ints; in the latter case the
    operator sees the tuple of those arguments, so it returns a tuple of results."""
    def nary_operator(fun, argnum=0, *nary_op_args, **nary_op_kwargs):
        many = isinstance(argnum, (tuple, list))

        @wrap_nary_f(fun, unary_operator, argnum)
        def nary_f(*args, **kwargs):
            if many:
                nums = [_check_argnum(i, len(args)) for i in argnum]
                x = tuple([args[i] for i in nums])

                def unary_f(x):
                    return fun(*subvals(args, zip(nums, x)), **kwargs)
            else:
                num = _check_argnum(argnum, len(args))
                x = args[num]

                def unary_f(x):
                    return fun(*subval(args, num, x), **kwargs)
            unary_f.__name__ = get_name(fun)
            return unary_operator(unary_f, x, *nary_op_args, **nary_op_kwargs)
        return nary_f

    nary_operator.__name__ = get_name(unary_operator)
    nary_operator.__qualname__ = getattr(unary_operator, "__qualname__", nary_operator.__name__)
    nary_operator.__module__ = getattr(unary_operator, "__module__", None)
    nary_operator.__doc__ = get_doc(unary_operator)
    return nary_operator
