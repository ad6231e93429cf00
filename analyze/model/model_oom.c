/*
 * model_oom.c - out-of-memory post-mortems (see model_oom.h).  A probe
 * gathers the process's live blocks and sub-blocks on the device at the
 * OOM's moment (arrays, sorted once at the end for the gaps) and their
 * bytes by scope and by site (small tables); the post-mortem keeps the
 * top MF_OOM_TOP of each.  The cost is what was live, once per OOM, for
 * the first MF_OOM_KEPT of them.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model_oom.h"
#include "sites.h"

typedef struct range {
    uint64_t addr, end;
} range;

/* Bytes and blocks per id, a plain array searched linearly, then grown
 * into a hash when large. */
typedef struct tally {
    mf_oom_share *items;
    size_t n, cap;
    uint32_t *slots;          /* index + 1 by hash; 0 empty */
    size_t n_slots;
} tally;

/* What was live of one kind: the blocks, or the sub-blocks. */
typedef struct live_side {
    range *ranges;
    size_t n, cap;
    tally scopes, sites, grew;
} live_side;

enum { BLOCKS, SUBS };

struct mf_oom_probe {
    mf_oom r;
    struct mf_sites *sites;
    live_side side[2];        /* BLOCKS, SUBS */
    int oom;
};

const char *mf_oom_route_key(unsigned route)
{
    switch (route) {
    case MF_OOM_TORCH_TRACE: return "torch_trace";
    case MF_OOM_TORCH_OBSERVER: return "torch_observer";
    case MF_OOM_CUDA_API: return "cuda_api";
    case MF_OOM_KILLED: return "oom_killer";
    }
    return "unknown";
}

const char *mf_oom_route_name(unsigned route)
{
    switch (route) {
    case MF_OOM_TORCH_TRACE: return "PyTorch's allocator history";
    case MF_OOM_TORCH_OBSERVER: return "torch's out-of-memory observer";
    case MF_OOM_CUDA_API: return "a failed CUDA allocation (CUPTI)";
    case MF_OOM_KILLED: return "memflow run: an OOM killer killed the process";
    }
    return "unknown";
}

void mf_ooms_init(mf_ooms *o)
{
    memset(o, 0, sizeof *o);
}

