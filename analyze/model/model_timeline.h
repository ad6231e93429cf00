/*
 * model_timeline.h - the model's timeline: what happened when, besides the
 * blocks, as the Chrome trace shows it: each thread's track (its name, its
 * scope spans), GPU activities, pool events, and the trace objects of
 * TRACE records (MXNet's Task, Frame, Event, Counter and Marker; NVTX
 * ranges), in bounded memory.
 *
 * model.c routes SCOPE, ACTIVITY, POOL and TRACE records here with the pid
 * of their process, and tells it every thread it meets and every thread's
 * name; the timeline knows nothing of blocks.
 */
#ifndef MEMFLOW_MODEL_TIMELINE_H
#define MEMFLOW_MODEL_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "series.h"
#include "string_pool.h"
#include "topk.h"

struct mf_thread_track;
struct mf_open_object;
struct mf_counter_state;

typedef struct mf_timeline {
    int no_trace;             /* keep no spans, activities or trace objects */
    const mf_strings *strings;   /* the names' texts (a span's cost is its event's size) */
    struct mf_thread_track *threads; /* hashed by (pid, tid) */
    uint32_t *thread_slots;   /* index + 1 */
    size_t n_threads, cap_threads, n_thread_slots;
    mf_topk spans;            /* scope spans, longest kept */
    mf_topk activities;       /* GPU activities, longest kept */
    mf_topk objects;          /* trace objects' spans, longest kept */
    struct mf_open_object *open;     /* trace objects begun, not ended; hashed by key */
    size_t n_open, n_open_slots;
    mf_pool_event *pools;     /* the first ones */
    size_t n_pools, cap_pools;
    uint64_t pools_dropped;
    mf_trace_marker *markers; /* the first ones */
    size_t n_markers, cap_markers;
    uint64_t markers_dropped;
    struct mf_counter_state *counters;
    size_t n_counters, cap_counters;
    uint64_t counters_dropped;
    uint64_t seq;             /* order of spans */
    int oom;
    /* what the last settle made (mf_model's) */
    mf_thread_info *threads_out;
    mf_span *spans_out;
    mf_activity *activities_out;
    mf_trace_span *objects_out;
    mf_trace_counter *counters_out;
} mf_timeline;

/* An empty timeline; strings: the model's pool; no_trace: keep only the
 * threads' names. */
void mf_timeline_init(mf_timeline *t, const mf_strings *strings, int no_trace);

/* Thread (pid, tid) was seen (the trace names its track).  0, or -1 when
 * out of memory. */
int mf_timeline_thread(mf_timeline *t, uint32_t pid, uint32_t tid);

/* Thread (pid, tid) is called name (string id).  0, or -1. */
int mf_timeline_name_thread(mf_timeline *t, uint32_t pid, uint32_t tid, uint32_t name);

/* A SCOPE, ACTIVITY or TRACE record of process pid.  0, or -1 when out of
 * memory. */
int mf_timeline_on_scope(mf_timeline *t, const mf_event *e, uint32_t pid);
int mf_timeline_on_activity(mf_timeline *t, const mf_event *e, uint32_t pid);
int mf_timeline_on_object(mf_timeline *t, const mf_event *e, uint32_t pid);

/* A POOL record of process pid, shown on device.  0, or -1. */
int mf_timeline_on_pool(mf_timeline *t, const mf_event *e, uint32_t pid, uint16_t device);

/* The order of mf_model.threads: by pid, then tid. */
int mf_timeline_thread_order(const void *a, const void *b);

/*
 * out's threads, spans, activities, pools, trace spans, markers and
 * counters; what is still open ends at t1 (the model's end).  0, or -1
 * when out of memory.
 */
int mf_timeline_settle(mf_timeline *t, uint64_t t1, mf_model *out);

void mf_timeline_free(mf_timeline *t);

#endif /* MEMFLOW_MODEL_TIMELINE_H */
