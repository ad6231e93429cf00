/*
 * model_subblocks.c - sub-blocks (MF_FLAG_SUBBLOCK, see model_subblocks.h):
 * regions a program's own allocator hands out inside memory already
 * counted (the NVTX memory API: gpu/nvtx_mem.c records them).  They live
 * in a table of their own (s->live) and are counted apart: per device
 * their own counts and peak (mf_sub_counts) and per-scope statistics, per
 * view the largest of them to draw over their lanes.
 *
 * The device rule: the runtime records sub-blocks on cpu/0 (it cannot tell
 * which device holds an address).  The NVTX heap they were registered in is
 * a POOL record (MF_POOL_HEAP_REGISTERED, address and size); when a live
 * GPU block of the same process starts at the heap's address (the
 * cudaMalloc'ed segment a pool carves up), the heap and every sub-block
 * recorded inside it belong to that block's device.  Otherwise (malloc'ed
 * or mmap'ed arenas, regions of the process-wide heap) they stay where they
 * were recorded.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "keyed.h"
#include "model_picture.h"
#include "model_subblocks.h"
#include "series.h"
#include "sites.h"
#include "steps.h"

#define SUB_KEPT 4096u            /* sub-blocks kept to draw, per view */
#define SUB_POINTS (1u << 17)     /* occupancy points per device */

/* An NVTX heap registered and not unregistered: where its regions belong. */
typedef struct mf_heap {
    uint64_t addr, size;
    uint16_t log, device;     /* the device of the live block at addr, else as recorded */
} mf_heap;

typedef struct mf_sub_device {
    mf_sub_counts counts;
    mf_keyed scopes;          /* by scope string id */
    mf_keyed sites;           /* by site id (when the logs have stacks) */
    mf_keyed roles;           /* by role (mf_block.role & MF_ROLE_MASK) */
    mf_keyed names;           /* by tensor name string id (0: none; MF_MODEL_NAMES) */
    mf_steps steps;           /* from step mark to step mark */
    mf_series occupancy;      /* held bytes after each change */
    mf_scope_stat *sites_out, *roles_out, *names_out;
    uint64_t epoch;           /* peaks of its sub-blocks reached */
    uint64_t unfreed_bytes, unfreed_count;   /* ended with their process */
    mf_scope_stat *scopes_out;               /* what the last settle made */
} mf_sub_device;

typedef struct mf_sub_view {
    uint32_t slot, pid;
    uint16_t device;
    mf_topk kept;             /* mf_block: its largest ended sub-blocks */
    mf_block *blocks_out;     /* what the last settle made */
} mf_sub_view;

void mf_sub_init(mf_subblocks *s, int keep_picture)
{
    memset(s, 0, sizeof *s);
    s->keep_picture = keep_picture;
}

void mf_sub_set_sites(mf_subblocks *s, struct mf_sites *sites)
{
    s->sites = sites;
}

int mf_sub_add_device(mf_subblocks *s)
{
    mf_sub_device *d = calloc(1, sizeof *d);
    if (!d || mf_grow((void **)&s->devs, &s->cap_devs, s->n_devs + 1, sizeof *s->devs) < 0) {
        free(d);
        return -1;
    }
    mf_series_init(&d->occupancy, SUB_POINTS);
    d->names.limit = MF_MODEL_NAMES;
    s->devs[s->n_devs++] = d;
    return 0;
}

int mf_sub_add_view(mf_subblocks *s, uint32_t slot, uint32_t pid, uint16_t device)
{
    mf_sub_view *v = calloc(1, sizeof *v);
    if (!v || mf_grow((void **)&s->views, &s->cap_views, s->n_views + 1, sizeof *s->views) < 0) {
        free(v);
        return -1;
    }
    v->slot = slot;
    v->pid = pid;
    v->device = device;
    s->views[s->n_views++] = v;
    return 0;
}

/* ---- heaps: where sub-blocks belong ------------------------------------------------ */

/* The registered heap of log that holds addr, or NULL. */
static mf_heap *heap_holding(const mf_subblocks *s, uint16_t log, uint64_t addr)
{
    for (size_t i = 0; i < s->n_heaps; i++) {
        mf_heap *h = &s->heaps[i];
        if (h->log == log && addr >= h->addr && addr - h->addr < h->size)
            return h;
    }
    return NULL;
}

