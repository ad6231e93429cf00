/*
 * torch_convert.h - a PyTorch CUDA allocator history (a memory snapshot)
 * turned into memflow's records: one conversion, two sinks.
 *
 * The walker (torch_snapshot.h) reports the final segments and every trace
 * entry; this file decides what each means in a memflow log and hands the
 * records to a sink:
 *   - `memflow import` writes them into a new log file (cli/import_log.c);
 *   - the Python extension writes them into the running program's log
 *     through the recorder (python/torch_live.c), at dump(), at exit and at
 *     an out-of-memory error.
 *
 * What becomes what:
 *   - segments (segment_alloc .. segment_free; segment_map .. segment_unmap
 *     of expandable segments, as VMM ranges) are the GPU device's blocks,
 *     or SEGMENT records where another capture records that memory itself
 *     (CUPTI under memflow run: options.segments_as_records);
 *   - tensors (alloc .. free_completed) are sub-blocks (MF_FLAG_SUBBLOCK)
 *     on the same device, REUSED when no segment was allocated or mapped
 *     for them (served from the allocator's cache); free_requested, the
 *     moment the program let go, is a TRACE MF_TRACE_FREE_REQUESTED;
 *   - memory live before the history began - a tensor or segment freed
 *     without an alloc, an active block or a segment of the final segments
 *     the history never allocated - is allocated at the history's first
 *     moment, flagged MF_FLAG_BEFORE;
 *   - frames are symbolic frames (Python for .py files and <...> code, else
 *     native), a frame list a stack; user_metadata the scope (a ':'
 *     appended if missing; empty: the sink's scope at that time, or <unk>:);
 *   - oom is an OOM record (requested size, the device's free memory);
 *   - an entry without the integer fields its action needs (addr and size;
 *     free_requested addr only; oom size) is damaged: skipped, counted and
 *     reported with its offset, as is each entry that contradicts what is
 *     live; the rest of the history is converted;
 *   - time_us (Unix-epoch microseconds) goes onto the log's clock through
 *     its real-time anchor: time_ns = mono_ns + time_us * 1000 - real_ns.
 *     A history without time_us takes its events' order as the axis, 1 us
 *     per event from order_origin_ns, and says so (MF_NOTE_TORCH_EVENT_ORDER).
 *
 * Memory follows what is live (tensors, segments, the final segments'
 * active blocks) and the distinct frames and stacks, never the number of
 * entries.  A converter may run over several snapshots of one process in
 * turn (options.incremental: the live path's dumps): entries already
 * converted (by time_us, per device) are skipped, and what is live carries
 * over.  Entries without time_us cannot be told apart: each run converts
 * them again (the live path turns the history off on a torch without
 * time_us).
 */
#ifndef MEMFLOW_TORCH_CONVERT_H
#define MEMFLOW_TORCH_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "pickle.h"
#include "torch_snapshot.h"

/*
 * Where the records go.  Ids are the sink's: every string, frame and stack
 * id the converter hands over is one the sink returned (the default scope
 * "<unk>:" too, interned through intern like any other string; a sink that
 * writes a log returns the log's 1 for it), or 0: unknown (a string, also
 * a scope whose interning failed), none (a stack) or failure (a frame:
 * left out of its stack).  Each function may be called at any time; times
 * may go back (the sink's log reader sorts).
 */
