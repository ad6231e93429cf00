/*
 * statistics.c - the statistics of a model (see statistics.h): rows built
 * from the model's counts, sorted as asked; holders at each peak; leaks.
 * Every number was counted by the model; here they are only arranged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statistics.h"

static const char *const sort_names[] = { "total", "avg", "min", "max", "count" };

#define GROWING_BYTES 4096.0   /* bytes a step that make a growth a leak, blocks held alike */

int mf_stats_parse_sort(const char *text, mf_stats_sort *sort)
{
    for (int i = 0; text && i < 5; i++) {
        if (strcmp(text, sort_names[i]) == 0) {
            *sort = (mf_stats_sort)i;
            return 0;
        }
    }
    return -1;
}

const char *mf_stats_sort_name(mf_stats_sort sort)
{
    return sort_names[(unsigned)sort % 5];
}

const char *mf_memory_kind_name(unsigned kind)
{
    static const char *const names[] = { "heap", "device", "pinned", "managed", "pool", "other",
                                         "vmm" };
    return kind < sizeof names / sizeof names[0] ? names[kind] : "other";
}

/* ---- rows ----------------------------------------------------------------------- */

static double sort_value(const mf_stats_row *r, mf_stats_sort by)
{
    switch (by) {
    case MF_SORT_AVG: return r->avg;
    case MF_SORT_MIN: return (double)r->min;
    case MF_SORT_MAX: return (double)r->max;
    case MF_SORT_COUNT: return (double)r->count;
    case MF_SORT_TOTAL: break;
    }
    return (double)r->total;
}

typedef struct sorting {
    mf_stats_sort by;
    int ascending;
} sorting;

/* By the sort key, then by name and device so the order is stable. */
static int compare_rows(const void *pa, const void *pb, void *ctx)
{
    const mf_stats_row *a = pa, *b = pb;
    const sorting *how = ctx;
    double x = sort_value(a, how->by), y = sort_value(b, how->by);
    if (x != y)
        return (x < y) == (how->ascending != 0) ? -1 : 1;
    int c = strcmp(a->name, b->name);
    if (c)
        return c;
    return a->dev->device < b->dev->device ? -1 : a->dev->device > b->dev->device;
}

static void sort_rows(mf_stats_row *rows, size_t n, mf_stats_sort by, int ascending)
{
    sorting how = { by, ascending };
    qsort_r(rows, n, sizeof *rows, compare_rows, &how);
}

static mf_stats_row make_row(const mf_device_model *d, const mf_scope_stat *s, const char *name,
                             uint64_t count, uint64_t total, uint64_t min, uint64_t max)
{
    return (mf_stats_row){ d, s, name, count, total, min, max,
                           count ? (double)total / (double)count : 0.0 };
}

static int device_rows(mf_stats *st)
{
    const mf_model *m = st->model;
    st->devices = calloc(m->n_devices ? m->n_devices : 1, sizeof *st->devices);
    st->device_names = calloc(m->n_devices ? m->n_devices : 1, sizeof *st->device_names);
    if (!st->devices || !st->device_names)
        return -1;
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        char dev[16];
        snprintf(st->device_names[i], sizeof st->device_names[i], "Memory: %s",
                 mf_model_device_name(d->device, dev, sizeof dev));
        uint64_t updates = d->alloc_count + d->free_count;
        st->devices[i] = (mf_stats_row){ d, NULL, st->device_names[i], updates, d->alloc_bytes,
                                         d->use_min_bytes, d->peak_bytes,
                                         updates ? d->use_sum_bytes / (double)updates : 0.0 };
    }
    st->n_devices = m->n_devices;
    sort_rows(st->devices, st->n_devices, st->sort_by, st->ascending);
    return 0;
}

/* What a device's statistics are keyed by: its blocks' keys, then its
 * sub-blocks' (tensors'), each TENSORS past the block's. */
enum { BY_SCOPE, BY_SITE, BY_ROLE, BY_NAME, TENSORS };

/* A device's statistics by scope, site, role or tensor name, of its blocks
 * or (by + TENSORS) of its sub-blocks. */
