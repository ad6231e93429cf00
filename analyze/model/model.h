/*
 * model.h - what the outputs read, built from events as they stream, in
 * memory bounded by what the outputs need, never by the log's length.
 *
 * Data flow: reader (events in time order) -> mf_model_feed (here) ->
 * mf_model_settle -> outputs (svg*.c, chrome_trace.c, stats, csv.c).  Outputs only
 * read the model.  The model is incremental: more events may be fed after a
 * settle and it settles again (`memflow serve` answers request after
 * request from one model, reading only what the log gained).
 *
 * What is kept, and its bound:
 *  - live blocks (the one part that follows the program: what it holds at
 *    once; live_table.h);
 *  - counts, peaks and per-scope statistics per device and per process
 *    ("view": one process on one device): bounded by devices x processes x
 *    scopes;
 *  - occupancy curves, allocator samples, trace counters: bounded series
 *    (series.h: exact up to their limit, then min/max halving);
 *  - the picture: per view the largest blocks whole (topk.h) and every
 *    other block painted into a bounded cell grid (tiles.h), and the
 *    address ranges used (ranges.h);
 *  - the trace: the longest scope spans, GPU activities and trace-object
 *    spans within byte budgets, the first pool events and markers;
 *  - the largest blocks never freed (leaks).
 * Sizes are requested bytes unless a field says actual.  Times are
 * CLOCK_MONOTONIC ns as in the log; t0_ns is the earliest event.
 *
 * Sub-blocks (MF_FLAG_SUBBLOCK: regions a program's own allocator hands
 * out inside memory already counted, from the NVTX memory API) live in a
 * table of their own and are counted apart (mf_sub_counts, sub_scopes,
 * sub_sites, sub_roles, sub_names, sub_steps, a view's subblocks): they add
 * nothing to a device's or a view's counts, peaks, occupancy, scopes,
 * sites, roles, names, steps, leaks or GPU blocks.  A naming record names
 * the sub-block (tensor) that starts at its address when there is one,
 * else the block: on a device with tensors in segments the tensor is the
 * more specific of the two.  One recorded on
 * cpu/0 whose NVTX heap starts at a live GPU block of its process belongs
 * to that block's device (model_subblocks.c).
 *
 * Processes: a log is one process image.  When an image ends (its end
 * mark, an exec, or its last event: the reader's MF_EV_PROCESS_END), the
 * blocks it still holds end with it: they are not freed, so they count as
 * never freed (live_bytes_end, leaks, the dark edge in the picture), but
 * they no longer count as held, so a device's peak is the most the
 * processes alive at one time held together.
 */
#ifndef MEMFLOW_MODEL_H
#define MEMFLOW_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "device.h"
#include "event.h"
#include "reader.h"
#include "ranges.h"
#include "series.h"
#include "sites.h"
#include "string_pool.h"
#include "tiles.h"

#define MF_LIVE_AT_END UINT64_MAX   /* mf_block.free_ns of a block live at the model's end */

/* How a block ended. */
enum mf_block_end {
    MF_BLOCK_FREED = 0,
    MF_BLOCK_LIVE = 1,              /* still live at the model's end */
    MF_BLOCK_PROCESS_ENDED = 2,     /* never freed: its process ended (exit, exec, kill) */
    MF_BLOCK_REPLACED = 3           /* an allocation at its still-live address ended it */
};

/* One allocation's life. */
typedef struct mf_block {
    uint64_t addr;
    uint64_t requested;
    uint64_t actual;
    uint64_t alloc_ns;
    uint64_t free_ns;         /* when it ended; MF_LIVE_AT_END if live at the end */
    uint32_t scope;           /* string id */
    uint32_t name;            /* string id (0 = "unknown") */
    uint32_t tid;
    uint32_t pid;
    uint32_t stack;           /* the reader's stack id (0: none) */
    uint16_t device;
    uint16_t flags;           /* MF_FLAG_* | memory kind */
    uint8_t end;              /* enum mf_block_end */
    uint8_t role;             /* enum mf_block_role (MF_ROLE_MASK) | MF_ROLE_* bits */
    uint8_t entered;          /* live on entry to the window (mf_model_options.from_*):
                                 alloc_ns is the window's start, not its allocation */
    uint64_t release_ns;      /* a sub-block the program let go of before the allocator
                                 took it back (PyTorch's free_requested): when; 0: not */
} mf_block;

/*
 * A block's role (mf_block.role): what a tensor is (enum mf_block_role in
 * log_format.h), from a naming record (MF_TRACE_BLOCK_NAME) or inferred.
 * Once a process has named a tensor (its training began: the first forward
 * of a model), its blocks with no named role are MF_ROLE_OTHER, or
 * MF_ROLE_TEMPORARY when freed within the step they were allocated in
 * (between the same two step marks); blocks allocated before are
 * MF_ROLE_UNKNOWN, and those still held when training began, with no role
 * given later, carry MF_ROLE_BEFORE_TRAINING (torch's import, the
 * interpreter's own memory).
 */
