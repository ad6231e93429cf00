/*
 * model_picture.c - what memory_flow needs of each view (one process on
 * one device), kept in bounded memory as blocks end:
 *  - the largest blocks by address span, whole (a bounded selection: they
 *    are drawn one by one, with hover details);
 *  - every other block painted into the view's tiles (tiles.h), coarsened
 *    when the view holds more than its share of cells;
 *  - the address ranges used (ranges.h), for the compressed address axis;
 *  - per scope, its bytes at the view's peak and in all (the legend).
 * Blocks still live at a settle are chosen among the largest with the kept
 * ones; the rest are painted by the renderer from the live table
 * (mf_model_each_live), so nothing live is copied.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model_state.h"

#define PLOT_COLUMNS 888    /* pixels of the picture's time axis (svg_layout.h) */
#define PLOT_ROWS 340       /* of its address map */

static int smaller_span(const void *a, const void *b)
{
    return mf_block_ranks_below(a, b);
}

static uint64_t span_key(const void *b)
{
    return mf_block_span(b);
}

void mf_picture_kept_init(mf_topk *k, size_t limit)
{
    mf_topk_init(k, sizeof(mf_block), limit, 0, smaller_span, NULL, span_key);
}

/* ---- scopes of a view ----------------------------------------------------------- */

static uint32_t scope_hash(uint32_t scope)
{
    return (uint32_t)((scope * 0x9e3779b97f4a7c15ull) >> 32);
}

static int scopes_rehash(mf_view_state *v, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < v->n_scopes; i++) {
        size_t k = scope_hash(v->scopes[i].scope) & (n_slots - 1);
        while (slots[k])
            k = (k + 1) & (n_slots - 1);
        slots[k] = (uint32_t)i + 1;
    }
    free(v->scope_slots);
    v->scope_slots = slots;
    v->n_slots = n_slots;
    return 0;
}

mf_view_scope *mf_picture_scope(mf_view_state *v, uint32_t scope)
{
    if ((v->n_scopes + 1) * 2 > v->n_slots && scopes_rehash(v, v->n_slots ? 2 * v->n_slots : 16) < 0)
        return NULL;
    size_t k = scope_hash(scope) & (v->n_slots - 1);
    for (; v->scope_slots[k]; k = (k + 1) & (v->n_slots - 1))
        if (v->scopes[v->scope_slots[k] - 1].scope == scope)
            return &v->scopes[v->scope_slots[k] - 1];
    if (mf_grow((void **)&v->scopes, &v->cap_scopes, v->n_scopes + 1, sizeof *v->scopes) < 0)
        return NULL;
    mf_view_scope *s = &v->scopes[v->n_scopes++];
    memset(s, 0, sizeof *s);
    s->scope = scope;
    v->scope_slots[k] = (uint32_t)v->n_scopes;
    return s;
}

/* ---- budgets ------------------------------------------------------------------------ */

static size_t floor_pow2(size_t x)
{
    size_t p = 1;
    while (p * 2 <= x)
        p *= 2;
    return p;
}

