/*
 * model_picture.c - what memory_flow needs of each view (one process on
 * one device), kept in bounded memory as blocks end (see model_picture.h):
 *  - the largest blocks by address span, whole (a bounded selection: they
 *    are drawn one by one, with hover details);
 *  - every other block painted into the view's tiles (tiles.h), coarsened
 *    when the view holds more than its share of cells;
 *  - the address ranges used (ranges.h), for the compressed address axis;
 *  - per scope, its bytes at the view's peak and in all (the legend).
 * Blocks still live at a settle are chosen among the largest with the kept
 * ones; the rest are painted by the renderer from the live table
 * (mf_model_each_live), so nothing live is copied.  When the user waits
 * for it (a load, the end of memflow run), the picture is kept on a
 * second core (mf_picture_use_thread): the blocks come in the same order,
 * so it is the same picture.
 */
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "compiler.h"
#include "grow.h"
#include "keyed.h"
#include "model_picture.h"
#include "ranges.h"
#include "sites.h"
#include "tiles.h"
#include "worker.h"

/* Budgets: what the picture keeps at most, whatever the log. */
#define KEPT_BLOCKS_ALL 65536u      /* blocks kept whole, all views together */
#define KEPT_BLOCKS_MIN 512u
#define KEPT_BLOCKS_MAX 20000u
#define TILES_ALL ((4u << 20) / MF_TILE_STRIP)   /* tile strips (4 M cells), all views together */

#define PLOT_COLUMNS 888    /* pixels of the picture's time axis (svg_layout.h) */
#define PLOT_ROWS 340       /* of its address map */

/* A scope of a view's legend, as blocks come and go. */
typedef struct legend_scope {
    uint32_t scope;
    uint64_t total;
    mf_scope_held held;
} legend_scope;

typedef struct mf_picture_view {
    mf_topk kept;             /* mf_block, by address span */
    mf_tiles tiles;
    mf_ranges ranges;
    legend_scope *scopes;     /* hashed by scope */
    uint32_t *scope_slots;    /* index + 1 */
    size_t n_scopes, cap_scopes, n_slots;
    uint32_t last_scope;      /* the entry scope_of found last (index + 1; 0: none) */
    uint64_t allocs;          /* allocations seen */
    uint64_t first_ns;        /* its first allocation (column 0 of its tiles) */
    uint64_t life_min, life_max, size_min, size_max;
    uint64_t paints;          /* blocks painted into the tiles */
    uint64_t cell_bytes;      /* the address resolution worth keeping (see paint) */
    mf_block *blocks;         /* settled: the blocks drawn whole (mf_view.blocks) */
    mf_legend_scope *legend;  /* settled: mf_view.scopes */
} mf_picture_view;

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

void mf_picture_init(mf_picture *p, const mf_time_span *span, int tiles_by)
{
    memset(p, 0, sizeof *p);
    p->span = span;
    p->tiles_by = tiles_by;
    p->kept_limit = KEPT_BLOCKS_MAX;
}

void mf_picture_set_sites(mf_picture *p, struct mf_sites *sites)
{
    p->sites = sites;
}

/* ---- scopes of a view ----------------------------------------------------------- */

static uint32_t scope_hash(uint32_t scope)
{
    return (uint32_t)((scope * 0x9e3779b97f4a7c15ull) >> 32);
}

static int scopes_rehash(mf_picture_view *v, size_t n_slots)
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

/* scope_of's slow path: the hash table (the entry created if new). */
static MF_NOINLINE legend_scope *scope_find(mf_picture_view *v, uint32_t scope)
{
    if ((v->n_scopes + 1) * 2 > v->n_slots && scopes_rehash(v, v->n_slots ? 2 * v->n_slots : 16) < 0)
        return NULL;
    size_t k = scope_hash(scope) & (v->n_slots - 1);
    for (; v->scope_slots[k]; k = (k + 1) & (v->n_slots - 1))
        if (v->scopes[v->scope_slots[k] - 1].scope == scope)
            return &v->scopes[(v->last_scope = v->scope_slots[k]) - 1];
    if (mf_grow((void **)&v->scopes, &v->cap_scopes, v->n_scopes + 1, sizeof *v->scopes) < 0)
        return NULL;
    legend_scope *s = &v->scopes[v->n_scopes++];
    memset(s, 0, sizeof *s);
    s->scope = scope;
    v->scope_slots[k] = v->last_scope = (uint32_t)v->n_scopes;
    return s;
}

