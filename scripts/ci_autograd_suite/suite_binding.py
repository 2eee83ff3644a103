"""pytest plugin for running autograd's own test suite on autograd or on fastgrad.

AUTOGRAD_SUITE_IMPL=fastgrad binds ``autograd`` to fastgrad (``fastgrad.install_as_autograd()``)
before the suite imports it; AUTOGRAD_SUITE_IMPL=autograd (the default) keeps the real autograd.
The binding is checked when pytest starts and again at the end over every ``autograd`` module
imported by then (scripts/autograd_binding.py).

Under fastgrad, the tests listed in AUTOGRAD_SUITE_DIFFERENCES (differences.txt: where fastgrad
differs from autograd on purpose) are marked strict xfail with the listed reason: each must still
fail, so the list cannot go stale, and a listed test missing from a file that ran is an error.
Every other test must pass: a skip fails the run too (autograd's suite skips nothing under autograd
itself, so a skip under fastgrad would be a check not made).

Load it with ``-p suite_binding``, this directory and scripts/ on PYTHONPATH.
"""

import os

import pytest

from autograd_binding import check_binding, is_fastgrad

MODE = os.environ.get("AUTOGRAD_SUITE_IMPL", "autograd")
if MODE not in ("autograd", "fastgrad"):
    raise SystemExit(f"AUTOGRAD_SUITE_IMPL must be 'autograd' or 'fastgrad', not {MODE!r}")


def read_differences(path):
    """{nodeid: reason} from lines 'nodeid  # reason' ('#' lines are comments)."""
    listed = {}
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                nodeid, _, reason = line.rstrip("\n").partition("  # ")
                listed[nodeid.strip()] = reason.strip()
    return listed


def pytest_configure(config):
    if MODE == "fastgrad":
        import fastgrad

        fastgrad.install_as_autograd()
    import autograd.numpy

    check_binding(MODE, "at start")
    assert is_fastgrad(autograd.numpy) == (MODE == "fastgrad")


def pytest_report_header(config):
    import autograd

    if MODE == "fastgrad":
        import fastgrad

        return [f"autograd bound to fastgrad {fastgrad.__version__} (compiled={fastgrad.COMPILED})"]
    return [f"autograd: the real autograd {getattr(autograd, '__version__', '?')} ({autograd.__file__})"]


def pytest_collection_modifyitems(session, config, items):
    path = os.environ.get("AUTOGRAD_SUITE_DIFFERENCES")
    if MODE != "fastgrad" or not path:
        return
    listed = read_differences(path)
    for item in items:
        if item.nodeid in listed:
            item.add_marker(
                pytest.mark.xfail(strict=True, reason="fastgrad differs on purpose: " + listed[item.nodeid])
            )
    collected = {item.nodeid for item in items}
    files = {nodeid.split("::")[0] for nodeid in collected}
    unknown = sorted(n for n in listed if n not in collected and n.split("::")[0] in files)
    if unknown:
        raise pytest.UsageError(f"{path} lists tests the suite does not have: " + "; ".join(unknown))


_skipped = []


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    check_binding(MODE, "at the end of the session")
    if _skipped and session.exitstatus == 0:
        print(f"\n{len(_skipped)} tests skipped, which counts as failing here: " + "; ".join(_skipped[:10]))
        session.exitstatus = 1