#define MF_ROLE_MASK 0x07
#define MF_ROLE_NAMED 0x08            /* the role came from a naming record */
#define MF_ROLE_BEFORE_TRAINING 0x10  /* held from before its process's training began */
#define MF_ROLES 8

/* The name of a role: "unknown", "parameter", "gradient", "optimizer_state",
 * "activation", "input", "temporary", "other". */
MF_EXPORT const char *mf_role_name(unsigned role);

/* Parse a role's name; 0, or -1 if text names none. */
MF_EXPORT int mf_role_parse(const char *text, unsigned *role);

/* The bytes a block covers on an address axis: actual, or requested if
 * actual is 0, at least 1. */
static inline uint64_t mf_block_span(const mf_block *b)
{
    uint64_t s = b->actual ? b->actual : b->requested;
    return s ? s : 1;
}

/* The order in which blocks are kept whole and drawn one by one: a ranks
 * below b when it spans fewer bytes, then when it was allocated later, then
 * at a higher address (a total order). */
static inline int mf_block_ranks_below(const mf_block *a, const mf_block *b)
{
    uint64_t x = mf_block_span(a), y = mf_block_span(b);
    if (x != y)
        return x < y;
    if (a->alloc_ns != b->alloc_ns)
        return a->alloc_ns > b->alloc_ns;
    if (a->addr != b->addr)
        return a->addr > b->addr;
    return a->flags > b->flags;
}

/* Is the block one the program never freed (live at the end, or held until
 * its process ended)? */
static inline int mf_block_never_freed(const mf_block *b)
{
    return b->end == MF_BLOCK_LIVE || b->end == MF_BLOCK_PROCESS_ENDED;
}

/* The counts of a device, and of each process on it (a view). */
#define MF_COUNTS_FIELDS                                                                  \
    uint64_t alloc_count, free_count;     /* allocations; frees that ended a block */     \
    uint64_t alloc_bytes, alloc_actual_bytes;                                             \
    uint64_t min_size, max_size;          /* of requested sizes */                        \
    uint64_t min_addr, max_addr;          /* lowest address, highest end address */      \
    uint64_t peak_bytes, peak_time_ns;    /* most bytes held at once, first moment */     \
    uint64_t held_bytes, held_count;      /* held at the model's end */                   \
    uint64_t live_bytes_end, live_count_end; /* never freed: held at the end, or until */ \
                                          /* their process ended */                       \
    uint64_t unknown_frees;               /* frees of addresses not live */               \
    uint64_t inherited_frees;             /* a forked child's frees of its parent's blocks */ \
    uint64_t replaced_blocks;             /* allocations at a still-live address */     \
    uint64_t entry_bytes, entry_count;    /* live on entry to the window (held, not */   \
                                          /* counted as allocations) */

typedef struct mf_counts {
    MF_COUNTS_FIELDS
} mf_counts;

/* The sub-blocks of a device (requested bytes). */
typedef struct mf_sub_counts {
    uint64_t alloc_count, free_count;     /* allocations; frees that ended one */
    uint64_t alloc_bytes;
    uint64_t reused_count;                /* allocations served from a cache (REUSED) */
    uint64_t before_count, before_bytes;  /* live before recording began (MF_FLAG_BEFORE) */
    uint64_t peak_bytes, peak_time_ns;    /* most held at once, first moment */
    uint64_t held_bytes, held_count;      /* held at the model's end */
    uint64_t live_bytes_end, live_count_end; /* never ended: held at the end, or */
                                          /* until their process ended */
} mf_sub_counts;

/* What one scope did on one device. */
typedef struct mf_scope_stat {
    uint32_t scope;           /* string id */
    uint64_t alloc_count, free_count;
    uint64_t alloc_bytes;     /* sum of requested */
    uint64_t min_size, max_size;
    uint64_t peak_live_bytes; /* the most this scope held at once */
    uint64_t peak_live_time_ns;
    uint64_t live_bytes_end, live_count_end;   /* never freed */
    uint64_t at_peak_bytes;   /* held at the device's peak moment */
    uint64_t at_peak_count;
    /* at the step marks (MF_TRACE_STEP) since it first allocated: */
    uint64_t held_first_mark; /* bytes held at its first mark */
    uint64_t held_last_mark;  /* at its last */
    uint64_t blocks_first_mark, blocks_last_mark;   /* the blocks it held then */
    uint32_t marks;           /* marks seen */
    uint32_t marks_grew;      /* marks at which it held more than at the one before */
} mf_scope_stat;

/* Allocation sites (sites.h) reuse mf_scope_stat: its `scope` holds the
 * site id.  Live at end, peak live and at-peak values mean the same. */
typedef mf_scope_stat mf_site_stat;

/* The key that the keys past a per-device table's limit share (stacks,
 * tensor names: mf_stack_share.stack, mf_device_model.names). */
