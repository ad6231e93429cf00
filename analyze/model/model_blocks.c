/*
 * model_blocks.c - blocks (see model_blocks.h): an allocation starts one,
 * a free, an allocation over its still-live address, or its process's end
 * ends it.  Each change updates the counts, the occupancy curves and peaks,
 * and the per-scope statistics of the device and of the process's view, in
 * O(1); an ended block goes to the picture (model_picture.c), and, never
 * freed, to the leaks.  See model.h for what each count means.
 */
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "grow.h"
#include "keyed.h"
#include "model_blocks.h"
#include "series.h"
#include "sites.h"

/* Budgets: what the blocks keep at most, whatever the log. */
#define DEVICE_POINTS (1u << 17)      /* occupancy points per device */
#define DEVICE_SNAPSHOTS 30000u       /* samples per device */
#define VIEW_POINTS_ALL (1u << 20)    /* occupancy points, all views together */
#define VIEW_POINTS_MIN 1024u
#define VIEW_POINTS_MAX 16384u
#define VIEW_SNAPSHOTS 4096u
#define STACKS_KEPT 65536u            /* stacks counted one by one, per device */

typedef struct mf_blocks_device {
    uint16_t device;
    mf_counts counts;
    mf_kind_stat kinds[MF_MODEL_KINDS];
    uint64_t use_min_bytes;   /* MXNet's usage counter: its smallest value */
    double use_sum_bytes;     /* and its values summed (mf_device_model) */
    mf_series occupancy;
    mf_snapshots snapshots;
    uint64_t epoch;           /* peaks reached */
    mf_keyed scopes;          /* by scope string id */
    mf_keyed sites;           /* by site id (sites.h), when the logs have stacks */
    mf_keyed stacks;          /* by stack id, for the stacks live at the peak */
    uint64_t held_actual;     /* actual bytes held now */
    uint64_t unfreed_bytes, unfreed_count;   /* ended with their process */
    mf_scope_stat *scopes_out, *sites_out;   /* what the last settle made */
    mf_stack_share *stacks_out;
} mf_blocks_device;

typedef struct mf_blocks_view {
    uint32_t slot;            /* its device's */
    uint32_t pid;
    mf_counts counts;
    mf_series occupancy;
    mf_snapshots snapshots;
    uint64_t epoch;           /* peaks reached */
    uint64_t held_actual;     /* actual bytes held now */
    uint64_t unfreed_bytes, unfreed_count;   /* ended with their process */
} mf_blocks_view;

typedef struct mf_blocks_process {
    uint32_t pid;
    int forked;
    mf_block *gpu_unfreed;    /* GPU blocks it held when it ended */
    size_t n_gpu_unfreed, cap_gpu_unfreed;
} mf_blocks_process;

void mf_blocks_init(mf_blocks *b, mf_picture *picture)
{
    memset(b, 0, sizeof *b);
    b->picture = picture;
    b->view_points = VIEW_POINTS_MAX;
}

void mf_blocks_set_observer(mf_blocks *b, void (*fn)(void *ctx, const mf_block *blk, int ended),
                            void *ctx)
{
    b->on_block = fn;
    b->on_block_ctx = ctx;
}

void mf_blocks_set_sites(mf_blocks *b, struct mf_sites *sites)
{
    b->sites = sites;
}

int mf_blocks_add_device(mf_blocks *b, uint16_t device)
{
    mf_blocks_device *d = calloc(1, sizeof *d);
    if (!d || mf_grow((void **)&b->devs, &b->cap_devs, b->n_devs + 1, sizeof *b->devs) < 0) {
        free(d);
        return -1;
    }
    d->device = device;
    d->counts.min_addr = UINT64_MAX;
    mf_series_init(&d->occupancy, DEVICE_POINTS);
    mf_snapshots_init(&d->snapshots, DEVICE_SNAPSHOTS);
    d->stacks.limit = STACKS_KEPT;
    b->devs[b->n_devs++] = d;
    return 0;
}

