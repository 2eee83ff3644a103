"""fastgrad.numpy.fft: numpy.fft with every function wrapped as a primitive.

The shifts have their (permutation) rules here; the transforms get theirs with the
complex-number slice.
"""
import numpy.fft as _npfft

from ..core import def_linear as _def_linear, defvjp_direct as _defvjp_direct
from . import numpy_wrapper as _w
from . import numpy_vjps as _vjps

_NOTRACE = frozenset(["fftfreq", "rfftfreq"])


def _build():
    ns = {}
    for name in dir(_npfft):
        if name.startswith("_") or name == "test":
            continue
        obj = getattr(_npfft, name)
        ns[name] = _w.notrace_primitive(obj) if name in _NOTRACE else _w.wrap_numpy_object(name, obj)
    return ns


_namespace = _build()
globals().update(_namespace)
__all__ = sorted(_namespace)

_defvjp_direct(_namespace["fftshift"],
               lambda g, ans, x, axes=None: _vjps.unbroadcast(_namespace["ifftshift"](g, axes), x))
_defvjp_direct(_namespace["ifftshift"],
               lambda g, ans, x, axes=None: _vjps.unbroadcast(_namespace["fftshift"](g, axes), x))
_def_linear(_namespace["fftshift"])
_def_linear(_namespace["ifftshift"])
