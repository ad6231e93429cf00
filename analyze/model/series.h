/*
 * series.h - a time series kept in bounded memory: the occupancy curve
 * (live bytes after each alloc/free), a trace counter, allocator samples.
 *
 * Points are kept exactly until the series reaches its limit; then it is
 * halved: every four consecutive points keep their lowest and highest (in
 * time order), and from then on incoming points are gathered in groups of
 * twice as many before their lowest and highest are kept.  So every kept
 * point stands for the same number of events wherever it is in time, and
 * the curve's envelope, its peak (first occurrence) and its lowest points
 * survive any number of halvings.  Appending is O(1) amortised.
 */
#ifndef MEMFLOW_SERIES_H
#define MEMFLOW_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "log_format.h"

/* One point: the value after an event at time_ns. */
typedef struct mf_point {
    uint64_t time_ns;
    uint64_t live_bytes;      /* requested bytes live (or a counter's value) */
    uint64_t live_actual;     /* actual bytes live */
} mf_point;

typedef struct mf_series {
    mf_point *points;         /* kept points, then room for mf_series_points' tail */
    size_t n, cap;
    size_t limit;             /* points kept at most (>= 8) */
    uint64_t added;           /* points ever added */
    uint64_t group;           /* points gathered before keeping their extremes */
    uint64_t in_group;        /* points in the open group */
    mf_point low, high;       /* the open group's extremes (first occurrences) */
    mf_point last;            /* the latest point */
} mf_series;

/* An empty series keeping at most limit points. */
void mf_series_init(mf_series *s, size_t limit);

/* Append a point (times should not decrease).  0, or -1 when out of memory. */
static inline int mf_series_add(mf_series *s, uint64_t time_ns, uint64_t live, uint64_t actual);

/* mf_series_add's slow path: a point kept, or the last of its group (out
 * of line). */
int mf_series_add_keep(mf_series *s, uint64_t time_ns, uint64_t live, uint64_t actual);

/* Lower the limit (halving now as often as needed). */
void mf_series_set_limit(mf_series *s, size_t limit);

/* The series as it stands: the kept points, the open group's extremes and
 * the latest point, in time order (*n of them; valid until the next add). */
const mf_point *mf_series_points(mf_series *s, size_t *n);

void mf_series_free(mf_series *s);

/* A sample_rate snapshot: the allocator's or driver's view next to the events'. */
typedef struct mf_snapshot {
    uint64_t time_ns;
    uint64_t events_live;     /* live bytes by the events at that moment */
    uint64_t value[MF_SAMPLE_VALUES];
} mf_snapshot;

/* Snapshots kept in bounded memory: when full, every other one is dropped
 * and from then on only every other incoming one is kept (every fourth
 * after the next time, ...), so they stay evenly spread; the latest is
 * always shown. */
typedef struct mf_snapshots {
    mf_snapshot *items;       /* kept, then room for the latest */
    size_t n, cap, limit;
    uint64_t added;
    uint64_t stride;          /* keep one incoming snapshot in stride */
    mf_snapshot last;
} mf_snapshots;

/* The snapshots as they stand, the latest included (*n of them; valid until
 * the next add). */
const mf_snapshot *mf_snapshots_items(mf_snapshots *s, size_t *n);

void mf_snapshots_init(mf_snapshots *s, size_t limit);
int mf_snapshots_add(mf_snapshots *s, const mf_snapshot *snap);
void mf_snapshots_free(mf_snapshots *s);

/* ---- inline part: once per allocation and free ---- */

static inline int mf_series_add(mf_series *s, uint64_t time_ns, uint64_t live, uint64_t actual)
{
    if (s->in_group == 0 || s->in_group + 1 >= s->group)
        return mf_series_add_keep(s, time_ns, live, actual);
    mf_point p = { time_ns, live, actual };   /* inside an open group: its extremes */
    s->last = p;
    s->added++;
    s->in_group++;
    if (live < s->low.live_bytes)
        s->low = p;
    if (live > s->high.live_bytes)
        s->high = p;
    return 0;
}

#endif /* MEMFLOW_SERIES_H */
