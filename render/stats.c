/*
 * stats.c - the statistics of a model: MXNet's "Device Storage" table, then
 * per scope, at the peak, and leaks; as a text table or as JSON with the
 * same content.  Reads only the model (model.c computed every number); here
 * rows are sorted and formatted into a growable buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "stats.h"

#define DEFAULT_MAX_LEAKS 20
#define MAX_TEXT_HOLDERS 20  /* scopes listed at a peak in the table; JSON has all */
#define KB 1000.0   /* "kB" as MXNet's column names: 1000 bytes */

/* One row of the Device Storage or scope table, ready to sort. */
typedef struct row {
    const mf_device_model *dev;
    const mf_scope_stat *scope;   /* NULL for a device row */
    uint64_t count, total, min, max;
    const char *name;
    double key;                   /* sort value, negated when descending */
} row;

typedef struct stats_ctx {
    const mf_model *m;
    const mf_stats_options *opt;
    mf_sink *b;
} stats_ctx;

const char *mf_memory_kind_name(unsigned kind)
{
    static const char *const names[] = { "heap", "device", "pinned", "managed", "pool" };
    return kind < sizeof names / sizeof names[0] ? names[kind] : "other";
}

/* Whether a device used more than its usual kind (heap on a CPU, device
 * memory on a GPU): then the kinds are worth listing. */
static int mixed_kinds(const mf_device_model *d)
{
    for (unsigned k = 0; k < MF_MODEL_KINDS; k++)
        if (d->kinds[k].alloc_count && d->kinds[k].alloc_count != d->alloc_count)
            return 1;
    return MF_DEVICE_KIND(d->device) == MF_DEVICE_GPU && d->alloc_count &&
           d->kinds[MF_MEM_DEVICE].alloc_count != d->alloc_count;
}

int mf_stats_parse_format(const char *text, int *json)
{
    if (text && strcmp(text, "table") == 0)
        *json = 0;
    else if (text && strcmp(text, "json") == 0)
        *json = 1;
    else
        return -1;
    return 0;
}

int mf_stats_parse_sort(const char *text, mf_stats_sort *sort)
{
    static const char *const names[] = { "total", "avg", "min", "max", "count" };
    for (int i = 0; text && i < 5; i++) {
        if (strcmp(text, names[i]) == 0) {
            *sort = (mf_stats_sort)i;
            return 0;
        }
    }
    return -1;
}

/* ---- rows and sorting -------------------------------------------------- */

static double row_avg(const row *r)
{
    return r->count ? (double)r->total / (double)r->count : 0.0;
}

static double sort_value(const row *r, mf_stats_sort by)
{
    switch (by) {
    case MF_SORT_AVG: return row_avg(r);
    case MF_SORT_MIN: return (double)r->min;
    case MF_SORT_MAX: return (double)r->max;
    case MF_SORT_COUNT: return (double)r->count;
    case MF_SORT_TOTAL: break;
    }
    return (double)r->total;
}

/* By the sort key, then by name and device so the order is stable. */
static int compare_rows(const void *pa, const void *pb)
{
    const row *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    int c = strcmp(a->name, b->name);
    if (c)
        return c;
    return a->dev->device < b->dev->device ? -1 : a->dev->device > b->dev->device;
}

static void sort_rows(row *rows, size_t n, const mf_stats_options *opt)
{
    for (size_t i = 0; i < n; i++) {
        double v = sort_value(&rows[i], opt->sort_by);
        rows[i].key = opt->ascending ? v : -v;
    }
    qsort(rows, n, sizeof *rows, compare_rows);
}

/* Device rows ("Memory: cpu/0"); names live in names[i] (32 bytes each). */
static row *device_rows(const mf_model *m, const mf_stats_options *opt, char (*names)[32])
{
    row *rows = calloc(m->n_devices ? m->n_devices : 1, sizeof *rows);
    if (!rows)
        return NULL;
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        char dev[16];
        snprintf(names[i], 32, "Memory: %s", mf_model_device_name(d->device, dev, sizeof dev));
        rows[i] = (row){ d, NULL, d->alloc_count, d->alloc_bytes, d->min_size, d->max_size,
                         names[i], 0 };
    }
    sort_rows(rows, m->n_devices, opt);
    return rows;
}

