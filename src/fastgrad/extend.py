"""The extension API: what a user needs to add primitives, rules, boxes and vector spaces."""

from .core import (
    JVPNode,
    SparseObject,
    VJPNode,
    VSpace,
    def_linear,
    defjvp,
    defjvp_argnum,
    defjvp_argnums,
    defvjp,
    defvjp_argnum,
    defvjp_argnums,
    vspace,
)
from .tracer import Box, notrace_primitive, primitive, register_notrace

__all__ = [
    "Box",
    "JVPNode",
    "SparseObject",
    "VJPNode",
    "VSpace",
    "def_linear",
    "defjvp",
    "defjvp_argnum",
    "defjvp_argnums",
    "defvjp",
    "defvjp_argnum",
    "defvjp_argnums",
    "notrace_primitive",
    "primitive",
    "register_notrace",
    "vspace",
]
