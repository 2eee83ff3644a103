/* Reuse of large NumPy array buffers within a gradient call.
 *
 * A gradient of big-array code frees and allocates buffers of the same sizes over and
 * over (the forward pass's arrays are released as the backward pass consumes them, and
 * the backward pass makes temporaries of the same shapes).  glibc hands large freed
 * blocks back to the kernel (trimming the heap, or unmapping mmap'd blocks) and faults
 * fresh zeroed pages in for the next one: on W4 (arrays of 8 MB) that is ~25% of the time.
 *
 * fastgrad installs this NumPy memory handler (NEP 49) in the context of a thread's first
 * gradient call, in place of NumPy's default.  Outside gradient calls it forwards every
 * request to NumPy's default allocator.  While a gradient call runs, freed buffers of at
 * least FG_CACHE_MIN_BYTES are kept (up to FG_CACHE_SLOTS of them, FG_CACHE_MAX_BYTES in
 * all) and handed out again for requests of exactly their size.  NumPy reports buffers to
 * tracemalloc around these calls, so a kept buffer counts as freed there.
 *
 * When the last gradient call in progress ends, up to FG_RETAIN_BYTES of the kept buffers
 * stay kept for the next call (gradients are usually computed in a loop) and the rest are
 * freed.  The retained buffers' pages are handed to the kernel with madvise(MADV_FREE): it
 * takes them back if it needs memory, and otherwise the next call writes into them without
 * a page fault (on W4, the pages faulted in anew cost more than the whole engine).
 * buffer_cache_release() frees them.
 */
#ifndef FASTGRAD_BUFFER_CACHE_H
#define FASTGRAD_BUFFER_CACHE_H

#include <stdint.h>
#include <string.h>
#include "pythread.h"
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#define FG_CACHE_MIN_BYTES ((size_t)1 << 17)   /* 128 KiB: glibc's default mmap threshold */
#define FG_CACHE_SLOTS 32
#define FG_CACHE_MAX_BYTES ((size_t)1 << 30)
#define FG_RETAIN_BYTES ((size_t)64 << 20)     /* kept from one gradient call to the next */

typedef struct { void *ptr; size_t size; } fg_kept_buffer;

static PyDataMemAllocator fg_base;            /* NumPy's default allocator (copied) */
static PyThread_type_lock fg_cache_lock = NULL;
static Py_ssize_t fg_cache_users = 0;         /* gradient calls in progress; changed with the GIL */
static fg_kept_buffer fg_kept[FG_CACHE_SLOTS];
static int fg_nkept = 0;
static size_t fg_kept_bytes = 0;

static void *fg_cache_malloc(void *ctx, size_t size) {
    void *p = NULL;
    int i;
    if (size >= FG_CACHE_MIN_BYTES && fg_cache_users > 0) {
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
    if (ptr != NULL && size >= FG_CACHE_MIN_BYTES && fg_cache_users > 0) {
        PyThread_acquire_lock(fg_cache_lock, WAIT_LOCK);
        if (fg_cache_users > 0 && fg_nkept < FG_CACHE_SLOTS
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

/* A gradient call begins (GIL held): use the handler in this context if the context uses
 * NumPy's default, and start keeping buffers.  Never fails: without the handler, buffers
 * are simply not kept. */
static void fg_cache_begin(void) {
    PyObject *current, *previous;
    PyDataMem_Handler *handler;
    if (fg_cache_setup() < 0) { PyErr_Clear(); return; }
    if (fg_cache_capsule == NULL) return;
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

/* The whole pages inside a kept buffer, given to the kernel to take back lazily: their
 * contents become undefined (no request served from the cache needs any).  The partial
 * pages at both ends are left alone: the allocator's headers of this block and of the
 * next one live there. */
static void fg_pages_lazily_free(void *ptr, size_t size) {
#if defined(MADV_FREE)
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)ptr + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t end = ((uintptr_t)ptr + size) & ~(uintptr_t)(page - 1);
    if (end > start) (void)madvise((void *)start, end - start, MADV_FREE);
#else
    (void)ptr; (void)size;
#endif
}

/* Free the kept buffers beyond the first ``retain`` bytes; lazily free the pages of those
 * that stay (under the lock: another thread's gradient call may take one right after). */
static void fg_cache_trim(size_t retain) {
    fg_kept_buffer freed[FG_CACHE_SLOTS];
    int i, n = 0, m = 0;
    size_t kept_bytes = 0;
    PyThread_acquire_lock(fg_cache_lock, WAIT_LOCK);
    for (i = 0; i < fg_nkept; i++) {
        if (kept_bytes + fg_kept[i].size <= retain) {
            fg_pages_lazily_free(fg_kept[i].ptr, fg_kept[i].size);
            kept_bytes += fg_kept[i].size;
            fg_kept[m++] = fg_kept[i];
        } else {
            freed[n++] = fg_kept[i];
        }
    }
    fg_nkept = m;
    fg_kept_bytes = kept_bytes;
    PyThread_release_lock(fg_cache_lock);
    for (i = 0; i < n; i++) fg_base.free(fg_base.ctx, freed[i].ptr, freed[i].size);
}

/* A gradient call ends (GIL held): after the last one, keep up to FG_RETAIN_BYTES. */
static void fg_cache_end(void) {
    if (fg_cache_capsule == NULL || fg_cache_users <= 0) return;
    if (--fg_cache_users > 0) return;
    fg_cache_trim(FG_RETAIN_BYTES);
}

/* Free every kept buffer now (GIL held); nothing while a gradient call is in progress. */
static void fg_cache_release(void) {
    if (fg_cache_capsule == NULL || fg_cache_users > 0) return;
    fg_cache_trim(0);
}

static Py_ssize_t fg_cache_kept_count(void) { return fg_nkept; }
static size_t fg_cache_kept_total(void) { return fg_kept_bytes; }
static Py_ssize_t fg_cache_user_count(void) { return fg_cache_users; }
static int fg_cache_installed(void) { return fg_cache_capsule != NULL; }

#endif
