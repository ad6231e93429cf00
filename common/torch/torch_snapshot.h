/*
 * torch_snapshot.h - a PyTorch CUDA memory snapshot (the pickle of
 * torch.cuda.memory._snapshot(), as _dump_snapshot() writes it) walked
 * into typed callbacks over the streaming pickle reader (pickle.h): the
 * final segments with their blocks, and every entry of every device's
 * allocator trace, with frames and stacks given ids once.  Memory follows
 * the distinct frames, stacks and strings and the blocks of one segment,
 * never the number of trace entries.
 *
 * One walker serves both uses: `memflow import` hands it a reader over a
 * file, the Python extension one over the bytes of the live snapshot.
 *
 * Formats (torch/cuda/memory.py, torch/csrc/cuda/Module.cpp and
 * memory_snapshot.cpp over the versions):
 *   - 1.13: the snapshot is a list of segments; blocks have size, state and
 *     `history` ([{addr, real_size, frames}]) but no address.
 *   - 2.0, 2.1: a dict {segments, device_traces}; entries without time_us;
 *     blocks with history, later with address, requested_size and frames.
 *   - 2.2 on: entries with time_us; then compile_context, user_metadata,
 *     segment_map/unmap, allocator_settings, external_annotations, pool_id,
 *     the annotate action, host_segments/host_traces.
 * A block without an address gets the segment's address plus the sizes of
 * the blocks before it; without requested_size, its first history entry's
 * real_size, else its size; without frames, its first history entry's.
 * Unknown keys are skipped (their frames still get ids, since a later entry
 * may refer back to them); an entry with an unknown action is skipped and
 * the action reported once; a field of the wrong type counts as absent.
 *
 * Order: a consumer sees the sections in file order (segments before
 * device_traces in every PyTorch version) and never needs both in memory.
 * One that needs the final segments before the trace (the blocks live
 * throughout) walks twice: first with MF_TORCH_WANT_SEGMENTS, which stops
 * reading where the segments end, then with MF_TORCH_WANT_TRACES over a
 * new reader of the same bytes.  A walk cannot start at an offset, since
 * an entry may refer back (GET) to frames memoized anywhere before it;
 * frame and stack ids come out the same in every walk of the same bytes.
 */
#ifndef MEMFLOW_TORCH_SNAPSHOT_H
#define MEMFLOW_TORCH_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "pickle.h"

/* Trace entry actions (the `action` strings). */
typedef enum mf_torch_action {
    MF_TORCH_ALLOC,
    MF_TORCH_FREE_REQUESTED,
    MF_TORCH_FREE_COMPLETED,
    MF_TORCH_SEGMENT_ALLOC,
    MF_TORCH_SEGMENT_FREE,
    MF_TORCH_SEGMENT_MAP,
    MF_TORCH_SEGMENT_UNMAP,
    MF_TORCH_SNAPSHOT,
    MF_TORCH_OOM,
    MF_TORCH_ANNOTATE,
    MF_TORCH_ACTIONS          /* how many */
} mf_torch_action;

/* The action's string ("alloc", ...). */
const char *mf_torch_action_name(mf_torch_action a);

#define MF_TORCH_NO_STACK UINT32_MAX   /* no frames, or an empty list of them */

/* A distinct frame, reported once before anything that uses it. */
typedef struct mf_torch_frame {
    uint32_t id;              /* 0, 1, 2 ... in the order first seen */
    const char *filename;     /* NUL-terminated; live until the walk returns */
    const char *name;
    int64_t line;             /* -1 when absent */
} mf_torch_frame;

typedef enum mf_torch_block_state {
    MF_TORCH_STATE_UNKNOWN,
    MF_TORCH_ACTIVE_ALLOCATED,
    MF_TORCH_ACTIVE_PENDING_FREE,
    MF_TORCH_INACTIVE
} mf_torch_block_state;

/* Which fields were in the file (flags of segments, blocks, entries). */
#define MF_TORCH_HAS_ADDRESS      (1u << 0)   /* address / addr */
#define MF_TORCH_HAS_SIZE         (1u << 1)   /* total_size / size */
#define MF_TORCH_HAS_REQUESTED    (1u << 2)   /* requested_size (or a history's real_size) */
#define MF_TORCH_HAS_STREAM       (1u << 3)
#define MF_TORCH_HAS_TIME         (1u << 4)   /* time_us */
#define MF_TORCH_HAS_DEVICE_FREE  (1u << 5)   /* oom's device_free */
#define MF_TORCH_HAS_POOL         (1u << 6)   /* segment_pool_id / pool_id */
#define MF_TORCH_HAS_DEVICE       (1u << 7)   /* a segment's device */
#define MF_TORCH_HAS_COMPILE      (1u << 8)   /* compile_context */
#define MF_TORCH_HAS_METADATA     (1u << 9)   /* user_metadata */
#define MF_TORCH_HAS_EXPANDABLE   (1u << 10)  /* is_expandable */