#define MF_KEY_OTHER UINT32_MAX

/* The bytes of one stack held at a device's peak. */
typedef struct mf_stack_share {
    uint32_t stack;           /* the reader's stack id; 0: blocks without a stack;
                                 UINT32_MAX: stacks past the ones counted one by one */
    uint64_t bytes, count;
} mf_stack_share;

/* One step on one device: from a step mark to the next (or the end). */
typedef struct mf_step_stat {
    uint64_t number;          /* the mark's step number (from 1) */
    uint64_t start_ns, end_ns;
    uint64_t held_start;      /* bytes held at its mark */
    uint64_t peak_bytes;      /* the most held during it */
    uint64_t peak_time_ns;
    uint64_t alloc_count, alloc_bytes;   /* allocated during it */
} mf_step_stat;

/* What one memory kind (enum mf_memory_kind) did on one device. */
#define MF_MODEL_KINDS 8
typedef struct mf_kind_stat {
    uint64_t alloc_count;
    uint64_t alloc_bytes;
    uint64_t live_bytes_end;  /* never freed */
} mf_kind_stat;

/* The key of a view's legend (mf_legend_scope.scope) and of its cells
 * (mf_tile.scope, when keyed by scope) that stands for every block held
 * from before its process's training began (MF_ROLE_BEFORE_TRAINING): one
 * band, not the bulk of the legend. */
#define MF_LEGEND_BEFORE_TRAINING (UINT32_MAX - 1)

/* The legend key of a block: its scope, or MF_LEGEND_BEFORE_TRAINING. */
static inline uint32_t mf_block_legend_key(uint32_t scope, uint8_t role)
{
    return (role & MF_ROLE_BEFORE_TRAINING) ? MF_LEGEND_BEFORE_TRAINING : scope;
}

/* A scope of a view's legend. */
typedef struct mf_legend_scope {
    uint32_t scope;           /* or MF_LEGEND_BEFORE_TRAINING */
    uint64_t bytes_at_peak;   /* held at the view's peak */
    uint64_t bytes_total;     /* allocated in all */
} mf_legend_scope;

/* qsort order of a legend (mf_legend_scope): most bytes at the peak first,
 * then most bytes in all, then by scope id. */
MF_EXPORT int mf_legend_scope_order(const void *a, const void *b);

/* One process on one device: what one panel of the picture shows. */
typedef struct mf_view {
    uint16_t device;
    uint32_t pid;
    union {
        mf_counts counts;
        struct { MF_COUNTS_FIELDS };
    };
    /* filled by mf_model_settle: */
    const mf_point *occupancy;     /* live bytes after each alloc/free (bounded) */
    size_t n_occupancy;
    uint64_t occupancy_points;     /* points added in all */
    const mf_snapshot *snapshots;  /* this process's allocator / driver samples */
    size_t n_snapshots;
    mf_block *blocks;              /* kept whole: the largest by address span and
                                      the largest live at the end; largest first */
    size_t n_blocks;
    int blocks_full;               /* more blocks were candidates than fit in blocks */
    const mf_tile_strip *tiles;    /* every other block, as cells (tiles.h) */
    size_t n_tiles;                /* strips */
    unsigned tile_gshift, tile_wshift;
    uint64_t tile_origin;
    const mf_range *ranges;        /* addresses used, by address */
    size_t n_ranges;
    mf_legend_scope *scopes;       /* by bytes at the peak, then in all */
    size_t n_scopes;
    uint64_t life_min, life_max;   /* lifetimes of its blocks (to the end when live) */
    uint64_t size_min, size_max;   /* requested sizes (>= 1) */
    uint64_t live_blocks;          /* blocks live at the end (some in blocks[]) */
    uint32_t index;                /* for mf_model_each_live */
    uint64_t process_peak;         /* the largest peak its process reached on any device */
    int interpreter;               /* its process is a Python interpreter */
    mf_block *subblocks;           /* its largest sub-blocks (MF_FLAG_SUBBLOCK), ended
                                      and live, largest first (drawn over their lanes) */
    size_t n_subblocks;
    uint64_t subblocks_left_out;   /* sub-blocks past the bound, not in subblocks */
} mf_view;

/* What a GPU is (DEVICE record). */
typedef struct mf_device_info {
    int known;
    uint32_t name;            /* string id of the model */
    uint8_t uuid[16];
    uint64_t total_bytes;
    uint32_t mig;             /* gpu instance << 16 | compute instance; UINT32_MAX none */
    uint32_t pci_bus;
} mf_device_info;