static size_t clamp(size_t x, size_t lo, size_t hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

static int paint(mf_model *m, mf_view_state *v, const mf_block *b);

typedef struct repaint_ctx {
    mf_model *m;
    mf_view_state *v;
} repaint_ctx;

/* A block that no longer fits among the largest goes to the tiles. */
static int repaint(const void *item, void *ctx)
{
    repaint_ctx *c = ctx;
    return paint(c->m, c->v, item);
}

int mf_picture_rebalance(mf_model *m)
{
    struct mf_model_state *st = m->state;
    size_t n = st->n_views ? st->n_views : 1;
    size_t points = clamp(floor_pow2(MF_VIEW_POINTS_ALL / n), MF_VIEW_POINTS_MIN,
                          MF_VIEW_POINTS_MAX);
    size_t kept = clamp(floor_pow2(MF_KEPT_BLOCKS_ALL / n), MF_KEPT_BLOCKS_MIN,
                        MF_KEPT_BLOCKS_MAX);
    if (points != st->view_points) {
        st->view_points = points;
        for (size_t i = 0; i < st->n_views; i++)
            mf_series_set_limit(&st->views[i]->occupancy, points);
    }
    if (kept != st->kept_limit) {
        st->kept_limit = kept;
        for (size_t i = 0; i < st->n_views; i++) {
            repaint_ctx ctx = { m, st->views[i] };
            if (st->views[i]->kept.worse &&
                mf_topk_set_limit(&st->views[i]->kept, kept, repaint, &ctx) < 0)
                return -1;
        }
    }
    return 0;
}

/* ---- tiles ------------------------------------------------------------------------- */

/* Nanoseconds per pixel column of the picture, as the log stands now. */
static double ns_per_px(const struct mf_model_state *st)
{
    return (double)(st->t1 > st->t0 && st->t0 != UINT64_MAX ? st->t1 - st->t0 : 1) /
           PLOT_COLUMNS;
}

/* Coarsen v's tiles in time (time != 0) or address, keeping the total. */
static int coarsen_in(struct mf_model_state *st, mf_view_state *v, int time)
{
    size_t before = v->tiles.n;
    int rc = mf_tiles_coarsen(&v->tiles, time);
    st->tiles_total = st->tiles_total - before + v->tiles.n;
    return rc;
}

/* Coarsen the dimension whose cells are finer compared with a pixel of
 * the picture as it stands (time: the log's duration over 888 columns;
 * address: the view's used bytes over 340 rows). */
static int coarsen(struct mf_model_state *st, mf_view_state *v)
{
    double bytes_per_px = (double)(v->ranges.bytes ? v->ranges.bytes : 1) / PLOT_ROWS;
    double time_fineness = ns_per_px(st) / (double)(1ull << v->tiles.wshift);
    double addr_fineness = bytes_per_px / (double)(1ull << v->tiles.gshift);
    int time = v->tiles.wshift < 62 && (time_fineness >= addr_fineness || v->tiles.gshift >= 62);
    return coarsen_in(st, v, time);
}

/* Keep all views' cells within MF_TILES_ALL: coarsen the largest grid. */
static int keep_budget(struct mf_model_state *st)
{
    while (st->tiles_total > MF_TILES_ALL) {
        mf_view_state *largest = NULL;
        for (size_t i = 0; i < st->n_views; i++)
            if (!largest || st->views[i]->tiles.n > largest->tiles.n)
                largest = st->views[i];
        if (!largest || largest->tiles.n == 0 || coarsen(st, largest) < 0)
            return -1;
    }
    return 0;
}

/*
 * Bytes per pixel row where the view's blocks are densest, as the picture
 * would draw it now: the address range holding the most blocks gets height
 * for its share of the bytes and of the blocks (svg_layout.c), at least
 * 24 px.  Cells a quarter of that tall lose nothing a reader can see.
 */
static uint64_t densest_cell_bytes(const mf_view_state *v)
{
    const mf_ranges *r = &v->ranges;
    uint64_t blocks = 0;
    size_t dense = 0;
    for (size_t i = 0; i < r->n; i++) {
        blocks += r->r[i].blocks;
        if (r->r[i].blocks > r->r[dense].blocks)
            dense = i;
    }
    if (!r->n || !blocks || !r->bytes)
        return 1;
    const mf_range *d = &r->r[dense];
    double bytes = (double)(d->end - d->start);
    double share = 0.5 * bytes / (double)r->bytes + 0.5 * (double)d->blocks / (double)blocks;
    double rows = share * PLOT_ROWS > 24 ? share * PLOT_ROWS : 24;
    double cell = bytes / rows / 4;
    return cell > 1 ? (uint64_t)cell : 1;
}

static int paint(mf_model *m, mf_view_state *v, const mf_block *b)
{
    struct mf_model_state *st = m->state;
    if (v->paints++ % 1024 == 0)
        v->cell_bytes = densest_cell_bytes(v);
    if (!v->tiles.started) {  /* column 0 starts at the view's first allocation */
        v->tiles.started = 1;
        v->tiles.gshift = MF_TILES_FIRST_GSHIFT;
        v->tiles.wshift = MF_TILES_FIRST_WSHIFT;
        v->tiles.origin = v->first_ns < b->alloc_ns ? v->first_ns : b->alloc_ns;
    }
    uint64_t span = mf_block_span(b), to = b->free_ns == MF_LIVE_AT_END ? st->t1 : b->free_ns;
    /* no finer than half a pixel column: time is the same axis in every panel */
    while (v->tiles.wshift < 62 && (double)(2ull << v->tiles.wshift) < ns_per_px(st))
        if (coarsen_in(st, v, 1) < 0)
            return -1;
    while (v->tiles.gshift < 62 && (2ull << v->tiles.gshift) <= v->cell_bytes)
        if (coarsen_in(st, v, 0) < 0)
            return -1;
    while (mf_tiles_cost(&v->tiles, b->addr, span, b->alloc_ns, to) > MF_TILES_ALL / 8)
        if (coarsen(st, v) < 0)
            return -1;
    uint64_t life = to > b->alloc_ns ? to - b->alloc_ns : 1;
    size_t before = v->tiles.n;
    uint32_t key = m->state->opt.tiles_by_site && m->sites ? mf_sites_of_stack(m->sites, b->stack)
                                                            : b->scope;
    mf_tile value = { key, mf_tile_class(life), mf_tile_class(b->requested ? b->requested : 1) };
    if (mf_tiles_paint(&v->tiles, b->addr, span, b->alloc_ns, to, value,
                       b->end == MF_BLOCK_PROCESS_ENDED) < 0)
        return -1;
    st->tiles_total += v->tiles.n - before;
    return keep_budget(st);
}

/* ---- blocks -------------------------------------------------------------------------- */

static void note_life(mf_view_state *v, uint64_t life)
{
    v->life_min = life < v->life_min ? life : v->life_min;
    v->life_max = life > v->life_max ? life : v->life_max;
}

int mf_picture_alloc(mf_model *m, mf_view_state *v, uint64_t addr, uint64_t span)
{
    (void)m;
    uint64_t end = addr > UINT64_MAX - span ? UINT64_MAX : addr + span;
    return mf_ranges_add(&v->ranges, addr, end > addr ? end : addr + 1);
}

int mf_picture_retire(mf_model *m, mf_view_state *v, const mf_block *b)
{
    uint64_t size = b->requested ? b->requested : 1;
    v->size_min = size < v->size_min ? size : v->size_min;
    v->size_max = size > v->size_max ? size : v->size_max;
    note_life(v, b->free_ns > b->alloc_ns ? b->free_ns - b->alloc_ns : 1);
    if (!v->kept.worse)
        mf_picture_kept_init(&v->kept, m->state->kept_limit);
    /* not among the largest (the heap's key: no need to read the worst block) */
    if (mf_topk_full(&v->kept) && mf_block_span(b) < v->kept.heap[0].key)
        return paint(m, v, b);
    mf_block out;
    int rc = mf_topk_offer(&v->kept, b, &out);
    if (rc < 0)
        return -1;
    return rc == 1 ? paint(m, v, &out) : 0;
}

/* ---- settling ---------------------------------------------------------------------- */

int mf_legend_scope_order(const void *pa, const void *pb)
{
    const mf_legend_scope *a = pa, *b = pb;
    if (a->bytes_at_peak != b->bytes_at_peak)
        return a->bytes_at_peak > b->bytes_at_peak ? -1 : 1;
    if (a->bytes_total != b->bytes_total)
        return a->bytes_total > b->bytes_total ? -1 : 1;
    return a->scope < b->scope ? -1 : a->scope > b->scope;
}

static int settle_legend(mf_view_state *v)
{
    free(v->pub.scopes);
    v->pub.scopes = malloc((v->n_scopes ? v->n_scopes : 1) * sizeof *v->pub.scopes);
    if (!v->pub.scopes)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < v->n_scopes; i++) {
        const mf_view_scope *s = &v->scopes[i];
        uint64_t bytes, count;
        mf_scope_held_at_peak(&s->held, v->epoch, &bytes, &count);
        if (v->pub.peak_bytes == 0)
            bytes = 0;
        v->pub.scopes[n++] = (mf_legend_scope){ s->scope, bytes, s->total };
    }
    qsort(v->pub.scopes, n, sizeof *v->pub.scopes, mf_legend_scope_order);
    v->pub.n_scopes = n;
    return 0;
}