typedef struct mf_torch_sink {
    void *ctx;
    /* The id of a string (scopes, frame texts). */
    uint32_t (*intern)(void *ctx, const char *text, size_t len);
    /* The id of a symbolic frame (enum mf_frame_kind). */
    uint32_t (*frame)(void *ctx, uint32_t function, uint32_t file, uint32_t line, unsigned kind);
    /* The id of a stack: entries innermost first, each mf_stack_frame_entry(frame). */
    uint32_t (*stack)(void *ctx, const uint64_t *entries, uint32_t depth);
    void (*alloc)(void *ctx, uint16_t device, unsigned flags, uint64_t time_ns, uint64_t addr,
                  uint64_t requested, uint64_t actual, uint32_t scope, uint32_t stack);
    void (*free)(void *ctx, uint16_t device, unsigned flags, uint64_t time_ns, uint64_t addr);
    /* A TRACE record (MF_TRACE_FREE_REQUESTED). */
    void (*trace)(void *ctx, unsigned kind, uint64_t time_ns, uint64_t value, uint32_t arg);
    /* A SEGMENT record (options.segments_as_records). */
    void (*segment)(void *ctx, uint16_t device, unsigned op, uint64_t time_ns, uint64_t addr,
                    uint64_t size);
    void (*oom)(void *ctx, uint16_t device, unsigned route, uint64_t time_ns, uint64_t requested,
                uint64_t device_free, uint32_t scope, uint32_t stack);
    void (*note)(void *ctx, unsigned code, uint64_t time_ns, uint64_t value);
    /* The scope current at time_ns where the history has no user_metadata
     * (the live path on a torch without _set_memory_metadata); NULL: <unk>:. */
    uint32_t (*scope_at)(void *ctx, uint64_t time_ns);
} mf_torch_sink;

typedef struct mf_torch_options {
    uint64_t real_ns, mono_ns;   /* the log's anchor: CLOCK_REALTIME and its clock then */
    uint64_t order_origin_ns;    /* event 0's time without time_us (and the time of a
                                    history with no entries) */
    int segments_as_records;     /* segments become SEGMENT records, not blocks */
    int incremental;             /* later runs skip the entries earlier runs converted */
    /* Called every 65536 trace entries of the second walk with the byte
     * offset reached and the entries converted so far (NULL: never). */
    void (*progress)(void *arg, uint64_t offset, uint64_t entries);
    void *progress_arg;
    /* Called for each damaged or contradictory entry (result.damaged,
     * result.inconsistent) with the offset where it begins in the pickle
     * and what is wrong and what was done ("device 0, entry 3: an alloc
     * without an integer size: skipped"); NULL: counted only. */
    void (*problem)(void *arg, uint64_t offset, const char *what);
    void *problem_arg;
} mf_torch_options;

/* What one run did (the walk's own figures in walk). */
typedef struct mf_torch_result {
    uint64_t entries;            /* trace entries converted */
    uint64_t skipped;            /* entries an earlier run converted (incremental) */
    uint64_t tensors, tensor_frees;
    uint64_t segments, segment_frees;
    uint64_t before_tensors, before_segments;   /* live before the history began */
    uint64_t ooms;
    uint64_t inconsistent;       /* entries that contradict the state (an alloc where a
                                    tensor is live, a segment_alloc where a segment is): the
                                    live one ends there; a run with any writes
                                    MF_NOTE_TORCH_INCONSISTENT (value: how many) */
    uint64_t damaged;            /* entries skipped: without the addr or size their action
                                    needs (absent, or not an integer) */
    uint64_t event_order_devices;   /* devices whose times are the event order */
    uint64_t first_ns, last_ns;  /* the times written (0, 0: none) */
    size_t memory_peak;          /* the converter's own heap at most */
    mf_torch_stats walk;         /* the last walk (the second) */
} mf_torch_result;

typedef struct mf_torch_convert mf_torch_convert;

/* A converter writing into sink; NULL when out of memory. */
mf_torch_convert *mf_torch_convert_new(const mf_torch_sink *sink, const mf_torch_options *opt);

/*
 * Convert one snapshot: open() is called twice for a new reader of the
 * same bytes (the final segments are read first, then the trace), and
 * the converter frees each reader.  Returns 0; or, when the snapshot
 * cannot be read, the walk's status (enum mf_pickle_status, or
 * MF_TORCH_NOT_A_SNAPSHOT) with a message in err starting with the byte
 * offset.  Records written before a failure stay written.  out may be NULL.
 */
int mf_torch_convert_run(mf_torch_convert *c,
                         mf_pickle_reader *(*open)(void *arg, char *err, size_t errlen),
                         void *arg, mf_torch_result *out, char *err, size_t errlen);

void mf_torch_convert_free(mf_torch_convert *c);

/* The frame kind of a snapshot frame's file: MF_FRAME_PYTHON for a .py
 * file or Python's <...> code, else MF_FRAME_NATIVE. */
unsigned mf_torch_frame_kind(const char *filename);

#endif /* MEMFLOW_TORCH_CONVERT_H */
