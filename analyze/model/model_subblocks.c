/*
 * model_subblocks.c - sub-blocks (MF_FLAG_SUBBLOCK): regions a program's
 * own allocator hands out inside memory already counted (the NVTX memory
 * API: gpu/nvtx_mem.c records them).  They live in a table of their own
 * (st->sub_live) and are counted apart: per device their own counts and
 * peak (mf_sub_counts) and per-scope statistics, per view the largest of
 * them to draw over their lanes.  Nothing here touches a device's or a
 * view's counts, occupancy, scopes, sites, leaks or GPU blocks, so memory
 * is never counted twice.
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
#include "model_state.h"

static mf_dev_state *device_of(const mf_model *m, uint16_t device)
{
    return m->state->devs[m->state->device_slot[device]];
}

/* ---- heaps: where sub-blocks belong ------------------------------------------------ */

/* The device of the live GPU block of log that starts at addr, or fallback. */
static uint16_t gpu_block_device(const mf_model *m, uint16_t log, uint64_t addr,
                                 uint16_t fallback)
{
    const struct mf_model_state *st = m->state;
    for (size_t i = 0; i < st->n_devs; i++) {
        uint16_t dev = st->devs[i]->pub.device;
        if (MF_DEVICE_KIND(dev) == MF_DEVICE_GPU &&
            (mf_live_find(&st->live, log, dev, 0, addr) ||
             mf_live_find(&st->live, log, dev, MF_FLAG_EXPLICIT, addr)))
            return dev;
    }
    return fallback;
}

/* The registered heap of log that holds addr, or NULL. */
static mf_heap *heap_holding(const mf_model *m, uint16_t log, uint64_t addr)
{
    const struct mf_model_state *st = m->state;
    for (size_t i = 0; i < st->n_heaps; i++) {
        mf_heap *h = &st->heaps[i];
        if (h->log == log && addr >= h->addr && addr - h->addr < h->size)
            return h;
    }
    return NULL;
}

uint16_t mf_sub_on_heap(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    mf_heap *h = heap_holding(m, e->log, e->addr);
    if (e->extra == MF_POOL_HEAP_REGISTERED) {
        uint16_t device = gpu_block_device(m, e->log, e->addr, e->device);
        if (!h || h->addr != e->addr) {
            if (mf_grow((void **)&st->heaps, &st->cap_heaps, st->n_heaps + 1,
                        sizeof *st->heaps) < 0) {
                st->oom = 1;
                return e->device;
            }
            h = &st->heaps[st->n_heaps++];
        }
        *h = (mf_heap){ e->addr, e->size ? e->size : 1, e->log, device };
        return device;
    }
    uint16_t device = h && h->addr == e->addr ? h->device : e->device;
    if (e->extra == MF_POOL_HEAP_UNREGISTERED && h && h->addr == e->addr)
        *h = st->heaps[--st->n_heaps];
    return device;
}

/* ---- the life of a sub-block ---------------------------------------------------------- */

static void sub_block_of(const mf_model *m, const mf_live *e, mf_block *out)
{
    const struct mf_model_state *st = m->state;
    const mf_view_state *v = st->views[e->view];
    *out = (mf_block){
        .addr = e->addr, .requested = e->requested, .actual = e->actual,
        .alloc_ns = e->alloc_ns, .free_ns = MF_LIVE_AT_END, .scope = e->scope, .name = e->name,
        .tid = e->tid, .pid = v->pub.pid, .stack = e->stack, .device = v->pub.device,
        .flags = e->flags, .end = MF_BLOCK_LIVE,
    };
}

static void end_sub(mf_model *m, uint32_t id, unsigned how, uint64_t time_ns)
{
    struct mf_model_state *st = m->state;
    const mf_live *e = mf_live_get(&st->sub_live, id);
    mf_view_state *v = st->views[e->view];
    mf_dev_state *d = device_of(m, v->pub.device);
    mf_sub_counts *c = &d->pub.sub;
    c->held_bytes -= e->requested;
    c->held_count--;
    mf_dev_scope *s = mf_keyed_get(m, &d->sub_scopes, e->scope);
    if (s)
        mf_scope_held_change(&s->held, d->sub_epoch, -(int64_t)e->requested, -1);
    if (how == MF_BLOCK_FREED) {
        c->free_count++;
        if (s)
            s->s.free_count++;
    } else if (how == MF_BLOCK_PROCESS_ENDED) {
        d->sub_unfreed_bytes += e->requested;
        d->sub_unfreed_count++;
        if (s) {
            s->s.live_bytes_end += e->requested;
            s->s.live_count_end++;
        }
    }
    mf_block b;
    sub_block_of(m, e, &b);
    b.free_ns = time_ns;
    b.end = (uint8_t)how;
    if (!st->opt.no_picture) {
        if (!v->sub_kept.worse)
            mf_picture_kept_init(&v->sub_kept, MF_SUB_KEPT);
        if (mf_topk_offer(&v->sub_kept, &b, NULL) < 0)
            st->oom = 1;
    }
    mf_live_remove(&st->sub_live, id);
}

/* The device a sub-block recorded on `device` at addr belongs to. */
static uint16_t placed_device(const mf_model *m, const mf_event *e)
{
    const mf_heap *h = heap_holding(m, e->log, e->addr);
    return h ? h->device : e->device;
}