int mf_sub_on_heap(mf_subblocks *s, const mf_event *e, uint16_t gpu_device, uint16_t *device)
{
    const mf_ev_pool *p = &e->pool;
    mf_heap *h = heap_holding(s, e->log, p->addr);
    *device = h && h->addr == p->addr ? h->device : e->device;
    if (p->op == MF_POOL_HEAP_REGISTERED) {
        if (!h || h->addr != p->addr) {
            if (mf_grow((void **)&s->heaps, &s->cap_heaps, s->n_heaps + 1, sizeof *s->heaps) < 0)
                return -1;
            h = &s->heaps[s->n_heaps++];
        }
        *h = (mf_heap){ p->addr, p->size ? p->size : 1, e->log, gpu_device };
        *device = gpu_device;
    } else if (p->op == MF_POOL_HEAP_UNREGISTERED && h && h->addr == p->addr) {
        *h = s->heaps[--s->n_heaps];
    }
    return 0;
}

uint16_t mf_sub_device_of(const mf_subblocks *s, const mf_event *e)
{
    const mf_heap *h = heap_holding(s, e->log, e->alloc.addr);
    return h ? h->device : e->device;
}

/* ---- the life of a sub-block ---------------------------------------------------------- */

/* When live sub-block id was let go (0: not yet). */
static uint64_t release_of(const mf_subblocks *s, uint32_t id)
{
    return id - 1 < s->n_release ? s->release_of[id - 1] : 0;
}

static void sub_block_of(const mf_subblocks *s, uint32_t id, mf_block *out)
{
    const mf_live *e = mf_live_get(&s->live, id);
    const mf_sub_view *v = s->views[e->view];
    *out = (mf_block){
        .addr = e->addr, .requested = e->requested, .actual = e->actual,
        .alloc_ns = e->alloc_ns, .free_ns = MF_LIVE_AT_END, .scope = e->scope, .name = e->name,
        .tid = e->tid, .pid = v->pid, .stack = e->stack, .device = v->device,
        .flags = e->flags, .end = MF_BLOCK_LIVE, .release_ns = release_of(s, id), .role = e->role,
    };
}

/* The keys a sub-block counts under on its device: scope, site (with
 * stacks), role and tensor name.  Entries that could not be made are NULL
 * (s->oom is set). */
enum { KEY_SCOPE, KEY_SITE, KEY_ROLE, KEY_NAME, KEYS };

static mf_keyed_entry *key_of(mf_subblocks *s, mf_keyed *t, uint32_t key)
{
    mf_keyed_entry *k = mf_keyed_get(t, key);
    if (!k)
        s->oom = 1;
    return k;
}

static void sub_keys(mf_subblocks *s, mf_sub_device *d, const mf_live *e,
                     mf_keyed_entry *keys[KEYS])
{
    keys[KEY_SCOPE] = key_of(s, &d->scopes, e->scope);
    keys[KEY_SITE] = s->sites ? key_of(s, &d->sites, mf_sites_of_stack(s->sites, e->stack))
                              : NULL;
    keys[KEY_ROLE] = key_of(s, &d->roles, e->role & MF_ROLE_MASK);
    keys[KEY_NAME] = key_of(s, &d->names, e->name);
}

/* Live sub-block e of device d moves from one key to another of table t (a
 * role or a name given, or a role by rule). */
static void rekey(mf_subblocks *s, mf_sub_device *d, mf_keyed *t, const mf_live *e,
                  uint32_t from_key, uint32_t to_key)
{
    if (from_key == to_key)
        return;
    /* to first: making it may move the table; from is already there */
    mf_keyed_entry *to = key_of(s, t, to_key), *from = key_of(s, t, from_key);
    if (from && to)
        mf_keyed_move(from, to, d->epoch, e->requested, d->epoch > e->epoch0, 1);
}

static void add_point(mf_subblocks *s, mf_sub_device *d, uint64_t time_ns)
{
    if (mf_series_add(&d->occupancy, time_ns, d->counts.held_bytes, d->counts.held_bytes) < 0)
        s->oom = 1;
}

/* A GPU sub-block that ended with its process, for the GPU CSV. */
static void keep_gpu_ended(mf_subblocks *s, const mf_block *b)
{
    if (MF_DEVICE_KIND(b->device) != MF_DEVICE_GPU)
        return;
    if (mf_grow((void **)&s->gpu_ended, &s->cap_gpu_ended, s->n_gpu_ended + 1,
                sizeof *s->gpu_ended) < 0) {
        s->oom = 1;
        return;
    }
    s->gpu_ended[s->n_gpu_ended++] = *b;
}

