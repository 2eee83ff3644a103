# Sums of cotangents: exact-type fast paths, the generic path through the bound
# generic_add, and the rule that only arrays the pass made (or that nothing else can see)
# are added into (compiled engine, included in _core.pyx; _core_sums.py is the pure one).

cdef inline bint _is_fast(object tp):
    return tp is float or tp is _float64 or tp is _ndarray or tp is complex


cdef inline bint _same_layout(object a, object b):
    """Two ndarrays of the same shape and dtype (a.shape == b.shape and a.dtype == b.dtype)."""
    cdef cnp.ndarray x = <cnp.ndarray>a, y = <cnp.ndarray>b
    cdef int nd = cnp.PyArray_NDIM(x)
    if nd != cnp.PyArray_NDIM(y):
        return False
    if nd and memcmp(cnp.PyArray_DIMS(x), cnp.PyArray_DIMS(y), nd * sizeof(cnp.npy_intp)) != 0:
        return False
    return <void*>cnp.PyArray_DESCR(x) == <void*>cnp.PyArray_DESCR(y) or x.dtype == y.dtype


def same_layout(a, b):
    """``a`` and ``b`` are ndarrays of the same shape and dtype (read from the arrays'
    structs: unbroadcast's test of whether a cotangent already fits its argument)."""
    return type(a) is _ndarray and type(b) is _ndarray and _same_layout(a, b)


cdef inline bint _exclusive(object a):
    """An ndarray (a rule's result) that nothing else can see: the caller holds the only
    reference, it owns its data and is writable.  The pass may then add into it, as into
    a sum it made itself.  Not a 0-d array: NumPy's arithmetic gives scalars for those,
    and a sum made in place would stay an array (the pure engine would give a scalar)."""
    return Py_REFCNT(a) == 1 and cnp.PyArray_NDIM(<cnp.ndarray>a) > 0 \
        and cnp.PyArray_BASE(<cnp.ndarray>a) is NULL and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>a)


cdef object _accumulate(object prev, bint prev_owned, object g, bint* owned):
    """prev + g, in place only into an array this pass allocated (or one nothing else can
    see); ``owned[0]``: the sum is such an array (or an immutable scalar)."""
    cdef double a, b, r
    tp = type(prev)
    owned[0] = True
    if (tp is not type(g) or tp is _ndarray) and _is_scalar_term(prev, &a) and _is_scalar_term(g, &b):
        # float64 scalars of different kinds (a float64, a float, the 0-d array that grad
        # seeds with and rules such as + pass along): NumPy sums them to a float64
        if fg_sum(a, b, &r):
            return fg_new_float64(_float64, r)
    elif tp is type(g):
        if tp is _float64:
            return _add_float64(prev, g)
        if tp is float or tp is complex:
            return prev + g
        if tp is _ndarray and _same_layout(prev, g):
            if prev_owned:
                prev += g
                return prev
            if _exclusive(g):
                g += prev      # = prev + g (addition commutes), without a new array
                return g
            return prev + g
    elif prev_owned and type(g) is _sparse_type and not isinstance(prev, Box):
        return g.mut_add(prev)
    if prev_owned and not _is_fast(tp):
        prev = _readable(prev)   # the generic add may record it (higher order): no markers
    return _by_generic_add(prev, prev_owned, g, owned)


cdef inline bint _is_scalar_term(object v, double* out):
    """``v`` is a float, a float64 or a 0-d float64 array in native byte order (its value
    in ``out``)."""
    if type(v) is float:
        out[0] = PyFloat_AS_DOUBLE(v)
        return True
    return _cotangent_value(v, out)


cdef object _first_contribution(object g, bint* owned):
    """How a first cotangent is kept: borrowed (``owned[0]`` False) if it is a plain value,
    else via the hook (which turns a sparse cotangent into an array of its own)."""
    tp = type(g)
    if _is_fast(tp):
        owned[0] = tp is _ndarray and _exclusive(g)
        return g
    if tp is _sparse_type:
        owned[0] = True
        return g.mut_add(g.vs.zeros()) if _start_sum is None else _start_sum(g)
    return _by_generic_add(None, False, g, owned)


cdef inline object _readable(object total):
    """An owned sum that is not a scalar or an array, as a rule may read it."""
    return total if _finish_sum is None else _finish_sum(total)


cdef object _by_generic_add(object prev, bint prev_owned, object g, bint* owned):
    total, is_owned = _generic_add(prev, prev_owned, g)
    owned[0] = is_owned
    return total


cdef inline object _own(object g, bint owned):
    """A root's cotangent as the caller's own array: copied unless the pass made it."""
    return g.copy() if type(g) is _ndarray and not owned else g

