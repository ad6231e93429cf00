/*
 * model.c - the model's frame: creating it, describing processes, routing
 * each event to the file that handles it (blocks: model_blocks.c; picture:
 * model_picture.c; timeline: model_timeline.c), devices, views and threads, and
 * settling everything into the fields the outputs read.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model_state.h"

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
    st->t0 = UINT64_MAX;
    st->view_points = MF_VIEW_POINTS_MAX;
    st->kept_limit = MF_KEPT_BLOCKS_MAX;
    if (mf_timeline_init(m) < 0) {
        mf_model_free(m);
        snprintf(err, errlen, "out of memory building the model");
        return NULL;
    }
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
        procs[i].parent = -1;
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
    mf_proc_state *ps = &m->state->procs[log];
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
    ps->known = 1;
    ps->pid = p->pid;
    ps->parent = info->parent;
    ps->start_ns = p->start_ns;
    return 0;
}

void mf_model_set_sites(mf_model *m, struct mf_sites *sites)
{
    mf_sites_close(m->sites);
    m->sites = sites;
}

/* ---- devices, views, threads ----------------------------------------------------- */

static mf_dev_state *device_state(mf_model *m, uint16_t device)
{
    struct mf_model_state *st = m->state;
    int16_t slot = st->device_slot[device];
    if (slot >= 0)
        return st->devs[slot];
    mf_dev_state *d = calloc(1, sizeof *d);
    if (!d || mf_grow((void **)&st->devs, &st->cap_devs, st->n_devs + 1, sizeof *st->devs) < 0) {
        free(d);
        return NULL;
    }
    d->pub.device = device;
    d->pub.min_addr = UINT64_MAX;
    d->pub.info.mig = UINT32_MAX;
    mf_series_init(&d->occupancy, MF_DEVICE_POINTS);
    mf_snapshots_init(&d->snapshots, MF_DEVICE_SNAPSHOTS);
    d->stacks.limit = MF_STACKS_KEPT;
    st->device_slot[device] = (int16_t)st->n_devs;
    st->devs[st->n_devs++] = d;
    return d;
}

static mf_view_state *new_view(mf_model *m, mf_dev_state *d, uint32_t pid)
{
    struct mf_model_state *st = m->state;
    mf_view_state *v = calloc(1, sizeof *v);
    if (!v || mf_grow((void **)&st->views, &st->cap_views, st->n_views + 1, sizeof *st->views) < 0 ||
        mf_grow((void **)&d->views, &d->cap_views, d->n_views + 1, sizeof *d->views) < 0) {
        free(v);
        return NULL;
    }
    v->pub.device = d->pub.device;
    v->pub.pid = pid;
    v->pub.min_addr = UINT64_MAX;
    v->index = (uint32_t)st->n_views;
    v->pub.index = v->index;
    v->life_min = v->size_min = UINT64_MAX;
    mf_series_init(&v->occupancy, st->view_points);
    mf_snapshots_init(&v->snapshots, MF_VIEW_SNAPSHOTS);
    st->views[st->n_views++] = v;
    d->views[d->n_views++] = v->index;
    if (mf_picture_rebalance(m) < 0)
        return NULL;
    return v;
}

mf_view_state *mf_model_view_of(mf_model *m, uint16_t log, uint16_t device, mf_dev_state **dev)
{
    struct mf_model_state *st = m->state;
    if (grow_processes(m, log) < 0)
        return NULL;
    mf_dev_state *d = device_state(m, device);
    if (!d)
        return NULL;
    *dev = d;
    mf_proc_state *p = &st->procs[log];
    size_t slot = (size_t)st->device_slot[device];
    if (slot < p->n_view_of && p->view_of[slot])
        return st->views[p->view_of[slot] - 1];
    if (mf_grow_filled((void **)&p->view_of, &p->n_view_of, slot + 1, sizeof *p->view_of, 0) < 0)
        return NULL;
    mf_view_state *v = NULL;
    for (size_t i = 0; i < d->n_views && !v; i++)    /* another image of the same pid */
        if (st->views[d->views[i]]->pub.pid == p->pid)
            v = st->views[d->views[i]];
    if (!v && !(v = new_view(m, d, p->pid)))
        return NULL;
    p->view_of[slot] = v->index + 1;
    return v;
}

