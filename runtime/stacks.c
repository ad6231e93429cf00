/*
 * stacks.c - capture, deduplicate and record the call stacks of
 * allocations (see stacks.h for the contract).
 *
 * Flow: the recorder calls mf_stacks_capture() at an allocation, with the
 * thread's memo of its last walk.  memflow's own walker (unwind.c) walks
 * the stack from each function's DWARF CFI, only down to the first frame
 * that is as it was in the last walk, and a walk that is the same as the
 * last keeps the last id without the table; where that walker cannot (an
 * unusual CFI rule, a signal frame, code without CFI), libunwind's
 * unw_backtrace() walks it all, from a per-thread cache of frame
 * descriptions built from the same CFI.  Both follow the frame pointer
 * exactly for the functions whose CFI says they keep one (and only for
 * those: a blind frame-pointer walk would silently skip the callers of
 * -fomit-frame-pointer code).  The leading frames that
 * belong to memflow (and to the unwinder) are dropped by address range, the
 * rest is hashed and looked up without a lock in an open-addressing table of
 * pointers to entries in an mmap'd arena.  A miss takes the lock, appends the
 * entry, writes the MODULE records of modules not yet in this log and the
 * STACK record, and only then publishes the entry, so a thread that finds a
 * stack knows its record is in the log.  The table grows by doubling; old
 * slot arrays stay mapped because readers may still be walking them (the
 * waste is less than the final table).
 *
 * libunwind is loaded with dlopen(RTLD_LOCAL) when stacks are turned on, not
 * linked: its _Unwind_* and backtrace symbols then never interpose on the
 * program's own (libgcc_s, libc), and a program that never asks for stacks
 * never loads it.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "frames.h"
#include "log_format.h"
#include "recorder.h"
#include "slots.h"
#include "stacks.h"
#include "thread_state.h"

#ifndef MF_LIBUNWIND_SONAME
#define MF_LIBUNWIND_SONAME "libunwind.so.8"
#endif

#define NAME_OF(sym) NAME_OF_(sym)
#define NAME_OF_(sym) #sym

#define OWN_FRAMES_MAX MF_STACKS_OWN_MAX
#define SKIP_MAX MF_STACKS_SKIP_MAX
#define MAX_MODULES 4096
#define MAX_OWN 16
#define BUILD_ID_MAX 24     /* bytes of the MODULE record's build_id */
#define ARENA_CHUNK ((size_t)4 << 20)

typedef int (*backtrace_fn)(void **, int);

typedef struct entry {
    uint64_t hash;
    uint32_t id;
    uint32_t depth;
    uint32_t written_gen;    /* log generation its STACK record went to */
    uint32_t reserved;
    uint64_t ip[];
} entry;

typedef struct module {
    uintptr_t start, end, bias;
    uint32_t path;           /* string id */
    uint32_t written_gen;
    uint32_t build_id_len;
    uint8_t build_id[BUILD_ID_MAX];
    uint8_t own;             /* memflow's or the unwinder's: leading frames dropped */
    uint8_t gone;            /* replaced by a later module at the same addresses */
} module;

typedef struct range {
    uintptr_t start, end;
} range;

static backtrace_fn unwind;
static unsigned max_depth;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mf_slots *table;     /* read with acquire, replaced under lock */
static char *arena;
static size_t arena_left, arena_used;
static uint32_t n_stacks;
static uint32_t generation = 1;
static int full;              /* the table refused a stack: misses return 0 */
static uint64_t lost;

static module *modules;       /* MAX_MODULES, mmap'd */
static uint32_t n_modules;
static unsigned long long seen_adds, seen_subs;
static range own[MAX_OWN];    /* written before n_own is published */
static uint32_t n_own;

/* ---- modules ------------------------------------------------------------ */

