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

#define SUB_KEPT 4096u            /* sub-blocks kept to draw, per view */

/* An NVTX heap registered and not unregistered: where its regions belong. */
typedef struct mf_heap {
    uint64_t addr, size;
    uint16_t log, device;     /* the device of the live block at addr, else as recorded */
} mf_heap;

typedef struct mf_sub_device {
    mf_sub_counts counts;
    mf_keyed scopes;          /* by scope string id */
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

int mf_sub_add_device(mf_subblocks *s)
{
    mf_sub_device *d = calloc(1, sizeof *d);
    if (!d || mf_grow((void **)&s->devs, &s->cap_devs, s->n_devs + 1, sizeof *s->devs) < 0) {
        free(d);
        return -1;
    }
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

static void sub_block_of(const mf_subblocks *s, const mf_live *e, mf_block *out)
{
    const mf_sub_view *v = s->views[e->view];
    *out = (mf_block){
        .addr = e->addr, .requested = e->requested, .actual = e->actual,
        .alloc_ns = e->alloc_ns, .free_ns = MF_LIVE_AT_END, .scope = e->scope, .name = e->name,
        .tid = e->tid, .pid = v->pid, .stack = e->stack, .device = v->device,
        .flags = e->flags, .end = MF_BLOCK_LIVE,
    };
}

static void end_sub(mf_subblocks *s, uint32_t id, unsigned how, uint64_t time_ns)
{
    const mf_live *e = mf_live_get(&s->live, id);
    mf_sub_view *v = s->views[e->view];
    mf_sub_device *d = s->devs[v->slot];
    mf_sub_counts *c = &d->counts;
    c->held_bytes -= e->requested;
    c->held_count--;
    mf_keyed_entry *k = mf_keyed_get(&d->scopes, e->scope);
    if (k)
        mf_scope_held_change(&k->held, d->epoch, -(int64_t)e->requested, -1);
    else
        s->oom = 1;
    if (how == MF_BLOCK_FREED) {
        c->free_count++;
        if (k)
            k->s.free_count++;
    } else if (how == MF_BLOCK_PROCESS_ENDED) {
        d->unfreed_bytes += e->requested;
        d->unfreed_count++;
        if (k) {
            k->s.live_bytes_end += e->requested;
            k->s.live_count_end++;
        }
    }
    mf_block b;
    sub_block_of(s, e, &b);
    b.free_ns = time_ns;
    b.end = (uint8_t)how;
    if (s->keep_picture) {
        if (!v->kept.worse)
            mf_picture_kept_init(&v->kept, SUB_KEPT);
        if (mf_topk_offer(&v->kept, &b, NULL) < 0)
            s->oom = 1;
    }
    mf_live_remove(&s->live, id);
}

int mf_sub_on_alloc(mf_subblocks *s, const mf_event *e, uint32_t view)
{
    const mf_ev_alloc *a = &e->alloc;
    mf_sub_device *d = s->devs[s->views[view]->slot];
    uint32_t old = mf_live_find(&s->live, e->log, e->device, a->flags, a->addr);
    if (old)
        end_sub(s, old, MF_BLOCK_REPLACED, e->time_ns);
    mf_live b = {
        .addr = a->addr, .requested = a->requested, .actual = a->actual, .alloc_ns = e->time_ns,
        .scope = a->scope, .name = a->name, .tid = e->tid, .stack = a->stack,
        .view = view, .device = e->device, .flags = a->flags, .log = e->log,
    };
    if (!mf_live_insert(&s->live, &b))
        return -1;
    mf_sub_counts *c = &d->counts;
    c->alloc_count++;
    c->alloc_bytes += a->requested;
    c->held_bytes += a->requested;
    c->held_count++;
    mf_keyed_entry *k = mf_keyed_get(&d->scopes, a->scope);
    if (k)
        mf_keyed_alloc(k, d->epoch, a->requested, e->time_ns);
    else
        s->oom = 1;
    if (c->held_bytes > c->peak_bytes) {
        c->peak_bytes = c->held_bytes;
        c->peak_time_ns = e->time_ns;
        d->epoch++;
    }
    return s->oom ? -1 : 0;
}

int mf_sub_on_free(mf_subblocks *s, const mf_event *e)
{
    uint32_t id = mf_live_find(&s->live, e->log, e->device, e->free.flags, e->free.addr);
    if (id)
        end_sub(s, id, MF_BLOCK_FREED, e->time_ns);
    /* an unknown sub-block's end (registered before recording started) is
     * not an unknown free of the device: nothing of its memory was counted */
    return s->oom ? -1 : 0;
}

int mf_sub_on_process_end(mf_subblocks *s, uint16_t log, uint64_t time_ns)
{
    for (uint32_t id = mf_live_first(&s->live, log); id;) {
        uint32_t next = mf_live_get(&s->live, id)->next;
        end_sub(s, id, MF_BLOCK_PROCESS_ENDED, time_ns);
        id = next;
    }
    return s->oom ? -1 : 0;
}

int mf_sub_on_name(mf_subblocks *s, const mf_event *e)
{
    const mf_ev_trace *t = &e->trace;   /* arg: the device (| role << 16), value: the address */
    uint32_t id = mf_live_find(&s->live, e->log, (uint16_t)t->arg, MF_FLAG_SUBBLOCK, t->value);
    if (id)
        mf_live_get(&s->live, id)->name = t->name;
    return id != 0;
}

/* ---- settling ------------------------------------------------------------------------ */

int mf_sub_settle_device(mf_subblocks *s, uint32_t slot, mf_device_model *out)
{
    mf_sub_device *d = s->devs[slot];
    free(d->scopes_out);
    out->sub = d->counts;
    out->sub_scopes = d->scopes_out = mf_keyed_settle(&d->scopes, d->epoch, d->counts.peak_bytes);
    out->n_sub_scopes = d->scopes_out ? d->scopes.n : 0;
    out->sub.live_bytes_end = d->unfreed_bytes + d->counts.held_bytes;
    out->sub.live_count_end = d->unfreed_count + d->counts.held_count;
    return d->scopes_out ? 0 : -1;
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
            id = e->next;
            if (e->view != view)
                continue;
            mf_block b;
            sub_block_of(s, e, &b);
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
    for (size_t i = 0; i < s->n_devs; i++) {
        mf_keyed_free(&s->devs[i]->scopes);
        free(s->devs[i]->scopes_out);
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
