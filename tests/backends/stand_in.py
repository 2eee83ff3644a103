"""The CuPy stand-in (fake_cupy, fake_cupyx) made known to fastgrad's backend registry.

fastgrad recognises CuPy by its module name (``cupy``, with ``cupyx.scatter_add``); the
stand-in has CuPy's API under another name, so the tests tell the registry to treat it as it
treats CuPy.  Users register nothing: Dask and CuPy are known to the registry.
"""

import sys

from fastgrad import _backends


def make_known():
    import fake_cupy

    _backends.add_library(
        "fake_cupy", lambda: _backends.CupyBackend("fakecupy", sys.modules["fake_cupy"], "fake_cupyx")
    )
    assert _backends.backend_of(fake_cupy.zeros(1)).name == "fakecupy"
