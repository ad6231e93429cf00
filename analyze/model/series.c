/*
 * series.c - bounded time series (see series.h).
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "series.h"

void mf_series_init(mf_series *s, size_t limit)
{
    memset(s, 0, sizeof *s);
    s->limit = limit < 8 ? 8 : limit;
    s->group = 1;
}

/* Halve the kept points: every four keep their lowest and highest. */
static void halve(mf_series *s)
{
    size_t out = 0;
    for (size_t lo = 0; lo < s->n; lo += 4) {
        size_t hi = lo + 4 < s->n ? lo + 4 : s->n, min = lo, max = lo;
        for (size_t i = lo + 1; i < hi; i++) {
            if (s->points[i].live_bytes < s->points[min].live_bytes)
                min = i;
            if (s->points[i].live_bytes > s->points[max].live_bytes)
                max = i;
        }
        mf_point a = s->points[min < max ? min : max], b = s->points[min < max ? max : min];
        s->points[out++] = a;
        if (min != max)
            s->points[out++] = b;
    }
    s->n = out;
    s->group *= 2;
}

/* Keep one point, halving first when full; the array keeps room for the
 * three points mf_series_points adds. */
static int keep(mf_series *s, const mf_point *p)
{
    if (s->n >= s->limit)
        halve(s);
    if (s->n + 4 > s->cap) {
        size_t cap = s->cap;
        if (mf_grow((void **)&s->points, &cap, s->n + 4, sizeof *s->points) < 0)
            return -1;
        s->cap = cap;
    }
    s->points[s->n++] = *p;
    return 0;
}

/* Keep the open group's extremes, in time order. */
static int close_group(mf_series *s)
{
    int rc = 0;
    if (s->low.time_ns <= s->high.time_ns) {
        rc = keep(s, &s->low);
        if (rc == 0 && (s->high.time_ns != s->low.time_ns || s->high.live_bytes != s->low.live_bytes))
            rc = keep(s, &s->high);
    } else {
        rc = keep(s, &s->high);
        if (rc == 0)
            rc = keep(s, &s->low);
    }
    s->in_group = 0;
    return rc;
}

int mf_series_add_keep(mf_series *s, uint64_t time_ns, uint64_t live, uint64_t actual)
{
    mf_point p = { time_ns, live, actual };
    s->last = p;
    s->added++;
    if (s->group == 1)
        return keep(s, &p);
    if (s->in_group == 0 || live < s->low.live_bytes)
        s->low = p;
    if (s->in_group == 0 || live > s->high.live_bytes)
        s->high = p;
    return ++s->in_group >= s->group ? close_group(s) : 0;
}

void mf_series_set_limit(mf_series *s, size_t limit)
{
    s->limit = limit < 8 ? 8 : limit;
    while (s->n > s->limit)
        halve(s);
}

const mf_point *mf_series_points(mf_series *s, size_t *n)
{
    size_t k = s->n;
    if (!s->points) {
        *n = 0;
        return NULL;
    }
    if (s->in_group) {
        const mf_point *first = s->low.time_ns <= s->high.time_ns ? &s->low : &s->high;
        const mf_point *second = first == &s->low ? &s->high : &s->low;
        s->points[k++] = *first;
        if (second->time_ns != first->time_ns)
            s->points[k++] = *second;
    }
    if (s->added && (k == 0 || s->points[k - 1].time_ns != s->last.time_ns ||
                     s->points[k - 1].live_bytes != s->last.live_bytes))
        s->points[k++] = s->last;
    *n = k;
    return s->points;
}

void mf_series_free(mf_series *s)
{
    free(s->points);
    memset(s, 0, sizeof *s);
}

void mf_snapshots_init(mf_snapshots *s, size_t limit)
{
    memset(s, 0, sizeof *s);
    s->limit = limit < 4 ? 4 : limit;
    s->stride = 1;
}

int mf_snapshots_add(mf_snapshots *s, const mf_snapshot *snap)
{
    s->last = *snap;
    if (s->added++ % s->stride)
        return 0;
    if (s->n >= s->limit) {
        size_t out = 0;
        for (size_t i = 0; i < s->n; i += 2)
            s->items[out++] = s->items[i];
        s->n = out;
        s->stride *= 2;
        if ((s->added - 1) % s->stride)
            return 0;
    }
    size_t cap = s->cap;
    if (mf_grow((void **)&s->items, &cap, s->n + 2, sizeof *s->items) < 0)
        return -1;
    s->cap = cap;
    s->items[s->n++] = *snap;
    return 0;
}

const mf_snapshot *mf_snapshots_items(mf_snapshots *s, size_t *n)
{
    size_t k = s->n;
    if (s->added && (k == 0 || s->items[k - 1].time_ns != s->last.time_ns))
        s->items[k++] = s->last;
    *n = k;
    return s->items;
}

void mf_snapshots_free(mf_snapshots *s)
{
    free(s->items);
    memset(s, 0, sizeof *s);
}
