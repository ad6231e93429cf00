/*
 * recorder.c - stamp, attribute and append events to the log.
 *
 * Capture code calls the mf_recorder_* functions of recorder.h.  Each thread
 * appends to its own chunk of the shared log mapping through one
 * initial-exec TLS pointer; the hot path (mf_recorder_cpu_alloc/free) is a
 * TLS load, a bounds check, the clock and a handful of stores ending with a
 * release store of the record word.  Everything rarer - creating a thread's
 * state, claiming a chunk, interning, sampling, fork - is out of line.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memflow.h"
#include "config.h"
#include "error.h"
#include "clock_fast.h"
#include "cuda_seen.h"
#include "frames.h"
#include "intern.h"
#include "log_writer.h"
#include "recorder.h"
#include "stacks.h"
#include "stage.h"
#include "thread_state.h"
#include "unwind.h"

/*
 * MF_RECORDING_UNDECIDED until the first event or the library's constructor
 * decides: then 1 (recording) or 0.  Starting undecided lets `memflow run`
 * record from the very first malloc, which may come before any constructor.
 */
#define MF_RECORDING_UNDECIDED 2
_Atomic int mf_recording = MF_RECORDING_UNDECIDED;
__thread int mf_thread_internal __attribute__((tls_model("initial-exec")));
static __thread mf_thread_state *tls_state __attribute__((tls_model("initial-exec")));

static int log_open;              /* read with seq_cst against interning */
static int running, paused;
static uint64_t sample_every;     /* sample_rate, copied at start (atomic) */
static unsigned stack_depth;      /* `stacks`, copied at start; 0 = off (atomic) */
static mf_python_stack_fn python_stack;   /* Python stacks (atomic) */
static int python_every_thread;   /* python_stack for threads without a slot too (atomic) */
static uint64_t sample_counters[512];
static mf_sampler_fn samplers[2];  /* atomic */
static int sampled_at_source[2];  /* the capture counts and samples itself (atomic) */
static mf_flush_fn flush_hooks[8];
static mf_start_hook start_hook;   /* atomic */
static int n_flush_hooks;         /* written under state_lock, read atomically */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static mf_thread_state *free_states;
static pthread_key_t state_key;
static pthread_once_t state_key_once = PTHREAD_ONCE_INIT;

/* ---- per-thread state -------------------------------------------------- */

/* Seal the chunk t writes: its records reach t->cursor (mf_chunk_seal).
 * Only t's own thread calls this (a thread's exit, the process's end,
 * recording stops); only while recording, as a record would be written: a
 * stopped recorder stores nothing into its chunks. */
static void seal_chunk(const mf_thread_state *t)
{
    if (t && t->limit && t->cursor && atomic_load_explicit(&mf_recording, memory_order_relaxed)) {
        char *chunk = t->limit - MF_CHUNK_SIZE;
        mf_chunk_seal(chunk, (uint64_t)(t->cursor - chunk));
    }
}

static void state_release(void *arg)
{
    mf_thread_state *t = arg;
    seal_chunk(t); /* the next thread to start may write on past it */
    if (tls_state == t)
        tls_state = NULL;
    pthread_mutex_lock(&free_lock);
    t->next_free = free_states;
    free_states = t;
    pthread_mutex_unlock(&free_lock);
}

static void state_key_create(void)
{
    pthread_key_create(&state_key, state_release);
}

static void write_thread_record(mf_thread_state *t);

/* Hand a recycled state's chunk to the calling thread: an OWNER record,
 * then the thread's name. */
static void adopt_chunk(mf_thread_state *t)
{
    mf_rec_owner *r = mf_thread_reserve(t, sizeof *r);
    if (!r)
        return;
    r->time_ns = mf_clock_now();
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_OWNER, sizeof *r, t->tid));
    t->has_base = 0;
    write_thread_record(t);
}

/*
 * A state for a new thread: a recycled one (keeping the rest of its chunk,
 * so many short threads share chunks instead of each reserving 1 MiB), or
 * a fresh mapping.
 */
static mf_thread_state *state_new(void)
{
    pthread_mutex_lock(&free_lock);
    mf_thread_state *t = free_states;
    if (t)
        free_states = t->next_free;
    pthread_mutex_unlock(&free_lock);
    char *cursor = NULL, *limit = NULL;
    if (t) {
        cursor = t->cursor;
        limit = t->limit;
    } else {
        t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (t == MAP_FAILED)
            return NULL;
    }
    memset(t, 0, sizeof *t);
    t->tid = (uint32_t)syscall(SYS_gettid);
    t->stack[0] = MF_STRING_DEFAULT_SCOPE;
    t->cursor = cursor;
    t->limit = limit;
    return t;
}

