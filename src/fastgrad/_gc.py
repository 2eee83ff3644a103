"""Pause the cyclic garbage collector while a graph is built and consumed.

A graph is a large number of container objects that live briefly; every collection would
walk all of them (60% of autograd's time at 10^5 nodes).  The pause is process-wide and
reference-counted across threads and nested calls, so the collector's state is restored
exactly when the outermost differentiation ends, also when user code raises.
"""
import gc
import threading
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused():
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
