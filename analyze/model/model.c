/*
 * model.c - the model's frame: creating it, describing processes, the
 * registry of devices and views (one process on one device) that the parts
 * index by, routing each event to the part that handles it, and settling
 * every part into the fields the outputs read.
 *
 * The parts own their state and never call one another back:
 *   model.c -> model_blocks.c    blocks: counts, curves, scopes, sites, leaks
 *           -> model_subblocks.c sub-blocks, counted apart, and NVTX heaps
 *           -> model_timeline.c  threads, spans, GPU activities, pools, trace objects
 *           -> model_picture.c   memory_flow's blocks, tiles, ranges and legend
 *   model_blocks.c -> model_picture.c (every allocation and ended block)
 *   model_subblocks.c -> model_picture.c (the order of blocks drawn whole)
 *   the parts -> keyed.c, live_table.c, series.c, topk.c, tiles.c, ranges.c
 * What one part needs of another (a view's peak epoch, the device of a GPU
 * block at a heap's address, the pid of an event's process) model.c passes in.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "grow.h"
#include "model_blocks.h"
#include "model_picture.h"
#include "model_subblocks.h"
#include "model_timeline.h"

/* A device: what its DEVICE record says, and its views. */
typedef struct mf_dev_state {
    uint16_t device;
    mf_device_info info;
    uint32_t *views;          /* view indices */
    size_t n_views, cap_views;
} mf_dev_state;

/* A process image (a log), as far as the frame routes its events. */
typedef struct mf_proc_state {
    uint32_t pid;
    int ended;
    uint32_t *view_of;        /* by device slot: view index + 1 */
    size_t n_view_of;
    uint32_t last_tid;        /* the thread seen last (a cache) */
} mf_proc_state;

struct mf_model_state {
    mf_model_options opt;
    int16_t device_slot[1u << 16];   /* device -> index into devs, -1 */
    mf_dev_state **devs;
    size_t n_devs, cap_devs;
    mf_view **views;                 /* by view index; the outputs read them */
    size_t n_views, cap_views;
    mf_proc_state *procs;            /* by log */
    size_t n_procs;
    mf_time_span span;               /* t0, t1: UINT64_MAX, 0 before the first event */
    mf_blocks blocks;
    mf_subblocks sub;
    mf_timeline timeline;
    mf_picture picture;              /* unused with opt.no_picture */
    char **log_warnings;             /* about the logs (mf_model_warn_log): listed first */
    size_t n_log_warnings, cap_log_warnings;
    char **warnings;                 /* fed (mf_model_warn) */
    size_t n_warnings, cap_warnings;
    char **derived;                  /* made by the last settle from the counts */
    size_t n_derived, cap_derived;
    int oom;
    mf_view **settled_views;         /* what the last settle allocated */
};

/* ---- creation ---------------------------------------------------------------- */

mf_model *mf_model_new(const mf_model_options *opt, char *err, size_t errlen)
{
    mf_model *m = calloc(1, sizeof *m);
    struct mf_model_state *st = calloc(1, sizeof *st);
    if (!m || !st || !(m->strings = mf_strings_new())) {
        free(m);
        free(st);
        snprintf(err, errlen, "out of memory building the model");
        return NULL;
    }
    m->state = st;
    if (opt)
        st->opt = *opt;
    m->since_ns = st->opt.since_ns;
    m->until_ns = UINT64_MAX;
    memset(st->device_slot, 0xff, sizeof st->device_slot);
    st->span.t0 = UINT64_MAX;
    mf_picture_init(&st->picture, &st->span, st->opt.tiles_by_site);
    mf_blocks_init(&st->blocks, st->opt.no_picture ? NULL : &st->picture);
    mf_blocks_set_observer(&st->blocks, st->opt.on_block, st->opt.on_block_ctx);
    st->blocks.no_curves = st->opt.no_curves;
    mf_sub_init(&st->sub, !st->opt.no_picture);
    mf_timeline_init(&st->timeline, m->strings, st->opt.no_trace);
    return m;
}

/* Append a formatted line to a list of strings. */
static int append_line(char ***list, size_t *n, size_t *cap, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    char *copy = strdup(line);
    if (!copy || mf_grow((void **)list, cap, *n + 1, sizeof **list) < 0) {
        free(copy);
        return -1;
    }
    (*list)[(*n)++] = copy;
    return 0;
}