/* NT_GNU_BUILD_ID from the module's PT_NOTE segments, in memory. */
static uint32_t read_build_id(const struct dl_phdr_info *info, uint8_t *out)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        const char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const void *)p;
            const char *name = p + sizeof *nh;
            const char *desc = name + ((nh->n_namesz + 3) & ~3u);
            const char *next = desc + ((nh->n_descsz + 3) & ~3u);
            if (next > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(name, "GNU", 4) == 0) {
                uint32_t n = nh->n_descsz < BUILD_ID_MAX ? nh->n_descsz : BUILD_ID_MAX;
                memcpy(out, desc, n);
                return n;
            }
            p = next;
        }
    }
    return 0;
}

static int is_memflow_library(const char *path)
{
    const char *base = strrchr(path, '/');
    return strncmp(base ? base + 1 : path, "libmemflow", 10) == 0;
}

/* Add one loaded module unless it is known; returns -1 when the table is full. */
static int add_module(const struct dl_phdr_info *info, const char *path)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (hi <= lo)
        return 0;
    uint32_t path_id = mf_recorder_intern(path, strlen(path));
    for (uint32_t i = 0; i < n_modules; i++) {
        module *m = &modules[i];
        if (!m->gone && m->start == lo && m->bias == info->dlpi_addr && m->path == path_id)
            return 0;
    }
    if (n_modules >= MAX_MODULES)
        return -1;
    for (uint32_t i = 0; i < n_modules; i++)
        if (!modules[i].gone && modules[i].start < hi && lo < modules[i].end)
            modules[i].gone = 1; /* unloaded; its addresses now hold another module */
    module *m = &modules[n_modules];
    memset(m, 0, sizeof *m);
    m->start = lo;
    m->end = hi;
    m->bias = info->dlpi_addr;
    m->path = path_id;
    m->build_id_len = read_build_id(info, m->build_id);
    m->own = is_memflow_library(path) ||
             ((uintptr_t)unwind >= lo && (uintptr_t)unwind < hi);
    if (m->own && n_own < MAX_OWN) {
        own[n_own] = (range){ lo, hi };
        __atomic_store_n(&n_own, n_own + 1, __ATOMIC_RELEASE);
    }
    n_modules++;
    return 0;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    int *first = arg;
    const char *path = info->dlpi_name;
    char exe[4096];
    if ((!path || !*path) && *first) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        path = exe;
    } else if (!path || !*path) {
        path = "[unnamed]";
    }
    *first = 0;
    seen_adds = info->dlpi_adds;
    seen_subs = info->dlpi_subs;
    return add_module(info, path);
}

/* Read the loaded modules again.  Lock held. */
static void scan_modules(void)
{
    if (!modules && !(modules = mf_map_zeroed(MAX_MODULES * sizeof *modules)))
        return;
    int first = 1;
    dl_iterate_phdr(scan_one, &first);
}

static int peek_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    unsigned long long *counts = arg;
    counts[0] = info->dlpi_adds;
    counts[1] = info->dlpi_subs;
    return 1; /* the counters are the same in every entry: stop */
}

/* Rescan when a module was loaded or unloaded since the last scan. */
static void refresh_modules(void)
{
    unsigned long long counts[2] = { 0, 0 };
    dl_iterate_phdr(peek_counts, counts);
    if (!modules || counts[0] != seen_adds || counts[1] != seen_subs)
        scan_modules();
}

static module *module_of(uint64_t ip)
{
    for (uint32_t i = n_modules; i-- > 0;) {
        module *m = &modules[i];
        if (!m->gone && ip >= m->start && ip < m->end)
            return m;
    }
    return NULL;
}

static void write_module(mf_thread_state *t, module *m)
{
    mf_rec_module *r = mf_thread_reserve(t, sizeof *r);
    if (!r)
        return;
    r->bias = m->bias;
    r->start = m->start;
    r->end = m->end;
    r->build_id_len = m->build_id_len;
    r->reserved = 0;
    memset(r->build_id, 0, sizeof r->build_id);
    memcpy(r->build_id, m->build_id, m->build_id_len);
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_MODULE, sizeof *r, m->path));
    m->written_gen = generation;
}

/* ---- the table ------------------------------------------------------------ */