static row *scope_rows(const mf_model *m, const mf_stats_options *opt, size_t *n)
{
    *n = 0;
    for (size_t i = 0; i < m->n_devices; i++)
        *n += m->devices[i].n_scopes;
    row *rows = calloc(*n ? *n : 1, sizeof *rows);
    if (!rows)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        for (size_t j = 0; j < d->n_scopes; j++) {
            const mf_scope_stat *s = &d->scopes[j];
            rows[k++] = (row){ d, s, s->alloc_count, s->alloc_bytes, s->min_size, s->max_size,
                               mf_model_string(m, s->scope), 0 };
        }
    }
    sort_rows(rows, *n, opt);
    return rows;
}

/* Holders at a device's peak, most bytes first. */
static int compare_holders(const void *pa, const void *pb)
{
    const mf_scope_stat *a = *(const mf_scope_stat *const *)pa;
    const mf_scope_stat *b = *(const mf_scope_stat *const *)pb;
    if (a->at_peak_bytes != b->at_peak_bytes)
        return a->at_peak_bytes > b->at_peak_bytes ? -1 : 1;
    return a->scope < b->scope ? -1 : a->scope > b->scope;
}

static const mf_scope_stat **peak_holders(const mf_device_model *d, size_t *n)
{
    const mf_scope_stat **h = calloc(d->n_scopes ? d->n_scopes : 1, sizeof *h);
    *n = 0;
    if (!h)
        return NULL;
    for (size_t i = 0; i < d->n_scopes; i++)
        if (d->scopes[i].at_peak_count)
            h[(*n)++] = &d->scopes[i];
    qsort(h, *n, sizeof *h, compare_holders);
    return h;
}

/* The largest blocks live at the end, at most max. */
static int compare_leaks(const void *pa, const void *pb)
{
    const mf_block *a = *(const mf_block *const *)pa, *b = *(const mf_block *const *)pb;
    if (a->requested != b->requested)
        return a->requested > b->requested ? -1 : 1;
    if (a->alloc_ns != b->alloc_ns)
        return a->alloc_ns < b->alloc_ns ? -1 : 1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static const mf_block **leak_blocks(const mf_model *m, size_t max, size_t *n)
{
    size_t live = 0;
    for (size_t i = 0; i < m->n_devices; i++)
        live += m->devices[i].live_count_end;
    const mf_block **all = calloc(live ? live : 1, sizeof *all);
    *n = 0;
    if (!all)
        return NULL;
    for (size_t i = 0; i < m->n_devices; i++)
        for (size_t j = 0; j < m->devices[i].n_blocks; j++)
            if (m->devices[i].blocks[j].free_ns == MF_LIVE_AT_END && *n < live)
                all[(*n)++] = &m->devices[i].blocks[j];
    qsort(all, *n, sizeof *all, compare_leaks);
    if (*n > max)
        *n = max;
    return all;
}

static size_t leaks_max(const mf_stats_options *opt)
{
    return opt->max_leaks ? opt->max_leaks : DEFAULT_MAX_LEAKS;
}

static uint64_t rel_ns(const mf_model *m, uint64_t t)
{
    return t >= m->t0_ns ? t - m->t0_ns : 0;
}

static const char *thread_name(const mf_model *m, uint32_t pid, uint32_t tid)
{
    for (size_t i = 0; i < m->n_threads; i++)
        if (m->threads[i].tid == tid && m->threads[i].pid == pid)
            return mf_model_string(m, m->threads[i].name);
    return "unknown";
}

/* ---- text table -------------------------------------------------------- */

/* Pad the escaped name to width columns (counting UTF-8 characters). */
static void text_cell(mf_sink *b, const char *s, size_t width)
{
    size_t start = b->len;
    mf_escape_text(b, s, MF_ESCAPE_WHOLE);
    size_t chars = 0;
    for (size_t i = start; i < b->len; i++)
        if (((unsigned char)b->buf[i] & 0xc0) != 0x80)
            chars++;
    for (; chars < width; chars++)
        mf_sink_write(b, " ", 1);
    mf_sink_write(b, " ", 1);
}

static size_t name_width(const row *rows, size_t n, size_t min)
{
    size_t w = min;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(rows[i].name);
        if (len > w)
            w = len > 60 ? 60 : len;
    }
    return w;
}

