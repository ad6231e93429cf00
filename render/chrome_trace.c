/*
 * chrome_trace.c - write a model as a Chrome trace (JSON object format).
 *
 * Layout of the trace:
 *  - one trace process per profiled process (pid = its pid), named by its
 *    program, with one thread track per thread holding its scope spans as
 *    "X" events (cat "scope"), its Event spans as "B"/"E" pairs, its
 *    markers ("i") and its trace counters ("C", one series per name);
 *    Tasks, Frames and NVTX ranges are async spans ("b"/"e" with their id,
 *    cat = their domain);
 *  - one trace process per device (pid = MF_CHROME_TRACE_DEVICE_PID_BASE +
 *    device, named "cpu/0", "gpu/0 (NVIDIA ...)", ...) holding MXNet's counter
 *    "Memory: <dev>" (cat "Device Storage", bytes held by all processes after
 *    every alloc/free; for a GPU with PyTorch's tensors, what its allocator
 *    reserved, and beside it "Allocated: <dev>", the tensors' bytes), each
 *    out-of-memory error as an instant "Out of memory" with its post-mortem
 *    in the args, the sample_rate snapshots as "Allocator: cpu/0" /
 *    "Driver: gpu/N" counters, for GPUs one thread track per stream with the
 *    kernels, copies and sets as "X" events, and memory pool changes as
 *    instant ("i") events, and the device's largest blocks
 *    (MF_CHROME_TRACE_BLOCKS of them) as async spans from allocation to free
 *    (cat "block"), each named by its allocating site when the log has call
 *    stacks (its scope otherwise), with address, sizes, scope, site, top
 *    frames, process and thread in its args; then as many of its largest
 *    sub-blocks (regions inside other blocks, NVTX memory API) the same
 *    way, marked "subblock" with their region name in the args; NVTX heaps
 *    registered, reset and unregistered are instants beside the pools.
 * ts and dur are microseconds since the model's t0, printed exactly from
 * nanoseconds (no floating point, so never NaN).  The model already keeps
 * everything within the size bound (chrome_trace.h); this file writes it all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "memflow.h"
#include "outfile.h"
#include "chrome_trace.h"

#define MAX_NAMED_THREADS 20000u         /* thread_name metadata written */
#define MAX_NAMED_STREAMS 4096u          /* stream tracks named */
#define MAX_PROGRAM_CHARS 200            /* process names are cut here */
#define MAX_BLOCK_FRAMES 3               /* frames named in a block's args */

typedef struct chrome_writer {
    const mf_model *m;
    mf_sink *out;
    int first;              /* no event written yet (no comma needed) */
} chrome_writer;

/* ---- small writers ----------------------------------------------------- */

static void begin_event(chrome_writer *w)
{
    mf_sink_puts(w->out, w->first ? "\n" : ",\n");
    w->first = 0;
}

static void text(chrome_writer *w, const char *s)
{
    mf_sink_puts(w->out, s);
}

static void json_string(chrome_writer *w, const char *s)
{
    text(w, "\"");
    mf_escape_json(w->out, s);
    text(w, "\"");
}

/* Nanoseconds since t0 as exact microseconds ("12.345"). */
static void micros(chrome_writer *w, uint64_t ns)
{
    mf_sink_micros(w->out, ns >= w->m->t0_ns ? ns - w->m->t0_ns : 0);
}

static void duration(chrome_writer *w, uint64_t begin, uint64_t end)
{
    mf_sink_micros(w->out, end > begin ? end - begin : 0);
}

static uint32_t device_pid(uint16_t device)
{
    return MF_CHROME_TRACE_DEVICE_PID_BASE + device;
}

/* "ts":T for an event at ns. */
static void ts(chrome_writer *w, uint64_t ns)
{
    text(w, ",\"ts\":");
    micros(w, ns);
}

/* ---- metadata ---------------------------------------------------------- */

