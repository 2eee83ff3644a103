"""A compiled plain module must be compiled from the .py beside it.

setup.py compiles a few plain Python modules with Cython, unchanged (``COMPILED_SOURCES``).
In a development checkout, the extension module wins over the .py of the same name, so
after an edit of the .py Python would go on importing the old build, silently.  The build
records the SHA-256 of each source it compiled in ``_compiled_sources.json`` (beside the
package's ``__init__``); importing fastgrad compares it with the .py found beside each
loaded extension module, and raises ImportError naming the stale ones.  An install that
ships no .py beside its extension modules has nothing to compare and is left alone.
"""

import hashlib
import importlib.machinery
import json
import os
import sys

COMPILED_SOURCES = (
    "fastgrad.core",
    "fastgrad.builtins",
    "fastgrad.wrap_util",
    "fastgrad.numpy._shapes",
    "fastgrad.numpy._registration",
    "fastgrad.numpy._elementwise",
    "fastgrad.numpy._reductions",
    "fastgrad.numpy._statistics",
    "fastgrad.numpy._products",
    "fastgrad.numpy._shaping",
    "fastgrad.numpy._indexing",
    "fastgrad.numpy._differences",
    "fastgrad.numpy.numpy_vjps",
    "fastgrad.numpy.numpy_boxes",
)
MANIFEST = "_compiled_sources.json"

_checked = set()


def source_hash(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _source_beside(extension_path):
    """``.../core.py`` for ``.../core.cpython-311-x86_64-linux-gnu.so``."""
    directory, name = os.path.split(extension_path)
    return os.path.join(directory, name.split(".", 1)[0] + ".py")


def check_compiled_sources():
    """ImportError if a loaded compiled plain module was built from another version of its
    .py (checks each module once, when it is loaded)."""
    stale, recorded = [], None
    for name in COMPILED_SOURCES:
        module = sys.modules.get(name)
        if module is None or name in _checked:
            continue
        _checked.add(name)
        path = getattr(module, "__file__", None) or ""
        if not path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            continue  # imported as Python
        source = _source_beside(path)
        if not os.path.exists(source):
            continue
        if recorded is None:
            recorded = _recorded_hashes()
        if recorded.get(name) != source_hash(source):
            stale.append((name, source))
    if stale:
        one = len(stale) == 1
        raise ImportError(
            "fastgrad: {} {} compiled from another version of {} than the {} beside {} (edited since "
            "the build, or built before builds recorded their sources); rebuild: "
            "`pip install -e .` or `python setup.py build_ext --inplace`".format(
                ", ".join(name for name, _ in stale),
                "is" if one else "are",
                ", ".join(os.path.basename(source) for _, source in stale),
                "one" if one else "ones",
                "it" if one else "them",
            )
        )


def _recorded_hashes():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), MANIFEST)
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}
