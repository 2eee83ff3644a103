"""``install_as_autograd()``: make ``import autograd...`` resolve to fastgrad's modules."""

import importlib
import importlib.abc
import importlib.util
import sys
from typing import Optional


class _AutogradAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves ``autograd`` and ``autograd.<sub>`` as the very module objects of fastgrad, so
    there is one registry whichever name user code imports."""

    def find_spec(self, name, path, target=None):
        if name == "autograd" or name.startswith("autograd."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("fastgrad" + spec.name[len("autograd") :])

    def exec_module(self, module):
        pass  # the fastgrad module is already initialised


def install_as_autograd(*, array_ufunc: Optional[bool] = None) -> None:
    """After this call, ``import autograd`` (and every submodule) gives fastgrad's modules.

    Call it before anything imports the real autograd; if autograd was already imported in
    this process, it refuses with a RuntimeError (two registries would silently diverge).

    ``array_ufunc=False`` gives traced arrays the NumPy dispatch of autograd before 1.9, for
    libraries written against it (PennyLane requires ``autograd<1.9`` for this reason): a
    traced array does not take part in NumPy's ``__array_ufunc__`` protocol, so NumPy's
    operators defer to its reflected operators.  An ndarray subclass whose own
    ``__array_ufunc__`` cannot handle a traced operand then works on either side of an
    operator, and ``array += traced`` binds the name to the traced result; a NumPy ufunc
    called on a traced array (``numpy.sin(box)``) raises NumPy's TypeError instead of being
    differentiated.  ``array_ufunc=True`` restores autograd 1.9's protocol, which is the
    default; None leaves the current setting.  The setting is for the whole process.

    The example runs a script in a fresh interpreter, as the call affects the whole process:

    >>> import subprocess, sys
    >>> script = '''
    ... import fastgrad
    ... fastgrad.install_as_autograd()
    ... import autograd.numpy as np
    ... from autograd import grad
    ... print(np.__name__, grad.__module__, float(grad(np.sin)(0.0)))
    ... '''
    >>> run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    >>> run.stdout.split()
    ['fastgrad.numpy', 'fastgrad.differential_operators', '1.0']
    """
    if array_ufunc is not None and not isinstance(array_ufunc, bool):
        raise TypeError("install_as_autograd(): array_ufunc must be True, False or None, got {!r}".format(array_ufunc))
    existing = sys.modules.get("autograd")
    if existing is not None and not getattr(existing, "__name__", "").startswith("fastgrad"):
        raise RuntimeError(
            "install_as_autograd() must be called before autograd is imported: the real "
            "autograd is already loaded in this process ({})".format(getattr(existing, "__file__", existing))
        )
    if array_ufunc is not None:
        from .numpy.numpy_boxes import _use_array_ufunc

        _use_array_ufunc(array_ufunc)
    if not any(isinstance(f, _AutogradAlias) for f in sys.meta_path):
        sys.meta_path.insert(0, _AutogradAlias())
    for name, module in list(sys.modules.items()):
        if name == "fastgrad" or name.startswith("fastgrad."):
            sys.modules.setdefault("autograd" + name[len("fastgrad") :], module)
    _report_autograd_module_names()


# The classes user code meets (boxes, vector spaces, sparse cotangents), by the autograd module
# that defines each.  Libraries pick a backend from type(x).__module__ (e.g. "autograd" from
# "autograd.numpy.numpy_boxes"), so under install_as_autograd() these report autograd's module
# names; everything else about them stays fastgrad's.  The engine's compiled types (Box, Node,
# VJPNode, JVPNode) are immutable and keep "fastgrad._core": code meets their subclasses
# (ArrayBox, ...) or their instances' nodes, not the types themselves.
_AUTOGRAD_HOMES = {
    "fastgrad.numpy.numpy_boxes": ("autograd.numpy.numpy_boxes", ["ArrayBox"]),
    "fastgrad.numpy.numpy_vspaces": ("autograd.numpy.numpy_vspaces", ["ArrayVSpace", "ComplexArrayVSpace"]),
    "fastgrad.builtins": (
        "autograd.builtins",
        ["SequenceBox", "DictBox", "ContainerVSpace", "SequenceVSpace", "ListVSpace", "TupleVSpace", "DictVSpace"],
    ),
    "fastgrad.core": ("autograd.core", ["VSpace", "SparseObject"]),
}


def _report_autograd_module_names():
    for module_name, (autograd_name, class_names) in _AUTOGRAD_HOMES.items():
        module = importlib.import_module(module_name)
        for class_name in class_names:
            cls = getattr(module, class_name, None)
            if isinstance(cls, type) and cls.__module__ == module_name:
                cls.__module__ = autograd_name