mf_thread_state *mf_thread_state_get(void)
{
    mf_thread_state *t = tls_state;
    if (MF_LIKELY(t))
        return t;
    t = state_new();
    if (!t)
        return NULL;
    tls_state = t; /* before adopting: adopting interns the thread's name */
    pthread_once(&state_key_once, state_key_create);
    pthread_setspecific(state_key, t);
    if (t->cursor && t->cursor < t->limit) {
        t->named = 1;
        adopt_chunk(t);
    }
    return t;
}

/* ---- chunks and records ------------------------------------------------ */

static void write_string_record(mf_thread_state *t, uint32_t id);

/* The thread's name, from /proc (no malloc), as a THREAD record. */
static void write_thread_record(mf_thread_state *t)
{
    char path[64], name[64];
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", t->tid);
    ssize_t n = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, name, sizeof name - 1);
        close(fd);
    }
    if (n <= 0)
        n = snprintf(name, sizeof name, "thread %u", t->tid);
    while (n > 0 && name[n - 1] == '\n')
        n--;
    uint32_t id = mf_recorder_intern(name, (size_t)n);
    mf_rec_thread *r = mf_thread_reserve(t, sizeof *r);
    if (!r)
        return;
    r->tid = t->tid;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_THREAD, sizeof *r, id));
}

/* Claim a new chunk; keeps errno (free() must not change it). */
static __attribute__((noinline)) void *reserve_slow(mf_thread_state *t, uint32_t size)
{
    if (!__atomic_load_n(&log_open, __ATOMIC_SEQ_CST))
        return NULL;
    int saved_errno = errno;
    MF_INTERNAL_BEGIN();
    char *limit;
    char *chunk = mf_log_writer_claim(t->tid, &limit);
    if (chunk) {
        /* Done with the full chunk: a mapping of the file is unmapped, so
         * the program's resident memory does not grow with its log; a
         * staging slot goes to be copied into the file. */
        if (t->limit)
            mf_log_writer_release(t->limit - MF_CHUNK_SIZE, t->cursor);
        t->cursor = chunk;
        t->limit = limit;
        t->has_base = 0;
        if (!t->named) {
            t->named = 1;
            write_thread_record(t);
        }
    }
    MF_INTERNAL_END();
    errno = saved_errno;
    if (!chunk)
        return NULL;
    return (size_t)(t->limit - t->cursor) >= size ? t->cursor : NULL;
}

void *mf_thread_reserve(mf_thread_state *t, uint32_t size)
{
    if (MF_LIKELY((size_t)(t->limit - t->cursor) >= size))
        return t->cursor;
    return reserve_slow(t, size);
}

/* Room for a record of size bytes in the calling thread's chunk; *t is the
 * thread's state.  NULL when there is no log or no memory. */
static void *reserve_here(mf_thread_state **t, uint32_t size)
{
    *t = mf_thread_state_get();
    return *t ? mf_thread_reserve(*t, size) : NULL;
}

static void write_string_record(mf_thread_state *t, uint32_t id)
{
    uint32_t len;
    const char *text = mf_intern_text(id, &len);
    if (!text)
        return;
    uint32_t size = (uint32_t)((sizeof(mf_rec_string) + len + 7) & ~(size_t)7);
    mf_rec_string *r = mf_thread_reserve(t, size);
    if (!r)
        return;
    r->len = len;
    memcpy(r + 1, text, len);
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_STRING, size, id));
}

uint32_t mf_recorder_intern(const char *text, size_t len)
{
    int is_new;
    uint32_t id = mf_intern_lookup(text, len, &is_new);
    if (is_new && __atomic_load_n(&log_open, __ATOMIC_SEQ_CST)) {
        mf_thread_state *t = mf_thread_state_get();
        if (t)
            write_string_record(t, id);
    }
    return id;
}

const char *mf_recorder_string(uint32_t id)
{
    const char *s = mf_intern_text(id, NULL);
    return s ? s : "unknown";
}

uint32_t mf_recorder_current_scope(void)
{
    mf_thread_state *t = mf_thread_state_get();
    return t ? t->stack[t->depth] : MF_STRING_DEFAULT_SCOPE;
}

uint32_t mf_recorder_thread_id(void)
{
    mf_thread_state *t = mf_thread_state_get();
    return t ? t->tid : (uint32_t)syscall(SYS_gettid);
}

/* ---- sampling ---------------------------------------------------------- */

static void take_sample(uint16_t device)
{
    uint64_t value[MF_SAMPLE_VALUES] = { 0 };
    mf_sampler_fn fn = __atomic_load_n(&samplers[MF_DEVICE_KIND(device) & 1], __ATOMIC_ACQUIRE);
    if (fn) {
        MF_INTERNAL_BEGIN();
        fn(device, value);
        MF_INTERNAL_END();
    }
    mf_recorder_sample(device, mf_clock_now(), value);
}

