/*
 * trace.c - write a model as a Chrome trace (JSON object format).
 *
 * Layout of the trace:
 *  - one trace process per profiled process (pid = its pid), named by its
 *    program, with one thread track per thread holding its scope spans as
 *    "X" events (cat "scope");
 *  - one trace process per device (pid = MF_TRACE_DEVICE_PID_BASE + device,
 *    named "cpu/0", "gpu/0", ...) holding MXNet's counter "Memory: <dev>"
 *    (cat "Device Storage", bytes live after every alloc/free), the
 *    sample_rate snapshots as "Allocator: cpu/0" / "Driver: gpu/N"
 *    counters, for GPUs one thread track per stream with the kernels,
 *    copies and sets as "X" events, and memory pool changes as instant
 *    ("i") events.
 * ts and dur are microseconds since the model's t0, printed exactly from
 * nanoseconds (no floating point, so never NaN).  Size is bounded: see
 * trace.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memflow.h"
#include "escape.h"
#include "outfile.h"
#include "trace.h"

#define SNAPSHOT_POINTS 30000u           /* snapshot counter points, all devices */
#define SPAN_BYTES (8u << 20)            /* share of the file for scope spans */
#define ACTIVITY_BYTES (8u << 20)        /* share for GPU activities */
#define MAX_NAMED_THREADS 20000u         /* thread_name metadata written */
#define MAX_POOL_EVENTS 10000u           /* pool created/trimmed/destroyed events */
#define EVENT_OVERHEAD 120u              /* bytes of an X event without its name */
#define MAX_PROGRAM_CHARS 200            /* process names are cut here */

typedef struct trace_writer {
    const mf_model *m;
    mf_sink *out;
    int first;              /* no event written yet (no comma needed) */
    int failed;
    uint64_t points_dropped, spans_dropped, activities_dropped, snapshots_dropped;
    uint32_t *escaped_len;  /* JSON-escaped length of each model string, 0 = unknown */
} trace_writer;

/* ---- small writers ----------------------------------------------------- */

static void begin_event(trace_writer *w)
{
    mf_sink_puts(w->out, w->first ? "\n" : ",\n");
    w->first = 0;
}

static void text(trace_writer *w, const char *s)
{
    mf_sink_puts(w->out, s);
}

static void json_string(trace_writer *w, const char *s)
{
    text(w, "\"");
    mf_escape_json(w->out, s);
    text(w, "\"");
}

/* Nanoseconds since t0 as exact microseconds ("12.345"). */
static void micros(trace_writer *w, uint64_t ns)
{
    mf_sink_micros(w->out, ns >= w->m->t0_ns ? ns - w->m->t0_ns : 0);
}

static void duration(trace_writer *w, uint64_t begin, uint64_t end)
{
    mf_sink_micros(w->out, end > begin ? end - begin : 0);
}

static uint32_t device_pid(uint16_t device)
{
    return MF_TRACE_DEVICE_PID_BASE + device;
}

/* Escaped length of a model string, cached. */
static size_t escaped_length(trace_writer *w, uint32_t id)
{
    if (!w->escaped_len)
        return strlen(mf_model_string(w->m, id)) * 6;
    if (!w->escaped_len[id]) {
        mf_sink b = { 0 };
        mf_escape_json(&b, mf_model_string(w->m, id));
        w->escaped_len[id] = (uint32_t)b.len + 1;
        mf_sink_free(&b);
    }
    return w->escaped_len[id] - 1;
}

/* ---- metadata ---------------------------------------------------------- */

static void metadata(trace_writer *w, const char *what, uint32_t pid, int64_t tid,
                     const char *name)
{
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,", what, pid);
    if (tid >= 0)
        mf_sink_printf(w->out, "\"tid\":%lld,", (long long)tid);
    text(w, "\"args\":{\"name\":");
    json_string(w, name);
    text(w, "}}");
}

static void sort_index(trace_writer *w, const char *what, uint32_t pid, int64_t tid,
                       long index)
{
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,", what, pid);
    if (tid >= 0)
        mf_sink_printf(w->out, "\"tid\":%lld,", (long long)tid);
    mf_sink_printf(w->out, "\"args\":{\"sort_index\":%ld}}", index);
}