static void text_header(stats_ctx *c)
{
    const mf_model *m = c->m;
    mf_sink_printf(c->b, "memflow statistics\n");
    for (size_t i = 0; i < m->n_processes; i++) {
        mf_sink_printf(c->b, "process %u: ", m->processes[i].pid);
        mf_escape_text(c->b, m->processes[i].program, MF_ESCAPE_WHOLE);
        mf_sink_printf(c->b, "%s\n", m->processes[i].finished ? "" : " (log not finished)");
    }
    mf_sink_printf(c->b, "duration: %.3f ms\n\n", (double)(m->t1_ns - m->t0_ns) / 1e6);
}

/* "gpu/0 by memory kind: device 3 allocations, 12.0000 kB (live at end ...)" */
static void text_kinds(stats_ctx *c, const mf_device_model *d)
{
    char dev[16];
    if (!mixed_kinds(d))
        return;
    mf_sink_printf(c->b, "%s by memory kind:", mf_model_device_name(d->device, dev, sizeof dev));
    for (unsigned k = 0; k < MF_MODEL_KINDS; k++)
        if (d->kinds[k].alloc_count)
            mf_sink_printf(c->b, " %s %llu allocations %.4f kB (%.4f kB live at end);",
                          mf_memory_kind_name(k), (unsigned long long)d->kinds[k].alloc_count,
                          (double)d->kinds[k].alloc_bytes / KB,
                          (double)d->kinds[k].live_bytes_end / KB);
    mf_sink_puts(c->b, "\n");
}

static void text_device_storage(stats_ctx *c)
{
    const mf_model *m = c->m;
    char (*names)[32] = calloc(m->n_devices ? m->n_devices : 1, 32);
    row *rows = names ? device_rows(m, c->opt, names) : NULL;
    if (!rows) {
        c->b->error = ENOMEM;
        free(names);
        return;
    }
    size_t w = name_width(rows, m->n_devices, 30);
    mf_sink_puts(c->b, "Device Storage\n=================\n");
    text_cell(c->b, "Name", w);
    mf_sink_puts(c->b, "     Total Count    Min Use  (kB)    Max Use  (kB)    Avg Use  (kB)\n");
    text_cell(c->b, "----", w);
    mf_sink_puts(c->b, "     -----------    -------------    -------------    -------------\n");
    for (size_t i = 0; i < m->n_devices; i++) {
        text_cell(c->b, rows[i].name, w);
        mf_sink_printf(c->b, "%16llu %16.4f %16.4f %16.4f\n", (unsigned long long)rows[i].count,
                      (double)rows[i].min / KB, (double)rows[i].max / KB, row_avg(&rows[i]) / KB);
    }
    mf_sink_puts(c->b, "Use: requested bytes of one allocation (kB = 1000 bytes); Avg is the "
                      "arithmetic mean, total requested / count.\n");
    for (size_t i = 0; i < m->n_devices; i++)
        text_kinds(c, &m->devices[i]);
    mf_sink_puts(c->b, "\n");
    free(rows);
    free(names);
}

