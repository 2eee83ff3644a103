"""fastgrad.misc: flattening containers, optimizers, fixed points and graph tracers.

As in autograd, ``fastgrad.misc.flatten`` is the function; the module of the same name
stays importable (``from fastgrad.misc.flatten import flatten_func``).
"""

from . import fixed_points, optimizers, tracers
from .flatten import flatten, flatten_func
from .tracers import const_graph

__all__ = ["flatten", "flatten_func", "const_graph"]