int mf_blocks_add_view(mf_blocks *b, uint32_t slot, uint32_t pid)
{
    mf_blocks_view *v = calloc(1, sizeof *v);
    if (!v || mf_grow((void **)&b->views, &b->cap_views, b->n_views + 1, sizeof *b->views) < 0) {
        free(v);
        return -1;
    }
    v->slot = slot;
    v->pid = pid;
    v->counts.min_addr = UINT64_MAX;
    mf_series_init(&v->occupancy, b->view_points);
    mf_snapshots_init(&v->snapshots, VIEW_SNAPSHOTS);
    b->views[b->n_views++] = v;
    size_t points = mf_budget_share(VIEW_POINTS_ALL, b->n_views, VIEW_POINTS_MIN,
                                    VIEW_POINTS_MAX);
    if (points != b->view_points) {
        b->view_points = points;
        for (size_t i = 0; i < b->n_views; i++)
            mf_series_set_limit(&b->views[i]->occupancy, points);
    }
    return 0;
}

/* The state of process image log, created if new; NULL when out of memory. */
static mf_blocks_process *process(mf_blocks *b, uint16_t log)
{
    if (log >= b->n_procs) {
        mf_blocks_process *procs = realloc(b->procs, ((size_t)log + 1) * sizeof *procs);
        if (!procs)
            return NULL;
        memset(procs + b->n_procs, 0, ((size_t)log + 1 - b->n_procs) * sizeof *procs);
        b->procs = procs;
        b->n_procs = (size_t)log + 1;
    }
    return &b->procs[log];
}

int mf_blocks_set_process(mf_blocks *b, uint16_t log, uint32_t pid, int forked)
{
    mf_blocks_process *p = process(b, log);
    if (!p)
        return -1;
    p->pid = pid;
    p->forked = forked;
    return 0;
}

/* ---- scopes, sites and stacks ------------------------------------------------- */

/* The entry of key in t, created if new; NULL (and oom) when out of memory. */
static mf_keyed_entry *keyed(mf_blocks *b, mf_keyed *t, uint32_t key)
{
    mf_keyed_entry *s = mf_keyed_get(t, key);
    if (!s)
        b->oom = 1;
    return s;
}

/* The site and stack entries of a block's stack (when the model has sites). */
static void dev_site(mf_blocks *b, mf_blocks_device *d, uint32_t stack, mf_keyed_entry **site,
                     mf_keyed_entry **st)
{
    *site = keyed(b, &d->sites, mf_sites_of_stack(b->sites, stack));
    *st = keyed(b, &d->stacks, stack);
}

/* ---- counts -------------------------------------------------------------------- */

static void counts_alloc(mf_counts *c, uint64_t addr, uint64_t requested, uint64_t actual)
{
    c->alloc_count++;
    c->alloc_bytes += requested;
    c->alloc_actual_bytes += actual;
    if (c->alloc_count == 1 || requested < c->min_size)
        c->min_size = requested;
    c->max_size = requested > c->max_size ? requested : c->max_size;
    uint64_t extent = actual > requested ? actual : requested;
    uint64_t end = extent > UINT64_MAX - addr ? UINT64_MAX : addr + extent;
    c->min_addr = addr < c->min_addr ? addr : c->min_addr;
    c->max_addr = end > c->max_addr ? end : c->max_addr;
    c->held_bytes += requested;
    c->held_count++;
}

/* MXNet's usage counter of a device took a new value (after an allocation,
 * or a free that ended a block). */
static void counter_update(mf_blocks_device *d)
{
    if (d->counts.alloc_count + d->counts.free_count == 1 ||
        d->counts.held_bytes < d->use_min_bytes)
        d->use_min_bytes = d->counts.held_bytes;
    d->use_sum_bytes += (double)d->counts.held_bytes;
}

