/*
 * index_build.c - the view index built in one streaming pass: the model
 * tells each block as it starts and ends (mf_model_options.on_block).  A
 * start counts in its view's legend, address ranges and occupancy and in
 * the sweep of cells (index_cells.c); an end does the same backwards and
 * keeps the block in the open time bucket of its lifetime level.  A role
 * change (on_role) moves the block's bytes between roles in the legend and
 * the sweep; an OOM (on_oom) joins its view's list.  A bucket
 * of level k holds blocks that started in it and lived at most 2^(shift of
 * k) ns, so once time is two buckets past it no block of it is still to
 * end: it is written (blocks as varints) and freed.  Memory: the open
 * buckets, the sweep, and, while a log is written, the blocks still live.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "index_state.h"

/* ---- views ------------------------------------------------------------------------- */

int ix_view_of(mf_index *ix, uint16_t device, uint32_t pid)
{
    if (ix->last_view < ix->n_views && ix->views[ix->last_view].pub.device == device &&
        ix->views[ix->last_view].pub.pid == pid)
        return (int)ix->last_view;
    for (size_t i = 0; i < ix->n_views; i++)
        if (ix->views[i].pub.device == device && ix->views[i].pub.pid == pid)
            return (int)(ix->last_view = i);
    if (mf_grow((void **)&ix->views, &ix->cap_views, ix->n_views + 1, sizeof *ix->views) < 0)
        return -1;
    ix_view *v = &ix->views[ix->n_views];
    memset(v, 0, sizeof *v);
    v->levels = calloc(MF_INDEX_LEVELS, sizeof *v->levels);
    if (!v->levels)
        return -1;
    ix_view_init_levels(v);
    v->gshift = IX_GSHIFT0;
    v->col = IX_NONE;
    v->pub.device = device;
    v->pub.pid = pid;
    v->pub.first_ns = UINT64_MAX;
    v->pub.min_addr = UINT64_MAX;
    return (int)(ix->last_view = ix->n_views++);
}

/* Every level empty: no open column, bucket or occupancy column. */
void ix_view_init_levels(ix_view *v)
{
    for (int l = 0; l < MF_INDEX_LEVELS; l++) {
        v->levels[l].col = IX_NONE;
        for (int k = 0; k < IX_BUCKET_RING; k++)
            v->levels[l].buckets[k].key = IX_NONE;
        v->levels[l].occ.col = IX_NONE;
    }
}

void ix_view_free(ix_view *v)
{
    ix_cells_free(v);
    for (int l = 0; v->levels && l < MF_INDEX_LEVELS; l++) {
        ix_level *L = &v->levels[l];
        for (int k = 0; k < IX_BUCKET_RING; k++)
            free(L->buckets[k].bytes.p);
        free(L->cell_dir.e);
        free(L->block_dir.e);
        free(L->occ_dir.e);
        free(L->occ_page);
    }
    free(v->levels);
    free(v->program);
    free(v->pub.scopes);
    free(v->pub.ooms);
    free(v->scope_slots);
    mf_ranges_free(&v->pub.ranges);
}

/* The legend: requested bytes and blocks per scope (a hash of indices). */
static void count_scope(mf_index *ix, ix_view *v, uint32_t scope, uint64_t bytes)
{
    if (v->pub.n_scopes * 2 >= v->n_scope_slots) {
        size_t n = v->n_scope_slots ? v->n_scope_slots * 2 : 64;
        size_t *slots = calloc(n, sizeof *slots);
        if (!slots || mf_grow((void **)&v->pub.scopes, &v->cap_scopes, n / 2,
                              sizeof *v->pub.scopes) < 0) {
            free(slots);
            ix->failed = 1;
            return;
        }
        for (size_t i = 0; i < v->pub.n_scopes; i++) {
            size_t h = (v->pub.scopes[i].scope * 2654435761u) & (n - 1);
            while (slots[h])
                h = (h + 1) & (n - 1);
            slots[h] = i + 1;
        }
        free(v->scope_slots);
        v->scope_slots = slots;
        v->n_scope_slots = n;
    }
    size_t h = (scope * 2654435761u) & (v->n_scope_slots - 1);
    while (v->scope_slots[h] && v->pub.scopes[v->scope_slots[h] - 1].scope != scope)
        h = (h + 1) & (v->n_scope_slots - 1);
    if (!v->scope_slots[h]) {
        v->pub.scopes[v->pub.n_scopes] = (mf_index_scope){ .scope = scope };
        v->scope_slots[h] = ++v->pub.n_scopes;
    }
    mf_index_scope *s = &v->pub.scopes[v->scope_slots[h] - 1];
    s->bytes += bytes;
    s->count++;
}