static const mf_scope_stat *keyed_stats(const mf_device_model *d, int by, size_t *n)
{
    switch (by) {
    case BY_SITE: *n = d->n_sites; return d->sites;
    case BY_ROLE: *n = d->n_roles; return d->roles;
    case BY_NAME: *n = d->n_names; return d->names;
    case TENSORS + BY_SCOPE: *n = d->n_sub_scopes; return d->sub_scopes;
    case TENSORS + BY_SITE: *n = d->n_sub_sites; return d->sub_sites;
    case TENSORS + BY_ROLE: *n = d->n_sub_roles; return d->sub_roles;
    case TENSORS + BY_NAME: *n = d->n_sub_names; return d->sub_names;
    }
    *n = d->n_scopes;
    return d->scopes;
}

static const char *keyed_name(const mf_model *m, int by, uint32_t key)
{
    switch (by % TENSORS) {
    case BY_SITE: return mf_sites_get(m->sites, key)->name;
    case BY_ROLE: return mf_role_name(key);
    case BY_NAME: return key == MF_KEY_OTHER ? "(other names)"
                         : key ? mf_model_string(m, key) : "(no name)";
    }
    return mf_model_string(m, key);
}

/* Every (scope or site, device), sorted. */
static int keyed_rows(mf_stats *st, int sites, mf_stats_row **out, size_t *n_out)
{
    const mf_model *m = st->model;
    size_t n = 0, k = 0, nd;
    for (size_t i = 0; i < m->n_devices; i++) {
        keyed_stats(&m->devices[i], sites ? BY_SITE : BY_SCOPE, &nd);
        n += nd;
    }
    mf_stats_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!(*out = rows))
        return -1;
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        const mf_scope_stat *all = keyed_stats(d, sites ? BY_SITE : BY_SCOPE, &nd);
        for (size_t j = 0; j < nd; j++)
            rows[k++] = make_row(d, &all[j], keyed_name(m, sites ? BY_SITE : BY_SCOPE, all[j].scope),
                                 all[j].alloc_count, all[j].alloc_bytes, all[j].min_size,
                                 all[j].max_size);
    }
    *n_out = k;
    sort_rows(rows, k, st->sort_by, st->ascending);
    return 0;
}

/* Holders at a device's peak, most bytes first. */
static int compare_holders(const void *pa, const void *pb)
{
    const mf_stats_holder *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->scope->scope < b->scope->scope ? -1 : a->scope->scope > b->scope->scope;
}

/* The scopes, sites, roles or names (by) of d that held blocks at its peak. */
static int holders(const mf_model *m, const mf_device_model *d, int by, mf_stats_holder **out,
                   size_t *n_out)
{
    size_t nd, n = 0;
    const mf_scope_stat *all = keyed_stats(d, by, &nd);
    mf_stats_holder *h = calloc(nd ? nd : 1, sizeof *h);
    if (!(*out = h))
        return -1;
    for (size_t j = 0; j < nd; j++)
        if (all[j].at_peak_count)
            h[n++] = (mf_stats_holder){ &all[j], keyed_name(m, by, all[j].scope),
                                        all[j].at_peak_bytes, all[j].at_peak_count, d };
    qsort(h, n, sizeof *h, compare_holders);
    *n_out = n;
    return 0;
}

static int peaks(mf_stats *st)
{
    const mf_model *m = st->model;
    st->peaks = calloc(m->n_devices ? m->n_devices : 1, sizeof *st->peaks);
    if (!st->peaks)
        return -1;
    st->n_peaks = m->n_devices;
    for (size_t i = 0; i < m->n_devices; i++) {
        mf_stats_peak *p = &st->peaks[i];
        p->dev = &m->devices[i];
        if (holders(m, p->dev, BY_SCOPE, &p->holders, &p->n_holders) < 0 ||
            (st->has_sites && holders(m, p->dev, BY_SITE, &p->by_site, &p->n_by_site) < 0) ||
            holders(m, p->dev, BY_ROLE, &p->by_role, &p->n_by_role) < 0 ||
            holders(m, p->dev, BY_NAME, &p->by_name, &p->n_by_name) < 0)
            return -1;
        if (p->dev->sub.alloc_count &&
            (holders(m, p->dev, TENSORS + BY_ROLE, &p->tensor_by_role,
                     &p->n_tensor_by_role) < 0 ||
             holders(m, p->dev, TENSORS + BY_NAME, &p->tensor_by_name,
                     &p->n_tensor_by_name) < 0))
            return -1;
    }
    return 0;
}