static void end_sub(mf_subblocks *s, uint32_t id, unsigned how, uint64_t time_ns,
                    uint32_t steps)
{
    mf_live *e = mf_live_get(&s->live, id);
    mf_sub_view *v = s->views[e->view];
    mf_sub_device *d = s->devs[v->slot];
    mf_sub_counts *c = &d->counts;
    /* freed within the step it was allocated in, with no role of its own */
    if (how == MF_BLOCK_FREED && (e->role & (MF_ROLE_MASK | MF_ROLE_NAMED)) == MF_ROLE_OTHER &&
        e->step == steps) {
        rekey(s, d, &d->roles, e, MF_ROLE_OTHER, MF_ROLE_TEMPORARY);
        e->role = (uint8_t)((e->role & ~MF_ROLE_MASK) | MF_ROLE_TEMPORARY);
    }
    c->held_bytes -= e->requested;
    c->held_count--;
    mf_keyed_entry *keys[KEYS];
    sub_keys(s, d, e, keys);
    for (int k = 0; k < KEYS; k++) {
        if (!keys[k])
            continue;
        mf_scope_held_change(&keys[k]->held, d->epoch, -(int64_t)e->requested, -1);
        if (how == MF_BLOCK_FREED)
            keys[k]->s.free_count++;
        if (how == MF_BLOCK_PROCESS_ENDED) {
            keys[k]->s.live_bytes_end += e->requested;
            keys[k]->s.live_count_end++;
        }
    }
    if (how == MF_BLOCK_FREED)
        c->free_count++;
    else if (how == MF_BLOCK_PROCESS_ENDED) {
        d->unfreed_bytes += e->requested;
        d->unfreed_count++;
    }
    add_point(s, d, time_ns);
    mf_block b;
    sub_block_of(s, id, &b);
    b.free_ns = time_ns;
    b.end = (uint8_t)how;
    if (how == MF_BLOCK_PROCESS_ENDED)
        keep_gpu_ended(s, &b);
    if (s->keep_picture) {
        if (!v->kept.worse)
            mf_picture_kept_init(&v->kept, SUB_KEPT);
        if (mf_topk_offer(&v->kept, &b, NULL) < 0)
            s->oom = 1;
    }
    mf_live_remove(&s->live, id);
}

int mf_sub_on_alloc(mf_subblocks *s, const mf_event *e, uint32_t view, int training,
                    uint32_t steps)
{
    const mf_ev_alloc *a = &e->alloc;
    mf_sub_device *d = s->devs[s->views[view]->slot];
    uint32_t old = mf_live_find(&s->live, e->log, e->device, a->flags, a->addr);
    if (old)
        end_sub(s, old, MF_BLOCK_REPLACED, e->time_ns, steps);
    mf_live b = {
        .addr = a->addr, .requested = a->requested, .actual = a->actual, .alloc_ns = e->time_ns,
        .epoch0 = d->epoch, .scope = a->scope, .name = a->name, .tid = e->tid,
        .stack = a->stack, .view = view, .step = steps, .device = e->device, .flags = a->flags,
        .log = e->log, .role = training ? MF_ROLE_OTHER : MF_ROLE_UNKNOWN,
    };
    uint32_t id = mf_live_insert(&s->live, &b);
    if (!id || mf_grow_filled((void **)&s->release_of, &s->n_release, id, sizeof *s->release_of,
                              0) < 0)
        return -1;
    s->release_of[id - 1] = 0;
    mf_sub_counts *c = &d->counts;
    c->alloc_count++;
    c->alloc_bytes += a->requested;
    c->held_bytes += a->requested;
    c->held_count++;
    c->reused_count += (a->flags & MF_FLAG_REUSED) != 0;
    if (a->flags & MF_FLAG_BEFORE) {
        c->before_count++;
        c->before_bytes += a->requested;
    }
    mf_keyed_entry *keys[KEYS];
    sub_keys(s, d, mf_live_get(&s->live, id), keys);
    for (int k = 0; k < KEYS; k++)
        if (keys[k])
            mf_keyed_alloc(keys[k], d->epoch, a->requested, e->time_ns);
    if (c->held_bytes > c->peak_bytes) {
        c->peak_bytes = c->held_bytes;
        c->peak_time_ns = e->time_ns;
        d->epoch++;
    }
    mf_steps_held(&d->steps, a->requested, 1, c->held_bytes, e->time_ns);
    add_point(s, d, e->time_ns);
    return s->oom ? -1 : 0;
}

void mf_sub_on_release(mf_subblocks *s, const mf_event *e)
{
    const mf_ev_trace *t = &e->trace;   /* arg: the device, value: the address */
    uint32_t id = mf_live_find(&s->live, e->log, (uint16_t)t->arg, MF_FLAG_SUBBLOCK, t->value);
    if (id && id - 1 < s->n_release && !s->release_of[id - 1])
        s->release_of[id - 1] = e->time_ns;
}