static void process_metadata(trace_writer *w)
{
    const mf_model *m = w->m;
    for (size_t i = 0; i < m->n_processes; i++) {
        const mf_process_info *p = &m->processes[i];
        char name[MAX_PROGRAM_CHARS + 64];
        snprintf(name, sizeof name, "%.*s (pid %u)", MAX_PROGRAM_CHARS,
                 p->program && *p->program ? p->program : "program", p->pid);
        metadata(w, "process_name", p->pid, -1, name);
        sort_index(w, "process_sort_index", p->pid, -1, (long)i);
    }
    for (size_t i = 0; i < m->n_threads && i < MAX_NAMED_THREADS; i++) {
        const mf_thread_info *t = &m->threads[i];
        metadata(w, "thread_name", t->pid, t->tid, mf_model_string(m, t->name));
        sort_index(w, "thread_sort_index", t->pid, t->tid, (long)i);
    }
    for (size_t i = 0; i < m->n_devices; i++) {
        char dev[16];
        uint16_t d = m->devices[i].device;
        metadata(w, "process_name", device_pid(d), -1, mf_model_device_name(d, dev, sizeof dev));
        sort_index(w, "process_sort_index", device_pid(d), -1, 1000 + (long)d);
    }
}

/* ---- memory counters --------------------------------------------------- */

static void counter_point(trace_writer *w, const char *dev, uint16_t device, const mf_point *p)
{
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"C\",\"pid\":%u,\"name\":\"Memory: %s\",\"cat\":\"Device "
            "Storage\",\"ts\":", device_pid(device), dev);
    micros(w, p->time_ns);
    mf_sink_printf(w->out, ",\"args\":{\"Memory: %s\":%llu}}", dev, (unsigned long long)p->live_bytes);
}

/* Index of the lowest and highest point in [lo, hi) (first occurrences). */
static void bucket_extremes(const mf_point *p, size_t lo, size_t hi, size_t *min_i,
                            size_t *max_i)
{
    *min_i = *max_i = lo;
    for (size_t i = lo + 1; i < hi; i++) {
        if (p[i].live_bytes < p[*min_i].live_bytes)
            *min_i = i;
        if (p[i].live_bytes > p[*max_i].live_bytes)
            *max_i = i;
    }
}

/*
 * Every point when they fit in cap; otherwise buckets of consecutive points
 * each keep their lowest and highest point, in time order.  The first
 * occurrence of the peak is the highest point of its bucket, so the exact
 * peak is always kept; the last point is added when its bucket dropped it.
 */
static void device_counter(trace_writer *w, const mf_device_model *d, size_t cap)
{
    char dev[16];
    mf_model_device_name(d->device, dev, sizeof dev);
    size_t n = d->n_occupancy, written = 0;
    if (n <= cap) {
        for (size_t i = 0; i < n; i++)
            counter_point(w, dev, d->device, &d->occupancy[i]);
        return;
    }
    size_t buckets = cap / 2 > 1 ? cap / 2 - 1 : 1;
    size_t size = (n + buckets - 1) / buckets, last = SIZE_MAX;
    for (size_t lo = 0; lo < n; lo += size) {
        size_t hi = lo + size < n ? lo + size : n, a, b;
        bucket_extremes(d->occupancy, lo, hi, &a, &b);
        size_t first = a < b ? a : b, second = a < b ? b : a;
        counter_point(w, dev, d->device, &d->occupancy[first]);
        written++;
        if (second != first) {
            counter_point(w, dev, d->device, &d->occupancy[second]);
            written++;
        }
        last = second;
    }
    if (last != n - 1) {
        counter_point(w, dev, d->device, &d->occupancy[n - 1]);
        written++;
    }
    w->points_dropped += n - written;
}

static void memory_counters(trace_writer *w)
{
    const mf_model *m = w->m;
    size_t devices = m->n_devices ? m->n_devices : 1;
    size_t cap = MF_TRACE_COUNTER_POINTS / devices;
    if (cap < 4)
        cap = 4;
    for (size_t i = 0; i < m->n_devices; i++)
        device_counter(w, &m->devices[i], cap);
}

/* ---- snapshots --------------------------------------------------------- */

static void snapshot_point(trace_writer *w, uint16_t device, const mf_snapshot *s)
{
    char dev[16];
    mf_model_device_name(device, dev, sizeof dev);
    int gpu = MF_DEVICE_KIND(device) == MF_DEVICE_GPU;
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"C\",\"pid\":%u,\"name\":\"%s: %s\",\"cat\":\"Device Storage\","
            "\"ts\":", device_pid(device), gpu ? "Driver" : "Allocator", dev);
    micros(w, s->time_ns);
    if (gpu)
        mf_sink_printf(w->out, ",\"args\":{\"used\":%llu,\"events\":%llu}}",
                (unsigned long long)s->value[MF_SAMPLE_GPU_USED],
                (unsigned long long)s->events_live);
    else
        mf_sink_printf(w->out, ",\"args\":{\"allocated\":%llu,\"active\":%llu,\"resident\":%llu,"
                "\"mapped\":%llu,\"rss\":%llu,\"events\":%llu}}",
                (unsigned long long)s->value[MF_SAMPLE_ALLOCATED],
                (unsigned long long)s->value[MF_SAMPLE_ACTIVE],
                (unsigned long long)s->value[MF_SAMPLE_RESIDENT],
                (unsigned long long)s->value[MF_SAMPLE_MAPPED],
                (unsigned long long)s->value[MF_SAMPLE_RSS],
                (unsigned long long)s->events_live);
}

