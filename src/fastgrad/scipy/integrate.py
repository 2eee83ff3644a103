"""fastgrad.scipy.integrate: ``odeint`` with gradients w.r.t. the initial state, the times
and the extra arguments.

Reverse mode uses the adjoint method: the cotangent is carried backwards in time by the
adjoint ODE  da/dt = -a^T df/dy,  d(a_args)/dt = -a^T df/dargs, integrated (together with
the state, recomputed backwards from each output time) with scipy.integrate.odeint between
consecutive output times.  Forward mode integrates the forward sensitivity equation
ds/dt = df/dy s + df/dargs v_args.  Both are expressed with traced calls to ``odeint`` and
to ``func`` (its VJPs/JVPs come from fastgrad), so derivatives of derivatives work too.

``args`` may be a tuple, a list, or a single value, as with SciPy; ``tfirst=True`` is
honoured.  Only floating-point entries of ``args`` are differentiated.  An entry that is a
container of traced values (a network's weights as a list of ``(W, b)`` pairs, say) is passed
to the rules as one flat vector (``fastgrad.misc.flatten``) and to ``func`` rebuilt.
"""

import numpy as onp
import scipy.integrate as _si

from ..core import defjvp_argnums, defvjp_argnums, make_jvp, make_vjp
from ..misc.flatten import flatten
from ..numpy import numpy_wrapper as anp
from ..tracer import getval, isbox, primitive

__all__ = ["odeint"]

# options that only make sense for the user's own system, not for the augmented ones
_PRIVATE_OPTIONS = ("Dfun", "col_deriv", "ml", "mu", "full_output", "printmessg", "tcrit")


def _odeint_raw(func, y0, t, *args, **kwargs):
    return _si.odeint(func, y0, t, args=tuple(args), **kwargs)


_odeint_raw.__name__ = _odeint_raw.__qualname__ = "odeint"
_odeint = primitive(_odeint_raw)


def _is_float(x):
    return onp.asarray(getval(x)).dtype.kind in "fc"


def _vec(v):
    """A function value (array, list of values, scalar) as a traced 1-d vector."""
    if isinstance(v, (list, tuple)):
        v = anp.array(v)
    return anp.reshape(v, (-1,))


def _size(x):
    return int(onp.size(getval(x)))


def _concat(parts):
    parts = [p for p in parts if _size(p) > 0]
    if not any(isbox(p) for p in parts):
        return onp.concatenate([onp.reshape(getval(p), (-1,)) for p in parts])
    return anp.concatenate([anp.reshape(p, (-1,)) for p in parts])


def _split_params(params):
    diff = [i for i, p in enumerate(params) if _is_float(p)]
    return diff


def _with(params, diff, values):
    out = list(params)
    for i, v in zip(diff, values):
        out[i] = v
    return out


def _adjoint_system(func, n, diff):
    """d/dt of [y, a, a_args] for the backward pass (params passed positionally)."""

    def aug(s, t, *params):
        y, a = s[:n], s[n : 2 * n]
        fixed = list(params)

        def f_of(ya):
            return _vec(func(ya[0], t, *_with(fixed, diff, ya[1:])))

        point = tuple([y] + [params[i] for i in diff])
        vjp, fy = make_vjp(f_of, point)
        cot = vjp(a)
        parts = [fy, -cot[0]] + [-anp.reshape(c, (-1,)) for c in cot[1:]]
        return _concat(parts)

    return aug


def _f_at(func, y, t, params):
    return _vec(func(y, t, *params))


def _odeint_vjp(argnums, ans, args, kwargs):
    func, y0, t = args[0], args[1], args[2]
    params = list(args[3:])
    opts = {k: v for k, v in kwargs.items() if k not in _PRIVATE_OPTIONS}
    n = _size(y0)
    nt = onp.shape(getval(t))[0]
    diff = _split_params(params)
    aug = _adjoint_system(func, n, diff)

    def vjp(g):
        a = g[nt - 1]
        a_args = onp.zeros(sum(_size(params[i]) for i in diff))
        g_t = [None] * nt
        want_t = 2 in argnums
        a_before = None
        for i in range(nt - 1, 0, -1):
            if want_t:
                g_t[i] = anp.sum(g[i] * _f_at(func, ans[i], t[i], params))
            s0 = _concat([ans[i], a, a_args])
            times = anp.stack([t[i], t[i - 1]]) if isbox(t) else onp.array([t[i], t[i - 1]])
            s = _odeint(aug, s0, times, *params, **opts)[1]
            a = s[n : 2 * n] + g[i - 1]
            a_args = s[2 * n :]
            a_before = s[n : 2 * n]
        if want_t:
            # moving t[0] shifts every later output by -Phi(t_i, t_0) f(y0, t_0)
            g_t[0] = -anp.sum(a_before * _f_at(func, ans[0], t[0], params)) if nt > 1 else 0.0 * anp.sum(g)
        out = []
        for k in argnums:
            if k == 1:
                out.append(anp.reshape(a, onp.shape(getval(y0))))
            elif k == 2:
                out.append(
                    anp.array(g_t) if any(isbox(x) for x in g_t) else onp.array([getval(x) for x in g_t], dtype=float)
                )
            elif k == 0:
                out.append(None)
            else:
                i = k - 3
                if i not in diff:
                    out.append(None)
                    continue
                start = sum(_size(params[j]) for j in diff[: diff.index(i)])
                piece = a_args[start : start + _size(params[i])]
                out.append(anp.reshape(piece, onp.shape(getval(params[i]))))
        return tuple(out)

    return vjp


