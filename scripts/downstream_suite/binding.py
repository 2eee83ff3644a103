"""pytest plugin for a downstream library's test suite: checks, when pytest starts and again when
it ends (in every xdist worker too), that every ``autograd`` module imported is the library asked
for (DOWNSTREAM_AUTODIFF=fastgrad or autograd).  The binding itself is made at interpreter start
by the venv's ``fastgrad_binding.pth`` (downstream_suite.sh writes it), so that pytest's workers
and the process pools a library starts are bound as well.

Load it with ``-p binding``, this directory and scripts/ (autograd_binding.py) on PYTHONPATH."""

import os

from autograd_binding import check_binding

MODE = os.environ.get("DOWNSTREAM_AUTODIFF", "autograd")


def pytest_configure(config):
    import autograd.numpy  # noqa: F401  (what the libraries import first)

    check_binding(MODE, "at start")


def pytest_sessionfinish(session, exitstatus):
    check_binding(MODE, "at the end")