static int by_bytes(const void *pa, const void *pb)
{
    const mf_index_scope *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return a->scope < b->scope ? -1 : a->scope > b->scope;
}

/* The legends in their order (the scope hashes are rebuilt on the next count). */
void ix_settle_views(mf_index *ix)
{
    for (size_t i = 0; i < ix->n_views; i++) {
        ix_view *v = &ix->views[i];
        qsort(v->pub.scopes, v->pub.n_scopes, sizeof *v->pub.scopes, by_bytes);
        if (v->scope_slots) {
            memset(v->scope_slots, 0, v->n_scope_slots * sizeof *v->scope_slots);
            for (size_t k = 0; k < v->pub.n_scopes; k++) {
                size_t h = (v->pub.scopes[k].scope * 2654435761u) & (v->n_scope_slots - 1);
                while (v->scope_slots[h])
                    h = (h + 1) & (v->n_scope_slots - 1);
                v->scope_slots[h] = k + 1;
            }
        }
    }
}

/* ---- occupancy --------------------------------------------------------------------------- */

static void occ_write_page(mf_index *ix, ix_level *L)
{
    uint64_t off;
    if (!L->n_occ_page)
        return;
    size_t bytes = L->n_occ_page * sizeof *L->occ_page;
    if (ix_write(ix, L->occ_page, bytes, &off) < 0 ||
        !ix_dir_add(&L->occ_dir, L->occ_page[0].col, off, bytes, L->n_occ_page, 0))
        ix->failed = 1;
    L->n_occ_page = 0;
}

/* Close level l's open occupancy column: write it, merge it into l + 1. */
static void occ_close(mf_index *ix, ix_view *v, int l)
{
    ix_level *L = &v->levels[l];
    if (L->occ.col == IX_NONE)
        return;
    if (!L->occ_page && !(L->occ_page = malloc(IX_OCC_PAGE * sizeof *L->occ_page))) {
        ix->failed = 1;
        return;
    }
    L->occ_page[L->n_occ_page++] = L->occ;
    if (L->n_occ_page == IX_OCC_PAGE)
        occ_write_page(ix, L);
    mf_index_occ o = L->occ;
    L->occ.col = IX_NONE;
    if (l + 1 >= MF_INDEX_LEVELS)
        return;
    ix_level *U = &v->levels[l + 1];
    if (U->occ.col != IX_NONE && U->occ.col != o.col >> 1)
        occ_close(ix, v, l + 1);
    if (U->occ.col == IX_NONE) {
        U->occ = o;
        U->occ.col = o.col >> 1;
        return;
    }
    U->occ.min = o.min < U->occ.min ? o.min : U->occ.min;
    U->occ.max = o.max > U->occ.max ? o.max : U->occ.max;
    U->occ.last = o.last;
    if (o.sample != UINT64_MAX && (U->occ.sample == UINT64_MAX || o.sample > U->occ.sample))
        U->occ.sample = o.sample;
}

/* The open level-0 column for time t (closing the one before). */
static mf_index_occ *occ_at(mf_index *ix, ix_view *v, uint64_t t)
{
    ix_level *L = &v->levels[0];
    uint64_t col = (t > ix->t0 ? t - ix->t0 : 0) >> ix->wshift;
    if (L->occ.col != IX_NONE && col > L->occ.col)
        occ_close(ix, v, 0);
    if (L->occ.col == IX_NONE) {
        uint64_t h = v->pub.held_bytes;
        L->occ = (mf_index_occ){ .col = col, .min = h, .max = h, .last = h,
                                 .sample = UINT64_MAX };
    }
    return &L->occ;
}

