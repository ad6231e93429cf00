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
#include "model_state.h"

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
static uint64_t cost_of(const mf_model *m, uint32_t name)
{
    return MF_TRACE_EVENT_BYTES + strlen(mf_model_string(m, name));
}

int mf_timeline_init(mf_model *m)
{
    struct mf_model_state *st = m->state;
    mf_topk_init(&st->spans, sizeof(kept_span), 0, MF_SPAN_BYTES, shorter_span, cost_span,
                 span_length);
    mf_topk_init(&st->activities, sizeof(kept_activity), 0, MF_ACTIVITY_BYTES, shorter_activity,
                 cost_activity, activity_length);
    mf_topk_init(&st->trace_spans, sizeof(kept_object), 0, MF_TRACE_SPAN_BYTES, shorter_object,
                 cost_object, object_length);
    return 0;
}

static uint32_t pid_of(const mf_model *m, const mf_event *e)
{
    return e->log < m->n_processes ? m->processes[e->log].pid : 0;
}

/* ---- scope spans --------------------------------------------------------------- */

static void keep_span(mf_model *m, const mf_span *s)
{
    kept_span k = { *s, cost_of(m, s->scope) };
    if (mf_topk_offer(&m->state->spans, &k, NULL) < 0)
        m->state->oom = 1;
}

static void close_spans(mf_model *m, mf_thread_track *t, uint32_t keep, uint64_t time_ns)
{
    while (t->n_open > keep) {
        mf_span *s = &t->open[--t->n_open];
        s->end_ns = time_ns > s->begin_ns ? time_ns : s->begin_ns;
        keep_span(m, s);
    }
}

void mf_timeline_on_scope(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    if (st->opt.no_trace)
        return;
    mf_thread_track *t = mf_model_thread(m, pid_of(m, e), e->tid);
    if (!t) {
        st->oom = 1;
        return;
    }
    unsigned op = e->extra & 0xff, depth = e->extra >> 8;
    if (op == MF_SCOPE_POP) {
        close_spans(m, t, depth, e->time_ns);
        return;
    }
    if (op != MF_SCOPE_PUSH)
        return;
    close_spans(m, t, depth ? depth - 1 : 0, e->time_ns);   /* pops that were lost */
    if (mf_grow((void **)&t->open, &t->cap_open, t->n_open + 1, sizeof *t->open) < 0) {
        st->oom = 1;
        return;
    }
    t->open[t->n_open++] = (mf_span){
        .begin_ns = e->time_ns, .end_ns = e->time_ns, .seq = st->seq++, .scope = e->scope,
        .tid = e->tid, .pid = t->pid, .depth = depth,
    };
}

/* ---- GPU activities and pools ----------------------------------------------------- */

void mf_timeline_on_activity(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    uint64_t end = e->actual > e->time_ns ? e->actual : e->time_ns;
    st->t1 = end > st->t1 ? end : st->t1;
    if (st->opt.no_trace)
        return;
    kept_activity k = {
        .a = { .start_ns = e->time_ns, .end_ns = end, .bytes = e->size, .name = e->name,
               .stream = e->extra, .correlation = (uint32_t)e->addr, .pid = pid_of(m, e),
               .device = e->device, .kind = e->flags },
        .cost = cost_of(m, e->name),
    };
    if (mf_topk_offer(&st->activities, &k, NULL) < 0)
        st->oom = 1;
}

void mf_timeline_on_pool(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    if (m->n_pools >= MF_POOL_EVENTS) {
        m->pools_dropped++;
        return;
    }
    if (mf_grow((void **)&m->pools, &st->cap_pools, m->n_pools + 1, sizeof *m->pools) < 0) {
        st->oom = 1;
        return;
    }
    m->pools[m->n_pools++] = (mf_pool_event){
        .time_ns = e->time_ns, .addr = e->addr, .size = e->size, .threshold = e->actual,
        .pid = pid_of(m, e), .device = e->device, .op = (uint16_t)e->extra,
    };
}

/* ---- trace objects ------------------------------------------------------------------ */

static void keep_object(mf_model *m, const mf_trace_span *s)
{
    kept_object k = { *s, cost_of(m, s->name) };
    if (mf_topk_offer(&m->state->trace_spans, &k, NULL) < 0)
        m->state->oom = 1;
}

