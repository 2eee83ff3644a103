"""pytest plugin for running lifelines' test suite on one autodiff implementation.

LIFELINES_AUTODIFF=fastgrad binds ``autograd`` to fastgrad (``fastgrad.install_as_autograd()``)
before anything imports lifelines; LIFELINES_AUTODIFF=autograd (the default) keeps the real
autograd 1.9.1.  Either way the binding is asserted twice: when pytest starts, and at the end of
the session over every ``autograd`` module that lifelines (and autograd-gamma) actually imported,
so a run can never silently measure the wrong library.

NumPy's global random generator and Python's ``random`` are seeded before every test (from the
test's id, so each test gets its own stream, the same in every run): many of lifelines' tests draw
unseeded random data, and a comparison of two runs is only meaningful when both see the same data.  LIFELINES_SEED=none
turns that off.

LIFELINES_RESULTS=path.json writes each test's outcome (passed, failed, skipped, xfailed,
xpassed; an error in setup or teardown counts as failed, and so does a strict xfail that passed),
the first line of its error or skip reason, and its duration (setup + call + teardown), for
compare.py; path.json.partial gets one line per finished test as the run goes, so a run that is
killed still leaves its outcomes.

Load it with ``-p autodiff_binding``, this directory and scripts/ (autograd_binding.py) on PYTHONPATH.
"""

import json
import os
import sys
import time
import zlib

from autograd_binding import check_binding, is_fastgrad

MODE = os.environ.get("LIFELINES_AUTODIFF", "autograd")
if MODE not in ("autograd", "fastgrad"):
    raise SystemExit(f"LIFELINES_AUTODIFF must be 'autograd' or 'fastgrad', not {MODE!r}")


def _check_binding(where):
    check_binding(MODE, where)


def pytest_configure(config):
    if any(name == "lifelines" or name.startswith("lifelines.") for name in sys.modules):
        raise RuntimeError("lifelines was imported before the autodiff binding plugin ran")
    if MODE == "fastgrad":
        import fastgrad

        fastgrad.install_as_autograd()
    import autograd
    import autograd.numpy

    _check_binding("at start")
    assert is_fastgrad(autograd.numpy) == (MODE == "fastgrad")


SEED = os.environ.get("LIFELINES_SEED", "0")


def pytest_runtest_setup(item):
    if SEED != "none":
        import random

        import numpy as np

        seed = (zlib.crc32(item.nodeid.encode()) + int(SEED)) % 2**32
        np.random.seed(seed)
        random.seed(seed)


def pytest_report_header(config):
    import autograd

    if MODE == "fastgrad":
        import fastgrad

        line = f"autograd bound to fastgrad {fastgrad.__version__} (compiled={fastgrad.COMPILED}, {fastgrad.__file__})"
    else:
        line = f"autograd: the real autograd {getattr(autograd, '__version__', '?')} ({autograd.__file__})"
    return [line, f"numpy's global RNG seeded per test: {SEED}"]


_results = {}
_started = time.perf_counter()


def _message(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return text.strip().splitlines()[0][:300] if text.strip() else ""


def pytest_runtest_logreport(report):
    entry = _results.setdefault(report.nodeid, {"outcome": "passed", "duration": 0.0, "message": ""})
    entry["duration"] += report.duration
    if report.failed and entry["outcome"] != "failed":
        entry["outcome"], entry["message"] = "failed", f"[{report.when}] " + _message(report)
    elif report.when == "call" and hasattr(report, "wasxfail"):
        entry["outcome"] = "xfailed" if report.skipped else "xpassed"
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "skipped"
        if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            entry["message"] = str(report.longrepr[2])[:200]
    if report.when == "teardown":
        path = os.environ.get("LIFELINES_RESULTS")
        if path:
            with open(path + ".partial", "a") as f:
                f.write(json.dumps({"nodeid": report.nodeid, **entry}) + "\n")


def pytest_collectreport(report):
    if report.failed:  # a module that does not even import
        _results[report.nodeid] = {"outcome": "failed", "duration": 0.0, "message": "[collect] " + _message(report)}


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("LIFELINES_RESULTS")
    if path:
        with open(path, "w") as f:
            import resource

            usage = resource.getrusage(resource.RUSAGE_SELF)
            cpu = usage.ru_utime + usage.ru_stime  # single-threaded (BLAS pinned): the wall time of a quiet machine
            json.dump(
                {"mode": MODE, "wall_time": time.perf_counter() - _started, "cpu_time": cpu, "tests": _results},
                f,
                indent=0,
            )
    _check_binding("at the end of the session")
    lifelines_np = getattr(sys.modules.get("lifelines.fitters"), "anp", None)
    if lifelines_np is not None and is_fastgrad(lifelines_np) != (MODE == "fastgrad"):
        raise RuntimeError(f"lifelines.fitters.anp is {lifelines_np.__name__}, expected {MODE}")
