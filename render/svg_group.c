/*
 * svg_group.c - several processes' views combined into one (see
 * svg_group.h).
 */
#include <stdlib.h>
#include <string.h>

#include "svg_group.h"

static void add_counts(mf_counts *sum, const mf_counts *c, int first)
{
    if (first || c->min_size < sum->min_size)
        sum->min_size = c->min_size;
    if (first || c->min_addr < sum->min_addr)
        sum->min_addr = c->min_addr;
    sum->max_size = c->max_size > sum->max_size ? c->max_size : sum->max_size;
    sum->max_addr = c->max_addr > sum->max_addr ? c->max_addr : sum->max_addr;
    sum->alloc_count += c->alloc_count;
    sum->free_count += c->free_count;
    sum->alloc_bytes += c->alloc_bytes;
    sum->alloc_actual_bytes += c->alloc_actual_bytes;
    sum->held_bytes += c->held_bytes;
    sum->held_count += c->held_count;
    sum->live_bytes_end += c->live_bytes_end;
    sum->live_count_end += c->live_count_end;
    sum->unknown_frees += c->unknown_frees;
    sum->inherited_frees += c->inherited_frees;
    sum->replaced_blocks += c->replaced_blocks;
}

/* The sum of the sources' curves: every point of every source, in time
 * order, with each source's latest value added up; the peak from it. */
static int sum_curves(mf_svg_group *g)
{
    size_t total = 0;
    for (size_t i = 0; i < g->n_sources; i++)
        total += g->sources[i]->n_occupancy;
    mf_point *out = malloc((total ? total : 1) * sizeof *out);
    size_t *at = calloc(g->n_sources ? g->n_sources : 1, sizeof *at);
    uint64_t *value = calloc(g->n_sources ? g->n_sources : 1, sizeof *value);
    uint64_t *actual = calloc(g->n_sources ? g->n_sources : 1, sizeof *actual);
    if (!out || !at || !value || !actual) {
        free(out);
        free(at);
        free(value);
        free(actual);
        return -1;
    }
    uint64_t live = 0, live_actual = 0;
    for (size_t k = 0; k < total; k++) {
        size_t best = g->n_sources;
        for (size_t i = 0; i < g->n_sources; i++)
            if (at[i] < g->sources[i]->n_occupancy &&
                (best == g->n_sources || g->sources[i]->occupancy[at[i]].time_ns <
                                             g->sources[best]->occupancy[at[best]].time_ns))
                best = i;
        const mf_point *p = &g->sources[best]->occupancy[at[best]++];
        live = live - value[best] + p->live_bytes;
        live_actual = live_actual - actual[best] + p->live_actual;
        value[best] = p->live_bytes;
        actual[best] = p->live_actual;
        out[k] = (mf_point){ p->time_ns, live, live_actual };
        if (live > g->view.peak_bytes) {
            g->view.peak_bytes = live;
            g->view.peak_time_ns = p->time_ns;
        }
    }
    free(at);
    free(value);
    free(actual);
    g->view.occupancy = out;
    g->view.n_occupancy = total;
    return 0;
}

static int by_start(const void *a, const void *b)
{
    uint64_t x = ((const mf_range *)a)->start, y = ((const mf_range *)b)->start;
    return x < y ? -1 : x > y;
}

static int unite_ranges(mf_svg_group *g)
{
    size_t total = 0, n = 0;
    for (size_t i = 0; i < g->n_sources; i++)
        total += g->sources[i]->n_ranges;
    mf_range *r = malloc((total ? total : 1) * sizeof *r);
    if (!r)
        return -1;
    for (size_t i = 0; i < g->n_sources; i++)
        for (size_t j = 0; j < g->sources[i]->n_ranges; j++)
            r[n++] = g->sources[i]->ranges[j];
    qsort(r, n, sizeof *r, by_start);
    size_t m = 0;
    for (size_t i = 1; i < n; i++) {
        if (r[i].start <= r[m].end) {
            r[m].end = r[i].end > r[m].end ? r[i].end : r[m].end;
            r[m].blocks += r[i].blocks;
        } else {
            r[++m] = r[i];
        }
    }
    g->view.ranges = r;
    g->view.n_ranges = n ? m + 1 : 0;
    return 0;
}

static int larger_first(const void *a, const void *b)
{
    return mf_block_ranks_below(b, a) ? -1 : mf_block_ranks_below(a, b);
}

static int gather_blocks(mf_svg_group *g)
{
    size_t total = 0, n = 0;
    for (size_t i = 0; i < g->n_sources; i++)
        total += g->sources[i]->n_blocks;
    mf_block *b = malloc((total ? total : 1) * sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < g->n_sources; i++) {
        memcpy(b + n, g->sources[i]->blocks, g->sources[i]->n_blocks * sizeof *b);
        n += g->sources[i]->n_blocks;
    }
    qsort(b, n, sizeof *b, larger_first);
    g->view.blocks = b;
    g->view.n_blocks = n;
    return 0;
}

static int by_legend(const void *pa, const void *pb)
{
    const mf_legend_scope *a = pa, *b = pb;
    if (a->scope != b->scope)
        return a->scope < b->scope ? -1 : 1;
    return 0;
}

/* Scopes merged by id: bytes in all added, and each process's bytes at its
 * own peak added (the group has no one peak moment of its own to ask). */
static int merge_scopes(mf_svg_group *g)
{
    size_t total = 0, n = 0;
    for (size_t i = 0; i < g->n_sources; i++)
        total += g->sources[i]->n_scopes;
    mf_legend_scope *s = malloc((total ? total : 1) * sizeof *s);
    if (!s)
        return -1;
    for (size_t i = 0; i < g->n_sources; i++)
        for (size_t j = 0; j < g->sources[i]->n_scopes; j++)
            s[n++] = g->sources[i]->scopes[j];
    qsort(s, n, sizeof *s, by_legend);
    size_t m = 0;
    for (size_t i = 1; i < n; i++) {
        if (s[i].scope == s[m].scope) {
            s[m].bytes_at_peak += s[i].bytes_at_peak;
            s[m].bytes_total += s[i].bytes_total;
        } else {
            s[++m] = s[i];
        }
    }
    m = n ? m + 1 : 0;
    qsort(s, m, sizeof *s, mf_legend_scope_order);
    g->view.scopes = s;
    g->view.n_scopes = m;
    return 0;
}

int mf_svg_group_build(mf_svg_group *g, const mf_view *const *views, size_t n)
{
    memset(g, 0, sizeof *g);
    g->sources = views;
    g->n_sources = n;
    g->view.device = n ? views[0]->device : 0;
    g->view.life_min = g->view.size_min = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        const mf_view *v = views[i];
        add_counts(&g->view.counts, &v->counts, i == 0);
        g->view.life_min = v->life_min < g->view.life_min ? v->life_min : g->view.life_min;
        g->view.life_max = v->life_max > g->view.life_max ? v->life_max : g->view.life_max;
        g->view.size_min = v->size_min < g->view.size_min ? v->size_min : g->view.size_min;
        g->view.size_max = v->size_max > g->view.size_max ? v->size_max : g->view.size_max;
        g->view.live_blocks += v->live_blocks;
    }
    if (sum_curves(g) < 0 || unite_ranges(g) < 0 || gather_blocks(g) < 0 || merge_scopes(g) < 0) {
        mf_svg_group_free(g);
        return -1;
    }
    return 0;
}

void mf_svg_group_free(mf_svg_group *g)
{
    free((void *)g->view.occupancy);
    free((void *)g->view.ranges);
    free(g->view.blocks);
    free(g->view.scopes);
    memset(g, 0, sizeof *g);
}