static uint64_t hash_frames(void *const *raw, uint32_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h ^= (uintptr_t)raw[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h ? h : 1;
}

static int same_frames(const entry *e, uint64_t hash, void *const *raw, uint32_t n)
{
    if (e->hash != hash || e->depth != n)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (e->ip[i] != (uintptr_t)raw[i])
            return 0;
    return 1;
}

static entry *find(const mf_slots *s, uint64_t hash, void *const *raw, uint32_t n)
{
    if (!s)
        return NULL;
    for (uint32_t i = (uint32_t)hash & s->mask;; i = (i + 1) & s->mask) {
        entry *e = __atomic_load_n((entry **)&s->slot[i], __ATOMIC_ACQUIRE);
        if (!e || same_frames(e, hash, raw, n))
            return e;
    }
}

static entry *arena_entry(uint32_t n)
{
    size_t bytes = sizeof(entry) + n * sizeof(uint64_t);
    if (bytes > arena_left) {
        if (arena_used + ARENA_CHUNK > MF_STACKS_ARENA)
            return NULL;
        char *chunk = mf_map_zeroed(ARENA_CHUNK);
        if (!chunk)
            return NULL;
        arena = chunk;
        arena_left = ARENA_CHUNK;
        arena_used += ARENA_CHUNK;
    }
    entry *e = (entry *)arena;
    arena += bytes;
    arena_left -= bytes;
    return e;
}

/* Write e's STACK record, after the MODULE records it needs.  Lock held. */
static void write_stack(entry *e)
{
    mf_thread_state *t = mf_thread_state_get();
    if (!t)
        return;
    int native = 0;
    for (uint32_t i = 0; i < e->depth; i++) {
        if (mf_stack_entry_is_frame(e->ip[i]))
            mf_frames_ensure_written(mf_stack_entry_frame(e->ip[i]));
        else
            native = 1;
    }
    if (native)
        refresh_modules();
    int rescanned = 0;
    for (uint32_t i = 0; native && i < e->depth; i++) {
        if (mf_stack_entry_is_frame(e->ip[i]))
            continue;
        module *m = module_of(e->ip[i]);
        if (!m && !rescanned) { /* loaded between the peek and now */
            rescanned = 1;
            scan_modules();
            m = module_of(e->ip[i]);
        }
        if (m && m->written_gen != generation)
            write_module(t, m);
    }
    uint32_t size = (uint32_t)(sizeof(mf_rec_stack) + e->depth * sizeof(uint64_t));
    mf_rec_stack *r = mf_thread_reserve(t, size);
    if (!r)
        return;
    r->depth = e->depth;
    r->reserved = 0;
    memcpy(r + 1, e->ip, e->depth * sizeof(uint64_t));
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_STACK, size, e->id));
    e->written_gen = generation;
}

/* The table cannot take a new stack: say so once, count the loss. */
static uint32_t refuse(void)
{
    __atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
    if (!full) {
        __atomic_store_n(&full, 1, __ATOMIC_RELAXED);
        fprintf(stderr, "memflow: the stack table is full (%u distinct stacks, %zu MiB); "
                "allocations with new call stacks are recorded without one\n", n_stacks,
                arena_used >> 20);
        mf_recorder_note(MF_NOTE_STACKS_FULL, n_stacks);
    }
    return 0;
}

static __attribute__((noinline)) uint32_t add_stack(uint64_t hash, void *const *raw,
                                                    uint32_t n)
{
    pthread_mutex_lock(&lock);
    entry *e = find(table, hash, raw, n);
    uint32_t id;
    if (e) {
        if (e->written_gen != generation)
            write_stack(e);
        id = e->id;
    } else if (n_stacks >= MF_STACKS_MAX || mf_slots_reserve(&table) < 0 || !(e = arena_entry(n))) {
        id = refuse();
    } else {
        e->hash = hash;
        e->id = id = ++n_stacks;
        e->depth = n;
        for (uint32_t i = 0; i < n; i++)
            e->ip[i] = (uintptr_t)raw[i];
        write_stack(e);
        mf_slots_put(table, e);
    }
    pthread_mutex_unlock(&lock);
    return id;
}

