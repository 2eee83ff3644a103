"""Reverse-mode rules of fastgrad.numpy (autograd's module of this name).

fastgrad defines each primitive's rules of both modes in one place, by topic, and
importing this module registers them all:

* ``_elementwise``: ufuncs and their kin (sin, +, *, power, maximum, ...);
* ``_reductions``: sum, mean, prod, max/min, var/std, cumulative sums and products;
* ``_statistics``: median, percentile, quantile, average, cov, corrcoef;
* ``_products``: dot, matmul, tensordot, einsum, outer, kron, convolve, ...;
* ``_shaping``: reshape, transpose, flips, diagonals, pad, joining and splitting, linspace;
* ``_indexing``: indexing, take, where, clip, sort, unique, ...;
* ``_differences``: diff, gradient, trapezoid, interp, polynomials;

with shapes and broadcasting in ``_shapes`` and the registration helpers in
``_registration`` (docs/architecture.md, "How to add a rule").  Each reverse rule is
``rule(g, ans, *args, **kwargs) -> cotangent`` (``core.defvjp_direct``), applied in the
backward pass: nothing is prepared while recording.

Complex numbers follow autograd's convention: the cotangent of a real function L at a
complex z is dL/dx - i dL/dy, so a holomorphic primitive f pulls ``g`` back to
``g * f'(z)`` (no conjugation) and linear maps use plain transposes.  Each topic module
documents its conventions where a derivative does not exist.

What autograd's module offers to extension code stays importable from here.
"""

from . import _differences, _elementwise, _indexing, _products, _reductions, _shaping, _statistics  # noqa: F401
from ._shapes import unbroadcast, unbroadcast_f  # noqa: F401  (autograd's names)