/* Count one event on device; 1 when it is the sample_rate-th. */
static int count_toward_sample(uint16_t device)
{
    unsigned slot = (MF_DEVICE_KIND(device) & 1) * 256 + MF_DEVICE_INDEX(device);
    uint64_t n = __atomic_add_fetch(&sample_counters[slot], 1, __ATOMIC_RELAXED);
    uint64_t every = __atomic_load_n(&sample_every, __ATOMIC_RELAXED);
    return every && n % every == 0;
}

static __attribute__((noinline)) void sample_tick(uint16_t device)
{
    if (!__atomic_load_n(&sampled_at_source[MF_DEVICE_KIND(device) & 1], __ATOMIC_RELAXED) &&
        count_toward_sample(device))
        take_sample(device);
}

int mf_recorder_sample_due(uint16_t device)
{
    return __atomic_load_n(&sample_every, __ATOMIC_RELAXED) && count_toward_sample(device);
}

void mf_recorder_sample_at_source(unsigned device_kind)
{
    __atomic_store_n(&sampled_at_source[device_kind & 1], 1, __ATOMIC_RELAXED);
}

void mf_recorder_set_sampler(unsigned device_kind, mf_sampler_fn fn)
{
    __atomic_store_n(&samplers[device_kind & 1], fn, __ATOMIC_RELEASE);
}

void mf_recorder_sample(uint16_t device, uint64_t time_ns, const uint64_t value[MF_SAMPLE_VALUES])
{
    mf_thread_state *t;
    mf_rec_sample *r = reserve_here(&t, sizeof *r);
    if (!r)
        return;
    r->time_ns = time_ns;
    memcpy(r->value, value, sizeof r->value);
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_SAMPLE, sizeof *r, device));
}

/* ---- the hot path ------------------------------------------------------ */

static void autostart_decide(void);

/*
 * A thread's first CPU event: decide autostart if nobody has yet (the first
 * malloc of the process), then create the thread's state.  NULL when the
 * event is not to be recorded.
 */
static __attribute__((noinline)) mf_thread_state *thread_first_event(void)
{
    if (MF_UNLIKELY(mf_recording_now() == MF_RECORDING_UNDECIDED))
        autostart_decide();
    if (!mf_recording_now())
        return NULL;
    return mf_thread_state_get();
}

/* The aux of a compact record at time now: the time since the chunk's time
 * base, which moves to now. */
static inline uint32_t time_delta(mf_thread_state *t, uint64_t now)
{
    uint32_t delta = (uint32_t)(now - t->time_base);
    t->time_base = now;
    return delta;
}

/*
 * Room for a compact record of `size` bytes at time now, preceded by a TIME
 * record when the chunk has no time base yet or the delta would not fit in
 * 32 bits.  Both are reserved together so no chunk change falls between.
 * Returns the record's place and the delta to store in its word.
 */
static inline void *reserve_timed(mf_thread_state *t, uint32_t size, uint64_t now,
                                  uint32_t *delta)
{
    char *p = mf_thread_reserve(t, size + (uint32_t)sizeof(mf_rec_time));
    if (MF_UNLIKELY(!p))
        return NULL;
    if (MF_UNLIKELY(!t->has_base || now - t->time_base > UINT32_MAX)) {
        mf_rec_time *r = (mf_rec_time *)p;
        r->time_ns = now;
        mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_TIME, sizeof *r, 0));
        t->time_base = now;
        t->has_base = 1;
        p = t->cursor;
    }
    *delta = time_delta(t, now);
    return p;
}

static int fits_compact(size_t requested, size_t actual)
{
    return !(requested >> MF_CPU_SIZE_BITS || (actual - requested) >> 32 || actual < requested);
}

/* What the compact CPU records cannot hold goes into a full ALLOC record. */
static __attribute__((noinline)) void cpu_alloc_full(const void *addr, size_t requested,
                                                     size_t actual, unsigned flags,
                                                     uint32_t stack)
{
    mf_recorder_alloc_with_stack(MF_DEVICE(MF_DEVICE_CPU, 0), flags, 0, (uintptr_t)addr,
                                 requested, actual, 0, MF_STRING_UNKNOWN, 0, stack);
}

/* The payload of a CPU_ALLOC record. */
static inline void fill_cpu_alloc(mf_rec_cpu_alloc *r, const mf_thread_state *t,
                                  const void *addr, size_t requested, size_t actual,
                                  unsigned flags)
{
    r->addr = (uintptr_t)addr;
    r->requested_flags = requested | (uint64_t)flags << MF_CPU_SIZE_BITS;
    r->slack = (uint32_t)(actual - requested);
    r->scope = t->stack[t->depth];
}

void mf_recorder_set_python_stacks(mf_python_stack_fn fn, int every_thread)
{
    __atomic_store_n(&python_stack, fn, __ATOMIC_RELEASE);
    __atomic_store_n(&python_every_thread, every_thread != 0, __ATOMIC_RELEASE);
}

uint32_t mf_recorder_stack_generation(void)
{
    return mf_stacks_generation();
}

