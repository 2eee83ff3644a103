"""An independent numerical gradient checker for the test suite.

It deliberately does not use the vector-space machinery of the package under test:
random directions, inner products and perturbations are computed here, on plain
NumPy values, so a bug in ``VSpace`` cannot hide a bug in a rule.

Reverse mode (the ``"rev"`` mode): for ``y = f(x)``, a random direction ``d`` in the
input space and a random cotangent ``u`` in the output space,

    <d, vjp(u)>   must equal   <u, (f(x + eps d) - f(x - eps d)) / (2 eps)>

which checks the VJP against central differences along one random direction (for a
scalar function this is ``grad . d``).  ``order=2`` then applies the same check to the
function ``x -> vjp_x(u)`` itself, i.e. it checks the gradient of the gradient (and all
mixed second derivatives when several arguments are checked).  Complex values use the
real inner product ``Re(conj(a) b)`` and autograd's covector convention (conjugation).

Forward mode (``"fwd"``) checks ``<u, jvp(d)>`` against the same numerical directional
derivative; it is wired in but nothing requests it until fastgrad has JVPs.
"""

import importlib
import os
import warnings

import numpy as onp

EPS = 1e-6
RTOL = 1e-5
ATOL = 1e-6


def default_module():
    """The package under test, as selected by ``FG_TEST_TARGET`` (see conftest)."""
    target = os.environ.get("FG_TEST_TARGET", "fastgrad").strip().lower() or "fastgrad"
    return importlib.import_module(target)


# ---------------------------------------------------------------------------
# Values as trees: Python/NumPy scalars and arrays, nested in list/tuple/dict.


def _is_container(x):
    return isinstance(x, (list, tuple, dict))


def _items(x):
    if isinstance(x, dict):
        return [x[k] for k in sorted(x, key=repr)]
    return list(x)


def _rebuild(like, items):
    if isinstance(like, dict):
        return {k: v for k, v in zip(sorted(like, key=repr), items)}
    if isinstance(like, tuple) and hasattr(like, "_fields"):
        return type(like)(*items)
    return type(like)(items)


def tree_map(fn, *trees):
    """Apply ``fn`` leaf-wise to trees of identical structure."""
    first = trees[0]
    if _is_container(first):
        columns = zip(*[_items(t) for t in trees])
        return _rebuild(first, [tree_map(fn, *col) for col in columns])
    return fn(*trees)


def tree_leaves(tree):
    if _is_container(tree):
        return [leaf for item in _items(tree) for leaf in tree_leaves(item)]
    return [tree]


def is_differentiable_leaf(x):
    """A real or complex floating value (not int, not bool)."""
    if isinstance(x, (bool, int)) or x is None:
        return False
    if isinstance(x, (float, complex)):
        return True
    if isinstance(x, (onp.ndarray, onp.generic)):
        return onp.issubdtype(x.dtype, onp.inexact)
    return False


def is_differentiable(x):
    leaves = tree_leaves(x)
    return bool(leaves) and all(is_differentiable_leaf(leaf) for leaf in leaves)


def _is_complex(x):
    return onp.iscomplexobj(x)


def _randn_leaf(x, rs):
    shape = onp.shape(x)
    r = rs.randn(*shape)
    if _is_complex(x):
        r = r + 1j * rs.randn(*shape)
    if isinstance(x, (onp.ndarray, onp.generic)):
        return onp.asarray(r, dtype=x.dtype).reshape(shape) if shape else x.dtype.type(r)
    return complex(r) if isinstance(x, complex) else float(r)


def tree_randn(x, rs):
    """A random value with the structure, shapes and dtypes of ``x``."""
    return tree_map(lambda leaf: _randn_leaf(leaf, rs), x)


def tree_inner(a, b):
    """Real inner product sum(Re(conj(a) * b)) over all leaves."""
    total = 0.0
    for la, lb in zip(tree_leaves(a), tree_leaves(b), strict=True):
        la = onp.asarray(la)
        lb = onp.asarray(lb)
        if la.shape != lb.shape:
            raise AssertionError(f"shape mismatch in inner product: {la.shape} vs {lb.shape}")
        total += float(onp.sum(onp.real(onp.conj(la) * lb)))
    return total


