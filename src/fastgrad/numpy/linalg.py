"""fastgrad.numpy.linalg: numpy.linalg with every function wrapped as a primitive.

Gradients, reverse (VJP) and forward (JVP), correct to second order, for real and
complex input and stacks of matrices where NumPy accepts them: det, slogdet, inv, pinv,
solve, norm, vector_norm, matrix_norm, eigh, eigvalsh, eig, eigvals, cholesky, svd
(full_matrices True or False, compute_uv False, hermitian), svdvals, qr (every mode but
'raw'), lstsq, matrix_power, multi_dot, and NumPy's array-API names (matmul, tensordot,
outer, matrix_transpose, diagonal, trace, vecdot, cross).  The rules and the degenerate
points (repeated eigenvalues, zero singular values...) are documented in
``_linalg_rules``.

Results that are named tuples (eigh, eig, qr, slogdet, svd) are traced containers:
indexing, unpacking and attribute access (``.eigenvalues``, ``.S``, ``.logabsdet``) all
work on traced results.  ``lstsq`` returns a plain tuple ``(x, residuals, rank, s)`` whose
``rank`` is an int.  ``T`` and ``_dot`` are helpers for writing rules.
"""

import types as _types

import numpy.linalg as _npla

from .. import _backends
from ..tracer import Box as _Box, getval as _getval
from . import numpy_wrapper as _w
from . import _linalg_rules

_NOTRACE = frozenset(["matrix_rank"])
_CUSTOM = frozenset(["multi_dot", "lstsq"])


def _build():
    ns = {}
    for name in dir(_npla):
        if name.startswith("_") or name == "test" or name in _CUSTOM:
            continue
        obj = getattr(_npla, name)
        if isinstance(obj, _types.ModuleType):  # (NumPy < 2.1's deprecated numpy.linalg.linalg)
            continue
        if name in _NOTRACE:
            obj = _w.notrace_primitive(obj)
            ns[name] = obj
        else:
            ns[name] = _w.wrap_numpy_object(name, obj)
    return ns


def multi_dot(arrays, *, out=None):
    if out is None and (isinstance(arrays, _Box) or _w._is_traced_sequence(arrays) or _foreign_sequence(arrays)):
        return _linalg_rules.multi_dot_args(*[_w._traceable(a) for a in _w._elements(arrays)])
    return _npla.multi_dot(arrays, out=out)


def _foreign_sequence(arrays):
    # (another library's arrays go through the primitive, whose product stays there)
    return isinstance(arrays, (list, tuple)) and any(_backends.is_foreign(a) for a in arrays)


def lstsq(a, b, rcond=_linalg_rules.RCOND_DEFAULT):
    if not (isinstance(a, _Box) or isinstance(b, _Box) or _backends.is_foreign(a) or _backends.is_foreign(b)):
        return _npla.lstsq(a, b) if rcond is _linalg_rules.RCOND_DEFAULT else _npla.lstsq(a, b, rcond)
    parts = _linalg_rules.lstsq_parts(a, b, rcond)
    x, residuals, rank, s = parts
    rank = _getval(rank)
    return (x, residuals, rank if _backends.is_foreign(rank) else int(rank), s)


for _f, _npf in ((multi_dot, _npla.multi_dot), (lstsq, _npla.lstsq)):
    _f.__doc__ = _npf.__doc__
    _f.__wrapped__ = _npf

_namespace = _build()
_namespace["multi_dot"] = multi_dot
_namespace["lstsq"] = lstsq
globals().update(_namespace)
__all__ = sorted(_namespace) + ["T"]


def T(x):
    """``x`` with its last two axes swapped (a batch of matrices transposed).

    >>> import fastgrad.numpy as np
    >>> from fastgrad.numpy.linalg import T
    >>> T(np.arange(6.0).reshape(1, 2, 3))
    array([[[0., 3.],
            [1., 4.],
            [2., 5.]]])
    """
    return _w.swapaxes(x, -1, -2)


def _dot(a, b):
    """Batched matrix product over the last two axes (``a @ b``).

    >>> import fastgrad.numpy as np
    >>> from fastgrad.numpy.linalg import _dot
    >>> _dot(np.ones((5, 2, 3)), np.ones((5, 3, 4))).shape
    (5, 2, 4)
    """
    return _w.matmul(a, b)


_linalg_rules.register(_namespace)
