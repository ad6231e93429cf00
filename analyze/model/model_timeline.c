/*
 * model_timeline.c - the model's timeline: what happened when, besides the
 * blocks, as the Chrome trace shows it, in bounded memory: scope spans per
 * thread, GPU activities, pool events, and the trace objects of TRACE
 * records (MXNet's Task, Frame, Event, Counter and Marker; NVTX ranges).
 * Spans and activities are kept within byte budgets, the longest first (a
 * span's cost is what its trace event takes); pool events and markers the
 * first ones; counters as bounded series.  Spans still open at a settle end
 * at the model's end.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model_timeline.h"

/* Budgets: what the timeline keeps at most, whatever the log. */
#define SPAN_BYTES (8u << 20)         /* trace bytes of scope spans */
#define ACTIVITY_BYTES (8u << 20)     /* of GPU activities */
#define OBJECT_BYTES (8u << 20)       /* of trace objects' spans */
#define EVENT_BYTES 120u              /* an X event without its name */
#define POOL_EVENTS 10000u
#define MARKERS 10000u
#define COUNTERS 1024u                /* trace counter series */
#define COUNTER_POINTS 4096u          /* points per counter series */

/* A thread's track: its name, and its open scope spans and trace events. */
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

typedef struct mf_counter_state {
    uint32_t pid, domain, name;
    mf_series points;
} mf_counter_state;

/* An item of a budgeted selection: the thing and what it costs in the trace. */
typedef struct kept_span {
    mf_span s;
    uint64_t cost;
} kept_span;

typedef struct kept_activity {
    mf_activity a;
    uint64_t cost;
} kept_activity;

typedef struct kept_object {
    mf_trace_span s;
    uint64_t cost;
} kept_object;

static uint64_t cost_span(const void *p) { return ((const kept_span *)p)->cost; }
static uint64_t cost_activity(const void *p) { return ((const kept_activity *)p)->cost; }
static uint64_t cost_object(const void *p) { return ((const kept_object *)p)->cost; }

/* Shorter ranks lower; equal lengths: the later one. */
static int shorter(uint64_t la, uint64_t sa, uint64_t lb, uint64_t sb)
{
    return la != lb ? la < lb : sa > sb;
}

static uint64_t span_length(const void *p)
{
    const mf_span *s = &((const kept_span *)p)->s;
    return s->end_ns - s->begin_ns;
}

static uint64_t activity_length(const void *p)
{
    const mf_activity *a = &((const kept_activity *)p)->a;
    return a->end_ns - a->start_ns;
}

static uint64_t object_length(const void *p)
{
    const mf_trace_span *s = &((const kept_object *)p)->s;
    return s->end_ns - s->begin_ns;
}

static int shorter_span(const void *pa, const void *pb)
{
    const mf_span *a = &((const kept_span *)pa)->s, *b = &((const kept_span *)pb)->s;
    return shorter(a->end_ns - a->begin_ns, a->seq, b->end_ns - b->begin_ns, b->seq);
}

static int shorter_activity(const void *pa, const void *pb)
{
    const mf_activity *a = &((const kept_activity *)pa)->a,
                      *b = &((const kept_activity *)pb)->a;
    return shorter(a->end_ns - a->start_ns, a->start_ns, b->end_ns - b->start_ns, b->start_ns);
}

static int shorter_object(const void *pa, const void *pb)
{
    const mf_trace_span *a = &((const kept_object *)pa)->s,
                        *b = &((const kept_object *)pb)->s;
    return shorter(a->end_ns - a->begin_ns, a->seq, b->end_ns - b->begin_ns, b->seq);
}

/* What an X/b/e event with this name takes in the trace. */
static uint64_t cost_of(const mf_timeline *t, uint32_t name)
{
    return EVENT_BYTES + strlen(mf_strings_get(t->strings, name));
}

void mf_timeline_init(mf_timeline *t, const mf_strings *strings, int no_trace)
{
    memset(t, 0, sizeof *t);
    t->strings = strings;
    t->no_trace = no_trace;
    mf_topk_init(&t->spans, sizeof(kept_span), 0, SPAN_BYTES, shorter_span, cost_span,
                 span_length);
    mf_topk_init(&t->activities, sizeof(kept_activity), 0, ACTIVITY_BYTES, shorter_activity,
                 cost_activity, activity_length);
    mf_topk_init(&t->objects, sizeof(kept_object), 0, OBJECT_BYTES, shorter_object,
                 cost_object, object_length);
}