static int compare_growth(const void *pa, const void *pb)
{
    const mf_stats_growth *a = pa, *b = pb;
    if (a->bytes_per_step != b->bytes_per_step)
        return a->bytes_per_step > b->bytes_per_step ? -1 : 1;
    int c = strcmp(a->name, b->name);
    if (c)
        return c;
    if (a->dev->device != b->dev->device)
        return a->dev->device < b->dev->device ? -1 : 1;
    return a->tensors - b->tensors;
}

/* The sites (scopes without stacks) that held more at their last step mark
 * than at their first, most per step first. */
static int growth(mf_stats *st)
{
    const mf_model *m = st->model;
    int by = st->has_sites ? BY_SITE : BY_SCOPE;
    size_t n = 0, nd;
    for (size_t i = 0; i < m->n_devices; i++)
        for (int t = 0; t <= TENSORS; t += TENSORS) {
            keyed_stats(&m->devices[i], by + t, &nd);
            n += nd;
        }
    st->growth_by_site = st->has_sites;
    st->growth = calloc(n ? n : 1, sizeof *st->growth);
    if (!st->growth)
        return -1;
    for (size_t i = 0; i < m->n_devices; i++)
        for (int t = 0; t <= TENSORS; t += TENSORS) {
            const mf_device_model *d = &m->devices[i];
            const mf_scope_stat *all = keyed_stats(d, by + t, &nd);
            for (size_t j = 0; j < nd; j++) {
                const mf_scope_stat *k = &all[j];
                if (k->marks < 2 || k->held_last_mark <= k->held_first_mark)
                    continue;
                st->growth[st->n_growth++] = (mf_stats_growth){
                    d, k, keyed_name(m, by, k->scope),
                    (double)(k->held_last_mark - k->held_first_mark) / (double)(k->marks - 1),
                    t != 0 };
            }
        }
    qsort(st->growth, st->n_growth, sizeof *st->growth, compare_growth);
    /* leaks: what grew at more than half the marks (at least two), by more
     * blocks or by at least GROWING_BYTES a step (a block replaced by a
     * slightly larger one each step is not a leak), most per step first */
    for (size_t i = 0; i < st->n_growth; i++) {
        const mf_scope_stat *k = st->growth[i].key;
        if (2 * (uint64_t)k->marks_grew > (uint64_t)k->marks - 1 && k->marks_grew >= 2 &&
            (k->blocks_last_mark > k->blocks_first_mark ||
             st->growth[i].bytes_per_step >= GROWING_BYTES)) {
            mf_stats_growth g = st->growth[i];
            memmove(st->growth + st->n_growing + 1, st->growth + st->n_growing,
                    (i - st->n_growing) * sizeof *st->growth);
            st->growth[st->n_growing++] = g;
        }
    }
    return 0;
}

static int compare_exit(const void *pa, const void *pb)
{
    const mf_stats_holder *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    int c = strcmp(a->name, b->name);
    return c ? c : a->dev->device < b->dev->device ? -1 : a->dev->device > b->dev->device;
}

/* What interpreters held at exit, by site (scope), all devices. */
static int held_at_exit(mf_stats *st)
{
    const mf_model *m = st->model;
    size_t n = 0;
    for (size_t i = 0; i < m->n_devices; i++)
        n += m->devices[i].n_held_at_exit;
    st->held_at_exit = calloc(n ? n : 1, sizeof *st->held_at_exit);
    if (!st->held_at_exit)
        return -1;
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        for (size_t j = 0; j < d->n_held_at_exit; j++) {
            const mf_scope_stat *k = &d->held_at_exit[j];
            st->held_at_exit[st->n_held_at_exit++] = (mf_stats_holder){
                k, keyed_name(m, st->has_sites ? BY_SITE : BY_SCOPE, k->scope), k->alloc_bytes,
                k->alloc_count, d };
        }
    }
    qsort(st->held_at_exit, st->n_held_at_exit, sizeof *st->held_at_exit, compare_exit);
    return 0;
}

/* Whether a block never freed is held by a process that has not ended, or
 * at the end of a window cut before the logs end (it is live now, which
 * says nothing of a leak yet). */
