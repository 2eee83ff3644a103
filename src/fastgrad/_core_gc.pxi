# The collector's pause during differentiation, and the buffer cache (compiled engine,
# included in _core.pyx; _core_gc.py is the pure one).

cdef extern from "Python.h":
    int PyGC_Enable()
    int PyGC_Disable()

cdef Py_ssize_t _gc_pauses = 0     # differentiations in progress (all threads, nested included)
cdef int _gc_was_enabled = 0       # the collector's state before the outermost one began

cdef extern from *:
    """
    /* differentiations in progress in this thread (nested included): after a fork, the
     * child's count of those in progress, since only the forking thread exists there */
    #if defined(_MSC_VER)
    static __declspec(thread) Py_ssize_t fg_thread_pauses = 0;
    #else
    static __thread Py_ssize_t fg_thread_pauses = 0;
    #endif
    """
    Py_ssize_t fg_thread_pauses


cdef extern from "_arena_regions.h":
    void fg_regions_begin()
    void fg_regions_end()
    void fg_regions_after_fork()
    bint fg_regions_active()
    Py_ssize_t fg_regions_count()
    Py_ssize_t fg_regions_live_arenas()


cdef extern from "_buffer_cache.h":
    void fg_cache_begin()
    void fg_cache_end()
    void fg_cache_release()
    void fg_cache_after_fork()
    Py_ssize_t fg_cache_kept_count()
    size_t fg_cache_kept_total()
    Py_ssize_t fg_cache_user_count()
    bint fg_cache_installed()


cdef inline void _memory_begin():
    """This thread enters its outermost differentiation: large array buffers it frees are
    kept for reuse (_buffer_cache.h), and once its graph needs many of Python's arenas, they
    come from huge-page regions (_arena_regions.h)."""
    fg_cache_begin()
    fg_regions_begin()


cdef inline void _memory_end():
    fg_regions_end()
    fg_cache_end()


def pause_gc():
    """Stop the cyclic collector until the matching resume_gc (counted, so nested and
    concurrent differentiations restore it exactly once), and manage this thread's memory
    while it is inside a differentiation (_memory_begin).  Atomic under the GIL."""
    global _gc_pauses, _gc_was_enabled, fg_thread_pauses
    if _gc_pauses == 0:
        _gc_was_enabled = PyGC_Disable()
    _gc_pauses += 1
    if fg_thread_pauses == 0:
        _memory_begin()
    fg_thread_pauses += 1


def resume_gc():
    global _gc_pauses, fg_thread_pauses
    if _gc_pauses > 0 and fg_thread_pauses > 0:
        _gc_pauses -= 1
        fg_thread_pauses -= 1
        if _gc_pauses == 0 and _gc_was_enabled:
            PyGC_Enable()
        if fg_thread_pauses == 0:
            _memory_end()


def _after_fork_in_child():
    """The child of a fork has only the forking thread: the differentiations in progress are
    that thread's own (the others' would never end, leaving the collector off for good)."""
    global _gc_pauses
    if _gc_pauses > fg_thread_pauses:
        _gc_pauses = fg_thread_pauses
        if _gc_pauses == 0 and _gc_was_enabled:
            PyGC_Enable()
    fg_cache_after_fork()
    fg_regions_after_fork()


if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_after_fork_in_child)


def buffer_cache_begin():
    """The pure engine's thread enters its outermost differentiation: keep the large buffers
    it frees, and take a large graph's arenas from huge-page regions (it has no C of its
    own; these are allocators, not part of the engine)."""
    _memory_begin()


def buffer_cache_end():
    """That thread leaves it (an extra call does nothing); after the last thread's, the kept
    buffers are freed."""
    _memory_end()


def buffer_cache_release():
    """Free the kept buffers (none while a call is in progress; none are kept between calls)."""
    fg_cache_release()


def buffer_cache_state():
    """(handler installed, threads inside a differentiation, buffers kept, bytes kept)."""
    return fg_cache_installed(), fg_cache_user_count(), fg_cache_kept_count(), fg_cache_kept_total()


def arena_regions_state():
    """(regions in use, Python arenas live in them): none once the objects of a gradient
    call's graph are freed (_arena_regions.h); (0, 0) where the allocator is not installed."""
    if not fg_regions_active():
        return 0, 0
    return fg_regions_count(), fg_regions_live_arenas()


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