static void text_scopes(stats_ctx *c)
{
    size_t n;
    row *rows = scope_rows(c->m, c->opt, &n);
    if (!rows) {
        c->b->error = ENOMEM;
        return;
    }
    size_t w = name_width(rows, n, 24);
    mf_sink_puts(c->b, "Scopes\n=================\n");
    text_cell(c->b, "Name", w);
    mf_sink_puts(c->b, "Device       Total Count  Total Use  (kB)    Min Use  (kB)    Max Use  (kB)"
                      "    Avg Use  (kB)  Peak Live  (kB)  Live at End  (kB)\n");
    for (size_t i = 0; i < n; i++) {
        char dev[16];
        text_cell(c->b, rows[i].name, w);
        mf_sink_printf(c->b, "%-8s %15llu %16.4f %16.4f %16.4f %16.4f %16.4f %18.4f\n",
                      mf_model_device_name(rows[i].dev->device, dev, sizeof dev),
                      (unsigned long long)rows[i].count, (double)rows[i].total / KB,
                      (double)rows[i].min / KB, (double)rows[i].max / KB,
                      row_avg(&rows[i]) / KB, (double)rows[i].scope->peak_live_bytes / KB,
                      (double)rows[i].scope->live_bytes_end / KB);
    }
    mf_sink_puts(c->b, "\n");
    free(rows);
}

static void text_at_peak(stats_ctx *c)
{
    mf_sink_puts(c->b, "At the peak\n=================\n");
    for (size_t i = 0; i < c->m->n_devices; i++) {
        const mf_device_model *d = &c->m->devices[i];
        char dev[16];
        size_t n;
        const mf_scope_stat **h = peak_holders(d, &n);
        if (!h) {
            c->b->error = ENOMEM;
            return;
        }
        mf_sink_printf(c->b, "%s: peak %llu bytes (%.4f kB) at %.6f ms\n",
                      mf_model_device_name(d->device, dev, sizeof dev),
                      (unsigned long long)d->peak_bytes, (double)d->peak_bytes / KB,
                      (double)rel_ns(c->m, d->peak_time_ns) / 1e6);
        uint64_t other_bytes = 0, other_blocks = 0;
        for (size_t j = 0; j < n; j++) {
            if (j >= MAX_TEXT_HOLDERS) {
                other_bytes += h[j]->at_peak_bytes;
                other_blocks += h[j]->at_peak_count;
                continue;
            }
            mf_sink_printf(c->b, "  %16llu bytes %6.2f%% %8llu blocks  ",
                          (unsigned long long)h[j]->at_peak_bytes,
                          100.0 * (double)h[j]->at_peak_bytes / (double)d->peak_bytes,
                          (unsigned long long)h[j]->at_peak_count);
            mf_escape_text(c->b, mf_model_string(c->m, h[j]->scope), MF_ESCAPE_WHOLE);
            mf_sink_puts(c->b, "\n");
        }
        if (n > MAX_TEXT_HOLDERS)
            mf_sink_printf(c->b, "  %16llu bytes %6.2f%% %8llu blocks  (%zu other scopes)\n",
                          (unsigned long long)other_bytes,
                          100.0 * (double)other_bytes / (double)d->peak_bytes,
                          (unsigned long long)other_blocks, n - MAX_TEXT_HOLDERS);
        free(h);
    }
    mf_sink_puts(c->b, "\n");
}

static void text_leaks(stats_ctx *c)
{
    size_t n;
    const mf_block **l = leak_blocks(c->m, leaks_max(c->opt), &n);
    if (!l) {
        c->b->error = ENOMEM;
        return;
    }
    mf_sink_printf(c->b, "Leaks (largest blocks live at the end, up to %zu)\n=================\n",
                  leaks_max(c->opt));
    if (n == 0)
        mf_sink_puts(c->b, "none\n");
    else
        mf_sink_puts(c->b, "Device            Address        Requested           Actual"
                          "    Alloc (ms)  Thread  Scope / name\n");
    for (size_t i = 0; i < n; i++) {
        char dev[16];
        mf_sink_printf(c->b, "%-8s %#18llx %16llu %16llu %13.6f  %-6u  ",
                      mf_model_device_name(l[i]->device, dev, sizeof dev),
                      (unsigned long long)l[i]->addr, (unsigned long long)l[i]->requested,
                      (unsigned long long)l[i]->actual,
                      (double)rel_ns(c->m, l[i]->alloc_ns) / 1e6, l[i]->tid);
        mf_escape_text(c->b, mf_model_string(c->m, l[i]->scope), MF_ESCAPE_WHOLE);
        mf_escape_text(c->b, mf_model_string(c->m, l[i]->name), MF_ESCAPE_WHOLE);
        mf_sink_puts(c->b, "\n");
    }
    mf_sink_puts(c->b, "\n");
    free(l);
}

