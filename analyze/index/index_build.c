/*
 * index_build.c - the view index built in one streaming pass: the model
 * tells each block as it starts and ends (mf_model_options.on_block); here
 * a start moves its view's occupancy, an end places the block at its level
 * (index.h): painted into that level's open columns and kept in that
 * level's open time bucket.  As time passes a column or a bucket, no block
 * still to come can reach it, so it is written to the file and its cells
 * merge into the next level's column.  A block that arrives late (its
 * column already written) goes one level up, where the pieces are wider
 * and still open.  Memory: the open pieces and the blocks still live.
 */
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
    for (int l = 0; l < MF_INDEX_LEVELS; l++) {
        for (int k = 0; k < IX_COL_RING; k++)
            v->levels[l].cols[k].col = IX_NONE;
        for (int k = 0; k < IX_BUCKET_RING; k++)
            v->levels[l].buckets[k].key = IX_NONE;
        v->levels[l].occ.col = IX_NONE;
    }
    v->pub.device = device;
    v->pub.pid = pid;
    v->pub.first_ns = UINT64_MAX;
    v->pub.min_addr = UINT64_MAX;
    return (int)(ix->last_view = ix->n_views++);
}

static void column_free(ix_column *c)
{
    free(c->cells);
    free(c->slots);
    memset(c, 0, sizeof *c);
    c->col = IX_NONE;
}