static void metadata(chrome_writer *w, const char *what, uint32_t pid, int64_t tid,
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

static void sort_index(chrome_writer *w, const char *what, uint32_t pid, int64_t tid,
                       long index)
{
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,", what, pid);
    if (tid >= 0)
        mf_sink_printf(w->out, "\"tid\":%lld,", (long long)tid);
    mf_sink_printf(w->out, "\"args\":{\"sort_index\":%ld}}", index);
}

/* Has an earlier image of this pid been named already? */
static int named_before(const mf_model *m, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (m->processes[j].pid == m->processes[i].pid)
            return 1;
    return 0;
}

static void device_name(chrome_writer *w, const mf_device_model *d, char *name, size_t len)
{
    char dev[16];
    mf_model_device_name(d->device, dev, sizeof dev);
    if (d->info.known)
        snprintf(name, len, "%s (%s)", dev, mf_model_string(w->m, d->info.name));
    else
        snprintf(name, len, "%s", dev);
}

static void process_metadata(chrome_writer *w)
{
    const mf_model *m = w->m;
    for (size_t i = 0; i < m->n_processes; i++) {
        const mf_process_info *p = &m->processes[i];
        if (named_before(m, i))
            continue;
        char name[MAX_PROGRAM_CHARS + 64];
        const char *program = mf_model_program(m, p->pid);
        snprintf(name, sizeof name, "%.*s (pid %u)", MAX_PROGRAM_CHARS,
                 *program ? program : "program", p->pid);
        metadata(w, "process_name", p->pid, -1, name);
        sort_index(w, "process_sort_index", p->pid, -1, (long)i);
    }
    for (size_t i = 0; i < m->n_threads && i < MAX_NAMED_THREADS; i++) {
        const mf_thread_info *t = &m->threads[i];
        char fallback[32];
        snprintf(fallback, sizeof fallback, "thread %u", t->tid);
        metadata(w, "thread_name", t->pid, t->tid, t->name ? mf_model_string(m, t->name) : fallback);
        sort_index(w, "thread_sort_index", t->pid, t->tid, (long)i);
    }
    for (size_t i = 0; i < m->n_devices; i++) {
        char name[512];
        const mf_device_model *d = &m->devices[i];
        device_name(w, d, name, sizeof name);
        metadata(w, "process_name", device_pid(d->device), -1, name);
        sort_index(w, "process_sort_index", device_pid(d->device), -1, 1000 + (long)d->device);
    }
}

/* ---- memory counters and snapshots -------------------------------------------- */

/* One point of a device's counter series `series` ("Memory": the bytes
 * held, MXNet's; "Allocated": its sub-blocks, PyTorch's tensors).  There
 * may be 10^5 of them: written piece by piece, no format to parse. */
static void counter_point(chrome_writer *w, const char *series, const char *dev, uint16_t device,
                          const mf_point *p)
{
    begin_event(w);
    text(w, "{\"ph\":\"C\",\"pid\":");
    mf_sink_u64(w->out, device_pid(device));
    text(w, ",\"name\":\"");
    text(w, series);
    text(w, ": ");
    text(w, dev);
    text(w, "\",\"cat\":\"Device Storage\"");
    ts(w, p->time_ns);
    text(w, ",\"args\":{\"");
    text(w, series);
    text(w, ": ");
    text(w, dev);
    text(w, "\":");
    mf_sink_u64(w->out, p->live_bytes);
    text(w, "}}");
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
 * The points the model kept of a series (its envelope, peak and last point
 * of any number of events) when they fit in cap; otherwise buckets of
 * consecutive points each keep their lowest and highest, in time order,
 * and the last point.  Returns how many were written.
 */
static size_t device_counter(chrome_writer *w, const char *series, uint16_t device,
                             const mf_point *pts, size_t n, size_t cap)
{
    char dev[16];
    mf_model_device_name(device, dev, sizeof dev);
    size_t written = 0;
    if (n <= cap) {
        for (size_t i = 0; i < n; i++)
            counter_point(w, series, dev, device, &pts[i]);
        return n;
    }
    size_t buckets = cap / 2 > 1 ? cap / 2 - 1 : 1;
    size_t size = (n + buckets - 1) / buckets, last = SIZE_MAX;
    for (size_t lo = 0; lo < n; lo += size) {
        size_t hi = lo + size < n ? lo + size : n, a, b;
        bucket_extremes(pts, lo, hi, &a, &b);
        size_t first = a < b ? a : b, second = a < b ? b : a;
        counter_point(w, series, dev, device, &pts[first]);
        written++;
        if (second != first) {
            counter_point(w, series, dev, device, &pts[second]);
            written++;
        }
        last = second;
    }
    if (last != n - 1) {
        counter_point(w, series, dev, device, &pts[n - 1]);
        written++;
    }
    return written;
}

/* Every device's "Memory" counter; a GPU with sub-blocks (PyTorch's
 * tensors inside its segments: "Memory" is then what it reserved) also
 * has "Allocated". */
static uint64_t memory_counters(chrome_writer *w)
{
    const mf_model *m = w->m;
    size_t series = m->n_devices;
    for (size_t i = 0; i < m->n_devices; i++)
        series += MF_DEVICE_KIND(m->devices[i].device) == MF_DEVICE_GPU &&
                  m->devices[i].n_sub_occupancy;
    size_t cap = MF_CHROME_TRACE_COUNTER_POINTS / (series ? series : 1);
    uint64_t dropped = 0;
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        size_t written = device_counter(w, "Memory", d->device, d->occupancy, d->n_occupancy,
                                        cap < 4 ? 4 : cap);
        dropped += d->occupancy_points - written;
        if (MF_DEVICE_KIND(d->device) == MF_DEVICE_GPU && d->n_sub_occupancy) {
            written = device_counter(w, "Allocated", d->device, d->sub_occupancy,
                                     d->n_sub_occupancy, cap < 4 ? 4 : cap);
            dropped += d->n_sub_occupancy - written;
        }
    }
    return dropped;
}

/* Each out-of-memory error: an instant on its device's track. */
static void oom_events(chrome_writer *w)
{
    const mf_model *m = w->m;
    for (size_t i = 0; i < m->n_ooms; i++) {
        const mf_oom *o = &m->ooms[i];
        begin_event(w);
        mf_sink_printf(w->out, "{\"ph\":\"i\",\"s\":\"p\",\"pid\":%u,\"tid\":0,"
                       "\"name\":\"Out of memory\",\"cat\":\"Device Storage\"",
                       device_pid(o->device));
        ts(w, o->time_ns);
        mf_sink_printf(w->out, ",\"args\":{\"pid\":%u,\"requested\":%llu,\"reserved\":%llu,"
                       "\"allocated\":%llu,\"largest_gap\":%llu,\"device_free\":",
                       o->pid, (unsigned long long)o->requested,
                       (unsigned long long)o->reserved_bytes,
                       (unsigned long long)o->allocated_bytes,
                       (unsigned long long)o->largest_gap);
        if (o->device_free == UINT64_MAX)
            text(w, "null");
        else
            mf_sink_u64(w->out, o->device_free);
        text(w, ",\"scope\":");
        json_string(w, mf_model_string(m, o->scope));
        text(w, "}}");
    }
}

static void snapshot_point(chrome_writer *w, uint16_t device, const char *name,
                           const mf_snapshot *s)
{
    int gpu = MF_DEVICE_KIND(device) == MF_DEVICE_GPU;
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"C\",\"pid\":%u,\"name\":", device_pid(device));
    json_string(w, name);
    text(w, ",\"cat\":\"Device Storage\"");
    ts(w, s->time_ns);
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

/* Every snapshot, or every k-th and the last when there are more than cap. */
static size_t snapshot_series(chrome_writer *w, uint16_t device, const char *name,
                              const mf_snapshot *s, size_t n, size_t cap)
{
    size_t step = n > cap ? (n + cap - 1) / cap : 1, written = 0;
    for (size_t j = 0; j < n; j++)
        if (j % step == 0 || j + 1 == n) {
            snapshot_point(w, device, name, &s[j]);
            written++;
        }
    return written;
}

/* One series per device, or per process when several share it (each
 * process samples its own allocator). */
static uint64_t snapshot_counters(chrome_writer *w)
{
    const mf_model *m = w->m;
    size_t cap = MF_CHROME_TRACE_SNAPSHOT_POINTS / (m->n_devices ? m->n_devices : 1);
    uint64_t dropped = 0;
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        char dev[16], name[96];
        const char *what = MF_DEVICE_KIND(d->device) == MF_DEVICE_GPU ? "Driver" : "Allocator";
        mf_model_device_name(d->device, dev, sizeof dev);
        uint64_t written = 0;
        if (d->n_views <= 1) {
            snprintf(name, sizeof name, "%s: %s", what, dev);
            written = snapshot_series(w, d->device, name, d->snapshots, d->n_snapshots, cap);
        } else {
            size_t share = cap / d->n_views ? cap / d->n_views : 1;
            for (size_t v = 0; v < d->n_views; v++) {
                const mf_view *view = d->views[v];
                snprintf(name, sizeof name, "%s: %s (pid %u)", what, dev, view->pid);
                written += snapshot_series(w, d->device, name, view->snapshots,
                                           view->n_snapshots, share);
            }
        }
        dropped += d->snapshots_added > written ? d->snapshots_added - written : 0;
    }
    return dropped;
}

