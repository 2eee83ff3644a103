"""The differential operators: functions that take a function and return its derivative.

Each ``@unary_to_nary`` operator is written for one argument ``x`` and becomes
``op(fun, argnum=0)``; see ``wrap_util``.
"""
import inspect
import warnings

from ._gc import gc_paused
from .core import _make_vjp, make_jvp as _make_jvp, vspace, defvjp_argnum
from .tracer import getval, isbox, primitive
from .wrap_util import unary_to_nary

_SCALAR_ONLY = ("{} only applies to real scalar-output functions. "
                "Try jacobian, elementwise_grad or holomorphic_grad.")


def _output_space(op, ans):
    try:
        return vspace(ans)
    except TypeError:
        raise TypeError("{} requires the function to return a float or a float array, but it "
                        "returned a value of type {}".format(op, type(getval(ans)))) from None


def _scalar_output_space(op, ans):
    vs = _output_space(op, ans)
    if vs.size != 1 or vs.iscomplex:
        raise TypeError(_SCALAR_ONLY.format(op))
    return vs


@unary_to_nary
def grad(fun, x):
    """
    Returns a function which computes the gradient of ``fun`` with respect to positional
    argument number ``argnum`` (an int, or a tuple of ints for a tuple of gradients).

    The returned function takes the same arguments as ``fun``; ``fun`` must return a real
    scalar (a float or a size-1 float array).  The gradient has the structure and type of
    the argument.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import grad
    >>> grad(np.sin)(0.0)
    1.0
    """
    with gc_paused():
        vjp, ans = _make_vjp(fun, x, consume=True)
        return vjp(_scalar_output_space("grad", ans).ones())


@unary_to_nary
def value_and_grad(fun, x):
    """Returns a function giving ``(fun(*args), grad(fun, argnum)(*args))`` from one forward pass.

    >>> value_and_grad(lambda x: x ** 2)(3.0)
    (9.0, 6.0)
    """
    with gc_paused():
        vjp, ans = _make_vjp(fun, x, consume=True)
        return ans, vjp(_scalar_output_space("value_and_grad", ans).ones())


@unary_to_nary
def make_vjp(fun, x):
    """Returns ``(vjp, value)``: ``vjp(g)`` is the vector-Jacobian product of ``fun`` at ``x``.

    >>> vjp, value = make_vjp(np.sin)(0.0)
    >>> vjp(2.0)
    2.0
    """
    return _make_vjp(fun, x, consume=False)


@unary_to_nary
def elementwise_grad(fun, x):
    """Returns a function computing the sum over outputs of the Jacobian (one VJP with ones).

    For a function applied elementwise this is the elementwise derivative.

    >>> elementwise_grad(np.sin)(np.zeros(3))
    array([1., 1., 1.])
    """
    with gc_paused():
        vjp, ans = _make_vjp(fun, x, consume=True)
        vs = _output_space("elementwise_grad", ans)
        if vs.iscomplex:
            raise TypeError("elementwise_grad only applies to real-output functions.")
        return vjp(vs.ones())


@unary_to_nary
def jacobian(fun, x):
    """Returns a function computing the Jacobian of ``fun``, of shape ``out.shape + in.shape``.

    One forward pass, then one VJP per output element.

    >>> jacobian(lambda x: x * 2.0)(np.ones(2))
    array([[2., 0.],
           [0., 2.]])
    """
    from . import numpy as np
    with gc_paused():
        vjp, ans = _make_vjp(fun, x, consume=False)
        ans_vs, x_vs = _output_space("jacobian", ans), vspace(x)
        rows = [vjp(basis) for basis in ans_vs.standard_basis()]
        return np.reshape(np.stack(rows), ans_vs.shape + x_vs.shape)


@unary_to_nary
def grad_and_aux(fun, x):
    """Returns a function giving ``(gradient, aux)`` for a ``fun`` that returns ``(value, aux)``.

    ``aux`` is passed through untouched (any type).

    >>> grad_and_aux(lambda x: (x ** 2, "note"))(3.0)
    (6.0, 'note')
    """
    aux = []

    def value_only(x):
        value, extra = fun(x)
        aux.append(_unbox_level(extra, x))
        return value

    with gc_paused():
        vjp, ans = _make_vjp(value_only, x, consume=True)
        return vjp(_scalar_output_space("grad_and_aux", ans).ones()), aux[0]


def _unbox_level(value, start_box):
    """Strip the boxes of ``start_box``'s trace (and inner ones), keeping outer traces' boxes."""
    if not isbox(start_box):
        return value
    while isbox(value) and value._trace >= start_box._trace:
        value = value._value
    return value


