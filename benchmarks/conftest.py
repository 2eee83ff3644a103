"""pytest-benchmark setup: BLAS on one thread, benchmarks only when asked for.

OpenBLAS/MKL read their thread count when the library loads, so the environment is set here, at
conftest import, before the benchmark module imports NumPy; threadpoolctl (when installed) also
limits an already-loaded BLAS.
"""

import os
import sys
import warnings

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

for _var in (
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OMP_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
):
    os.environ[_var] = "1"

sys.path.insert(0, HERE)  # workloads, hand, _impls


@pytest.fixture(scope="session", autouse=True)
def _one_blas_thread():
    # NumPy may have been loaded (by tests/conftest.py) before the variables above were set.
    from _impls import pin_blas_to_one_thread

    if pin_blas_to_one_thread() not in (1, None):
        warnings.warn("could not pin BLAS to one thread", stacklevel=2)
    yield


def pytest_collection_modifyitems(config, items):
    # Benchmarks are slow (W5 under autograd is ~3 s a call): run them only when benchmarks/ (or
    # a file in it) is named on the command line, never as part of a plain `pytest` run.
    if any(_inside(str(a).split("::")[0]) for a in config.args):
        return
    skip = pytest.mark.skip(reason="benchmark: run with `pytest benchmarks/`")
    for item in items:
        if _inside(str(item.fspath)):
            item.add_marker(skip)


def _inside(path):
    path = os.path.abspath(path)
    return path == HERE or path.startswith(HERE + os.sep)
