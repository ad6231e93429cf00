/*
 * index_query.c - the view index's answers (index.h): the cells and blocks
 * of a window, the blocks live at a moment, the occupancy of a time range.
 * Each reads the pieces the directories point at (pread: the file is never
 * mapped whole, so memory stays what one answer needs) and, while the
 * logs are still written, what is still open in memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index_state.h"

#define READ_BLOCKS 256          /* blocks read at once */

static uint64_t rel(const mf_index *ix, uint64_t t)
{
    return t > ix->t0 ? t - ix->t0 : 0;
}

static uint64_t span_of(const mf_index_block *b)
{
    uint64_t s = b->actual ? b->actual : b->requested;
    return s ? s : 1;
}

/* The first entry of d whose key is >= key. */
static size_t dir_lower(const ix_dir *d, uint64_t key)
{
    size_t lo = 0, hi = d->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->e[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

typedef struct ix_file_cell {
    uint64_t granule;
    float fill;
    uint32_t scope;
} ix_file_cell;

typedef struct window {
    mf_index *ix;
    uint64_t t_from, t_to, a_from, a_to;
    const mf_index_visit *visit;
    char *err;
    size_t errlen;
} window;

static int block_in(const window *w, const mf_index_block *b)
{
    uint64_t end = ix_block_end(w->ix, b), a_end = b->addr + span_of(b);
    if (a_end < b->addr)
        a_end = UINT64_MAX;
    return b->alloc_ns <= w->t_to && end >= w->t_from && b->addr < w->a_to && a_end > w->a_from;
}

static int cells_of_level(window *w, ix_view *v, int l)
{
    ix_level *L = &v->levels[l];
    unsigned ws = w->ix->wshift + (unsigned)l, gs = MF_INDEX_GSHIFT + (unsigned)l;
    uint64_t c0 = rel(w->ix, w->t_from) >> ws, c1 = rel(w->ix, w->t_to) >> ws;
    uint64_t g0 = w->a_from >> gs, g1 = (w->a_to - 1) >> gs;
    for (size_t i = dir_lower(&L->cell_dir, c0); i < L->cell_dir.n; i++) {
        const ix_dirent *e = &L->cell_dir.e[i];
        if (e->key > c1)
            break;
        ix_file_cell *cells = malloc(e->count * sizeof *cells + 1);
        if (!cells) {
            snprintf(w->err, w->errlen, "out of memory");
            return -1;
        }
        if (ix_read(w->ix, e->offset, cells, e->count * sizeof *cells, w->err, w->errlen) < 0) {
            free(cells);
            return -1;
        }
        int rc = 0;
        for (size_t k = 0; k < e->count && !rc; k++) {
            if (cells[k].granule < g0 || cells[k].granule > g1)
                continue;
            mf_index_cell c = { .col = e->key, .granule = cells[k].granule,
                                .fill = cells[k].fill, .scope = cells[k].scope };
            rc = w->visit->cell(w->visit->ctx, &c);
        }
        free(cells);
        if (rc)
            return rc;
    }
    double area = (double)(1ull << ws) * (double)(1ull << gs);
    for (int k = 0; k < IX_COL_RING; k++) {
        const ix_column *col = &L->cols[k];
        if (col->col == IX_NONE || col->col < c0 || col->col > c1)
            continue;
        for (size_t i = 0; i < col->n; i++) {
            const ix_cell *x = &col->cells[i];
            if (x->granule < g0 || x->granule > g1)
                continue;
            double f = x->amount / area;
            mf_index_cell c = { .col = col->col, .granule = x->granule,
                                .fill = f > 1 ? 1 : f, .scope = x->scope };
            int rc = w->visit->cell(w->visit->ctx, &c);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* The first block of a written bucket (sorted by address) that may reach a_from. */
static int bucket_start(window *w, const ix_dirent *e, uint64_t *first)
{
    uint64_t want = w->a_from > e->extra ? w->a_from - e->extra : 0;
    uint64_t lo = 0, hi = e->count;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        mf_index_block b;
        if (ix_read(w->ix, e->offset + mid * sizeof b, &b, sizeof b, w->err, w->errlen) < 0)
            return -1;
        if (b.addr < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    *first = lo;
    return 0;
}

static int blocks_of_bucket(window *w, const ix_dirent *e)
{
    uint64_t k;
    if (bucket_start(w, e, &k) < 0)
        return -1;
    mf_index_block buf[READ_BLOCKS];
    while (k < e->count) {
        size_t n = e->count - k < READ_BLOCKS ? (size_t)(e->count - k) : READ_BLOCKS;
        if (ix_read(w->ix, e->offset + k * sizeof *buf, buf, n * sizeof *buf, w->err,
                    w->errlen) < 0)
            return -1;
        for (size_t i = 0; i < n; i++) {
            if (buf[i].addr >= w->a_to)
                return 0;
            int rc = block_in(w, &buf[i]) ? w->visit->block(w->visit->ctx, &buf[i]) : 0;
            if (rc)
                return rc;
        }
        k += n;
    }
    return 0;
}

static int blocks_of_level(window *w, ix_view *v, int l)
{
    ix_level *L = &v->levels[l];
    unsigned bs = w->ix->wshift + (unsigned)l + IX_BUCKET_SHIFT;
    uint64_t k1 = rel(w->ix, w->t_to) >> bs, k0 = rel(w->ix, w->t_from) >> bs;
    k0 = l == MF_INDEX_LEVELS - 1 ? 0 : k0 > 2 ? k0 - 2 : 0;   /* the top holds any length */
    for (size_t i = dir_lower(&L->block_dir, k0); i < L->block_dir.n; i++) {
        if (L->block_dir.e[i].key > k1)
            break;
        int rc = blocks_of_bucket(w, &L->block_dir.e[i]);
        if (rc)
            return rc;
    }
    for (int k = 0; k < IX_BUCKET_RING; k++) {
        const ix_bucket *b = &L->buckets[k];
        if (b->key == IX_NONE || b->key < k0 || b->key > k1)
            continue;
        for (size_t i = 0; i < b->n; i++) {
            int rc = block_in(w, &b->blocks[i]) ? w->visit->block(w->visit->ctx, &b->blocks[i])
                                                : 0;
            if (rc)
                return rc;
        }
    }
    return 0;
}

int mf_index_window(mf_index *ix, size_t vi, int level, uint64_t t_from, uint64_t t_to,
                    uint64_t a_from, uint64_t a_to, const mf_index_visit *visit, char *err,
                    size_t errlen)
{
    if (vi >= ix->n_views || a_to <= a_from || t_to < t_from)
        return 0;
    if (level >= MF_INDEX_LEVELS)
        level = MF_INDEX_LEVELS - 1;
    ix_view *v = &ix->views[vi];
    window w = { ix, t_from, t_to, a_from, a_to, visit, err, errlen };
    int rc = 0;
    if (level >= 0 && visit->cell)
        rc = cells_of_level(&w, v, level);
    for (int l = level + 1; !rc && visit->block && l < MF_INDEX_LEVELS; l++)
        rc = blocks_of_level(&w, v, l);
    for (size_t i = 0; !rc && visit->block && i < ix->live.n; i++)   /* not ended yet */
        if (ix->live.b[i].view == vi && block_in(&w, &ix->live.b[i]))
            rc = visit->block(visit->ctx, &ix->live.b[i]);
    return rc;
}

typedef struct live_at {
    uint64_t t;
    int (*fn)(void *ctx, const mf_index_block *b);
    void *ctx;
} live_at;

static int live_at_block(void *ctx, const mf_index_block *b)
{
    live_at *a = ctx;
    if (b->alloc_ns > a->t || (b->free_ns != MF_LIVE_AT_END && b->free_ns <= a->t))
        return 0;
    return a->fn(a->ctx, b);
}

int mf_index_live_at(mf_index *ix, size_t v, uint64_t t,
                     int (*fn)(void *ctx, const mf_index_block *b), void *ctx, char *err,
                     size_t errlen)
{
    live_at a = { t, fn, ctx };
    mf_index_visit visit = { .block = live_at_block, .ctx = &a };
    return mf_index_window(ix, v, -1, t, t, 0, UINT64_MAX, &visit, err, errlen);
}

int mf_index_occupancy(mf_index *ix, size_t vi, uint64_t t_from, uint64_t t_to,
                       size_t max_cols, int *level,
                       int (*fn)(void *ctx, const mf_index_occ *o), void *ctx, char *err,
                       size_t errlen)
{
    if (vi >= ix->n_views || t_to < t_from)
        return 0;
    ix_view *v = &ix->views[vi];
    int l = 0;
    while (l < MF_INDEX_LEVELS - 1 &&
           ((rel(ix, t_to) >> (ix->wshift + (unsigned)l)) -
            (rel(ix, t_from) >> (ix->wshift + (unsigned)l))) >= max_cols)
        l++;
    *level = l;
    ix_level *L = &v->levels[l];
    unsigned ws = ix->wshift + (unsigned)l;
    uint64_t c0 = rel(ix, t_from) >> ws, c1 = rel(ix, t_to) >> ws;
    /* from the page holding the last record before c0 (the value coming in) */
    size_t i = dir_lower(&L->occ_dir, c0 + 1);
    i = i ? i - 1 : 0;
    mf_index_occ prev = { .col = IX_NONE };
    int rc = 0;
    for (; !rc && i < L->occ_dir.n && L->occ_dir.e[i].key <= c1; i++) {
        const ix_dirent *e = &L->occ_dir.e[i];
        mf_index_occ *page = malloc(e->count * sizeof *page + 1);
        if (!page || ix_read(ix, e->offset, page, e->count * sizeof *page, err, errlen) < 0) {
            if (!page)
                snprintf(err, errlen, "out of memory");
            free(page);
            return -1;
        }
        for (size_t k = 0; k < e->count && !rc; k++) {
            if (page[k].col < c0)
                prev = page[k];
            else if (page[k].col <= c1) {
                if (prev.col != IX_NONE)
                    rc = fn(ctx, &prev);
                prev.col = IX_NONE;
                rc = rc ? rc : fn(ctx, &page[k]);
            }
        }
        free(page);
    }
    for (size_t k = 0; !rc && k <= L->n_occ_page; k++) {   /* not written yet, then open */
        const mf_index_occ *o = k < L->n_occ_page ? &L->occ_page[k] : &L->occ;
        if (o->col == IX_NONE || o->col > c1)
            continue;
        if (o->col < c0) {
            prev = *o;
            continue;
        }
        if (prev.col != IX_NONE)
            rc = fn(ctx, &prev);
        prev.col = IX_NONE;
        rc = rc ? rc : fn(ctx, o);
    }
    if (!rc && prev.col != IX_NONE)
        rc = fn(ctx, &prev);
    return rc;
}