/* ---- spans and activities (X events) ------------------------------------- */

static void span_event(chrome_writer *w, const mf_span *sp)
{
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"X\",\"cat\":\"scope\",\"pid\":%u,\"tid\":%u", sp->pid,
                   sp->tid);
    ts(w, sp->begin_ns);
    text(w, ",\"dur\":");
    duration(w, sp->begin_ns, sp->end_ns);
    text(w, ",\"name\":");
    json_string(w, mf_model_string(w->m, sp->scope));
    mf_sink_printf(w->out, ",\"args\":{\"depth\":%u}}", sp->depth);
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
static int64_t stream_tid(const mf_model *m, uint32_t pid, uint32_t stream)
{
    int64_t ordinal = 0;
    for (size_t i = 0; i < m->n_processes && i < 2047; i++)
        if (m->processes[i].pid == pid) {
            ordinal = (int64_t)i;
            break;
        }
    return ordinal << 20 | (stream & 0xfffffu);
}

static void activity_event(chrome_writer *w, const mf_activity *a)
{
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"X\",\"cat\":\"%s\",\"pid\":%u,\"tid\":%lld",
                   activity_category(a->kind), device_pid(a->device),
                   (long long)stream_tid(w->m, a->pid, a->stream));
    ts(w, a->start_ns);
    text(w, ",\"dur\":");
    duration(w, a->start_ns, a->end_ns);
    text(w, ",\"name\":");
    json_string(w, mf_model_string(w->m, a->name));
    mf_sink_printf(w->out, ",\"args\":{\"bytes\":%llu,\"stream\":%u,\"correlation\":%u,\"pid\":%u}}",
                   (unsigned long long)a->bytes, a->stream, a->correlation, a->pid);
}

