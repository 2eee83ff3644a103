"""The process that profile_split.py samples: ``python profile_target.py MODE WORKLOAD SECONDS OUT.json``.

MODE ``autograd`` or ``fastgrad``: bind, set the workload up, fit once (imports, lazily built
tables), write OUT.json.ready (profile_split.py then attaches py-spy to this process), then call
``profiled_fits`` until SECONDS have passed, timing the garbage collector's passes meanwhile.  MODE ``count``: fastgrad with the pure-Python engine and none of its
compiled modules (a copy of the package without its .so files goes first on sys.path), so cProfile
sees every engine function, run for a few fits: calls per fit of the engine's steps.  The engines
share their algorithms, so those counts are the compiled engine's too.
"""

import json
import os
import shutil
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def profiled_fits(fit, seconds, min_fits=1):
    """Fits for ``seconds`` (at least ``min_fits``); also the time spent in garbage collections."""
    import gc

    gc_time, started = [0.0], [0.0]

    def on_gc(phase, info):
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            gc_time[0] += time.perf_counter() - started[0]

    gc.callbacks.append(on_gc)
    n, t0 = 0, time.perf_counter()
    while n < min_fits or time.perf_counter() - t0 < seconds:
        fit()
        n += 1
    elapsed = time.perf_counter() - t0
    gc.callbacks.remove(on_gc)
    return n, elapsed, gc_time[0]


def pure_copy_of_fastgrad():
    """A copy of the installed fastgrad package without its compiled modules, first on sys.path."""
    import importlib.util

    src = os.path.dirname(importlib.util.find_spec("fastgrad").origin)
    dest = os.path.join(tempfile.mkdtemp(prefix="fastgrad-pure-"), "fastgrad")
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__", "*.pyd"))
    sys.path.insert(0, os.path.dirname(dest))
    os.environ["FASTGRAD_PURE"] = "1"
    os.environ.pop("FASTGRAD_REQUIRE_EXTENSIONS", None)
    return dest


# What the counting run reports: (label, file suffix, function name) of pure-Python functions.
COUNTED = [
    ("primitive calls (wrapped NumPy/SciPy functions called, traced or not)", "_core_py.py", "__call__", "Primitive"),
    ("nodes recorded (traced primitive calls)", "_core_py.py", "__init__", "VJPNode"),
    ("traces opened (one per differentiation)", "_core_py.py", "trace", None),
    ("backward passes", "_core_py.py", "backward_pass", None),
    ("nodes pulled back", "_core_py.py", "_node_vjp", None),
    ("rule applications (one per node and argument)", "_core_py.py", "one", "VJPRule"),
    ("vspace() lookups", "core.py", "vspace", None),
    ("grad calls", "differential_operators.py", "grad", None),
    ("value_and_grad calls", "differential_operators.py", "value_and_grad", None),
    ("elementwise_grad calls", "differential_operators.py", "elementwise_grad", None),
    ("jacobian calls", "differential_operators.py", "jacobian", None),
    ("hessian calls", "differential_operators.py", "hessian", None),
    ("make_vjp calls (differential_operators)", "differential_operators.py", "make_vjp", None),
    ("make_jvp_reversemode calls", "differential_operators.py", "make_jvp_reversemode", None),
    ("unbroadcast calls (rule helper)", "numpy_vjps.py", "unbroadcast", None),
    ("ArrayBox.__array_ufunc__ calls (np.* ufunc on a box)", "numpy_boxes.py", "__array_ufunc__", None),
    ("container box / container vspace calls (builtins.py)", "builtins.py", "*", None),
]


def count_calls(fit, fits):
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(fits):
        fit()
    prof.disable()
    stats = pstats.Stats(prof).stats  # (file, line, name) -> (cc, nc, tt, ct, callers)
    counts = {}
    for label, suffix, name, cls in COUNTED:
        total = 0
        for (file, line, fname), (_cc, nc, _tt, _ct, _callers) in stats.items():
            if not file.endswith(suffix) or (name != "*" and fname != name):
                continue
            if cls is not None and not _defined_in_class(file, line, cls):
                continue
            total += nc
        counts[label] = total / fits
    # Every pure-fastgrad function, for the ranked list: calls per fit.
    per_function = {}
    for (file, _line, fname), (_cc, nc, _tt, _ct, _callers) in stats.items():
        if "/fastgrad/" in file:
            key = f"{file.split('/fastgrad/')[-1]}:{fname}"
            per_function[key] = per_function.get(key, 0) + nc / fits
    return counts, per_function


_class_lines = {}


def _defined_in_class(file, line, cls):
    """Whether the function starting at ``line`` of ``file`` sits in ``class cls``."""
    if file not in _class_lines:
        import ast

        with open(file) as f:
            tree = ast.parse(f.read())
        spans = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                spans.setdefault(node.name, []).append((node.lineno, node.end_lineno))
        _class_lines[file] = spans
    return any(a <= line <= b for a, b in _class_lines[file].get(cls, []))


def main(mode, workload, seconds, out_path):
    warnings.simplefilter("ignore")
    import worker

    if mode == "count":
        pure_copy_of_fastgrad()
        worker.bind("fastgrad")
        import fastgrad

        assert not fastgrad.COMPILED and "/fastgrad-pure-" in fastgrad.__file__, fastgrad.__file__
    else:
        worker.bind(mode)
    worker.pin_blas()
    import workloads

    fit, _ = workloads.BY_NAME[workload].setup()
    worker.check_binding("autograd" if mode == "autograd" else "fastgrad")
    t0 = time.perf_counter()
    fit()
    first = time.perf_counter() - t0
    out = {"mode": mode, "workload": workload, "first_fit": first}
    if mode == "count":
        fits = max(1, min(3, int(float(seconds) / max(first, 1e-3))))
        out["fits"] = fits
        out["counts"], out["per_function"] = count_calls(fit, fits)
    else:
        # Tell the parent the process is set up, so the sampler attaches now: only fits get sampled.
        with open(out_path + ".ready", "w") as f:
            f.write(str(os.getpid()))
        out["fits"], out["seconds"], out["gc_seconds"] = profiled_fits(fit, float(seconds))
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(*sys.argv[1:5])
