"""The collector's pause during differentiation, and the buffer cache (pure engine;
_core_gc.pxi is the compiled one).

A graph is many small objects that live briefly: the cyclic collector is paused while
one is built and consumed (counted across threads and nested calls, so its state comes
back exactly once), and large freed array buffers are kept for reuse meanwhile.
"""

import gc
import threading

# The buffer cache is a NumPy memory handler written in C (_buffer_cache.h, in the
# compiled module).  It is an allocator, not part of the engine, so this engine uses it
# too when the compiled module is built: glibc otherwise hands big blocks back to the
# kernel and faults fresh pages in.
try:
    from ._core import buffer_cache_begin, buffer_cache_end, buffer_cache_release, buffer_cache_state
except ImportError:

    def buffer_cache_begin():
        """Without the compiled module no buffers are kept."""

    buffer_cache_end = buffer_cache_release = buffer_cache_begin

    def buffer_cache_state():
        """Without the compiled module no buffers are kept: (installed, users, kept, bytes)."""
        return False, 0, 0, 0


_gc_lock = threading.Lock()
# differentiations in progress, the collector's state before the first, whether the buffer
# cache is held for them (set before the cache begins and cleared after it ends, so that a
# flag without a cache costs one call without kept buffers and never leaves a cache held)
_gc_state = [0, False, False]

# Ctrl-C arrives as a KeyboardInterrupt on entering a Python function or right after a call
# returns (not on returning from __enter__ to its with statement).  pause_gc undoes its pause
# if one lands part way; resume_gc can only be interrupted once the collector is back, except
# on entering it: no Python code can guard that moment (a with statement does not call
# __exit__ again, so that pause never ends).  An interrupt between the collector and the
# buffer cache leaves the cache held until the next differentiation ends, nothing worse.
# The compiled GCPause is C and has no such moment.


def pause_gc():
    """Stop the cyclic collector until the matching resume_gc (counted across threads), and
    keep large freed array buffers for reuse while any differentiation is in progress."""
    counted = False
    try:
        with _gc_lock:
            if _gc_state[0] == 0:
                _gc_state[1] = gc.isenabled()
            _gc_state[0] += 1
            counted = True
            gc.disable()
            if not _gc_state[2]:
                _gc_state[2] = True
                buffer_cache_begin()
    except BaseException:  # interrupted part way: as if never called (inline: a call could be)
        if counted:
            with _gc_lock:
                _gc_state[0] -= 1
                if _gc_state[0] == 0 and _gc_state[1]:
                    gc.enable()
        raise


def resume_gc(*exc_info):
    """End one pause (the arguments, which a with statement passes, are ignored)."""
    with _gc_lock:
        if _gc_state[0] > 0:
            _gc_state[0] -= 1
            if _gc_state[0] == 0:
                if _gc_state[1]:
                    gc.enable()
                if _gc_state[2]:  # (after the collector: an interrupt here only keeps buffers)
                    buffer_cache_end()
                    _gc_state[2] = False


def gc_pause_depth():
    """How many differentiations are pausing the collector now (0 when none)."""
    return _gc_state[0]


class GCPause:
    """``with GCPause():`` pauses the collector for the block."""

    __slots__ = ()
    __enter__ = staticmethod(pause_gc)  # the functions themselves: no frame, so no moment,
    __exit__ = staticmethod(resume_gc)  # between the with statement and their work