int mf_sub_each_live(const mf_subblocks *s, uint16_t log, uint16_t device,
                     int (*fn)(const mf_block *blk, void *ctx), void *ctx)
{
    for (uint32_t id = mf_live_first(&s->live, log); id;) {
        const mf_live *e = mf_live_get(&s->live, id);
        uint32_t next = e->next;
        if (s->views[e->view]->device == device) {
            mf_block b;
            sub_block_of(s, id, &b);
            int rc = fn(&b, ctx);
            if (rc)
                return rc;
        }
        id = next;
    }
    return 0;
}

uint64_t mf_sub_held(const mf_subblocks *s, uint16_t log, uint16_t device)
{
    uint64_t held = 0;
    for (uint32_t id = mf_live_first(&s->live, log); id;) {
        const mf_live *e = mf_live_get(&s->live, id);
        if (s->views[e->view]->device == device)
            held += e->requested;
        id = e->next;
    }
    return held;
}

int mf_sub_on_free(mf_subblocks *s, const mf_event *e, uint32_t steps)
{
    uint32_t id = mf_live_find(&s->live, e->log, e->device, e->free.flags, e->free.addr);
    if (id)
        end_sub(s, id, MF_BLOCK_FREED, e->time_ns, steps);
    /* an unknown sub-block's end (registered before recording started) is
     * not an unknown free of the device: nothing of its memory was counted */
    return s->oom ? -1 : 0;
}

int mf_sub_on_process_end(mf_subblocks *s, uint16_t log, uint64_t time_ns)
{
    for (uint32_t id = mf_live_first(&s->live, log); id;) {
        uint32_t next = mf_live_get(&s->live, id)->next;
        end_sub(s, id, MF_BLOCK_PROCESS_ENDED, time_ns, 0);
        id = next;
    }
    return s->oom ? -1 : 0;
}

int mf_sub_on_name(mf_subblocks *s, const mf_event *e)
{
    const mf_ev_trace *t = &e->trace;   /* arg: the device (| role << 16), value: the address */
    uint32_t id = mf_live_find(&s->live, e->log, (uint16_t)t->arg, MF_FLAG_SUBBLOCK, t->value);
    unsigned role = (unsigned)(t->arg >> 16) & MF_ROLE_MASK;
    if (id) {
        mf_live *l = mf_live_get(&s->live, id);
        mf_sub_device *d = s->devs[s->views[l->view]->slot];
        rekey(s, d, &d->names, l, l->name, t->name);
        l->name = t->name;
        if (e->trace.kind == MF_TRACE_BLOCK_NAME && role) {
            rekey(s, d, &d->roles, l, l->role & MF_ROLE_MASK, role);
            l->role = (uint8_t)(role | MF_ROLE_NAMED);
        }
    }
    return s->oom ? -1 : id != 0;
}

int mf_sub_on_step(mf_subblocks *s, const mf_event *e)
{
    for (size_t i = 0; i < s->n_devs; i++) {
        mf_sub_device *d = s->devs[i];
        mf_keyed_mark(&d->scopes);
        mf_keyed_mark(&d->sites);
        if (mf_steps_mark(&d->steps, e->trace.value, e->time_ns, d->counts.held_bytes) < 0)
            return -1;
    }
    return 0;
}

/* ---- settling ------------------------------------------------------------------------ */

int mf_sub_settle_device(mf_subblocks *s, uint32_t slot, mf_device_model *out)
{
    mf_sub_device *d = s->devs[slot];
    free(d->scopes_out);
    free(d->sites_out);
    free(d->roles_out);
    free(d->names_out);
    d->sites_out = d->roles_out = d->names_out = NULL;
    out->sub = d->counts;
    out->sub_scopes = d->scopes_out = mf_keyed_settle(&d->scopes, d->epoch, d->counts.peak_bytes);
    out->n_sub_scopes = d->scopes_out ? d->scopes.n : 0;
    out->sub_roles = d->roles_out = mf_keyed_settle(&d->roles, d->epoch, d->counts.peak_bytes);
    out->n_sub_roles = d->roles_out ? d->roles.n : 0;
    out->sub_names = d->names_out = mf_keyed_settle(&d->names, d->epoch, d->counts.peak_bytes);
    out->n_sub_names = d->names_out ? d->names.n : 0;
    out->sub_steps = d->steps.items;
    out->n_sub_steps = d->steps.n;
    out->sub_steps_dropped = d->steps.dropped;
    if (!d->roles_out || !d->names_out)
        return -1;
    out->sub_sites = NULL;
    out->n_sub_sites = 0;
    if (s->sites && d->sites.n) {
        if (!(out->sub_sites = d->sites_out = mf_keyed_settle(&d->sites, d->epoch,
                                                               d->counts.peak_bytes)))
            return -1;
        out->n_sub_sites = d->sites.n;
    }
    out->sub_occupancy = mf_series_points(&d->occupancy, &out->n_sub_occupancy);
    out->sub.live_bytes_end = d->unfreed_bytes + d->counts.held_bytes;
    out->sub.live_count_end = d->unfreed_count + d->counts.held_count;
    return d->scopes_out ? 0 : -1;
}

