/*
 * model_state.h - the incremental part of the model, behind mf_model: what
 * is built as events stream in, between settles.  Internal to the model's
 * files: model.c (events, processes, devices, views, settling),
 * model_blocks.c (blocks: allocation, free, end, counts, scopes, peaks),
 * model_picture.c (per view: the largest blocks, the tiles, the address
 * ranges, the legend), model_subblocks.c (sub-blocks, counted apart, and
 * the NVTX heaps that place them) and model_timeline.c (spans, GPU
 * activities, pools, trace objects).
 */
#ifndef MEMFLOW_MODEL_STATE_H
#define MEMFLOW_MODEL_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "live_table.h"
#include "model.h"
#include "topk.h"

/* Budgets: what the model keeps at most, whatever the log. */
#define MF_DEVICE_POINTS (1u << 17)      /* occupancy points per device */
#define MF_DEVICE_SNAPSHOTS 30000u       /* samples per device */
#define MF_VIEW_POINTS_ALL (1u << 20)    /* occupancy points, all views together */
#define MF_VIEW_POINTS_MIN 1024u
#define MF_VIEW_POINTS_MAX 16384u
#define MF_VIEW_SNAPSHOTS 4096u
#define MF_KEPT_BLOCKS_ALL 65536u        /* blocks kept whole, all views together */
#define MF_KEPT_BLOCKS_MIN 512u
#define MF_KEPT_BLOCKS_MAX 20000u
#define MF_TILES_ALL (256u << 10)        /* tile strips (of 16 cells), all views together */
#define MF_SPAN_BYTES (8u << 20)         /* trace bytes of scope spans */
#define MF_ACTIVITY_BYTES (8u << 20)     /* of GPU activities */
#define MF_TRACE_SPAN_BYTES (8u << 20)   /* of trace objects' spans */
#define MF_TRACE_EVENT_BYTES 120u        /* an X event without its name */
#define MF_POOL_EVENTS 10000u
#define MF_MARKERS 10000u
#define MF_COUNTERS 1024u                /* trace counter series */
#define MF_COUNTER_POINTS 4096u          /* points per counter series */
#define MF_SUB_KEPT 4096u                /* sub-blocks kept to draw, per view */

/* A scope's share of what an owner (device or view) holds, for its value
 * at the owner's peak: when the scope changes after a peak the owner
 * reached since its last change, its held bytes then were its bytes at the
 * peak (the epoch says which peak). */
typedef struct mf_scope_held {
    uint64_t bytes, count;
    uint64_t at_peak_bytes, at_peak_count;
    uint64_t epoch;
} mf_scope_held;

typedef struct mf_dev_scope {
    mf_scope_stat s;          /* live_bytes_end/count: the part ended with a process */
    mf_scope_held held;
} mf_dev_scope;

/* A device's statistics by a small key: scope string id, site id or stack
 * id.  Past `limit` keys, new keys share one entry, keyed MF_KEY_OTHER. */
typedef struct mf_keyed {
    mf_dev_scope *items;
    size_t n, cap;
    int32_t *index;           /* by key: index into items, -1 */
    size_t n_index;
    size_t limit;             /* 0: none */
    int32_t other;            /* index + 1 of the shared entry; 0: none yet */
} mf_keyed;

#define MF_KEY_OTHER UINT32_MAX
#define MF_STACKS_KEPT 65536u            /* stacks counted one by one, per device */

typedef struct mf_view_scope {
    uint32_t scope;
    uint64_t total;
    mf_scope_held held;
} mf_view_scope;

typedef struct mf_view_state {
    mf_view pub;
    uint32_t index;
    mf_series occupancy;
    mf_snapshots snapshots;
    uint64_t epoch;           /* peaks reached */
    mf_topk kept;             /* mf_block, by address span */
    mf_tiles tiles;
    mf_ranges ranges;
    mf_view_scope *scopes;    /* hashed by scope */
    uint32_t *scope_slots;    /* index + 1 */
    size_t n_scopes, cap_scopes, n_slots;
    uint64_t held_actual;     /* actual bytes held now */
    uint64_t unfreed_bytes, unfreed_count;   /* ended with their process */
    uint64_t first_ns, last_ns;
    uint64_t life_min, life_max, size_min, size_max;
    uint64_t paints;          /* blocks painted into the tiles */
    uint64_t cell_bytes;      /* the address resolution worth keeping (see paint) */
    mf_topk sub_kept;         /* mf_block: its largest ended sub-blocks */
} mf_view_state;