/* A new peak: its value, its first moment, and one more epoch. */
static void counts_peak(mf_counts *c, uint64_t *epoch, uint64_t time_ns)
{
    if (c->held_bytes > c->peak_bytes) {
        c->peak_bytes = c->held_bytes;
        c->peak_time_ns = time_ns;
        (*epoch)++;
    }
}

static mf_kind_stat *kind_of(mf_blocks_device *d, uint16_t flags)
{
    return &d->kinds[((flags & MF_MEMKIND_MASK) >> MF_MEMKIND_SHIFT) % MF_MODEL_KINDS];
}

static void add_points(mf_blocks *b, mf_blocks_device *d, mf_blocks_view *v, uint64_t time_ns)
{
    if (b->no_curves)
        return;
    if (mf_series_add(&d->occupancy, time_ns, d->counts.held_bytes, d->held_actual) < 0 ||
        mf_series_add(&v->occupancy, time_ns, v->counts.held_bytes, v->held_actual) < 0)
        b->oom = 1;
}

/* ---- the life of a block -------------------------------------------------------------- */

/* The block of live entry e as it stands at the model's end. */
static void live_block(const mf_blocks *b, const mf_live *e, mf_block *out)
{
    *out = (mf_block){
        .addr = e->addr, .requested = e->requested, .actual = e->actual,
        .alloc_ns = e->alloc_ns, .free_ns = MF_LIVE_AT_END, .scope = e->scope, .name = e->name,
        .tid = e->tid, .pid = e->log < b->n_procs ? b->procs[e->log].pid : 0, .stack = e->stack,
        .device = e->device, .flags = e->flags, .end = MF_BLOCK_LIVE,
    };
}

static int by_requested_worse(const void *pa, const void *pb)
{
    const mf_block *a = pa, *b = pb;     /* a ranks below b: smaller, later, higher */
    if (a->requested != b->requested)
        return a->requested < b->requested;
    if (a->alloc_ns != b->alloc_ns)
        return a->alloc_ns > b->alloc_ns;
    return a->addr > b->addr;
}

static uint64_t requested_key(const void *b)
{
    return ((const mf_block *)b)->requested;
}

/* A block its process ended with: a leak candidate, and on a GPU one of
 * the blocks MXNet's CSV lists. */
static void keep_unfreed(mf_blocks *b, uint16_t log, const mf_block *blk)
{
    if (!b->leaks.worse)
        mf_topk_init(&b->leaks, sizeof(mf_block), MF_MODEL_LEAKS, 0, by_requested_worse, NULL,
                     requested_key);
    if (mf_topk_offer(&b->leaks, blk, NULL) < 0)
        b->oom = 1;
    if (MF_DEVICE_KIND(blk->device) != MF_DEVICE_GPU)
        return;
    mf_blocks_process *p = process(b, log);
    if (!p || mf_grow((void **)&p->gpu_unfreed, &p->cap_gpu_unfreed, p->n_gpu_unfreed + 1,
                      sizeof *p->gpu_unfreed) < 0)
        b->oom = 1;
    else
        p->gpu_unfreed[p->n_gpu_unfreed++] = *blk;
}

/* End live block id at time_ns, the way `how` says (a process's end adds
 * its curve points once, after all its blocks). */
