/*
 * torch_grow.h - the growing arrays of common/torch (the snapshot walker,
 * the conversion): doubling from 16, new elements zeroed, the bytes added
 * counted for the caller's memory figure.  common/torch links nothing of
 * the analysis (analyze/grow.h is the analysis's own).
 */
#ifndef MEMFLOW_TORCH_GROW_H
#define MEMFLOW_TORCH_GROW_H

#include <stdlib.h>
#include <string.h>

/* Make room for need elements of elem bytes in *a (capacity *cap), adding
 * the bytes grown to *mem.  0, or -1 when out of memory (nothing changed). */
static inline int mf_torch_grow(void **a, size_t *cap, size_t need, size_t elem, size_t *mem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(*a, n * elem);
    if (!p)
        return -1;
    memset((char *)p + *cap * elem, 0, (n - *cap) * elem);
    *mem += (n - *cap) * elem;
    *a = p;
    *cap = n;
    return 0;
}

#endif /* MEMFLOW_TORCH_GROW_H */