typedef struct mf_dev_state {
    mf_device_model pub;
    mf_series occupancy;
    mf_snapshots snapshots;
    uint64_t epoch;
    mf_keyed scopes;          /* by scope string id */
    mf_keyed sites;           /* by site id (sites.h), when the logs have stacks */
    mf_keyed stacks;          /* by stack id, for the stacks live at the peak */
    uint32_t *views;          /* view indices */
    size_t n_views, cap_views;
    uint64_t held_actual;     /* actual bytes held now */
    uint64_t unfreed_bytes, unfreed_count;   /* ended with their process */
    mf_keyed sub_scopes;      /* sub-blocks by scope string id */
    uint64_t sub_epoch;       /* peaks of its sub-blocks reached */
    uint64_t sub_unfreed_bytes, sub_unfreed_count;   /* sub-blocks ended with their process */
} mf_dev_state;

typedef struct mf_proc_state {
    int known;                /* mf_model_set_process was called */
    uint32_t pid;
    int parent;               /* log it was forked from, or -1 */
    uint64_t start_ns;
    int ended;
    uint32_t *view_of;        /* by device slot: view index + 1 */
    size_t n_view_of;
    uint32_t last_tid;        /* the thread seen last (a cache) */
    mf_block *gpu_unfreed;    /* GPU blocks it held when it ended */
    size_t n_gpu_unfreed, cap_gpu_unfreed;
} mf_proc_state;

/* A thread: its name and its open scope spans and trace events. */
typedef struct mf_thread_track {
    uint32_t pid, tid;
    uint32_t name;
    mf_span *open;            /* scope spans pushed, not popped (innermost last) */
    size_t n_open, cap_open;
    mf_trace_span *events;    /* Event begin without end (innermost last) */
    size_t n_events, cap_events;
} mf_thread_track;

/* An async trace object begun and not ended (Task, Frame, NVTX range). */
typedef struct mf_open_object {
    uint64_t key;             /* log << 48 ^ kind << 40 ^ id; 0 = empty */
    mf_trace_span span;
} mf_open_object;

/* An NVTX heap registered and not unregistered: where its regions belong. */
typedef struct mf_heap {
    uint64_t addr, size;
    uint16_t log, device;     /* the device of the live block at addr, else as recorded */
} mf_heap;

typedef struct mf_counter_state {
    uint32_t pid, domain, name;
    mf_series points;
} mf_counter_state;

struct mf_model_state {
    mf_model_options opt;
    int16_t device_slot[1u << 16];   /* device -> index into devs, -1 */
    mf_dev_state **devs;
    size_t n_devs, cap_devs;
    mf_view_state **views;
    size_t n_views, cap_views;
    size_t view_points, kept_limit;  /* per-view limits for the current view count */
    size_t tiles_total;              /* tile strips of all views */
    mf_proc_state *procs;            /* by log */
    size_t n_procs;
    mf_live_table live;
    mf_live_table sub_live;          /* live sub-blocks, keyed by the device recorded */
    mf_heap *heaps;                  /* NVTX heaps registered, in no order */
    size_t n_heaps, cap_heaps;
    mf_topk leaks;                   /* mf_block never freed whose process ended */
    mf_thread_track *threads;        /* hashed by (pid, tid) */
    uint32_t *thread_slots;          /* index + 1 */
    size_t n_threads, cap_threads, n_thread_slots;
    mf_topk spans;                   /* mf_span, longest kept */
    mf_topk activities;              /* mf_activity, longest kept */
    size_t cap_pools;
    mf_topk trace_spans;             /* mf_trace_span, longest kept */
    mf_open_object *objects;         /* hashed by key */
    size_t n_objects, n_object_slots;
    size_t cap_markers;
    mf_counter_state *counters;
    size_t n_counters, cap_counters;
    uint64_t seq;                    /* order of spans */
    char **warnings;                 /* fed (mf_model_warn) */
    size_t n_warnings, cap_warnings;
    char **derived;                  /* made by the last settle from the counts */
    size_t n_derived, cap_derived;
    uint64_t t0, t1;                 /* UINT64_MAX, 0 before the first event */
    int oom;
    /* what the last settle allocated */
    mf_view **settled_views;
};

/* ---- model.c ---- */

/* The view of (device, process of log), created if new; NULL when out of memory. */
mf_view_state *mf_model_view_of(mf_model *m, uint16_t log, uint16_t device,
                                mf_dev_state **dev);

/* The thread (pid, tid), created if new; NULL when out of memory. */
mf_thread_track *mf_model_thread(mf_model *m, uint32_t pid, uint32_t tid);

/* ---- model_blocks.c ---- */

void mf_model_on_alloc(mf_model *m, const mf_event *e);
void mf_model_on_free(mf_model *m, const mf_event *e);
void mf_model_on_process_end(mf_model *m, const mf_event *e);
void mf_model_on_sample(mf_model *m, const mf_event *e, const mf_sample_values *values);
/* The device's scope and site statistics (with at-peak values) into
 * pub.scopes and pub.sites, and the stacks held at its peak. */
