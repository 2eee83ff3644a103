/* Reuse of large NumPy array buffers within a gradient call.
 *
 * A gradient of big-array code frees and allocates buffers of the same sizes over and
 * over (the forward pass's arrays are released as the backward pass consumes them, and
 * the backward pass makes temporaries of the same shapes).  glibc hands large freed
 * blocks back to the kernel (trimming the heap, or unmapping mmap'd blocks) and faults
 * fresh zeroed pages in for the next one: on arrays of 8 MB that is ~25% of the time.
 *
 * fastgrad installs this NumPy memory handler (NEP 49) in the context of a thread's first
 * gradient call, in place of NumPy's default.  A thread that is not inside a gradient call
 * gets NumPy's default allocator for every request.  While a thread is inside one, the
 * buffers of at least FG_CACHE_MIN_BYTES that it frees are kept (up to FG_CACHE_SLOTS of
 * them, FG_CACHE_MAX_BYTES in all) and handed out again for its requests of exactly their
 * size.  When the last gradient call in progress (in any thread) ends, every kept buffer
 * is freed: nothing is carried from one call to the next, so a call's cost and the
 * process's memory after it do not depend on earlier calls.  NumPy reports buffers to
 * tracemalloc around these calls, so a kept buffer counts as freed there.
 *
 * A buffer of at least FG_PREFAULT_MIN_BYTES that no kept buffer can serve is, on Linux,
 * faulted in at once when it arrives fresh from the kernel (its first page not resident):
 * one madvise(MADV_POPULATE_WRITE) instead of one trap per page as the array is first
 * written, about a third less time per page.  The arrays a forward pass keeps for the
 * backward pass are such buffers at every call.  Memory already resident (a block glibc
 * reuses) is left as it is: populating it again would cost more than it saves.
 *
 * After a fork, the child has only the forking thread: fg_cache_after_fork() sets the
 * count of calls in progress to that thread's own and frees the kept buffers if none is.
 */
#ifndef FASTGRAD_BUFFER_CACHE_H
#define FASTGRAD_BUFFER_CACHE_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "pythread.h"
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23                /* Linux 5.14; older kernels answer EINVAL */
#endif
#endif

#include "_thread_local.h"

#define FG_CACHE_MIN_BYTES ((size_t)1 << 17)   /* 128 KiB: glibc's default mmap threshold */
#define FG_CACHE_SLOTS 32
#define FG_CACHE_MAX_BYTES ((size_t)1 << 30)
#define FG_PREFAULT_MIN_BYTES ((size_t)1 << 18) /* 256 KiB: a syscall is < 2% of the work */

typedef struct { void *ptr; size_t size; } fg_kept_buffer;

static PyDataMemAllocator fg_base;            /* NumPy's default allocator (copied) */
static PyThread_type_lock fg_cache_lock = NULL;
static Py_ssize_t fg_cache_users = 0;         /* threads inside a gradient call; changed with the GIL */
static FG_THREAD_LOCAL int fg_thread_inside = 0;  /* this thread is inside one */
static fg_kept_buffer fg_kept[FG_CACHE_SLOTS];
static int fg_nkept = 0;
static size_t fg_kept_bytes = 0;

#if defined(__linux__)
static int fg_prefault_works = 1;             /* cleared when the kernel lacks the advice */