/* Every snapshot, or every k-th plus the last when there are too many. */
static void snapshot_counters(trace_writer *w)
{
    const mf_model *m = w->m;
    size_t cap = SNAPSHOT_POINTS / (m->n_devices ? m->n_devices : 1);
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        size_t step = d->n_snapshots > cap ? (d->n_snapshots + cap - 1) / cap : 1;
        size_t written = 0;
        for (size_t j = 0; j < d->n_snapshots; j++) {
            if (j % step == 0 || j + 1 == d->n_snapshots) {
                snapshot_point(w, d->device, &d->snapshots[j]);
                written++;
            }
        }
        w->snapshots_dropped += d->n_snapshots - written;
    }
}

/* ---- spans and activities (X events) ----------------------------------- */

/* Which spans or activities to write: all when their bytes fit the budget,
 * else the longest that fit (item_cost and item_length describe item i). */
typedef struct selection {
    const mf_model *m;
    trace_writer *w;
    int spans;              /* 1: spans, 0: activities */
} selection;

static uint64_t item_length(const selection *s, size_t i)
{
    if (s->spans)
        return s->m->spans[i].end_ns - s->m->spans[i].begin_ns;
    return s->m->activities[i].end_ns - s->m->activities[i].start_ns;
}

static size_t item_cost(const selection *s, size_t i)
{
    uint32_t name = s->spans ? s->m->spans[i].scope : s->m->activities[i].name;
    return EVENT_OVERHEAD + escaped_length(s->w, name);
}

typedef struct ranked {
    uint64_t length;
    size_t index;
} ranked;

/* Longest first, then in their original order. */
static int compare_longest(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    if (a->length != b->length)
        return a->length > b->length ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static unsigned char *select_items(const selection *s, size_t n, size_t budget,
                                   uint64_t *dropped)
{
    unsigned char *keep = calloc(n ? n : 1, 1);
    size_t total = 0;
    ranked *order;
    if (!keep)
        return NULL;
    for (size_t i = 0; i < n; i++)
        total += item_cost(s, i);
    if (total <= budget) {
        memset(keep, 1, n);
        return keep;
    }
    if (!(order = malloc(n * sizeof *order))) {
        free(keep);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = (ranked){ item_length(s, i), i };
    qsort(order, n, sizeof *order, compare_longest);
    total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t cost = item_cost(s, order[i].index);
        if (total + cost > budget) {
            (*dropped)++;
            continue;
        }
        total += cost;
        keep[order[i].index] = 1;
    }
    free(order);
    return keep;
}

static void span_event(trace_writer *w, const mf_span *sp)
{
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"X\",\"cat\":\"scope\",\"pid\":%u,\"tid\":%u,\"ts\":", sp->pid,
            sp->tid);
    micros(w, sp->begin_ns);
    text(w, ",\"dur\":");
    duration(w, sp->begin_ns, sp->end_ns);
    text(w, ",\"name\":");
    json_string(w, mf_model_string(w->m, sp->scope));
    mf_sink_printf(w->out, ",\"args\":{\"depth\":%u}}", sp->depth);
}

static int spans(trace_writer *w)
{
    selection s = { w->m, w, 1 };
    unsigned char *keep = select_items(&s, w->m->n_spans, SPAN_BYTES, &w->spans_dropped);
    if (!keep)
        return -1;
    for (size_t i = 0; i < w->m->n_spans; i++)
        if (keep[i])
            span_event(w, &w->m->spans[i]);
    free(keep);
    return 0;
}

static const char *activity_category(unsigned kind)
{
    switch (kind) {
    case MF_ACT_KERNEL: return "kernel";
    case MF_ACT_MEMCPY: return "memcpy";
    case MF_ACT_MEMSET: return "memset";
    }
    return "gpu";
}

/* Stream track of an activity: the stream, apart per profiled process
 * (process ordinal << 20 | stream: stays below 2^31 as trace viewers want). */
static int64_t stream_tid(const mf_model *m, const mf_activity *a)
{
    int64_t ordinal = 0;
    for (size_t i = 0; i < m->n_processes && i < 2047; i++)
        if (m->processes[i].pid == a->pid)
            ordinal = (int64_t)i;
    return ordinal << 20 | (a->stream & 0xfffffu);
}