static void end_block(mf_blocks *b, uint32_t id, unsigned how, uint64_t time_ns)
{
    const mf_live *e = mf_live_get(&b->live, id);
    mf_blocks_view *v = b->views[e->view];
    mf_blocks_device *d = b->devs[v->slot];
    uint64_t req = e->requested;
    d->counts.held_bytes -= req;
    d->counts.held_count--;
    d->held_actual -= e->actual;
    v->counts.held_bytes -= req;
    v->counts.held_count--;
    v->held_actual -= e->actual;
    mf_keyed_entry *ds = keyed(b, &d->scopes, e->scope), *site = NULL, *stack = NULL;
    if (ds)
        mf_scope_held_change(&ds->held, d->epoch, -(int64_t)req, -1);
    if (b->sites)
        dev_site(b, d, e->stack, &site, &stack);
    if (site)
        mf_scope_held_change(&site->held, d->epoch, -(int64_t)req, -1);
    if (stack)
        mf_scope_held_change(&stack->held, d->epoch, -(int64_t)req, -1);
    if (how == MF_BLOCK_FREED) {
        d->counts.free_count++;
        counter_update(d);
        v->counts.free_count++;
        if (ds)
            ds->s.free_count++;
        if (site)
            site->s.free_count++;
    }
    if (how == MF_BLOCK_PROCESS_ENDED) {
        d->unfreed_bytes += req;
        d->unfreed_count++;
        v->unfreed_bytes += req;
        v->unfreed_count++;
        if (ds) {
            ds->s.live_bytes_end += req;
            ds->s.live_count_end++;
        }
        if (site) {
            site->s.live_bytes_end += req;
            site->s.live_count_end++;
        }
    } else {
        kind_of(d, e->flags)->live_bytes_end -= req;
        add_points(b, d, v, time_ns);
    }
    mf_block blk = {
        .addr = e->addr, .requested = req, .actual = e->actual, .alloc_ns = e->alloc_ns,
        .free_ns = time_ns, .scope = e->scope, .name = e->name, .tid = e->tid,
        .pid = v->pid, .stack = e->stack, .device = e->device, .flags = e->flags,
        .end = (uint8_t)how,
    };
    if (how == MF_BLOCK_PROCESS_ENDED)
        keep_unfreed(b, e->log, &blk);
    if (b->picture && mf_picture_retire(b->picture, e->view, v->epoch, &blk) < 0)
        b->oom = 1;
    if (b->on_block)
        b->on_block(b->on_block_ctx, &blk, 1);
    mf_live_remove(&b->live, id);
}

int mf_blocks_on_alloc(mf_blocks *b, const mf_event *e, uint32_t view)
{
    const mf_ev_alloc *a = &e->alloc;
    mf_blocks_view *v = b->views[view];
    mf_blocks_device *d = b->devs[v->slot];
    uint32_t old = mf_live_find(&b->live, e->log, e->device, a->flags, a->addr);
    if (old) {
        end_block(b, old, MF_BLOCK_REPLACED, e->time_ns);
        d->counts.replaced_blocks++;
        v->counts.replaced_blocks++;
    }
    mf_live l = {
        .addr = a->addr, .requested = a->requested, .actual = a->actual, .alloc_ns = e->time_ns,
        .scope = a->scope, .name = a->name, .tid = e->tid, .stack = a->stack,
        .view = view, .device = e->device, .flags = a->flags, .log = e->log,
    };
    if (!mf_live_insert(&b->live, &l))
        return -1;
    if (b->on_block) {
        mf_block told = {
            .addr = a->addr, .requested = a->requested, .actual = a->actual,
            .alloc_ns = e->time_ns, .free_ns = MF_LIVE_AT_END, .scope = a->scope,
            .name = a->name, .tid = e->tid, .pid = v->pid, .stack = a->stack,
            .device = e->device, .flags = a->flags, .end = MF_BLOCK_LIVE,
        };
        b->on_block(b->on_block_ctx, &told, 0);
    }
    counts_alloc(&d->counts, a->addr, a->requested, a->actual);
    counter_update(d);
    counts_alloc(&v->counts, a->addr, a->requested, a->actual);
    d->held_actual += a->actual;
    v->held_actual += a->actual;
    mf_kind_stat *k = kind_of(d, a->flags);
    k->alloc_count++;
    k->alloc_bytes += a->requested;
    k->live_bytes_end += a->requested;
    mf_keyed_entry *ds = keyed(b, &d->scopes, a->scope), *site = NULL, *stack = NULL;
    if (ds)
        mf_keyed_alloc(ds, d->epoch, a->requested, e->time_ns);
    if (b->sites)
        dev_site(b, d, a->stack, &site, &stack);
    if (site)
        mf_keyed_alloc(site, d->epoch, a->requested, e->time_ns);
    if (stack)
        mf_scope_held_change(&stack->held, d->epoch, (int64_t)a->requested, 1);
    if (b->picture && mf_picture_alloc(b->picture, view, v->epoch, &l) < 0)
        return -1;
    counts_peak(&d->counts, &d->epoch, e->time_ns);
    counts_peak(&v->counts, &v->epoch, e->time_ns);
    add_points(b, d, v, e->time_ns);
    return b->oom ? -1 : 0;
}

