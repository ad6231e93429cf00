/*
 * preload.c - the CPU capture: the whole malloc family, served by jemalloc.
 *
 * libmemflow-preload.so defines malloc, calloc, realloc, reallocarray, free,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * malloc_usable_size (C++ operator new/delete are in cxx.cc, _exit and
 * the exec family in process_end.c).  `memflow run` puts it in LD_PRELOAD,
 * so these definitions win over libc's.  Each forwards to jemalloc's
 * non-standard API (mallocx, rallocx, xallocx, nallocx, dallocx, sallocx),
 * takes the usable size from jemalloc, and hands one event to the recorder.
 *
 * Ordering: an allocation is recorded after jemalloc returns it and a free
 * before the block goes back, so a block's free always has an earlier time
 * than any later allocation of the same address by another thread.
 *
 * While profiling is stopped (or inside memflow's own code) the extra cost
 * is one predictable branch.  Linking libmemflow for the API alone does not
 * load this file: a program that only links the API keeps its own malloc.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "recorder.h"

/* jemalloc's non-standard API (declared here: its header also declares the
 * standard names this file defines). */
void *mallocx(size_t size, int flags);
void *rallocx(void *ptr, size_t size, int flags);
size_t xallocx(void *ptr, size_t size, size_t extra, int flags);
size_t nallocx(size_t size, int flags);
void dallocx(void *ptr, int flags);
size_t sallocx(const void *ptr, int flags);
/* glibc's <malloc.h> extensions, defined below. */
void *memalign(size_t align, size_t size);
void *pvalloc(size_t size);
size_t malloc_usable_size(void *p);

#define JE_ZERO 0x40
#define JE_ALIGN(a) ((int)(ffsll((long long)(a)) - 1))

/* Record unless stopped or inside memflow: the one branch of the STOP path. */
#define SHOULD_RECORD() MF_UNLIKELY(mf_recording_now() && !mf_thread_internal)

static inline void *record_new(void *p, size_t requested, unsigned flags)
{
    if (SHOULD_RECORD() && p)
        mf_recorder_cpu_alloc(p, requested, sallocx(p, 0), flags);
    return p;
}

static inline int is_power_of_two(size_t n)
{
    return n && !(n & (n - 1));
}

MF_EXPORT void *malloc(size_t size)
{
    void *p = mallocx(size ? size : 1, 0);
    if (MF_UNLIKELY(!p)) {
        errno = ENOMEM;
        return NULL;
    }
    return record_new(p, size, 0);
}

MF_EXPORT void *calloc(size_t n, size_t size)
{
    size_t total;
    if (MF_UNLIKELY(__builtin_mul_overflow(n, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = mallocx(total ? total : 1, JE_ZERO);
    if (MF_UNLIKELY(!p)) {
        errno = ENOMEM;
        return NULL;
    }
    return record_new(p, total, 0);
}

MF_EXPORT void free(void *p)
{
    if (MF_UNLIKELY(!p))
        return;
    if (SHOULD_RECORD()) {
        int saved = errno;
        mf_recorder_cpu_free(p, 0);
        errno = saved;
    }
    dallocx(p, 0);
}

/*
 * Resize old in place if jemalloc can give it exactly the size class that
 * rallocx would (growing into free neighbours, shrinking a large block).
 */
static int resized_in_place(void *old, size_t size)
{
    size_t real = xallocx(old, size, 0, 0);
    return real >= size && real == nallocx(size, 0);
}

/*
 * A realloc that is recorded.  Nothing is recorded unless it succeeds: the
 * new block is had before the old one is given up, so a failure leaves the
 * old block and the log as they were.  On success the old block's free and
 * the new block's allocation are recorded, both flagged MF_FLAG_REALLOC,
 * even when it was resized in place; the free is recorded before the old
 * block goes back to jemalloc, since another thread may get its address
 * at once.
 */
static __attribute__((noinline)) void *realloc_recorded(void *old, size_t size)
{
    if (resized_in_place(old, size)) {
        mf_recorder_cpu_free(old, MF_FLAG_REALLOC);
        mf_recorder_cpu_alloc(old, size, sallocx(old, 0), MF_FLAG_REALLOC);
        return old;
    }
    void *p = mallocx(size, 0);
    if (MF_UNLIKELY(!p)) {
        errno = ENOMEM;
        return NULL;
    }
    size_t keep = sallocx(old, 0);
    memcpy(p, old, keep < size ? keep : size);
    mf_recorder_cpu_free(old, MF_FLAG_REALLOC);
    dallocx(old, 0);
    mf_recorder_cpu_alloc(p, size, sallocx(p, 0), MF_FLAG_REALLOC);
    return p;
}

/* realloc: NULL -> malloc; size 0 -> free and return NULL (glibc's
 * behaviour); otherwise rallocx, or realloc_recorded while recording. */
MF_EXPORT void *realloc(void *old, size_t size)
{
    if (!old)
        return malloc(size);
    if (size == 0) {
        free(old);
        return NULL;
    }
    if (SHOULD_RECORD())
        return realloc_recorded(old, size);
    void *p = rallocx(old, size, 0);
    if (MF_UNLIKELY(!p))
        errno = ENOMEM;
    return p;
}

MF_EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(old, total);
}

static void *aligned(size_t align, size_t size)
{
    void *p = mallocx(size ? size : 1, JE_ALIGN(align));
    if (MF_UNLIKELY(!p))
        return NULL;
    return record_new(p, size, 0);
}

MF_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    if (!is_power_of_two(align) || align % sizeof(void *))
        return EINVAL;
    void *p = aligned(align, size);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

MF_EXPORT void *aligned_alloc(size_t align, size_t size)
{
    if (!is_power_of_two(align)) {
        errno = EINVAL;
        return NULL;
    }
    void *p = aligned(align, size);
    if (!p)
        errno = ENOMEM;
    return p;
}

/* memalign: glibc rounds a non-power-of-two alignment up; so do we. */
MF_EXPORT void *memalign(size_t align, size_t size)
{
    if (align > ((size_t)1 << 62)) {
        errno = EINVAL;
        return NULL;
    }
    size_t a = sizeof(void *);
    while (a < align)
        a <<= 1;
    void *p = aligned(a, size);
    if (!p)
        errno = ENOMEM;
    return p;
}

MF_EXPORT void *valloc(size_t size)
{
    return memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

MF_EXPORT void *pvalloc(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t rounded;
    if (__builtin_add_overflow(size, page - 1, &rounded)) {
        errno = ENOMEM;
        return NULL;
    }
    rounded &= ~(page - 1);
    return memalign(page, rounded ? rounded : page);
}

MF_EXPORT size_t malloc_usable_size(void *p)
{
    return p ? sallocx(p, 0) : 0;
}