static int by_pid(const void *a, const void *b)
{
    const mf_block *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int mf_sub_settle(mf_subblocks *s, mf_model *out)
{
    free(s->gpu_out);
    out->gpu_sub_live = s->gpu_out = NULL;
    out->n_gpu_sub_live = 0;
    size_t n = s->n_gpu_ended;
    for (size_t log = 0; log < s->live.n_logs; log++)
        for (uint32_t id = mf_live_first(&s->live, (uint16_t)log); id;) {
            const mf_live *e = mf_live_get(&s->live, id);
            n += MF_DEVICE_KIND(s->views[e->view]->device) == MF_DEVICE_GPU;
            id = e->next;
        }
    if (!n)
        return 0;
    mf_block *v = malloc(n * sizeof *v);
    if (!v)
        return -1;
    if (s->n_gpu_ended)
        memcpy(v, s->gpu_ended, s->n_gpu_ended * sizeof *v);
    size_t k = s->n_gpu_ended;
    for (size_t log = 0; log < s->live.n_logs; log++)
        for (uint32_t id = mf_live_first(&s->live, (uint16_t)log); id;) {
            const mf_live *e = mf_live_get(&s->live, id);
            if (MF_DEVICE_KIND(s->views[e->view]->device) == MF_DEVICE_GPU)
                sub_block_of(s, id, &v[k++]);
            id = e->next;
        }
    qsort(v, n, sizeof *v, by_pid);
    out->gpu_sub_live = s->gpu_out = v;
    out->n_gpu_sub_live = n;
    return 0;
}

int mf_sub_settle_view(mf_subblocks *s, uint32_t view, mf_view *out)
{
    mf_sub_view *v = s->views[view];
    free(v->blocks_out);
    v->blocks_out = out->subblocks = NULL;
    out->n_subblocks = 0;
    out->subblocks_left_out = 0;
    if (!s->keep_picture)
        return 0;
    mf_topk all;
    mf_picture_kept_init(&all, SUB_KEPT);
    for (size_t i = 0; i < v->kept.n; i++)
        if (mf_topk_offer(&all, mf_topk_item(&v->kept, i), NULL) < 0)
            goto oom;
    for (size_t log = 0; log < s->live.n_logs; log++)
        for (uint32_t id = mf_live_first(&s->live, (uint16_t)log); id;) {
            const mf_live *e = mf_live_get(&s->live, id);
            uint32_t here = id;
            id = e->next;
            if (e->view != view)
                continue;
            mf_block b;
            sub_block_of(s, here, &b);
            if (mf_topk_offer(&all, &b, NULL) < 0)
                goto oom;
        }
    out->subblocks = v->blocks_out = malloc((all.n ? all.n : 1) * sizeof *v->blocks_out);
    if (!v->blocks_out || mf_topk_sorted(&all, v->blocks_out) < 0)
        goto oom;
    out->n_subblocks = all.n;
    out->subblocks_left_out = all.dropped + v->kept.dropped;
    mf_topk_free(&all);
    return 0;
oom:
    mf_topk_free(&all);
    return -1;
}

void mf_sub_free(mf_subblocks *s)
{
    mf_live_free(&s->live);
    free(s->heaps);
    free(s->release_of);
    free(s->gpu_ended);
    free(s->gpu_out);
    for (size_t i = 0; i < s->n_devs; i++) {
        mf_keyed_free(&s->devs[i]->scopes);
        mf_keyed_free(&s->devs[i]->sites);
        mf_keyed_free(&s->devs[i]->roles);
        mf_keyed_free(&s->devs[i]->names);
        mf_steps_free(&s->devs[i]->steps);
        mf_series_free(&s->devs[i]->occupancy);
        free(s->devs[i]->scopes_out);
        free(s->devs[i]->sites_out);
        free(s->devs[i]->roles_out);
        free(s->devs[i]->names_out);
        free(s->devs[i]);
    }
    free(s->devs);
    for (size_t i = 0; i < s->n_views; i++) {
        mf_topk_free(&s->views[i]->kept);
        free(s->views[i]->blocks_out);
        free(s->views[i]);
    }
    free(s->views);
    memset(s, 0, sizeof *s);
}