static void text_notes(stats_ctx *c)
{
    uint64_t unknown = 0;
    for (size_t i = 0; i < c->m->n_devices; i++)
        unknown += c->m->devices[i].unknown_frees;
    mf_sink_printf(c->b, "Unknown frees: %llu\n", (unsigned long long)unknown);
    for (size_t i = 0; i < c->m->n_warnings; i++) {
        mf_sink_puts(c->b, "warning: ");
        mf_escape_text(c->b, c->m->warnings[i], MF_ESCAPE_WHOLE);
        mf_sink_puts(c->b, "\n");
    }
}

static void write_table(stats_ctx *c)
{
    text_header(c);
    text_device_storage(c);
    text_scopes(c);
    text_at_peak(c);
    text_leaks(c);
    text_notes(c);
}

/* ---- JSON -------------------------------------------------------------- */

static void json_str(mf_sink *b, const char *s)
{
    mf_sink_write(b, "\"", 1);
    mf_escape_json(b, s);
    mf_sink_write(b, "\"", 1);
}

static void json_key_str(mf_sink *b, const char *key, const char *s)
{
    mf_sink_printf(b, "\"%s\":", key);
    json_str(b, s);
}

static void json_device_name(mf_sink *b, uint16_t device)
{
    char dev[16];
    json_key_str(b, "device", mf_model_device_name(device, dev, sizeof dev));
}

static void json_processes(stats_ctx *c)
{
    mf_sink_puts(c->b, "\"processes\":[");
    for (size_t i = 0; i < c->m->n_processes; i++) {
        const mf_process_info *p = &c->m->processes[i];
        mf_sink_printf(c->b, "%s{\"pid\":%u,\"ppid\":%u,", i ? "," : "", p->pid, p->ppid);
        json_key_str(c->b, "program", p->program);
        mf_sink_puts(c->b, ",");
        json_key_str(c->b, "log", p->log_path);
        mf_sink_printf(c->b, ",\"finished\":%s}", p->finished ? "true" : "false");
    }
    mf_sink_printf(c->b, "],\n\"duration_ns\":%llu,\n",
                  (unsigned long long)(c->m->t1_ns - c->m->t0_ns));
}

/* "device":{"alloc_count":N,"alloc_bytes":N,"live_bytes_end":N},... */
static void json_kinds(mf_sink *b, const mf_device_model *d)
{
    int first = 1;
    for (unsigned k = 0; k < MF_MODEL_KINDS; k++) {
        if (!d->kinds[k].alloc_count)
            continue;
        mf_sink_printf(b, "%s\"%s\":{\"alloc_count\":%llu,\"alloc_bytes\":%llu,"
                      "\"live_bytes_end\":%llu}", first ? "" : ",", mf_memory_kind_name(k),
                      (unsigned long long)d->kinds[k].alloc_count,
                      (unsigned long long)d->kinds[k].alloc_bytes,
                      (unsigned long long)d->kinds[k].live_bytes_end);
        first = 0;
    }
}

