"""One implementation, one workload, one process: ``python worker.py IMPL WORKLOAD SUMMARY.npz``.

IMPL is ``autograd`` (the real autograd 1.9.1) or ``fastgrad`` (``fastgrad.install_as_autograd()``
called before the library is imported).  The worker binds, imports the workload's library, checks
that every ``autograd`` module the library got is the intended implementation, runs one fit (its
summary saved for the agreement check), then serves the parent's commands, one JSON object per
line: ``{"cmd": "warmup"}``, ``{"cmd": "round", "min_time": s}`` (fits repeated for at least
``min_time`` seconds, at least one; the time per fit is total / fits), ``{"cmd": "quit"}``.
A fit that raises is reported as ``{"error": ..., "traceback": ...}`` and the worker exits.
"""

import json
import os
import sys
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
IMPLS = ("autograd", "fastgrad")


def bind(impl):
    """Bind ``autograd`` to the implementation before any library imports it."""
    if impl not in IMPLS:
        raise SystemExit(f"unknown implementation {impl!r}: expected one of {IMPLS}")
    if any(name == "autograd" or name.startswith("autograd.") for name in sys.modules):
        raise RuntimeError("autograd was imported before the binding was chosen")
    if impl == "fastgrad":
        import fastgrad

        fastgrad.install_as_autograd()


def check_binding(impl):
    """Every module named ``autograd...`` in this process is the intended implementation."""
    wrong = [
        name
        for name, mod in sys.modules.items()
        if (name == "autograd" or name.startswith("autograd."))
        and mod is not None
        and getattr(mod, "__name__", "").startswith("fastgrad") != (impl == "fastgrad")
    ]
    if wrong:
        raise RuntimeError(f"autograd modules not bound to {impl}: {wrong}")


def versions(impl):
    import numpy
    import scipy

    out = {"python": sys.version.split()[0], "numpy": numpy.__version__, "scipy": scipy.__version__}
    if impl == "fastgrad":
        import fastgrad

        out["fastgrad"] = fastgrad.__version__
        out["compiled"] = bool(fastgrad.COMPILED)
    else:
        from importlib.metadata import version

        out["autograd"] = version("autograd")
    for dist in ("lifelines", "pymanopt", "autograd-gamma"):
        try:
            from importlib.metadata import version

            out[dist] = version(dist)
        except Exception:
            pass
    return out


def pin_blas():
    try:
        from threadpoolctl import threadpool_info, threadpool_limits

        threadpool_limits(1)
        return max((p.get("num_threads", 1) for p in threadpool_info()), default=1)
    except ImportError:
        return None


def error_reply(exc):
    tb = traceback.extract_tb(exc.__traceback__)
    frames = [
        f"{os.path.relpath(f.filename) if 'site-packages' not in f.filename else f.filename.split('site-packages/')[1]}:{f.lineno} {f.name}"
        for f in tb[-6:]
    ]
    return {"error": f"{type(exc).__name__}: {exc}", "traceback": frames}


def serve(impl, workload_name, summary_path):
    proto = os.fdopen(os.dup(1), "w", buffering=1)  # replies only; stray prints go to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(**msg):
        proto.write(json.dumps(msg) + "\n")

    warnings.simplefilter("ignore")  # lifelines' convergence and deprecation chatter
    sys.path.insert(0, HERE)
    import gc

    import numpy as np

    bind(impl)
    import workloads

    try:
        blas_threads = pin_blas()
        fit, summary = workloads.BY_NAME[workload_name].setup()
        check_binding(impl)
        t0 = time.perf_counter()
        result = fit()
        first = time.perf_counter() - t0
        np.savez(summary_path, **summary(result))
        del result
        check_binding(impl)
    except Exception as exc:
        reply(**error_reply(exc))
        return
    reply(ready=True, first_fit=first, versions=versions(impl), blas_threads=blas_threads, gc=gc.isenabled())

    for line in sys.stdin:
        msg = json.loads(line)
        cmd = msg["cmd"]
        try:
            if cmd == "warmup":
                fit()
                reply(warm=True)
            elif cmd == "round":
                gc.collect()
                n, t0 = 0, time.perf_counter()
                while True:
                    fit()
                    n += 1
                    elapsed = time.perf_counter() - t0
                    if elapsed >= msg["min_time"]:
                        break
                reply(per_fit=elapsed / n, fits=n)
            elif cmd == "quit":
                reply(bye=True)
                return
        except Exception as exc:
            reply(**error_reply(exc))
            return


if __name__ == "__main__":
    serve(*sys.argv[1:4])
