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
 *           -> model_oom.c       out-of-memory post-mortems (model.c hands each
 *                                the process's live blocks and sub-blocks)
 * PyTorch's allocator history adds little of its own here: its notes and its
 * SEGMENT records matched with the GPU capture's blocks (mf_torch_info).
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
#include "model_oom.h"
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

/* Where the events are with respect to a window (mf_model_options.from_*). */
enum { WINDOW_IN = 0, WINDOW_BEFORE = 1, WINDOW_AFTER = 2 };

struct mf_model_state {
    mf_model_options opt;
    int window;                      /* WINDOW_*: IN without a window */
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
    mf_ooms ooms;
    mf_torch_info torch;
    struct pending_segment *pending; /* SEGMENT records not yet matched with a block */
    size_t n_pending, cap_pending;
    char **log_warnings;             /* about the logs (mf_model_warn_log): listed first */
    size_t n_log_warnings, cap_log_warnings;
    char **warnings;                 /* fed (mf_model_warn) */
    size_t n_warnings, cap_warnings;
    char **derived;                  /* made by the last settle from the counts */
    size_t n_derived, cap_derived;
    int oom;
    mf_view **settled_views;         /* what the last settle allocated */
};

/* A SEGMENT record waiting for the GPU capture's ALLOC of its address. */
typedef struct pending_segment {
    uint64_t time_ns, addr;
    uint16_t log, device;
} pending_segment;

#define PENDING_SEGMENTS 256      /* older ones count as unmatched */

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
    mf_picture_init(&st->picture, &st->span, st->opt.tiles_by);
    mf_blocks_init(&st->blocks, st->opt.no_picture ? NULL : &st->picture);
    mf_blocks_set_observer(&st->blocks, st->opt.on_block, st->opt.on_role,
                           st->opt.on_block_ctx);
    st->blocks.no_curves = st->opt.no_curves;
    mf_sub_init(&st->sub, !st->opt.no_picture);
    mf_ooms_init(&st->ooms);
    mf_timeline_init(&st->timeline, m->strings, st->opt.no_trace);
    m->window_from_step = st->opt.from_step;
    m->window_to_step = st->opt.to_step;
    if (st->opt.from_ns || st->opt.from_step) {
        st->window = WINDOW_BEFORE;
        mf_blocks_pause(&st->blocks);
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

/* Whether a program (its argv joined by spaces) is a Python interpreter:
 * its first word's base name begins with "python" or "pypy". */
static int is_interpreter(const char *program)
{
    size_t len = strcspn(program, " ");
    const char *base = program;
    for (size_t i = 0; i < len; i++)
        if (program[i] == '/')
            base = program + i + 1;
    return strncmp(base, "python", 6) == 0 || strncmp(base, "pypy", 4) == 0;
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
    return mf_blocks_set_process(&m->state->blocks, (uint16_t)log, p->pid, info->parent >= 0,
                                 is_interpreter(p->program));
}

void mf_model_window_from(mf_model *m, uint64_t from_ns)
{
    struct mf_model_state *st = m->state;
    st->opt.from_ns = from_ns;
    if (from_ns && st->window == WINDOW_IN) {
        st->window = WINDOW_BEFORE;
        mf_blocks_pause(&st->blocks);
    }
}

void mf_model_set_sites(mf_model *m, struct mf_sites *sites)
{
    mf_sites_close(m->sites);
    m->sites = sites;
    mf_blocks_set_sites(&m->state->blocks, sites);
    mf_sub_set_sites(&m->state->sub, sites);
    mf_picture_set_sites(&m->state->picture, sites);
}

void mf_model_use_threads(mf_model *m)
{
    if (!m->state->opt.no_picture)
        mf_picture_use_thread(&m->state->picture);
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

/* The notes of PyTorch's allocator history. */
static void on_torch_note(mf_model *m, const mf_event *e, unsigned pid)
{
    mf_torch_info *t = &m->state->torch;
    uint64_t v = e->note.value;
    switch (e->note.code) {
    case MF_NOTE_TORCH_EVENT_ORDER:
        if (!t->event_order)
            mf_model_warn(m, "pid %u: the time axis is the order of PyTorch's allocator events, "
                          "1 us apart (%s)", pid,
                          v == UINT64_MAX ? "the snapshot has no trace: its final segments, at "
                                            "one moment"
                                          : "the snapshot has no time_us: PyTorch < 2.2");
        t->event_order = 1;
        break;
    case MF_NOTE_TORCH_SCOPES:
        t->scopes = (unsigned)v;
        break;
    case MF_NOTE_TORCH_HISTORY:
        t->ring = v;
        break;
    case MF_NOTE_TORCH_HISTORY_OFF:
        t->off = (unsigned)v;
        break;
    case MF_NOTE_TORCH_INCONSISTENT:
        t->inconsistent += v;
        break;
    case MF_NOTE_TORCH_PROFILER_NO_CUDA:
        if (!t->profiler_no_cuda)
            mf_model_warn(m, "pid %u: torch.profiler recorded no CUDA kernels: memflow's GPU "
                          "capture held CUPTI, which allows one client per process before CUDA "
                          "13.2 (`memflow run --set cupti=0` leaves CUPTI to torch.profiler)",
                          pid);
        t->profiler_no_cuda = 1;
        break;
    }
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
    case MF_NOTE_CPU_HEAP_OFF:
        if (e->log < m->n_processes && !m->processes[e->log].cpu_heap_off) {
            m->processes[e->log].cpu_heap_off = 1;
            mf_model_warn(m, "pid %u: its CPU heap (the malloc family: numpy arrays, CPU "
                          "tensors) was not recorded: `memflow run -- %s` records it", pid,
                          m->processes[e->log].program ? m->processes[e->log].program : "...");
        }
        break;
    case MF_NOTE_STACKS_FULL:
        mf_model_warn(m, "pid %u: the call-stack table filled up after %llu distinct stacks "
                      "(its memory budget: MF_STACKS_ARENA, runtime/stacks.h)", pid,
                      (unsigned long long)e->note.value);
        break;
    case MF_NOTE_STACKS_LOST:
        mf_model_warn(m, "pid %u: %llu allocations were recorded without their call stack (the "
                      "stack table was full)", pid, (unsigned long long)e->note.value);
        break;
    case MF_NOTE_SCOPE_OVERFLOW:
        mf_model_warn(m, "pid %u: %llu scope pushes went past the 256-deep scope stack and "
                      "were ignored", pid, (unsigned long long)e->note.value);
        break;
    default:
        on_torch_note(m, e, pid);
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

static int on_oom(mf_model *m, const mf_event *e);

/* Process image log ended: its blocks and sub-blocks end with it; one an
 * OOM killer killed gets an out-of-memory post-mortem first. */
static int on_process_end(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    if (e->log >= st->n_procs || st->procs[e->log].ended)
        return 0;
    mf_proc_state *p = &st->procs[e->log];
    p->ended = 1;
    if (e->time_ns < m->since_ns)
        return 0;
    if ((e->end.how & ~MF_EV_END_INFERRED) == MF_END_OOM_KILLED) {
        /* the post-mortem of what it held on the CPU when the OOM killer struck */
        mf_event oom = { .time_ns = e->time_ns, .type = MF_REC_OOM, .log = e->log,
                         .device = MF_DEVICE(MF_DEVICE_CPU, 0),
                         .oom = { .device_free = UINT64_MAX, .scope = MF_STRING_DEFAULT_SCOPE,
                                  .route = MF_OOM_KILLED } };
        if (on_oom(m, &oom) < 0)
            return -1;
    }
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

/* ---- PyTorch's segments against the GPU capture's blocks ---- */

static void segment_offset(mf_torch_info *t, int64_t offset)
{
    if (!t->matched || offset < t->offset_min_ns)
        t->offset_min_ns = offset;
    if (!t->matched || offset > t->offset_max_ns)
        t->offset_max_ns = offset;
    t->offset_sum_ns += offset;
    t->matched++;
}

/* SEGMENT e: a segment PyTorch allocated is matched with the GPU capture's
 * block at its address, now (the block came first) or when its ALLOC comes. */
static int on_segment(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    st->torch.history = 1;
    if (e->segment.op != MF_SEGMENT_ALLOC && e->segment.op != MF_SEGMENT_MAP)
        return 0;
    uint64_t alloc_ns;
    if (mf_blocks_alloc_time(&st->blocks, e->log, e->device, e->segment.addr, &alloc_ns)) {
        segment_offset(&st->torch, (int64_t)(e->time_ns - alloc_ns));
        return 0;
    }
    if (st->n_pending == PENDING_SEGMENTS) {
        st->torch.unmatched++;
        memmove(st->pending, st->pending + 1, --st->n_pending * sizeof *st->pending);
    }
    if (mf_grow((void **)&st->pending, &st->cap_pending, st->n_pending + 1,
                sizeof *st->pending) < 0)
        return -1;
    st->pending[st->n_pending++] = (pending_segment){ e->time_ns, e->segment.addr, e->log,
                                                      e->device };
    return 0;
}

/* A GPU block's ALLOC e: the SEGMENT record waiting for it, if any. */
static void match_pending(struct mf_model_state *st, const mf_event *e)
{
    for (size_t i = 0; i < st->n_pending; i++) {
        const pending_segment *p = &st->pending[i];
        if (p->addr == e->alloc.addr && p->device == e->device && p->log == e->log) {
            segment_offset(&st->torch, (int64_t)(p->time_ns - e->time_ns));
            st->pending[i] = st->pending[--st->n_pending];
            return;
        }
    }
}

/* The view of process log on device if it has one, else -1. */
static int64_t find_view(const mf_model *m, uint16_t log, uint16_t device)
{
    const struct mf_model_state *st = m->state;
    int slot = st->device_slot[device];
    if (slot < 0 || log >= st->n_procs || (size_t)slot >= st->procs[log].n_view_of ||
        !st->procs[log].view_of[slot])
        return -1;
    return (int64_t)st->procs[log].view_of[slot] - 1;
}

/* OOM e: its post-mortem from what the process holds on the device now. */
static int on_oom(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    mf_oom_probe *p = mf_ooms_begin(&st->ooms, e, pid_of(m, e), st->span.t0, m->sites);
    if (!p) {
        if (st->ooms.oom)
            return -1;
        if (st->opt.on_oom) {        /* past the ones analysed: what it asked, and when */
            mf_oom head = mf_oom_head(e, pid_of(m, e), st->span.t0, m->sites);
            st->opt.on_oom(st->opt.on_block_ctx, &head, 0);
        }
        return 0;
    }
    int64_t view = find_view(m, e->log, e->device);
    if (view >= 0)
        mf_blocks_each_live(&st->blocks, e->log, (uint32_t)view, e->device, mf_oom_probe_block,
                            p);
    mf_sub_each_live(&st->sub, e->log, e->device, mf_oom_probe_sub, p);
    if (mf_ooms_end(&st->ooms, p) < 0)
        return -1;
    if (st->opt.on_oom)
        st->opt.on_oom(st->opt.on_block_ctx, &st->ooms.kept[st->ooms.n - 1], 1);
    return 0;
}

static int on_alloc(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    uint32_t view;
    if (e->alloc.flags & MF_FLAG_SUBBLOCK) {
        st->torch.history |= MF_DEVICE_KIND(e->device) == MF_DEVICE_GPU &&
                             mf_sub_device_of(&st->sub, e) == e->device;
        uint32_t steps;
        int training = mf_blocks_training(&st->blocks, e->log, &steps);
        return view_of(m, e->log, mf_sub_device_of(&st->sub, e), &view) < 0
                   ? -1 : mf_sub_on_alloc(&st->sub, e, view, training, steps);
    }
    if (st->n_pending && MF_DEVICE_KIND(e->device) == MF_DEVICE_GPU)
        match_pending(st, e);
    return view_of(m, e->log, e->device, &view) < 0 ? -1 : mf_blocks_on_alloc(&st->blocks, e, view);
}

static int on_free(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    if (e->free.flags & MF_FLAG_SUBBLOCK) {
        uint32_t steps;
        mf_blocks_training(&st->blocks, e->log, &steps);
        return mf_sub_on_free(&st->sub, e, steps);
    }
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
    if (e->trace.kind == MF_TRACE_REGION_NAME)
        return mf_sub_on_name(&m->state->sub, e) < 0 ? -1 : 0;
    if (e->trace.kind == MF_TRACE_BLOCK_NAME) {
        /* the tensor (a sub-block in a segment) that starts there first:
         * the more specific; else the block */
        int sub = mf_sub_on_name(&m->state->sub, e);
        return sub < 0 ? -1 : mf_blocks_on_name(&m->state->blocks, e, sub);
    }
    if (e->trace.kind == MF_TRACE_FREE_REQUESTED) {
        mf_sub_on_release(&m->state->sub, e);
        return 0;
    }
    if (e->trace.kind == MF_TRACE_STEP &&
        (mf_blocks_on_step(&m->state->blocks, e, pid_of(m, e)) < 0 ||
         mf_sub_on_step(&m->state->sub, e) < 0))
        return -1;
    return mf_timeline_on_object(&m->state->timeline, e, pid_of(m, e));
}

/* ---- a window ------------------------------------------------------------------- */

static int is_step(const mf_event *e, uint64_t number)
{
    return e->type == MF_REC_TRACE && e->trace.kind == MF_TRACE_STEP && e->trace.value == number;
}

/* Before the window: blocks are followed (allocated, freed, named, ended
 * with their process) so that those live on entry are known; nothing else.
 * 1 (handled), or -1 when out of memory. */
static int follow(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    int rc = 0;
    if (e->type == MF_REC_ALLOC && !(e->alloc.flags & MF_FLAG_SUBBLOCK))
        rc = on_alloc(m, e);
    else if (e->type == MF_REC_FREE && !(e->free.flags & MF_FLAG_SUBBLOCK))
        rc = mf_blocks_on_free(&st->blocks, e) < 0 ? -1 : 0;
    else if (e->type == MF_EV_PROCESS_END)
        rc = on_process_end(m, e);
    else if (e->type == MF_REC_TRACE && e->trace.kind == MF_TRACE_BLOCK_NAME)
        rc = mf_blocks_on_name(&st->blocks, e, 0);
    else if (e->type == MF_REC_TRACE && e->trace.kind == MF_TRACE_STEP)
        rc = mf_blocks_on_step(&st->blocks, e, pid_of(m, e));
    return rc < 0 ? -1 : 1;
}

/* Whether e lies outside the window: 1 (then it was handled: followed
 * before the window, left out after it), 0 (inside: feed it), or -1 when
 * out of memory.  The window begins at its start time, or at its first
 * step's mark, with every block live then counted as live on entry. */
static int outside_window(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    if (st->window == WINDOW_AFTER)
        return 1;
    if (st->window == WINDOW_IN) {
        if (!st->opt.to_step || !is_step(e, st->opt.to_step + 1))
            return 0;
        st->window = WINDOW_AFTER;     /* the mark of the step after the last one */
        m->until_ns = e->time_ns;
        st->span.t1 = e->time_ns > st->span.t1 ? e->time_ns : st->span.t1;
        return 1;
    }
    uint64_t start;
    if (st->opt.from_step && is_step(e, st->opt.from_step))
        start = e->time_ns;
    else if (!st->opt.from_step && e->time_ns >= st->opt.from_ns)
        start = st->opt.from_ns;
    else
        return follow(m, e);
    st->window = WINDOW_IN;
    m->since_ns = start;
    st->span.t0 = start < st->span.t0 ? start : st->span.t0;
    st->span.t1 = start > st->span.t1 ? start : st->span.t1;
    return mf_blocks_enter(&st->blocks, start) < 0 ? -1 : 0;
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
    int outside = st->window == WINDOW_IN && !st->opt.to_step ? 0 : outside_window(m, e);
    if (outside)
        return outside < 0 ? -1 : 0;
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
    case MF_REC_OOM: return on_oom(m, e);
    case MF_REC_SEGMENT: return on_segment(m, e);
    default: return 0;          /* STATE: not part of the model */
    }
}

#define PREFETCH_SLOT 8      /* events ahead: the live table's slot of a key */
#define PREFETCH_BLOCK 4     /* and the live block it names */
#define AHEAD 16             /* > PREFETCH_SLOT: key hashes of the events ahead, by index */

/* Event i of the batch, PREFETCH_SLOT events ahead: its key hash, kept for
 * the hint at PREFETCH_BLOCK and for the live table when it is fed, and
 * its table slot asked for. */
static MF_ALWAYS_INLINE void look_ahead(struct mf_model_state *st, const mf_event *e, size_t i,
                                        uint32_t hash[AHEAD], uint8_t keyed[AHEAD])
{
    hash[i % AHEAD] = 0;
    keyed[i % AHEAD] = (uint8_t)mf_blocks_event_hash(e, &hash[i % AHEAD]);
    if (keyed[i % AHEAD])
        mf_blocks_prefetch(&st->blocks, e, hash[i % AHEAD], 0);
}

int mf_model_feed(mf_model *m, const mf_event *events, size_t n,
                  const mf_sample_values *samples)
{
    struct mf_model_state *st = m->state;
    /* the live table misses the cache: its slots and blocks are asked for
     * a few events before they are needed, and each key is hashed once */
    uint32_t hash[AHEAD];
    uint8_t keyed[AHEAD];
    for (size_t i = 0; i < n && i < PREFETCH_SLOT; i++)
        look_ahead(st, &events[i], i, hash, keyed);
    for (size_t i = 0; i < n && !st->oom; i++) {
        const mf_event *e = &events[i];
        if (i + PREFETCH_SLOT < n)
            look_ahead(st, &events[i + PREFETCH_SLOT], i + PREFETCH_SLOT, hash, keyed);
        size_t k = (i + PREFETCH_BLOCK) % AHEAD;
        if (i + PREFETCH_BLOCK < n && keyed[k])
            mf_blocks_prefetch(&st->blocks, &events[i + PREFETCH_BLOCK], hash[k], 1);
        mf_blocks_at_hand(&st->blocks, keyed[i % AHEAD] ? e : NULL, hash[i % AHEAD]);
        if ((e->log >= st->n_procs && grow_processes(m, e->log) < 0) ||
            feed_one(m, e, samples) < 0)
            st->oom = 1;
    }
    mf_blocks_at_hand(&st->blocks, NULL, 0);
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

/* One pid's largest peak over its views, and whether it is an interpreter. */
typedef struct pid_peak {
    uint32_t pid;
    int interpreter;
    uint64_t peak;
} pid_peak;

static int by_pid(const void *a, const void *b)
{
    uint32_t x = ((const pid_peak *)a)->pid, y = ((const pid_peak *)b)->pid;
    return x < y ? -1 : x > y;
}

/* The pid's entry in t[0..n), sorted by pid, or NULL. */
static pid_peak *find_pid(pid_peak *t, size_t n, uint32_t pid)
{
    pid_peak key = { .pid = pid };
    return n ? bsearch(&key, t, n, sizeof *t, by_pid) : NULL;
}

/* Each process's interpreter flag and largest peak, on its views too; the
 * largest process peak.  0, or -1 when out of memory. */
static int settle_processes(mf_model *m)
{
    struct mf_model_state *st = m->state;
    pid_peak *t = calloc(m->n_processes ? m->n_processes : 1, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < m->n_processes; i++) {
        m->processes[i].interpreter = mf_blocks_interpreter(&st->blocks, (uint16_t)i);
        t[i] = (pid_peak){ m->processes[i].pid, m->processes[i].interpreter, 0 };
    }
    qsort(t, m->n_processes, sizeof *t, by_pid);
    size_t n = 0;
    for (size_t i = 0; i < m->n_processes; i++) {   /* one entry per pid */
        if (n && t[n - 1].pid == t[i].pid)
            t[n - 1].interpreter |= t[i].interpreter;
        else
            t[n++] = t[i];
    }
    for (size_t i = 0; i < st->n_views; i++) {
        pid_peak *p = find_pid(t, n, st->views[i]->pid);
        if (p && st->views[i]->peak_bytes > p->peak)
            p->peak = st->views[i]->peak_bytes;
    }
    m->largest_process_peak = 0;
    for (size_t i = 0; i < st->n_views; i++) {
        const pid_peak *p = find_pid(t, n, st->views[i]->pid);
        st->views[i]->process_peak = p ? p->peak : st->views[i]->peak_bytes;
        st->views[i]->interpreter = p && p->interpreter;
    }
    for (size_t i = 0; i < m->n_processes; i++) {
        const pid_peak *p = find_pid(t, n, m->processes[i].pid);
        m->processes[i].peak_bytes = p ? p->peak : 0;
        m->processes[i].interpreter = p && p->interpreter;
        if (m->processes[i].peak_bytes > m->largest_process_peak)
            m->largest_process_peak = m->processes[i].peak_bytes;
    }
    free(t);
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
    m->window_missing = st->window == WINDOW_BEFORE;
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
    mf_ooms_settle(&st->ooms, m);
    m->torch = st->torch;
    m->torch.unmatched += st->n_pending;
    if (settle_processes(m) < 0)
        return -1;
    if (mf_blocks_settle(&st->blocks, m) < 0 || mf_sub_settle(&st->sub, m) < 0 ||
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
        mf_ooms_free(&st->ooms);
        free(st->pending);
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

static const char *const role_names[MF_ROLES] = {
    "unknown", "parameter", "gradient", "optimizer_state", "activation", "input", "temporary",
    "other",
};

const char *mf_role_name(unsigned role)
{
    return role_names[role & MF_ROLE_MASK];
}

int mf_role_parse(const char *text, unsigned *role)
{
    for (unsigned i = 0; text && i < MF_ROLES; i++)
        if (strcmp(text, role_names[i]) == 0) {
            *role = i;
            return 0;
        }
    return -1;
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