static void occ_move(mf_index *ix, ix_view *v, uint64_t t)
{
    mf_index_occ *o = occ_at(ix, v, t);
    uint64_t h = v->pub.held_bytes;
    o->min = h < o->min ? h : o->min;
    o->max = h > o->max ? h : o->max;
    o->last = h;
    if (h > v->pub.peak_bytes) {
        v->pub.peak_bytes = h;
        v->pub.peak_ns = t;
    }
}

void ix_on_sample(mf_index *ix, const mf_event *e, const mf_sample_values *vals)
{
    const mf_log_info *info = mf_reader_log(ix->reader, e->log);
    if (!info)
        return;
    int vi = ix_view_of(ix, e->device, info->header.pid);
    if (vi < 0) {
        ix->failed = 1;
        return;
    }
    ix_view *v = &ix->views[vi];
    uint64_t s = vals[e->sample.index].value[MF_DEVICE_KIND(e->device) == MF_DEVICE_GPU
                                      ? MF_SAMPLE_GPU_USED : MF_SAMPLE_ACTIVE];
    mf_index_occ *o = occ_at(ix, v, e->time_ns);
    if (o->sample == UINT64_MAX || s > o->sample)
        o->sample = s;
}

/* ---- the blocks still live ----------------------------------------------------------------- */

static size_t live_hash(uint32_t view, uint64_t addr, uint64_t alloc_ns, size_t mask)
{
    uint64_t h = (addr * 0x9e3779b97f4a7c15ull) ^ (alloc_ns * 0xc2b2ae3d27d4eb4full) ^ view;
    return (size_t)(h ^ (h >> 29)) & mask;
}

static int live_rehash(ix_live *L, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < L->n; i++) {
        size_t h = live_hash(L->b[i].view, L->b[i].addr, L->b[i].alloc_ns, n_slots - 1);
        while (slots[h])
            h = (h + 1) & (n_slots - 1);
        slots[h] = (uint32_t)i + 1;
    }
    free(L->slots);
    L->slots = slots;
    L->n_slots = n_slots;
    L->used = L->n;
    return 0;
}

static int live_add(ix_live *L, const mf_index_block *b)
{
    if ((L->used + 1) * 2 > L->n_slots &&
        live_rehash(L, !L->n_slots ? 1024 : (L->n + 1) * 4 > L->n_slots ? L->n_slots * 2
                                                                        : L->n_slots) < 0)
        return -1;
    if (L->n >= UINT32_MAX - 2 || mf_grow((void **)&L->b, &L->cap, L->n + 1, sizeof *L->b) < 0)
        return -1;
    L->b[L->n] = *b;
    size_t h = live_hash(b->view, b->addr, b->alloc_ns, L->n_slots - 1);
    while (L->slots[h] && L->slots[h] != UINT32_MAX)
        h = (h + 1) & (L->n_slots - 1);
    if (!L->slots[h])
        L->used++;
    L->slots[h] = (uint32_t)++L->n;
    return 0;
}

/* The slot holding the live block of (view, addr, alloc_ns), or SIZE_MAX. */
static size_t live_find(const ix_live *L, uint32_t view, uint64_t addr, uint64_t alloc_ns)
{
    if (!L->n_slots)
        return SIZE_MAX;
    size_t h = live_hash(view, addr, alloc_ns, L->n_slots - 1);
    for (; L->slots[h]; h = (h + 1) & (L->n_slots - 1)) {
        if (L->slots[h] == UINT32_MAX)
            continue;
        const mf_index_block *b = &L->b[L->slots[h] - 1];
        if (b->view == view && b->addr == addr && b->alloc_ns == alloc_ns)
            return h;
    }
    return SIZE_MAX;
}