static uint64_t object_key(const mf_event *e, unsigned begin_kind)
{
    uint64_t x = e->addr * 0x9e3779b97f4a7c15ull ^ ((uint64_t)e->log << 48 | (uint64_t)begin_kind << 40);
    return x ? x : 1;
}

static size_t object_home(const struct mf_model_state *st, uint64_t key)
{
    return (size_t)((key * 0xbf58476d1ce4e5b9ull) >> 32) & (st->n_object_slots - 1);
}

static mf_open_object *find_object(struct mf_model_state *st, uint64_t key)
{
    if (!st->n_object_slots)
        return NULL;
    for (size_t i = object_home(st, key);; i = (i + 1) & (st->n_object_slots - 1)) {
        if (!st->objects[i].key)
            return NULL;
        if (st->objects[i].key == key)
            return &st->objects[i];
    }
}

static int objects_resize(struct mf_model_state *st, size_t n_slots)
{
    mf_open_object *old = st->objects;
    size_t n_old = st->n_object_slots;
    st->objects = calloc(n_slots, sizeof *st->objects);
    if (!st->objects) {
        st->objects = old;
        return -1;
    }
    st->n_object_slots = n_slots;
    for (size_t i = 0; i < n_old; i++) {
        if (!old[i].key)
            continue;
        size_t k = object_home(st, old[i].key);
        while (st->objects[k].key)
            k = (k + 1) & (n_slots - 1);
        st->objects[k] = old[i];
    }
    free(old);
    return 0;
}

static void remove_object(struct mf_model_state *st, mf_open_object *o)
{
    size_t mask = st->n_object_slots - 1, hole = (size_t)(o - st->objects);
    for (size_t i = (hole + 1) & mask; st->objects[i].key; i = (i + 1) & mask) {
        size_t home = object_home(st, st->objects[i].key);
        int stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            st->objects[hole] = st->objects[i];
            hole = i;
        }
    }
    st->objects[hole].key = 0;
    st->n_objects--;
}

static void begin_object(mf_model *m, const mf_event *e, unsigned kind)
{
    struct mf_model_state *st = m->state;
    uint64_t key = object_key(e, kind);
    mf_open_object *o = find_object(st, key);
    if (o) {                   /* begun again before it ended: the first ends here */
        o->span.end_ns = e->time_ns;
        keep_object(m, &o->span);
        remove_object(st, o);
    }
    if ((st->n_objects + 1) * 2 > st->n_object_slots &&
        objects_resize(st, st->n_object_slots ? 2 * st->n_object_slots : 64) < 0) {
        st->oom = 1;
        return;
    }
    size_t k = object_home(st, key);
    while (st->objects[k].key)
        k = (k + 1) & (st->n_object_slots - 1);
    st->objects[k] = (mf_open_object){
        .key = key,
        .span = { .begin_ns = e->time_ns, .end_ns = e->time_ns, .id = e->addr,
                  .seq = st->seq++, .domain = e->scope, .name = e->name, .pid = pid_of(m, e),
                  .tid = e->tid, .end_tid = e->tid, .kind = (uint16_t)kind },
    };
    st->n_objects++;
}

static void end_object(mf_model *m, const mf_event *e, unsigned begin_kind)
{
    struct mf_model_state *st = m->state;
    mf_open_object *o = find_object(st, object_key(e, begin_kind));
    if (!o)
        return;                /* its begin was not recorded */
    o->span.end_ns = e->time_ns > o->span.begin_ns ? e->time_ns : o->span.begin_ns;
    o->span.end_tid = e->tid;
    keep_object(m, &o->span);
    remove_object(st, o);
}