static void json_devices(stats_ctx *c)
{
    const mf_model *m = c->m;
    char (*names)[32] = calloc(m->n_devices ? m->n_devices : 1, 32);
    row *rows = names ? device_rows(m, c->opt, names) : NULL;
    if (!rows) {
        c->b->error = ENOMEM;
        free(names);
        return;
    }
    mf_sink_puts(c->b, "\"devices\":[");
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = rows[i].dev;
        mf_sink_puts(c->b, i ? ",\n{" : "\n{");
        json_device_name(c->b, d->device);
        mf_sink_puts(c->b, ",");
        json_key_str(c->b, "name", rows[i].name);
        mf_sink_printf(c->b, ",\"alloc_count\":%llu,\"free_count\":%llu,\"alloc_bytes\":%llu,"
                      "\"alloc_actual_bytes\":%llu,\"min_size\":%llu,\"max_size\":%llu,"
                      "\"avg_size\":%.3f,\"peak_bytes\":%llu,\"peak_time_ns\":%llu,"
                      "\"live_bytes_end\":%llu,\"live_count_end\":%llu,\"unknown_frees\":%llu,"
                      "\"replaced_blocks\":%llu,\"snapshots\":%zu,\"kinds\":{",
                      (unsigned long long)d->alloc_count, (unsigned long long)d->free_count,
                      (unsigned long long)d->alloc_bytes,
                      (unsigned long long)d->alloc_actual_bytes, (unsigned long long)d->min_size,
                      (unsigned long long)d->max_size, row_avg(&rows[i]),
                      (unsigned long long)d->peak_bytes,
                      (unsigned long long)rel_ns(m, d->peak_time_ns),
                      (unsigned long long)d->live_bytes_end,
                      (unsigned long long)d->live_count_end,
                      (unsigned long long)d->unknown_frees,
                      (unsigned long long)d->replaced_blocks, d->n_snapshots);
        json_kinds(c->b, d);
        mf_sink_puts(c->b, "}}");
    }
    mf_sink_puts(c->b, "],\n");
    free(rows);
    free(names);
}

static void json_scopes(stats_ctx *c)
{
    size_t n;
    row *rows = scope_rows(c->m, c->opt, &n);
    if (!rows) {
        c->b->error = ENOMEM;
        return;
    }
    mf_sink_puts(c->b, "\"scopes\":[");
    for (size_t i = 0; i < n; i++) {
        const mf_scope_stat *s = rows[i].scope;
        mf_sink_puts(c->b, i ? ",\n{" : "\n{");
        json_key_str(c->b, "scope", rows[i].name);
        mf_sink_puts(c->b, ",");
        json_device_name(c->b, rows[i].dev->device);
        mf_sink_printf(c->b, ",\"alloc_count\":%llu,\"free_count\":%llu,\"alloc_bytes\":%llu,"
                      "\"min_size\":%llu,\"max_size\":%llu,\"avg_size\":%.3f,"
                      "\"peak_live_bytes\":%llu,\"peak_live_time_ns\":%llu,"
                      "\"live_bytes_end\":%llu,\"live_count_end\":%llu}",
                      (unsigned long long)s->alloc_count, (unsigned long long)s->free_count,
                      (unsigned long long)s->alloc_bytes, (unsigned long long)s->min_size,
                      (unsigned long long)s->max_size, row_avg(&rows[i]),
                      (unsigned long long)s->peak_live_bytes,
                      (unsigned long long)rel_ns(c->m, s->peak_live_time_ns),
                      (unsigned long long)s->live_bytes_end,
                      (unsigned long long)s->live_count_end);
    }
    mf_sink_puts(c->b, "],\n");
    free(rows);
}

static void json_at_peak(stats_ctx *c)
{
    mf_sink_puts(c->b, "\"at_peak\":[");
    for (size_t i = 0; i < c->m->n_devices; i++) {
        const mf_device_model *d = &c->m->devices[i];
        size_t n;
        const mf_scope_stat **h = peak_holders(d, &n);
        if (!h) {
            c->b->error = ENOMEM;
            return;
        }
        mf_sink_puts(c->b, i ? ",\n{" : "\n{");
        json_device_name(c->b, d->device);
        mf_sink_printf(c->b, ",\"peak_bytes\":%llu,\"peak_time_ns\":%llu,\"holders\":[",
                      (unsigned long long)d->peak_bytes,
                      (unsigned long long)rel_ns(c->m, d->peak_time_ns));
        for (size_t j = 0; j < n; j++) {
            mf_sink_puts(c->b, j ? ",{" : "{");
            json_key_str(c->b, "scope", mf_model_string(c->m, h[j]->scope));
            mf_sink_printf(c->b, ",\"bytes\":%llu,\"blocks\":%llu}",
                          (unsigned long long)h[j]->at_peak_bytes,
                          (unsigned long long)h[j]->at_peak_count);
        }
        mf_sink_puts(c->b, "]}");
        free(h);
    }
    mf_sink_puts(c->b, "],\n");
}

