/*
 * model_blocks.c - blocks: an allocation starts one, a free, an allocation
 * over its still-live address, or its process's end ends it.  Each change
 * updates the counts, the occupancy curves and peaks, and the per-scope
 * statistics of the device and of the process's view, in O(1); an ended
 * block goes to the picture (model_picture.c), and, never freed, to the
 * leaks.  See model.h for what each count means.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model_state.h"

static mf_dev_state *device_of(const mf_model *m, uint16_t device)
{
    return m->state->devs[m->state->device_slot[device]];
}

/* ---- scopes, sites and stacks ------------------------------------------------- */

static mf_dev_scope *keyed_new(mf_model *m, mf_keyed *t, uint32_t key)
{
    if (mf_grow((void **)&t->items, &t->cap, t->n + 1, sizeof *t->items) < 0) {
        m->state->oom = 1;
        return NULL;
    }
    mf_dev_scope *s = &t->items[t->n++];
    memset(s, 0, sizeof *s);
    s->s.scope = key;
    s->s.min_size = UINT64_MAX;
    return s;
}

mf_dev_scope *mf_keyed_get(mf_model *m, mf_keyed *t, uint32_t key)
{
    if (key < t->n_index && t->index[key] >= 0)
        return &t->items[t->index[key]];
    if (t->limit && t->n >= t->limit) {
        if (!t->other) {
            if (!keyed_new(m, t, MF_KEY_OTHER))
                return NULL;
            t->other = (int32_t)t->n;   /* index + 1 */
        }
        return &t->items[t->other - 1];
    }
    if (mf_grow_filled((void **)&t->index, &t->n_index, (size_t)key + 1, sizeof *t->index,
                       0xff) < 0) {
        m->state->oom = 1;
        return NULL;
    }
    if (!keyed_new(m, t, key))
        return NULL;
    t->index[key] = (int32_t)(t->n - 1);
    return &t->items[t->n - 1];
}

void mf_keyed_free(mf_keyed *t)
{
    free(t->items);
    free(t->index);
    memset(t, 0, sizeof *t);
}

static mf_dev_scope *dev_scope(mf_model *m, mf_dev_state *d, uint32_t scope)
{
    return mf_keyed_get(m, &d->scopes, scope);
}

/* The site and stack entries of a block's stack (NULL, NULL without sites). */
static void dev_site(mf_model *m, mf_dev_state *d, uint32_t stack, mf_dev_scope **site,
                     mf_dev_scope **st)
{
    *site = *st = NULL;
    if (!m->sites)
        return;
    d->stacks.limit = MF_STACKS_KEPT;
    *site = mf_keyed_get(m, &d->sites, mf_sites_of_stack(m->sites, stack));
    *st = mf_keyed_get(m, &d->stacks, stack);
}