static void live_remove(ix_live *L, size_t slot)
{
    size_t i = L->slots[slot] - 1, last = L->n - 1;
    L->slots[slot] = UINT32_MAX;
    if (i != last) {
        size_t s = live_find(L, L->b[last].view, L->b[last].addr, L->b[last].alloc_ns);
        L->b[i] = L->b[last];
        L->slots[s] = (uint32_t)i + 1;
    }
    L->n--;
}

/* ---- buckets of blocks ------------------------------------------------------------------ */

/* The end a block is drawn to: its free, or the index's end when live. */
uint64_t ix_block_end(const mf_index *ix, const mf_index_block *b)
{
    if (b->free_ns != MF_LIVE_AT_END)
        return b->free_ns;
    return ix->t1 > b->alloc_ns ? ix->t1 : b->alloc_ns;
}

/* The lifetime level of b: the first whose buckets are at least as long. */
static int life_level(const mf_index *ix, const mf_index_block *b)
{
    uint64_t life = ix_block_end(ix, b) - b->alloc_ns;
    int k = 0;
    while (k < MF_INDEX_LEVELS - 1 && ix_bucket_shift(ix, k) < 62 &&
           life > (1ull << ix_bucket_shift(ix, k)))
        k++;
    return k;
}

/* Which of the fields after the sizes differ from the block before. */
enum { F_SCOPE = 1, F_NAME = 2, F_TID = 4, F_STACK = 8, F_FLAGS = 16, F_END = 32, F_ROLE = 64 };

static void encode_block(ix_out *o, const mf_index_block *b, const mf_index_block *prev,
                         uint64_t start)
{
    unsigned mask = (b->scope != prev->scope ? F_SCOPE : 0) | (b->name != prev->name ? F_NAME : 0) |
                    (b->tid != prev->tid ? F_TID : 0) | (b->stack != prev->stack ? F_STACK : 0) |
                    (b->flags != prev->flags ? F_FLAGS : 0) | (b->end != prev->end ? F_END : 0) |
                    (b->role != prev->role ? F_ROLE : 0);
    ix_put_var(o, b->alloc_ns - start);
    ix_put_var(o, b->free_ns == MF_LIVE_AT_END ? 0 : b->free_ns - b->alloc_ns + 1);
    ix_put_var(o, ix_zig((int64_t)(b->addr - prev->addr)));
    ix_put_var(o, b->requested);
    ix_put_var(o, ix_zig((int64_t)(b->actual - b->requested)));
    ix_put_u8(o, mask);
    if (mask & F_SCOPE)
        ix_put_var(o, b->scope);
    if (mask & F_NAME)
        ix_put_var(o, b->name);
    if (mask & F_TID)
        ix_put_var(o, b->tid);
    if (mask & F_STACK)
        ix_put_var(o, b->stack);
    if (mask & F_FLAGS)
        ix_put_var(o, b->flags);
    if (mask & F_END)
        ix_put_u8(o, b->end);
    if (mask & F_ROLE)
        ix_put_u8(o, b->role);
}

static int decode_block(ix_in *in, mf_index_block *b, uint64_t start)
{
    uint64_t at = ix_get_var(in), life = ix_get_var(in);
    b->alloc_ns = start + at;
    b->free_ns = life ? b->alloc_ns + life - 1 : MF_LIVE_AT_END;
    b->addr += (uint64_t)ix_unzig(ix_get_var(in));
    b->requested = ix_get_var(in);
    b->actual = b->requested + (uint64_t)ix_unzig(ix_get_var(in));
    unsigned mask = ix_get_u8(in);
    if (mask & F_SCOPE)
        b->scope = (uint32_t)ix_get_var(in);
    if (mask & F_NAME)
        b->name = (uint32_t)ix_get_var(in);
    if (mask & F_TID)
        b->tid = (uint32_t)ix_get_var(in);
    if (mask & F_STACK)
        b->stack = (uint32_t)ix_get_var(in);
    if (mask & F_FLAGS)
        b->flags = (uint16_t)ix_get_var(in);
    if (mask & F_END)
        b->end = (uint8_t)ix_get_u8(in);
    if (mask & F_ROLE)
        b->role = (uint8_t)ix_get_u8(in);
    return in->bad || (mask & ~127u) ? -1 : 0;
}