typedef struct mf_device_model {
    uint16_t device;
    union {
        mf_counts counts;
        struct { MF_COUNTS_FIELDS };
    };
    mf_kind_stat kinds[MF_MODEL_KINDS];
    mf_device_info info;
    /* MXNet's usage counter: the bytes held after each allocation and each
     * free that ended a block (alloc_count + free_count updates); its
     * largest value is peak_bytes. */
    uint64_t use_min_bytes;        /* its smallest value (0: no update yet) */
    double use_sum_bytes;          /* its values summed */
    /* filled by mf_model_settle: */
    const mf_point *occupancy;     /* all processes together (bounded) */
    size_t n_occupancy;
    uint64_t occupancy_points;     /* points added in all */
    const mf_snapshot *snapshots;  /* samples of all processes */
    size_t n_snapshots;
    uint64_t snapshots_added;
    mf_scope_stat *scopes;         /* every scope that allocated here, by scope id */
    size_t n_scopes;
    mf_site_stat *sites;           /* every site that allocated here, by site id (none
                                      when the logs have no stacks) */
    size_t n_sites;
    mf_stack_share *peak_stacks;   /* the stacks held at the peak, by stack id */
    size_t n_peak_stacks;
    mf_scope_stat *roles;          /* by role (enum mf_block_role, in `scope`), every
                                      role that allocated here; at_peak_* by the
                                      blocks' roles as they ended up */
    size_t n_roles;
    mf_scope_stat *names;          /* by tensor name (string id in `scope`; 0: blocks
                                      with no name), every name given here */
    size_t n_names;
    mf_scope_stat *held_at_exit;   /* what interpreter processes held when they exited,
                                      not allocated by the program's own code (the
                                      interpreter's own memory: not leaks), by site id
                                      (by scope without stacks) in `scope`:
                                      alloc_count / alloc_bytes the blocks / bytes */
    size_t n_held_at_exit;
    mf_step_stat *steps;           /* each step seen here, in order (bounded: the first
                                      MF_MODEL_STEPS) */
    size_t n_steps;
    uint64_t steps_dropped;        /* steps past the bound */
    mf_sub_counts sub;             /* its sub-blocks, apart from every count above */
    mf_scope_stat *sub_scopes;     /* sub-blocks by scope, by scope id (at_peak_*: at
                                      the sub-blocks' own peak) */
    size_t n_sub_scopes;
    mf_site_stat *sub_sites;       /* sub-blocks by site, by site id (logs with stacks) */
    size_t n_sub_sites;
    mf_scope_stat *sub_roles;      /* sub-blocks (tensors) by role, as roles, at the
                                      sub-blocks' own peak */
    size_t n_sub_roles;
    mf_scope_stat *sub_names;      /* sub-blocks by tensor name, as names */
    size_t n_sub_names;
    mf_step_stat *sub_steps;       /* sub-block bytes from step mark to step mark, as
                                      steps (held, peak, allocated: tensors only) */
    size_t n_sub_steps;
    uint64_t sub_steps_dropped;
    const mf_point *sub_occupancy; /* sub-block bytes held after each change (bounded):
                                      PyTorch's allocated bytes beside the reserved ones */
    size_t n_sub_occupancy;
    mf_view **views;               /* its processes, largest peak first */
    size_t n_views;
} mf_device_model;

/* A GPU memory pool created, trimmed or destroyed (CUPTI MEMORY_POOL). */
typedef struct mf_pool_event {
    uint64_t time_ns, addr, size, threshold;
    uint32_t pid;
    uint16_t device, op;      /* enum mf_pool_op */
} mf_pool_event;

/* A scope pushed on a thread: [begin, end), end = t1 if never popped. */
typedef struct mf_span {
    uint64_t begin_ns, end_ns;
    uint64_t seq;             /* order of the pushes */
    uint32_t scope;
    uint32_t tid;
    uint32_t pid;
    uint32_t depth;
} mf_span;

/* A GPU kernel, copy or set. */
typedef struct mf_activity {
    uint64_t start_ns, end_ns, bytes;
    uint32_t name, stream, correlation, pid;
    uint16_t device, kind;    /* enum mf_activity_kind */
} mf_activity;

/* A trace object's span (Task, Frame, Event, NVTX range): begin..end. */
typedef struct mf_trace_span {
    uint64_t begin_ns, end_ns;
    uint64_t id;              /* the object id that paired begin and end */
    uint64_t seq;
    uint32_t domain, name;    /* string ids */
    uint32_t pid, tid, end_tid;
    uint16_t kind;            /* MF_TRACE_TASK_BEGIN, _FRAME_, _EVENT_ or _RANGE_BEGIN */
    uint16_t open;            /* never ended: end_ns is the model's end */
} mf_trace_span;

/* A step mark (MF_TRACE_STEP): an optimizer step began. */
typedef struct mf_step_mark {
    uint64_t time_ns;
    uint64_t number;
    uint32_t pid;
    uint32_t optimizer;       /* string id */
} mf_step_mark;

/* A trace marker (an instant). */
typedef struct mf_trace_marker {
    uint64_t time_ns;
    uint32_t domain, name, pid, tid;
    uint32_t scope;           /* enum mf_marker_scope */
} mf_trace_marker;

