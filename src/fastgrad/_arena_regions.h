/* Python's small-object arenas in huge pages while a thread builds a large graph.
 *
 * CPython keeps small objects (boxes, nodes, floats, tuples) in arenas of 1 MiB (256 KiB
 * before 3.10) that it maps from the kernel and unmaps as soon as one is empty.  A gradient
 * over a graph of 10^5 nodes fills about 17 arenas in its forward pass and empties them in
 * its backward pass, so every call faults each 4 KiB page of them in anew: more than a
 * quarter of the time of such a call.
 *
 * fastgrad installs this arena allocator (PyObject_SetArenaAllocator) at the first gradient
 * call.  It forwards every request to the allocator it replaced, except a request from a
 * thread inside a gradient call that has already taken FG_ARENAS_BEFORE_REGIONS arenas in
 * that call: such arenas are cut, one after another, out of 2 MiB regions aligned to 2 MiB
 * and advised MADV_HUGEPAGE, so that the kernel can fault a region in as one huge page.
 * A call that needs at most one fresh arena (most calls need none: they reuse the pools
 * earlier objects freed) never gets there, and pays nothing but a counter.
 *
 * At most FG_MAX_REGIONS regions (32 MiB) are in use at once; further arenas are CPython's.
 * Huge pages are not always cheap: in a virtual machine that hands free memory back to its
 * host, a huge page the guest has not used lately costs the host's faults for all of it.
 * Measured there, with three seconds between calls: a graph of 17 regions (W5) is still
 * faster in huge pages, one of 88 (10^6 nodes) was 40% slower; capped, it is as fast as
 * with CPython's arenas alone, and calls in a loop keep all of the gain.
 *
 * Nothing is kept: a region is unmapped when the last of its arenas is freed, and an arena
 * freed while its region still holds another is handed back to the kernel at once
 * (MADV_DONTNEED), so the memory a process holds is what CPython's own allocator would
 * leave it.  The region being filled is closed when a thread's outermost gradient call
 * ends.  Where the kernel gives no huge page (transparent huge pages off, or none free),
 * a region is faulted in 4 KiB at a time, as an arena of CPython's would be.
 *
 * NUMPY_MADVISE_HUGEPAGE=0 in the environment (NumPy's switch for its own huge pages, read
 * once at the first gradient call) leaves CPython's allocator alone.
 */
#ifndef FASTGRAD_ARENA_REGIONS_H
#define FASTGRAD_ARENA_REGIONS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pythread.h"

#include "_thread_local.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MADV_DONTNEED)

#define FG_REGION_BYTES ((size_t)2 << 20)
#define FG_ARENAS_BEFORE_REGIONS 1
#define FG_MAX_REGIONS 16         /* 32 MiB in huge pages at most: see above */

typedef struct {
    char *base;
    size_t arena_size;   /* every arena cut from one region has the same size */
    int cut;             /* arenas cut from it so far */
    int live;            /* of those, arenas not freed yet */
} fg_region;

static PyObjectArenaAllocator fg_arena_base;   /* the allocator ours replaced */
static int fg_regions_installed = 0;
static PyThread_type_lock fg_region_lock = NULL;
static fg_region *fg_regions = NULL;
static Py_ssize_t fg_nregions = 0, fg_region_capacity = 0;
static Py_ssize_t fg_filling = -1;             /* the region arenas are cut from, or -1 */
static FG_THREAD_LOCAL int fg_region_thread_inside = 0;
static FG_THREAD_LOCAL Py_ssize_t fg_arenas_this_call = 0;

