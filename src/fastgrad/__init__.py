"""fastgrad: automatic differentiation of NumPy code, a compiled drop-in for autograd.

>>> import fastgrad.numpy as np
>>> from fastgrad import grad
>>> def f(x):
...     return np.sum(np.tanh(x) ** 2)
>>> x = np.array([0.0, 0.5])
>>> bool(np.allclose(grad(f)(x), 2 * np.tanh(x) * (1 - np.tanh(x) ** 2)))
True
"""

from . import _engine
from ._engine import COMPILED
from . import extend
from .differential_operators import (
    checkpoint,
    deriv,
    elementwise_grad,
    grad,
    grad_and_aux,
    grad_named,
    hessian,
    hessian_tensor_product,
    hessian_vector_product,
    holomorphic_grad,
    jacobian,
    make_ggnvp,
    make_hvp,
    make_jvp,
    make_vjp,
    multigrad_dict,
    tensor_jacobian_product,
    value_and_grad,
    vector_jacobian_product,
    stop_gradient,
)
from ._debug import set_debug
from ._recompute import recompute
from ._drop_in import install_as_autograd
from .builtins import dict, isinstance, list, tuple, type
from .core import primitive

__version__ = "0.1.0"

if _engine._flag("FASTGRAD_DEBUG"):
    set_debug(True)
