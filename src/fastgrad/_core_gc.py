"""The collector's pause during differentiation, and the buffer cache (pure engine;
_core_gc.pxi is the compiled one).

A graph is many small objects that live briefly: the cyclic collector is paused while
one is built and consumed (counted across threads and nested calls, so its state comes
back exactly once), and large freed array buffers are kept for reuse meanwhile.
"""

import gc
import os
import threading

# The buffer cache is a NumPy memory handler written in C (_buffer_cache.h, in the
# compiled module), and so is the arena allocator that puts a large graph's Python objects
# in huge pages (_arena_regions.h).  They are allocators, not part of the engine, so this
# engine uses them too when the compiled module is built: the kernel otherwise faults
# fresh pages in, one at a time, at every call.
try:
    from ._core import arena_regions_state, buffer_cache_begin, buffer_cache_end, buffer_cache_release
    from ._core import buffer_cache_state
except ImportError:

    def buffer_cache_begin():
        """Without the compiled module no buffers are kept."""

    buffer_cache_end = buffer_cache_release = buffer_cache_begin

    def buffer_cache_state():
        """Without the compiled module no buffers are kept: (installed, users, kept, bytes)."""
        return False, 0, 0, 0

    def arena_regions_state():
        """Without the compiled module Python's arenas are its own: (regions, live arenas)."""
        return 0, 0


_gc_lock = threading.Lock()
# differentiations in progress (all threads, nested included), the collector's state
# before the first
_gc_state = [0, False]
# this thread's: differentiations in progress, whether it holds the buffer cache (set
# before the cache begins and cleared after it ends: an extra end does nothing, so a flag
# without a cache costs nothing and a cache is never left held)
_thread = threading.local()

# Ctrl-C arrives as a KeyboardInterrupt on entering a Python function or right after a call
# returns (not on returning from __enter__ to its with statement).  pause_gc undoes its pause
# if one lands part way; resume_gc can only be interrupted once the collector is back, except
# on entering it: no Python code can guard that moment (a with statement does not call
# __exit__ again, so that pause never ends).  An interrupt between the collector and the
# buffer cache leaves the cache held until the thread's next differentiation ends, nothing
# worse.  The compiled GCPause is C and has no such moment.


def pause_gc():
    """Stop the cyclic collector until the matching resume_gc (counted across threads), and
    keep the large array buffers this thread frees for reuse while it is inside a
    differentiation."""
    counted = False
    try:
        with _gc_lock:
            depth = getattr(_thread, "depth", 0)
            if _gc_state[0] == 0:
                _gc_state[1] = gc.isenabled()
            _gc_state[0] += 1  # (no call between the counts and the flag: nothing can land there)
            _thread.depth = depth + 1
            counted = True
            gc.disable()
            if depth == 0:
                _thread.cache = True
                buffer_cache_begin()
    except BaseException:  # interrupted part way: as if never called (inline: a call could be)
        if counted:
            with _gc_lock:
                _gc_state[0] -= 1
                _thread.depth -= 1
                if _gc_state[0] == 0 and _gc_state[1]:
                    gc.enable()
        raise


def resume_gc(*exc_info):
    """End one pause (the arguments, which a with statement passes, are ignored)."""
    with _gc_lock:
        # (no call until the counts are down: an interrupt right after one would end nothing)
        try:
            depth = _thread.depth
        except AttributeError:
            depth = 0
        if _gc_state[0] > 0 and depth > 0:
            _gc_state[0] -= 1
            _thread.depth = depth - 1
            if _gc_state[0] == 0 and _gc_state[1]:
                gc.enable()
            if depth == 1 and _thread.cache:  # (after the collector: an interrupt here only keeps buffers)
                buffer_cache_end()
                _thread.cache = False


def _after_fork_in_child():
    """The child of a fork has only the forking thread: the differentiations in progress are
    that thread's own (the others' would never end, leaving the collector off for good), and
    the lock may have been held by a thread that is gone."""
    global _gc_lock
    _gc_lock = threading.Lock()
    own = getattr(_thread, "depth", 0)
    if _gc_state[0] > own:
        _gc_state[0] = own
        if own == 0 and _gc_state[1]:
            gc.enable()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def gc_pause_depth():
    """How many differentiations are pausing the collector now (0 when none)."""
    return _gc_state[0]


class GCPause:
    """``with GCPause():`` pauses the collector for the block."""

    __slots__ = ()
    __enter__ = staticmethod(pause_gc)  # the functions themselves: no frame, so no moment,
    __exit__ = staticmethod(resume_gc)  # between the with statement and their work