static uint32_t thread_hash(uint32_t pid, uint32_t tid)
{
    uint64_t x = ((uint64_t)pid << 32 | tid) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(x >> 32);
}

static int thread_rehash(struct mf_model_state *st, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < st->n_threads; i++) {
        size_t k = thread_hash(st->threads[i].pid, st->threads[i].tid) & (n_slots - 1);
        while (slots[k])
            k = (k + 1) & (n_slots - 1);
        slots[k] = (uint32_t)i + 1;
    }
    free(st->thread_slots);
    st->thread_slots = slots;
    st->n_thread_slots = n_slots;
    return 0;
}

mf_thread_track *mf_model_thread(mf_model *m, uint32_t pid, uint32_t tid)
{
    struct mf_model_state *st = m->state;
    if ((st->n_threads + 1) * 2 > st->n_thread_slots &&
        thread_rehash(st, st->n_thread_slots ? 2 * st->n_thread_slots : 256) < 0)
        return NULL;
    size_t k = thread_hash(pid, tid) & (st->n_thread_slots - 1);
    for (; st->thread_slots[k]; k = (k + 1) & (st->n_thread_slots - 1)) {
        mf_thread_track *t = &st->threads[st->thread_slots[k] - 1];
        if (t->pid == pid && t->tid == tid)
            return t;
    }
    if (mf_grow((void **)&st->threads, &st->cap_threads, st->n_threads + 1,
                sizeof *st->threads) < 0)
        return NULL;
    mf_thread_track *t = &st->threads[st->n_threads++];
    memset(t, 0, sizeof *t);
    t->pid = pid;
    t->tid = tid;
    st->thread_slots[k] = (uint32_t)st->n_threads;
    return t;
}

/* ---- events ---------------------------------------------------------------------- */

static void on_note(mf_model *m, const mf_event *e)
{
    unsigned pid = e->log < m->n_processes ? m->processes[e->log].pid : 0;
    switch (e->extra) {
    case MF_NOTE_GPU_DROPPED:
        m->gpu_dropped += e->size;
        break;
    case MF_NOTE_GPU_OFF:
        mf_model_warn(m, "pid %u: GPU capture was off (CUPTI result %llu)", pid,
                      (unsigned long long)e->size);
        break;
    case MF_NOTE_SCOPE_OVERFLOW:
        mf_model_warn(m, "pid %u: %llu scope pushes went past the 256-deep scope stack and "
                      "were ignored", pid, (unsigned long long)e->size);
        break;
    }
}

static void on_device(mf_model *m, const mf_event *e)
{
    mf_dev_state *d = device_state(m, e->device);
    if (!d) {
        m->state->oom = 1;
        return;
    }
    mf_device_info *info = &d->pub.info;
    info->known = 1;
    info->name = e->name;
    info->total_bytes = e->size;
    info->mig = e->extra;
    info->pci_bus = e->scope;
    memcpy(info->uuid, &e->addr, 8);
    memcpy(info->uuid + 8, &e->actual, 8);
}

static void on_thread(mf_model *m, const mf_event *e)
{
    if (e->log >= m->n_processes)
        return;
    mf_thread_track *t = mf_model_thread(m, m->processes[e->log].pid, e->tid);
    if (!t)
        m->state->oom = 1;
    else
        t->name = e->scope;
}

/* Every event's thread is known to the model (the trace names its track). */
static void note_thread(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    if (!e->tid || e->log >= st->n_procs || st->procs[e->log].last_tid == e->tid)
        return;
    if (!mf_model_thread(m, m->processes[e->log].pid, e->tid))
        st->oom = 1;
    st->procs[e->log].last_tid = e->tid;
}

/* A string id the pool does not have (only a caller feeding events of its
 * own can make one) is "unknown": ids index the model's tables. */
