/*
 * ranges.c - the bounded union of address ranges (see ranges.h): a sorted
 * array, a binary search per block (one compare when the block falls in the
 * range hit last, as heap blocks mostly do).
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "ranges.h"

/* The first range whose end >= start (it may contain or follow start). */
static size_t first_reaching(const mf_ranges *s, uint64_t start)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->r[mid].end < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int by_gap(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Join the ranges across the smallest gaps until 3/4 of the maximum are left. */
static void join_smallest_gaps(mf_ranges *s)
{
    size_t n = s->n, joins = n - MF_RANGES_MAX * 3 / 4;
    uint64_t *gaps = malloc((n - 1) * sizeof *gaps);
    uint64_t cut = 0;
    if (gaps) {
        for (size_t i = 1; i < n; i++)
            gaps[i - 1] = s->r[i].start - s->r[i - 1].end;
        qsort(gaps, n - 1, sizeof *gaps, by_gap);
        cut = gaps[joins - 1];
        free(gaps);
    }                          /* out of memory: join every gap up to 0 */
    size_t out = 0;
    for (size_t i = 1; i < n; i++) {
        if (s->r[i].start - s->r[out].end <= cut && joins > 0) {
            s->bytes += s->r[i].start - s->r[out].end;
            s->r[out].end = s->r[i].end;
            s->r[out].blocks += s->r[i].blocks;
            joins--;
        } else {
            s->r[++out] = s->r[i];
        }
    }
    s->n = out + 1;
    s->last = 0;
}

int mf_ranges_add(mf_ranges *s, uint64_t start, uint64_t end)
{
    if (s->n && s->last < s->n && s->r[s->last].start <= start && end <= s->r[s->last].end) {
        s->r[s->last].blocks++;
        return 0;
    }
    size_t i = first_reaching(s, start);
    if (i < s->n && s->r[i].start <= start && end <= s->r[i].end) {
        s->r[i].blocks++;
        s->last = i;
        return 0;
    }
    /* ranges i .. j-1 touch [start, end]: they merge into one */
    size_t j = i;
    uint64_t blocks = 1;
    while (j < s->n && s->r[j].start <= end) {
        start = s->r[j].start < start ? s->r[j].start : start;
        end = s->r[j].end > end ? s->r[j].end : end;
        blocks += s->r[j].blocks;
        s->bytes -= s->r[j].end - s->r[j].start;
        j++;
    }
    s->bytes += end - start;
    if (j == i) {               /* a new range at i */
        if (mf_grow((void **)&s->r, &s->cap, s->n + 1, sizeof *s->r) < 0)
            return -1;
        memmove(s->r + i + 1, s->r + i, (s->n - i) * sizeof *s->r);
        s->n++;
    } else if (j > i + 1) {
        memmove(s->r + i + 1, s->r + j, (s->n - j) * sizeof *s->r);
        s->n -= j - i - 1;
    }
    s->r[i] = (mf_range){ start, end, blocks };
    s->last = i;
    if (s->n > MF_RANGES_MAX)
        join_smallest_gaps(s);
    return 0;
}

void mf_ranges_free(mf_ranges *s)
{
    free(s->r);
    memset(s, 0, sizeof *s);
}