/* The view's legend entry of scope (created if new); NULL when out of memory.
 * Blocks come in runs of one scope: the last entry found is tried first. */
static inline legend_scope *scope_of(mf_picture_view *v, uint32_t scope)
{
    if (v->last_scope && v->scopes[v->last_scope - 1].scope == scope)
        return &v->scopes[v->last_scope - 1];
    return scope_find(v, scope);
}

/* ---- budgets ------------------------------------------------------------------------ */

static int paint(mf_picture *p, mf_picture_view *v, const mf_block *b);
static int sync_thread(mf_picture *p);

typedef struct repaint_ctx {
    mf_picture *p;
    mf_picture_view *v;
} repaint_ctx;

/* A block that no longer fits among the largest goes to the tiles. */
static int repaint(const void *item, void *ctx)
{
    repaint_ctx *c = ctx;
    return paint(c->p, c->v, item);
}

int mf_picture_add_view(mf_picture *p)
{
    if (sync_thread(p) < 0)
        return -1;
    mf_picture_view *v = calloc(1, sizeof *v);
    if (!v || mf_grow((void **)&p->views, &p->cap_views, p->n_views + 1, sizeof *p->views) < 0) {
        free(v);
        return -1;
    }
    v->life_min = v->size_min = UINT64_MAX;
    p->views[p->n_views++] = v;
    size_t kept = mf_budget_share(KEPT_BLOCKS_ALL, p->n_views, KEPT_BLOCKS_MIN,
                                  KEPT_BLOCKS_MAX);
    if (kept != p->kept_limit) {
        p->kept_limit = kept;
        for (size_t i = 0; i < p->n_views; i++) {
            repaint_ctx ctx = { p, p->views[i] };
            if (p->views[i]->kept.worse &&
                mf_topk_set_limit(&p->views[i]->kept, kept, repaint, &ctx) < 0)
                return -1;
        }
    }
    return 0;
}

/* ---- tiles ------------------------------------------------------------------------- */

/* Nanoseconds per pixel column of the picture, as the log stands now. */
static double ns_per_px(const mf_time_span *s)
{
    return (double)(s->t1 > s->t0 && s->t0 != UINT64_MAX ? s->t1 - s->t0 : 1) / PLOT_COLUMNS;
}

/* Coarsen v's tiles in time (time != 0) or address, keeping the total. */
static int coarsen_in(mf_picture *p, mf_picture_view *v, int time)
{
    size_t before = v->tiles.n;
    int rc = mf_tiles_coarsen(&v->tiles, time);
    p->tiles_total = p->tiles_total - before + v->tiles.n;
    return rc;
}

/* Coarsen the dimension whose cells are finer compared with a pixel of
 * the picture as it stands (time: the log's duration over 888 columns;
 * address: the view's used bytes over 340 rows). */
static int coarsen(mf_picture *p, mf_picture_view *v)
{
    double bytes_per_px = (double)(v->ranges.bytes ? v->ranges.bytes : 1) / PLOT_ROWS;
    double time_fineness = ns_per_px(&p->now) / (double)(1ull << v->tiles.wshift);
    double addr_fineness = bytes_per_px / (double)(1ull << v->tiles.gshift);
    int time = v->tiles.wshift < 62 && (time_fineness >= addr_fineness || v->tiles.gshift >= 62);
    return coarsen_in(p, v, time);
}