defvjp_argnums(_odeint, _odeint_vjp)


def _sensitivity_system(func, n, diff):
    """d/dt of [y, s]: s is the tangent of y; params then their tangents, positionally."""

    def fwd(z, t, *params_and_tangents):
        m = len(params_and_tangents) // 2
        params, ptans = list(params_and_tangents[:m]), params_and_tangents[m:]
        y, s = z[:n], z[n:]

        def f_of(ya):
            return _vec(func(ya[0], t, *_with(params, diff, ya[1:])))

        point = tuple([y] + [params[i] for i in diff])
        tangent = tuple([s] + [ptans[i] for i in diff])
        fy, jv = make_jvp(f_of, point)(tangent)
        return _concat([fy, jv])

    return fwd


def _zeros_like(x):
    return onp.zeros(onp.shape(getval(x)), dtype=float)


def _odeint_jvp(argnums, gs, ans, args, kwargs):
    func, y0, t = args[0], args[1], args[2]
    params = list(args[3:])
    opts = {k: v for k, v in kwargs.items() if k not in _PRIVATE_OPTIONS}
    n = _size(y0)
    nt = onp.shape(getval(t))[0]
    diff = _split_params(params)
    tangents = dict(zip(argnums, gs))
    v_y0 = _vec(tangents[1]) if 1 in tangents else onp.zeros(n)
    v_t = tangents.get(2)
    ptans = [tangents.get(3 + i, _zeros_like(p)) for i, p in enumerate(params)]
    F = anp.stack([_f_at(func, ans[i], t[i], params) for i in range(nt)]) if v_t is not None else None
    s0 = v_y0 if v_t is None else v_y0 - F[0] * v_t[0]
    if any(k >= 3 for k in tangents) or not _is_zero(s0):
        z0 = _concat([anp.reshape(y0, (-1,)), s0])
        Z = _odeint(_sensitivity_system(func, n, diff), z0, t, *(params + ptans), **opts)
        S = Z[:, n:]
    else:
        S = onp.zeros((nt, n))
    if v_t is not None:
        S = S + F * anp.reshape(v_t, (nt, 1))
    return anp.reshape(S, onp.shape(getval(ans)))


def _is_zero(x):
    return not isbox(x) and not onp.any(getval(x))


defjvp_argnums(_odeint, _odeint_jvp)


def _holds_box(x):
    if isbox(x):
        return True
    if isinstance(x, (list, tuple)):
        return any(_holds_box(e) for e in x)
    if isinstance(x, dict):
        return any(_holds_box(e) for e in x.values())
    return False


def _containers_flattened(args, func):
    """``args`` with each list, tuple or dict that holds traced values made one flat traced
    vector (the rules differentiate arrays), and ``func`` taking those back in their shape."""
    rebuild = {
        i: flatten(a) for i, a in enumerate(args) if isinstance(getval(a), (list, tuple, dict)) and _holds_box(a)
    }
    if not rebuild:
        return args, func
    user = func

    def func(y, t, *flat):
        return user(y, t, *[rebuild[i][1](a) if i in rebuild else a for i, a in enumerate(flat)])

    return tuple([rebuild[i][0] if i in rebuild else a for i, a in enumerate(args)]), func


def odeint(func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, tfirst=False, **kwargs):
    """scipy.integrate.odeint, differentiable w.r.t. ``y0``, ``t`` and ``args``.

    ``func(y, t, *args)`` (or ``func(t, y, *args)`` with ``tfirst=True``) must be written
    with fastgrad.numpy so that its own derivatives can be taken.

    Exponential decay ``dy/dt = -k y``, whose solution at ``t = 1`` is ``y0 exp(-k)``:

    >>> import fastgrad.numpy as np
    >>> from fastgrad import grad
    >>> from fastgrad.scipy.integrate import odeint
    >>> decay = lambda y, t, k: -k * y
    >>> t = np.array([0.0, 1.0])
    >>> y_end = lambda y0, k: odeint(decay, y0, t, args=(k,))[-1, 0]
    >>> bool(np.isclose(y_end(np.array([2.0]), 0.5), 2.0 * np.exp(-0.5)))
    True
    >>> dy0, dk = grad(y_end, argnum=(0, 1))(np.array([2.0]), 0.5)
    >>> bool(np.allclose(dy0, np.exp(-0.5))), bool(np.isclose(dk, -2.0 * np.exp(-0.5)))
    (True, True)
    """
    if isbox(args) and isinstance(getval(args), (tuple, list)):
        # the tuple itself differentiated (grad w.r.t. args): its elements, each traced
        args = tuple([args[i] for i in range(len(args))])
    elif not isinstance(args, tuple):
        args = tuple(args) if isinstance(args, list) else (args,)
    if tfirst:
        user = func

        def func(y, t, *a):
            return user(t, y, *a)

    if Dfun is not None:
        kwargs["Dfun"], kwargs["col_deriv"] = Dfun, col_deriv
    args, func = _containers_flattened(args, func)
    traced = isbox(y0) or isbox(t) or any(isbox(a) for a in args)
    if full_output:
        if traced:
            raise NotImplementedError(
                "odeint(full_output=True) is not differentiable; call it without full_output to differentiate"
            )
        return _si.odeint(func, y0, t, args=args, full_output=full_output, **kwargs)
    if not traced:
        return _si.odeint(func, y0, t, args=args, **kwargs)
    return _odeint(func, y0, t, *args, **kwargs)