/* Live blocks at a settle: candidates to draw whole, and their lifetimes
 * (to the end) and sizes for the colour ramps. */
typedef struct live_pick {
    uint64_t t1;
    mf_topk *all;
    uint64_t life_min, life_max, size_min, size_max;
} live_pick;

static int offer_live(const mf_block *b, void *ctx)
{
    live_pick *p = ctx;
    uint64_t life = p->t1 > b->alloc_ns ? p->t1 - b->alloc_ns : 1;
    uint64_t size = b->requested ? b->requested : 1;
    p->life_min = life < p->life_min ? life : p->life_min;
    p->life_max = life > p->life_max ? life : p->life_max;
    p->size_min = size < p->size_min ? size : p->size_min;
    p->size_max = size > p->size_max ? size : p->size_max;
    return mf_topk_offer(p->all, b, NULL) < 0 ? -1 : 0;
}

/* The blocks drawn whole: the largest of those kept and those live now;
 * the colour ramps' ends over every block. */
static int settle_blocks(mf_model *m, mf_view_state *v)
{
    mf_topk all;
    mf_picture_kept_init(&all, m->state->kept_limit);
    for (size_t i = 0; i < v->kept.n; i++)
        if (mf_topk_offer(&all, mf_topk_item(&v->kept, i), NULL) < 0)
            goto oom;
    v->pub.n_blocks = 0;      /* mf_model_each_live visits every live block now */
    live_pick pick = { m->state->t1, &all, v->life_min, v->life_max, v->size_min, v->size_max };
    if (mf_model_each_live(m, &v->pub, offer_live, &pick) < 0)
        goto oom;
    v->pub.life_min = pick.life_min == UINT64_MAX ? 1 : pick.life_min;
    v->pub.life_max = pick.life_max ? pick.life_max : 1;
    v->pub.size_min = pick.size_min == UINT64_MAX ? 1 : pick.size_min;
    v->pub.size_max = pick.size_max ? pick.size_max : 1;
    free(v->pub.blocks);
    v->pub.blocks = malloc((all.n ? all.n : 1) * sizeof *v->pub.blocks);
    if (!v->pub.blocks || mf_topk_sorted(&all, v->pub.blocks) < 0)
        goto oom;
    v->pub.n_blocks = all.n;
    v->pub.blocks_full = all.dropped > 0;
    mf_topk_free(&all);
    return 0;
oom:
    mf_topk_free(&all);
    return -1;
}