/* ---- threads ---------------------------------------------------------------------- */

static uint32_t thread_hash(uint32_t pid, uint32_t tid)
{
    uint64_t x = ((uint64_t)pid << 32 | tid) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(x >> 32);
}

static int thread_rehash(mf_timeline *t, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < t->n_threads; i++) {
        size_t k = thread_hash(t->threads[i].pid, t->threads[i].tid) & (n_slots - 1);
        while (slots[k])
            k = (k + 1) & (n_slots - 1);
        slots[k] = (uint32_t)i + 1;
    }
    free(t->thread_slots);
    t->thread_slots = slots;
    t->n_thread_slots = n_slots;
    return 0;
}

/* The track of thread (pid, tid), created if new; NULL (and oom) when out
 * of memory. */
static mf_thread_track *track(mf_timeline *t, uint32_t pid, uint32_t tid)
{
    if ((t->n_threads + 1) * 2 > t->n_thread_slots &&
        thread_rehash(t, t->n_thread_slots ? 2 * t->n_thread_slots : 256) < 0)
        goto oom;
    size_t k = thread_hash(pid, tid) & (t->n_thread_slots - 1);
    for (; t->thread_slots[k]; k = (k + 1) & (t->n_thread_slots - 1)) {
        mf_thread_track *th = &t->threads[t->thread_slots[k] - 1];
        if (th->pid == pid && th->tid == tid)
            return th;
    }
    if (mf_grow((void **)&t->threads, &t->cap_threads, t->n_threads + 1, sizeof *t->threads) < 0)
        goto oom;
    mf_thread_track *th = &t->threads[t->n_threads++];
    memset(th, 0, sizeof *th);
    th->pid = pid;
    th->tid = tid;
    t->thread_slots[k] = (uint32_t)t->n_threads;
    return th;
oom:
    t->oom = 1;
    return NULL;
}

int mf_timeline_thread(mf_timeline *t, uint32_t pid, uint32_t tid)
{
    return track(t, pid, tid) ? 0 : -1;
}

int mf_timeline_name_thread(mf_timeline *t, uint32_t pid, uint32_t tid, uint32_t name)
{
    mf_thread_track *th = track(t, pid, tid);
    if (!th)
        return -1;
    th->name = name;
    return 0;
}

/* ---- scope spans --------------------------------------------------------------- */

static void keep_span(mf_timeline *t, const mf_span *s)
{
    kept_span k = { *s, cost_of(t, s->scope) };
    if (mf_topk_offer(&t->spans, &k, NULL) < 0)
        t->oom = 1;
}

static void close_spans(mf_timeline *t, mf_thread_track *th, uint32_t keep, uint64_t time_ns)
{
    while (th->n_open > keep) {
        mf_span *s = &th->open[--th->n_open];
        s->end_ns = time_ns > s->begin_ns ? time_ns : s->begin_ns;
        keep_span(t, s);
    }
}

int mf_timeline_on_scope(mf_timeline *t, const mf_event *e, uint32_t pid)
{
    if (t->no_trace)
        return 0;
    mf_thread_track *th = track(t, pid, e->tid);
    if (!th)
        return -1;
    unsigned op = e->scope.op, depth = e->scope.depth;
    if (op == MF_SCOPE_POP) {
        close_spans(t, th, depth, e->time_ns);
        return t->oom ? -1 : 0;
    }
    if (op != MF_SCOPE_PUSH)
        return 0;
    close_spans(t, th, depth ? depth - 1 : 0, e->time_ns);   /* pops that were lost */
    if (mf_grow((void **)&th->open, &th->cap_open, th->n_open + 1, sizeof *th->open) < 0)
        return -1;
    th->open[th->n_open++] = (mf_span){
        .begin_ns = e->time_ns, .end_ns = e->time_ns, .seq = t->seq++, .scope = e->scope.scope,
        .tid = e->tid, .pid = th->pid, .depth = depth,
    };
    return t->oom ? -1 : 0;
}