static void check_ids(const mf_model *m, mf_event *e)
{
    uint32_t n = mf_strings_count(m->strings);
    if (e->scope >= n && e->type != MF_REC_DEVICE)
        e->scope = 0;
    if (e->name >= n)
        e->name = 0;
}

static void feed_one(mf_model *m, const mf_event *event, const mf_sample_values *samples)
{
    struct mf_model_state *st = m->state;
    mf_event copy = *event;
    const mf_event *e = &copy;
    check_ids(m, &copy);
    if (e->type == MF_REC_THREAD) {
        on_thread(m, e);
        return;
    }
    if (e->type == MF_REC_DEVICE) {
        on_device(m, e);
        return;
    }
    if (e->type == MF_EV_PROCESS_END) {
        mf_model_on_process_end(m, e);
        return;
    }
    if (e->time_ns < m->since_ns)
        return;
    st->t0 = e->time_ns < st->t0 ? e->time_ns : st->t0;
    st->t1 = e->time_ns > st->t1 ? e->time_ns : st->t1;
    note_thread(m, e);
    switch (e->type) {
    case MF_REC_ALLOC:
        if (e->flags & MF_FLAG_SUBBLOCK)
            mf_sub_on_alloc(m, e);
        else
            mf_model_on_alloc(m, e);
        break;
    case MF_REC_FREE:
        if (e->flags & MF_FLAG_SUBBLOCK)
            mf_sub_on_free(m, e);
        else
            mf_model_on_free(m, e);
        break;
    case MF_REC_SAMPLE: mf_model_on_sample(m, e, &samples[e->extra]); break;
    case MF_REC_SCOPE: mf_timeline_on_scope(m, e); break;
    case MF_REC_ACTIVITY: mf_timeline_on_activity(m, e); break;
    case MF_REC_POOL:
        if (e->extra >= MF_POOL_HEAP_REGISTERED)
            copy.device = mf_sub_on_heap(m, e);   /* an NVTX heap: on its device */
        mf_timeline_on_pool(m, e);
        break;
    case MF_REC_TRACE:
        if (e->flags == MF_TRACE_REGION_NAME)
            mf_sub_on_name(m, e);
        else
            mf_timeline_on_object(m, e);
        break;
    case MF_REC_NOTE: on_note(m, e); break;
    default: break;             /* STATE: not part of the model */
    }
}

