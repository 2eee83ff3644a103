"""Sums of cotangents: exact-type fast paths, the generic path through the _bound
``generic_add``, and the rule that only arrays the pass made are added into (pure engine;
_core_sums.pxi is the compiled one)."""

from numpy import dtype, float64, ndarray

from ._core_boxes import Box
from ._core_seam import _bound

_IMMUTABLE = (float, complex, float64)  # cotangent types summed with `+`, never in place
_FLOAT64 = dtype(float64)  # (native byte order: a swapped one does not compare equal)
# (The compiled pass writes a float64 sum, or a chain's next cotangent, into a float64 that
# only it holds, where this one makes a new float64: the same values, fewer allocations;
# no one else can see the object, so both engines give the same results.)


def same_layout(a, b):
    """``a`` and ``b`` are ndarrays of the same shape and dtype."""
    return type(a) is ndarray and type(b) is ndarray and a.shape == b.shape and a.dtype == b.dtype


def _accumulate(prev, prev_owned, g):
    """prev + g, in place only into an array this pass allocated.  -> (sum, owned)"""
    tp = type(prev)
    if (tp is not type(g) or tp is ndarray) and _is_scalar_term(prev) and _is_scalar_term(g):
        # float64 scalars of different kinds (a float64, a float, the 0-d array that grad
        # seeds with and rules such as + pass along): NumPy sums them to a float64
        return prev + g, True
    if tp is type(g):
        if tp in _IMMUTABLE:
            return prev + g, True
        if tp is ndarray and same_layout(prev, g):
            if prev_owned:
                prev += g
                return prev, True
            return prev + g, True
    elif prev_owned and type(g) is _bound.sparse_type and not isinstance(prev, Box):
        return g.mut_add(prev), True
    if prev_owned and tp not in _IMMUTABLE and tp is not ndarray:
        prev = _readable(prev)  # the generic add may record it (higher order): no markers
    return _bound.generic_add(prev, prev_owned, g)


def _is_scalar_term(v):
    """``v`` is a float, a float64 or a 0-d float64 array in native byte order."""
    tp = type(v)
    return tp is float or tp is float64 or (tp is ndarray and v.ndim == 0 and v.dtype == _FLOAT64)


def _first_contribution(g):
    """How a first cotangent is kept: borrowed if it is a plain value, else via the hook
    (which turns a sparse cotangent into an array of its own).  -> (sum, owned)"""
    if type(g) in _IMMUTABLE or type(g) is ndarray:
        return g, False
    if type(g) is _bound.sparse_type:
        return (g.mut_add(g.vs.zeros()) if _bound.start_sum is None else _bound.start_sum(g)), True
    return _bound.generic_add(None, False, g)


def _readable(total):
    """An owned sum that is not a scalar or an array, as a rule may read it."""
    return total if _bound.finish_sum is None else _bound.finish_sum(total)


def _own(g, owned):
    """A root's cotangent as the caller's own array: copied unless the pass made it."""
    return g.copy() if type(g) is ndarray and not owned else g