void mf_sub_on_alloc(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    mf_dev_state *d;
    mf_view_state *v = mf_model_view_of(m, e->log, placed_device(m, e), &d);
    if (!v) {
        st->oom = 1;
        return;
    }
    uint32_t old = mf_live_find(&st->sub_live, e->log, e->device, e->flags, e->addr);
    if (old)
        end_sub(m, old, MF_BLOCK_REPLACED, e->time_ns);
    mf_live b = {
        .addr = e->addr, .requested = e->size, .actual = e->actual, .alloc_ns = e->time_ns,
        .scope = e->scope, .name = e->name, .tid = e->tid, .stack = e->stack,
        .view = v->index, .device = e->device, .flags = e->flags, .log = e->log,
    };
    if (!mf_live_insert(&st->sub_live, &b)) {
        st->oom = 1;
        return;
    }
    mf_sub_counts *c = &d->pub.sub;
    c->alloc_count++;
    c->alloc_bytes += e->size;
    c->held_bytes += e->size;
    c->held_count++;
    mf_dev_scope *s = mf_keyed_get(m, &d->sub_scopes, e->scope);
    if (s)
        mf_keyed_alloc(s, d->sub_epoch, e->size, e->time_ns);
    if (c->held_bytes > c->peak_bytes) {
        c->peak_bytes = c->held_bytes;
        c->peak_time_ns = e->time_ns;
        d->sub_epoch++;
    }
}

void mf_sub_on_free(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    uint32_t id = mf_live_find(&st->sub_live, e->log, e->device, e->flags, e->addr);
    if (id)
        end_sub(m, id, MF_BLOCK_FREED, e->time_ns);
    /* an unknown sub-block's end (registered before recording started) is
     * not an unknown free of the device: nothing of its memory was counted */
}

void mf_sub_on_process_end(mf_model *m, uint16_t log, uint64_t time_ns)
{
    struct mf_model_state *st = m->state;
    for (uint32_t id = mf_live_first(&st->sub_live, log); id;) {
        uint32_t next = mf_live_get(&st->sub_live, id)->next;
        end_sub(m, id, MF_BLOCK_PROCESS_ENDED, time_ns);
        id = next;
    }
}

void mf_sub_on_name(mf_model *m, const mf_event *e)
{
    struct mf_model_state *st = m->state;
    uint32_t id = mf_live_find(&st->sub_live, e->log, (uint16_t)e->extra, MF_FLAG_SUBBLOCK,
                               e->addr);
    if (id)
        mf_live_get(&st->sub_live, id)->name = e->name;
}

/* ---- settling ------------------------------------------------------------------------ */

int mf_sub_settle_device(mf_model *m, mf_dev_state *d)
{
    (void)m;
    free(d->pub.sub_scopes);
    d->pub.sub_scopes = mf_keyed_settle(&d->sub_scopes, d->sub_epoch, d->pub.sub.peak_bytes);
    d->pub.n_sub_scopes = d->pub.sub_scopes ? d->sub_scopes.n : 0;
    d->pub.sub.live_bytes_end = d->sub_unfreed_bytes + d->pub.sub.held_bytes;
    d->pub.sub.live_count_end = d->sub_unfreed_count + d->pub.sub.held_count;
    return d->pub.sub_scopes ? 0 : -1;
}

int mf_sub_settle_view(mf_model *m, mf_view_state *v)
{
    const struct mf_model_state *st = m->state;
    free(v->pub.subblocks);
    v->pub.subblocks = NULL;
    v->pub.n_subblocks = 0;
    v->pub.subblocks_left_out = 0;
    if (st->opt.no_picture)
        return 0;
    mf_topk all;
    mf_picture_kept_init(&all, MF_SUB_KEPT);
    for (size_t i = 0; i < v->sub_kept.n; i++)
        if (mf_topk_offer(&all, mf_topk_item(&v->sub_kept, i), NULL) < 0)
            goto oom;
    for (size_t log = 0; log < st->sub_live.n_logs; log++)
        for (uint32_t id = mf_live_first(&st->sub_live, (uint16_t)log); id;) {
            const mf_live *e = mf_live_get(&st->sub_live, id);
            id = e->next;
            if (e->view != v->index)
                continue;
            mf_block b;
            sub_block_of(m, e, &b);
            if (mf_topk_offer(&all, &b, NULL) < 0)
                goto oom;
        }
    v->pub.subblocks = malloc((all.n ? all.n : 1) * sizeof *v->pub.subblocks);
    if (!v->pub.subblocks || mf_topk_sorted(&all, v->pub.subblocks) < 0)
        goto oom;
    v->pub.n_subblocks = all.n;
    v->pub.subblocks_left_out = all.dropped + v->sub_kept.dropped;
    mf_topk_free(&all);
    return 0;
oom:
    mf_topk_free(&all);
    return -1;
}

void mf_sub_free(mf_model *m)
{
    struct mf_model_state *st = m->state;
    mf_live_free(&st->sub_live);
    free(st->heaps);
    for (size_t i = 0; i < st->n_devs; i++) {
        mf_keyed_free(&st->devs[i]->sub_scopes);
        free(st->devs[i]->pub.sub_scopes);
    }
}