/* Whether the calling thread's allocations go through python_stack. */
static inline int python_on(const mf_thread_state *t)
{
    return t->python != NULL || __atomic_load_n(&python_every_thread, __ATOMIC_RELAXED);
}

void mf_recorder_thread_python(void *python)
{
    mf_thread_state *t = mf_thread_state_get();
    if (t)
        t->python = python;
}

/* The calling thread's stack id: its native frames (when `stacks` is on,
 * memflow's own and `skip` more dropped) merged with its Python frames (a
 * thread with a shadow stack), or either alone. */
static uint32_t stack_here(mf_thread_state *t, unsigned skip)
{
    mf_python_stack_fn py = __atomic_load_n(&python_stack, __ATOMIC_ACQUIRE);
    if (!python_on(t) || !py)
        return mf_stacks_capture(&t->unwind, skip);
    uint64_t native[MF_STACK_MAX_DEPTH];
    uint32_t n = __atomic_load_n(&stack_depth, __ATOMIC_RELAXED)
                     ? mf_stacks_walk(&t->unwind, skip, native) : 0;
    MF_INTERNAL_BEGIN();
    uint32_t id = py(&t->python, native, n);
    MF_INTERNAL_END();
    return id;
}

/* With stacks on: capture first (it may write STACK and MODULE records),
 * then the time, then a CPU_ALLOC_STACK record. */
static __attribute__((noinline)) void cpu_alloc_stack(mf_thread_state *t, const void *addr,
                                                      size_t requested, size_t actual,
                                                      unsigned flags)
{
    uint32_t stack = stack_here(t, 0);
    if (!fits_compact(requested, actual)) {
        cpu_alloc_full(addr, requested, actual, flags, stack);
        return;
    }
    uint32_t delta;
    mf_rec_cpu_alloc_stack *r = reserve_timed(t, sizeof *r, mf_clock_fast(), &delta);
    if (!r)
        return;
    r->addr = (uintptr_t)addr;
    r->requested_flags = requested | (uint64_t)flags << MF_CPU_SIZE_BITS;
    r->slack = (uint32_t)(actual - requested);
    r->scope = t->stack[t->depth];
    r->stack = stack;
    r->reserved = 0;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_CPU_ALLOC_STACK, sizeof *r, delta));
    if (sample_every)
        sample_tick(MF_DEVICE(MF_DEVICE_CPU, 0));
}

/* Every allocation the fast path below does not take: the thread's first
 * event, stacks, sizes beyond the compact record, a chunk without room or
 * time base, a time delta beyond 32 bits, sampling. */
static __attribute__((noinline)) void cpu_alloc_slow(const void *addr, size_t requested,
                                                     size_t actual, unsigned flags)
{
    mf_thread_state *t = tls_state;
    if (!t && !(t = thread_first_event()))
        return;
    if (__atomic_load_n(&stack_depth, __ATOMIC_RELAXED) || python_on(t)) {
        cpu_alloc_stack(t, addr, requested, actual, flags);
        return;
    }
    if (!fits_compact(requested, actual)) {
        cpu_alloc_full(addr, requested, actual, flags, 0);
        return;
    }
    uint32_t delta;
    mf_rec_cpu_alloc *r = reserve_timed(t, sizeof *r, mf_clock_fast(), &delta);
    if (!r)
        return;
    fill_cpu_alloc(r, t, addr, requested, actual, flags);
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_CPU_ALLOC, sizeof *r, delta));
    if (__atomic_load_n(&sample_every, __ATOMIC_RELAXED))
        sample_tick(MF_DEVICE(MF_DEVICE_CPU, 0));
}

/*
 * Whether a compact record of size bytes goes straight into t's chunk at
 * time now: room for it (and for the TIME record the slow path may put
 * before it), a time base, a delta that fits in 32 bits.
 */
static inline unsigned fits_chunk(const mf_thread_state *t, uint32_t size, uint64_t now)
{
    return ((size_t)(t->limit - t->cursor) >= size + sizeof(mf_rec_time)) &
           (t->has_base != 0) & ((now - t->time_base) >> 32 == 0);
}

/* Nonzero when sampling (sample_rate) is on: events then take the slow path. */
static inline unsigned sampling(void)
{
    return __atomic_load_n(&sample_every, __ATOMIC_RELAXED) != 0;
}

/*
 * The hot path, with no call in it: a TLS load, the TSC mapped inline
 * (clock_fast.h), one combined test of everything unusual, the stores and
 * the word.  Anything unusual goes to cpu_alloc_slow (a tail call), which
 * starts over.
 */
