/*
 * preload.c - the CPU capture: the whole malloc family, served by jemalloc.
 *
 * libmemflow-preload.so defines malloc, calloc, realloc, reallocarray, free,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * malloc_usable_size (C++ operator new/delete are in cxx.cc, _exit and
 * the exec family in process_end.c).  `memflow run` puts it in LD_PRELOAD,
 * so these definitions win over libc's.  malloc, calloc and free forward to
 * jemalloc's own malloc, calloc and free (their fast paths: found in
 * jemalloc's library at load, before that its mallocx/dallocx), the rest to
 * its non-standard API (mallocx, rallocx, xallocx, dallocx, sallocx); the
 * usable size comes from jemalloc (nallocx: the size class a request gets,
 * without looking the block up), and one event goes to the recorder.
 *
 * Ordering: an allocation is recorded after jemalloc returns it and a free
 * before the block goes back, so a block's free always has an earlier time
 * than any later allocation of the same address by another thread.
 *
 * While profiling is stopped (or inside memflow's own code) the extra cost
 * is one predictable branch.  Linking libmemflow for the API alone does not
 * load this file: a program that only links the API keeps its own malloc.
 */
#include <dlfcn.h>
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

/* Record unless stopped or inside memflow: the one branch of the STOP path
 * (taken, under memflow run, by nearly every call). */
#define SHOULD_RECORD() MF_LIKELY(mf_recording_now() && !mf_thread_internal)

/*
 * jemalloc's own malloc, calloc and free.  Its mallocx and dallocx take the
 * general path (flags decoded, every option checked); malloc and free are
 * its fast paths, about 2 ns a call quicker.  They cannot be called by
 * name from here (these names are ours), so the constructor finds them in
 * jemalloc's library; until it runs (allocations by libraries' constructors)
 * the mallocx forms below serve.
 */
static void *early_malloc(size_t size)
{
    return mallocx(size ? size : 1, 0);
}

static void *early_calloc(size_t n, size_t size)
{
    size_t total = n * size; /* calloc checked that it does not overflow */
    return mallocx(total ? total : 1, JE_ZERO);
}

static void early_free(void *p)
{
    dallocx(p, 0);
}

static struct {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void (*free)(void *);
} je = { early_malloc, early_calloc, early_free };

/* name in jemalloc's own library (the one that defines mallocx), or NULL. */
static void *jemalloc_symbol(void *lib, const Dl_info *je_info, const char *name)
{
    void *fn = dlsym(lib, name);
    Dl_info info;
    if (!fn || !dladdr(fn, &info) || info.dli_fbase != je_info->dli_fbase)
        return NULL;
    return fn;
}

static void use_jemalloc_fast_paths(void)
{
    Dl_info je_info;
    if (!dladdr((void *)mallocx, &je_info) || !je_info.dli_fname)
        return;
    void *lib = dlopen(je_info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
    if (!lib)
        return;
    void *m = jemalloc_symbol(lib, &je_info, "malloc");
    void *c = jemalloc_symbol(lib, &je_info, "calloc");
    void *f = jemalloc_symbol(lib, &je_info, "free");
    if (m && c && f) {
        je.malloc = (void *(*)(size_t))m;
        je.calloc = (void *(*)(size_t, size_t))c;
        je.free = (void (*)(void *))f;
    }
    dlclose(lib); /* only drops the reference RTLD_NOLOAD took */
}

/* The loader's own allocations while looking are memflow's, not recorded. */
__attribute__((constructor)) static void find_jemalloc_fast_paths(void)
{
    MF_INTERNAL_BEGIN();
    use_jemalloc_fast_paths();
    MF_INTERNAL_END();
}

/*
 * The usable size of a block just had from jemalloc for size bytes with
 * flags: the size class nallocx names, which is what sallocx would say of
 * the block (tests/alloc_e2e.sh compares the two over every size class and
 * alignment), without sallocx's lookup of the block.
 */
static inline size_t usable_size(size_t size, int flags)
{
    return nallocx(size ? size : 1, flags);
}

static inline void *record_new(void *p, size_t requested, int je_flags, unsigned flags)
{
    if (SHOULD_RECORD() && p)
        mf_recorder_cpu_alloc(p, requested, usable_size(requested, je_flags), flags);
    return p;
}

static inline int is_power_of_two(size_t n)
{
    return n && !(n & (n - 1));
}

MF_EXPORT void *malloc(size_t size)
{
    void *p = je.malloc(size);
    if (MF_UNLIKELY(!p)) {
        errno = ENOMEM;
        return NULL;
    }
    return record_new(p, size, 0, 0);
}

MF_EXPORT void *calloc(size_t n, size_t size)
{
    size_t total;
    if (MF_UNLIKELY(__builtin_mul_overflow(n, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = je.calloc(n, size);
    if (MF_UNLIKELY(!p)) {
        errno = ENOMEM;
        return NULL;
    }
    return record_new(p, total, 0, 0);
}

/* The recorder keeps errno (free() must not change it). */
MF_EXPORT void free(void *p)
{
    if (MF_UNLIKELY(!p))
        return;
    if (SHOULD_RECORD())
        mf_recorder_cpu_free(p, 0);
    je.free(p);
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
    return record_new(p, size, JE_ALIGN(align), 0);
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
