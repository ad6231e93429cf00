/*
 * memflow.h - the one public header of memflow, a memory-flow profiler.
 *
 * A program links libmemflow (pkg-config memflow) to control profiling from
 * the inside: configure it (MXNet's set_config keys), start and stop it, name
 * the current scope of each thread, report blocks of its own allocators, mark
 * trace objects (tasks, frames, events, counters, markers), and dump the log
 * and the rendered outputs.  Linking libmemflow does NOT replace
 * the program's malloc: CPU allocations are captured by the separate preload
 * library libmemflow-preload.so, which `memflow run` puts in LD_PRELOAD (or a
 * program links on purpose).  GPU allocations are captured through CUPTI.
 *
 * Every function returns 0 on success and -1 on failure unless it says
 * otherwise; after a failure memflow_last_error() tells what went wrong.
 * All functions are thread-safe.
 */
#ifndef MEMFLOW_H
#define MEMFLOW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEMFLOW_VERSION "0.1.0"

/* Profiler state, as MXNet's set_state('run'|'stop'). */
typedef enum memflow_state {
    MEMFLOW_STOP = 0,
    MEMFLOW_RUN = 1
} memflow_state;

/* Flags of memflow_record_alloc(). */
#define MEMFLOW_ALLOC_REUSED 0x1u /* the block came from the allocator's cache */

/*
 * Set configuration keys, MXNet's MXSetProfilerConfig shape: n pairs of
 * keys[i] = vals[i].  Accepted keys: filename, path, format, formats,
 * profile_all, profile_memory, profile_api, profile_device,
 * continuous_dump, dump_period, aggregate_stats,
 * gpu_memory_profile_filename_prefix, sample_rate, torch_scopes (see README.md).
 * Either every pair is applied or none is: an unknown key or a bad value
 * returns -1 and memflow_last_error() names the key and what it accepts.
 * Keys that decide where the log goes (path) only take effect before the
 * log is opened, that is before the first memflow_set_state(MEMFLOW_RUN).
 */
int memflow_set_config(int n, const char *const *keys, const char *const *vals);

/*
 * Start (MEMFLOW_RUN) or stop (MEMFLOW_STOP) recording.  The first RUN opens
 * the log `<path>/memflow-<pid>.mfl`.  Returns -1 if the log cannot be
 * created (the error names the path and the reason).
 */
int memflow_set_state(memflow_state state);

/* Pause and resume recording without closing anything; cheap. */
int memflow_pause(void);
int memflow_resume(void);

/*
 * Push a scope name on the calling thread's scope stack, with MXNet's rules:
 * the default scope is "<unk>:"; a name gets a trailing ':' if it lacks one;
 * with append != 0 the name is appended to the current scope unless the
 * current scope is "<unk>:".  ("net" then "dense0" appended: "net:dense0:".)
 * Every allocation made by this thread carries the scope on top of its stack.
 * Returns -1 if name is NULL or the stack (256 deep) is full.
 */
int memflow_scope_push(const char *name, int append);

/* Pop the calling thread's scope; returns -1 when only the default is left. */
int memflow_scope_pop(void);

/*
 * The calling thread's current scope string ("<unk>:" by default).  The
 * pointer stays valid for the life of the process.
 */
const char *memflow_scope_current(void);

/*
 * Record a block of a custom allocator (a pool, a GPU sub-allocator).
 * device is "cpu/0" or "gpu/N"; requested is what the caller asked for,
 * actual what the allocator handed out; name may be NULL ("unknown");
 * flags may hold MEMFLOW_ALLOC_REUSED.  The block carries the caller's
 * current scope.  Returns -1 on a bad device name.  Recorded only while the
 * profiler runs (returns 0 and records nothing otherwise).
 */
int memflow_record_alloc(const char *device, const void *addr, size_t requested,
                         size_t actual, const char *name, unsigned flags);

/* Record that a block reported by memflow_record_alloc() was freed. */
int memflow_record_free(const char *device, const void *addr);

/*
 * memflow_dump() and memflow_dumps() render in-process, so they live in
 * libmemflow-render (Cairo); `pkg-config --libs memflow` links both
 * libraries.  Everything else here is in libmemflow, which loads nothing
 * but libc.
 *
 * Flush everything recorded so far into the log and write the configured
 * outputs (memory_flow.svg, the trace, the GPU memory CSV) next to it.
 * finished != 0 also marks the log complete and stops recording.
 */
int memflow_dump(int finished);