static uint32_t lookup(void *const *raw, uint32_t n)
{
    uint64_t hash = hash_frames(raw, n);
    entry *e = find(__atomic_load_n(&table, __ATOMIC_ACQUIRE), hash, raw, n);
    if (MF_LIKELY(e && e->written_gen == __atomic_load_n(&generation, __ATOMIC_RELAXED)))
        return e->id;
    if (!e && __atomic_load_n(&full, __ATOMIC_RELAXED)) {
        __atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
        return 0;
    }
    return add_stack(hash, raw, n);
}

/* How many of the first n frames are memflow's own (or the unwinder's). */
static uint32_t leading_own(void *const *raw, uint32_t n)
{
    uint32_t k = __atomic_load_n(&n_own, __ATOMIC_ACQUIRE);
    uint32_t i = 0;
    for (; i < n; i++) {
        uintptr_t a = (uintptr_t)raw[i];
        uint32_t j = 0;
        while (j < k && !(a >= own[j].start && a < own[j].end))
            j++;
        if (j == k)
            break;
    }
    return i;
}

static int frames_wanted(unsigned skip)
{
    return (int)(max_depth + OWN_FRAMES_MAX + skip);
}

/* The frames of a walk (n return addresses) memflow's own dropped, then
 * skip more, at most max_depth kept, copied into out; how many. */
static uint32_t kept_frames(void *const *raw, uint32_t n, unsigned skip, uint64_t *out)
{
    uint32_t first = leading_own(raw, n) + skip;
    if (first >= n)
        return 0;
    uint32_t depth = n - first < max_depth ? n - first : max_depth;
    for (uint32_t i = 0; i < depth; i++)
        out[i] = (uintptr_t)raw[first + i];
    return depth;
}

/* The id of a walk's frames (n return addresses), kept as kept_frames keeps them. */
static uint32_t id_of_walk(void *const *raw, uint32_t n, unsigned skip)
{
    uint64_t kept[MF_STACK_MAX_DEPTH];
    uint32_t depth = kept_frames(raw, n, skip, kept);
    return depth ? lookup((void *const *)(void *)kept, depth) : 0;
}

/* With memflow's walker and the thread's memo; -1 where it cannot walk.  A
 * walk the same as the last, in the same log, keeps the last id. */
static int64_t capture_with_memo(mf_unwind_memo *memo, unsigned skip)
{
    uint64_t ips[MF_STACKS_RAW_MAX];
    int same;
    int n = mf_unwind_walk(memo, ips, frames_wanted(skip), &same);
    if (n < 0)
        return -1;
    uint32_t gen = __atomic_load_n(&generation, __ATOMIC_RELAXED);
    if (same && memo->stack_id && memo->stack_gen == gen && memo->stack_skip == skip)
        return memo->stack_id;
    if (same)
        n = mf_unwind_memo_ips(memo, ips);
    _Static_assert(sizeof(void *) == sizeof(uint64_t), "addresses are 64-bit");
    uint32_t id = id_of_walk((void *const *)(void *)ips, (uint32_t)n, skip);
    memo->stack_id = id;
    memo->stack_gen = gen;
    memo->stack_skip = skip;
    return id;
}

uint32_t mf_stacks_walk(mf_unwind_memo *memo, unsigned skip, uint64_t *out)
{
    backtrace_fn bt = __atomic_load_n(&unwind, __ATOMIC_ACQUIRE);
    if (!bt)
        return 0;
    if (skip > SKIP_MAX)
        skip = SKIP_MAX;
    uint32_t n = 0;
    MF_INTERNAL_BEGIN();
    uint64_t ips[MF_STACKS_RAW_MAX];
    int same, got = memo ? mf_unwind_walk(memo, ips, frames_wanted(skip), &same) : -1;
    if (got >= 0) {
        if (same)
            got = mf_unwind_memo_ips(memo, ips);
        memo->stack_id = 0; /* no id stored for this walk */
        n = kept_frames((void *const *)(void *)ips, (uint32_t)got, skip, out);
    } else {
        void *raw[MF_STACKS_RAW_MAX];
        got = bt(raw, frames_wanted(skip));
        n = kept_frames(raw, got > 0 ? (uint32_t)got : 0, skip, out);
    }
    MF_INTERNAL_END();
    return n;
}

