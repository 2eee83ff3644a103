"""Which library ``autograd`` names in this process: the check that the downstream test-suite jobs
(ci_lifelines.sh, ci_autograd_suite.sh) make when pytest starts and again when it ends, over every
``autograd`` module imported by then, so a run can never silently test the wrong library."""

import os
import sys


def is_fastgrad(module):
    if getattr(module, "__name__", "").startswith("fastgrad"):
        return True
    # pytest's assertion rewriter imports a module whose file is named like a test
    # (autograd.test_util) itself, from its package's path, which under the binding is
    # fastgrad's: a copy of fastgrad's module under autograd's name
    fastgrad, path = sys.modules.get("fastgrad"), getattr(module, "__file__", None)
    if fastgrad is None or not path:
        return False
    return os.path.abspath(path).startswith(os.path.dirname(os.path.abspath(fastgrad.__file__)) + os.sep)


def autograd_modules():
    return {name: mod for name, mod in sys.modules.items() if name == "autograd" or name.startswith("autograd.")}


def check_binding(mode, where):
    """RuntimeError unless every ``autograd`` module is fastgrad's (mode "fastgrad") or none is."""
    wrong = [
        f"{name} -> {getattr(mod, '__name__', mod)} ({getattr(mod, '__file__', '?')})"
        for name, mod in autograd_modules().items()
        if mod is not None and is_fastgrad(mod) != (mode == "fastgrad")
    ]
    if wrong:
        raise RuntimeError(f"autograd is not bound to {mode} ({where}): " + "; ".join(wrong))