/* Fault in the whole pages of a new block at once if they are not resident yet. */
static void fg_prefault(void *p, size_t size) {
    static uintptr_t page = 0;
    uintptr_t first, end;
    unsigned char resident = 1;
    int saved_errno = errno;
    if (!fg_prefault_works) return;
    if (page == 0) {
        long n = sysconf(_SC_PAGESIZE);
        page = n > 0 ? (uintptr_t)n : 4096;
    }
    first = ((uintptr_t)p + page - 1) & ~(page - 1);
    end = ((uintptr_t)p + size) & ~(page - 1);
    if (end > first && mincore((void *)first, page, &resident) == 0 && !(resident & 1)) {
        if (madvise((void *)first, end - first, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
            fg_prefault_works = 0;
    }
    errno = saved_errno;
}
#else
static void fg_prefault(void *p, size_t size) { (void)p; (void)size; }
#endif

static void *fg_cache_malloc(void *ctx, size_t size) {
    void *p = NULL;
    int i;
    if (size >= FG_CACHE_MIN_BYTES && fg_thread_inside) {
        PyThread_acquire_lock(fg_cache_lock, WAIT_LOCK);
        for (i = fg_nkept - 1; i >= 0; i--) {
            if (fg_kept[i].size == size) {
                p = fg_kept[i].ptr;
                fg_kept[i] = fg_kept[--fg_nkept];
                fg_kept_bytes -= size;
                break;
            }
        }
        PyThread_release_lock(fg_cache_lock);
        if (p != NULL) return p;
        p = fg_base.malloc(fg_base.ctx, size);
        if (p != NULL && size >= FG_PREFAULT_MIN_BYTES) fg_prefault(p, size);
        return p;
    }
    return fg_base.malloc(fg_base.ctx, size);
}

static void *fg_cache_calloc(void *ctx, size_t nelem, size_t elsize) {
    return fg_base.calloc(fg_base.ctx, nelem, elsize);   /* zeroed pages: the OS's are as cheap */
}

static void *fg_cache_realloc(void *ctx, void *ptr, size_t new_size) {
    return fg_base.realloc(fg_base.ctx, ptr, new_size);
}

static void fg_cache_free(void *ctx, void *ptr, size_t size) {
    int kept = 0;
    if (ptr != NULL && size >= FG_CACHE_MIN_BYTES && fg_thread_inside) {
        PyThread_acquire_lock(fg_cache_lock, WAIT_LOCK);
        if (fg_nkept < FG_CACHE_SLOTS
                && fg_kept_bytes + size <= FG_CACHE_MAX_BYTES) {
            fg_kept[fg_nkept].ptr = ptr;
            fg_kept[fg_nkept].size = size;
            fg_nkept++;
            fg_kept_bytes += size;
            kept = 1;
        }
        PyThread_release_lock(fg_cache_lock);
    }
    if (!kept) fg_base.free(fg_base.ctx, ptr, size);
}

static PyDataMem_Handler fg_cache_handler = {
    "fastgrad_buffer_cache", 1,
    {NULL, fg_cache_malloc, fg_cache_calloc, fg_cache_realloc, fg_cache_free}};

static PyObject *fg_cache_capsule = NULL;     /* our handler, as NumPy takes it */

/* Set the handler up (once): 0, or -1 with an exception. */
static int fg_cache_setup(void) {
    PyObject *current;
    PyDataMem_Handler *handler;
    if (fg_cache_capsule != NULL) return 0;
    current = PyDataMem_GetHandler();
    if (current == NULL) return -1;
    handler = (PyDataMem_Handler *)PyCapsule_GetPointer(current, "mem_handler");
    if (handler == NULL || strcmp(handler->name, "default_allocator") != 0) {
        Py_DECREF(current);
        PyErr_Clear();
        return 0;                                 /* not NumPy's default: leave it alone */
    }
    fg_base = handler->allocator;                 /* NumPy's default lives as long as NumPy */
    Py_DECREF(current);
    fg_cache_lock = PyThread_allocate_lock();
    if (fg_cache_lock == NULL) { PyErr_NoMemory(); return -1; }
    fg_cache_capsule = PyCapsule_New(&fg_cache_handler, "mem_handler", NULL);
    return fg_cache_capsule == NULL ? -1 : 0;
}

/* This thread enters its outermost gradient call (GIL held): use the handler in this
 * context if the context uses NumPy's default, and keep the buffers this thread frees.
 * Never fails: without the handler, buffers are simply not kept.  A second call without
 * an end in between does nothing. */
static void fg_cache_begin(void) {
    PyObject *current, *previous;
    PyDataMem_Handler *handler;
    if (fg_thread_inside) return;
    if (fg_cache_setup() < 0) { PyErr_Clear(); return; }
    if (fg_cache_capsule == NULL) return;
    fg_thread_inside = 1;
    fg_cache_users++;
    current = PyDataMem_GetHandler();
    if (current == NULL) { PyErr_Clear(); return; }
    if (current != fg_cache_capsule) {
        handler = (PyDataMem_Handler *)PyCapsule_GetPointer(current, "mem_handler");
        if (handler != NULL && strcmp(handler->name, "default_allocator") == 0) {
            previous = PyDataMem_SetHandler(fg_cache_capsule);
            Py_XDECREF(previous);
        }
        PyErr_Clear();
    }
    Py_DECREF(current);
}

/* Free every kept buffer (GIL held). */
static void fg_cache_free_all(void) {
    fg_kept_buffer freed[FG_CACHE_SLOTS];
    int i, n;
    PyThread_acquire_lock(fg_cache_lock, WAIT_LOCK);
    n = fg_nkept;
    for (i = 0; i < n; i++) freed[i] = fg_kept[i];
    fg_nkept = 0;
    fg_kept_bytes = 0;
    PyThread_release_lock(fg_cache_lock);
    for (i = 0; i < n; i++) fg_base.free(fg_base.ctx, freed[i].ptr, freed[i].size);
}

/* This thread leaves its outermost gradient call (GIL held); after the last thread's, the
 * kept buffers are freed.  A call from a thread that is not inside one does nothing. */
static void fg_cache_end(void) {
    if (!fg_thread_inside) return;
    fg_thread_inside = 0;
    if (--fg_cache_users > 0) return;
    fg_cache_free_all();
}

/* Free every kept buffer now (GIL held); nothing while a gradient call is in progress. */
static void fg_cache_release(void) {
    if (fg_cache_capsule == NULL || fg_cache_users > 0) return;
    fg_cache_free_all();
}

/* In the child of a fork (only the forking thread exists): the calls in progress are this
 * thread's, and a lock another thread held at the fork would never be released. */
static void fg_cache_after_fork(void) {
    if (fg_cache_capsule == NULL) return;
    fg_cache_lock = PyThread_allocate_lock();   /* (the parent's lock is left: it may be held) */
    fg_cache_users = fg_thread_inside;
    if (fg_cache_users == 0) fg_cache_free_all();
}

static Py_ssize_t fg_cache_kept_count(void) { return fg_nkept; }
static size_t fg_cache_kept_total(void) { return fg_kept_bytes; }
static Py_ssize_t fg_cache_user_count(void) { return fg_cache_users; }
static int fg_cache_installed(void) { return fg_cache_capsule != NULL; }

#endif
