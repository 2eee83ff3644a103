"""fastgrad's rule-case tables, gathered from the test modules that own them.

Every case is ``fun(np, *args)`` written against an array module (the tables were written
that way so that the same code runs on fastgrad.numpy and autograd.numpy); here it runs
on fastgrad.numpy with the arguments on another backend.  The tables are imported, not
copied: a case added to tests/test_numpy_grads.py (or the others) is rerun here too.

* test_numpy_grads.ALL_CASES   ("grads:<name>")
* test_numpy_jvps.ALL_CASES    ("jvps:<name>")
* test_linalg.L_CASES          ("linalg:<name>-<real|complex>")
* test_fft.CASES               ("fft:<name>-<kind>-<norm>", norms None and "ortho")
* test_scipy_special.UNARY / BINARY ("special:<name>-<i>")
"""

import functools
import importlib
import types

import numpy as onp

from numpy_versions import has_numpy


class BackendCase:
    """One case: ``fun(np, *args)`` differentiated w.r.t. ``argnums``."""

    def __init__(self, id, fun, args, argnums=None):
        self.id, self.fun, self.args = id, fun, tuple(args)
        if argnums is None:
            argnums = [i for i, a in enumerate(self.args) if _differentiable(a)]
        elif isinstance(argnums, int):
            argnums = [argnums]
        self.argnums = list(argnums)

    def __repr__(self):
        return "BackendCase(%s)" % self.id


def _differentiable(x):
    if isinstance(x, (list, tuple)):
        return bool(x) and all(_differentiable(v) for v in x)
    if isinstance(x, (bool, int)) or x is None:
        return False
    if isinstance(x, (float, complex)):
        return True
    return isinstance(x, (onp.ndarray, onp.generic)) and x.dtype.kind in "fc"


def _grads_cases():
    mod = importlib.import_module("test_numpy_grads")
    for c in mod.ALL_CASES:
        yield BackendCase("grads:" + c.name, c.fun, c.args, c.argnums)


def _jvps_cases():
    mod = importlib.import_module("test_numpy_jvps")
    for c in mod.ALL_CASES:
        yield BackendCase("jvps:" + c.name, c.fun, c.args, c.argnums)


NEED_NEWER_NUMPY = set()  # the ids of the cases left out for the installed NumPy


def _linalg_cases():
    mod = importlib.import_module("test_linalg")
    for c in mod.L_CASES:
        if not has_numpy(c.numpy):  # (test_linalg reports them as skipped)
            NEED_NEWER_NUMPY.update("linalg:%s-%s" % (c.name, kind) for kind in c.kinds)
            continue
        for kind in c.kinds:
            fun = (lambda c: lambda np, *a: mod.pack(np, c.fun(np, *a)))(c)
            yield BackendCase("linalg:%s-%s" % (c.name, kind), fun, mod._args(c, kind), c.argnum)


def _fft_cases():
    mod = importlib.import_module("test_fft")
    for name, fun, shape, kinds in mod.CASES:
        for kind in kinds:
            for norm in (None, "ortho"):
                x = mod.make(kind, 1)(*shape)
                f = (lambda fun, norm: lambda np, x: fun(np, x, norm))(fun, norm)
                yield BackendCase("fft:%s-%s-%s" % (name, kind, norm), f, (x,))


def _special_cases():
    try:
        mod = importlib.import_module("test_scipy_special")
    except Exception:  # scipy absent: the module skips itself
        return
    special = importlib.import_module("fastgrad.scipy.special")
    for i, (name, x) in enumerate(mod.UNARY):
        fun = (lambda name: lambda np, x: getattr(special, name)(x))(name)
        yield BackendCase("special:%s-%d" % (name, i), fun, (x,))
    for i, (name, args, argnums) in enumerate(mod.BINARY):
        fun = (lambda name: lambda np, *a: getattr(special, name)(*a))(name)
        yield BackendCase("special:%s-b%d" % (name, i), fun, args, argnums)


def all_cases():
    out = []
    for gen in (_grads_cases, _jvps_cases, _linalg_cases, _fft_cases, _special_cases):
        out.extend(gen())
    ids = [c.id for c in out]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return out


# ---------------------------------------------------------------------------------------
# Moving a case's own NumPy constants (its closure cells) to a backend that refuses NumPy
# operands: a cond mask or a constant matrix the case closes over would be a device array
# in a program written for that device.  Integer arrays stay NumPy: they are indices.


def _movable(x):
    return isinstance(x, onp.ndarray) and x.dtype.kind in "fcb"


def rebind_constants(fun, put, _seen=None):
    """``fun`` with its float/complex/bool NumPy closure constants replaced by ``put(c)``
    (through nested closures and functools.partial)."""
    if isinstance(fun, functools.partial):
        return functools.partial(rebind_constants(fun.func, put), *fun.args, **fun.keywords)
    if not isinstance(fun, types.FunctionType) or not fun.__closure__:
        return fun
    cells = []
    changed = False
    for cell in fun.__closure__:
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell (a name assigned later)
            cells.append(cell)
            continue
        if _movable(v):
            cells.append(types.CellType(put(v)))
            changed = True
        elif isinstance(v, (types.FunctionType, functools.partial)):
            new = rebind_constants(v, put)
            changed = changed or new is not v
            cells.append(types.CellType(new) if new is not v else cell)
        else:
            cells.append(cell)
    if not changed:
        return fun
    new = types.FunctionType(fun.__code__, fun.__globals__, fun.__name__, fun.__defaults__, tuple(cells))
    new.__kwdefaults__ = fun.__kwdefaults__
    return new