static int tally_rehash(tally *t)
{
    size_t n = t->n_slots ? t->n_slots * 2 : 64;
    uint32_t *s = calloc(n, sizeof *s);
    if (!s)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        size_t j = (t->items[i].id * 2654435761u) & (n - 1);
        while (s[j])
            j = (j + 1) & (n - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = s;
    t->n_slots = n;
    return 0;
}

static int tally_add(tally *t, uint32_t id, uint64_t bytes)
{
    if ((t->n + 1) * 2 > t->n_slots && tally_rehash(t) < 0)
        return -1;
    size_t j = (id * 2654435761u) & (t->n_slots - 1);
    for (; t->slots[j]; j = (j + 1) & (t->n_slots - 1)) {
        mf_oom_share *s = &t->items[t->slots[j] - 1];
        if (s->id == id) {
            s->bytes += bytes;
            s->count++;
            return 0;
        }
    }
    if (mf_grow((void **)&t->items, &t->cap, t->n + 1, sizeof *t->items) < 0)
        return -1;
    t->items[t->n] = (mf_oom_share){ id, bytes, 1 };
    t->slots[j] = (uint32_t)++t->n;
    return 0;
}

static void tally_free(tally *t)
{
    free(t->items);
    free(t->slots);
}

/* Most bytes first, then the smaller id. */
static int by_bytes(const void *a, const void *b)
{
    const mf_oom_share *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The top of t into out (MF_OOM_TOP at most); how many. */
static size_t tally_top(tally *t, mf_oom_share *out)
{
    if (!t->n)
        return 0;
    qsort(t->items, t->n, sizeof *t->items, by_bytes);
    size_t n = t->n < MF_OOM_TOP ? t->n : MF_OOM_TOP;
    memcpy(out, t->items, n * sizeof *out);
    return n;
}

mf_oom_probe *mf_ooms_begin(mf_ooms *o, const mf_event *e, uint32_t pid, uint64_t t0_ns,
                            struct mf_sites *sites)
{
    o->total++;
    if (o->n >= MF_OOM_KEPT)
        return NULL;
    mf_oom_probe *p = calloc(1, sizeof *p);
    if (!p) {
        o->oom = 1;
        return NULL;
    }
    p->r = mf_oom_head(e, pid, t0_ns, sites);
    p->sites = sites;
    return p;
}

mf_oom mf_oom_head(const mf_event *e, uint32_t pid, uint64_t t0_ns, struct mf_sites *sites)
{
    const mf_ev_oom *x = &e->oom;
    uint64_t t0 = t0_ns && t0_ns <= e->time_ns ? t0_ns : e->time_ns;
    return (mf_oom){ .time_ns = e->time_ns, .pid = pid, .device = e->device,
                     .route = x->route, .requested = x->requested,
                     .device_free = x->device_free, .device_limit = x->device_limit,
                     .scope = x->scope,
                     .site = sites ? mf_sites_of_stack(sites, x->stack) : MF_SITE_NONE,
                     .grew_since_ns = e->time_ns - (e->time_ns - t0) / 10 };
}

/* Live block b of one side: its range, and its bytes (requested) by
 * scope, by site and, if it grew, in grew. */
static int add_live(mf_oom_probe *p, live_side *s, const mf_block *b)
{
    if (mf_grow((void **)&s->ranges, &s->cap, s->n + 1, sizeof *s->ranges) < 0 ||
        tally_add(&s->scopes, b->scope, b->requested) < 0 ||
        (p->sites && tally_add(&s->sites, mf_sites_of_stack(p->sites, b->stack),
                               b->requested) < 0) ||
        (b->alloc_ns >= p->r.grew_since_ns && tally_add(&s->grew, b->scope, b->requested) < 0))
        p->oom = 1;
    else
        s->ranges[s->n++] = (range){ b->addr, b->addr + mf_block_span(b) };
    return 0;
}

int mf_oom_probe_block(const mf_block *b, void *ctx)
{
    mf_oom_probe *p = ctx;
    p->r.reserved_bytes += b->requested;
    p->r.reserved_count++;
    return add_live(p, &p->side[BLOCKS], b);
}

int mf_oom_probe_sub(const mf_block *b, void *ctx)
{
    mf_oom_probe *p = ctx;
    p->r.allocated_bytes += b->requested;
    p->r.allocated_count++;
    return add_live(p, &p->side[SUBS], b);
}

static int by_addr(const void *a, const void *b)
{
    const range *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The largest range inside a block that no sub-block covers. */
static uint64_t largest_gap(mf_oom_probe *p)
{
    live_side *b = &p->side[BLOCKS], *t = &p->side[SUBS];
    if (!b->n || !t->n)
        return 0;              /* sub-blocks only when some are live (the caller's rule) */
    qsort(b->ranges, b->n, sizeof *b->ranges, by_addr);
    qsort(t->ranges, t->n, sizeof *t->ranges, by_addr);
    uint64_t best = 0;
    size_t k = 0;
    for (size_t i = 0; i < b->n; i++) {
        uint64_t at = b->ranges[i].addr, end = b->ranges[i].end;
        while (k < t->n && t->ranges[k].end <= at)
            k++;
        for (size_t j = k; j < t->n && t->ranges[j].addr < end; j++) {
            if (t->ranges[j].addr > at && t->ranges[j].addr - at > best)
                best = t->ranges[j].addr - at;
            if (t->ranges[j].end > at)
                at = t->ranges[j].end;
        }
        if (end > at && end - at > best)
            best = end - at;
    }
    return best;
}

static void probe_free(mf_oom_probe *p)
{
    for (int i = 0; i < 2; i++) {
        free(p->side[i].ranges);
        tally_free(&p->side[i].scopes);
        tally_free(&p->side[i].sites);
        tally_free(&p->side[i].grew);
    }
    free(p);
}

int mf_ooms_end(mf_ooms *o, mf_oom_probe *p)
{
    mf_oom *r = &p->r;
    r->tensors = p->side[SUBS].n > 0;
    live_side *s = &p->side[r->tensors ? SUBS : BLOCKS];   /* what was live */
    if (r->tensors)
        r->largest_gap = largest_gap(p);
    r->n_by_scope = tally_top(&s->scopes, r->by_scope);
    r->n_by_site = tally_top(&s->sites, r->by_site);
    for (size_t i = 0; i < s->grew.n; i++)
        r->grew_bytes += s->grew.items[i].bytes;
    r->n_grew = tally_top(&s->grew, r->grew);
    int rc = p->oom ? -1 : 0;
    if (rc == 0 && mf_grow((void **)&o->kept, &o->cap, o->n + 1, sizeof *o->kept) < 0)
        rc = -1;
    if (rc == 0)
        o->kept[o->n++] = *r;
    if (rc < 0)
        o->oom = 1;
    probe_free(p);
    return rc;
}

void mf_ooms_settle(const mf_ooms *o, mf_model *out)
{
    out->ooms = o->kept;
    out->n_ooms = o->n;
    out->ooms_total = o->total;
}

void mf_ooms_free(mf_ooms *o)
{
    free(o->kept);
    memset(o, 0, sizeof *o);
}
