/*
 * check_parts.c - the model's bounded parts on their own (compiled in:
 * they are internal to the library): the tile grid (analyze/model/tiles.c) in
 * strips, painted and coarsened in time and in address; the top-k
 * selection (analyze/model/topk.c) against a full sort, with counts, budgets,
 * keys and ties.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tiles.h"
#include "topk.h"

static const mf_tile_strip *find(const mf_tiles *t, uint64_t granule, uint32_t first_col)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->strips[i].granule == granule && t->strips[i].first_col == first_col)
            return &t->strips[i];
    return NULL;
}

static uint64_t at_col(const mf_tiles *t, uint64_t col)
{
    return t->origin + (col << t->wshift);
}

/* Cells lo..hi of a strip's mask. */
#define CELLS(lo, hi) ((mf_tile_mask)(((2ull << (hi)) - 1) & ~((1ull << (lo)) - 1)))
#define S MF_TILE_STRIP

/* A block over columns S-11..S+4 of granule 3 (S: MF_TILE_STRIP) fills
 * strip 0 from cell S-11 and strip S to cell 4; never freed: its last cell
 * says so.  A later block over S+2..S+3 paints over it there.  Coarsened
 * in time: columns halve (the later of two wins); in address: granules
 * halve. */
START_TEST(tiles_paint_and_coarsen)
{
    mf_tiles t = { 0 };
    t.started = 1;
    t.gshift = 6;
    t.wshift = 10;
    t.origin = 1000000;
    mf_tile a = { 7, 100, 200 }, b = { 9, 300, 400 };
    ck_assert_uint_eq(mf_tiles_cost(&t, 3 << 6, 64, at_col(&t, S - 11), at_col(&t, S + 4)), 2);
    ck_assert_int_eq(mf_tiles_paint(&t, 3 << 6, 64, at_col(&t, S - 11), at_col(&t, S + 4) + 5, a,
                                    1), 0);
    ck_assert_uint_eq(t.n, 2);
    const mf_tile_strip *s0 = find(&t, 3, 0), *s1 = find(&t, 3, S);
    ck_assert_ptr_nonnull(s0);
    ck_assert_ptr_nonnull(s1);
    ck_assert_uint_eq(s0->used, CELLS(S - 11, S - 1));
    ck_assert_uint_eq(s0->unfreed, 0);
    ck_assert_uint_eq(s1->used, 0x1f);
    ck_assert_uint_eq(s1->unfreed, 0x10);
    ck_assert_uint_eq(s1->cells[4].scope, 7);
    ck_assert_int_eq(mf_tiles_paint(&t, 3 << 6, 1, at_col(&t, S + 2), at_col(&t, S + 3), b, 0), 0);
    /* runs of cells painted alike: S..S+1 (a), S+2..S+3 (b), S+4 (a) */
    unsigned k = 0, first, runs[3][2], n_runs = 0, n;
    while ((n = mf_tile_run(s1, &k, &first)) > 0 && n_runs < 3) {
        runs[n_runs][0] = first;
        runs[n_runs++][1] = n;
    }
    ck_assert_uint_eq(n_runs, 3);
    ck_assert_uint_eq(runs[0][0], 0);
    ck_assert_uint_eq(runs[0][1], 2);
    ck_assert_uint_eq(runs[1][0], 2);
    ck_assert_uint_eq(runs[1][1], 2);
    ck_assert_uint_eq(runs[2][0], 4);
    ck_assert_uint_eq(runs[2][1], 1);
    ck_assert_uint_eq(s1->cells[2].scope, 9);

    ck_assert_int_eq(mf_tiles_coarsen(&t, 1), 0);     /* columns halve: one strip */
    ck_assert_uint_eq(t.wshift, 11);
    ck_assert_uint_eq(t.n, 1);
    const mf_tile_strip *c = find(&t, 3, 0);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(c->used, CELLS((S - 11) / 2, (S + 4) / 2));
    ck_assert_uint_eq(c->unfreed, CELLS((S + 4) / 2, (S + 4) / 2));
    ck_assert_uint_eq(c->cells[(S + 2) / 2].scope, 9);   /* S+2, S+3 */
    ck_assert_uint_eq(c->cells[S / 2].scope, 7);         /* S, S+1 */
    ck_assert_uint_eq(c->cells[(S - 11) / 2].scope, 7);

    ck_assert_int_eq(mf_tiles_coarsen(&t, 0), 0);     /* granule 3 -> 1 */
    ck_assert_uint_eq(t.gshift, 7);
    ck_assert_ptr_nonnull(find(&t, 1, 0));
    ck_assert_uint_eq(find(&t, 1, 0)->used, CELLS((S - 11) / 2, (S + 4) / 2));

    /* a block past column 2^32 is clamped, not wrapped */
    ck_assert_int_eq(mf_tiles_paint(&t, 0, 1, UINT64_MAX - 1, UINT64_MAX, a, 0), 0);
    ck_assert_ptr_nonnull(find(&t, 0, UINT32_MAX & ~(uint32_t)(S - 1)));
    mf_tiles_free(&t);
}
END_TEST
#undef S