void mf_recorder_cpu_alloc(const void *addr, size_t requested, size_t actual, unsigned flags)
{
    mf_thread_state *t = tls_state;
    uint64_t now;
    /* Stacks first: their path reads the clock after the walk. */
    if (MF_UNLIKELY(!t || __atomic_load_n(&stack_depth, __ATOMIC_RELAXED) || python_on(t) ||
                    !mf_clock_try_fast(&now)))
        goto slow;
    unsigned unusual = sampling() | !fits_compact(requested, actual) |
                       !fits_chunk(t, sizeof(mf_rec_cpu_alloc), now);
    if (MF_UNLIKELY(unusual))
        goto slow;
    mf_rec_cpu_alloc *r = (mf_rec_cpu_alloc *)t->cursor;
    fill_cpu_alloc(r, t, addr, requested, actual, flags);
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_CPU_ALLOC, sizeof *r, time_delta(t, now)));
    return;
slow:
    cpu_alloc_slow(addr, requested, actual, flags);
}

/* Every free the fast path below does not take (as cpu_alloc_slow). */
static void cpu_free_unusual(const void *addr, unsigned flags)
{
    mf_thread_state *t = tls_state;
    if (!t && !(t = thread_first_event()))
        return;
    if ((uintptr_t)addr >> MF_CPU_ADDR_BITS) {
        mf_recorder_free_event(MF_DEVICE(MF_DEVICE_CPU, 0), flags, 0, (uintptr_t)addr);
        return;
    }
    uint32_t delta;
    mf_rec_cpu_free *r = reserve_timed(t, sizeof *r, mf_clock_fast(), &delta);
    if (!r)
        return;
    r->addr_flags = (uintptr_t)addr | (uint64_t)flags << MF_CPU_ADDR_BITS;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_CPU_FREE, sizeof *r, delta));
    if (__atomic_load_n(&sample_every, __ATOMIC_RELAXED))
        sample_tick(MF_DEVICE(MF_DEVICE_CPU, 0));
}

/* free() must not change errno: what the slow path does may (a thread's
 * first event reads /proc, sampling asks jemalloc). */
static __attribute__((noinline)) void cpu_free_slow(const void *addr, unsigned flags)
{
    int saved_errno = errno;
    cpu_free_unusual(addr, flags);
    errno = saved_errno;
}

void mf_recorder_cpu_free(const void *addr, unsigned flags)
{
    mf_thread_state *t = tls_state;
    uint64_t now;
    if (MF_UNLIKELY(!t || !mf_clock_try_fast(&now)))
        goto slow;
    unsigned unusual = ((uintptr_t)addr >> MF_CPU_ADDR_BITS != 0) | sampling() |
                       !fits_chunk(t, sizeof(mf_rec_cpu_free), now);
    if (MF_UNLIKELY(unusual))
        goto slow;
    mf_rec_cpu_free *r = (mf_rec_cpu_free *)t->cursor;
    r->addr_flags = (uintptr_t)addr | (uint64_t)flags << MF_CPU_ADDR_BITS;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_CPU_FREE, sizeof *r, time_delta(t, now)));
    return;
slow:
    cpu_free_slow(addr, flags);
}

/* ---- general events ---------------------------------------------------- */

void mf_recorder_code_unloaded(void)
{
    mf_unwind_code_changed();
}

uint32_t mf_recorder_stack(unsigned skip)
{
    if (!mf_recording_now())
        return 0;
    mf_thread_state *t = mf_thread_state_get();
    if (t && python_on(t))
        return stack_here(t, skip);
    if (!__atomic_load_n(&stack_depth, __ATOMIC_RELAXED))
        return 0;
    return mf_stacks_capture(t ? &t->unwind : NULL, skip);
}

uint32_t mf_recorder_frame_ids(uint32_t function, uint32_t file, uint32_t line, unsigned kind)
{
    return function ? mf_frames_intern(function, file, line, kind) : 0;
}

uint32_t mf_recorder_frame(const char *function, size_t function_len, const char *file,
                           size_t file_len, uint32_t line, unsigned kind)
{
    uint32_t fn = mf_recorder_intern(function ? function : "?", function ? function_len : 1);
    uint32_t where = file && file_len ? mf_recorder_intern(file, file_len) : 0;
    return mf_recorder_frame_ids(fn, where, line, kind);
}

uint32_t mf_recorder_stack_of(const uint64_t *entries, uint32_t depth)
{
    return mf_stacks_of(entries, depth);
}

void mf_recorder_alloc_with_stack(uint16_t device, unsigned flags, uint64_t time_ns,
                                  uint64_t addr, uint64_t requested, uint64_t actual,
                                  uint32_t scope, uint32_t name, uint32_t tid, uint32_t stack)
{
    mf_thread_state *t;
    mf_rec_alloc *r = reserve_here(&t, sizeof *r);
    if (!r)
        return;
    r->time_ns = time_ns ? time_ns : mf_clock_now();
    r->addr = addr;
    r->requested = requested;
    r->actual = actual;
    r->scope = scope ? scope : t->stack[t->depth];
    r->name = name;
    r->tid = tid ? tid : t->tid;
    r->stack = stack;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_ALLOC, sizeof *r,
                                          device | ((uint32_t)flags << 16)));
    if (__atomic_load_n(&sample_every, __ATOMIC_RELAXED) && !(flags & MF_FLAG_SUBBLOCK))
        sample_tick(device); /* a sub-block changes no device's occupancy */
}