/* ---- GPU activities and pools ----------------------------------------------------- */

int mf_timeline_on_activity(mf_timeline *t, const mf_event *e, uint32_t pid)
{
    if (t->no_trace)
        return 0;
    const mf_ev_activity *a = &e->activity;
    uint64_t end = a->end_ns > e->time_ns ? a->end_ns : e->time_ns;
    kept_activity k = {
        .a = { .start_ns = e->time_ns, .end_ns = end, .bytes = a->bytes, .name = a->name,
               .stream = a->stream, .correlation = a->correlation, .pid = pid,
               .device = e->device, .kind = a->kind },
        .cost = cost_of(t, a->name),
    };
    return mf_topk_offer(&t->activities, &k, NULL) < 0 ? -1 : 0;
}

int mf_timeline_on_pool(mf_timeline *t, const mf_event *e, uint32_t pid, uint16_t device)
{
    if (t->n_pools >= POOL_EVENTS) {
        t->pools_dropped++;
        return 0;
    }
    if (mf_grow((void **)&t->pools, &t->cap_pools, t->n_pools + 1, sizeof *t->pools) < 0)
        return -1;
    t->pools[t->n_pools++] = (mf_pool_event){
        .time_ns = e->time_ns, .addr = e->pool.addr, .size = e->pool.size,
        .threshold = e->pool.threshold, .pid = pid, .device = device, .op = (uint16_t)e->pool.op,
    };
    return 0;
}

/* ---- trace objects ------------------------------------------------------------------ */

static void keep_object(mf_timeline *t, const mf_trace_span *s)
{
    kept_object k = { *s, cost_of(t, s->name) };
    if (mf_topk_offer(&t->objects, &k, NULL) < 0)
        t->oom = 1;
}

static uint64_t object_key(const mf_event *e, unsigned begin_kind)
{
    uint64_t x = e->trace.value * 0x9e3779b97f4a7c15ull ^
                 ((uint64_t)e->log << 48 | (uint64_t)begin_kind << 40);
    return x ? x : 1;
}

static size_t object_home(const mf_timeline *t, uint64_t key)
{
    return (size_t)((key * 0xbf58476d1ce4e5b9ull) >> 32) & (t->n_open_slots - 1);
}

static mf_open_object *find_object(mf_timeline *t, uint64_t key)
{
    if (!t->n_open_slots)
        return NULL;
    for (size_t i = object_home(t, key);; i = (i + 1) & (t->n_open_slots - 1)) {
        if (!t->open[i].key)
            return NULL;
        if (t->open[i].key == key)
            return &t->open[i];
    }
}

static int objects_resize(mf_timeline *t, size_t n_slots)
{
    mf_open_object *old = t->open;
    size_t n_old = t->n_open_slots;
    t->open = calloc(n_slots, sizeof *t->open);
    if (!t->open) {
        t->open = old;
        return -1;
    }
    t->n_open_slots = n_slots;
    for (size_t i = 0; i < n_old; i++) {
        if (!old[i].key)
            continue;
        size_t k = object_home(t, old[i].key);
        while (t->open[k].key)
            k = (k + 1) & (n_slots - 1);
        t->open[k] = old[i];
    }
    free(old);
    return 0;
}

static void remove_object(mf_timeline *t, mf_open_object *o)
{
    size_t mask = t->n_open_slots - 1, hole = (size_t)(o - t->open);
    for (size_t i = (hole + 1) & mask; t->open[i].key; i = (i + 1) & mask) {
        size_t home = object_home(t, t->open[i].key);
        int stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            t->open[hole] = t->open[i];
            hole = i;
        }
    }
    t->open[hole].key = 0;
    t->n_open--;
}