/*
 * The statistics of everything recorded so far, as text.  format is "table"
 * or "json"; sort_by is "total", "avg", "min", "max" or "count"; ascending
 * sorts small first.  reset != 0 starts the statistics afresh afterwards.
 * The returned string is owned by memflow and valid until the next call
 * from any thread; NULL on error (see memflow_last_error()).
 */
const char *memflow_dumps(int reset, const char *format, const char *sort_by, int ascending);

/*
 * The message of the last failed call on this thread; "" when none failed.
 */
const char *memflow_last_error(void);

/*
 * Trace objects: MXNet's profiler objects (Domain, Task, Frame, Event,
 * Counter, Marker).  In the Chrome trace a task or frame is an async span
 * whose category is its domain, an event a span on the thread that starts
 * and stops it, a counter one series of values, a marker an instant.
 * Objects may be made before recording starts; starts, stops, values and
 * marks are recorded only while the profiler runs.  Objects are not bound
 * to a thread, and every call is thread-safe.
 */
typedef struct memflow_domain memflow_domain;
typedef struct memflow_object memflow_object;

/* Where a marker shows (MXNet's marker scopes "thread", "process", "global"). */
typedef enum memflow_marker_scope {
    MEMFLOW_MARKER_THREAD = 0,
    MEMFLOW_MARKER_PROCESS = 1,
    MEMFLOW_MARKER_GLOBAL = 2
} memflow_marker_scope;

/*
 * The domain called name, made on first use: the same name gives the same
 * domain, which lives as long as the process (never destroy it).  NULL if
 * name is NULL or memory ran out.
 */
memflow_domain *memflow_domain_create(const char *name);

/*
 * A task, frame, event or counter called name.  Tasks, frames and counters
 * belong to a domain (NULL: none); an event has none.  Release each with
 * memflow_object_destroy().  NULL if name is NULL or memory ran out.
 */
memflow_object *memflow_task_create(memflow_domain *domain, const char *name);
memflow_object *memflow_frame_create(memflow_domain *domain, const char *name);
memflow_object *memflow_event_create(const char *name);
memflow_object *memflow_counter_create(memflow_domain *domain, const char *name);

/*
 * Start and stop a task, frame or event: each start..stop is one span.  A
 * task or frame may stop on another thread than the one that started it;
 * an event should stop on the thread that started it.  -1 for a counter.
 */
int memflow_object_start(memflow_object *object);
int memflow_object_stop(memflow_object *object);

/*
 * Set a counter to value, or add delta to it (negative to decrease), and
 * record the new value.  -1 if object is not a counter.
 */
int memflow_counter_set(memflow_object *counter, int64_t value);
int memflow_counter_add(memflow_object *counter, int64_t delta);

/* A counter's current value (0 for a NULL object or one not a counter). */
int64_t memflow_counter_value(const memflow_object *counter);

/*
 * An instant called name in domain (NULL: none), shown on the calling
 * thread, the process or globally.  -1 if name is NULL or scope unknown.
 */
int memflow_mark(memflow_domain *domain, const char *name, memflow_marker_scope scope);

/* Release an object (NULL is fine).  A started task's span stays open. */
void memflow_object_destroy(memflow_object *object);

/*
 * Scope block: MEMFLOW_SCOPE("dense0") { ... } pushes for the block's body
 * and pops when it ends (do not leave the block with break/return/goto).
 * Blocks nest; each use declares a variable named after its line.
 */
#define MEMFLOW_SCOPE_CAT2_(a, b) a##b
#define MEMFLOW_SCOPE_CAT_(a, b) MEMFLOW_SCOPE_CAT2_(a, b)
#define MEMFLOW_SCOPE_VAR_ MEMFLOW_SCOPE_CAT_(memflow_scope_once_, __LINE__)
#define MEMFLOW_SCOPE_BLOCK_(name, append)                                    \
    for (int MEMFLOW_SCOPE_VAR_ = (memflow_scope_push((name), (append)), 1); \
         MEMFLOW_SCOPE_VAR_; MEMFLOW_SCOPE_VAR_ = (memflow_scope_pop(), 0))
#define MEMFLOW_SCOPE(name) MEMFLOW_SCOPE_BLOCK_(name, 0)

/* The same with append mode on. */
#define MEMFLOW_SCOPE_APPEND(name) MEMFLOW_SCOPE_BLOCK_(name, 1)

#ifdef __cplusplus
}
#endif

#endif /* MEMFLOW_H */
