/*
 * index_query.c - the view index's answers (index.h): how many blocks a
 * window may hold, its blocks, the blocks live at a moment, the cells of a
 * level over a time range, the occupancy of a time range.  Each reads the
 * pieces the directories point at (pread into one buffer: the file is
 * never mapped whole, so memory stays what one piece needs) and, while the
 * logs are still written, what is still open in memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index_state.h"

/* The buckets of lifetime level k that blocks meeting [t_from, t_to] can
 * be in: [*first, *last] of the directory's keys. */
static void bucket_range(const mf_index *ix, int k, uint64_t t_from, uint64_t t_to,
                         uint64_t *first, uint64_t *last)
{
    unsigned s = ix_bucket_shift(ix, k);
    uint64_t a = ix_rel(ix, t_from) >> s;
    *first = a ? a - 1 : 0;     /* started a bucket before, lived at most one more */
    *last = ix_rel(ix, t_to) >> s;
}

uint64_t mf_index_count_blocks(const mf_index *ix, size_t vi, uint64_t t_from, uint64_t t_to,
                               uint64_t a_from, uint64_t a_to, uint64_t limit)
{
    if (vi >= ix->n_views)
        return 0;
    const ix_view *v = &ix->views[vi];
    uint64_t n = 0;
    for (int k = 0; k < MF_INDEX_LEVELS && n <= limit; k++) {
        const ix_level *L = &v->levels[k];
        uint64_t first, last;
        bucket_range(ix, k, t_from, t_to, &first, &last);
        for (size_t i = ix_dir_lower(&L->block_dir, first);
             i < L->block_dir.n && L->block_dir.e[i].key <= last && n <= limit; i++)
            if (L->block_dir.e[i].hi > a_from && L->block_dir.e[i].lo < a_to)
                n += L->block_dir.e[i].count;
        for (int r = 0; r < IX_BUCKET_RING; r++) {
            const ix_bucket *bk = &L->buckets[r];
            if (bk->key != IX_NONE && bk->key >= first && bk->key <= last && bk->hi > a_from &&
                bk->lo < a_to)
                n += bk->n;
        }
    }
    for (size_t i = 0; i < ix->live.n && n <= limit; i++)
        n += ix->live.b[i].view == vi;
    return n;
}

typedef struct window {
    mf_index *ix;
    uint64_t t_from, t_to, a_from, a_to;
    int (*fn)(void *ctx, const mf_index_block *b);
    void *ctx;
} window;

static int block_in(const window *w, const mf_index_block *b)
{
    uint64_t end = ix_block_end(w->ix, b), a_end = b->addr + ix_span(b);
    if (a_end < b->addr)
        a_end = UINT64_MAX;
    return b->alloc_ns <= w->t_to && end >= w->t_from && b->addr < w->a_to && a_end > w->a_from;
}

static int if_in(void *ctx, const mf_index_block *b)
{
    const window *w = ctx;
    return block_in(w, b) ? w->fn(w->ctx, b) : 0;
}

int mf_index_blocks(mf_index *ix, size_t vi, uint64_t t_from, uint64_t t_to, uint64_t a_from,
                    uint64_t a_to, int (*fn)(void *ctx, const mf_index_block *b), void *ctx,
                    char *err, size_t errlen)
{
    if (vi >= ix->n_views || a_to <= a_from || t_to < t_from)
        return 0;
    ix_view *v = &ix->views[vi];
    window w = { ix, t_from, t_to, a_from, a_to, fn, ctx };
    for (int k = 0; k < MF_INDEX_LEVELS; k++) {
        const ix_level *L = &v->levels[k];
        uint64_t first, last;
        bucket_range(ix, k, t_from, t_to, &first, &last);
        for (size_t i = ix_dir_lower(&L->block_dir, first);
             i < L->block_dir.n && L->block_dir.e[i].key <= last; i++) {
            const ix_dirent *e = &L->block_dir.e[i];
            if (e->hi <= a_from || e->lo >= a_to)
                continue;                               /* a piece elsewhere in memory */
            int rc = ix_decode_blocks(ix, e, k, (uint32_t)vi, if_in, &w, err, errlen);
            if (rc)
                return rc;
        }
        for (int r = 0; r < IX_BUCKET_RING; r++) {
            const ix_bucket *bk = &L->buckets[r];
            if (bk->key == IX_NONE || bk->key < first || bk->key > last || bk->hi <= a_from ||
                bk->lo >= a_to)
                continue;
            int rc = ix_open_blocks(ix, bk, k, (uint32_t)vi, if_in, &w, err, errlen);
            if (rc)
                return rc;
        }
    }
    for (size_t i = 0; i < ix->live.n; i++) {          /* not ended yet */
        if (ix->live.b[i].view != vi)
            continue;
        int rc = if_in(&w, &ix->live.b[i]);
        if (rc)
            return rc;
    }
    return 0;
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
    return mf_index_blocks(ix, v, t, t, 0, UINT64_MAX, live_at_block, &a, err, errlen);
}

int mf_index_cells(mf_index *ix, size_t vi, int level, uint64_t t_from, uint64_t t_to,
                   int (*fn)(void *ctx, const mf_index_cell *c), void *ctx, char *err,
                   size_t errlen)
{
    if (vi >= ix->n_views || t_to < t_from)
        return 0;
    if (level < ix->cell_level)
        level = ix->cell_level;
    if (level >= MF_INDEX_LEVELS)
        level = MF_INDEX_LEVELS - 1;
    ix_view *v = &ix->views[vi];
    const ix_dir *d = &v->levels[level].cell_dir;
    unsigned ws = ix->wshift + (unsigned)level;
    uint64_t c0 = ix_rel(ix, t_from) >> ws, c1 = ix_rel(ix, t_to) >> ws;
    size_t i = ix_dir_lower(d, c0);
    if (i > 0 && d->e[i - 1].key + (d->e[i - 1].aux >> 8) >= c0)
        i--;                                        /* a run of columns reaching c0 */
    for (; i < d->n && d->e[i].key <= c1; i++) {
        int rc = ix_decode_cells(ix, &d->e[i], level, t_from, t_to, fn, ctx, err, errlen);
        if (rc)
            return rc;
    }
    return ix_cells_open(ix, v, level, t_from, t_to, fn, ctx);
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
           ((ix_rel(ix, t_to) >> (ix->wshift + (unsigned)l)) -
            (ix_rel(ix, t_from) >> (ix->wshift + (unsigned)l))) >= max_cols)
        l++;
    *level = l;
    ix_level *L = &v->levels[l];
    unsigned ws = ix->wshift + (unsigned)l;
    uint64_t c0 = ix_rel(ix, t_from) >> ws, c1 = ix_rel(ix, t_to) >> ws;
    /* from the page holding the last record before c0 (the value coming in) */
    size_t i = ix_dir_lower(&L->occ_dir, c0 + 1);
    i = i ? i - 1 : 0;
    mf_index_occ prev = { .col = IX_NONE };
    int rc = 0;
    for (; !rc && i < L->occ_dir.n && L->occ_dir.e[i].key <= c1; i++) {
        const ix_dirent *e = &L->occ_dir.e[i];
        size_t n = (size_t)(e->bytes / sizeof(mf_index_occ));
        mf_index_occ *page = malloc(n * sizeof *page + 1);
        if (!page || ix_read(ix, e->offset, page, n * sizeof *page, err, errlen) < 0) {
            if (!page)
                snprintf(err, errlen, "out of memory");
            free(page);
            return -1;
        }
        for (size_t k = 0; k < n && !rc; k++) {
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