static void json_leaks(stats_ctx *c)
{
    size_t n;
    const mf_block **l = leak_blocks(c->m, leaks_max(c->opt), &n);
    if (!l) {
        c->b->error = ENOMEM;
        return;
    }
    mf_sink_puts(c->b, "\"leaks\":[");
    for (size_t i = 0; i < n; i++) {
        mf_sink_puts(c->b, i ? ",\n{" : "\n{");
        json_key_str(c->b, "scope", mf_model_string(c->m, l[i]->scope));
        mf_sink_puts(c->b, ",");
        json_key_str(c->b, "name", mf_model_string(c->m, l[i]->name));
        mf_sink_puts(c->b, ",");
        json_device_name(c->b, l[i]->device);
        mf_sink_printf(c->b, ",\"address\":\"0x%llx\",\"requested\":%llu,\"actual\":%llu,"
                      "\"alloc_time_ns\":%llu,\"pid\":%u,\"thread\":%u,",
                      (unsigned long long)l[i]->addr, (unsigned long long)l[i]->requested,
                      (unsigned long long)l[i]->actual,
                      (unsigned long long)rel_ns(c->m, l[i]->alloc_ns), l[i]->pid, l[i]->tid);
        json_key_str(c->b, "thread_name", thread_name(c->m, l[i]->pid, l[i]->tid));
        mf_sink_puts(c->b, "}");
    }
    mf_sink_puts(c->b, "],\n");
    free(l);
}

static void json_notes(stats_ctx *c)
{
    uint64_t unknown = 0;
    for (size_t i = 0; i < c->m->n_devices; i++)
        unknown += c->m->devices[i].unknown_frees;
    mf_sink_printf(c->b, "\"unknown_frees\":%llu,\n\"gpu_dropped\":%llu,\n\"damaged\":%s,\n"
                  "\"warnings\":[", (unsigned long long)unknown,
                  (unsigned long long)c->m->gpu_dropped, c->m->damaged ? "true" : "false");
    for (size_t i = 0; i < c->m->n_warnings; i++) {
        mf_sink_puts(c->b, i ? "," : "");
        json_str(c->b, c->m->warnings[i]);
    }
    mf_sink_puts(c->b, "]\n");
}

static void write_json(stats_ctx *c)
{
    static const char *const sorts[] = { "total", "avg", "min", "max", "count" };
    mf_sink_printf(c->b, "{\"sort_by\":\"%s\",\"ascending\":%s,\n", sorts[c->opt->sort_by % 5],
                  c->opt->ascending ? "true" : "false");
    json_processes(c);
    json_devices(c);
    json_scopes(c);
    json_at_peak(c);
    json_leaks(c);
    json_notes(c);
    mf_sink_puts(c->b, "}\n");
}

/* ---- entry points ------------------------------------------------------ */

char *mf_stats_string(const mf_model *model, const mf_stats_options *opt)
{
    static const mf_stats_options defaults = { 0, MF_SORT_TOTAL, 0, 0 };
    mf_sink b = { 0 };
    stats_ctx c = { model, opt ? opt : &defaults, &b };
    if (c.opt->json)
        write_json(&c);
    else
        write_table(&c);
    return mf_sink_take(&b);
}

int mf_stats_write(const mf_model *model, FILE *out, const mf_stats_options *opt)
{
    char *text = mf_stats_string(model, opt);
    if (!text)
        return -1;
    size_t len = strlen(text);
    int rc = fwrite(text, 1, len, out) == len ? 0 : -1;
    free(text);
    return rc;
}
