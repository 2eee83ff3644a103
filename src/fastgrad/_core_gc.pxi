# The collector's pause during differentiation, and the buffer cache (compiled engine,
# included in _core.pyx; _core_gc.py is the pure one).

cdef extern from "Python.h":
    int PyGC_Enable()
    int PyGC_Disable()

cdef Py_ssize_t _gc_pauses = 0     # differentiations in progress (all threads, nested included)
cdef int _gc_was_enabled = 0       # the collector's state before the outermost one began


cdef extern from "_buffer_cache.h":
    void fg_cache_begin()
    void fg_cache_end()
    void fg_cache_release()
    Py_ssize_t fg_cache_kept_count()
    size_t fg_cache_kept_total()
    Py_ssize_t fg_cache_user_count()
    bint fg_cache_installed()


def pause_gc():
    """Stop the cyclic collector until the matching resume_gc (counted, so nested and
    concurrent differentiations restore it exactly once), and keep large freed array
    buffers for reuse while any differentiation is in progress (_buffer_cache.h).  Atomic
    under the GIL."""
    global _gc_pauses, _gc_was_enabled
    if _gc_pauses == 0:
        _gc_was_enabled = PyGC_Disable()
        fg_cache_begin()
    _gc_pauses += 1


def resume_gc():
    global _gc_pauses
    if _gc_pauses > 0:
        _gc_pauses -= 1
        if _gc_pauses == 0:
            if _gc_was_enabled:
                PyGC_Enable()
            fg_cache_end()


def buffer_cache_begin():
    """The pure engine's first differentiation in progress begins: keep large freed buffers
    (it has no C of its own; the cache is an allocator, not part of the engine)."""
    fg_cache_begin()


def buffer_cache_end():
    """The last one ends (an extra call does nothing)."""
    fg_cache_end()


def buffer_cache_release():
    """Free the buffers kept for the next gradient call (none while a call is in progress)."""
    fg_cache_release()


def buffer_cache_state():
    """(handler installed, users: 1 while differentiations are in progress, buffers kept,
    bytes kept)."""
    return fg_cache_installed(), fg_cache_user_count(), fg_cache_kept_count(), fg_cache_kept_total()


def gc_pause_depth():
    """How many differentiations are pausing the collector now (0 when none)."""
    return _gc_pauses


@cython.final
cdef class GCPause:
    """``with GCPause():`` pauses the collector for the block: entering and leaving are C
    calls, so no interrupt can fall between pausing and the block's cleanup."""

    def __enter__(self):
        pause_gc()

    def __exit__(self, *exc):
        resume_gc()
        return False