/* Keep all views' cells within TILES_ALL: coarsen the largest grid. */
static int keep_budget(mf_picture *p)
{
    while (p->tiles_total > TILES_ALL) {
        mf_picture_view *largest = NULL;
        for (size_t i = 0; i < p->n_views; i++)
            if (!largest || p->views[i]->tiles.n > largest->tiles.n)
                largest = p->views[i];
        if (!largest || largest->tiles.n == 0 || coarsen(p, largest) < 0)
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
static uint64_t densest_cell_bytes(const mf_picture_view *v)
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

static int paint(mf_picture *p, mf_picture_view *v, const mf_block *b)
{
    if (v->paints++ % 1024 == 0)
        v->cell_bytes = densest_cell_bytes(v);
    if (!v->tiles.started) {  /* column 0 starts at the view's first allocation */
        v->tiles.started = 1;
        v->tiles.gshift = MF_TILES_FIRST_GSHIFT;
        v->tiles.wshift = MF_TILES_FIRST_WSHIFT;
        v->tiles.origin = v->first_ns < b->alloc_ns ? v->first_ns : b->alloc_ns;
    }
    uint64_t span = mf_block_span(b), to = b->free_ns == MF_LIVE_AT_END ? p->now.t1 : b->free_ns;
    /* no finer than half a pixel column: time is the same axis in every panel */
    while (v->tiles.wshift < 62 && (double)(2ull << v->tiles.wshift) < ns_per_px(&p->now))
        if (coarsen_in(p, v, 1) < 0)
            return -1;
    while (v->tiles.gshift < 62 && (2ull << v->tiles.gshift) <= v->cell_bytes)
        if (coarsen_in(p, v, 0) < 0)
            return -1;
    while (!mf_tiles_small(&v->tiles, span, b->alloc_ns, to) &&
           mf_tiles_cost(&v->tiles, b->addr, span, b->alloc_ns, to) > TILES_ALL / 8)
        if (coarsen(p, v) < 0)
            return -1;
    uint64_t life = to > b->alloc_ns ? to - b->alloc_ns : 1;
    size_t before = v->tiles.n;
    uint32_t key = p->tiles_by == MF_TILES_BY_SITE && p->sites
                       ? mf_sites_of_stack(p->sites, b->stack)
                       : p->tiles_by == MF_TILES_BY_ROLE ? (uint32_t)(b->role & MF_ROLE_MASK)
                                                         : mf_block_legend_key(b->scope, b->role);
    mf_tile value = { key, mf_tile_class(life), mf_tile_class(b->requested ? b->requested : 1) };
    if (mf_tiles_paint(&v->tiles, b->addr, span, b->alloc_ns, to, value,
                       b->end == MF_BLOCK_PROCESS_ENDED) < 0)
        return -1;
    p->tiles_total += v->tiles.n - before;
    return keep_budget(p);
}

/* ---- blocks -------------------------------------------------------------------------- */

static int do_alloc(mf_picture *p, uint32_t view, uint64_t epoch, const mf_live *b)
{
    mf_picture_view *v = p->views[view];
    if (!v->allocs++)
        v->first_ns = b->alloc_ns;
    legend_scope *s = scope_of(v, mf_block_legend_key(b->scope, b->role));
    if (!s)
        return -1;
    s->total += b->requested;
    mf_scope_held_change(&s->held, epoch, (int64_t)b->requested, 1);
    uint64_t span = b->actual ? b->actual : b->requested;
    span = span ? span : 1;
    uint64_t end = b->addr > UINT64_MAX - span ? UINT64_MAX : b->addr + span;
    return mf_ranges_add(&v->ranges, b->addr, end > b->addr ? end : b->addr + 1);
}

static int do_rekey(mf_picture *p, uint32_t view, uint64_t epoch, const mf_live *b,
                    uint32_t from_key, uint32_t to_key, int at_peak)
{
    mf_picture_view *v = p->views[view];
    legend_scope *to = scope_of(v, to_key);   /* first: making it may move the others */
    legend_scope *from = scope_of(v, from_key);
    if (!to || !from)
        return -1;
    mf_scope_held_change(&from->held, epoch, -(int64_t)b->requested, -1);
    mf_scope_held_change(&to->held, epoch, (int64_t)b->requested, 1);
    from->total -= b->requested;
    to->total += b->requested;
    if (at_peak) {
        from->held.at_peak_bytes -= b->requested;
        from->held.at_peak_count--;
        to->held.at_peak_bytes += b->requested;
        to->held.at_peak_count++;
    }
    return 0;
}

static int do_retire(mf_picture *p, uint32_t view, uint64_t epoch, const mf_block *b)
{
    mf_picture_view *v = p->views[view];
    legend_scope *s = scope_of(v, mf_block_legend_key(b->scope, b->role));
    if (!s)
        return -1;
    mf_scope_held_change(&s->held, epoch, -(int64_t)b->requested, -1);
    uint64_t size = b->requested ? b->requested : 1;
    uint64_t life = b->free_ns > b->alloc_ns ? b->free_ns - b->alloc_ns : 1;
    v->size_min = size < v->size_min ? size : v->size_min;
    v->size_max = size > v->size_max ? size : v->size_max;
    v->life_min = life < v->life_min ? life : v->life_min;
    v->life_max = life > v->life_max ? life : v->life_max;
    if (!v->kept.worse)
        mf_picture_kept_init(&v->kept, p->kept_limit);
    /* not among the largest (the heap's key: no need to read the worst block) */
    if (mf_topk_full(&v->kept) && mf_block_span(b) < v->kept.heap[0].key)
        return paint(p, v, b);
    mf_block out;
    int rc = mf_topk_offer(&v->kept, b, &out);
    if (rc < 0)
        return -1;
    return rc == 1 ? paint(p, v, &out) : 0;
}

/* ---- the picture's thread ------------------------------------------------------------ */

enum { OP_ALLOC, OP_REKEY, OP_RETIRE };

/* One call handed over: its arguments, and the span as it stood then. */
typedef struct picture_op {
    int kind;
    uint32_t view, from_key, to_key;
    int at_peak;
    uint64_t epoch;
    mf_time_span span;
    union {
        mf_live live;         /* OP_ALLOC, OP_REKEY */
        mf_block block;       /* OP_RETIRE */
    } u;
} picture_op;

static int run_op(void *ctx, const void *item)
{
    mf_picture *p = ctx;
    const picture_op *op = item;
    p->now = op->span;
    switch (op->kind) {
    case OP_ALLOC:
        return do_alloc(p, op->view, op->epoch, &op->u.live);
    case OP_REKEY:
        return do_rekey(p, op->view, op->epoch, &op->u.live, op->from_key, op->to_key,
                        op->at_peak);
    default:
        return do_retire(p, op->view, op->epoch, &op->u.block);
    }
}

void mf_picture_use_thread(mf_picture *p)
{
    if (!p->worker && p->tiles_by != MF_TILES_BY_SITE)
        p->worker = mf_worker_start(sizeof(picture_op), run_op, p);
}

/* An op to fill for the picture's thread. */
static picture_op *hand_over(mf_picture *p, int kind, uint32_t view, uint64_t epoch)
{
    picture_op *op = mf_worker_put(p->worker);
    op->kind = kind;
    op->view = view;
    op->epoch = epoch;
    op->span = *p->span;
    return op;
}

/* Every op handed over has run: the picture may be read or changed here
 * (and paint reads the span as it stands).  0, or -1 when one ran out of
 * memory.  The wait comes first: until it returns, the thread may be
 * painting with its op's span. */
static int sync_thread(mf_picture *p)
{
    int rc = p->worker ? mf_worker_sync(p->worker) : 0;
    p->now = *p->span;
    return rc;
}

int mf_picture_alloc(mf_picture *p, uint32_t view, uint64_t epoch, const mf_live *b)
{
    if (!p->worker)
        return do_alloc(p, view, epoch, b);
    hand_over(p, OP_ALLOC, view, epoch)->u.live = *b;
    return 0;
}

int mf_picture_rekey(mf_picture *p, uint32_t view, uint64_t epoch, const mf_live *b,
                     uint32_t from_key, uint32_t to_key, int at_peak)
{
    if (!p->worker)
        return do_rekey(p, view, epoch, b, from_key, to_key, at_peak);
    picture_op *op = hand_over(p, OP_REKEY, view, epoch);
    op->u.live = *b;
    op->from_key = from_key;
    op->to_key = to_key;
    op->at_peak = at_peak;
    return 0;
}

int mf_picture_retire(mf_picture *p, uint32_t view, uint64_t epoch, const mf_block *b)
{
    if (!p->worker) {
        p->now = *p->span;
        return do_retire(p, view, epoch, b);
    }
    hand_over(p, OP_RETIRE, view, epoch)->u.block = *b;
    return 0;
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

static int settle_legend(mf_picture_view *v, uint64_t epoch, mf_view *out)
{
    free(v->legend);
    out->scopes = v->legend = malloc((v->n_scopes ? v->n_scopes : 1) * sizeof *v->legend);
    if (!v->legend)
        return -1;
    for (size_t i = 0; i < v->n_scopes; i++) {
        const legend_scope *s = &v->scopes[i];
        uint64_t bytes, count;
        mf_scope_held_at_peak(&s->held, epoch, &bytes, &count);
        if (out->peak_bytes == 0)
            bytes = 0;
        v->legend[i] = (mf_legend_scope){ s->scope, bytes, s->total };
    }
    qsort(v->legend, v->n_scopes, sizeof *v->legend, mf_legend_scope_order);
    out->n_scopes = v->n_scopes;
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
static int settle_blocks(const mf_picture *p, mf_picture_view *v, uint64_t t1, mf_view *out,
                         mf_live_visitor visit, void *src)
{
    mf_topk all;
    mf_picture_kept_init(&all, p->kept_limit);
    for (size_t i = 0; i < v->kept.n; i++)
        if (mf_topk_offer(&all, mf_topk_item(&v->kept, i), NULL) < 0)
            goto oom;
    out->n_blocks = 0;        /* the visit sees every live block now */
    live_pick pick = { t1, &all, v->life_min, v->life_max, v->size_min, v->size_max };
    if (visit(src, offer_live, &pick) < 0)
        goto oom;
    out->life_min = pick.life_min == UINT64_MAX ? 1 : pick.life_min;
    out->life_max = pick.life_max ? pick.life_max : 1;
    out->size_min = pick.size_min == UINT64_MAX ? 1 : pick.size_min;
    out->size_max = pick.size_max ? pick.size_max : 1;
    free(v->blocks);
    out->blocks = v->blocks = malloc((all.n ? all.n : 1) * sizeof *v->blocks);
    if (!v->blocks || mf_topk_sorted(&all, v->blocks) < 0)
        goto oom;
    out->n_blocks = all.n;
    out->blocks_full = all.dropped > 0;
    mf_topk_free(&all);
    return 0;
oom:
    mf_topk_free(&all);
    return -1;
}

int mf_picture_settle(mf_picture *p, uint32_t view, uint64_t epoch, uint64_t t1, mf_view *out,
                      mf_live_visitor visit, void *src)
{
    if (sync_thread(p) < 0)
        return -1;
    mf_picture_view *v = p->views[view];
    out->tiles = v->tiles.strips;
    out->n_tiles = v->tiles.n;
    out->tile_gshift = v->tiles.gshift;
    out->tile_wshift = v->tiles.wshift;
    out->tile_origin = v->tiles.origin;
    out->ranges = v->ranges.r;
    out->n_ranges = v->ranges.n;
    return settle_legend(v, epoch, out) < 0 || settle_blocks(p, v, t1, out, visit, src) < 0 ? -1
                                                                                           : 0;
}

/* Is live block b among v->blocks (chosen at the last settle)? */
int mf_picture_kept_whole(const mf_view *v, const mf_block *b)
{
    if (!v->blocks_full)
        return 1;
    return v->n_blocks && !smaller_span(b, &v->blocks[v->n_blocks - 1]);
}

void mf_picture_free(mf_picture *p)
{
    mf_worker_stop(p->worker);
    for (size_t i = 0; i < p->n_views; i++) {
        mf_picture_view *v = p->views[i];
        mf_topk_free(&v->kept);
        mf_tiles_free(&v->tiles);
        mf_ranges_free(&v->ranges);
        free(v->scopes);
        free(v->scope_slots);
        free(v->blocks);
        free(v->legend);
        free(v);
    }
    free(p->views);
    memset(p, 0, sizeof *p);
}
