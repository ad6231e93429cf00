/*
 * topk.c - a bounded min-heap of entries over items that stay in place
 * (see topk.h).
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "topk.h"

#define ITEM(k, i) ((k)->items + (size_t)(i) * (k)->item_size)

void mf_topk_init(mf_topk *k, size_t item_size, size_t limit, uint64_t budget,
                  int (*worse)(const void *, const void *), uint64_t (*cost)(const void *),
                  uint64_t (*key)(const void *))
{
    memset(k, 0, sizeof *k);
    k->item_size = item_size;
    k->limit = limit;
    k->budget = budget;
    k->worse = worse;
    k->cost = cost;
    k->key = key;
}

void mf_topk_init_like(mf_topk *k, const mf_topk *from)
{
    mf_topk_init(k, from->item_size, from->limit, from->budget, from->worse, from->cost,
                 from->key);
}

/* Does entry a rank below entry b? */
static int below(const mf_topk *k, const mf_topk_entry *a, const mf_topk_entry *b)
{
    if (a->key != b->key)
        return a->key < b->key;
    return k->worse(ITEM(k, a->item), ITEM(k, b->item));
}

static void put(mf_topk *k, size_t at, mf_topk_entry e)
{
    k->heap[at] = e;
    k->pos[e.item] = (uint32_t)at;
}

static void sift_up(mf_topk *k, size_t i)
{
    mf_topk_entry e = k->heap[i];
    while (i > 0 && below(k, &e, &k->heap[(i - 1) / 2])) {
        put(k, i, k->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    put(k, i, e);
}

static void sift_down(mf_topk *k, size_t i)
{
    mf_topk_entry e = k->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = l;
        if (l >= k->n)
            break;
        if (r < k->n && below(k, &k->heap[r], &k->heap[l]))
            w = r;
        if (!below(k, &k->heap[w], &e))
            break;
        put(k, i, k->heap[w]);
        i = w;
    }
    put(k, i, e);
}

/* Remove the worst, copying it to out (may be NULL).  The last item moves
 * into its place in items. */
static void pop_worst(mf_topk *k, void *out)
{
    uint32_t gone = k->heap[0].item;
    if (out)
        memcpy(out, ITEM(k, gone), k->item_size);
    if (k->cost)
        k->used -= k->cost(ITEM(k, gone));
    k->n--;
    if (k->n) {
        put(k, 0, k->heap[k->n]);
        sift_down(k, 0);
    }
    if (gone != k->n) {        /* item n (the last) fills the hole */
        memcpy(ITEM(k, gone), ITEM(k, k->n), k->item_size);
        size_t at = k->pos[k->n];
        k->heap[at].item = gone;
        k->pos[gone] = (uint32_t)at;
    }
    k->dropped++;
}

static int make_room(mf_topk *k)
{
    size_t cap = k->cap;
    if (mf_grow((void **)&k->items, &cap, k->n + 1, k->item_size) < 0)
        return -1;
    size_t cap_heap = k->cap;
    if (mf_grow((void **)&k->heap, &cap_heap, cap, sizeof *k->heap) < 0)
        return -1;
    size_t cap_pos = k->cap;
    if (mf_grow((void **)&k->pos, &cap_pos, cap, sizeof *k->pos) < 0)
        return -1;
    k->cap = cap;
    return 0;
}

int mf_topk_offer(mf_topk *k, const void *item, void *out)
{
    uint64_t c = k->cost ? k->cost(item) : 0;
    uint64_t key = k->key ? k->key(item) : 0;
    int over_count = k->limit && k->n >= k->limit;
    int over_budget = k->budget && k->used + c > k->budget;
    if (over_count || over_budget) {
        int no_better = k->n == 0 || key < k->heap[0].key ||
                        (key == k->heap[0].key && !k->worse(ITEM(k, k->heap[0].item), item));
        if (no_better) {
            if (out)
                memcpy(out, item, k->item_size);
            k->dropped++;
            return 1;          /* no better than the worst kept */
        }
    }
    int gone = 0;
    if (over_count) {
        pop_worst(k, out);
        gone = 1;
    }
    if (k->n >= k->cap && make_room(k) < 0)
        return -1;
    memcpy(ITEM(k, k->n), item, k->item_size);
    put(k, k->n, (mf_topk_entry){ key, (uint32_t)k->n });
    k->n++;
    k->used += c;
    sift_up(k, k->n - 1);
    while (k->budget && k->used > k->budget && k->n > 1) {
        pop_worst(k, gone ? NULL : out);
        gone = 1;
    }
    return gone;
}

int mf_topk_set_limit(mf_topk *k, size_t limit, int (*fn)(const void *item, void *ctx),
                      void *ctx)
{
    k->limit = limit;
    unsigned char buf[512];
    while (limit && k->n > limit) {
        if (k->item_size > sizeof buf)
            return -1;
        pop_worst(k, buf);
        k->dropped--;          /* handed on, not lost */
        if (fn && fn(buf, ctx) < 0)
            return -1;
    }
    return 0;
}

int mf_topk_sorted(const mf_topk *k, void *out)
{
    mf_topk copy = *k;
    copy.items = malloc(k->n * k->item_size + 1);
    copy.heap = malloc(k->n * sizeof *copy.heap + 1);
    copy.pos = malloc(k->n * sizeof *copy.pos + 1);
    int rc = -1;
    if (copy.items && copy.heap && copy.pos) {
        if (k->n) {
            memcpy(copy.items, k->items, k->n * k->item_size);
            memcpy(copy.heap, k->heap, k->n * sizeof *copy.heap);
            memcpy(copy.pos, k->pos, k->n * sizeof *copy.pos);
        }
        for (size_t i = k->n; i-- > 0;)       /* the worst goes last */
            pop_worst(&copy, (unsigned char *)out + i * k->item_size);
        rc = 0;
    }
    free(copy.items);
    free(copy.heap);
    free(copy.pos);
    return rc;
}

void mf_topk_free(mf_topk *k)
{
    free(k->items);
    free(k->heap);
    free(k->pos);
    k->items = NULL;
    k->heap = NULL;
    k->pos = NULL;
    k->n = k->cap = 0;
    k->used = 0;
}