typedef struct item {
    uint64_t size;
    uint32_t seq;
    uint32_t cost;
} item;

static int smaller(const void *pa, const void *pb)
{
    const item *a = pa, *b = pb;
    return a->size != b->size ? a->size < b->size : a->seq > b->seq;
}

static uint64_t size_key(const void *p)
{
    return ((const item *)p)->size;
}

static uint64_t item_cost(const void *p)
{
    return ((const item *)p)->cost;
}

static int best_first(const void *pa, const void *pb)
{
    return smaller(pb, pa) ? -1 : smaller(pa, pb) ? 1 : 0;
}

/* 20,000 items with many equal sizes into the best 500 (with and without
 * keys, with a budget): the same items as a full sort keeps, best first;
 * what does not stay comes back exactly once. */
START_TEST(topk_matches_a_full_sort)
{
    enum { N = 20000, K = 500 };
    item *all = malloc(N * sizeof *all), *want = malloc(N * sizeof *want), got[K], out;
    uint32_t rng = 12345;
    for (uint32_t i = 0; i < N; i++) {
        rng = rng * 1103515245u + 12345u;
        all[i] = (item){ (rng >> 16) % 300, i, 1 + (rng >> 8) % 7 };
    }
    memcpy(want, all, N * sizeof *all);
    qsort(want, N, sizeof *want, best_first);
    for (int keyed = 0; keyed < 2; keyed++) {
        mf_topk k;
        mf_topk_init(&k, sizeof(item), K, 0, smaller, NULL, keyed ? size_key : NULL);
        size_t back = 0;
        for (uint32_t i = 0; i < N; i++) {
            int rc = mf_topk_offer(&k, &all[i], &out);
            ck_assert_int_ge(rc, 0);
            back += (size_t)rc;
            if (i == N / 2) {           /* lower the limit halfway, then raise it */
                ck_assert_int_eq(mf_topk_set_limit(&k, K / 2, NULL, NULL), 0);
                mf_topk_set_limit(&k, K, NULL, NULL);
            }
        }
        ck_assert_uint_eq(k.n, K);
        ck_assert_uint_eq(back + K / 2, N - K);   /* K / 2 went to set_limit instead */
        ck_assert_int_eq(mf_topk_sorted(&k, got), 0);
        for (size_t i = 0; i < K; i++) {
            ck_assert_uint_eq(got[i].size, want[i].size);
            ck_assert_uint_eq(got[i].seq, want[i].seq);
        }
        mf_topk_free(&k);
    }
    /* a budget of costs: never over it */
    mf_topk b;
    mf_topk_init(&b, sizeof(item), 0, 1000, smaller, item_cost, size_key);
    for (uint32_t i = 0; i < N; i++) {
        ck_assert_int_ge(mf_topk_offer(&b, &all[i], NULL), 0);
        ck_assert_uint_le(b.used, 1000);
    }
    item *kept = malloc(b.n * sizeof *kept);
    ck_assert_int_eq(mf_topk_sorted(&b, kept), 0);
    /* greedy: the best is kept, best first; an item that fits is kept even
     * when better ones were pushed out before it came */
    ck_assert_uint_gt(b.n, 100);
    ck_assert_uint_eq(kept[0].seq, want[0].seq);
    for (size_t i = 1; i < b.n; i++)
        ck_assert_int_le(best_first(&kept[i - 1], &kept[i]), 0);
    free(kept);
    mf_topk_free(&b);
    free(all);
    free(want);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("parts");
    TCase *tc = tcase_create("parts");
    tcase_add_test(tc, tiles_paint_and_coarsen);
    tcase_add_test(tc, topk_matches_a_full_sort);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
