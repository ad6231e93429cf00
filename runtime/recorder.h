/*
 * recorder.h - the recorder: the one place capture code hands events to.
 *
 * Capture code (alloc/ for the malloc family, gpu/ for CUPTI, the public
 * record_* API) calls these functions; the recorder stamps time, attaches the
 * calling thread's scope and appends a record to the calling thread's chunk of
 * the shared log mapping (log_writer.c).  No global lock on the hot path:
 * each thread owns its chunk; a lock is taken only to claim a new chunk or to
 * intern a new string.  The recorder never allocates through malloc.
 *
 * Hot path contract: when recording is off, mf_recorder_cpu_alloc/free cost
 * one predictable branch on mf_recording.
 */
#ifndef MEMFLOW_RECORDER_H
#define MEMFLOW_RECORDER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "compiler.h"
#include "log_format.h"

/*
 * Nonzero while the profiler runs and is not paused.  Read on every event,
 * written when the state changes (any thread): an atomic, read on the hot
 * path with mf_recording_now() (a relaxed load, a plain load on x86-64 and
 * arm64).
 */
extern MF_EXPORT _Atomic int mf_recording;

static inline int mf_recording_now(void)
{
    return atomic_load_explicit(&mf_recording, memory_order_relaxed);
}

/*
 * Per-thread "inside memflow" depth.  Capture code skips recording while it
 * is nonzero, so memflow's own allocations (dlopen, stdio, the reader during
 * memflow_dumps) never show up as the program's.
 *
 * The compiler barriers keep the depth in memory across the calls between
 * BEGIN and END: a compiler that knows free() (a builtin) reads no other
 * memory may otherwise drop an increment and decrement around a lone
 * free(), and that free is then recorded as the program's (the Python
 * binding's dumps() recorded one free of an address never seen allocated
 * at each call that way).
 */
extern MF_EXPORT __thread int mf_thread_internal
    __attribute__((tls_model("initial-exec")));

#define MF_INTERNAL_BEGIN()                                                              \
    do {                                                                                 \
        mf_thread_internal++;                                                            \
        __atomic_signal_fence(__ATOMIC_SEQ_CST);                                         \
    } while (0)
#define MF_INTERNAL_END()                                                                \
    do {                                                                                 \
        __atomic_signal_fence(__ATOMIC_SEQ_CST);                                         \
        mf_thread_internal--;                                                            \
    } while (0)

/*
 * CPU hot path: record an allocation of the malloc family on cpu/0 at the
 * current time, with the calling thread's scope.  flags: MF_FLAG_*.
 */
MF_EXPORT void mf_recorder_cpu_alloc(const void *addr, size_t requested, size_t actual,
                                     unsigned flags);

/* CPU hot path: record that addr was freed on cpu/0.  Keeps errno. */
MF_EXPORT void mf_recorder_cpu_free(const void *addr, unsigned flags);

/*
 * General forms, for capture that knows its own time, scope and thread
 * (CUPTI records arrive later on another thread).  Pass tid 0 for the
 * calling thread, scope 0 for the calling thread's current scope.
 * They record only while mf_recording is set, except that GPU records that
 * arrive late (CUPTI buffers) are recorded as long as the log is open.
 */
/* stack: the id of the allocating call stack (mf_recorder_stack), 0 for none. */
MF_EXPORT void mf_recorder_alloc_with_stack(uint16_t device, unsigned flags, uint64_t time_ns,
                                            uint64_t addr, uint64_t requested,
                                            uint64_t actual, uint32_t scope, uint32_t name,
                                            uint32_t tid, uint32_t stack);
MF_EXPORT void mf_recorder_free_event(uint16_t device, unsigned flags, uint64_t time_ns,
                                      uint64_t addr);

/*
 * Explicit times and stacks: mf_recorder_alloc_with_stack and
 * mf_recorder_free_event take any time_ns (0 = now), earlier than events
 * already written too (a PyTorch allocator history, CUPTI's late buffers):
 * the reader sorts a chunk whose times go back.  The stack may be one
 * composed with mf_recorder_stack_of.  Both record while a log is open.
 */

/*
 * Python stacks (python/pystacks.c): fn composes the calling thread's stack
 * from its Python frames and the native return addresses native[0..n) (n 0
 * unless native stacks are on), and returns its id (mf_recorder_stack_of).
 * *python is the thread's slot for fn's state (mf_recorder_thread_python
 * sets it; fn may set it too).  Registered once; from then on every
 * allocation (CPU heap, GPU API calls, record_alloc) of a thread whose slot
 * is set - of every thread when every_thread - carries the stack fn returns.
 * fn runs inside the allocator, maybe without the GIL: it must not allocate
 * or call into Python beyond pure reads.
 */
typedef uint32_t (*mf_python_stack_fn)(void **python, const uint64_t *native, uint32_t n);
MF_EXPORT void mf_recorder_set_python_stacks(mf_python_stack_fn fn, int every_thread);