void mf_model_warn(mf_model *m, const char *fmt, ...)
{
    struct mf_model_state *st = m->state;
    va_list ap;
    va_start(ap, fmt);
    if (append_line(&st->warnings, &st->n_warnings, &st->cap_warnings, fmt, ap) < 0)
        st->oom = 1;
    va_end(ap);
}

void mf_model_warn_log(mf_model *m, const char *fmt, ...)
{
    struct mf_model_state *st = m->state;
    va_list ap;
    va_start(ap, fmt);
    if (append_line(&st->log_warnings, &st->n_log_warnings, &st->cap_log_warnings, fmt, ap) < 0)
        st->oom = 1;
    va_end(ap);
}

void mf_model_forget_log_warnings(mf_model *m)
{
    struct mf_model_state *st = m->state;
    for (size_t i = 0; i < st->n_log_warnings; i++)
        free(st->log_warnings[i]);
    st->n_log_warnings = 0;
}

/* A warning the settle derives from the counts (rebuilt at every settle). */
static void settle_warn(mf_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void settle_warn(mf_model *m, const char *fmt, ...)
{
    struct mf_model_state *st = m->state;
    va_list ap;
    va_start(ap, fmt);
    if (append_line(&st->derived, &st->n_derived, &st->cap_derived, fmt, ap) < 0)
        st->oom = 1;
    va_end(ap);
}

/* ---- processes ------------------------------------------------------------------ */

static int grow_processes(mf_model *m, uint32_t log)
{
    struct mf_model_state *st = m->state;
    if (log < st->n_procs)
        return 0;
    size_t n = (size_t)log + 1;
    mf_proc_state *procs = realloc(st->procs, n * sizeof *procs);
    if (!procs)
        return -1;
    st->procs = procs;
    mf_process_info *info = realloc(m->processes, n * sizeof *info);
    if (!info)
        return -1;
    m->processes = info;
    for (size_t i = st->n_procs; i < n; i++) {
        memset(&procs[i], 0, sizeof procs[i]);
        memset(&info[i], 0, sizeof info[i]);
        info[i].parent = info[i].next_image = -1;
    }
    st->n_procs = m->n_processes = n;
    return 0;
}

static int replace_text(char **slot, const char *text)
{
    if (*slot && strcmp(*slot, text) == 0)
        return 0;
    char *copy = strdup(text);
    if (!copy)
        return -1;
    free(*slot);
    *slot = copy;
    return 0;
}

int mf_model_set_process(mf_model *m, uint32_t log, const mf_log_info *info)
{
    if (log > UINT16_MAX || grow_processes(m, log) < 0)
        return -1;
    mf_process_info *p = &m->processes[log];
    p->pid = (uint32_t)info->header.pid;
    p->ppid = (uint32_t)info->header.ppid;
    if (replace_text(&p->program, info->program) < 0 || replace_text(&p->log_path, info->path) < 0)
        return -1;
    p->finished = (info->header.flags & MF_HEADER_FINISHED) != 0;
    p->start_ns = info->header.start_mono_ns;
    p->end_ns = info->end_ns;
    p->end_how = info->end_how;
    p->end_status = info->end_status;
    p->end_inferred = info->end_inferred;
    p->abnormal = info->abnormal;
    p->running = info->running;
    p->parent = info->parent;
    p->next_image = info->next_image;
    m->state->procs[log].pid = p->pid;
    return mf_blocks_set_process(&m->state->blocks, (uint16_t)log, p->pid, info->parent >= 0);
}

void mf_model_set_sites(mf_model *m, struct mf_sites *sites)
{
    mf_sites_close(m->sites);
    m->sites = sites;
    mf_blocks_set_sites(&m->state->blocks, sites);
    mf_picture_set_sites(&m->state->picture, sites);
}

/* ---- devices and views ----------------------------------------------------------- */

/* A new device: its slot, or -1 when out of memory. */
static int new_device(mf_model *m, uint16_t device)
{
    struct mf_model_state *st = m->state;
    mf_dev_state *d = calloc(1, sizeof *d);
    if (!d || mf_grow((void **)&st->devs, &st->cap_devs, st->n_devs + 1, sizeof *st->devs) < 0 ||
        mf_blocks_add_device(&st->blocks, device) < 0 || mf_sub_add_device(&st->sub) < 0) {
        free(d);
        return -1;
    }
    d->device = device;
    d->info.mig = UINT32_MAX;
    st->device_slot[device] = (int16_t)st->n_devs;
    st->devs[st->n_devs++] = d;
    return st->device_slot[device];
}

/* The slot of device, created if new; -1 when out of memory. */
static inline int device_slot(mf_model *m, uint16_t device)
{
    int slot = m->state->device_slot[device];
    return slot >= 0 ? slot : new_device(m, device);
}

static int new_view(mf_model *m, uint32_t slot, uint32_t pid)
{
    struct mf_model_state *st = m->state;
    mf_dev_state *d = st->devs[slot];
    mf_view *v = calloc(1, sizeof *v);
    if (!v || mf_grow((void **)&st->views, &st->cap_views, st->n_views + 1, sizeof *st->views) < 0 ||
        mf_grow((void **)&d->views, &d->cap_views, d->n_views + 1, sizeof *d->views) < 0) {
        free(v);
        return -1;
    }
    v->device = d->device;
    v->pid = pid;
    v->index = (uint32_t)st->n_views;
    st->views[st->n_views++] = v;
    d->views[d->n_views++] = v->index;
    if (mf_blocks_add_view(&st->blocks, slot, pid) < 0 ||
        (!st->opt.no_picture && mf_picture_add_view(&st->picture) < 0) ||
        mf_sub_add_view(&st->sub, slot, pid, d->device) < 0)
        return -1;
    return (int)v->index;
}

/* The view of (device, process of log), created if new, into *view; 0, or
 * -1 when out of memory. */
static int view_of(mf_model *m, uint16_t log, uint16_t device, uint32_t *view)
{
    struct mf_model_state *st = m->state;
    if (log >= st->n_procs && grow_processes(m, log) < 0)
        return -1;
    int slot = device_slot(m, device);
    if (slot < 0)
        return -1;
    mf_proc_state *p = &st->procs[log];
    if ((size_t)slot < p->n_view_of && p->view_of[slot]) {
        *view = p->view_of[slot] - 1;
        return 0;
    }
    if (mf_grow_filled((void **)&p->view_of, &p->n_view_of, (size_t)slot + 1, sizeof *p->view_of,
                       0) < 0)
        return -1;
    const mf_dev_state *d = st->devs[slot];
    int v = -1;
    for (size_t i = 0; i < d->n_views && v < 0; i++)    /* another image of the same pid */
        if (st->views[d->views[i]]->pid == p->pid)
            v = (int)d->views[i];
    if (v < 0 && (v = new_view(m, (uint32_t)slot, p->pid)) < 0)
        return -1;
    p->view_of[slot] = (uint32_t)v + 1;
    *view = (uint32_t)v;
    return 0;
}

/* ---- events ---------------------------------------------------------------------- */

static uint32_t pid_of(const mf_model *m, const mf_event *e)
{
    return e->log < m->n_processes ? m->processes[e->log].pid : 0;
}

static void on_note(mf_model *m, const mf_event *e)
{
    unsigned pid = pid_of(m, e);
    switch (e->note.code) {
    case MF_NOTE_GPU_DROPPED:
        m->gpu_dropped += e->note.value;
        break;
    case MF_NOTE_GPU_OFF:
        mf_model_warn(m, "pid %u: GPU capture was off (CUPTI result %llu)", pid,
                      (unsigned long long)e->note.value);
        break;
    case MF_NOTE_SCOPE_OVERFLOW:
        mf_model_warn(m, "pid %u: %llu scope pushes went past the 256-deep scope stack and "
                      "were ignored", pid, (unsigned long long)e->note.value);
        break;
    }
}

static int on_device(mf_model *m, const mf_event *e)
{
    int slot = device_slot(m, e->device);
    if (slot < 0)
        return -1;
    mf_device_info *info = &m->state->devs[slot]->info;
    info->known = 1;
    info->name = e->gpu.name;
    info->total_bytes = e->gpu.total_bytes;
    info->mig = e->gpu.mig;
    info->pci_bus = e->gpu.pci_bus;
    memcpy(info->uuid, e->gpu.uuid, sizeof info->uuid);
    return 0;
}

static int on_thread(mf_model *m, const mf_event *e)
{
    if (e->log >= m->n_processes)
        return 0;
    return mf_timeline_name_thread(&m->state->timeline, m->processes[e->log].pid, e->tid,
                                   e->thread.name);
}

/* Process image log ended: its blocks and sub-blocks end with it. */
static int on_process_end(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    if (e->log >= st->n_procs || st->procs[e->log].ended)
        return 0;
    mf_proc_state *p = &st->procs[e->log];
    p->ended = 1;
    if (e->time_ns < m->since_ns)
        return 0;
    if (mf_sub_on_process_end(&st->sub, e->log, e->time_ns) < 0)
        return -1;
    int any = mf_blocks_on_process_end(&st->blocks, e->log, e->time_ns, p->view_of,
                                       p->n_view_of);
    if (any > 0 && e->time_ns > st->span.t1)
        st->span.t1 = e->time_ns;
    return any < 0 ? -1 : 0;
}

/* Every event's thread is known to the model (the trace names its track). */
static int note_thread(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    if (!e->tid || e->log >= st->n_procs || st->procs[e->log].last_tid == e->tid)
        return 0;
    st->procs[e->log].last_tid = e->tid;
    return mf_timeline_thread(&st->timeline, m->processes[e->log].pid, e->tid);
}

/* A string id the pool does not have (only a caller feeding events of its
 * own can make one) is "unknown": ids index the model's tables.  Returns e,
 * or its copy in *copy with such ids 0. */
static const mf_event *known_ids(const mf_model *m, const mf_event *e, mf_event *copy)
{
    uint32_t n = mf_strings_count(m->strings);
    const uint32_t *ids[2];
    unsigned k = mf_event_strings_of(e, ids);
    if (MF_LIKELY((k < 1 || *ids[0] < n) && (k < 2 || *ids[1] < n)))
        return e;
    uint32_t *fix[2];
    *copy = *e;
    k = mf_event_strings(copy, fix);
    for (unsigned i = 0; i < k; i++)
        if (*fix[i] >= n)
            *fix[i] = 0;
    return copy;
}

static int on_alloc(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    uint32_t view;
    if (e->alloc.flags & MF_FLAG_SUBBLOCK)
        return view_of(m, e->log, mf_sub_device_of(&st->sub, e), &view) < 0
                   ? -1 : mf_sub_on_alloc(&st->sub, e, view);
    return view_of(m, e->log, e->device, &view) < 0 ? -1 : mf_blocks_on_alloc(&st->blocks, e, view);
}

static int on_free(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    if (e->free.flags & MF_FLAG_SUBBLOCK)
        return mf_sub_on_free(&st->sub, e);
    int rc = mf_blocks_on_free(&st->blocks, e);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    uint32_t view;
    if (view_of(m, e->log, e->device, &view) < 0)
        return -1;
    mf_blocks_on_unknown_free(&st->blocks, e, view);
    return 0;
}

static int on_sample(mf_model *m, const mf_event *e, const mf_sample_values *values)
{
    uint32_t view;
    return view_of(m, e->log, e->device, &view) < 0
               ? -1 : mf_blocks_on_sample(&m->state->blocks, e, view, values);
}

static int on_pool(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    uint16_t device = e->device;
    if (e->pool.op >= MF_POOL_HEAP_REGISTERED &&   /* an NVTX heap: on its device */
        mf_sub_on_heap(&st->sub, e,
                       mf_blocks_gpu_block_device(&st->blocks, e->log, e->pool.addr, e->device),
                       &device) < 0)
        return -1;
    return mf_timeline_on_pool(&st->timeline, e, pid_of(m, e), device);
}

static int on_activity(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    uint64_t end = e->activity.end_ns > e->time_ns ? e->activity.end_ns : e->time_ns;
    st->span.t1 = end > st->span.t1 ? end : st->span.t1;
    return mf_timeline_on_activity(&st->timeline, e, pid_of(m, e));
}

static int on_trace(mf_model *m, const mf_event *e)
{
    if (e->trace.kind == MF_TRACE_REGION_NAME) {
        mf_sub_on_name(&m->state->sub, e);
        return 0;
    }
    if (e->trace.kind == MF_TRACE_BLOCK_NAME) { /* a sub-block there first (a tensor in a segment) */
        if (!mf_sub_on_name(&m->state->sub, e))
            mf_blocks_on_name(&m->state->blocks, e);
        return 0;
    }
    return mf_timeline_on_object(&m->state->timeline, e, pid_of(m, e));
}

/* One event, in time order; 0, or -1 when out of memory. */
static int feed_one(mf_model *m, const mf_event *event, const mf_sample_values *samples)
{
    struct mf_model_state *st = m->state;
    mf_event copy;
    const mf_event *e = known_ids(m, event, &copy);
    if (e->type == MF_REC_THREAD)
        return on_thread(m, e);
    if (e->type == MF_REC_DEVICE)
        return on_device(m, e);
    if (e->type == MF_EV_PROCESS_END)
        return on_process_end(m, e);
    if (e->time_ns < m->since_ns)
        return 0;
    st->span.t0 = e->time_ns < st->span.t0 ? e->time_ns : st->span.t0;
    st->span.t1 = e->time_ns > st->span.t1 ? e->time_ns : st->span.t1;
    if (note_thread(m, e) < 0)
        return -1;
    switch (e->type) {
    case MF_REC_ALLOC: return on_alloc(m, e);
    case MF_REC_FREE: return on_free(m, e);
    case MF_REC_SAMPLE: return on_sample(m, e, &samples[e->sample.index]);
    case MF_REC_SCOPE: return mf_timeline_on_scope(&st->timeline, e, pid_of(m, e));
    case MF_REC_ACTIVITY: return on_activity(m, e);
    case MF_REC_POOL: return on_pool(m, e);
    case MF_REC_TRACE: return on_trace(m, e);
    case MF_REC_NOTE: on_note(m, e); return 0;
    default: return 0;          /* STATE: not part of the model */
    }
}

int mf_model_feed(mf_model *m, const mf_event *events, size_t n,
                  const mf_sample_values *samples)
{
    struct mf_model_state *st = m->state;
    for (size_t i = 0; i < n && !st->oom; i++) {
        const mf_event *e = &events[i];
        if ((e->log >= st->n_procs && grow_processes(m, e->log) < 0) ||
            feed_one(m, e, samples) < 0)
            st->oom = 1;
    }
    return st->oom ? -1 : 0;
}

/* ---- settling ---------------------------------------------------------------------- */

static int by_device(const void *a, const void *b)
{
    uint16_t x = ((const mf_device_model *)a)->device, y = ((const mf_device_model *)b)->device;
    return x < y ? -1 : x > y;
}

/* Largest peak first, then by pid. */
static int by_peak(const void *a, const void *b)
{
    const mf_view *x = *(const mf_view *const *)a, *y = *(const mf_view *const *)b;
    if (x->peak_bytes != y->peak_bytes)
        return x->peak_bytes > y->peak_bytes ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The live blocks of one view, for the picture's settle. */
typedef struct view_source {
    const mf_model *m;
    const mf_view *v;
} view_source;

static int visit_view(void *src, int (*fn)(const mf_block *b, void *ctx), void *ctx)
{
    const view_source *s = src;
    return mf_model_each_live(s->m, s->v, fn, ctx);
}

static int settle_view(mf_model *m, uint32_t index)
{
    struct mf_model_state *st = m->state;
    mf_view *v = st->views[index];
    view_source src = { m, v };
    if (mf_blocks_settle_view(&st->blocks, index, v) < 0 ||
        (!st->opt.no_picture &&
         mf_picture_settle(&st->picture, index, mf_blocks_view_epoch(&st->blocks, index),
                           st->span.t1, v, visit_view, &src) < 0))
        return -1;
    return mf_sub_settle_view(&st->sub, index, v);
}

static int settle_device(mf_model *m, uint32_t slot, mf_device_model *out, mf_view **views)
{
    struct mf_model_state *st = m->state;
    const mf_dev_state *d = st->devs[slot];
    memset(out, 0, sizeof *out);
    out->device = d->device;
    out->info = d->info;
    if (mf_blocks_settle_device(&st->blocks, slot, out) < 0 ||
        mf_sub_settle_device(&st->sub, slot, out) < 0)
        return -1;
    for (size_t i = 0; i < d->n_views; i++) {
        if (settle_view(m, d->views[i]) < 0)
            return -1;
        views[i] = st->views[d->views[i]];
    }
    qsort(views, d->n_views, sizeof *views, by_peak);
    out->views = views;
    out->n_views = d->n_views;
    return 0;
}

/* The warnings: those about the logs, those fed, then what the counts say now. */
static int settle_warnings(mf_model *m)
{
    struct mf_model_state *st = m->state;
    for (size_t i = 0; i < st->n_derived; i++)
        free(st->derived[i]);
    st->n_derived = 0;
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        char name[16];
        mf_model_device_name(d->device, name, sizeof name);
        if (d->replaced_blocks)
            settle_warn(m, "%s: %llu allocations at an address that was still live (a free was "
                        "not recorded; the earlier block ends there)", name,
                        (unsigned long long)d->replaced_blocks);
        if (d->unknown_frees)
            settle_warn(m, "%s: %llu frees of addresses never seen allocated (allocated before "
                        "recording started, or not recorded)", name,
                        (unsigned long long)d->unknown_frees);
    }
    for (size_t i = 0; m->sites && mf_sites_warning(m->sites, i); i++)
        settle_warn(m, "%s", mf_sites_warning(m->sites, i));
    if (m->gpu_dropped)
        settle_warn(m, "GPU: %llu CUPTI activity records were dropped (their allocations are "
                    "missing)", (unsigned long long)m->gpu_dropped);
    free(m->warnings);
    m->n_warnings = st->n_log_warnings + st->n_warnings + st->n_derived;
    m->warnings = malloc((m->n_warnings ? m->n_warnings : 1) * sizeof *m->warnings);
    if (!m->warnings)
        return -1;
    char **at = m->warnings;
    if (st->n_log_warnings)
        memcpy(at, st->log_warnings, st->n_log_warnings * sizeof *at);
    at += st->n_log_warnings;
    if (st->n_warnings)
        memcpy(at, st->warnings, st->n_warnings * sizeof *at);
    at += st->n_warnings;
    if (st->n_derived)
        memcpy(at, st->derived, st->n_derived * sizeof *at);
    return 0;
}

int mf_model_settle(mf_model *m)
{
    struct mf_model_state *st = m->state;
    if (st->oom)
        return -1;
    m->t0_ns = st->span.t0 == UINT64_MAX ? 0 : st->span.t0;
    m->t1_ns = st->span.t1 > m->t0_ns ? st->span.t1 : m->t0_ns;
    m->n_strings = mf_strings_count(m->strings);
    free(m->devices);
    free(st->settled_views);
    m->devices = calloc(st->n_devs ? st->n_devs : 1, sizeof *m->devices);
    st->settled_views = calloc(st->n_views ? st->n_views : 1, sizeof *st->settled_views);
    if (!m->devices || !st->settled_views)
        return -1;
    m->n_devices = 0;
    size_t used = 0;
    for (size_t i = 0; i < st->n_devs; i++) {
        if (!st->devs[i]->n_views)
            continue;          /* named (DEVICE) but no event of its own */
        if (settle_device(m, (uint32_t)i, &m->devices[m->n_devices++],
                          st->settled_views + used) < 0)
            return -1;
        used += st->devs[i]->n_views;
    }
    qsort(m->devices, m->n_devices, sizeof *m->devices, by_device);
    if (mf_blocks_settle(&st->blocks, m) < 0 ||
        mf_timeline_settle(&st->timeline, m->t1_ns, m) < 0 || settle_warnings(m) < 0)
        return -1;
    return st->oom ? -1 : 0;
}

/* The live blocks a view visit passes on: those not drawn whole. */
typedef struct not_whole {
    const mf_view *v;
    int (*fn)(const mf_block *b, void *ctx);
    void *ctx;
} not_whole;

static int if_not_whole(const mf_block *b, void *ctx)
{
    const not_whole *w = ctx;
    if (w->v->n_blocks && mf_picture_kept_whole(w->v, b))
        return 0;              /* in v->blocks (drawn whole) */
    return w->fn(b, w->ctx);
}

int mf_model_each_live(const mf_model *m, const mf_view *v,
                       int (*fn)(const mf_block *b, void *ctx), void *ctx)
{
    const struct mf_model_state *st = m->state;
    not_whole w = { v, fn, ctx };
    for (size_t log = 0; log < st->n_procs; log++) {
        if (st->procs[log].pid != v->pid)
            continue;
        int rc = mf_blocks_each_live(&st->blocks, (uint16_t)log, v->index, v->device,
                                     if_not_whole, &w);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- freeing and lookups -------------------------------------------------------------- */

void mf_model_free(mf_model *m)
{
    if (!m)
        return;
    struct mf_model_state *st = m->state;
    if (st) {
        mf_blocks_free(&st->blocks);
        mf_sub_free(&st->sub);
        mf_timeline_free(&st->timeline);
        mf_picture_free(&st->picture);
        for (size_t i = 0; i < st->n_devs; i++) {
            free(st->devs[i]->views);
            free(st->devs[i]);
        }
        free(st->devs);
        for (size_t i = 0; i < st->n_views; i++)
            free(st->views[i]);
        free(st->views);
        for (size_t i = 0; i < st->n_procs; i++)
            free(st->procs[i].view_of);
        free(st->procs);
        free(st->settled_views);
        mf_model_forget_log_warnings(m);
        free(st->log_warnings);
        for (size_t i = 0; i < st->n_warnings; i++)
            free(st->warnings[i]);
        free(st->warnings);
        for (size_t i = 0; i < st->n_derived; i++)
            free(st->derived[i]);
        free(st->derived);
        free(st);
    }
    for (size_t i = 0; i < m->n_processes; i++) {
        free(m->processes[i].program);
        free(m->processes[i].log_path);
    }
    free(m->processes);
    free(m->devices);
    free(m->warnings);
    mf_sites_close(m->sites);
    mf_strings_free(m->strings);
    free(m);
}

const char *mf_model_string(const mf_model *model, uint32_t id)
{
    return mf_strings_get(model->strings, id);
}

const mf_device_model *mf_model_device(const mf_model *model, uint16_t device)
{
    for (size_t i = 0; i < model->n_devices; i++)
        if (model->devices[i].device == device)
            return &model->devices[i];
    return NULL;
}

const mf_view *mf_model_view(const mf_model *model, uint16_t device, uint32_t pid)
{
    const mf_device_model *d = mf_model_device(model, device);
    for (size_t i = 0; d && i < d->n_views; i++)
        if (d->views[i]->pid == pid)
            return d->views[i];
    return NULL;
}

/* The entry of key in stats[0..n), sorted by key, or NULL. */
static const mf_scope_stat *find_keyed(const mf_scope_stat *stats, size_t n, uint32_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (stats[mid].scope == key)
            return &stats[mid];
        if (stats[mid].scope < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const mf_scope_stat *mf_model_scope(const mf_device_model *dev, uint32_t scope)
{
    return find_keyed(dev->scopes, dev->n_scopes, scope);
}

const mf_site_stat *mf_model_site(const mf_device_model *dev, uint32_t site)
{
    return find_keyed(dev->sites, dev->n_sites, site);
}

const char *mf_model_thread_name(const mf_model *model, uint32_t pid, uint32_t tid)
{
    mf_thread_info key = { .tid = tid, .pid = pid };
    const mf_thread_info *t = model->n_threads ? bsearch(&key, model->threads, model->n_threads,
                                                         sizeof key, mf_timeline_thread_order)
                                               : NULL;
    return t && t->name ? mf_model_string(model, t->name) : NULL;
}

const char *mf_model_program(const mf_model *model, uint32_t pid)
{
    const char *program = "";
    uint64_t latest = 0;
    for (size_t i = 0; i < model->n_processes; i++) {
        const mf_process_info *p = &model->processes[i];
        if (p->pid == pid && p->program && (p->start_ns >= latest || !*program)) {
            program = p->program;
            latest = p->start_ns;
        }
    }
    return program;
}

const char *mf_model_device_name(uint16_t device, char *buf, size_t len)
{
    return mf_device_name(device, buf, len);
}

int mf_model_device_parse(const char *text, uint16_t *device)
{
    return text ? mf_device_parse(text, device) : -1;
}