typedef struct track {
    uint16_t device;
    uint32_t stream, pid;
} track;

static int by_track(const void *pa, const void *pb)
{
    const track *a = pa, *b = pb;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return a->stream < b->stream ? -1 : a->stream > b->stream;
}

/* thread_name metadata of each (device, process, stream) track, once. */
static void stream_metadata(chrome_writer *w)
{
    const mf_model *m = w->m;
    track *t = malloc((m->n_activities ? m->n_activities : 1) * sizeof *t);
    if (!t) {
        w->out->error = w->out->error ? w->out->error : 12;
        return;
    }
    for (size_t i = 0; i < m->n_activities; i++)
        t[i] = (track){ m->activities[i].device, m->activities[i].stream, m->activities[i].pid };
    qsort(t, m->n_activities, sizeof *t, by_track);
    size_t named = 0;
    for (size_t i = 0; i < m->n_activities && named < MAX_NAMED_STREAMS; i++) {
        if (i && by_track(&t[i - 1], &t[i]) == 0)
            continue;
        char name[64];
        snprintf(name, sizeof name, "stream %u (pid %u)", t[i].stream, t[i].pid);
        metadata(w, "thread_name", device_pid(t[i].device), stream_tid(m, t[i].pid, t[i].stream),
                 name);
        named++;
    }
    free(t);
}

/* ---- GPU memory pools ------------------------------------------------------------ */