/* The calling thread's Python slot (NULL: its allocations carry no Python
 * frames, unless fn was registered for every thread). */
MF_EXPORT void mf_recorder_thread_python(void *python);

/* Changes when a new log opens (a forked child's): a stack id remembered
 * under another generation must be asked for again (its records are not in
 * this log). */
MF_EXPORT uint32_t mf_recorder_stack_generation(void);

/*
 * Symbolic frames (FRAME records): the id of the frame "function in file at
 * line", kind enum mf_frame_kind (MF_FRAME_PYTHON, MF_FRAME_NATIVE for a
 * C/C++ frame known by name).  Texts are interned (file NULL or empty:
 * unknown, line 0: unknown).  The id is per process, dense from 1; its
 * FRAME record is written before the first STACK record that uses it.  A
 * repeated frame costs the string lookups and one lock-free hash lookup;
 * mf_recorder_frame_ids, with string ids from mf_recorder_intern, only the
 * latter.  0 when memflow's frame table is full (leave the frame out).  Call
 * with no record reserved.
 */
MF_EXPORT uint32_t mf_recorder_frame(const char *function, size_t function_len,
                                     const char *file, size_t file_len, uint32_t line,
                                     unsigned kind);
MF_EXPORT uint32_t mf_recorder_frame_ids(uint32_t function, uint32_t file, uint32_t line,
                                         unsigned kind);

/*
 * The id of a call stack composed by the caller, for mf_recorder_alloc_with_stack:
 * entries[0..depth) innermost first, each a native return address or
 * mf_stack_frame_entry(frame id) (log_format.h).  Stored once per distinct
 * stack with the captured ones (its STACK record, after the FRAME and
 * MODULE records it needs, written the first time it is seen in the log),
 * whether or not native stacks (`stacks`) are on.  At most
 * MF_STACK_MAX_DEPTH entries are kept, the innermost.  0 for an empty stack
 * or a full table.  Call with no record reserved.
 */
MF_EXPORT uint32_t mf_recorder_stack_of(const uint64_t *entries, uint32_t depth);

/*
 * The id of the calling thread's call stack (a STACK record, written the
 * first time the stack is seen), for capture that records an allocation
 * later or elsewhere (the GPU capture at the CUDA API call): memflow's own
 * frames at the top are dropped, then `skip` more frames (at most 64).
 * Returns 0 (no stack) unless recording and stacks are on (`stacks` key) or
 * the thread has Python stacks (then its Python frames, merged with the
 * native ones when both are on).
 * Call it with no record reserved; it may write records itself.
 */
MF_EXPORT uint32_t mf_recorder_stack(unsigned skip);
MF_EXPORT void mf_recorder_activity(uint16_t device, unsigned kind, uint64_t start_ns,
                                    uint64_t end_ns, uint64_t bytes, uint32_t stream,
                                    uint32_t name, uint32_t correlation);
MF_EXPORT void mf_recorder_pool(uint16_t device, unsigned op, uint64_t time_ns,
                                uint64_t addr, uint64_t size, uint64_t threshold);
MF_EXPORT void mf_recorder_note(unsigned code, uint64_t value);

/* A NOTE at time_ns (0 = now), while a log is open. */
MF_EXPORT void mf_recorder_note_at(unsigned code, uint64_t time_ns, uint64_t value);

/*
 * An allocation on device failed for want of memory (an OOM record):
 * route enum mf_oom_route, requested bytes, the device's free memory
 * (UINT64_MAX unknown) and limit (0 unknown), the request's scope (0: the
 * calling thread's) and stack id.  time_ns 0 = now.  While a log is open.
 */
MF_EXPORT void mf_recorder_oom(uint16_t device, unsigned route, uint64_t time_ns,
                               uint64_t requested, uint64_t device_free, uint64_t device_limit,
                               uint32_t scope, uint32_t stack);

/* A caching allocator's segment event (a SEGMENT record, enum
 * mf_segment_op) at time_ns, while a log is open. */
MF_EXPORT void mf_recorder_segment(uint16_t device, unsigned op, uint64_t time_ns, uint64_t addr,
                                   uint64_t size);

/* The open log's clock anchor (its header's start_mono_ns, on this clock,
 * and start_real_ns, CLOCK_REALTIME then): what maps a wall-clock time onto
 * the log's times.  0, or -1 when no log is open. */
MF_EXPORT int mf_recorder_clock_anchor(uint64_t *mono_ns, uint64_t *real_ns);

/*
 * A trace object event (TRACE record) on the calling thread: kind is enum
 * mf_trace_kind; value the object id that pairs BEGIN and END (or the
 * counter's value); domain and name are string ids (mf_recorder_intern); arg
 * the marker scope for MARKER.  time_ns 0 = now.  Recorded while recording.
 */