uint32_t mf_stacks_of(const uint64_t *entries, uint32_t depth)
{
    if (depth == 0)
        return 0;
    if (depth > MF_STACK_MAX_DEPTH)
        depth = MF_STACK_MAX_DEPTH;
    MF_INTERNAL_BEGIN();
    uint32_t id = lookup((void *const *)(const void *)entries, depth);
    MF_INTERNAL_END();
    return id;
}

uint32_t mf_stacks_capture(mf_unwind_memo *memo, unsigned skip)
{
    backtrace_fn bt = __atomic_load_n(&unwind, __ATOMIC_ACQUIRE);
    if (!bt)
        return 0;
    if (skip > SKIP_MAX)
        skip = SKIP_MAX;
    MF_INTERNAL_BEGIN();
    int64_t id = memo ? capture_with_memo(memo, skip) : -1;
    if (id < 0) {
        void *raw[MF_STACKS_RAW_MAX];
        int got = bt(raw, frames_wanted(skip));
        id = id_of_walk(raw, got > 0 ? (uint32_t)got : 0, skip);
    }
    MF_INTERNAL_END();
    return (uint32_t)id;
}

/* ---- set-up ---------------------------------------------------------------- */

static int load_unwinder(char *err, size_t errlen)
{
    void *h = dlopen(MF_LIBUNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "cannot load %s (libunwind): %s", MF_LIBUNWIND_SONAME,
                 dlerror());
        return -1;
    }
    backtrace_fn bt = (backtrace_fn)dlsym(h, "unw_backtrace");
    unw_addr_space_t *space = dlsym(h, NAME_OF(unw_local_addr_space));
    int (*policy)(unw_addr_space_t, unw_caching_policy_t) =
        (int (*)(unw_addr_space_t, unw_caching_policy_t))dlsym(h, NAME_OF(unw_set_caching_policy));
    int (*cache_size)(unw_addr_space_t, size_t, int) =
        (int (*)(unw_addr_space_t, size_t, int))dlsym(h, NAME_OF(unw_set_cache_size));
    if (!bt || !space || !policy) {
        snprintf(err, errlen, "%s lacks unw_backtrace or %s", MF_LIBUNWIND_SONAME,
                 NAME_OF(unw_set_caching_policy));
        dlclose(h);
        return -1;
    }
    /* Per-thread caches: no lock between threads, and the fast trace
     * remembers each return address's frame layout. */
    policy(*space, UNW_CACHE_PER_THREAD);
    if (cache_size)
        cache_size(*space, 1024, 0);
    __atomic_store_n(&unwind, bt, __ATOMIC_RELEASE);
    return 0;
}

int mf_stacks_enable(unsigned depth, char *err, size_t errlen)
{
    int rc = 0;
    MF_INTERNAL_BEGIN();
    pthread_mutex_lock(&lock);
    if (!unwind && (rc = load_unwinder(err, errlen)) == 0)
        scan_modules(); /* knows memflow's own ranges from the first capture on */
    if (rc == 0)
        max_depth = depth < MF_STACK_MAX_DEPTH ? depth : MF_STACK_MAX_DEPTH;
    pthread_mutex_unlock(&lock);
    MF_INTERNAL_END();
    return rc;
}

void mf_stacks_log_opened(void)
{
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELAXED);
}

uint32_t mf_stacks_generation(void)
{
    return __atomic_load_n(&generation, __ATOMIC_RELAXED);
}

uint64_t mf_stacks_lost(void)
{
    return __atomic_load_n(&lost, __ATOMIC_RELAXED);
}

void mf_stacks_lock(void)
{
    pthread_mutex_lock(&lock);
}

void mf_stacks_unlock(void)
{
    pthread_mutex_unlock(&lock);
}

void mf_stacks_after_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    lock = fresh;
    lost = 0;
}
