/*
 * svg_split.c - per-process views of a device (see svg_split.h): blocks
 * grouped by process, occupancy recomputed per group by merging the alloc
 * times (already in order) with the sorted free times.
 */
#include "svg_split.h"

#include <stdlib.h>
#include <string.h>

static int by_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The distinct pids of dev's blocks, ascending, in *pids; returns count or
 * (size_t)-1 when out of memory. */
static size_t distinct_pids(const mf_device_model *dev, uint32_t **pids)
{
    uint32_t *all = malloc((dev->n_blocks ? dev->n_blocks : 1) * sizeof *all);
    if (!all)
        return (size_t)-1;
    for (size_t i = 0; i < dev->n_blocks; i++)
        all[i] = dev->blocks[i].pid;
    qsort(all, dev->n_blocks, sizeof *all, by_u32);
    size_t n = 0;
    for (size_t i = 0; i < dev->n_blocks; i++)
        if (n == 0 || all[n - 1] != all[i])
            all[n++] = all[i];
    *pids = all;
    return n;
}

/* The view a process's blocks go to: its rank, or the last view. */
static size_t view_of(const uint32_t *pids, size_t n_pids, size_t n_views, uint32_t pid)
{
    const uint32_t *found = bsearch(&pid, pids, n_pids, sizeof pid, by_u32);
    size_t rank = found ? (size_t)(found - pids) : n_views - 1;
    return rank < n_views ? rank : n_views - 1;
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Add one occupancy point and follow the peak. */
static void add_point(mf_device_model *v, uint64_t time, uint64_t live, uint64_t actual)
{
    v->occupancy[v->n_occupancy++] = (mf_point){ time, live, actual };
    if (live > v->peak_bytes) {
        v->peak_bytes = live;
        v->peak_time_ns = time;
    }
}

/* Occupancy, counts and peak of a view from its blocks. */
static int compute_view(mf_device_model *v)
{
    size_t n = v->n_blocks, n_frees = 0;
    typedef struct { uint64_t time, bytes, actual; } change;
    change *frees = malloc((n ? n : 1) * sizeof *frees);
    v->occupancy = malloc((2 * n + 1) * sizeof *v->occupancy);
    if (!frees || !v->occupancy) {
        free(frees);
        return -1;
    }
    v->min_size = v->min_addr = n ? UINT64_MAX : 0;
    for (size_t i = 0; i < n; i++) {
        const mf_block *b = &v->blocks[i];
        v->alloc_bytes += b->requested;
        v->alloc_actual_bytes += b->actual;
        v->min_size = b->requested < v->min_size ? b->requested : v->min_size;
        v->max_size = b->requested > v->max_size ? b->requested : v->max_size;
        v->min_addr = b->addr < v->min_addr ? b->addr : v->min_addr;
        uint64_t end = b->addr + (b->actual ? b->actual : b->requested);
        v->max_addr = end > v->max_addr ? end : v->max_addr;
        if (b->free_ns == MF_LIVE_AT_END) {
            v->live_bytes_end += b->requested;
            v->live_count_end++;
        } else {
            frees[n_frees++] = (change){ b->free_ns, b->requested, b->actual };
        }
    }
    v->alloc_count = n;
    v->free_count = n_frees;
    qsort(frees, n_frees, sizeof *frees, by_u64);   /* time is the first field */
    uint64_t live = 0, actual = 0;
    size_t a = 0, f = 0;
    while (a < n || f < n_frees) {
        if (f < n_frees && (a == n || frees[f].time <= v->blocks[a].alloc_ns)) {
            live -= frees[f].bytes;
            actual -= frees[f].actual;
            add_point(v, frees[f].time, live, actual);
            f++;
        } else {
            live += v->blocks[a].requested;
            actual += v->blocks[a].actual;
            add_point(v, v->blocks[a].alloc_ns, live, actual);
            a++;
        }
    }
    free(frees);
    return 0;
}

/* Do all of dev's blocks come from one process?  (The common case: one
 * pass, no sort.) */
static int one_process(const mf_device_model *dev)
{
    for (size_t i = 1; i < dev->n_blocks; i++)
        if (dev->blocks[i].pid != dev->blocks[0].pid)
            return 0;
    return 1;
}

int mf_svg_split_processes(const mf_device_model *dev, size_t max_views, mf_svg_view **views)
{
    uint32_t *pids = NULL;
    *views = NULL;
    if (max_views < 2 || one_process(dev))
        return 0;
    size_t n_pids = distinct_pids(dev, &pids);
    if (n_pids == (size_t)-1)
        return -1;
    if (n_pids <= 1) {
        free(pids);
        return 0;
    }
    size_t n_views = n_pids < max_views ? n_pids : max_views;
    mf_svg_view *v = calloc(n_views, sizeof *v);
    size_t *fill = calloc(n_views, sizeof *fill);
    int ok = v && fill;
    for (size_t i = 0; ok && i < dev->n_blocks; i++)
        fill[view_of(pids, n_pids, n_views, dev->blocks[i].pid)]++;
    for (size_t k = 0; ok && k < n_views; k++) {
        v[k].dev.device = dev->device;
        v[k].pid = k + 1 < n_views || n_pids == n_views ? pids[k] : 0;
        v[k].n_pids = v[k].pid ? 1 : n_pids - (n_views - 1);
        v[k].dev.blocks = malloc((fill[k] ? fill[k] : 1) * sizeof *v[k].dev.blocks);
        ok = v[k].dev.blocks != NULL;
    }
    for (size_t i = 0; ok && i < dev->n_blocks; i++) {
        mf_device_model *d = &v[view_of(pids, n_pids, n_views, dev->blocks[i].pid)].dev;
        d->blocks[d->n_blocks++] = dev->blocks[i];
    }
    for (size_t k = 0; ok && k < n_views; k++)
        ok = compute_view(&v[k].dev) == 0;
    free(pids);
    free(fill);
    if (!ok) {
        mf_svg_views_free(v, v ? n_views : 0);
        return -1;
    }
    *views = v;
    return (int)n_views;
}

void mf_svg_views_free(mf_svg_view *views, size_t n)
{
    for (size_t k = 0; views && k < n; k++) {
        free(views[k].dev.blocks);
        free(views[k].dev.occupancy);
    }
    free(views);
}