static void thread_event(mf_model *m, const mf_event *e, int begin)
{
    struct mf_model_state *st = m->state;
    mf_thread_track *t = mf_model_thread(m, pid_of(m, e), e->tid);
    if (!t) {
        st->oom = 1;
        return;
    }
    if (!begin) {
        if (t->n_events) {
            mf_trace_span *s = &t->events[--t->n_events];
            s->end_ns = e->time_ns > s->begin_ns ? e->time_ns : s->begin_ns;
            keep_object(m, s);
        }
        return;
    }
    if (mf_grow((void **)&t->events, &t->cap_events, t->n_events + 1, sizeof *t->events) < 0) {
        st->oom = 1;
        return;
    }
    t->events[t->n_events++] = (mf_trace_span){
        .begin_ns = e->time_ns, .end_ns = e->time_ns, .id = e->addr, .seq = st->seq++,
        .domain = e->scope, .name = e->name, .pid = t->pid, .tid = e->tid, .end_tid = e->tid,
        .kind = MF_TRACE_EVENT_BEGIN,
    };
}

static void counter(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    uint32_t pid = pid_of(m, e);
    mf_counter_state *c = NULL;
    for (size_t i = st->n_counters; i-- > 0 && !c;)
        if (st->counters[i].name == e->name && st->counters[i].domain == e->scope &&
            st->counters[i].pid == pid)
            c = &st->counters[i];
    if (!c) {
        if (st->n_counters >= MF_COUNTERS) {
            m->counters_dropped++;
            return;
        }
        if (mf_grow((void **)&st->counters, &st->cap_counters, st->n_counters + 1,
                    sizeof *st->counters) < 0) {
            st->oom = 1;
            return;
        }
        c = &st->counters[st->n_counters++];
        c->pid = pid;
        c->domain = e->scope;
        c->name = e->name;
        mf_series_init(&c->points, MF_COUNTER_POINTS);
    }
    if (mf_series_add(&c->points, e->time_ns, e->addr, 0) < 0)
        st->oom = 1;
}

static void marker(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    if (m->n_markers >= MF_MARKERS) {
        m->markers_dropped++;
        return;
    }
    if (mf_grow((void **)&m->markers, &st->cap_markers, m->n_markers + 1, sizeof *m->markers) < 0) {
        st->oom = 1;
        return;
    }
    m->markers[m->n_markers++] = (mf_trace_marker){ e->time_ns, e->scope, e->name,
                                                    pid_of(m, e), e->tid, e->extra };
}

void mf_timeline_on_object(mf_model *m, const mf_event *e)
{
    if (m->state->opt.no_trace)
        return;
    switch (e->flags) {
    case MF_TRACE_TASK_BEGIN:
    case MF_TRACE_FRAME_BEGIN:
    case MF_TRACE_RANGE_BEGIN:
        begin_object(m, e, e->flags);
        break;
    case MF_TRACE_TASK_END:
    case MF_TRACE_FRAME_END:
    case MF_TRACE_RANGE_END:
        end_object(m, e, e->flags - 1u);
        break;
    case MF_TRACE_EVENT_BEGIN:
        thread_event(m, e, 1);
        break;
    case MF_TRACE_EVENT_END:
        thread_event(m, e, 0);
        break;
    case MF_TRACE_COUNTER:
        counter(m, e);
        break;
    case MF_TRACE_MARKER:
        marker(m, e);
        break;
    }
}

/* ---- settling ------------------------------------------------------------------------ */

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

static int settle_spans(mf_model *m)
{
    struct mf_model_state *st = m->state;
    mf_topk all;
    if (select_with(&st->spans, &all) < 0)
        goto oom;
    for (size_t i = 0; i < st->n_threads; i++)
        for (size_t j = 0; j < st->threads[i].n_open; j++) {
            kept_span k = { st->threads[i].open[j], 0 };
            k.s.end_ns = m->t1_ns > k.s.begin_ns ? m->t1_ns : k.s.begin_ns;
            k.cost = cost_of(m, k.s.scope);
            if (mf_topk_offer(&all, &k, NULL) < 0)
                goto oom;
        }
    kept_span *sorted = malloc((all.n ? all.n : 1) * sizeof *sorted);
    free(m->spans);
    m->spans = malloc((all.n ? all.n : 1) * sizeof *m->spans);
    if (!sorted || !m->spans || mf_topk_sorted(&all, sorted) < 0) {
        free(sorted);
        goto oom;
    }
    for (size_t i = 0; i < all.n; i++)
        m->spans[i] = sorted[i].s;
    free(sorted);
    m->n_spans = all.n;
    m->spans_dropped = all.dropped;
    qsort(m->spans, m->n_spans, sizeof *m->spans, by_seq_span);
    mf_topk_free(&all);
    return 0;
oom:
    mf_topk_free(&all);
    return -1;
}