/* A new region (lock held): its index, or -1 (the caller then uses the base allocator). */
static Py_ssize_t fg_region_open(size_t arena_size) {
    char *raw, *base, *raw_end;
    if (fg_nregions == fg_region_capacity) {
        Py_ssize_t capacity = fg_region_capacity ? 2 * fg_region_capacity : 64;
        fg_region *grown = (fg_region *)realloc(fg_regions, (size_t)capacity * sizeof(fg_region));
        if (grown == NULL) return -1;
        fg_regions = grown;
        fg_region_capacity = capacity;
    }
    /* twice the size, to cut an aligned region out of it and unmap the rest */
    raw = (char *)mmap(NULL, 2 * FG_REGION_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return -1;
    raw_end = raw + 2 * FG_REGION_BYTES;
    base = (char *)(((uintptr_t)raw + FG_REGION_BYTES - 1) & ~(uintptr_t)(FG_REGION_BYTES - 1));
    if (base > raw) munmap(raw, (size_t)(base - raw));
    if (raw_end > base + FG_REGION_BYTES) munmap(base + FG_REGION_BYTES, (size_t)(raw_end - base - FG_REGION_BYTES));
    madvise(base, FG_REGION_BYTES, MADV_HUGEPAGE);   /* advice only: without it, small pages */
    fg_regions[fg_nregions].base = base;
    fg_regions[fg_nregions].arena_size = arena_size;
    fg_regions[fg_nregions].cut = 0;
    fg_regions[fg_nregions].live = 0;
    return fg_nregions++;
}

/* Unmap region i (lock held, no arena of it live); the last region takes its place. */
static void fg_region_close(Py_ssize_t i) {
    munmap(fg_regions[i].base, FG_REGION_BYTES);
    fg_regions[i] = fg_regions[--fg_nregions];
    if (fg_filling == i) fg_filling = -1;
    else if (fg_filling == fg_nregions) fg_filling = i;
}

static void *fg_region_arena_alloc(void *ctx, size_t size) {
    void *arena = NULL;
    (void)ctx;
    if (fg_region_thread_inside && ++fg_arenas_this_call > FG_ARENAS_BEFORE_REGIONS
            && size > 0 && size <= FG_REGION_BYTES && FG_REGION_BYTES % size == 0) {
        fg_region *r;
        PyThread_acquire_lock(fg_region_lock, WAIT_LOCK);
        if (fg_filling < 0 || fg_regions[fg_filling].arena_size != size
                || (size_t)fg_regions[fg_filling].cut * size == FG_REGION_BYTES)
            fg_filling = fg_nregions < FG_MAX_REGIONS ? fg_region_open(size) : -1;
        if (fg_filling >= 0) {
            r = &fg_regions[fg_filling];
            arena = r->base + (size_t)r->cut * size;
            r->cut++;
            r->live++;
        }
        PyThread_release_lock(fg_region_lock);
        if (arena != NULL) return arena;
    }
    return fg_arena_base.alloc(fg_arena_base.ctx, size);
}

static void fg_region_arena_free(void *ctx, void *ptr, size_t size) {
    Py_ssize_t i;
    int ours = 0;
    (void)ctx;
    if (fg_nregions == 0) {   /* (no lock needed to see that: a live arena's region stays) */
        fg_arena_base.free(fg_arena_base.ctx, ptr, size);
        return;
    }
    PyThread_acquire_lock(fg_region_lock, WAIT_LOCK);
    for (i = 0; i < fg_nregions; i++) {
        fg_region *r = &fg_regions[i];
        if ((char *)ptr >= r->base && (char *)ptr < r->base + FG_REGION_BYTES) {
            ours = 1;
            if (--r->live == 0 && i != fg_filling)
                fg_region_close(i);
            else
                madvise(ptr, size, MADV_DONTNEED);   /* its pages go back to the kernel now */
            break;
        }
    }
    PyThread_release_lock(fg_region_lock);
    if (!ours) fg_arena_base.free(fg_arena_base.ctx, ptr, size);
}

/* This thread enters its outermost gradient call (GIL held).  Never fails: without the
 * allocator, arenas are simply CPython's. */
static void fg_regions_begin(void) {
    if (fg_region_thread_inside) return;
    if (!fg_regions_installed) {
        const char *numpy_switch = getenv("NUMPY_MADVISE_HUGEPAGE");
        PyObjectArenaAllocator ours = {NULL, fg_region_arena_alloc, fg_region_arena_free};
        fg_regions_installed = -1;                     /* decided: not installed */
        if (numpy_switch != NULL && strcmp(numpy_switch, "0") == 0) return;
        fg_region_lock = PyThread_allocate_lock();
        if (fg_region_lock == NULL) return;
        PyObject_GetArenaAllocator(&fg_arena_base);
        PyObject_SetArenaAllocator(&ours);
        fg_regions_installed = 1;
    }
    if (fg_regions_installed != 1) return;
    fg_region_thread_inside = 1;
    fg_arenas_this_call = 0;
}

/* This thread leaves its outermost gradient call (GIL held): the region being filled is
 * closed to new arenas, and unmapped if none of its arenas is live. */
static void fg_regions_end(void) {
    if (!fg_region_thread_inside) return;
    fg_region_thread_inside = 0;
    if (fg_filling < 0) return;   /* (the common case, a small call: no lock to take) */
    PyThread_acquire_lock(fg_region_lock, WAIT_LOCK);
    if (fg_filling >= 0) {
        Py_ssize_t i = fg_filling;
        size_t used = (size_t)fg_regions[i].cut * fg_regions[i].arena_size;
        fg_filling = -1;
        if (fg_regions[i].live == 0)
            fg_region_close(i);
        else if (used < FG_REGION_BYTES)   /* a huge page was faulted in for the whole region */
            madvise(fg_regions[i].base + used, FG_REGION_BYTES - used, MADV_DONTNEED);
    }
    PyThread_release_lock(fg_region_lock);
}

/* In the child of a fork: a lock another thread held at the fork would never be released. */
static void fg_regions_after_fork(void) {
    PyThread_type_lock fresh;
    if (fg_regions_installed != 1) return;
    fresh = PyThread_allocate_lock();
    if (fresh != NULL) fg_region_lock = fresh;   /* (the parent's is left: it may be held) */
}

static int fg_regions_active(void) { return fg_regions_installed == 1; }
static Py_ssize_t fg_regions_count(void) { return fg_nregions; }
static Py_ssize_t fg_regions_live_arenas(void) {
    Py_ssize_t i, n = 0;
    for (i = 0; i < fg_nregions; i++) n += fg_regions[i].live;
    return n;
}

#else   /* no huge pages to ask for: CPython's arenas as they are */

static void fg_regions_begin(void) {}
static void fg_regions_end(void) {}
static void fg_regions_after_fork(void) {}
static int fg_regions_active(void) { return 0; }
static Py_ssize_t fg_regions_count(void) { return 0; }
static Py_ssize_t fg_regions_live_arenas(void) { return 0; }

#endif
#endif
