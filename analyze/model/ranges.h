/*
 * ranges.h - the address ranges a process used on a device, in bounded
 * memory: the union of its blocks' [addr, addr + span), with how many
 * blocks started in each range.  The picture's compressed address axis is
 * drawn from them.  Up to MF_RANGES_MAX disjoint ranges are kept exactly;
 * past that, the ranges separated by the smallest gaps are joined (the
 * gaps the picture would collapse are the largest, so they stay).
 */
#ifndef MEMFLOW_RANGES_H
#define MEMFLOW_RANGES_H

#include <stddef.h>
#include <stdint.h>

#define MF_RANGES_MAX 1024

typedef struct mf_range {
    uint64_t start, end;      /* [start, end) */
    uint64_t blocks;          /* blocks that started inside */
} mf_range;

typedef struct mf_ranges {
    mf_range *r;              /* disjoint, not touching, by address */
    size_t n, cap;
    size_t last;              /* the range hit last (a cache) */
    uint64_t bytes;           /* bytes the ranges cover */
} mf_ranges;

/* Add [start, end) (end > start).  0, or -1 when out of memory. */
int mf_ranges_add(mf_ranges *s, uint64_t start, uint64_t end);

void mf_ranges_free(mf_ranges *s);

#endif /* MEMFLOW_RANGES_H */
