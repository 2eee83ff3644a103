"""Forward-mode rules of fastgrad.numpy (autograd's module of this name).

fastgrad defines each primitive's forward rule beside its reverse rule, in the topic
modules that ``numpy_vjps`` lists; importing either module registers both modes.  A
forward rule is ``jvp(t, ans, *args, **kwargs) -> tangent of the result`` given the
tangent ``t`` of one argument (``core.defjvp``); ``fit(t, ans)`` brings a tangent to the
result's shape and dtype.
"""

from . import numpy_vjps  # noqa: F401  (registers the rules of both modes)
from ._shapes import fit  # noqa: F401