int mf_blocks_on_free(mf_blocks *b, const mf_event *e)
{
    uint32_t id = mf_live_find(&b->live, e->log, e->device, e->free.flags, e->free.addr);
    if (!id)
        return 0;
    end_block(b, id, MF_BLOCK_FREED, e->time_ns);
    return b->oom ? -1 : 1;
}

void mf_blocks_on_name(mf_blocks *b, const mf_event *e)
{
    const mf_ev_trace *t = &e->trace;
    uint16_t device = (uint16_t)t->arg;
    uint32_t id = mf_live_find(&b->live, e->log, device, 0, t->value);
    if (!id)
        id = mf_live_find(&b->live, e->log, device, MF_FLAG_EXPLICIT, t->value);
    if (id)
        mf_live_get(&b->live, id)->name = t->name;
}

void mf_blocks_on_unknown_free(mf_blocks *b, const mf_event *e, uint32_t view)
{
    mf_blocks_view *v = b->views[view];
    mf_blocks_device *d = b->devs[v->slot];
    /* A forked child starts as a copy of its parent's heap: a free of an
     * address it never allocated frees memory it inherited at the fork
     * (whether or not the parent still holds its own copy). */
    if (e->log < b->n_procs && b->procs[e->log].forked) {
        d->counts.inherited_frees++;
        v->counts.inherited_frees++;
        return;
    }
    d->counts.unknown_frees++;
    v->counts.unknown_frees++;
}

int mf_blocks_on_process_end(mf_blocks *b, uint16_t log, uint64_t time_ns,
                             const uint32_t *view_of, size_t n_view_of)
{
    int any = 0;
    for (uint32_t id = mf_live_first(&b->live, log); id;) {
        uint32_t next = mf_live_get(&b->live, id)->next;
        end_block(b, id, MF_BLOCK_PROCESS_ENDED, time_ns);
        id = next;
        any = 1;
    }
    if (!any)
        return b->oom ? -1 : 0;
    for (size_t slot = 0; slot < n_view_of; slot++)
        if (view_of[slot])
            add_points(b, b->devs[slot], b->views[view_of[slot] - 1], time_ns);
    return b->oom ? -1 : 1;
}

int mf_blocks_on_sample(mf_blocks *b, const mf_event *e, uint32_t view,
                        const mf_sample_values *values)
{
    mf_blocks_view *v = b->views[view];
    mf_blocks_device *d = b->devs[v->slot];
    mf_snapshot s = { .time_ns = e->time_ns, .events_live = d->counts.held_bytes };
    memcpy(s.value, values->value, sizeof s.value);
    if (mf_snapshots_add(&d->snapshots, &s) < 0)
        b->oom = 1;
    s.events_live = v->counts.held_bytes;
    if (mf_snapshots_add(&v->snapshots, &s) < 0)
        b->oom = 1;
    return b->oom ? -1 : 0;
}

uint16_t mf_blocks_gpu_block_device(const mf_blocks *b, uint16_t log, uint64_t addr,
                                    uint16_t fallback)
{
    for (size_t i = 0; i < b->n_devs; i++) {
        uint16_t dev = b->devs[i]->device;
        if (MF_DEVICE_KIND(dev) == MF_DEVICE_GPU &&
            (mf_live_find(&b->live, log, dev, 0, addr) ||
             mf_live_find(&b->live, log, dev, MF_FLAG_EXPLICIT, addr)))
            return dev;
    }
    return fallback;
}