static void begin_object(mf_timeline *t, const mf_event *e, unsigned kind, uint32_t pid)
{
    uint64_t key = object_key(e, kind);
    mf_open_object *o = find_object(t, key);
    if (o) {                   /* begun again before it ended: the first ends here */
        o->span.end_ns = e->time_ns;
        keep_object(t, &o->span);
        remove_object(t, o);
    }
    if ((t->n_open + 1) * 2 > t->n_open_slots &&
        objects_resize(t, t->n_open_slots ? 2 * t->n_open_slots : 64) < 0) {
        t->oom = 1;
        return;
    }
    size_t k = object_home(t, key);
    while (t->open[k].key)
        k = (k + 1) & (t->n_open_slots - 1);
    t->open[k] = (mf_open_object){
        .key = key,
        .span = { .begin_ns = e->time_ns, .end_ns = e->time_ns, .id = e->trace.value,
                  .seq = t->seq++, .domain = e->trace.domain, .name = e->trace.name, .pid = pid,
                  .tid = e->tid, .end_tid = e->tid, .kind = (uint16_t)kind },
    };
    t->n_open++;
}

static void end_object(mf_timeline *t, const mf_event *e, unsigned begin_kind)
{
    mf_open_object *o = find_object(t, object_key(e, begin_kind));
    if (!o)
        return;                /* its begin was not recorded */
    o->span.end_ns = e->time_ns > o->span.begin_ns ? e->time_ns : o->span.begin_ns;
    o->span.end_tid = e->tid;
    keep_object(t, &o->span);
    remove_object(t, o);
}

static void thread_event(mf_timeline *t, const mf_event *e, int begin, uint32_t pid)
{
    mf_thread_track *th = track(t, pid, e->tid);
    if (!th)
        return;
    if (!begin) {
        if (th->n_events) {
            mf_trace_span *s = &th->events[--th->n_events];
            s->end_ns = e->time_ns > s->begin_ns ? e->time_ns : s->begin_ns;
            keep_object(t, s);
        }
        return;
    }
    if (mf_grow((void **)&th->events, &th->cap_events, th->n_events + 1, sizeof *th->events) < 0) {
        t->oom = 1;
        return;
    }
    th->events[th->n_events++] = (mf_trace_span){
        .begin_ns = e->time_ns, .end_ns = e->time_ns, .id = e->trace.value, .seq = t->seq++,
        .domain = e->trace.domain, .name = e->trace.name, .pid = th->pid, .tid = e->tid,
        .end_tid = e->tid,
        .kind = MF_TRACE_EVENT_BEGIN,
    };
}

static void counter(mf_timeline *t, const mf_event *e, uint32_t pid)
{
    mf_counter_state *c = NULL;
    for (size_t i = t->n_counters; i-- > 0 && !c;)
        if (t->counters[i].name == e->trace.name && t->counters[i].domain == e->trace.domain &&
            t->counters[i].pid == pid)
            c = &t->counters[i];
    if (!c) {
        if (t->n_counters >= COUNTERS) {
            t->counters_dropped++;
            return;
        }
        if (mf_grow((void **)&t->counters, &t->cap_counters, t->n_counters + 1,
                    sizeof *t->counters) < 0) {
            t->oom = 1;
            return;
        }
        c = &t->counters[t->n_counters++];
        c->pid = pid;
        c->domain = e->trace.domain;
        c->name = e->trace.name;
        mf_series_init(&c->points, COUNTER_POINTS);
    }
    if (mf_series_add(&c->points, e->time_ns, e->trace.value, 0) < 0)
        t->oom = 1;
}

static void marker(mf_timeline *t, const mf_event *e, uint32_t pid)
{
    if (t->n_markers >= MARKERS) {
        t->markers_dropped++;
        return;
    }
    if (mf_grow((void **)&t->markers, &t->cap_markers, t->n_markers + 1, sizeof *t->markers) < 0) {
        t->oom = 1;
        return;
    }
    t->markers[t->n_markers++] = (mf_trace_marker){ e->time_ns, e->trace.domain, e->trace.name,
                                                    pid, e->tid, e->trace.arg };
}