/* The blocks of a piece's bytes in[...], count of them, bucket start start. */
static int decode_blocks(mf_index *ix, ix_in *in, uint64_t count, uint64_t start, uint32_t view,
                         int k, int (*fn)(void *ctx, const mf_index_block *b), void *ctx)
{
    mf_index_block b = { .view = view, .level = (uint8_t)k };
    (void)ix;
    for (uint64_t i = 0; i < count; i++) {
        if (decode_block(in, &b, start) < 0)
            return -1;
        int rc = fn(ctx, &b);
        if (rc)
            return rc;
    }
    return in->bad || in->at != in->n ? -1 : 0;
}

int ix_decode_blocks(mf_index *ix, const ix_dirent *e, int k, uint32_t view,
                     int (*fn)(void *ctx, const mf_index_block *b), void *ctx, char *err,
                     size_t errlen)
{
    ix_in in;
    if (ix_read_piece(ix, e, &in, err, errlen) < 0)
        return -1;
    int rc = decode_blocks(ix, &in, e->count, ix->t0 + (e->key << ix_bucket_shift(ix, k)), view,
                           k, fn, ctx);
    if (rc < 0)
        snprintf(err, errlen, "%s: a bucket of blocks at offset %llu is damaged", ix->path,
                 (unsigned long long)e->offset);
    return rc;
}

int ix_open_blocks(mf_index *ix, const ix_bucket *bk, int k, uint32_t view,
                   int (*fn)(void *ctx, const mf_index_block *b), void *ctx, char *err,
                   size_t errlen)
{
    ix_in in = { .p = bk->bytes.p, .n = bk->bytes.n };
    int rc = decode_blocks(ix, &in, bk->n, ix->t0 + (bk->key << ix_bucket_shift(ix, k)), view, k,
                           fn, ctx);
    if (rc < 0)
        snprintf(err, errlen, "an open bucket of blocks is damaged (out of memory?)");
    return rc;
}

/* Write bytes (count blocks spanning [lo, hi)) as one piece of bucket key. */
static void write_piece(mf_index *ix, ix_dir *d, uint64_t key, const ix_out *o, uint64_t count,
                        uint64_t lo, uint64_t hi)
{
    uint64_t off;
    ix_dirent *e;
    if (o->bad || ix_write(ix, o->p, o->n, &off) < 0 ||
        !(e = ix_dir_add(d, key, off, o->n, count, 0))) {
        ix->failed = 1;
        return;
    }
    e->lo = lo;
    e->hi = hi;
}

static int keep_decoded(void *ctx, const mf_index_block *b)
{
    mf_index_block **at = ctx;
    *(*at)++ = *b;
    return 0;
}

static int by_addr(const void *pa, const void *pb)
{
    const mf_index_block *a = pa, *b = pb;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return a->alloc_ns < b->alloc_ns ? -1 : a->alloc_ns > b->alloc_ns;
}

/* A large bucket (long-lived blocks, mostly): sorted by address and cut
 * into pieces with their own address bounds, so a window narrow in
 * address reads few of them. */
static int write_sorted(mf_index *ix, ix_view *v, int k, ix_bucket *bk)
{
    mf_index_block *all = malloc(bk->n * sizeof *all), *at = all;
    uint64_t start = ix->t0 + (bk->key << ix_bucket_shift(ix, k));
    ix_in in = { .p = bk->bytes.p, .n = bk->bytes.n };
    if (!all || decode_blocks(ix, &in, bk->n, start, 0, k, keep_decoded, &at) != 0) {
        free(all);
        return -1;
    }
    qsort(all, bk->n, sizeof *all, by_addr);
    ix_out o = { 0 };
    for (uint64_t i = 0; i < bk->n; i += IX_PIECE_BLOCKS) {
        uint64_t n = bk->n - i < IX_PIECE_BLOCKS ? bk->n - i : IX_PIECE_BLOCKS, hi = 0;
        mf_index_block prev = { 0 };
        o.n = 0;
        for (uint64_t j = i; j < i + n; j++) {
            encode_block(&o, &all[j], &prev, start);
            prev = all[j];
            uint64_t end = all[j].addr + ix_span(&all[j]);
            hi = end < all[j].addr ? UINT64_MAX : end > hi ? end : hi;
        }
        write_piece(ix, &v->levels[k].block_dir, bk->key, &o, n, all[i].addr, hi);
    }
    free(o.p);
    free(all);
    return 0;
}