static int settle_activities(mf_model *m)
{
    struct mf_model_state *st = m->state;
    kept_activity *sorted = malloc((st->activities.n ? st->activities.n : 1) * sizeof *sorted);
    free(m->activities);
    m->activities = malloc((st->activities.n ? st->activities.n : 1) * sizeof *m->activities);
    if (!sorted || !m->activities || mf_topk_sorted(&st->activities, sorted) < 0) {
        free(sorted);
        return -1;
    }
    for (size_t i = 0; i < st->activities.n; i++)
        m->activities[i] = sorted[i].a;
    free(sorted);
    m->n_activities = st->activities.n;
    m->activities_dropped = st->activities.dropped;
    qsort(m->activities, m->n_activities, sizeof *m->activities, by_start);
    return 0;
}

static int offer_open_object(mf_model *m, mf_topk *all, mf_trace_span s)
{
    s.end_ns = m->t1_ns > s.begin_ns ? m->t1_ns : s.begin_ns;
    s.open = 1;
    kept_object k = { s, cost_of(m, s.name) };
    return mf_topk_offer(all, &k, NULL) < 0 ? -1 : 0;
}

static int settle_objects(mf_model *m)
{
    struct mf_model_state *st = m->state;
    mf_topk all;
    if (select_with(&st->trace_spans, &all) < 0)
        goto oom;
    for (size_t i = 0; i < st->n_object_slots; i++)
        if (st->objects[i].key && offer_open_object(m, &all, st->objects[i].span) < 0)
            goto oom;
    for (size_t i = 0; i < st->n_threads; i++)
        for (size_t j = 0; j < st->threads[i].n_events; j++)
            if (offer_open_object(m, &all, st->threads[i].events[j]) < 0)
                goto oom;
    kept_object *sorted = malloc((all.n ? all.n : 1) * sizeof *sorted);
    free(m->trace_spans);
    m->trace_spans = malloc((all.n ? all.n : 1) * sizeof *m->trace_spans);
    if (!sorted || !m->trace_spans || mf_topk_sorted(&all, sorted) < 0) {
        free(sorted);
        goto oom;
    }
    for (size_t i = 0; i < all.n; i++)
        m->trace_spans[i] = sorted[i].s;
    free(sorted);
    m->n_trace_spans = all.n;
    m->trace_spans_dropped = all.dropped;
    qsort(m->trace_spans, m->n_trace_spans, sizeof *m->trace_spans, by_seq_object);
    mf_topk_free(&all);
    return 0;
oom:
    mf_topk_free(&all);
    return -1;
}

static int settle_counters(mf_model *m)
{
    struct mf_model_state *st = m->state;
    free(m->counters);
    m->counters = malloc((st->n_counters ? st->n_counters : 1) * sizeof *m->counters);
    if (!m->counters)
        return -1;
    for (size_t i = 0; i < st->n_counters; i++) {
        mf_counter_state *c = &st->counters[i];
        size_t n;
        const mf_point *points = mf_series_points(&c->points, &n);
        m->counters[i] = (mf_trace_counter){ c->pid, c->domain, c->name, points, n,
                                             c->points.added };
    }
    m->n_counters = st->n_counters;
    return 0;
}

int mf_timeline_settle(mf_model *m)
{
    if (settle_spans(m) < 0 || settle_activities(m) < 0 || settle_objects(m) < 0 ||
        settle_counters(m) < 0)
        return -1;
    return 0;
}

void mf_timeline_free(mf_model *m)
{
    struct mf_model_state *st = m->state;
    mf_topk_free(&st->spans);
    mf_topk_free(&st->activities);
    mf_topk_free(&st->trace_spans);
    free(st->objects);
    for (size_t i = 0; i < st->n_counters; i++)
        mf_series_free(&st->counters[i].points);
    free(st->counters);
    free(m->spans);
    free(m->activities);
    free(m->pools);
    free(m->trace_spans);
    free(m->markers);
    free(m->counters);
}