int mf_timeline_on_object(mf_timeline *t, const mf_event *e, uint32_t pid)
{
    if (t->no_trace)
        return 0;
    switch (e->trace.kind) {
    case MF_TRACE_TASK_BEGIN:
    case MF_TRACE_FRAME_BEGIN:
    case MF_TRACE_RANGE_BEGIN:
        begin_object(t, e, e->trace.kind, pid);
        break;
    case MF_TRACE_TASK_END:
    case MF_TRACE_FRAME_END:
    case MF_TRACE_RANGE_END:
        end_object(t, e, e->trace.kind - 1u);
        break;
    case MF_TRACE_EVENT_BEGIN:
        thread_event(t, e, 1, pid);
        break;
    case MF_TRACE_EVENT_END:
        thread_event(t, e, 0, pid);
        break;
    case MF_TRACE_COUNTER:
        counter(t, e, pid);
        break;
    case MF_TRACE_MARKER:
    case MF_TRACE_STEP:  /* an optimizer's step: an instant named by the optimizer */
        marker(t, e, pid);
        break;
    }
    return t->oom ? -1 : 0;
}

/* ---- settling ------------------------------------------------------------------------ */

int mf_timeline_thread_order(const void *a, const void *b)
{
    const mf_thread_info *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int settle_threads(mf_timeline *t, mf_model *out)
{
    free(t->threads_out);
    out->threads = t->threads_out = malloc((t->n_threads ? t->n_threads : 1) *
                                           sizeof *t->threads_out);
    out->n_threads = 0;
    if (!t->threads_out)
        return -1;
    for (size_t i = 0; i < t->n_threads; i++)
        t->threads_out[i] = (mf_thread_info){ t->threads[i].tid, t->threads[i].pid,
                                              t->threads[i].name };
    out->n_threads = t->n_threads;
    qsort(t->threads_out, t->n_threads, sizeof *t->threads_out, mf_timeline_thread_order);
    return 0;
}

static int by_seq_span(const void *pa, const void *pb)
{
    uint64_t a = ((const mf_span *)pa)->seq, b = ((const mf_span *)pb)->seq;
    return a < b ? -1 : a > b;
}

static int by_seq_object(const void *pa, const void *pb)
{
    uint64_t a = ((const mf_trace_span *)pa)->seq, b = ((const mf_trace_span *)pb)->seq;
    return a < b ? -1 : a > b;
}

static int by_start(const void *pa, const void *pb)
{
    const mf_activity *a = pa, *b = pb;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    return a->correlation < b->correlation ? -1 : a->correlation > b->correlation;
}

/* A copy of a kept selection with extra items offered (budget as kept). */
static int select_with(const mf_topk *kept, mf_topk *all)
{
    mf_topk_init_like(all, kept);
    all->dropped = kept->dropped;
    for (size_t i = 0; i < kept->n; i++)
        if (mf_topk_offer(all, mf_topk_item(kept, i), NULL) < 0)
            return -1;
    return 0;
}

static int settle_spans(mf_timeline *t, uint64_t t1, mf_model *out)
{
    mf_topk all;
    if (select_with(&t->spans, &all) < 0)
        goto oom;
    for (size_t i = 0; i < t->n_threads; i++)
        for (size_t j = 0; j < t->threads[i].n_open; j++) {
            kept_span k = { t->threads[i].open[j], 0 };
            k.s.end_ns = t1 > k.s.begin_ns ? t1 : k.s.begin_ns;
            k.cost = cost_of(t, k.s.scope);
            if (mf_topk_offer(&all, &k, NULL) < 0)
                goto oom;
        }
    kept_span *sorted = malloc((all.n ? all.n : 1) * sizeof *sorted);
    free(t->spans_out);
    out->spans = t->spans_out = malloc((all.n ? all.n : 1) * sizeof *t->spans_out);
    if (!sorted || !t->spans_out || mf_topk_sorted(&all, sorted) < 0) {
        free(sorted);
        goto oom;
    }
    for (size_t i = 0; i < all.n; i++)
        t->spans_out[i] = sorted[i].s;
    free(sorted);
    out->n_spans = all.n;
    out->spans_dropped = all.dropped;
    qsort(t->spans_out, all.n, sizeof *t->spans_out, by_seq_span);
    mf_topk_free(&all);
    return 0;
oom:
    mf_topk_free(&all);
    return -1;
}

static int settle_activities(mf_timeline *t, mf_model *out)
{
    size_t n = t->activities.n;
    kept_activity *sorted = malloc((n ? n : 1) * sizeof *sorted);
    free(t->activities_out);
    out->activities = t->activities_out = malloc((n ? n : 1) * sizeof *t->activities_out);
    if (!sorted || !t->activities_out || mf_topk_sorted(&t->activities, sorted) < 0) {
        free(sorted);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        t->activities_out[i] = sorted[i].a;
    free(sorted);
    out->n_activities = n;
    out->activities_dropped = t->activities.dropped;
    qsort(t->activities_out, n, sizeof *t->activities_out, by_start);
    return 0;
}

static int offer_open_object(const mf_timeline *t, mf_topk *all, mf_trace_span s, uint64_t t1)
{
    s.end_ns = t1 > s.begin_ns ? t1 : s.begin_ns;
    s.open = 1;
    kept_object k = { s, cost_of(t, s.name) };
    return mf_topk_offer(all, &k, NULL) < 0 ? -1 : 0;
}

static int settle_objects(mf_timeline *t, uint64_t t1, mf_model *out)
{
    mf_topk all;
    if (select_with(&t->objects, &all) < 0)
        goto oom;
    for (size_t i = 0; i < t->n_open_slots; i++)
        if (t->open[i].key && offer_open_object(t, &all, t->open[i].span, t1) < 0)
            goto oom;
    for (size_t i = 0; i < t->n_threads; i++)
        for (size_t j = 0; j < t->threads[i].n_events; j++)
            if (offer_open_object(t, &all, t->threads[i].events[j], t1) < 0)
                goto oom;
    kept_object *sorted = malloc((all.n ? all.n : 1) * sizeof *sorted);
    free(t->objects_out);
    out->trace_spans = t->objects_out = malloc((all.n ? all.n : 1) * sizeof *t->objects_out);
    if (!sorted || !t->objects_out || mf_topk_sorted(&all, sorted) < 0) {
        free(sorted);
        goto oom;
    }
    for (size_t i = 0; i < all.n; i++)
        t->objects_out[i] = sorted[i].s;
    free(sorted);
    out->n_trace_spans = all.n;
    out->trace_spans_dropped = all.dropped;
    qsort(t->objects_out, all.n, sizeof *t->objects_out, by_seq_object);
    mf_topk_free(&all);
    return 0;
oom:
    mf_topk_free(&all);
    return -1;
}

static int settle_counters(mf_timeline *t, mf_model *out)
{
    free(t->counters_out);
    out->counters = t->counters_out = malloc((t->n_counters ? t->n_counters : 1) *
                                             sizeof *t->counters_out);
    out->n_counters = 0;
    if (!t->counters_out)
        return -1;
    for (size_t i = 0; i < t->n_counters; i++) {
        mf_counter_state *c = &t->counters[i];
        size_t n;
        const mf_point *points = mf_series_points(&c->points, &n);
        t->counters_out[i] = (mf_trace_counter){ c->pid, c->domain, c->name, points, n,
                                                 c->points.added };
    }
    out->n_counters = t->n_counters;
    out->counters_dropped = t->counters_dropped;
    return 0;
}

int mf_timeline_settle(mf_timeline *t, uint64_t t1, mf_model *out)
{
    out->pools = t->pools;
    out->n_pools = t->n_pools;
    out->pools_dropped = t->pools_dropped;
    out->markers = t->markers;
    out->n_markers = t->n_markers;
    out->markers_dropped = t->markers_dropped;
    if (settle_threads(t, out) < 0 || settle_spans(t, t1, out) < 0 ||
        settle_activities(t, out) < 0 || settle_objects(t, t1, out) < 0 ||
        settle_counters(t, out) < 0)
        return -1;
    return 0;
}

void mf_timeline_free(mf_timeline *t)
{
    for (size_t i = 0; i < t->n_threads; i++) {
        free(t->threads[i].open);
        free(t->threads[i].events);
    }
    free(t->threads);
    free(t->thread_slots);
    mf_topk_free(&t->spans);
    mf_topk_free(&t->activities);
    mf_topk_free(&t->objects);
    free(t->open);
    free(t->pools);
    free(t->markers);
    for (size_t i = 0; i < t->n_counters; i++)
        mf_series_free(&t->counters[i].points);
    free(t->counters);
    free(t->threads_out);
    free(t->spans_out);
    free(t->activities_out);
    free(t->objects_out);
    free(t->counters_out);
    memset(t, 0, sizeof *t);
}