typedef struct mf_torch_block {
    uint64_t address;         /* given, or computed (see above) */
    uint64_t size;
    uint64_t requested_size;
    uint32_t state;           /* mf_torch_block_state */
    uint32_t stack;           /* a stack id, or MF_TORCH_NO_STACK */
    uint32_t flags;
} mf_torch_block;

typedef struct mf_torch_segment {
    uint64_t index;           /* its position in segments */
    int64_t device;
    uint64_t address;
    uint64_t total_size;
    uint64_t allocated_size;
    uint64_t active_size;
    uint64_t requested_size;
    int64_t stream;
    int large;                /* segment_type 'large' 1, 'small' 0, absent -1 */
    int is_expandable;
    int64_t pool_id[2];
    uint32_t stack;
    uint32_t flags;
    const mf_torch_block *blocks;   /* in file (address) order */
    size_t nblocks;
} mf_torch_segment;

typedef struct mf_torch_entry {
    int64_t device;           /* its list's position in device_traces */
    uint64_t index;           /* its position in that list */
    uint64_t offset;          /* where its dict begins in the pickle (for messages) */
    uint32_t action;          /* mf_torch_action */
    uint32_t flags;
    uint64_t addr;
    uint64_t size;
    uint64_t device_free;     /* oom */
    int64_t stream;
    int64_t time_us;          /* Unix-epoch microseconds */
    int64_t pool_id[2];
    uint32_t stack;           /* a stack id, or MF_TORCH_NO_STACK */
    uint32_t nframes;
    const uint32_t *frames;   /* its frame ids, innermost first (valid in the callback) */
    const char *compile_context;   /* NULL when absent; valid in the callback */
    const char *user_metadata;     /* NULL when absent; valid in the callback */
} mf_torch_entry;

typedef enum mf_torch_section {
    MF_TORCH_SEGMENTS,        /* the segments list */
    MF_TORCH_TRACES,          /* the device_traces list */
    MF_TORCH_DEVICE           /* one device's trace in it */
} mf_torch_section;

/*
 * The callbacks, any of them NULL.  Return 0 to go on, or a negative
 * number to stop the walk (it then returns MF_PICKLE_STOPPED).
 */
typedef struct mf_torch_handler {
    int (*frame)(void *ctx, const mf_torch_frame *f);
    /* A distinct stack (its frames innermost first), reported once before its first use. */
    int (*stack)(void *ctx, uint32_t id, const uint32_t *frames, uint32_t n);
    int (*segment)(void *ctx, const mf_torch_segment *s);
    int (*entry)(void *ctx, const mf_torch_entry *e);
    /* A section begins (begin = 1, count 0) or ends (begin = 0, count = its items);
     * device is the device's index for MF_TORCH_DEVICE, else -1; offset is
     * where its list starts in the pickle. */
    int (*section)(void *ctx, mf_torch_section which, int begin, int64_t device,
                   uint64_t offset, uint64_t count);
    /* An action the walker does not know, once per distinct name (the first entry's place). */
    int (*unknown_action)(void *ctx, const char *name, int64_t device, uint64_t index);
} mf_torch_handler;

/* What mf_torch_walk reports. */
#define MF_TORCH_WANT_SEGMENTS 1u
#define MF_TORCH_WANT_TRACES   2u
#define MF_TORCH_WANT_ALL      3u

/* What a walk saw. */
typedef struct mf_torch_stats {
    int top_is_list;          /* 1.13: the snapshot is a list of segments */
    uint64_t segments, blocks;
    uint64_t devices;         /* lists in device_traces */
    uint64_t entries;         /* trace entries reported */
    uint64_t by_action[MF_TORCH_ACTIONS];
    uint64_t with_time;       /* entries with time_us */
    uint64_t unknown_actions; /* entries skipped for their action */
    uint64_t bad_entries;     /* entries skipped: no action string */
    uint64_t bad_values;      /* fields of the wrong type, taken as absent */
    uint64_t frames, stacks;  /* distinct */
    uint64_t cut_stacks;      /* stacks cut to MF_TORCH_MAX_FRAMES frames */
    size_t memory_peak;       /* the walker's own heap at most */
    int stopped_early;        /* MF_TORCH_WANT_SEGMENTS ended at the segments' end */
    mf_pickle_stats pickle;
} mf_torch_stats;

#define MF_TORCH_MAX_FRAMES 65536

/* Not a pickle failure: the pickle is plain data, but not a memory snapshot. */
#define MF_TORCH_NOT_A_SNAPSHOT 100

/*
 * Walk the snapshot r reads (a new reader: see mf_pickle_read), reporting
 * the sections in want to h.  Frames and stacks are reported whatever
 * want is (they get their ids in file order).  Returns 0; or an
 * mf_pickle_status, or MF_TORCH_NOT_A_SNAPSHOT, with a message in err
 * starting with the byte offset ("offset 2: not a PyTorch memory snapshot
 * (a str at the top)").  stats may be NULL.
 */
int mf_torch_walk(mf_pickle_reader *r, unsigned want, const mf_torch_handler *h,
                  void *ctx, mf_torch_stats *stats, char *err, size_t errlen);

#endif /* MEMFLOW_TORCH_SNAPSHOT_H */
