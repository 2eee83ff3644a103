"""fastgrad: automatic differentiation of NumPy code, a compiled drop-in for autograd.

>>> import fastgrad.numpy as np
>>> from fastgrad import grad
>>> def f(x):
...     return np.sum(np.tanh(x) ** 2)
>>> x = np.array([0.0, 0.5])
>>> bool(np.allclose(grad(f)(x), 2 * np.tanh(x) * (1 - np.tanh(x) ** 2)))
True
"""

# The public names are imported as ``name as name``: the form that marks a re-export for
# type checkers (mypy --strict), with no effect at run time.
from . import _engine
from ._engine import COMPILED as COMPILED
from . import extend as extend
from .differential_operators import (
    checkpoint as checkpoint,
    deriv as deriv,
    elementwise_grad as elementwise_grad,
    grad as grad,
    grad_and_aux as grad_and_aux,
    grad_named as grad_named,
    hessian as hessian,
    hessian_tensor_product as hessian_tensor_product,
    hessian_vector_product as hessian_vector_product,
    holomorphic_grad as holomorphic_grad,
    jacobian as jacobian,
    make_ggnvp as make_ggnvp,
    make_hvp as make_hvp,
    make_jvp as make_jvp,
    make_vjp as make_vjp,
    multigrad_dict as multigrad_dict,
    tensor_jacobian_product as tensor_jacobian_product,
    value_and_grad as value_and_grad,
    vector_jacobian_product as vector_jacobian_product,
    stop_gradient as stop_gradient,
)
from ._debug import set_debug as set_debug
from ._recompute import recompute as recompute
from ._drop_in import install_as_autograd as install_as_autograd
from .builtins import dict as dict, isinstance as isinstance, list as list, tuple as tuple, type as type
from .core import primitive as primitive
from ._stale import check_compiled_sources as _check_compiled_sources
from . import _autoray, _backends

__version__ = "0.1.0"

_check_compiled_sources()  # (an edited .py beside its old compiled build: ImportError)

# autoray (quimb's and PennyLane's dispatch) finds fastgrad.numpy's functions for a box
_backends.add_integration("autoray", _autoray.register)

if _engine._flag("FASTGRAD_DEBUG"):
    set_debug(True)
