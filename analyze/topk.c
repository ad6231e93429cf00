/*
 * topk.c - a bounded min-heap of fixed-size items (see topk.h).
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "topk.h"

#define AT(k, i) ((k)->items + (i) * (k)->item_size)

void mf_topk_init(mf_topk *k, size_t item_size, size_t limit, uint64_t budget,
                  int (*worse)(const void *, const void *), uint64_t (*cost)(const void *))
{
    memset(k, 0, sizeof *k);
    k->item_size = item_size;
    k->limit = limit;
    k->budget = budget;
    k->worse = worse;
    k->cost = cost;
}

static void swap(mf_topk *k, size_t i, size_t j)
{
    unsigned char tmp[256];
    size_t s = k->item_size;
    for (size_t off = 0; off < s; off += sizeof tmp) {
        size_t n = s - off < sizeof tmp ? s - off : sizeof tmp;
        memcpy(tmp, AT(k, i) + off, n);
        memcpy(AT(k, i) + off, AT(k, j) + off, n);
        memcpy(AT(k, j) + off, tmp, n);
    }
}

static void sift_up(mf_topk *k, size_t i)
{
    while (i > 0 && k->worse(AT(k, i), AT(k, (i - 1) / 2))) {
        swap(k, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void sift_down(mf_topk *k, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < k->n && k->worse(AT(k, l), AT(k, w)))
            w = l;
        if (r < k->n && k->worse(AT(k, r), AT(k, w)))
            w = r;
        if (w == i)
            return;
        swap(k, i, w);
        i = w;
    }
}

/* Remove the worst, copying it to out (may be NULL). */
static void pop_worst(mf_topk *k, void *out)
{
    if (out)
        memcpy(out, AT(k, 0), k->item_size);
    if (k->cost)
        k->used -= k->cost(AT(k, 0));
    k->n--;
    if (k->n) {
        memcpy(AT(k, 0), AT(k, k->n), k->item_size);
        sift_down(k, 0);
    }
    k->dropped++;
}

int mf_topk_offer(mf_topk *k, const void *item, void *out)
{
    uint64_t c = k->cost ? k->cost(item) : 0;
    int over_count = k->limit && k->n >= k->limit;
    int over_budget = k->budget && k->used + c > k->budget;
    if ((over_count || over_budget) && (k->n == 0 || !k->worse(AT(k, 0), item))) {
        if (out)
            memcpy(out, item, k->item_size);
        k->dropped++;
        return 1;              /* no better than the worst kept */
    }
    int gone = 0;
    if (over_count) {
        pop_worst(k, out);
        gone = 1;
    }
    if (mf_grow((void **)&k->items, &k->cap, k->n + 1, k->item_size) < 0)
        return -1;
    memcpy(AT(k, k->n), item, k->item_size);
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
    if (!copy.items)
        return -1;
    if (k->n)
        memcpy(copy.items, k->items, k->n * k->item_size);
    for (size_t i = k->n; i-- > 0;)       /* the worst goes last */
        pop_worst(&copy, (unsigned char *)out + i * k->item_size);
    free(copy.items);
    return 0;
}

void mf_topk_free(mf_topk *k)
{
    free(k->items);
    k->items = NULL;
    k->n = k->cap = 0;
    k->used = 0;
}