static void write_bucket(mf_index *ix, ix_view *v, int k, ix_bucket *bk)
{
    if (bk->n > IX_SORT_MIN && write_sorted(ix, v, k, bk) == 0)
        ;
    else if (bk->n)
        write_piece(ix, &v->levels[k].block_dir, bk->key, &bk->bytes, bk->n, bk->lo, bk->hi);
    bk->key = IX_NONE;
    bk->n = 0;
    bk->bytes.n = 0;
    bk->prev = (mf_index_block){ 0 };
}

/* Write level k's buckets that no block still to come can reach (all: every one). */
static void flush_buckets(mf_index *ix, ix_view *v, int k, int all)
{
    uint64_t now = ix_rel(ix, ix->now) >> ix_bucket_shift(ix, k);
    for (int pass = 0; pass < IX_BUCKET_RING; pass++) {
        ix_bucket *oldest = NULL;
        for (int i = 0; i < IX_BUCKET_RING; i++) {
            ix_bucket *bk = &v->levels[k].buckets[i];
            if (bk->key != IX_NONE && (all || bk->key + 2 <= now) &&
                (!oldest || bk->key < oldest->key))
                oldest = bk;
        }
        if (!oldest)
            return;
        write_bucket(ix, v, k, oldest);
    }
}

static void keep_block(mf_index *ix, ix_view *v, const mf_index_block *b)
{
    int k = life_level(ix, b);
    unsigned shift = ix_bucket_shift(ix, k);
    uint64_t key = ix_rel(ix, b->alloc_ns) >> shift;
    ix_bucket *bk = &v->levels[k].buckets[key % IX_BUCKET_RING];
    if (bk->key != key && bk->key != IX_NONE)
        flush_buckets(ix, v, k, 0);
    if (bk->key != key && bk->key != IX_NONE)     /* only when events go back in time */
        write_bucket(ix, v, k, bk);
    uint64_t end = b->addr + ix_span(b);
    end = end < b->addr ? UINT64_MAX : end;
    if (bk->key != key) {
        bk->key = key;
        bk->lo = b->addr;
        bk->hi = end;
    }
    bk->lo = b->addr < bk->lo ? b->addr : bk->lo;
    bk->hi = end > bk->hi ? end : bk->hi;
    encode_block(&bk->bytes, b, &bk->prev, ix->t0 + (key << shift));
    bk->prev = *b;
    bk->n++;
}

/* Write the buckets of view v that time has passed (every cell-level column). */
static void flush_view(mf_index *ix, ix_view *v)
{
    for (int k = 0; k < MF_INDEX_LEVELS; k++)
        flush_buckets(ix, v, k, 0);
}

void ix_flush(mf_index *ix)
{
    for (size_t i = 0; i < ix->n_views; i++)
        flush_view(ix, &ix->views[i]);
}

/* ---- a block starts or ends ------------------------------------------------------------------ */

