"""fastgrad.numpy.linalg: numpy.linalg with every function wrapped as a primitive.

Gradient rules for the decompositions and solvers come with a later slice; the functions
numpy.linalg shares with the main namespace (matmul, tensordot, outer, matrix_transpose,
diagonal) already have theirs.  ``T`` and ``_dot`` are helpers for writing rules.
"""
import numpy.linalg as _npla

from ..core import defvjp_direct as _defvjp_direct
from . import numpy_wrapper as _w
from . import numpy_vjps as _vjps

_NOTRACE = frozenset(["matrix_rank"])


def _build():
    ns = {}
    for name in dir(_npla):
        if name.startswith("_") or name == "test":
            continue
        obj = getattr(_npla, name)
        if name in _NOTRACE:
            obj = _w.notrace_primitive(obj)
            ns[name] = obj
        else:
            ns[name] = _w.wrap_numpy_object(name, obj)
    return ns


_namespace = _build()
globals().update(_namespace)
__all__ = sorted(_namespace) + ["T"]


def T(x):
    """``x`` with its last two axes swapped (a batch of matrices transposed)."""
    return _w.swapaxes(x, -1, -2)


def _dot(a, b):
    """Batched matrix product over the last two axes (``a @ b``)."""
    return _w.matmul(a, b)


_defvjp_direct(_namespace["matmul"], _vjps._matmul_vjp_a, _vjps._matmul_vjp_b)
_defvjp_direct(_namespace["tensordot"], _vjps._tensordot_rule(_vjps._tensordot_vjp_a),
               _vjps._tensordot_rule(_vjps._tensordot_vjp_b))
_defvjp_direct(_namespace["outer"], _vjps._outer_vjp_a, _vjps._outer_vjp_b)
_defvjp_direct(_namespace["matrix_transpose"],
               lambda g, ans, x: _vjps.unbroadcast(T(g), x))
_defvjp_direct(_namespace["diagonal"], lambda g, ans, x, offset=0: _vjps.unbroadcast(
    _w.diag_embed(g, offset, _vjps._ndim(x) - 2, _vjps._ndim(x) - 1, _vjps._shape(x)), x))