static const char *pool_op_name(unsigned op)
{
    switch (op) {
    case MF_POOL_CREATED: return "pool created";
    case MF_POOL_DESTROYED: return "pool destroyed";
    case MF_POOL_TRIMMED: return "pool trimmed";
    case MF_POOL_HEAP_REGISTERED: return "NVTX heap registered";
    case MF_POOL_HEAP_RESET: return "NVTX heap reset";
    case MF_POOL_HEAP_UNREGISTERED: return "NVTX heap unregistered";
    }
    return "pool";
}

/* Instant events on the device's process. */
static void pools(chrome_writer *w)
{
    for (size_t i = 0; i < w->m->n_pools; i++) {
        const mf_pool_event *p = &w->m->pools[i];
        begin_event(w);
        mf_sink_printf(w->out, "{\"ph\":\"i\",\"s\":\"p\",\"cat\":\"pool\",\"name\":\"%s\","
                       "\"pid\":%u,\"tid\":0", pool_op_name(p->op), device_pid(p->device));
        ts(w, p->time_ns);
        mf_sink_printf(w->out, ",\"args\":{\"address\":\"0x%llx\",\"size\":%llu,"
                       "\"release_threshold\":%llu,\"pid\":%u}}", (unsigned long long)p->addr,
                       (unsigned long long)p->size, (unsigned long long)p->threshold, p->pid);
    }
}

/* ---- the largest blocks ------------------------------------------------------------ */

static int larger_block(const void *pa, const void *pb)
{
    const mf_block *a = *(const mf_block *const *)pa, *b = *(const mf_block *const *)pb;
    if (a->requested != b->requested)
        return a->requested > b->requested ? -1 : 1;
    return a->alloc_ns < b->alloc_ns ? -1 : a->alloc_ns > b->alloc_ns;
}

/* A view's blocks kept whole, or its sub-blocks (sub). */
static const mf_block *view_blocks(const mf_view *v, int sub, size_t *n)
{
    *n = sub ? v->n_subblocks : v->n_blocks;
    return sub ? v->subblocks : v->blocks;
}

/* The device's largest blocks the picture kept whole (or sub-blocks),
 * largest first: at most MF_CHROME_TRACE_BLOCKS into *out (malloc'ed).
 * Returns how many, or -1 when out of memory. */
static long largest_blocks(const mf_device_model *d, int sub, const mf_block ***out)
{
    size_t n = 0, nv;
    for (size_t v = 0; v < d->n_views; v++) {
        view_blocks(d->views[v], sub, &nv);
        n += nv;
    }
    *out = NULL;
    if (n == 0)
        return 0;
    const mf_block **all = malloc(n * sizeof *all);
    if (!all)
        return -1;
    n = 0;
    for (size_t v = 0; v < d->n_views; v++) {
        const mf_block *b = view_blocks(d->views[v], sub, &nv);
        for (size_t i = 0; i < nv; i++)
            all[n++] = &b[i];
    }
    qsort(all, n, sizeof *all, larger_block);
    *out = all;
    return (long)(n < MF_CHROME_TRACE_BLOCKS ? n : MF_CHROME_TRACE_BLOCKS);
}

/* "site":...,"frames":[...] of a block with a call stack. */
static void block_site(chrome_writer *w, const mf_block *b, const char *site)
{
    text(w, ",\"site\":");
    json_string(w, site);
    mf_site_frame frame[MAX_BLOCK_FRAMES];
    size_t n = mf_sites_frames(w->m->sites, b->stack, frame, MAX_BLOCK_FRAMES);
    text(w, ",\"frames\":[");
    for (size_t i = 0; i < n; i++) {
        char where[512];
        if (frame[i].file)
            snprintf(where, sizeof where, "%s (%s:%u)", frame[i].function, frame[i].file,
                     frame[i].line);
        else
            snprintf(where, sizeof where, "%s", frame[i].function);
        text(w, i ? "," : "");
        json_string(w, where);
    }
    text(w, "]");
}