/* A trace counter's series (one per process and counter name). */
typedef struct mf_trace_counter {
    uint32_t pid, domain, name;
    const mf_point *points;   /* live_bytes holds the value (an int64 as written) */
    size_t n_points;
    uint64_t added;
} mf_trace_counter;

typedef struct mf_thread_info {
    uint32_t tid, pid;
    uint32_t name;            /* string id; 0: no name recorded */
} mf_thread_info;

/* A key's share of what was live at an out-of-memory error: a scope's
 * string id or a site id, its bytes and blocks. */
typedef struct mf_oom_share {
    uint32_t id;
    uint64_t bytes, count;
} mf_oom_share;

#define MF_OOM_TOP 8              /* scopes, sites and growers kept per OOM */
#define MF_OOM_KEPT 16            /* OOMs analysed; more are counted */

/*
 * The post-mortem of an allocation that failed for want of device memory
 * (an OOM record): what was asked, what the device had, and what the
 * process held on it at that moment.  What was live is its sub-blocks
 * (PyTorch's tensors) where it had any on the device, else its blocks.
 */
typedef struct mf_oom {
    uint64_t time_ns;
    uint32_t pid;
    uint16_t device, route;         /* enum mf_oom_route */
    uint64_t requested;             /* bytes asked for */
    uint64_t device_free;           /* the device's free memory; UINT64_MAX unknown */
    uint64_t device_limit;          /* 0 unknown */
    uint32_t scope;                 /* the request's scope (string id) */
    uint32_t site;                  /* the request's site (sites.h; MF_SITE_NONE) */
    uint64_t reserved_bytes, reserved_count;    /* blocks (segments) held */
    uint64_t allocated_bytes, allocated_count;  /* sub-blocks (tensors) held */
    uint64_t largest_gap;           /* the largest range inside a held block that no
                                       sub-block covers (fragmentation); with tensors only */
    int tensors;                    /* what was live is sub-blocks */
    mf_oom_share by_scope[MF_OOM_TOP];   /* what was live, most bytes first */
    size_t n_by_scope;
    mf_oom_share by_site[MF_OOM_TOP];    /* (logs with stacks) */
    size_t n_by_site;
    uint64_t grew_since_ns;         /* the last tenth of the time up to the OOM */
    uint64_t grew_bytes;            /* live then, allocated since grew_since_ns */
    mf_oom_share grew[MF_OOM_TOP];  /* that, by scope */
    size_t n_grew;
} mf_oom;

/* An OOM's route (enum mf_oom_route) as a key ("torch_trace",
 * "torch_observer", "cuda_api", "oom_killer"; "unknown"), and in words. */
MF_EXPORT const char *mf_oom_route_key(unsigned route);
MF_EXPORT const char *mf_oom_route_name(unsigned route);

/* What PyTorch's allocator history told the model (its NOTE and SEGMENT
 * records). */
typedef struct mf_torch_info {
    int history;                    /* some log has the history (tensors) */
    int event_order;                /* its times are the order of its events (no time_us) */
    unsigned scopes;                /* enum mf_torch_scopes; 0: none said */
    unsigned off;                   /* enum mf_torch_off: the live history was off */
    uint64_t ring;                  /* the live history's ring (entries); 0: not live */
    uint64_t inconsistent;          /* entries contradicting the state */
    int profiler_no_cuda;           /* torch.profiler ran without CUDA (memflow held CUPTI) */
    /* SEGMENT records matched by address with the GPU capture's blocks: */
    uint64_t matched, unmatched;
    int64_t offset_sum_ns;          /* history time - capture time, summed */
    int64_t offset_min_ns, offset_max_ns;
} mf_torch_info;

/* One process image (one log). */
typedef struct mf_process_info {
    uint32_t pid, ppid;
    char *program;            /* argv joined with spaces */
    char *log_path;
    int finished;             /* the log was closed cleanly */
    uint64_t start_ns;        /* its log opened */
    uint64_t end_ns;          /* it ended; 0: it was still running (or held at the end) */
    unsigned end_how;         /* enum mf_end_how, marked or inferred */
    int64_t end_status;
    int end_inferred;         /* no end mark: from an exec, or its last event */
    int abnormal;             /* killed by a signal, or ended with no mark and no clean close */
    int running;              /* still running when the logs were read */
    int parent;               /* process index of the image it was forked from, or -1 */
    int interpreter;          /* a Python interpreter (its program, or Python frames in
                                 its stacks): what it holds at exit is "held at exit" */
    uint64_t peak_bytes;      /* the largest peak its pid reached on any device */
    int cpu_heap_off;         /* its CPU heap was not recorded (NOTE MF_NOTE_CPU_HEAP_OFF:
                                 memflow.profiler without memflow run) */
    int next_image;           /* process index of the image that replaced it (exec), or -1 */
} mf_process_info;

