"""Shared fixtures for the fastgrad test suite.

The module under test is switchable: ``FG_TEST_TARGET=autograd pytest tests/`` runs the
suite against HIPS autograd instead of fastgrad.  That validates the tests themselves
against the reference implementation.  Tests of behaviour where fastgrad deliberately
differs from (improves on) autograd carry the ``fastgrad_only`` marker and are skipped
under that switch.

Fixtures: ``ag`` (the top-level package under test), ``np`` (its numpy wrapper),
``rng`` (a freshly seeded ``numpy.random.RandomState``), ``ref`` (autograd, for
side-by-side comparisons; skips cleanly when autograd is not installed).
"""

import importlib
import os
import sys
import types
from pathlib import Path

import numpy as onp
import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_DIR = TESTS_DIR.parent
# Make the helper modules of tests/ (gradcheck) and the workload definitions of
# benchmarks/ importable whatever pytest's import mode and rootdir are.
for _p in (TESTS_DIR, REPO_DIR / "benchmarks"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

TARGET = os.environ.get("FG_TEST_TARGET", "fastgrad").strip().lower() or "fastgrad"
if TARGET not in ("fastgrad", "autograd"):
    raise RuntimeError(f"FG_TEST_TARGET must be 'fastgrad' or 'autograd', not {TARGET!r}")
UNDER_AUTOGRAD = TARGET == "autograd"


def import_target(submodule=""):
    """Import ``<target>`` or ``<target>.<submodule>`` (target = fastgrad or autograd)."""
    name = TARGET + ("." + submodule if submodule else "")
    return importlib.import_module(name)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "fastgrad_only: behaviour where fastgrad differs from autograd on purpose "
        "(skipped when FG_TEST_TARGET=autograd)",
    )
    config.addinivalue_line("markers", "slow: a test that takes more than a few seconds (still runs by default)")


def pytest_collection_modifyitems(config, items):
    if not UNDER_AUTOGRAD:
        return
    skip = pytest.mark.skip(reason="fastgrad-only behaviour (FG_TEST_TARGET=autograd)")
    for item in items:
        if item.get_closest_marker("fastgrad_only") is not None:
            item.add_marker(skip)


def pytest_report_header(config):
    return f"fastgrad tests: target={TARGET}"


@pytest.fixture(scope="session")
def ag():
    """The package under test (``fastgrad``, or ``autograd`` under the switch)."""
    return import_target()


@pytest.fixture(scope="session")
def np():
    """The traced numpy of the package under test."""
    return import_target("numpy")


@pytest.fixture
def rng():
    """A seeded RandomState, fresh for every test."""
    return onp.random.RandomState(0)


def load_reference():
    """autograd as a namespace (grad, make_vjp, ..., np=autograd.numpy), or None."""
    try:
        autograd = importlib.import_module("autograd")
        anp = importlib.import_module("autograd.numpy")
    except ImportError:
        return None
    ns = types.SimpleNamespace(**{n: getattr(autograd, n) for n in dir(autograd) if not n.startswith("_")})
    ns.np = anp
    ns.module = autograd
    return ns


@pytest.fixture(scope="session")
def ref():
    """autograd (the oracle) for side-by-side comparisons; skips the test if absent."""
    pytest.importorskip("autograd")
    return load_reference()


@pytest.fixture(autouse=True)
def _seed_global_numpy_rng():
    """check_grads draws its random directions from numpy's global generator: seed it per
    test so each test sees the same directions whatever ran before it."""
    onp.random.seed(0)
    yield
