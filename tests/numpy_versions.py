"""The installed NumPy's version, for the tests of functions and behaviours that only newer
NumPy has (fastgrad supports NumPy >= 1.25, and differentiates what the installed NumPy has).

A case that needs a newer NumPy is skipped with the version it needs in the reason, never
dropped silently; CI runs the whole suite on the newest NumPy and again on the oldest supported one
(scripts/ci_oldest_numpy.sh)."""

import re

import numpy as onp
import pytest

NUMPY = tuple(int(p) for p in re.match(r"(\d+)\.(\d+)", onp.__version__).groups())


def has_numpy(version):
    """Whether the installed NumPy is ``version`` (major, minor) or newer."""
    return version is None or NUMPY >= tuple(version)


def needs_numpy(version):
    """A mark that skips a test where the installed NumPy is older than ``version``."""
    return pytest.mark.skipif(
        not has_numpy(version), reason="needs NumPy >= {}.{} (installed: {})".format(*version, onp.__version__)
    )