MF_EXPORT void mf_recorder_trace(unsigned kind, uint64_t time_ns, uint64_t value,
                                 uint32_t domain, uint32_t name, uint32_t arg);

/*
 * What a GPU is (DEVICE record): name is a string id of the model, uuid 16
 * bytes (NULL: zeros), mig gpu instance << 16 | compute instance (UINT32_MAX
 * none), pci_bus domain << 16 | bus << 8 | device.  Recorded while a log is
 * open; write it once per device before its first block.
 */
MF_EXPORT void mf_recorder_device_info(uint16_t device, uint32_t name, const uint8_t *uuid,
                                       uint64_t total_bytes, uint32_t mig, uint32_t pci_bus);
MF_EXPORT void mf_recorder_sample(uint16_t device, uint64_t time_ns,
                                  const uint64_t value[MF_SAMPLE_VALUES]);

/*
 * Intern a string (a scope, a kernel name): returns its id, writing its
 * STRING record the first time.  len bytes (no NUL needed), truncated at
 * MF_STRING_MAX_LEN.  Returns 0 (unknown) if memflow is out of memory.
 */
MF_EXPORT uint32_t mf_recorder_intern(const char *text, size_t len);

/* The text of an interned id (for the GPU CSV); "unknown" for 0. */
MF_EXPORT const char *mf_recorder_string(uint32_t id);

/* The calling thread's current scope id and its kernel thread id. */
MF_EXPORT uint32_t mf_recorder_current_scope(void);
MF_EXPORT uint32_t mf_recorder_thread_id(void);

/*
 * Occupancy snapshots (sample_rate).  A capture module registers a sampler
 * for a device kind; after every sample_rate alloc/free events on a device
 * the recorder calls it and writes a SAMPLE record with what it filled in.
 */
typedef void (*mf_sampler_fn)(uint16_t device, uint64_t value[MF_SAMPLE_VALUES]);
MF_EXPORT void mf_recorder_set_sampler(unsigned device_kind, mf_sampler_fn fn);

/*
 * Sampling done by the capture itself, where the event happens (the GPU
 * plugin: on the calling thread at the CUDA API's exit, in its context).
 * mf_recorder_sample_at_source(kind): events of that device kind recorded
 * through mf_recorder_alloc_with_stack/free_event no longer count by themselves.
 * mf_recorder_sample_due(device) counts one event on device and returns 1
 * when it is the sample_rate-th (0 when sample_rate is 0); the capture then
 * writes the snapshot with mf_recorder_sample, stamped with the event.
 */
MF_EXPORT void mf_recorder_sample_at_source(unsigned device_kind);
MF_EXPORT int mf_recorder_sample_due(uint16_t device);

/*
 * Flush hooks: functions run by memflow_dump() and at exit before the log is
 * closed (CUPTI's cuptiActivityFlushAll).  At most 8.
 */
typedef void (*mf_flush_fn)(void);
MF_EXPORT void mf_recorder_add_flush_hook(mf_flush_fn fn);
MF_EXPORT void mf_recorder_run_flush_hooks(void);

/*
 * A function run (outside memflow's locks) each time recording starts; the
 * render layer uses it to start continuous dumps without core knowing it.
 * One hook; a later call replaces it.
 */
typedef void (*mf_start_hook)(void);
MF_EXPORT void mf_recorder_set_start_hook(mf_start_hook fn);

/*
 * Open the log (if not yet open) and set the state.  mf_recorder_start
 * returns -1 and sets the last error when the log cannot be created.
 */
MF_EXPORT int mf_recorder_start(void);
MF_EXPORT void mf_recorder_stop(void);
MF_EXPORT void mf_recorder_pause(int paused);

/* Mark the log finished and stop recording (at exit or memflow_dump(1)). */
MF_EXPORT void mf_recorder_finish(void);

/*
 * How the process is about to end, for the log header (enum mf_end_how):
 * _exit()/_Exit() (MF_END_EXIT_NOW, status) and exec (MF_END_EXEC) call it
 * just before; exit() is recorded by the recorder itself.  An exec that
 * fails calls mf_recorder_end_cancel().  No-ops without a log, and in a
 * vfork child (its parent's log is not its own).
 */
MF_EXPORT void mf_recorder_end(unsigned how, int64_t status);
MF_EXPORT void mf_recorder_end_cancel(void);

/* Code was unloaded (dlclose): the stack walker's cached frame rules and
 * each thread's last walk are not to be trusted any more (runtime/unwind.h). */
MF_EXPORT void mf_recorder_code_unloaded(void);

/* Path of the open log, or NULL if none is open. */
MF_EXPORT const char *mf_recorder_log_path(void);

/* Whether a log is open (GPU records may arrive after STOP). */
MF_EXPORT int mf_recorder_log_open(void);

#endif /* MEMFLOW_RECORDER_H */