/* One block: "b" at its allocation with what it is, "e" at its end. */
static void block_span(chrome_writer *w, const mf_block *b, uint32_t pid, uint64_t id)
{
    mf_sites *sites = w->m->sites;
    const char *site =
        sites && b->stack ? mf_sites_get(sites, mf_sites_of_stack(sites, b->stack))->name : NULL;
    const char *name = site ? site : mf_model_string(w->m, b->scope);
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"b\",\"cat\":\"block\",\"id\":\"0x%llx\",\"pid\":%u,"
                   "\"tid\":0", (unsigned long long)id, pid);
    ts(w, b->alloc_ns);
    text(w, ",\"name\":");
    json_string(w, name);
    mf_sink_printf(w->out, ",\"args\":{\"address\":\"0x%llx\",\"bytes\":%llu,\"actual\":%llu,"
                   "\"pid\":%u,\"tid\":%u,\"scope\":", (unsigned long long)b->addr,
                   (unsigned long long)b->requested, (unsigned long long)b->actual, b->pid, b->tid);
    json_string(w, mf_model_string(w->m, b->scope));
    if (site)
        block_site(w, b, site);
    if (b->free_ns == MF_LIVE_AT_END)
        text(w, ",\"live_at_end\":true");
    if (b->flags & MF_FLAG_SUBBLOCK)
        text(w, ",\"subblock\":\"a region inside another block\"");
    if ((b->flags & MF_FLAG_SUBBLOCK) && b->name) {
        text(w, ",\"region_name\":");
        json_string(w, mf_model_string(w->m, b->name));
    }
    text(w, "}}");
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"e\",\"cat\":\"block\",\"id\":\"0x%llx\",\"pid\":%u,"
                   "\"tid\":0", (unsigned long long)id, pid);
    ts(w, b->free_ns == MF_LIVE_AT_END ? w->m->t1_ns : b->free_ns);
    text(w, ",\"name\":");
    json_string(w, name);
    text(w, "}");
}

/* Every device's largest blocks, then its largest sub-blocks; -1 when out
 * of memory. */
static int largest_blocks_spans(chrome_writer *w)
{
    uint64_t id = 1;
    for (size_t i = 0; i < w->m->n_devices; i++) {
        const mf_device_model *d = &w->m->devices[i];
        for (int sub = 0; sub < 2; sub++) {
            const mf_block **blocks;
            long n = largest_blocks(d, sub, &blocks);
            if (n < 0)
                return -1;
            for (long k = 0; k < n; k++)
                block_span(w, blocks[k], device_pid(d->device), id++);
            free(blocks);
        }
    }
    return 0;
}

/* ---- trace objects ----------------------------------------------------------------- */

/* "cat" of a trace object: its domain, or the kind of object without one. */
static const char *object_category(const mf_model *m, uint32_t domain, unsigned kind)
{
    if (domain)
        return mf_model_string(m, domain);
    switch (kind) {
    case MF_TRACE_TASK_BEGIN: return "task";
    case MF_TRACE_FRAME_BEGIN: return "frame";
    case MF_TRACE_RANGE_BEGIN: return "range";
    }
    return "event";
}

/* One event of a trace object: ph, its name and category, where and when. */
static void object_event(chrome_writer *w, const char *ph, const mf_trace_span *s, uint32_t tid,
                         uint64_t time_ns, int with_id)
{
    begin_event(w);
    mf_sink_printf(w->out, "{\"ph\":\"%s\",\"pid\":%u,\"tid\":%u", ph, s->pid, tid);
    ts(w, time_ns);
    text(w, ",\"name\":");
    json_string(w, mf_model_string(w->m, s->name));
    text(w, ",\"cat\":");
    json_string(w, object_category(w->m, s->domain, s->kind));
    if (with_id)
        mf_sink_printf(w->out, ",\"id\":\"0x%llx\"", (unsigned long long)s->id);
    if (s->open)
        text(w, ",\"args\":{\"open\":true}");
    text(w, "}");
}