void ix_view_free(ix_view *v)
{
    for (int l = 0; v->levels && l < MF_INDEX_LEVELS; l++) {
        ix_level *L = &v->levels[l];
        for (int k = 0; k < IX_COL_RING; k++)
            column_free(&L->cols[k]);
        for (int k = 0; k < IX_BUCKET_RING; k++)
            free(L->buckets[k].blocks);
        free(L->cell_dir.e);
        free(L->block_dir.e);
        free(L->occ_dir.e);
        free(L->occ_page);
    }
    free(v->levels);
    free(v->pub.scopes);
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
    if (ix_write(ix, L->occ_page, L->n_occ_page * sizeof *L->occ_page, &off) < 0 ||
        ix_dir_add(ix, &L->occ_dir, L->occ_page[0].col, off, L->n_occ_page, 0) < 0)
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

/* ---- placing a block ------------------------------------------------------------------------ */

/* The end a block is drawn to: its free, or the index's end when live. */
uint64_t ix_block_end(const mf_index *ix, const mf_index_block *b)
{
    if (b->free_ns != MF_LIVE_AT_END)
        return b->free_ns;
    return ix->t1 > b->alloc_ns ? ix->t1 : b->alloc_ns;
}

static uint64_t rel(const mf_index *ix, uint64_t t)
{
    return t > ix->t0 ? t - ix->t0 : 0;
}

static uint64_t span_of(const mf_index_block *b)
{
    uint64_t s = b->actual ? b->actual : b->requested;
    return s ? s : 1;
}

/* The first level at which the block covers at most MF_INDEX_CELLS cells. */
static int natural_level(const mf_index *ix, const mf_index_block *b)
{
    uint64_t from = rel(ix, b->alloc_ns), to = rel(ix, ix_block_end(ix, b));
    uint64_t last = b->addr + span_of(b) - 1;
    if (last < b->addr)
        last = UINT64_MAX;
    for (int l = 0; l < MF_INDEX_LEVELS - 1; l++) {
        unsigned ws = ix->wshift + (unsigned)l, gs = MF_INDEX_GSHIFT + (unsigned)l;
        uint64_t cols = (to >> ws) - (from >> ws) + 1, rows = (last >> gs) - (b->addr >> gs) + 1;
        if (cols <= MF_INDEX_CELLS && rows <= MF_INDEX_CELLS && cols * rows <= MF_INDEX_CELLS)
            return l;
    }
    return MF_INDEX_LEVELS - 1;
}

/* The open column for col at level L (NULL: already written). */
static ix_column *column(mf_index *ix, ix_level *L, uint64_t col)
{
    if (col < L->cols_done)
        return NULL;
    ix_column *c = &L->cols[col % IX_COL_RING];
    if (c->col != col) {
        if (c->col != IX_NONE) {     /* cannot happen while the ring is wide enough */
            ix->failed = 1;
            return NULL;
        }
        c->col = col;
    }
    return c;
}

static ix_cell *cell(mf_index *ix, ix_column *c, uint64_t granule)
{
    if ((c->n + 1) * 2 > c->n_slots) {
        size_t n = c->n_slots ? c->n_slots * 2 : 16;
        uint32_t *slots = calloc(n, sizeof *slots);
        if (!slots) {
            ix->failed = 1;
            return NULL;
        }
        for (size_t i = 0; i < c->n; i++) {
            size_t h = (size_t)(c->cells[i].granule * 0x9e3779b97f4a7c15ull >> 17) & (n - 1);
            while (slots[h])
                h = (h + 1) & (n - 1);
            slots[h] = (uint32_t)i + 1;
        }
        free(c->slots);
        c->slots = slots;
        c->n_slots = n;
    }
    size_t h = (size_t)(granule * 0x9e3779b97f4a7c15ull >> 17) & (c->n_slots - 1);
    for (; c->slots[h]; h = (h + 1) & (c->n_slots - 1))
        if (c->cells[c->slots[h] - 1].granule == granule)
            return &c->cells[c->slots[h] - 1];
    if (mf_grow((void **)&c->cells, &c->cap, c->n + 1, sizeof *c->cells) < 0) {
        ix->failed = 1;
        return NULL;
    }
    c->cells[c->n] = (ix_cell){ .granule = granule };
    c->slots[h] = (uint32_t)++c->n;
    return &c->cells[c->n - 1];
}

static void cell_add(ix_cell *x, uint32_t scope, double amount, double top_amount)
{
    x->amount += amount;
    if (x->scope == scope)
        x->top_amount += top_amount;
    else if (top_amount > x->top_amount) {
        x->scope = scope;
        x->top_amount = top_amount;
    }
}

/* Paint block b into the columns of level l (all open: see place). */
static void paint(mf_index *ix, ix_level *L, int l, const mf_index_block *b)
{
    unsigned ws = ix->wshift + (unsigned)l, gs = MF_INDEX_GSHIFT + (unsigned)l;
    uint64_t from = rel(ix, b->alloc_ns), to = rel(ix, ix_block_end(ix, b));
    uint64_t a_end = b->addr + span_of(b);
    if (a_end < b->addr)
        a_end = UINT64_MAX;
    for (uint64_t col = from >> ws; col <= to >> ws; col++) {
        ix_column *c = column(ix, L, col);
        if (!c)
            return;
        uint64_t c0 = col << ws, c1 = c0 + (1ull << ws);
        uint64_t ns = (to < c1 ? to : c1) - (from > c0 ? from : c0);
        for (uint64_t g = b->addr >> gs; g <= (a_end - 1) >> gs; g++) {
            uint64_t g0 = g << gs, g1 = g0 + (1ull << gs);
            uint64_t bytes = (a_end < g1 ? a_end : g1) - (b->addr > g0 ? b->addr : g0);
            ix_cell *x = cell(ix, c, g);
            if (!x)
                return;
            double amount = (double)(ns ? ns : 1) * (double)bytes;
            cell_add(x, b->scope, amount, amount);
        }
    }
}

static void keep_in_bucket(mf_index *ix, ix_level *L, int l, const mf_index_block *b)
{
    uint64_t key = rel(ix, b->alloc_ns) >> (ix->wshift + (unsigned)l + IX_BUCKET_SHIFT);
    ix_bucket *k = &L->buckets[key % IX_BUCKET_RING];
    if (k->key != key) {
        if (k->key != IX_NONE) {
            ix->failed = 1;
            return;
        }
        k->key = key;
    }
    if (mf_grow((void **)&k->blocks, &k->cap, k->n + 1, sizeof *k->blocks) < 0) {
        ix->failed = 1;
        return;
    }
    k->blocks[k->n++] = *b;
}

/* Put an ended block (or, at the end, a live one) at its level. */
static void place(mf_index *ix, mf_index_block b)
{
    ix_view *v = &ix->views[b.view];
    int l = natural_level(ix, &b);
    for (; l < MF_INDEX_LEVELS - 1; l++) {   /* late: up to where it is still open */
        ix_level *L = &v->levels[l];
        unsigned ws = ix->wshift + (unsigned)l;
        uint64_t from = rel(ix, b.alloc_ns);
        uint64_t to = rel(ix, ix_block_end(ix, &b)) >> ws;
        if (from >> ws >= L->cols_done && from >> (ws + IX_BUCKET_SHIFT) >= L->buckets_done &&
            to - (from >> ws) < IX_COL_RING - 1 && to < L->cols_done + IX_COL_RING)
            break;
    }
    b.level = (uint8_t)l;
    paint(ix, &v->levels[l], l, &b);
    keep_in_bucket(ix, &v->levels[l], l, &b);
}

void ix_on_block(void *ctx, const mf_block *mb, int ended)
{
    mf_index *ix = ctx;
    int vi = ix_view_of(ix, mb->device, mb->pid);
    if (vi < 0) {
        ix->failed = 1;
        return;
    }
    ix_view *v = &ix->views[vi];
    uint64_t t = ended ? mb->free_ns : mb->alloc_ns;
    ix->now = t > ix->now ? t : ix->now;
    ix->t1 = t > ix->t1 ? t : ix->t1;
    if ((rel(ix, ix->now) >> ix->wshift) >= v->flushed_col + 32)
        ix_flush_view(ix, v, 0);
    if (!ended) {
        mf_index_block b = {
            .addr = mb->addr, .requested = mb->requested, .actual = mb->actual,
            .alloc_ns = mb->alloc_ns, .free_ns = MF_LIVE_AT_END, .scope = mb->scope,
            .name = mb->name, .tid = mb->tid, .stack = mb->stack, .flags = mb->flags,
            .end = MF_BLOCK_LIVE, .view = (uint32_t)vi,
        };
        if (live_add(&ix->live, &b) < 0)
            ix->failed = 1;
        v->pub.held_bytes += mb->requested;
        v->held_actual += mb->actual;
        v->pub.blocks++;
        v->pub.first_ns = mb->alloc_ns < v->pub.first_ns ? mb->alloc_ns : v->pub.first_ns;
        v->pub.last_ns = mb->alloc_ns > v->pub.last_ns ? mb->alloc_ns : v->pub.last_ns;
        uint64_t span = span_of(&b);
        uint64_t end = mb->addr + span < mb->addr ? UINT64_MAX : mb->addr + span;
        v->pub.min_addr = mb->addr < v->pub.min_addr ? mb->addr : v->pub.min_addr;
        v->pub.max_addr = end > v->pub.max_addr ? end : v->pub.max_addr;
        if (mf_ranges_add(&v->pub.ranges, mb->addr, end) < 0)
            ix->failed = 1;
        count_scope(ix, v, mb->scope, mb->requested);
        occ_move(ix, v, mb->alloc_ns);
        return;
    }
    size_t slot = live_find(&ix->live, (uint32_t)vi, mb->addr, mb->alloc_ns);
    if (slot == SIZE_MAX)
        return;
    mf_index_block b = ix->live.b[ix->live.slots[slot] - 1];
    live_remove(&ix->live, slot);
    b.free_ns = mb->free_ns;
    b.end = mb->end;
    v->pub.held_bytes -= b.requested;
    v->held_actual -= b.actual;
    v->pub.last_ns = mb->free_ns > v->pub.last_ns ? mb->free_ns : v->pub.last_ns;
    if (mb->end == MF_BLOCK_PROCESS_ENDED && b.requested > v->pub.largest_leak.requested)
        v->pub.largest_leak = b;
    occ_move(ix, v, mb->free_ns);
    place(ix, b);
}

/* ---- writing what time has passed ------------------------------------------------------------ */

static int by_granule(const void *pa, const void *pb)
{
    const ix_cell *a = pa, *b = pb;
    return a->granule < b->granule ? -1 : a->granule > b->granule;
}

static int by_addr(const void *pa, const void *pb)
{
    const mf_index_block *a = pa, *b = pb;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return a->alloc_ns < b->alloc_ns ? -1 : a->alloc_ns > b->alloc_ns;
}

/* The cells of a column as the file keeps them: granule, fill, scope. */
typedef struct ix_file_cell {
    uint64_t granule;
    float fill;
    uint32_t scope;
} ix_file_cell;

/* Write column c of level l and merge its cells into level l + 1. */
static void write_column(mf_index *ix, ix_view *v, int l, ix_column *c)
{
    if (c->n) {
        qsort(c->cells, c->n, sizeof *c->cells, by_granule);
        double area = (double)(1ull << (ix->wshift + (unsigned)l)) *
                      (double)(1ull << (MF_INDEX_GSHIFT + (unsigned)l));
        ix_file_cell *out = malloc(c->n * sizeof *out);
        uint64_t off;
        if (!out) {
            ix->failed = 1;
        } else {
            for (size_t i = 0; i < c->n; i++) {
                double f = c->cells[i].amount / area;
                out[i] = (ix_file_cell){ .granule = c->cells[i].granule,
                                         .fill = (float)(f > 1 ? 1 : f),
                                         .scope = c->cells[i].scope };
            }
            if (ix_write(ix, out, c->n * sizeof *out, &off) < 0 ||
                ix_dir_add(ix, &v->levels[l].cell_dir, c->col, off, c->n, 0) < 0)
                ix->failed = 1;
            free(out);
        }
        if (l + 1 < MF_INDEX_LEVELS) {
            ix_column *up = column(ix, &v->levels[l + 1], c->col >> 1);
            for (size_t i = 0; up && i < c->n; i++) {
                ix_cell *x = cell(ix, up, c->cells[i].granule >> 1);
                if (x)
                    cell_add(x, c->cells[i].scope, c->cells[i].amount, c->cells[i].top_amount);
            }
        }
    }
    column_free(c);
}

static void write_bucket(mf_index *ix, ix_level *L, ix_bucket *k)
{
    if (k->n) {
        qsort(k->blocks, k->n, sizeof *k->blocks, by_addr);
        uint64_t span = 0, off;
        for (size_t i = 0; i < k->n; i++)
            span = span_of(&k->blocks[i]) > span ? span_of(&k->blocks[i]) : span;
        if (ix_write(ix, k->blocks, k->n * sizeof *k->blocks, &off) < 0 ||
            ix_dir_add(ix, &L->block_dir, k->key, off, k->n, span) < 0)
            ix->failed = 1;
    }
    free(k->blocks);
    *k = (ix_bucket){ .key = IX_NONE };
}

static int by_col_slot(const void *pa, const void *pb)
{
    const ix_column *a = *(ix_column *const *)pa, *b = *(ix_column *const *)pb;
    return a->col < b->col ? -1 : a->col > b->col;
}

/* Write every column of level l below upto, oldest first. */
static void flush_columns(mf_index *ix, ix_view *v, int l, uint64_t upto)
{
    ix_level *L = &v->levels[l];
    ix_column *due[IX_COL_RING];
    size_t n = 0;
    for (int k = 0; k < IX_COL_RING; k++)
        if (L->cols[k].col != IX_NONE && L->cols[k].col < upto)
            due[n++] = &L->cols[k];
    qsort(due, n, sizeof *due, by_col_slot);
    for (size_t i = 0; i < n; i++)
        write_column(ix, v, l, due[i]);
    if (upto > L->cols_done)
        L->cols_done = upto;
}

static void flush_buckets(mf_index *ix, ix_level *L, uint64_t upto)
{
    for (uint64_t pass = 0; pass < IX_BUCKET_RING; pass++) {
        ix_bucket *oldest = NULL;
        for (int k = 0; k < IX_BUCKET_RING; k++)
            if (L->buckets[k].key != IX_NONE && L->buckets[k].key < upto &&
                (!oldest || L->buckets[k].key < oldest->key))
                oldest = &L->buckets[k];
        if (!oldest)
            break;
        write_bucket(ix, L, oldest);
    }
    if (upto > L->buckets_done)
        L->buckets_done = upto;
}

/*
 * Write what no block still to come can reach: at level l, columns more
 * than MF_INDEX_CELLS + 2 columns before now and buckets more than 2
 * buckets before now.  all: everything (the logs are finished).
 */
void ix_flush_view(mf_index *ix, ix_view *v, int all)
{
    uint64_t now = rel(ix, ix->now);
    v->flushed_col = now >> ix->wshift;
    for (int l = 0; l < MF_INDEX_LEVELS; l++) {
        unsigned ws = ix->wshift + (unsigned)l;
        uint64_t col = now >> ws, bucket = now >> (ws + IX_BUCKET_SHIFT);
        uint64_t cols_upto = all ? UINT64_MAX : col > MF_INDEX_CELLS + 2
                             ? col - MF_INDEX_CELLS - 2 : 0;
        uint64_t buckets_upto = all ? UINT64_MAX : bucket > 2 ? bucket - 2 : 0;
        if (!all && cols_upto <= v->levels[l].cols_done &&
            buckets_upto <= v->levels[l].buckets_done)
            continue;
        flush_columns(ix, v, l, cols_upto);
        flush_buckets(ix, &v->levels[l], buckets_upto);
    }
}

void ix_flush(mf_index *ix, int all)
{
    for (size_t i = 0; i < ix->n_views; i++)
        ix_flush_view(ix, &ix->views[i], all);
}

/* The logs are finished: the blocks still live are placed (to the end),
 * the open occupancy written, then every open piece. */
int ix_finish(mf_index *ix)
{
    for (size_t i = 0; i < ix->live.n; i++)
        place(ix, ix->live.b[i]);
    for (size_t i = 0; i < ix->live.n; i++) {
        ix_view *v = &ix->views[ix->live.b[i].view];
        if (ix->live.b[i].requested > v->pub.largest_leak.requested)
            v->pub.largest_leak = ix->live.b[i];
    }
    ix->live.n = 0;
    for (size_t i = 0; i < ix->n_views; i++) {
        for (int l = 0; l < MF_INDEX_LEVELS; l++) {
            occ_close(ix, &ix->views[i], l);
        }
        for (int l = 0; l < MF_INDEX_LEVELS; l++)
            occ_write_page(ix, &ix->views[i].levels[l]);
    }
    ix_flush(ix, 1);
    ix_settle_views(ix);
    return ix->failed ? -1 : 0;
}