def tensor_jacobian_product(fun, argnum=0):
    """Returns a function of ``(*args, v)`` computing the product ``v^T J`` (one VJP).

    >>> vector_jacobian_product(np.sin)(0.0, 3.0)
    3.0
    """
    def vector_dot_jacobian(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        vjp, _ = make_vjp(fun, argnum)(*args, **kwargs)
        return vjp(vector)
    vector_dot_jacobian.__name__ = "tensor_jacobian_product_of_{}".format(getattr(fun, "__name__", "fun"))
    return vector_dot_jacobian


vector_jacobian_product = tensor_jacobian_product


def grad_named(fun, argname):
    """Returns the gradient of ``fun`` with respect to its positional parameter named ``argname``.

    >>> grad_named(lambda x, y: x * y, "y")(2.0, 3.0)
    2.0
    """
    names = list(inspect.signature(fun).parameters)
    if argname not in names:
        raise ValueError("{} has no parameter named {!r}".format(getattr(fun, "__name__", fun), argname))
    return grad(fun, names.index(argname))


@unary_to_nary
def holomorphic_grad(fun, x):
    """Returns the complex derivative ``f'(z)`` of a holomorphic ``fun``.

    >>> holomorphic_grad(lambda z: z ** 2)(1.0 + 1.0j)
    (2+2j)
    """
    from . import numpy as np
    if not vspace(x).iscomplex:
        warnings.warn("Input to holomorphic_grad is not complex")
    return grad(lambda x: np.real(fun(x)))(x)


@unary_to_nary
def make_jvp(fun, x):
    """Returns ``jvp(v) -> (value, tangent)``: forward mode, re-running ``fun`` per call.

    >>> make_jvp(np.sin)(0.0)(2.0)
    (0.0, 2.0)
    """
    return _make_jvp(fun, x)


@unary_to_nary
def deriv(fun, x):
    """Returns the forward-mode derivative: the JVP of ``fun`` with an all-ones tangent.

    >>> deriv(np.sin)(0.0)
    1.0
    """
    return _make_jvp(fun, x)(vspace(x).ones())[1]


@unary_to_nary
def hessian(fun, x):
    """Returns the Hessian: the Jacobian of the Jacobian, of shape ``in.shape + in.shape``.

    >>> hessian(lambda x: np.sum(x ** 3))(np.ones(2))
    array([[6., 0.],
           [0., 6.]])
    """
    return jacobian(jacobian(fun))(x)


@unary_to_nary
def make_hvp(fun, x):
    """Returns ``(hvp, gradient)``: ``hvp(v)`` is the Hessian-vector product at ``x``."""
    return _make_vjp(grad(fun), x, consume=False)


def hessian_tensor_product(fun, argnum=0):
    """Returns a function of ``(*args, v)`` computing ``H v`` without forming ``H``.

    >>> hessian_vector_product(lambda x: np.sum(x ** 3))(np.ones(2), np.ones(2))
    array([6., 6.])
    """
    from . import numpy as np
    fun_grad = grad(fun, argnum)

    def vector_dot_grad(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return np.tensordot(fun_grad(*args, **kwargs), vector, np.ndim(vector))
    return grad(vector_dot_grad, argnum)


hessian_vector_product = hessian_tensor_product


def _half_sum_of_squares(x):
    from . import numpy as np
    return 0.5 * np.sum(x ** 2, axis=-1)


def make_ggnvp(f, g=_half_sum_of_squares, f_argnum=0):
    """Returns a builder of generalized Gauss-Newton products ``J_f^T H_g J_f v`` at a point."""
    @unary_to_nary
    def _make_ggnvp(f, x):
        f_vjp, f_x = _make_vjp(f, x, consume=False)
        g_hvp, grad_g_x = _make_vjp(grad(g), f_x, consume=False)
        f_jvp, _ = _make_vjp(f_vjp, vspace(grad_g_x).zeros(), consume=False)

        def ggnvp(v):
            return f_vjp(g_hvp(f_jvp(v)))
        return ggnvp
    return _make_ggnvp(f, f_argnum)


def multigrad_dict(fun):
    """Returns a function giving the gradients w.r.t. every positional argument, as a dict
    keyed by parameter name (in signature order)."""
    names = [name for name, p in inspect.signature(fun).parameters.items()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def gradient_dict(*args, **kwargs):
        bound = inspect.signature(fun).bind(*args, **kwargs)
        bound.apply_defaults()
        values = [bound.arguments[n] for n in names]
        grads = grad(lambda *a: fun(*a), tuple(range(len(names))))(*values)
        return dict(zip(names, grads))
    return gradient_dict


def checkpoint(fun):
    """Returns ``fun`` as a single primitive whose internals are recomputed in the backward
    pass instead of being stored during the forward pass."""
    wrapped = primitive(lambda *args, **kwargs: fun(*args, **kwargs))
    wrapped.__name__ = "checkpoint_of_{}".format(getattr(fun, "__name__", "fun"))

    def recompute_vjp(argnum, ans, args, kwargs):
        return lambda g: make_vjp(fun, argnum)(*args, **kwargs)[0](g)
    defvjp_argnum(wrapped, recompute_vjp)
    return wrapped