typedef struct mf_model {
    uint64_t t0_ns, t1_ns;
    mf_strings *strings;      /* string ids of every event and block */
    uint32_t n_strings;       /* ids are 0 .. n_strings - 1 (at the last settle) */
    mf_device_model *devices; /* cpu/0 first, then gpu/0, gpu/1... */
    size_t n_devices;
    mf_process_info *processes;  /* by log */
    size_t n_processes;
    mf_thread_info *threads;  /* by pid, tid */
    size_t n_threads;
    mf_span *spans;           /* scope spans kept, by begin */
    size_t n_spans;
    uint64_t spans_dropped;
    mf_activity *activities;  /* GPU activities kept, by start */
    size_t n_activities;
    uint64_t activities_dropped;
    mf_pool_event *pools;
    size_t n_pools;
    uint64_t pools_dropped;
    mf_trace_span *trace_spans;   /* trace objects' spans kept, by begin */
    size_t n_trace_spans;
    uint64_t trace_spans_dropped;
    mf_trace_marker *markers;
    size_t n_markers;
    uint64_t markers_dropped;
    mf_trace_counter *counters;
    size_t n_counters;
    uint64_t counters_dropped;    /* series past the limit of counters */
    mf_block *leaks;          /* the largest blocks never freed, largest first; of an
                                 interpreter process (mf_process_info.interpreter),
                                 only those the program's own code allocated (a Python
                                 site of its own) */
    size_t n_leaks;
    mf_block *gpu_live;       /* every GPU block never freed, by pid */
    size_t n_gpu_live;
    mf_block *gpu_sub_live;   /* every GPU sub-block (tensor) never freed, by pid */
    size_t n_gpu_sub_live;
    mf_oom *ooms;             /* out-of-memory errors, the first MF_OOM_KEPT, in time order */
    size_t n_ooms;
    uint64_t ooms_total;      /* all of them */
    mf_torch_info torch;
    uint64_t gpu_dropped;     /* CUPTI records dropped (NOTE records) */
    char **warnings;          /* damage and notes, one line each */
    size_t n_warnings;
    int damaged;              /* some log was damaged (its damage is a warning) */
    uint64_t since_ns;        /* events before this were left out (0: none); with a
                                 window (mf_model_options.from_*), its start */
    uint64_t until_ns;        /* events after this were left out (UINT64_MAX: none) */
    uint64_t window_from_step, window_to_step;   /* the window's steps (0: none) */
    uint64_t origin_ns;       /* the earliest event of all logs, what --from/--to
                                 times count from (0: not known: mf_model_load sets it) */
    int window_missing;       /* a window was asked for and never began (its start
                                 is past the logs, or its step never marked) */
    uint64_t largest_process_peak;   /* the largest mf_process_info.peak_bytes */
    mf_step_mark *step_marks; /* every step mark, by time (bounded: MF_MODEL_STEPS) */
    size_t n_step_marks;
    struct mf_sites *sites;   /* allocation sites (sites.h); NULL: the logs have no stacks */
    struct mf_model_state *state;   /* the incremental part (model.c and its parts) */
} mf_model;

/* Whether the model stops before its logs end (--to, --at): blocks live at
 * its end are live then, not necessarily never freed. */
static inline int mf_model_cut(const mf_model *m)
{
    return m->until_ns != UINT64_MAX;
}

/* Whether the model is a window of its logs (--from, --to, --at). */
static inline int mf_model_windowed(const mf_model *m)
{
    return mf_model_cut(m) || m->since_ns || m->window_from_step;
}

#define MF_MODEL_LEAKS 100        /* leaks kept */
#define MF_MODEL_STEPS 65536      /* steps kept per device, and step marks */
#define MF_MODEL_NAMES 65536u     /* tensor names counted one by one, per device (blocks,
                                     and sub-blocks apart); the rest share MF_KEY_OTHER */

/* What the picture's cells are keyed by (mf_model_options.tiles_by). */
enum mf_tiles_by {
    MF_TILES_BY_SCOPE = 0,    /* the block's scope string id */
    MF_TILES_BY_SITE = 1,     /* its site id (sites.h) */
    MF_TILES_BY_ROLE = 2      /* its role (mf_block.role & MF_ROLE_MASK) */
};