static void block_starts(mf_index *ix, ix_view *v, const mf_index_block *b)
{
    if (ix->track_live && live_add(&ix->live, b) < 0)
        ix->failed = 1;
    v->pub.held_bytes += b->requested;
    v->held_actual += b->actual;
    v->pub.blocks++;
    v->pub.first_ns = b->alloc_ns < v->pub.first_ns ? b->alloc_ns : v->pub.first_ns;
    v->pub.last_ns = b->alloc_ns > v->pub.last_ns ? b->alloc_ns : v->pub.last_ns;
    uint64_t span = ix_span(b);
    uint64_t end = b->addr + span < b->addr ? UINT64_MAX : b->addr + span;
    v->pub.min_addr = b->addr < v->pub.min_addr ? b->addr : v->pub.min_addr;
    v->pub.max_addr = end > v->pub.max_addr ? end : v->pub.max_addr;
    if (mf_ranges_add(&v->pub.ranges, b->addr, end) < 0)
        ix->failed = 1;
    count_scope(ix, v, b->scope, b->requested);
    v->pub.role_bytes[b->role & MF_ROLE_MASK] += b->requested;
    v->pub.role_count[b->role & MF_ROLE_MASK]++;
    occ_move(ix, v, b->alloc_ns);
    ix_cells_change(ix, v, b->alloc_ns, b, 1);
}

static void block_ends(mf_index *ix, ix_view *v, const mf_index_block *b)
{
    if (ix->track_live) {
        size_t slot = live_find(&ix->live, b->view, b->addr, b->alloc_ns);
        if (slot != SIZE_MAX)
            live_remove(&ix->live, slot);
    }
    v->pub.held_bytes -= b->requested < v->pub.held_bytes ? b->requested : v->pub.held_bytes;
    v->held_actual -= b->actual < v->held_actual ? b->actual : v->held_actual;
    v->pub.last_ns = b->free_ns > v->pub.last_ns ? b->free_ns : v->pub.last_ns;
    if (b->end == MF_BLOCK_PROCESS_ENDED && b->requested > v->pub.largest_leak.requested)
        v->pub.largest_leak = *b;
    occ_move(ix, v, b->free_ns);
    ix_cells_change(ix, v, b->free_ns, b, -1);
    keep_block(ix, v, b);
}

/* The view of block mb, with time passed to t (columns and buckets it
 * passed written); NULL when out of memory. */
static ix_view *view_at(mf_index *ix, const mf_block *mb, uint64_t t)
{
    int vi = ix_view_of(ix, mb->device, mb->pid);
    if (vi < 0) {
        ix->failed = 1;
        return NULL;
    }
    ix_view *v = &ix->views[vi];
    ix->now = t > ix->now ? t : ix->now;
    ix->t1 = t > ix->t1 ? t : ix->t1;
    uint64_t col = ix_rel(ix, t) >> ix_bucket_shift(ix, 0);
    ix_cells_advance(ix, v, t);
    if (col > v->flushed_col) {
        v->flushed_col = col;
        flush_view(ix, v);
    }
    return v;
}

/* Block mb as the index keeps it, in view vi. */
static mf_index_block index_block(const mf_block *mb, int ended, size_t vi)
{
    return (mf_index_block){
        .addr = mb->addr, .requested = mb->requested, .actual = mb->actual,
        .alloc_ns = mb->alloc_ns, .free_ns = ended ? mb->free_ns : MF_LIVE_AT_END,
        .scope = mb->scope, .name = mb->name, .tid = mb->tid, .stack = mb->stack,
        .flags = mb->flags, .end = ended ? mb->end : MF_BLOCK_LIVE, .role = mb->role,
        .view = (uint32_t)vi,
    };
}

void ix_on_block(void *ctx, const mf_block *mb, int ended)
{
    mf_index *ix = ctx;
    ix_view *v = view_at(ix, mb, ended ? mb->free_ns : mb->alloc_ns);
    if (!v)
        return;
    mf_index_block b = index_block(mb, ended, (size_t)(v - ix->views));
    if (ended)
        block_ends(ix, v, &b);
    else
        block_starts(ix, v, &b);
}

/* A live block's role changed at time t: its bytes move from one role to
 * the other in the legend, the sweep and the blocks still live. */
