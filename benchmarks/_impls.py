"""Shared by run.py and the pytest-benchmark file: the implementations and the correctness check.

Nothing here imports an autodiff library at module level: a timing process must import exactly
one, so ``gradient_call`` imports it on demand.
"""

from importlib import metadata

import numpy as onp

import asv_scenarios
import peers
import workloads
from hand import HAND as _HAND_W

HAND = {**_HAND_W, **asv_scenarios.HAND, **{v: _HAND_W[w] for v, w in workloads.VARIANTS.items()}}
# Every case the harnesses know, in report order: PERF.md's W1-W9, their fastgrad variants,
# autograd's asv scenarios, the scaling chain.  make_case(cid, np) -> (fun, args, argnum) for any.
CASES = tuple(workloads.WORKLOADS) + tuple(workloads.VARIANTS) + asv_scenarios.ASV + asv_scenarios.SCALING

TOLERANCE = 1e-10  # PERF.md: every benchmark checks its gradient against autograd's to this

# "fastgrad-compiled" and "fastgrad-pure" are one library with two engines; which one is loaded is
# decided by FASTGRAD_PURE in the environment before `import fastgrad` (run.py sets it per worker).
IMPLS = ("hand", "fastgrad-compiled", "fastgrad-pure", "autograd")


def leaves(g):
    """The arrays of a gradient (a scalar, an array, or nested lists/tuples/dicts of them)."""
    if isinstance(g, (list, tuple)):
        return [a for item in g for a in leaves(item)]
    if isinstance(g, dict):
        return [a for k in sorted(g) for a in leaves(g[k])]
    return [onp.asarray(g)]


def max_rel_err(g, ref):
    """Largest, over the leaves, of max|g - ref| / max|ref|: a norm-wise relative error, so a
    component that is zero in the reference does not blow it up.  inf if the structure differs."""
    a, b = leaves(g), leaves(ref)
    if len(a) != len(b):
        return float("inf")
    worst = 0.0
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return float("inf")
        if x.size == 0:
            continue
        scale = float(onp.max(onp.abs(y)))
        diff = float(onp.max(onp.abs(x - y)))
        if not onp.isfinite(diff):
            return float("inf")
        worst = max(worst, diff / scale if scale > 0 else diff)
    return worst


def load_autodiff(impl):
    """(array module, grad, info) of an autodiff implementation, importing only that library."""
    if impl == "autograd":
        import autograd
        import autograd.numpy as np
        from autograd import grad

        return np, grad, {"version": _version(autograd)}
    if impl.startswith("fastgrad"):
        import fastgrad
        import fastgrad.numpy as np
        from fastgrad import grad

        compiled = bool(fastgrad.COMPILED)
        if impl == "fastgrad-compiled" and not compiled:
            raise RuntimeError(
                "fastgrad-compiled was asked for but fastgrad.COMPILED is False "
                "(extension not built, or FASTGRAD_PURE set)"
            )
        if impl == "fastgrad-pure" and compiled:
            raise RuntimeError("fastgrad-pure was asked for but the compiled engine is in use (set FASTGRAD_PURE=1)")
        return np, grad, {"version": _version(fastgrad), "compiled": compiled}
    raise ValueError(f"not an autodiff implementation: {impl}")


def pin_blas_to_one_thread():
    """Limit an already-loaded BLAS to one thread; returns how many threads it now reports (None if
    unknown).  The environment variables set before NumPy's import do this too; this covers a NumPy
    imported earlier (e.g. by tests/conftest.py) and checks the result."""
    try:
        from threadpoolctl import threadpool_info, threadpool_limits

        threadpool_limits(1)
        return max((p["num_threads"] for p in threadpool_info()), default=None)
    except ImportError:
        pass
    # Without threadpoolctl: the OpenBLAS bundled in NumPy's wheels (numpy.libs/) exports a setter.
    import ctypes
    import glob
    import os

    libs = os.path.join(os.path.dirname(onp.__file__), os.pardir, "numpy.libs", "*openblas*")
    for path in glob.glob(libs):
        lib = ctypes.CDLL(path)
        for suffix in ("64_", "_64_", ""):
            setter = getattr(lib, "scipy_openblas_set_num_threads" + suffix, None)
            getter = getattr(lib, "scipy_openblas_get_num_threads" + suffix, None)
            if setter and getter:
                setter(1)
                return getter()
    return None


def _version(module):
    try:
        return module.__version__
    except AttributeError:
        try:
            return metadata.version(module.__name__)
        except metadata.PackageNotFoundError:
            return "?"


def make_case(cid, np):
    """(fun, args, argnum) of case ``cid`` (a workload or an asv_scenarios scenario)."""
    if cid in workloads.FUNCTIONS:
        return workloads.make_case(cid, np)
    if cid in workloads.VARIANTS:
        return workloads.make_case(workloads.VARIANTS[cid], np)
    return asv_scenarios.make_case(cid, np)


def case_inputs(cid):
    """The inputs of case ``cid`` as NumPy arrays and floats (fresh ones: the same seed each time),
    for implementations that convert them to their own types (peers/)."""
    return make_case(cid, onp)[1]


def fastgrad_label():
    """'fastgrad-compiled' or 'fastgrad-pure', from the engine this process actually loaded."""
    import fastgrad

    return "fastgrad-compiled" if fastgrad.COMPILED else "fastgrad-pure"


def gradient_call(impl, wid):
    """(call, info): ``call()`` computes case ``wid``'s gradient with implementation ``impl``
    on inputs built once here.  ``impl`` "numpy-forward" is the control: the plain forward only."""
    if impl == "hand":
        args = make_case(wid, onp)[1]
        f = HAND[wid]
        return (lambda: f(*args)), {}
    if impl == "numpy-forward":
        fun, args, _ = make_case(wid, onp)
        return (lambda: fun(*args)), {}
    if impl in peers.PEERS:
        if wid not in peers.CASES:
            raise ValueError(f"{impl} does not implement case {wid}")
        return peers.gradient_call(impl, wid)
    np, grad, info = load_autodiff(impl)
    fun, args, argnum = make_case(wid, np)
    g = grad(fun, argnum)
    if wid in workloads.VARIANTS and impl.startswith("fastgrad"):
        import fastgrad

        def recomputing():
            with fastgrad.recompute():
                return g(*args)

        return recomputing, info
    return (lambda: g(*args)), info


def save_gradient(path, g):
    onp.savez(path, *leaves(g))


def load_gradient(path):
    with onp.load(path) as z:
        return [z[f"arr_{i}"] for i in range(len(z.files))]