int mf_picture_settle(mf_model *m, mf_view_state *v)
{
    mf_view *p = &v->pub;
    p->occupancy = mf_series_points(&v->occupancy, &p->n_occupancy);
    p->occupancy_points = v->occupancy.added;
    p->snapshots = mf_snapshots_items(&v->snapshots, &p->n_snapshots);
    p->tiles = v->tiles.strips;
    p->n_tiles = v->tiles.n;
    p->tile_gshift = v->tiles.gshift;
    p->tile_wshift = v->tiles.wshift;
    p->tile_origin = v->tiles.origin;
    p->ranges = v->ranges.r;
    p->n_ranges = v->ranges.n;
    p->live_blocks = p->held_count;
    if (p->min_addr == UINT64_MAX)
        p->min_addr = 0;
    if (m->state->opt.no_picture)
        return 0;
    return settle_legend(v) < 0 || settle_blocks(m, v) < 0 ? -1 : 0;
}

/* Is live block b among v->blocks (chosen at the last settle)? */
int mf_picture_kept_whole(const mf_view *v, const mf_block *b)
{
    if (!v->blocks_full)
        return 1;
    return v->n_blocks && !smaller_span(b, &v->blocks[v->n_blocks - 1]);
}

void mf_picture_free(mf_view_state *v)
{
    mf_series_free(&v->occupancy);
    mf_snapshots_free(&v->snapshots);
    mf_topk_free(&v->kept);
    mf_tiles_free(&v->tiles);
    mf_ranges_free(&v->ranges);
    free(v->scopes);
    free(v->scope_slots);
    free(v->pub.blocks);
    free(v->pub.scopes);
    mf_topk_free(&v->sub_kept);
    free(v->pub.subblocks);
}