def tree_axpy(alpha, x, y):
    """alpha * x + y, keeping y's leaf types (Python float stays float)."""

    def leaf(xl, yl):
        out = alpha * onp.asarray(xl) + onp.asarray(yl)
        if isinstance(yl, (float, complex)) and not isinstance(yl, onp.generic):
            return type(yl)(out)
        if isinstance(yl, onp.generic):
            return yl.dtype.type(out)
        return out.astype(onp.asarray(yl).dtype, copy=False)

    return tree_map(leaf, x, y)


def tree_covector(x):
    return tree_map(lambda leaf: onp.conj(leaf) if _is_complex(leaf) else leaf, x)


def check_same_space(x, g, what="gradient"):
    """``g`` lives in the space of ``x``: same tree structure, shapes and dtypes."""
    if _is_container(x):
        assert (
            type(g) is type(x)
            or (isinstance(x, tuple) and isinstance(g, tuple))
            or (isinstance(x, list) and isinstance(g, list))
            or (isinstance(x, dict) and isinstance(g, dict))
        ), f"{what} has type {type(g).__name__}, input has {type(x).__name__}"
        xi, gi = _items(x), _items(g)
        assert len(xi) == len(gi), f"{what} has {len(gi)} entries, input has {len(xi)}"
        if isinstance(x, dict):
            assert sorted(x, key=repr) == sorted(g, key=repr), f"{what} keys differ"
        for a, b in zip(xi, gi):
            check_same_space(a, b, what)
        return
    assert onp.shape(g) == onp.shape(x), f"{what} has shape {onp.shape(g)}, input has shape {onp.shape(x)}"
    assert onp.result_type(g) == onp.result_type(x), (
        f"{what} has dtype {onp.result_type(g)}, input has dtype {onp.result_type(x)}"
    )


# ---------------------------------------------------------------------------
# The checks.


def _subval(args, i, v):
    return args[:i] + (v,) + args[i + 1 :]


def _funname(f):
    return getattr(f, "__name__", repr(f))


def numerical_directional_derivative(f, args, argnum, direction, eps=EPS):
    """(f(x + eps d) - f(x - eps d)) / (2 eps) as a tree shaped like f's output."""
    x = args[argnum]
    plus = f(*_subval(args, argnum, tree_axpy(eps, direction, x)))
    minus = f(*_subval(args, argnum, tree_axpy(-eps, direction, x)))
    return tree_map(lambda p, m: (onp.asarray(p) - onp.asarray(m)) / (2 * eps), plus, minus)


def _assert_close(analytic, numeric, rtol, atol, msg):
    if not abs(analytic - numeric) <= atol + rtol * max(abs(analytic), abs(numeric)):
        raise AssertionError(
            f"{msg}\n  analytic: {analytic!r}\n  numeric:  {numeric!r}\n  difference: {analytic - numeric!r}"
        )


def check_vjp(f, args, argnum, rs, module, eps=EPS, rtol=RTOL, atol=ATOL):
    """One reverse-mode check of f w.r.t. args[argnum]. Returns the fixed cotangent used."""
    x = args[argnum]
    vjp, y = module.make_vjp(f, argnum)(*args)
    assert is_differentiable(y), f"{_funname(f)} returned a non-float value {y!r}"
    u = tree_randn(y, rs)
    d = tree_randn(x, rs)
    g = vjp(tree_covector(u))
    check_same_space(x, g, f"VJP of {_funname(f)} w.r.t. argument {argnum}")
    analytic = tree_inner(d, tree_covector(g))
    numeric = tree_inner(u, numerical_directional_derivative(f, args, argnum, d, eps))
    _assert_close(
        analytic, numeric, rtol, atol, f"VJP check of {_funname(f)} w.r.t. argument {argnum} failed at args {args!r}"
    )
    return u


def check_jvp(f, args, argnum, rs, module, eps=EPS, rtol=RTOL, atol=ATOL):
    """One forward-mode check of f w.r.t. args[argnum]. Returns the fixed tangent used."""
    x = args[argnum]
    d = tree_randn(x, rs)
    y, t = module.make_jvp(f, argnum)(*args)(d)
    check_same_space(y, t, f"JVP of {_funname(f)} w.r.t. argument {argnum}")
    u = tree_randn(y, rs)
    analytic = tree_inner(u, t)
    numeric = tree_inner(u, numerical_directional_derivative(f, args, argnum, d, eps))
    _assert_close(
        analytic, numeric, rtol, atol, f"JVP check of {_funname(f)} w.r.t. argument {argnum} failed at args {args!r}"
    )
    return d