void mf_recorder_free_event(uint16_t device, unsigned flags, uint64_t time_ns, uint64_t addr)
{
    mf_thread_state *t;
    mf_rec_free *r = reserve_here(&t, sizeof *r);
    if (!r)
        return;
    r->time_ns = time_ns ? time_ns : mf_clock_now();
    r->addr = addr;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_FREE, sizeof *r,
                                          device | ((uint32_t)flags << 16)));
    if (__atomic_load_n(&sample_every, __ATOMIC_RELAXED) && !(flags & MF_FLAG_SUBBLOCK))
        sample_tick(device);
}

void mf_recorder_activity(uint16_t device, unsigned kind, uint64_t start_ns, uint64_t end_ns,
                          uint64_t bytes, uint32_t stream, uint32_t name, uint32_t correlation)
{
    mf_thread_state *t;
    mf_rec_activity *r = reserve_here(&t, sizeof *r);
    if (!r)
        return;
    r->start_ns = start_ns;
    r->end_ns = end_ns;
    r->bytes = bytes;
    r->stream = stream;
    r->name = name;
    r->correlation = correlation;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_ACTIVITY, sizeof *r,
                                          device | ((uint32_t)kind << 16)));
}

void mf_recorder_pool(uint16_t device, unsigned op, uint64_t time_ns, uint64_t addr,
                      uint64_t size, uint64_t threshold)
{
    mf_thread_state *t;
    mf_rec_pool *r = reserve_here(&t, sizeof *r);
    if (!r)
        return;
    r->time_ns = time_ns ? time_ns : mf_clock_now();
    r->addr = addr;
    r->size = size;
    r->threshold = threshold;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_POOL, sizeof *r,
                                          device | ((uint32_t)op << 16)));
}

void mf_recorder_note(unsigned code, uint64_t value)
{
    mf_recorder_note_at(code, 0, value);
}

void mf_recorder_note_at(unsigned code, uint64_t time_ns, uint64_t value)
{
    mf_thread_state *t;
    mf_rec_note *r = reserve_here(&t, sizeof *r);
    if (!r)
        return;
    r->time_ns = time_ns ? time_ns : mf_clock_now();
    r->value = value;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_NOTE, sizeof *r, code));
}

void mf_recorder_oom(uint16_t device, unsigned route, uint64_t time_ns, uint64_t requested,
                     uint64_t device_free, uint64_t device_limit, uint32_t scope, uint32_t stack)
{
    mf_thread_state *t;
    if (!scope)
        scope = mf_recorder_current_scope();
    mf_rec_oom *r = reserve_here(&t, sizeof *r);
    if (!r)
        return;
    r->time_ns = time_ns ? time_ns : mf_clock_now();
    r->requested = requested;
    r->device_free = device_free;
    r->device_limit = device_limit;
    r->scope = scope;
    r->stack = stack;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_OOM, sizeof *r,
                                          device | ((uint32_t)route << 16)));
}

void mf_recorder_segment(uint16_t device, unsigned op, uint64_t time_ns, uint64_t addr,
                         uint64_t size)
{
    mf_thread_state *t;
    mf_rec_segment *r = reserve_here(&t, sizeof *r);
    if (!r)
        return;
    r->time_ns = time_ns ? time_ns : mf_clock_now();
    r->addr = addr;
    r->size = size;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_SEGMENT, sizeof *r,
                                          device | ((uint32_t)op << 16)));
}

int mf_recorder_clock_anchor(uint64_t *mono_ns, uint64_t *real_ns)
{
    return mf_log_writer_anchor(mono_ns, real_ns);
}

void mf_recorder_trace(unsigned kind, uint64_t time_ns, uint64_t value, uint32_t domain,
                       uint32_t name, uint32_t arg)
{
    if (!mf_recording_now())
        return;
    mf_thread_state *t;
    mf_rec_trace *r = reserve_here(&t, sizeof *r);
    if (!r)
        return;
    r->time_ns = time_ns ? time_ns : mf_clock_now();
    r->value = value;
    r->domain = domain;
    r->name = name;
    r->tid = t->tid;
    r->arg = arg;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_TRACE, sizeof *r, kind));
}

void mf_recorder_device_info(uint16_t device, uint32_t name, const uint8_t *uuid,
                             uint64_t total_bytes, uint32_t mig, uint32_t pci_bus)
{
    mf_thread_state *t;
    mf_rec_device *r = reserve_here(&t, sizeof *r);
    if (!r)
        return;
    r->total_bytes = total_bytes;
    r->name = name;
    r->mig = mig;
    if (uuid)
        memcpy(r->uuid, uuid, sizeof r->uuid);
    else
        memset(r->uuid, 0, sizeof r->uuid);
    r->pci_bus = pci_bus;
    r->reserved = 0;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_DEVICE, sizeof *r, device));
}