void ix_on_role(void *ctx, const mf_block *mb, unsigned from, uint64_t t)
{
    mf_index *ix = ctx;
    ix_view *v = view_at(ix, mb, t);
    if (!v)
        return;
    mf_index_block b = index_block(mb, 0, (size_t)(v - ix->views));
    uint64_t *bytes = v->pub.role_bytes, *count = v->pub.role_count;
    unsigned old = from & MF_ROLE_MASK, now = b.role & MF_ROLE_MASK;
    bytes[old] -= b.requested < bytes[old] ? b.requested : bytes[old];
    count[old] -= count[old] ? 1 : 0;
    bytes[now] += b.requested;
    count[now]++;
    ix_cells_role(ix, v, t, &b, from);
    if (ix->track_live) {
        size_t slot = live_find(&ix->live, b.view, b.addr, b.alloc_ns);
        if (slot != SIZE_MAX)
            ix->live.b[ix->live.slots[slot] - 1].role = b.role;
    }
}

/* An OOM (the model's post-mortem when analysed) joins its view's list. */
void ix_on_oom(void *ctx, const mf_oom *o, int analysed)
{
    mf_index *ix = ctx;
    int vi = ix_view_of(ix, o->device, o->pid);
    if (vi < 0) {
        ix->failed = 1;
        return;
    }
    mf_index_view *v = &ix->views[vi].pub;
    v->ooms_total++;
    if (v->n_ooms >= MF_INDEX_OOMS)
        return;
    if (mf_grow((void **)&v->ooms, &ix->views[vi].cap_ooms, v->n_ooms + 1, sizeof *v->ooms) < 0) {
        ix->failed = 1;
        return;
    }
    mf_index_oom *x = &v->ooms[v->n_ooms++];
    memset(x, 0, sizeof *x);          /* padding too: the struct is written as it is */
    x->time_ns = o->time_ns;
    x->requested = o->requested;
    x->device_free = o->device_free;
    x->device_limit = o->device_limit;
    x->scope = o->scope;
    x->route = o->route;
    if (!analysed)
        return;
    x->known = 1;
    x->tensors = (uint8_t)(o->tensors != 0);
    x->live_bytes = o->tensors ? o->allocated_bytes : o->reserved_bytes;
    x->live_count = o->tensors ? o->allocated_count : o->reserved_count;
    x->n_top = (uint32_t)(o->n_by_scope < MF_INDEX_OOM_TOP ? o->n_by_scope : MF_INDEX_OOM_TOP);
    for (uint32_t i = 0; i < x->n_top; i++) {
        x->top[i].id = o->by_scope[i].id;
        x->top[i].bytes = o->by_scope[i].bytes;
        x->top[i].count = o->by_scope[i].count;
    }
}

/* ---- the end ------------------------------------------------------------------------------------ */

static int place_live(const mf_block *mb, void *ctx)
{
    mf_index *ix = ctx;
    int vi = ix_view_of(ix, mb->device, mb->pid);
    if (vi < 0)
        return -1;
    ix_view *v = &ix->views[vi];
    mf_index_block b = index_block(mb, 0, (size_t)vi);
    if (b.requested > v->pub.largest_leak.requested)
        v->pub.largest_leak = b;
    keep_block(ix, v, &b);
    return 0;
}

/* The logs are finished: blocks the model still holds live (a log with no
 * end) are kept to the end; then every open piece is written. */
int ix_finish(mf_index *ix)
{
    if (ix->model && mf_model_settle(ix->model) == 0) {
        for (size_t d = 0; d < ix->model->n_devices; d++) {
            const mf_device_model *dev = &ix->model->devices[d];
            for (size_t i = 0; i < dev->n_views; i++)
                if (mf_model_each_live(ix->model, dev->views[i], place_live, ix) < 0)
                    ix->failed = 1;
        }
    }
    ix->live.n = 0;
    for (size_t i = 0; i < ix->n_views; i++) {
        ix_view *v = &ix->views[i];
        ix_cells_finish(ix, v);
        for (int l = 0; l < MF_INDEX_LEVELS; l++)
            occ_close(ix, v, l);
        for (int l = 0; l < MF_INDEX_LEVELS; l++) {
            occ_write_page(ix, &v->levels[l]);
            flush_buckets(ix, v, l, 1);
        }
    }
    ix_settle_views(ix);
    return ix->failed ? -1 : 0;
}
