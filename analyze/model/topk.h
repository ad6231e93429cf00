/*
 * topk.h - keep the k best items of a stream (a bounded min-heap): the
 * largest blocks of a panel (drawn one by one), the largest leaks, the
 * longest spans of the trace.  k is a count, a byte budget over the items'
 * costs, or both; the item that must make room comes back to the caller
 * (a block that leaves the largest is painted into the tiles instead).
 *
 * The items stay where they were put (a dense array, in no order); the
 * heap orders small entries (a 64-bit key and the item's place), so a
 * block that enters the selection moves 16 bytes per heap level, not
 * itself, and most comparisons are of keys.
 */
#ifndef MEMFLOW_TOPK_H
#define MEMFLOW_TOPK_H

#include <stddef.h>
#include <stdint.h>

typedef struct mf_topk_entry {
    uint64_t key;             /* key(item); a smaller key ranks below */
    uint32_t item;            /* index into items */
} mf_topk_entry;

typedef struct mf_topk {
    unsigned char *items;     /* n items of item_size bytes, in no order */
    mf_topk_entry *heap;      /* n entries, the worst first */
    uint32_t *pos;            /* pos[i]: where item i's entry is in heap */
    size_t n, cap, item_size;
    size_t limit;             /* items kept at most (0: no count limit) */
    uint64_t budget, used;    /* sum of costs kept at most (budget 0: none) */
    int (*worse)(const void *a, const void *b);   /* a ranks below b (among equal keys) */
    uint64_t (*cost)(const void *item);           /* NULL: costs nothing */
    uint64_t (*key)(const void *item);            /* NULL: all keys equal */
    uint64_t dropped;         /* items offered and not kept, or pushed out */
} mf_topk;

/* An empty selection.  worse orders items; key (may be NULL) must agree
 * with it: key(a) < key(b) implies worse(a, b). */
void mf_topk_init(mf_topk *k, size_t item_size, size_t limit, uint64_t budget,
                  int (*worse)(const void *, const void *), uint64_t (*cost)(const void *),
                  uint64_t (*key)(const void *));

/* An empty selection ordered and bounded as from. */
void mf_topk_init_like(mf_topk *k, const mf_topk *from);

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
    return k->n ? k->items + (size_t)k->heap[0].item * k->item_size : NULL;
}

/* Item i (i < n), in no order. */
static inline const void *mf_topk_item(const mf_topk *k, size_t i)
{
    return k->items + i * k->item_size;
}

/* Is the selection full, so that a new item must beat the worst to stay? */
static inline int mf_topk_full(const mf_topk *k)
{
    return k->limit && k->n >= k->limit;
}

/* Lower the count limit; the items pushed out go to fn(item, ctx). */
int mf_topk_set_limit(mf_topk *k, size_t limit, int (*fn)(const void *item, void *ctx),
                      void *ctx);

/* Copy the kept items, best first, into out (n of them).  The selection
 * is kept.  0, or -1 when out of memory. */
int mf_topk_sorted(const mf_topk *k, void *out);

void mf_topk_free(mf_topk *k);

#endif /* MEMFLOW_TOPK_H */
