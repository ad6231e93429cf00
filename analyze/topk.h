/*
 * topk.h - keep the k best items of a stream (a bounded min-heap): the
 * largest blocks of a panel (drawn one by one), the largest leaks, the
 * longest spans of the trace.  k is a count, a byte budget over the items'
 * costs, or both; the item that must make room comes back to the caller
 * (a block that leaves the largest is painted into the tiles instead).
 */
#ifndef MEMFLOW_TOPK_H
#define MEMFLOW_TOPK_H

#include <stddef.h>
#include <stdint.h>

typedef struct mf_topk {
    unsigned char *items;     /* heap of item_size-byte items, the worst first */
    size_t n, cap, item_size;
    size_t limit;             /* items kept at most (0: no count limit) */
    uint64_t budget, used;    /* sum of costs kept at most (budget 0: none) */
    int (*worse)(const void *a, const void *b);   /* a ranks below b */
    uint64_t (*cost)(const void *item);           /* NULL: costs nothing */
    uint64_t dropped;         /* items offered and not kept, or pushed out */
} mf_topk;

/* An empty selection. */
void mf_topk_init(mf_topk *k, size_t item_size, size_t limit, uint64_t budget,
                  int (*worse)(const void *, const void *), uint64_t (*cost)(const void *));

/*
 * Offer item.  Returns 1 and copies into *out the item that does not stay
 * (item itself, or a kept one it pushed out) when one had to go; 0 when
 * all stay; -1 when out of memory.  out may be NULL.  (With a budget, an
 * offer may push out several items: each after the first is only counted.)
 */
int mf_topk_offer(mf_topk *k, const void *item, void *out);

/* The worst item kept (NULL when empty). */
static inline const void *mf_topk_worst(const mf_topk *k)
{
    return k->n ? k->items : NULL;
}

/* Is the selection full, so that a new item must beat the worst to stay? */
static inline int mf_topk_full(const mf_topk *k)
{
    return k->limit && k->n >= k->limit;
}

/* Lower the count limit; the items pushed out go to fn(item, ctx). */
int mf_topk_set_limit(mf_topk *k, size_t limit, int (*fn)(const void *item, void *ctx),
                      void *ctx);

/* Copy the kept items, best first, into out (n of them).  The heap is kept.
 * 0, or -1 when out of memory. */
int mf_topk_sorted(const mf_topk *k, void *out);

void mf_topk_free(mf_topk *k);

#endif /* MEMFLOW_TOPK_H */