int mf_model_feed(mf_model *m, const mf_event *events, size_t n,
                  const mf_sample_values *samples)
{
    struct mf_model_state *st = m->state;
    for (size_t i = 0; i < n && !st->oom; i++) {
        const mf_event *e = &events[i];
        if (e->log >= st->n_procs && grow_processes(m, e->log) < 0)
            st->oom = 1;
        else
            feed_one(m, e, samples);
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

static int settle_device(mf_model *m, mf_dev_state *d, mf_device_model *out, mf_view **views)
{
    struct mf_model_state *st = m->state;
    d->pub.occupancy = mf_series_points(&d->occupancy, &d->pub.n_occupancy);
    d->pub.occupancy_points = d->occupancy.added;
    d->pub.snapshots = mf_snapshots_items(&d->snapshots, &d->pub.n_snapshots);
    d->pub.snapshots_added = d->snapshots.added;
    if (mf_model_settle_scopes(m, d) < 0 || mf_sub_settle_device(m, d) < 0)
        return -1;
    for (size_t i = 0; i < d->n_views; i++) {
        mf_view_state *v = st->views[d->views[i]];
        if (mf_picture_settle(m, v) < 0 || mf_sub_settle_view(m, v) < 0)
            return -1;
        views[i] = &v->pub;
    }
    qsort(views, d->n_views, sizeof *views, by_peak);
    d->pub.views = views;
    d->pub.n_views = d->n_views;
    *out = d->pub;
    if (out->min_addr == UINT64_MAX)
        out->min_addr = 0;
    if (out->alloc_count == 0)
        out->min_size = 0;
    return 0;
}

static int by_pid_tid(const void *a, const void *b)
{
    const mf_thread_info *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int settle_threads(mf_model *m)
{
    struct mf_model_state *st = m->state;
    free(m->threads);
    m->threads = malloc((st->n_threads ? st->n_threads : 1) * sizeof *m->threads);
    if (!m->threads)
        return -1;
    for (size_t i = 0; i < st->n_threads; i++)
        m->threads[i] = (mf_thread_info){ st->threads[i].tid, st->threads[i].pid,
                                          st->threads[i].name };
    m->n_threads = st->n_threads;
    qsort(m->threads, m->n_threads, sizeof *m->threads, by_pid_tid);
    return 0;
}

/* The warnings: those fed, then what the counts say now. */
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
    m->n_warnings = st->n_warnings + st->n_derived;
    m->warnings = malloc((m->n_warnings ? m->n_warnings : 1) * sizeof *m->warnings);
    if (!m->warnings)
        return -1;
    if (st->n_warnings)
        memcpy(m->warnings, st->warnings, st->n_warnings * sizeof *m->warnings);
    if (st->n_derived)
        memcpy(m->warnings + st->n_warnings, st->derived, st->n_derived * sizeof *m->warnings);
    return 0;
}

int mf_model_settle(mf_model *m)
{
    struct mf_model_state *st = m->state;
    if (st->oom)
        return -1;
    m->t0_ns = st->t0 == UINT64_MAX ? 0 : st->t0;
    m->t1_ns = st->t1 > m->t0_ns ? st->t1 : m->t0_ns;
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
        if (settle_device(m, st->devs[i], &m->devices[m->n_devices++], st->settled_views + used) < 0)
            return -1;
        used += st->devs[i]->n_views;
    }
    qsort(m->devices, m->n_devices, sizeof *m->devices, by_device);
    if (mf_model_settle_blocks(m) < 0 || settle_threads(m) < 0 || mf_timeline_settle(m) < 0 ||
        settle_warnings(m) < 0)
        return -1;
    return st->oom ? -1 : 0;
}

int mf_model_each_live(const mf_model *m, const mf_view *v,
                       int (*fn)(const mf_block *b, void *ctx), void *ctx)
{
    const struct mf_model_state *st = m->state;
    for (size_t log = 0; log < st->n_procs; log++) {
        if (st->procs[log].pid != v->pid)
            continue;
        for (uint32_t id = mf_live_first(&st->live, (uint16_t)log); id;) {
            const mf_live *e = mf_live_get(&st->live, id);
            id = e->next;
            if (e->view != v->index || e->device != v->device)
                continue;
            mf_block b;
            mf_model_live_block(m, e, &b);
            if (v->n_blocks && mf_picture_kept_whole(v, &b))
                continue;          /* in v->blocks (drawn whole) */
            int rc = fn(&b, ctx);
            if (rc)
                return rc;
        }
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
        mf_sub_free(m);
        for (size_t i = 0; i < st->n_devs; i++) {
            mf_dev_state *d = st->devs[i];
            mf_series_free(&d->occupancy);
            mf_snapshots_free(&d->snapshots);
            mf_keyed_free(&d->scopes);
            mf_keyed_free(&d->sites);
            mf_keyed_free(&d->stacks);
            free(d->views);
            free(d->pub.scopes);
            free(d->pub.sites);
            free(d->pub.peak_stacks);
            free(d);
        }
        free(st->devs);
        for (size_t i = 0; i < st->n_views; i++) {
            mf_picture_free(st->views[i]);
            free(st->views[i]);
        }
        free(st->views);
        for (size_t i = 0; i < st->n_procs; i++) {
            free(st->procs[i].view_of);
            free(st->procs[i].gpu_unfreed);
        }
        free(st->procs);
        mf_live_free(&st->live);
        mf_topk_free(&st->leaks);
        mf_timeline_free(m);
        for (size_t i = 0; i < st->n_threads; i++) {
            free(st->threads[i].open);
            free(st->threads[i].events);
        }
        free(st->threads);
        free(st->thread_slots);
        free(st->settled_views);
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
    free(m->threads);
    free(m->leaks);
    free(m->gpu_live);
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
    const mf_thread_info *t =
        model->n_threads ? bsearch(&key, model->threads, model->n_threads, sizeof key, by_pid_tid)
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