static void trace_objects(chrome_writer *w)
{
    const mf_model *m = w->m;
    for (size_t i = 0; i < m->n_trace_spans; i++) {
        const mf_trace_span *s = &m->trace_spans[i];
        int async = s->kind != MF_TRACE_EVENT_BEGIN;
        object_event(w, async ? "b" : "B", s, s->tid, s->begin_ns, async);
        object_event(w, async ? "e" : "E", s, async ? s->end_tid : s->tid, s->end_ns, async);
    }
    for (size_t i = 0; i < m->n_markers; i++) {
        const mf_trace_marker *mk = &m->markers[i];
        static const char scope[] = "tpg";
        begin_event(w);
        mf_sink_printf(w->out, "{\"ph\":\"i\",\"s\":\"%c\",\"pid\":%u,\"tid\":%u",
                       scope[mk->scope <= MF_MARKER_GLOBAL ? mk->scope : 0], mk->pid, mk->tid);
        ts(w, mk->time_ns);
        text(w, ",\"name\":");
        json_string(w, mf_model_string(m, mk->name));
        text(w, ",\"cat\":");
        json_string(w, mk->domain ? mf_model_string(m, mk->domain) : "marker");
        text(w, "}");
    }
    for (size_t i = 0; i < m->n_counters; i++) {
        const mf_trace_counter *c = &m->counters[i];
        for (size_t j = 0; j < c->n_points; j++) {
            begin_event(w);
            mf_sink_printf(w->out, "{\"ph\":\"C\",\"pid\":%u,\"name\":", c->pid);
            json_string(w, mf_model_string(m, c->name));
            text(w, ",\"cat\":");
            json_string(w, c->domain ? mf_model_string(m, c->domain) : "counter");
            ts(w, c->points[j].time_ns);
            text(w, ",\"args\":{");
            json_string(w, mf_model_string(m, c->name));
            mf_sink_printf(w->out, ":%lld}}", (long long)c->points[j].live_bytes);
        }
    }
}

static uint64_t counter_points_dropped(const mf_model *m)
{
    uint64_t n = 0;
    for (size_t i = 0; i < m->n_counters; i++)
        n += m->counters[i].added - m->counters[i].n_points;
    return n;
}

/* ---- the whole file ---------------------------------------------------- */

int mf_chrome_trace_write(const mf_model *model, mf_sink *out)
{
    chrome_writer w = { .m = model, .out = out, .first = 1 };
    text(&w, "{\"traceEvents\":[");
    process_metadata(&w);
    uint64_t points_dropped = memory_counters(&w);
    uint64_t snapshots_dropped = snapshot_counters(&w);
    oom_events(&w);
    pools(&w);
    for (size_t i = 0; i < model->n_spans; i++)
        span_event(&w, &model->spans[i]);
    stream_metadata(&w);
    for (size_t i = 0; i < model->n_activities; i++)
        activity_event(&w, &model->activities[i]);
    trace_objects(&w);
    int failed = largest_blocks_spans(&w);
    mf_sink_printf(out, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"generator\":"
                   "\"memflow %s\",\"t0_ns\":\"%llu\",\"counter_points_dropped\":\"%llu\","
                   "\"snapshots_dropped\":\"%llu\",\"spans_dropped\":\"%llu\","
                   "\"activities_dropped\":\"%llu\",\"pool_events_dropped\":\"%llu\","
                   "\"trace_spans_dropped\":\"%llu\",\"markers_dropped\":\"%llu\","
                   "\"trace_counter_points_dropped\":\"%llu\",\"trace_counters_dropped\":\"%llu\"}}\n",
                   MEMFLOW_VERSION, (unsigned long long)model->t0_ns,
                   (unsigned long long)points_dropped, (unsigned long long)snapshots_dropped,
                   (unsigned long long)model->spans_dropped,
                   (unsigned long long)model->activities_dropped,
                   (unsigned long long)model->pools_dropped,
                   (unsigned long long)model->trace_spans_dropped,
                   (unsigned long long)model->markers_dropped,
                   (unsigned long long)counter_points_dropped(model),
                   (unsigned long long)model->counters_dropped);
    return out->error || failed ? -1 : 0;
}

int mf_chrome_trace_write_file(const mf_model *model, const char *path, char *err, size_t errlen)
{
    mf_outfile o;
    if (mf_outfile_open(&o, path, err, errlen) < 0)
        return -1;
    mf_chrome_trace_write(model, &o.sink);
    return mf_outfile_commit(&o, err, errlen);
}