uint64_t mf_blocks_view_epoch(const mf_blocks *b, uint32_t view)
{
    return b->views[view]->epoch;
}

int mf_blocks_each_live(const mf_blocks *b, uint16_t log, uint32_t view, uint16_t device,
                        int (*fn)(const mf_block *blk, void *ctx), void *ctx)
{
    for (uint32_t id = mf_live_first(&b->live, log); id;) {
        const mf_live *e = mf_live_get(&b->live, id);
        id = e->next;
        if (e->view != view || e->device != device)
            continue;
        mf_block blk;
        live_block(b, e, &blk);
        int rc = fn(&blk, ctx);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- settling ------------------------------------------------------------------- */

/* The stacks that held bytes at the device's peak, by stack id. */
static int settle_peak_stacks(mf_blocks_device *d, mf_device_model *out)
{
    free(d->stacks_out);
    d->stacks_out = NULL;
    mf_scope_stat *all = mf_keyed_settle(&d->stacks, d->epoch, d->counts.peak_bytes);
    if (!all)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < d->stacks.n; i++)
        if (all[i].at_peak_count)
            all[n++] = all[i];
    d->stacks_out = malloc((n ? n : 1) * sizeof *d->stacks_out);
    for (size_t i = 0; d->stacks_out && i < n; i++)
        d->stacks_out[i] = (mf_stack_share){ all[i].scope, all[i].at_peak_bytes,
                                             all[i].at_peak_count };
    free(all);
    out->peak_stacks = d->stacks_out;
    out->n_peak_stacks = d->stacks_out ? n : 0;
    return d->stacks_out ? 0 : -1;
}

int mf_blocks_settle_device(mf_blocks *b, uint32_t slot, mf_device_model *out)
{
    mf_blocks_device *d = b->devs[slot];
    out->counts = d->counts;
    out->use_min_bytes = d->use_min_bytes;
    out->use_sum_bytes = d->use_sum_bytes;
    memcpy(out->kinds, d->kinds, sizeof out->kinds);
    out->occupancy = mf_series_points(&d->occupancy, &out->n_occupancy);
    out->occupancy_points = d->occupancy.added;
    out->snapshots = mf_snapshots_items(&d->snapshots, &out->n_snapshots);
    out->snapshots_added = d->snapshots.added;
    free(d->scopes_out);
    free(d->sites_out);
    d->sites_out = NULL;
    out->sites = NULL;
    out->n_sites = 0;
    if (!(out->scopes = d->scopes_out = mf_keyed_settle(&d->scopes, d->epoch,
                                                          d->counts.peak_bytes)))
        return -1;
    out->n_scopes = d->scopes.n;
    out->peak_stacks = d->stacks_out;
    if (b->sites) {
        if (!(out->sites = d->sites_out = mf_keyed_settle(&d->sites, d->epoch,
                                                            d->counts.peak_bytes)) ||
            settle_peak_stacks(d, out) < 0)
            return -1;
        out->n_sites = d->sites.n;
    }
    out->live_bytes_end = d->unfreed_bytes + d->counts.held_bytes;
    out->live_count_end = d->unfreed_count + d->counts.held_count;
    if (out->min_addr == UINT64_MAX)
        out->min_addr = 0;
    if (out->alloc_count == 0)
        out->min_size = 0;
    return 0;
}

int mf_blocks_settle_view(mf_blocks *b, uint32_t view, mf_view *out)
{
    mf_blocks_view *v = b->views[view];
    out->counts = v->counts;
    out->occupancy = mf_series_points(&v->occupancy, &out->n_occupancy);
    out->occupancy_points = v->occupancy.added;
    out->snapshots = mf_snapshots_items(&v->snapshots, &out->n_snapshots);
    out->live_bytes_end = v->unfreed_bytes + v->counts.held_bytes;
    out->live_count_end = v->unfreed_count + v->counts.held_count;
    out->live_blocks = v->counts.held_count;
    if (out->min_addr == UINT64_MAX)
        out->min_addr = 0;
    return 0;
}

/* The largest blocks never freed: those that ended with their process, and
 * those live now. */
static int settle_leaks(mf_blocks *b, mf_model *out)
{
    mf_topk all;
    mf_topk_init(&all, sizeof(mf_block), MF_MODEL_LEAKS, 0, by_requested_worse, NULL,
                 requested_key);
    for (size_t i = 0; i < b->leaks.n; i++)
        if (mf_topk_offer(&all, mf_topk_item(&b->leaks, i), NULL) < 0)
            return -1;
    for (size_t log = 0; log < b->live.n_logs; log++)
        for (uint32_t id = mf_live_first(&b->live, (uint16_t)log); id;) {
            const mf_live *e = mf_live_get(&b->live, id);
            mf_block blk;
            live_block(b, e, &blk);
            if (mf_topk_offer(&all, &blk, NULL) < 0)
                return -1;
            id = e->next;
        }
    free(b->leaks_out);
    out->leaks = b->leaks_out = malloc((all.n ? all.n : 1) * sizeof *b->leaks_out);
    int rc = b->leaks_out ? mf_topk_sorted(&all, b->leaks_out) : -1;
    out->n_leaks = rc == 0 ? all.n : 0;
    mf_topk_free(&all);
    return rc;
}

/* Every GPU block never freed (MXNet's CSV lists them per process). */
static int settle_gpu(mf_blocks *b, size_t n_logs, mf_model *out)
{
    size_t n = 0, cap = 0;
    mf_block *all = NULL;
    for (size_t log = 0; log < n_logs; log++) {
        const mf_blocks_process *p = log < b->n_procs ? &b->procs[log] : NULL;
        for (size_t i = 0; p && i < p->n_gpu_unfreed; i++) {
            if (mf_grow((void **)&all, &cap, n + 1, sizeof *all) < 0)
                goto oom;
            all[n++] = p->gpu_unfreed[i];
        }
        for (uint32_t id = mf_live_first(&b->live, (uint16_t)log); id;) {
            const mf_live *e = mf_live_get(&b->live, id);
            id = e->next;
            if (MF_DEVICE_KIND(e->device) != MF_DEVICE_GPU)
                continue;
            if (mf_grow((void **)&all, &cap, n + 1, sizeof *all) < 0)
                goto oom;
            live_block(b, e, &all[n++]);
        }
    }
    free(b->gpu_out);
    out->gpu_live = b->gpu_out = all;
    out->n_gpu_live = n;
    return 0;
oom:
    free(all);
    return -1;
}

int mf_blocks_settle(mf_blocks *b, mf_model *out)
{
    return settle_leaks(b, out) < 0 || settle_gpu(b, out->n_processes, out) < 0 ? -1 : 0;
}

void mf_blocks_free(mf_blocks *b)
{
    for (size_t i = 0; i < b->n_devs; i++) {
        mf_blocks_device *d = b->devs[i];
        mf_series_free(&d->occupancy);
        mf_snapshots_free(&d->snapshots);
        mf_keyed_free(&d->scopes);
        mf_keyed_free(&d->sites);
        mf_keyed_free(&d->stacks);
        free(d->scopes_out);
        free(d->sites_out);
        free(d->stacks_out);
        free(d);
    }
    free(b->devs);
    for (size_t i = 0; i < b->n_views; i++) {
        mf_series_free(&b->views[i]->occupancy);
        mf_snapshots_free(&b->views[i]->snapshots);
        free(b->views[i]);
    }
    free(b->views);
    for (size_t i = 0; i < b->n_procs; i++)
        free(b->procs[i].gpu_unfreed);
    free(b->procs);
    mf_live_free(&b->live);
    mf_topk_free(&b->leaks);
    free(b->leaks_out);
    free(b->gpu_out);
    memset(b, 0, sizeof *b);
}