int mf_model_settle_scopes(mf_model *m, mf_dev_state *d);
/* Free a keyed table. */
void mf_keyed_free(mf_keyed *t);
/* The entry of key in t, created if new (the shared one past the limit);
 * NULL (and oom set) when out of memory. */
mf_dev_scope *mf_keyed_get(mf_model *m, mf_keyed *t, uint32_t key);
/* Count an allocation of bytes in a keyed entry whose owner is at epoch. */
void mf_keyed_alloc(mf_dev_scope *s, uint64_t epoch, uint64_t bytes, uint64_t time_ns);
/* A keyed table's statistics as the outputs read them, by key, with their
 * share at the owner's peak (epoch; none when peak_bytes is 0); NULL when
 * out of memory. */
mf_scope_stat *mf_keyed_settle(const mf_keyed *t, uint64_t epoch, uint64_t peak_bytes);
/* Leaks, the CPU picture's live blocks and the GPU blocks never freed. */
int mf_model_settle_blocks(mf_model *m);
/* The block of live entry e as it stands at the model's end. */
void mf_model_live_block(const mf_model *m, const mf_live *e, mf_block *out);

/* ---- model_picture.c ---- */

/* A block of view v ended (or is drawn live at the end): keep it whole or
 * paint it. */
int mf_picture_retire(mf_model *m, mf_view_state *v, const mf_block *b);
/* Count an allocation's addresses and sizes for the view's picture. */
int mf_picture_alloc(mf_model *m, mf_view_state *v, uint64_t addr, uint64_t span);
/* The view's scope entry (created if new); NULL when out of memory. */
mf_view_scope *mf_picture_scope(mf_view_state *v, uint32_t scope);
/* Per-view limits after the number of views changed. */
int mf_picture_rebalance(mf_model *m);
/* The view's settled picture fields. */
int mf_picture_settle(mf_model *m, mf_view_state *v);
/* An empty selection of the largest blocks (mf_block by address span). */
void mf_picture_kept_init(mf_topk *k, size_t limit);
/* Is live block b of v among v->blocks (chosen at the last settle)? */
int mf_picture_kept_whole(const mf_view *v, const mf_block *b);
void mf_picture_free(mf_view_state *v);

/* ---- model_subblocks.c ---- */

void mf_sub_on_alloc(mf_model *m, const mf_event *e);
void mf_sub_on_free(mf_model *m, const mf_event *e);
/* The sub-blocks of log still live end with its process. */
void mf_sub_on_process_end(mf_model *m, uint16_t log, uint64_t time_ns);
/* An NVTX heap's POOL record (MF_POOL_HEAP_*): the device it belongs to,
 * for the trace's pool event. */
uint16_t mf_sub_on_heap(mf_model *m, const mf_event *e);
/* TRACE MF_TRACE_REGION_NAME: a live sub-block gets its name. */
void mf_sub_on_name(mf_model *m, const mf_event *e);
/* The device's sub-block counts and scopes; the view's sub-blocks to draw. */
int mf_sub_settle_device(mf_model *m, mf_dev_state *d);
int mf_sub_settle_view(mf_model *m, mf_view_state *v);
void mf_sub_free(mf_model *m);

/* ---- model_timeline.c ---- */

void mf_timeline_on_scope(mf_model *m, const mf_event *e);
void mf_timeline_on_activity(mf_model *m, const mf_event *e);
void mf_timeline_on_pool(mf_model *m, const mf_event *e);
void mf_timeline_on_object(mf_model *m, const mf_event *e);
int mf_timeline_init(mf_model *m);
int mf_timeline_settle(mf_model *m);
void mf_timeline_free(mf_model *m);

/* Change a scope's held bytes, capturing its share at the owner's last peak. */
static inline void mf_scope_held_change(mf_scope_held *s, uint64_t owner_epoch, int64_t bytes,
                                        int64_t count)
{
    if (s->epoch != owner_epoch) {
        s->at_peak_bytes = s->bytes;
        s->at_peak_count = s->count;
        s->epoch = owner_epoch;
    }
    s->bytes += (uint64_t)bytes;
    s->count += (uint64_t)count;
}

/* Its bytes and blocks at the owner's (latest) peak. */
static inline void mf_scope_held_at_peak(const mf_scope_held *s, uint64_t owner_epoch,
                                         uint64_t *bytes, uint64_t *count)
{
    *bytes = s->epoch != owner_epoch ? s->bytes : s->at_peak_bytes;
    *count = s->epoch != owner_epoch ? s->count : s->at_peak_count;
}

#endif /* MEMFLOW_MODEL_STATE_H */