static void activity_event(trace_writer *w, const mf_activity *a)
{
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"X\",\"cat\":\"%s\",\"pid\":%u,\"tid\":%lld,\"ts\":",
            activity_category(a->kind), device_pid(a->device),
            (long long)stream_tid(w->m, a));
    micros(w, a->start_ns);
    text(w, ",\"dur\":");
    duration(w, a->start_ns, a->end_ns);
    text(w, ",\"name\":");
    json_string(w, mf_model_string(w->m, a->name));
    mf_sink_printf(w->out, ",\"args\":{\"bytes\":%llu,\"stream\":%u,\"correlation\":%u,\"pid\":%u}}",
            (unsigned long long)a->bytes, a->stream, a->correlation, a->pid);
}

/* thread_name metadata of each (device, stream) track, once. */
static void stream_metadata(trace_writer *w)
{
    const mf_model *m = w->m;
    for (size_t i = 0; i < m->n_activities; i++) {
        const mf_activity *a = &m->activities[i];
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = m->activities[j].device == a->device && m->activities[j].stream == a->stream &&
                   m->activities[j].pid == a->pid;
        if (seen)
            continue;
        char name[64];
        snprintf(name, sizeof name, "stream %u (pid %u)", a->stream, a->pid);
        metadata(w, "thread_name", device_pid(a->device), stream_tid(m, a), name);
        if (i > 4096)
            break; /* plenty of tracks named; the rest show their number */
    }
}

static int activities(trace_writer *w)
{
    selection s = { w->m, w, 0 };
    unsigned char *keep = select_items(&s, w->m->n_activities, ACTIVITY_BYTES,
                                       &w->activities_dropped);
    if (!keep)
        return -1;
    stream_metadata(w);
    for (size_t i = 0; i < w->m->n_activities; i++)
        if (keep[i])
            activity_event(w, &w->m->activities[i]);
    free(keep);
    return 0;
}

/* ---- GPU memory pools -------------------------------------------------- */

static const char *pool_op_name(unsigned op)
{
    switch (op) {
    case MF_POOL_CREATED: return "pool created";
    case MF_POOL_DESTROYED: return "pool destroyed";
    case MF_POOL_TRIMMED: return "pool trimmed";
    }
    return "pool";
}

/* Instant events on the device's process (at most MAX_POOL_EVENTS). */
static void pools(trace_writer *w)
{
    for (size_t i = 0; i < w->m->n_pools && i < MAX_POOL_EVENTS; i++) {
        const mf_pool_event *p = &w->m->pools[i];
        begin_event(w);
        mf_sink_printf(w->out, "{\"ph\":\"i\",\"s\":\"p\",\"cat\":\"pool\",\"name\":\"%s\","
                "\"pid\":%u,\"tid\":0,\"ts\":", pool_op_name(p->op), device_pid(p->device));
        micros(w, p->time_ns);
        mf_sink_printf(w->out, ",\"args\":{\"address\":\"0x%llx\",\"size\":%llu,"
                "\"release_threshold\":%llu,\"pid\":%u}}", (unsigned long long)p->addr,
                (unsigned long long)p->size, (unsigned long long)p->threshold, p->pid);
    }
}

/* ---- the whole file ---------------------------------------------------- */

static void other_data(trace_writer *w)
{
    mf_sink_printf(w->out, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"generator\":"
            "\"memflow %s\",\"t0_ns\":\"%llu\",\"counter_points_dropped\":\"%llu\","
            "\"snapshots_dropped\":\"%llu\",\"spans_dropped\":\"%llu\","
            "\"activities_dropped\":\"%llu\"}}\n", MEMFLOW_VERSION,
            (unsigned long long)w->m->t0_ns, (unsigned long long)w->points_dropped,
            (unsigned long long)w->snapshots_dropped, (unsigned long long)w->spans_dropped,
            (unsigned long long)w->activities_dropped);
}

int mf_trace_write(const mf_model *model, mf_sink *out)
{
    trace_writer w = { .m = model, .out = out, .first = 1 };
    w.escaped_len = calloc(model->n_strings ? model->n_strings : 1, sizeof *w.escaped_len);
    text(&w, "{\"traceEvents\":[");
    process_metadata(&w);
    memory_counters(&w);
    snapshot_counters(&w);
    pools(&w);
    int rc = spans(&w) | activities(&w);
    other_data(&w);
    free(w.escaped_len);
    return rc < 0 || w.failed || out->error ? -1 : 0;
}

int mf_trace_write_file(const mf_model *model, const char *path, char *err, size_t errlen)
{
    mf_outfile o;
    if (mf_outfile_open(&o, path, err, errlen) < 0)
        return -1;
    if (mf_trace_write(model, &o.sink) < 0 && !o.sink.error) {
        snprintf(err, errlen, "%s: cannot write the trace: out of memory", path);
        mf_outfile_abort(&o);
        return -1;
    }
    return mf_outfile_commit(&o, err, errlen);
}