void mf_recorder_scope_event(mf_thread_state *t, uint32_t scope, unsigned op)
{
    if (!mf_recording_now())
        return;
    mf_rec_scope *r = mf_thread_reserve(t, sizeof *r);
    if (!r)
        return;
    r->time_ns = mf_clock_now();
    r->op = op;
    r->depth = t->depth;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_SCOPE, sizeof *r, scope));
}

static void write_state(unsigned op)
{
    mf_thread_state *t;
    mf_rec_state *r = reserve_here(&t, sizeof *r);
    if (!r)
        return;
    r->time_ns = mf_clock_now();
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_STATE, sizeof *r, op));
}

/* ---- flush hooks ------------------------------------------------------- */

void mf_recorder_add_flush_hook(mf_flush_fn fn)
{
    pthread_mutex_lock(&state_lock);
    if (n_flush_hooks < (int)(sizeof flush_hooks / sizeof flush_hooks[0])) {
        flush_hooks[n_flush_hooks] = fn;
        __atomic_store_n(&n_flush_hooks, n_flush_hooks + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&state_lock);
}

void mf_recorder_set_start_hook(mf_start_hook fn)
{
    __atomic_store_n(&start_hook, fn, __ATOMIC_RELEASE);
}

void mf_recorder_run_flush_hooks(void)
{
    int n = __atomic_load_n(&n_flush_hooks, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        flush_hooks[i]();
}

/* ---- state, open, exit, fork -------------------------------------------- */

static void update_recording(void)
{
    atomic_store_explicit(&mf_recording, running && !paused, memory_order_relaxed);
}

/* Say once, at the end, if events were lost because the log could not grow. */
static void report_dropped(void)
{
    uint64_t dropped = mf_log_writer_dropped();
    if (dropped)
        fprintf(stderr, "memflow: %s: the log could not grow (disk full or file size "
                "limit): %llu events were dropped\n", mf_log_writer_path(),
                (unsigned long long)dropped);
}

/* Allocations whose stack the full stack table could not take. */
static void note_lost_stacks(void)
{
    uint64_t lost = mf_stacks_lost();
    if (lost)
        mf_recorder_note(MF_NOTE_STACKS_LOST, lost);
}

/* exit() or a return from main: the end, its status, the FINISHED flag. */
static void finish_at_exit(int status, void *arg)
{
    (void)arg;
    MF_INTERNAL_BEGIN();
    mf_recorder_run_flush_hooks();
    note_lost_stacks();
    mf_cuda_seen_at_exit();
    mf_log_writer_set_end(MF_END_EXIT, status);
    seal_chunk(tls_state);
    mf_log_writer_flush();
    mf_log_writer_set_finished(1);
    report_dropped();
    MF_INTERNAL_END();
}

void mf_recorder_end(unsigned how, int64_t status)
{
    if (!mf_recorder_log_open())
        return;
    mf_log_writer_set_end(how, status);
    seal_chunk(tls_state);
    mf_log_writer_flush(); /* what is staged reaches the file before the image goes */
}

void mf_recorder_end_cancel(void)
{
    if (mf_recorder_log_open())
        mf_log_writer_clear_end();
}

/* The configuration as recording starts, copied whole (memflow_set_config
 * may run on another thread).  state_lock. */
static mf_config start_config;

/* Open the log and write every string interned so far.  state_lock held. */
static int open_log(uint64_t ppid)
{
    char err[512];
    if (mf_log_writer_open(start_config.path, ppid, err, sizeof err) < 0) {
        mf_set_error("%s", err);
        return -1;
    }
    __atomic_store_n(&log_open, 1, __ATOMIC_SEQ_CST);
    mf_stacks_log_opened();
    mf_frames_log_opened();
    mf_thread_state *t = mf_thread_state_get();
    uint32_t n = mf_intern_count();
    for (uint32_t id = 1; t && id <= n; id++)
        write_string_record(t, id);
    return 0;
}

/* Turn stack capture on or off for this run (the `stacks` key).  When
 * libunwind cannot be loaded, say so once and record without stacks. */
static void enable_stacks(unsigned depth)
{
    static int reported;
    char err[512];
    if (depth && mf_stacks_enable(depth, err, sizeof err) < 0) {
        if (!reported++) {
            fprintf(stderr, "memflow: call stacks are off: %s\n", err);
            mf_recorder_note(MF_NOTE_STACKS_OFF, 0);
        }
        depth = 0;
    }
    __atomic_store_n(&stack_depth, depth, __ATOMIC_RELAXED);
}

int mf_recorder_start(void)
{
    static int atexit_done;
    MF_INTERNAL_BEGIN();
    pthread_mutex_lock(&state_lock);
    int rc = 0;
    mf_clock_calibrate();
    mf_config_snapshot(&start_config);
    if (!log_open)
        rc = open_log((uint64_t)getppid());
    if (rc == 0) {
        if (!atexit_done) {
            atexit_done = 1;
            on_exit(finish_at_exit, NULL);
        }
        __atomic_store_n(&sample_every, start_config.sample_rate, __ATOMIC_RELAXED);
        enable_stacks(start_config.stacks);
        mf_log_writer_set_finished(0);
        running = 1;
        update_recording();
        write_state(MF_STATE_RUN);
    }
    pthread_mutex_unlock(&state_lock);
    mf_start_hook hook = __atomic_load_n(&start_hook, __ATOMIC_ACQUIRE);
    if (rc == 0 && hook)
        hook();
    MF_INTERNAL_END();
    return rc;
}

void mf_recorder_stop(void)
{
    pthread_mutex_lock(&state_lock);
    if (running) {
        write_state(MF_STATE_STOP);
        seal_chunk(tls_state);
    }
    running = 0;
    update_recording();
    pthread_mutex_unlock(&state_lock);
}

void mf_recorder_pause(int pause)
{
    pthread_mutex_lock(&state_lock);
    paused = pause != 0;
    if (running)
        write_state(pause ? MF_STATE_PAUSE : MF_STATE_RESUME);
    update_recording();
    pthread_mutex_unlock(&state_lock);
}

void mf_recorder_finish(void)
{
    MF_INTERNAL_BEGIN();
    mf_recorder_run_flush_hooks();
    mf_recorder_stop();
    mf_log_writer_set_finished(1);
    mf_log_writer_sync();
    MF_INTERNAL_END();
}

const char *mf_recorder_log_path(void)
{
    return mf_log_writer_is_open() ? mf_log_writer_path() : NULL;
}

int mf_recorder_log_open(void)
{
    return __atomic_load_n(&log_open, __ATOMIC_SEQ_CST);
}

/*
 * MEMFLOW_AUTOSTART=1 (set by `memflow run`): apply the MEMFLOW_<KEY>
 * environment and start recording, like MXNET_PROFILER_AUTOSTART.  A bad
 * variable is reported once and the program runs unprofiled.
 */
static void autostart_once(void)
{
    const char *autostart = getenv("MEMFLOW_AUTOSTART");
    atomic_store_explicit(&mf_recording, 0, memory_order_relaxed);
    if (!autostart || strcmp(autostart, "1") != 0)
        return;
    char err[1024];
    MF_INTERNAL_BEGIN();
    int ok = mf_config_apply_env(err, sizeof err) == 0;
    MF_INTERNAL_END();
    if (!ok)
        fprintf(stderr, "memflow: %s; the program runs unprofiled\n", err);
    else if (mf_recorder_start() < 0)
        fprintf(stderr, "%s; the program runs unprofiled\n", memflow_last_error());
}

static void autostart_decide(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, autostart_once);
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&state_lock);
    mf_stacks_lock(); /* before the locks it takes while writing records */
    mf_frames_lock();
    mf_intern_lock();
    mf_log_writer_lock();
}