def _vjp_function(f, argnum, u, module):
    def vjp_of_f(*args):
        vjp, _ = module.make_vjp(f, argnum)(*args)
        return vjp(tree_covector(u))

    vjp_of_f.__name__ = f"vjp_{_funname(f)}"
    return vjp_of_f


def _jvp_function(f, argnum, d, module):
    def jvp_of_f(*args):
        return module.make_jvp(f, argnum)(*args)(d)[1]

    jvp_of_f.__name__ = f"jvp_{_funname(f)}"
    return jvp_of_f


def check_grads(f, *args, order=2, argnums=None, modes=("rev",), module=None, seed=0, eps=EPS, rtol=RTOL, atol=ATOL):
    """Check f's derivatives w.r.t. ``argnums`` (default: every float-valued argument)
    against central differences, then (order > 1) the derivatives of the derivative
    functions themselves, recursively.  Raises AssertionError on a mismatch."""
    module = default_module() if module is None else module
    with warnings.catch_warnings():
        # derivative functions of linear functions legitimately do not depend on x
        warnings.filterwarnings("ignore", message="Output seems independent of input")
        _check_grads(f, args, order, argnums, modes, module, seed, eps, rtol, atol)


def _check_grads(f, args, order, argnums, modes, module, seed, eps, rtol, atol):
    if isinstance(modes, str):
        modes = (modes,)
    unknown = set(modes) - {"rev", "fwd"}
    if unknown:
        raise ValueError(f"unknown modes {sorted(unknown)}")
    if argnums is None:
        argnums = tuple(i for i, a in enumerate(args) if is_differentiable(a))
    elif isinstance(argnums, int):
        argnums = (argnums,)
    if not argnums:
        raise ValueError("check_grads: no differentiable argument to check")
    rs = onp.random.RandomState(seed)
    kw = dict(eps=eps, rtol=rtol, atol=atol)
    for argnum in argnums:
        if "rev" in modes:
            u = check_vjp(f, args, argnum, rs, module, **kw)
            if order > 1:
                _check_grads(
                    _vjp_function(f, argnum, u, module),
                    args,
                    order - 1,
                    argnums,
                    ("rev",),
                    module,
                    rs.randint(2**31),
                    **kw,
                )
        if "fwd" in modes:
            d = check_jvp(f, args, argnum, rs, module, **kw)
            if order > 1:
                _check_grads(
                    _jvp_function(f, argnum, d, module),
                    args,
                    order - 1,
                    argnums,
                    ("fwd",),
                    module,
                    rs.randint(2**31),
                    **kw,
                )


# ---------------------------------------------------------------------------
# Comparisons with another implementation (autograd).


def assert_tree_allclose(actual, expected, rtol=1e-10, atol=0.0, what="value"):
    """Leaf-by-leaf closeness of two trees (structure must agree)."""
    la, le = tree_leaves(actual), tree_leaves(expected)
    assert len(la) == len(le), f"{what}: {len(la)} leaves vs {len(le)}"
    for i, (a, e) in enumerate(zip(la, le)):
        a = onp.asarray(a)
        e = onp.asarray(e)
        assert a.shape == e.shape, f"{what} leaf {i}: shape {a.shape} vs {e.shape}"
        onp.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=f"{what} leaf {i}")


def max_relative_error(actual, expected):
    """max |a - e| / max(|e|) over all leaves (a scale-aware relative error)."""
    worst = 0.0
    for a, e in zip(tree_leaves(actual), tree_leaves(expected), strict=True):
        a = onp.asarray(a, dtype=complex if onp.iscomplexobj(e) else float)
        e = onp.asarray(e, dtype=a.dtype)
        scale = float(onp.max(onp.abs(e))) if e.size else 0.0
        err = float(onp.max(onp.abs(a - e))) if e.size else 0.0
        worst = max(worst, err / scale if scale else err)
    return worst


def check_both_modes(f, *args, argnums=None, order=2, fwd=True, **kw):
    """check_grads in reverse mode and (unless ``fwd=False``) in forward mode, to ``order``."""
    check_grads(f, *args, argnums=argnums, modes=("rev",), order=order, **kw)
    if fwd:
        check_grads(f, *args, argnums=argnums, modes=("fwd",), order=order, **kw)
