"""Throwaway array libraries for the tests of the backend registry's state.

``write(directory, name)`` writes a library laid out as Dask is: the module the registry
watches (``name``) only re-exports an array type defined in a core module
(``name + "_core"``), so importing the watched module again (after an import that failed)
gives the same type.  ``watch(name)`` tells the registry to treat the library as it treats
CuPy once it is imported; ``forget(names)`` takes the libraries out of the registry again, so
that its size stays as it was (their types stay registered with boxes and vector spaces:
nothing else ever meets them).
"""

import sys

from fastgrad import _backends


def write(directory, name):
    (directory / (name + "_core.py")).write_text("class ndarray:\n    pass\n")
    (directory / (name + ".py")).write_text("from {}_core import ndarray\n".format(name))


def watch(name):
    _backends.add_library(name, lambda: _backends.CupyBackend(name, sys.modules[name], "numpy"))


def loaded(name):
    """The registry's backend of the library ``name`` if it counts as loaded, else None."""
    return next((b for b in _backends.LOADED if getattr(b, "_module_name", None) == name), None)


def forget(names):
    for name in names:
        _backends._LIBRARIES.pop(name, None)
    gone = [b for b in _backends._LOADED if getattr(b, "_module_name", None) in names]
    _backends._LOADED[:] = [b for b in _backends._LOADED if b not in gone]
    for t in [t for t, b in _backends._BY_TYPE.items() if b in gone]:
        del _backends._BY_TYPE[t]
    for name in names:
        for module in (name, name + "_core"):
            sys.modules.pop(module, None)
