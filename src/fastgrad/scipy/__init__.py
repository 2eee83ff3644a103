"""fastgrad.scipy: differentiable SciPy functions (needs SciPy: ``pip install fastgrad[scipy]``).

Submodules: ``special``, ``stats`` (one module per distribution), ``signal``, ``linalg`` and
``integrate``.  Every function has reverse-mode (VJP) and forward-mode (JVP) rules written
with traced fastgrad functions, so derivatives of derivatives work too; see
docs/coverage_scipy.md for the argument coverage of each function.
"""

try:
    import scipy as _scipy
    import scipy.special as _scipy_special
except ImportError as _err:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "fastgrad.scipy needs SciPy, which is not installed. Install the optional extra with "
        "`pip install fastgrad[scipy]` (or `pip install scipy`). The rest of fastgrad "
        "(fastgrad, fastgrad.numpy, fastgrad.misc) works without it."
    ) from _err

from . import special, stats, signal, linalg, integrate

__all__ = ["special", "stats", "signal", "linalg", "integrate"]