typedef struct mf_model_options {
    int no_picture;           /* keep nothing for memory_flow (statistics only) */
    int no_trace;             /* keep no spans, activities or trace objects */
    int no_curves;            /* keep no occupancy curves (mf_view.occupancy and the
                                 device's stay empty): for a reader with its own */
    uint64_t since_ns;        /* leave out events before this (memflow serve's reset:
                                 a free of an earlier block is an unknown free) */
    /* A window: count only from from_ns (absolute; 0: the start), or from the
     * first step mark numbered from_step (0: none), with the blocks live on
     * entry held (mf_counts.entry_*); until the first mark numbered
     * to_step + 1 (0: the end). */
    uint64_t from_ns;
    uint64_t from_step, to_step;
    int tiles_by;             /* what the picture's cells keep in mf_tile.scope
                                 (enum mf_tiles_by): a block's scope, its site
                                 id (sites.h: memory_flow coloured by site,
                                 needs stacks) or its role */
    /* Told of every block (not sub-blocks) as it starts (ended 0, free_ns
       MF_LIVE_AT_END) and as it ends (ended 1: freed, replaced, or its
       process ended; end says which), in the order the events are fed; the
       block is the caller's to copy, valid during the call.  NULL: nobody.
       `memflow view`'s index (analyze/index/index.h) is built from it. */
    void (*on_block)(void *ctx, const mf_block *b, int ended);
    /* Told (with on_block_ctx) when a live block's role (mf_block.role &
       MF_ROLE_MASK) changes at time_ns: a naming record gave it one, or it
       ends a temporary (told before its end); b has its new role, from the
       one it had.  NULL: nobody. */
    void (*on_role)(void *ctx, const mf_block *b, unsigned from, uint64_t time_ns);
    /* Told (with on_block_ctx) of every OOM as it comes (every one, not
       only the first MF_OOM_KEPT): analysed 1 with its post-mortem (what
       was live), 0 with only what it asked (past the ones analysed).  The
       OOM is the caller's to copy.  NULL: nobody. */
    void (*on_oom)(void *ctx, const mf_oom *o, int analysed);
    void *on_block_ctx;
} mf_model_options;

/* An empty model (opt may be NULL); NULL with a message in err when out of memory. */
MF_EXPORT mf_model *mf_model_new(const mf_model_options *opt, char *err, size_t errlen);

/*
 * Describe process image `log` (the reader's log index): called for every
 * log before its events, and again when what the reader knows changes.
 * 0, or -1 when out of memory.
 */
MF_EXPORT int mf_model_set_process(mf_model *m, uint32_t log, const mf_log_info *info);

/*
 * Feed n events in time order (samples: the SAMPLE values of this batch,
 * indexed by e->extra).  0, or -1 when out of memory (the model is then
 * incomplete; free it).
 */
MF_EXPORT int mf_model_feed(mf_model *m, const mf_event *events, size_t n,
                            const mf_sample_values *samples);

/*
 * Count allocations per site and per stack from now on, through sites (the
 * model owns it from here: mf_model_free closes it).  Call before feeding.
 */
MF_EXPORT void mf_model_set_sites(mf_model *m, struct mf_sites *sites);

/*
 * From now on, keep the picture on a second core where there is one
 * (model_picture.h mf_picture_use_thread; MEMFLOW_MODEL_THREAD=0: never):
 * the model is exactly the same, built sooner.  The loads use it for what
 * a user waits for (mf_model_load_opts, mf_follow_finish).
 */
MF_EXPORT void mf_model_use_threads(mf_model *m);

/* A window from from_ns (absolute, as mf_model_options.from_ns; 0: none),
 * known only once the logs' start is.  Call before feeding. */
MF_EXPORT void mf_model_window_from(mf_model *m, uint64_t from_ns);

