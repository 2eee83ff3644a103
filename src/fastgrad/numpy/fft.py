"""fastgrad.numpy.fft: numpy.fft with every function wrapped as a primitive.

Gradients, reverse (VJP) and forward (JVP), correct to any order, for fft, ifft, fft2,
ifft2, fftn, ifftn, rfft, irfft, rfft2, irfft2, rfftn, irfftn, hfft, ihfft, fftshift and
ifftshift, with their ``n``/``s``, ``axis``/``axes`` and ``norm`` arguments (see
``_fft_rules``).  fftfreq and rfftfreq are constants.
"""

import types as _types

import numpy.fft as _npfft

from . import numpy_wrapper as _w
from . import _fft_rules

_NOTRACE = frozenset(["fftfreq", "rfftfreq"])


def _build():
    ns = {}
    for name in dir(_npfft):
        if name.startswith("_") or name == "test":
            continue
        obj = getattr(_npfft, name)
        if isinstance(obj, _types.ModuleType):  # (NumPy < 2.1's deprecated numpy.fft.helper)
            continue
        ns[name] = _w.notrace_primitive(obj) if name in _NOTRACE else _w.wrap_numpy_object(name, obj)
    return ns


_namespace = _build()
globals().update(_namespace)
__all__ = sorted(_namespace)

_fft_rules.register(_namespace)