void mf_keyed_alloc(mf_dev_scope *s, uint64_t epoch, uint64_t bytes, uint64_t time_ns)
{
    s->s.alloc_count++;
    s->s.alloc_bytes += bytes;
    s->s.min_size = bytes < s->s.min_size ? bytes : s->s.min_size;
    s->s.max_size = bytes > s->s.max_size ? bytes : s->s.max_size;
    mf_scope_held_change(&s->held, epoch, (int64_t)bytes, 1);
    if (s->held.bytes > s->s.peak_live_bytes) {
        s->s.peak_live_bytes = s->held.bytes;
        s->s.peak_live_time_ns = time_ns;
    }
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

/* A new peak: its value, its first moment, and one more epoch. */
static void counts_peak(mf_counts *c, uint64_t *epoch, uint64_t time_ns)
{
    if (c->held_bytes > c->peak_bytes) {
        c->peak_bytes = c->held_bytes;
        c->peak_time_ns = time_ns;
        (*epoch)++;
    }
}

static mf_kind_stat *kind_of(mf_dev_state *d, uint16_t flags)
{
    return &d->pub.kinds[((flags & MF_MEMKIND_MASK) >> MF_MEMKIND_SHIFT) % MF_MODEL_KINDS];
}

static void add_points(mf_model *m, mf_dev_state *d, mf_view_state *v, uint64_t time_ns)
{
    if (mf_series_add(&d->occupancy, time_ns, d->pub.held_bytes, d->held_actual) < 0 ||
        mf_series_add(&v->occupancy, time_ns, v->pub.held_bytes, v->held_actual) < 0)
        m->state->oom = 1;
}

/* ---- the life of a block -------------------------------------------------------------- */

void mf_model_live_block(const mf_model *m, const mf_live *e, mf_block *out)
{
    *out = (mf_block){
        .addr = e->addr, .requested = e->requested, .actual = e->actual,
        .alloc_ns = e->alloc_ns, .free_ns = MF_LIVE_AT_END, .scope = e->scope, .name = e->name,
        .tid = e->tid, .pid = m->state->procs[e->log].pid, .stack = e->stack,
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

static void keep_unfreed(mf_model *m, const mf_block *b)
{
    struct mf_model_state *st = m->state;
    if (!st->leaks.worse)
        mf_topk_init(&st->leaks, sizeof(mf_block), MF_MODEL_LEAKS, 0, by_requested_worse, NULL,
                     requested_key);
    if (mf_topk_offer(&st->leaks, b, NULL) < 0)
        st->oom = 1;
}

/* End live block id at time_ns, the way `how` says (a process's end adds
 * its curve points once, after all its blocks). */
static void end_block(mf_model *m, uint32_t id, unsigned how, uint64_t time_ns)
{
    struct mf_model_state *st = m->state;
    const mf_live *e = mf_live_get(&st->live, id);
    mf_dev_state *d = device_of(m, e->device);
    mf_view_state *v = st->views[e->view];
    uint64_t req = e->requested;
    d->pub.held_bytes -= req;
    d->pub.held_count--;
    d->held_actual -= e->actual;
    v->pub.held_bytes -= req;
    v->pub.held_count--;
    v->held_actual -= e->actual;
    mf_dev_scope *ds = dev_scope(m, d, e->scope), *site, *stack;
    if (ds)
        mf_scope_held_change(&ds->held, d->epoch, -(int64_t)req, -1);
    dev_site(m, d, e->stack, &site, &stack);
    if (site)
        mf_scope_held_change(&site->held, d->epoch, -(int64_t)req, -1);
    if (stack)
        mf_scope_held_change(&stack->held, d->epoch, -(int64_t)req, -1);
    if (!st->opt.no_picture) {
        mf_view_scope *vs = mf_picture_scope(v, e->scope);
        if (vs)
            mf_scope_held_change(&vs->held, v->epoch, -(int64_t)req, -1);
        else
            st->oom = 1;
    }
    if (how == MF_BLOCK_FREED) {
        d->pub.free_count++;
        v->pub.free_count++;
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
    }
    if (how != MF_BLOCK_PROCESS_ENDED)
        add_points(m, d, v, time_ns);
    mf_block b = {
        .addr = e->addr, .requested = req, .actual = e->actual, .alloc_ns = e->alloc_ns,
        .free_ns = time_ns, .scope = e->scope, .name = e->name, .tid = e->tid,
        .pid = v->pub.pid, .stack = e->stack, .device = e->device, .flags = e->flags,
        .end = (uint8_t)how,
    };
    if (how == MF_BLOCK_PROCESS_ENDED) {
        keep_unfreed(m, &b);
        mf_proc_state *p = &st->procs[e->log];
        if (MF_DEVICE_KIND(b.device) == MF_DEVICE_GPU) {
            if (mf_grow((void **)&p->gpu_unfreed, &p->cap_gpu_unfreed, p->n_gpu_unfreed + 1,
                        sizeof *p->gpu_unfreed) < 0)
                st->oom = 1;
            else
                p->gpu_unfreed[p->n_gpu_unfreed++] = b;
        }
    }
    if (!st->opt.no_picture && mf_picture_retire(m, v, &b) < 0)
        st->oom = 1;
    mf_live_remove(&st->live, id);
}

void mf_model_on_alloc(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    mf_dev_state *d;
    mf_view_state *v = mf_model_view_of(m, e->log, e->device, &d);
    if (!v) {
        st->oom = 1;
        return;
    }
    uint32_t old = mf_live_find(&st->live, e->log, e->device, e->flags, e->addr);
    if (old) {
        end_block(m, old, MF_BLOCK_REPLACED, e->time_ns);
        d->pub.replaced_blocks++;
        v->pub.replaced_blocks++;
    }
    mf_live b = {
        .addr = e->addr, .requested = e->size, .actual = e->actual, .alloc_ns = e->time_ns,
        .scope = e->scope, .name = e->name, .tid = e->tid, .stack = e->stack,
        .view = v->index, .device = e->device, .flags = e->flags, .log = e->log,
    };
    if (!mf_live_insert(&st->live, &b)) {
        st->oom = 1;
        return;
    }
    counts_alloc(&d->pub.counts, e->addr, e->size, e->actual);
    counts_alloc(&v->pub.counts, e->addr, e->size, e->actual);
    d->held_actual += e->actual;
    v->held_actual += e->actual;
    mf_kind_stat *k = kind_of(d, e->flags);
    k->alloc_count++;
    k->alloc_bytes += e->size;
    k->live_bytes_end += e->size;
    mf_dev_scope *ds = dev_scope(m, d, e->scope), *site, *stack;
    if (ds)
        mf_keyed_alloc(ds, d->epoch, e->size, e->time_ns);
    dev_site(m, d, e->stack, &site, &stack);
    if (site)
        mf_keyed_alloc(site, d->epoch, e->size, e->time_ns);
    if (stack)
        mf_scope_held_change(&stack->held, d->epoch, (int64_t)e->size, 1);
    if (!st->opt.no_picture) {
        mf_view_scope *vs = mf_picture_scope(v, e->scope);
        if (!vs) {
            st->oom = 1;
            return;
        }
        vs->total += e->size;
        mf_scope_held_change(&vs->held, v->epoch, (int64_t)e->size, 1);
        uint64_t span = e->actual ? e->actual : e->size;
        if (mf_picture_alloc(m, v, e->addr, span ? span : 1) < 0)
            st->oom = 1;
    }
    counts_peak(&d->pub.counts, &d->epoch, e->time_ns);
    counts_peak(&v->pub.counts, &v->epoch, e->time_ns);
    v->first_ns = v->pub.alloc_count == 1 ? e->time_ns : v->first_ns;
    v->last_ns = e->time_ns;
    add_points(m, d, v, e->time_ns);
}

void mf_model_on_free(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    uint32_t id = mf_live_find(&st->live, e->log, e->device, e->flags, e->addr);
    if (id) {
        end_block(m, id, MF_BLOCK_FREED, e->time_ns);
        return;
    }
    mf_dev_state *d;
    mf_view_state *v = mf_model_view_of(m, e->log, e->device, &d);
    if (!v) {
        st->oom = 1;
        return;
    }
    /* A forked child starts as a copy of its parent's heap: a free of an
     * address it never allocated frees memory it inherited at the fork
     * (whether or not the parent still holds its own copy). */
    if (st->procs[e->log].parent >= 0) {
        d->pub.inherited_frees++;
        v->pub.inherited_frees++;
        return;
    }
    d->pub.unknown_frees++;
    v->pub.unknown_frees++;
}

void mf_model_on_process_end(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    if (e->log >= st->n_procs || st->procs[e->log].ended)
        return;
    st->procs[e->log].ended = 1;
    if (e->time_ns < m->since_ns)
        return;
    mf_sub_on_process_end(m, e->log, e->time_ns);
    int any = 0;
    for (uint32_t id = mf_live_first(&st->live, e->log); id;) {
        uint32_t next = mf_live_get(&st->live, id)->next;
        end_block(m, id, MF_BLOCK_PROCESS_ENDED, e->time_ns);
        id = next;
        any = 1;
    }
    if (!any)
        return;
    const mf_proc_state *p = &st->procs[e->log];
    for (size_t slot = 0; slot < p->n_view_of; slot++)
        if (p->view_of[slot])
            add_points(m, st->devs[slot], st->views[p->view_of[slot] - 1], e->time_ns);
    if (e->time_ns > st->t1)
        st->t1 = e->time_ns;
}

void mf_model_on_sample(mf_model *m, const mf_event *e, const mf_sample_values *values)
{
    mf_dev_state *d;
    mf_view_state *v = mf_model_view_of(m, e->log, e->device, &d);
    if (!v) {
        m->state->oom = 1;
        return;
    }
    mf_snapshot s = { .time_ns = e->time_ns, .events_live = d->pub.held_bytes };
    memcpy(s.value, values->value, sizeof s.value);
    if (mf_snapshots_add(&d->snapshots, &s) < 0)
        m->state->oom = 1;
    s.events_live = v->pub.held_bytes;
    if (mf_snapshots_add(&v->snapshots, &s) < 0)
        m->state->oom = 1;
}

/* ---- settling ------------------------------------------------------------------- */

static int by_scope_id(const void *a, const void *b)
{
    uint32_t x = ((const mf_scope_stat *)a)->scope, y = ((const mf_scope_stat *)b)->scope;
    return x < y ? -1 : x > y;
}

mf_scope_stat *mf_keyed_settle(const mf_keyed *t, uint64_t epoch, uint64_t peak_bytes)
{
    mf_scope_stat *out = malloc((t->n ? t->n : 1) * sizeof *out);
    if (!out)
        return NULL;
    for (size_t i = 0; i < t->n; i++) {
        const mf_dev_scope *ds = &t->items[i];
        mf_scope_stat *s = &out[i];
        *s = ds->s;
        mf_scope_held_at_peak(&ds->held, epoch, &s->at_peak_bytes, &s->at_peak_count);
        if (peak_bytes == 0)
            s->at_peak_bytes = s->at_peak_count = 0;
        s->live_bytes_end += ds->held.bytes;
        s->live_count_end += ds->held.count;
        if (s->min_size == UINT64_MAX)
            s->min_size = 0;
    }
    qsort(out, t->n, sizeof *out, by_scope_id);
    return out;
}

/* The stacks that held bytes at the device's peak, by stack id. */
static int settle_peak_stacks(mf_dev_state *d)
{
    free(d->pub.peak_stacks);
    d->pub.peak_stacks = NULL;
    d->pub.n_peak_stacks = 0;
    mf_scope_stat *all = mf_keyed_settle(&d->stacks, d->epoch, d->pub.peak_bytes);
    if (!all)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < d->stacks.n; i++)
        if (all[i].at_peak_count)
            all[n++] = all[i];
    mf_stack_share *out = malloc((n ? n : 1) * sizeof *out);
    for (size_t i = 0; out && i < n; i++)
        out[i] = (mf_stack_share){ all[i].scope, all[i].at_peak_bytes, all[i].at_peak_count };
    free(all);
    d->pub.peak_stacks = out;
    d->pub.n_peak_stacks = n;
    return out ? 0 : -1;
}

int mf_model_settle_scopes(mf_model *m, mf_dev_state *d)
{
    free(d->pub.scopes);
    free(d->pub.sites);
    d->pub.sites = NULL;
    d->pub.n_sites = 0;
    if (!(d->pub.scopes = mf_keyed_settle(&d->scopes, d->epoch, d->pub.peak_bytes)))
        return -1;
    d->pub.n_scopes = d->scopes.n;
    if (m->sites) {
        if (!(d->pub.sites = mf_keyed_settle(&d->sites, d->epoch, d->pub.peak_bytes)) || settle_peak_stacks(d) < 0)
            return -1;
        d->pub.n_sites = d->sites.n;
    }
    d->pub.live_bytes_end = d->unfreed_bytes + d->pub.held_bytes;
    d->pub.live_count_end = d->unfreed_count + d->pub.held_count;
    for (size_t i = 0; i < d->n_views; i++) {
        mf_view_state *v = m->state->views[d->views[i]];
        v->pub.live_bytes_end = v->unfreed_bytes + v->pub.held_bytes;
        v->pub.live_count_end = v->unfreed_count + v->pub.held_count;
    }
    return 0;
}

/* The largest blocks never freed: those that ended with their process, and
 * those live now. */
static int settle_leaks(mf_model *m)
{
    struct mf_model_state *st = m->state;
    mf_topk all;
    mf_topk_init(&all, sizeof(mf_block), MF_MODEL_LEAKS, 0, by_requested_worse, NULL,
                 requested_key);
    for (size_t i = 0; i < st->leaks.n; i++)
        if (mf_topk_offer(&all, mf_topk_item(&st->leaks, i), NULL) < 0)
            return -1;
    for (size_t log = 0; log < st->live.n_logs; log++)
        for (uint32_t id = mf_live_first(&st->live, (uint16_t)log); id;) {
            const mf_live *e = mf_live_get(&st->live, id);
            mf_block b;
            mf_model_live_block(m, e, &b);
            if (mf_topk_offer(&all, &b, NULL) < 0)
                return -1;
            id = e->next;
        }
    free(m->leaks);
    m->leaks = malloc((all.n ? all.n : 1) * sizeof *m->leaks);
    int rc = m->leaks ? mf_topk_sorted(&all, m->leaks) : -1;
    m->n_leaks = rc == 0 ? all.n : 0;
    mf_topk_free(&all);
    return rc;
}

/* Every GPU block never freed (MXNet's CSV lists them per process). */
static int settle_gpu(mf_model *m)
{
    struct mf_model_state *st = m->state;
    size_t n = 0, cap = 0;
    mf_block *all = NULL;
    for (size_t log = 0; log < st->n_procs; log++) {
        const mf_proc_state *p = &st->procs[log];
        for (size_t i = 0; i < p->n_gpu_unfreed; i++) {
            if (mf_grow((void **)&all, &cap, n + 1, sizeof *all) < 0)
                goto oom;
            all[n++] = p->gpu_unfreed[i];
        }
        for (uint32_t id = mf_live_first(&st->live, (uint16_t)log); id;) {
            const mf_live *e = mf_live_get(&st->live, id);
            id = e->next;
            if (MF_DEVICE_KIND(e->device) != MF_DEVICE_GPU)
                continue;
            if (mf_grow((void **)&all, &cap, n + 1, sizeof *all) < 0)
                goto oom;
            mf_model_live_block(m, e, &all[n++]);
        }
    }
    free(m->gpu_live);
    m->gpu_live = all;
    m->n_gpu_live = n;
    return 0;
oom:
    free(all);
    return -1;
}

int mf_model_settle_blocks(mf_model *m)
{
    return settle_leaks(m) < 0 || settle_gpu(m) < 0 ? -1 : 0;
}