static void fork_parent(void)
{
    mf_log_writer_unlock();
    mf_intern_unlock();
    mf_frames_unlock();
    mf_stacks_unlock();
    pthread_mutex_unlock(&state_lock);
}

/*
 * The child records into its own log, memflow-<childpid>.mfl, whose header
 * names the parent.  Only the forking thread exists in the child: its state
 * is kept (scopes stay), every other thread's state is abandoned.
 */
static void fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    mf_log_writer_unlock();
    mf_intern_after_fork_child();
    mf_stacks_after_fork_child();
    mf_frames_after_fork_child();
    state_lock = fresh;
    free_lock = fresh;
    free_states = NULL;
    int was_open = log_open;
    int was_staged = mf_stage_active(); /* the parent's stage: unmapped whole */
    mf_log_writer_forget();
    __atomic_store_n(&log_open, 0, __ATOMIC_SEQ_CST);
    mf_thread_state *t = tls_state;
    if (t) {
        if (t->limit && !was_staged) /* the parent's chunk: the child never writes it */
            munmap(t->limit - MF_CHUNK_SIZE, MF_CHUNK_SIZE);
        t->cursor = t->limit = NULL;
        t->tid = (uint32_t)syscall(SYS_gettid);
        t->named = 0;
    }
    memset(sample_counters, 0, sizeof sample_counters);
    if (was_open && open_log((uint64_t)getppid()) < 0) {
        fprintf(stderr, "%s; the forked child %d is not recorded\n", memflow_last_error(),
                (int)getpid());
        running = 0;
        update_recording();
    }
}

__attribute__((constructor)) static void recorder_init(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    autostart_decide();
}