/* Add a warning line (printf format). */
MF_EXPORT void mf_model_warn(mf_model *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Add a warning about the logs themselves (damage, a process that did not
 * finish): these come first in `warnings`, before those of the events, in
 * the order added, whenever they are added. */
MF_EXPORT void mf_model_warn_log(mf_model *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Drop the warnings about the logs (to describe the logs again). */
MF_EXPORT void mf_model_forget_log_warnings(mf_model *m);

/*
 * Fill every field the outputs read from what was fed so far.  May be
 * called again after more events.  0, or -1 when out of memory.
 */
MF_EXPORT int mf_model_settle(mf_model *m);

/*
 * Call fn(block, ctx) for every block of view v live at the end that is
 * not in v->blocks (the renderer paints them).  Stops when fn returns
 * non-zero and returns that.
 */
MF_EXPORT int mf_model_each_live(const mf_model *m, const mf_view *v,
                                 int (*fn)(const mf_block *b, void *ctx), void *ctx);

MF_EXPORT void mf_model_free(mf_model *model);

/*
 * Read the logs at paths[0..n) and build their model, leaving out events
 * more than until_rel_ns after the earliest event of all logs (UINT64_MAX:
 * nothing left out).  Damage of a log becomes warnings ("FILE: offset N:
 * what") and sets `damaged`.  Returns NULL with a message in err (naming
 * the file) if a log cannot be read at all, or out of memory.
 */
MF_EXPORT mf_model *mf_model_load(const char *const *paths, size_t n, uint64_t until_rel_ns,
                                  char *err, size_t errlen);

/* Progress of reading logs into a model: done of total event records
 * decoded, called after every batch (a few thousand events). */
typedef void (*mf_load_progress)(void *ctx, uint64_t done, uint64_t total);

typedef struct mf_load_options {
    uint64_t until_rel_ns;    /* UINT64_MAX: everything */
    uint64_t from_rel_ns;     /* a window from this long after the earliest event
                                 (model.from_ns; 0: none) */
    int merge_runs;           /* merge logs of different runs */
    mf_model_options model;   /* model.since_ns: leave out events before (absolute) */
    mf_load_progress progress;   /* NULL: none */
    void *progress_ctx;
} mf_load_options;

/* mf_model_load with options; *rc gets 0, -1 (err says why) or
 * MF_READER_OTHER_RUNS. */
MF_EXPORT mf_model *mf_model_load_opts(const char *const *paths, size_t n,
                                       const mf_load_options *opt, int *rc, char *err,
                                       size_t errlen);

/*
 * A model built while its logs are written (memflow run during the run):
 * new makes an empty one (stacks_expected: the run records call stacks, so
 * the sites are there from the first event, as a load of logs with stacks
 * has them); add_log follows one more log of the run as it appears
 * (staged: its chunks may reach it by copies from memflow run's staging
 * area, reader.h mf_reader_add_log); step
 * looks at the logs again and feeds the events up to until (a time no
 * record can still come before: the caller's horizon), about max of them
 * at most (call again for more) - 1 when it fed some, 0, or -1 with err; finish, once every process is gone and every
 * record written, feeds the rest and settles.  late: how many things came
 * too late for the model to be exactly what mf_model_load_opts builds from
 * the finished logs (records stamped before the horizon, a process end
 * that moved, sites that came late...; reader.h mf_reader_late); 0 means
 * it is exactly that model (*by_ns: the most a record came late by).
 * take hands the model over (*rc 0) and frees the rest.  Not thread-safe:
 * one thread drives it.
 */
typedef struct mf_follow mf_follow;
MF_EXPORT mf_follow *mf_follow_new(const mf_model_options *opt, int stacks_expected, char *err,
                                   size_t errlen);
MF_EXPORT int mf_follow_add_log(mf_follow *f, const char *path, int staged, char *err,
                                size_t errlen);
MF_EXPORT int mf_follow_step(mf_follow *f, uint64_t until, uint64_t max, char *err,
                             size_t errlen);
MF_EXPORT int mf_follow_finish(mf_follow *f, char *err, size_t errlen);
MF_EXPORT uint64_t mf_follow_late(const mf_follow *f, uint64_t *by_ns);
MF_EXPORT uint64_t mf_follow_fed(const mf_follow *f);
/* Progress of what finish reads (NULL: none). */
MF_EXPORT void mf_follow_set_progress(mf_follow *f, mf_load_progress fn, void *ctx);
MF_EXPORT mf_model *mf_follow_take(mf_follow *f, int *rc);
MF_EXPORT void mf_follow_free(mf_follow *f);

/* String of an id; "unknown" for 0 or an id the model lacks. */
MF_EXPORT const char *mf_model_string(const mf_model *model, uint32_t id);

/* The device model of device, or NULL. */
MF_EXPORT const mf_device_model *mf_model_device(const mf_model *model, uint16_t device);

/* The view of process pid on device, or NULL. */
MF_EXPORT const mf_view *mf_model_view(const mf_model *model, uint16_t device, uint32_t pid);

/* The scope statistics of scope on dev, or NULL if it never allocated there. */
MF_EXPORT const mf_scope_stat *mf_model_scope(const mf_device_model *dev, uint32_t scope);

/* The statistics of site on dev, or NULL if it never allocated there. */
MF_EXPORT const mf_site_stat *mf_model_site(const mf_device_model *dev, uint32_t site);

/* The name of thread (pid, tid), or NULL when none was recorded. */
MF_EXPORT const char *mf_model_thread_name(const mf_model *model, uint32_t pid, uint32_t tid);

/*
 * Whether a process (its pid's largest peak on any device, whether it is a
 * Python interpreter) held little: under below_pct percent of the largest
 * process's peak, and no interpreter.  Such processes (a launcher's shells
 * and helpers) share one summary panel and one statistics line.
 */
static inline int mf_model_small_process(const mf_model *m, uint64_t peak, int interpreter,
                                         double below_pct)
{
    return !interpreter && (double)peak * 100.0 < below_pct * (double)m->largest_process_peak;
}

#define MF_SMALL_PROCESS_PCT 1.0  /* the default of below_pct (--summary-below) */

/* The latest program of process pid ("" when unknown). */
MF_EXPORT const char *mf_model_program(const mf_model *model, uint32_t pid);

/* "cpu/0" / "gpu/N" of a device into buf (16 bytes); returns buf. */
MF_EXPORT const char *mf_model_device_name(uint16_t device, char *buf, size_t len);

/* Parse "cpu/0" / "gpu/N" (N < 256); 0, or -1 if text is not a device. */
MF_EXPORT int mf_model_device_parse(const char *text, uint16_t *device);

#endif /* MEMFLOW_MODEL_H */