static int live_now(const mf_model *m, const mf_block *b)
{
    if (b->end != MF_BLOCK_LIVE)
        return 0;
    if (mf_model_cut(m))
        return 1;
    for (size_t i = 0; i < m->n_processes; i++)
        if (m->processes[i].pid == b->pid && m->processes[i].end_ns == 0)
            return 1;
    return 0;
}

/* The model's largest blocks never freed, split into leaks and blocks live
 * now, at most max_leaks of each, largest first. */
static int split_unfreed(mf_stats *st)
{
    const mf_model *m = st->model;
    size_t cap = m->n_leaks < st->max_leaks ? m->n_leaks : st->max_leaks;
    st->leaks = calloc(cap ? cap : 1, sizeof *st->leaks);
    st->live_now = calloc(cap ? cap : 1, sizeof *st->live_now);
    if (!st->leaks || !st->live_now)
        return -1;
    for (size_t i = 0; i < m->n_leaks; i++) {
        const mf_block *b = &m->leaks[i];
        if (live_now(m, b)) {
            if (st->n_live_now < cap)
                st->live_now[st->n_live_now++] = *b;
        } else if (st->n_leaks < cap) {
            st->leaks[st->n_leaks++] = *b;
        }
    }
    for (size_t i = 0; i < m->n_processes; i++)
        st->running |= m->processes[i].end_ns == 0;
    return 0;
}

int mf_stats_compute(const mf_model *m, mf_stats_sort sort_by, int ascending, size_t max_leaks,
                     mf_stats *out)
{
    memset(out, 0, sizeof *out);
    out->model = m;
    out->sort_by = sort_by;
    out->ascending = ascending;
    out->max_leaks = max_leaks ? max_leaks : MF_STATS_DEFAULT_LEAKS;
    for (size_t i = 0; i < m->n_devices; i++) {
        out->unknown_frees += m->devices[i].unknown_frees;
        out->inherited_frees += m->devices[i].inherited_frees;
    }
    out->has_sites = m->sites != NULL;
    if (split_unfreed(out) < 0 || device_rows(out) < 0 ||
        keyed_rows(out, 0, &out->scopes, &out->n_scopes) < 0 ||
        (out->has_sites && keyed_rows(out, 1, &out->sites, &out->n_sites) < 0) ||
        peaks(out) < 0 || growth(out) < 0 || held_at_exit(out) < 0) {
        mf_stats_free(out);
        return -1;
    }
    return 0;
}

void mf_stats_free(mf_stats *s)
{
    for (size_t i = 0; s->peaks && i < s->n_peaks; i++) {
        free(s->peaks[i].holders);
        free(s->peaks[i].by_site);
        free(s->peaks[i].by_role);
        free(s->peaks[i].by_name);
        free(s->peaks[i].tensor_by_role);
        free(s->peaks[i].tensor_by_name);
    }
    free(s->peaks);
    free(s->devices);
    free(s->scopes);
    free(s->sites);
    free(s->device_names);
    free(s->leaks);
    free(s->live_now);
    free(s->growth);
    free(s->held_at_exit);
    memset(s, 0, sizeof *s);
}

const char *mf_stats_process_end(const mf_process_info *p, char *buf, size_t len)
{
    if (p->running)
        snprintf(buf, len, "still running");
    else if (p->end_how == MF_END_SNAPSHOT)
        snprintf(buf, len, "a snapshot (the process went on)");
    else if (!p->end_ns)
        snprintf(buf, len, "running when its log was closed");
    else if (p->end_how == MF_END_EXIT || p->end_how == MF_END_EXIT_NOW)
        snprintf(buf, len, "%s with status %lld", p->end_how == MF_END_EXIT ? "exited"
                                                                            : "exited (_exit)",
                 (long long)p->end_status);
    else if (p->end_how == MF_END_EXEC)
        snprintf(buf, len, "replaced by exec");
    else if (p->end_how == MF_END_SIGNAL)
        snprintf(buf, len, "killed by signal %lld", (long long)p->end_status);
    else if (p->end_how == MF_END_OOM_KILLED)
        snprintf(buf, len, "killed by the OOM killer (signal %lld)", (long long)p->end_status);
    else if (p->finished)
        snprintf(buf, len, "exited (no end mark)");
    else
        snprintf(buf, len, "ended with no end mark and no clean close: killed or crashed");
    return buf;
}
