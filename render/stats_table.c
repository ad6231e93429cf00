/*
 * stats_table.c - the statistics as a text table: a header (processes,
 * duration), MXNet's "Device Storage" (its column names, kB = 1000 bytes as
 * MXNet prints them, labelled), per scope, per allocation site (with
 * stacks), at each peak (by scope and by site), leaks, notes.
 * Sizes outside MXNet's table are in binary units (units.h), like every
 * other output.  Program strings are escaped for a terminal (escape.h).
 */
#include <stdio.h>
#include <string.h>

#include "escape.h"
#include "stats.h"
#include "units.h"

#define MAX_TEXT_HOLDERS 20  /* scopes (sites) listed at a peak in the table; JSON has all */
#define MAX_TEXT_SITES 20    /* allocation sites listed in the table; JSON has all */
#define KB 1000.0            /* MXNet's "kB" */

static uint64_t rel_ns(const mf_model *m, uint64_t t)
{
    return t >= m->t0_ns ? t - m->t0_ns : 0;
}

/* The escaped name padded to width characters, then a space. */
static void cell(mf_sink *out, const char *s, size_t width)
{
    mf_sink probe = { 0 };
    mf_escape_text(&probe, s, MF_ESCAPE_WHOLE);
    size_t chars = 0;
    for (size_t i = 0; i < probe.len; i++)
        chars += ((unsigned char)probe.buf[i] & 0xc0) != 0x80;
    mf_sink_write(out, probe.buf, probe.len);
    mf_sink_free(&probe);
    for (; chars < width; chars++)
        mf_sink_putc(out, ' ');
    mf_sink_putc(out, ' ');
}

static size_t name_width(const mf_stats_row *rows, size_t n, size_t min)
{
    size_t w = min;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(rows[i].name);
        if (len > w)
            w = len > 60 ? 60 : len;
    }
    return w;
}

/* A size right-aligned in width columns: "1.50 MiB". */
static void bytes_cell(mf_sink *out, uint64_t bytes, int width)
{
    char b[32];
    mf_sink_printf(out, " %*s", width, mf_format_bytes(bytes, b, sizeof b));
}

static void header(const mf_stats *s, mf_sink *out)
{
    const mf_model *m = s->model;
    mf_sink_puts(out, "memflow statistics\n");
    for (size_t i = 0; i < m->n_processes; i++) {
        const mf_process_info *p = &m->processes[i];
        char how[128];
        mf_sink_printf(out, "process %u: ", p->pid);
        mf_escape_text(out, p->program, MF_ESCAPE_WHOLE);
        if (p->abnormal)
            mf_sink_printf(out, " (not finished: %s)", mf_stats_process_end(p, how, sizeof how));
        else if (p->running)
            mf_sink_puts(out, " (still running)");
        mf_sink_putc(out, '\n');
    }
    mf_sink_printf(out, "duration: %.3f ms\n\n", (double)(m->t1_ns - m->t0_ns) / 1e6);
}

static void device_info(const mf_stats *s, mf_sink *out, const mf_device_model *d)
{
    const mf_device_info *info = &d->info;
    char dev[16], text[512];
    if (!info->known)
        return;
    mf_sink_printf(out, "%s: ", mf_model_device_name(d->device, dev, sizeof dev));
    mf_format_device_info(mf_model_string(s->model, info->name), info->uuid, info->mig,
                          info->total_bytes, text, sizeof text);
    mf_escape_text(out, text, MF_ESCAPE_WHOLE);
    mf_sink_putc(out, '\n');
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

static void kinds(mf_sink *out, const mf_device_model *d)
{
    char dev[16], a[32], b[32];
    if (!mixed_kinds(d))
        return;
    mf_sink_printf(out, "%s by memory kind:", mf_model_device_name(d->device, dev, sizeof dev));
    for (unsigned k = 0; k < MF_MODEL_KINDS; k++)
        if (d->kinds[k].alloc_count)
            mf_sink_printf(out, " %s %llu allocations, %s (%s never freed);",
                           mf_memory_kind_name(k), (unsigned long long)d->kinds[k].alloc_count,
                           mf_format_bytes(d->kinds[k].alloc_bytes, a, sizeof a),
                           mf_format_bytes(d->kinds[k].live_bytes_end, b, sizeof b));
    mf_sink_putc(out, '\n');
}

static void device_storage(const mf_stats *s, mf_sink *out)
{
    size_t w = name_width(s->devices, s->n_devices, 30);
    mf_sink_puts(out, "Device Storage\n=================\n");
    cell(out, "Name", w);
    mf_sink_puts(out, "     Total Count    Min Use  (kB)    Max Use  (kB)    Avg Use  (kB)\n");
    cell(out, "----", w);
    mf_sink_puts(out, "     -----------    -------------    -------------    -------------\n");
    for (size_t i = 0; i < s->n_devices; i++) {
        const mf_stats_row *r = &s->devices[i];
        cell(out, r->name, w);
        mf_sink_printf(out, "%16llu %16.4f %16.4f %16.4f\n", (unsigned long long)r->count,
                       (double)r->min / KB, (double)r->max / KB, r->avg / KB);
    }
    mf_sink_puts(out, "Use: requested bytes of one allocation (kB = 1000 bytes, as MXNet "
                      "prints it); Avg is the arithmetic mean, total requested / count.\n");
    for (size_t i = 0; i < s->model->n_devices; i++) {
        device_info(s, out, &s->model->devices[i]);
        kinds(out, &s->model->devices[i]);
    }
    mf_sink_putc(out, '\n');
}

/* A scope's or site's name, device and count. */
static void row_head(mf_sink *out, const mf_stats_row *r, size_t width)
{
    char dev[16];
    cell(out, r->name, width);
    mf_sink_printf(out, "%-8s %13llu", mf_model_device_name(r->dev->device, dev, sizeof dev),
                   (unsigned long long)r->count);
    bytes_cell(out, r->total, 11);
}

static void scopes(const mf_stats *s, mf_sink *out)
{
    size_t w = name_width(s->scopes, s->n_scopes, 24);
    mf_sink_puts(out, "Scopes\n=================\n");
    cell(out, "Name", w);
    mf_sink_puts(out, "Device     Total Count   Total Use     Min Use     Max Use     Avg Use"
                      "   Peak Live  Never Freed\n");
    for (size_t i = 0; i < s->n_scopes; i++) {
        const mf_stats_row *r = &s->scopes[i];
        row_head(out, r, w);
        bytes_cell(out, r->min, 11);
        bytes_cell(out, r->max, 11);
        /* the mean of sizes near 2^64 rounds to 2^64, past uint64_t */
        bytes_cell(out, r->avg < 18446744073709549568.0 ? (uint64_t)(r->avg + 0.5) : UINT64_MAX,
                   11);
        bytes_cell(out, r->scope->peak_live_bytes, 11);
        bytes_cell(out, r->scope->live_bytes_end, 12);
        mf_sink_putc(out, '\n');
    }
    mf_sink_putc(out, '\n');
}

/* Sub-blocks, when there are any: per device, then by scope. */
static void subblocks(const mf_stats *s, mf_sink *out)
{
    const mf_model *m = s->model;
    int any = 0;
    for (size_t i = 0; i < m->n_devices; i++)
        any |= m->devices[i].sub.alloc_count != 0;
    if (!any)
        return;
    mf_sink_puts(out, "Sub-blocks (regions inside other blocks, NVTX memory API; not in the "
                      "counts above)\n=================\n");
    mf_sink_puts(out, "Device   Scope                         Count   Total Use   Peak Live"
                      "  Never Freed\n");
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        char dev[16];
        if (!d->sub.alloc_count)
            continue;
        mf_sink_printf(out, "%-8s %-24s %10llu", mf_model_device_name(d->device, dev, sizeof dev),
                       "(all)", (unsigned long long)d->sub.alloc_count);
        bytes_cell(out, d->sub.alloc_bytes, 11);
        bytes_cell(out, d->sub.peak_bytes, 11);
        bytes_cell(out, d->sub.live_bytes_end, 12);
        mf_sink_putc(out, '\n');
        for (size_t j = 0; j < d->n_sub_scopes; j++) {
            const mf_scope_stat *sc = &d->sub_scopes[j];
            mf_sink_printf(out, "%-8s ", "");
            cell(out, mf_model_string(m, sc->scope), 24);
            mf_sink_printf(out, "%10llu", (unsigned long long)sc->alloc_count);
            bytes_cell(out, sc->alloc_bytes, 11);
            bytes_cell(out, sc->peak_live_bytes, 11);
            bytes_cell(out, sc->live_bytes_end, 12);
            mf_sink_putc(out, '\n');
        }
    }
    mf_sink_putc(out, '\n');
}

/* The allocation sites, first MAX_TEXT_SITES in the sort order. */
static void sites(const mf_stats *s, mf_sink *out)
{
    if (!s->has_sites)
        return;
    size_t n = s->n_sites < MAX_TEXT_SITES ? s->n_sites : MAX_TEXT_SITES;
    size_t w = name_width(s->sites, n, 24);
    mf_sink_printf(out, "Top allocation sites (%zu of %zu, by %s)\n=================\n", n,
                   s->n_sites, mf_stats_sort_name(s->sort_by));
    cell(out, "Site", w);
    mf_sink_puts(out, "Device     Total Count   Total Use   Peak Live  Never Freed\n");
    for (size_t i = 0; i < n; i++) {
        const mf_stats_row *r = &s->sites[i];
        row_head(out, r, w);
        bytes_cell(out, r->scope->peak_live_bytes, 11);
        bytes_cell(out, r->scope->live_bytes_end, 12);
        mf_sink_putc(out, '\n');
    }
    mf_sink_putc(out, '\n');
}

/* Who held a device's peak, the first MAX_TEXT_HOLDERS, then the rest summed. */
static void holders(mf_sink *out, const mf_device_model *d, const mf_stats_holder *h, size_t n,
                    const char *indent, const char *what)
{
    uint64_t other_bytes = 0, other_blocks = 0;
    for (size_t j = 0; j < n; j++) {
        if (j >= MAX_TEXT_HOLDERS) {
            other_bytes += h[j].bytes;
            other_blocks += h[j].blocks;
            continue;
        }
        mf_sink_printf(out, "%s%16llu bytes %6.2f%% %8llu blocks  ", indent,
                       (unsigned long long)h[j].bytes,
                       100.0 * (double)h[j].bytes / (double)d->peak_bytes,
                       (unsigned long long)h[j].blocks);
        mf_escape_text(out, h[j].name, MF_ESCAPE_WHOLE);
        mf_sink_putc(out, '\n');
    }
    if (n > MAX_TEXT_HOLDERS)
        mf_sink_printf(out, "%s%16llu bytes %6.2f%% %8llu blocks  (%zu other %s)\n", indent,
                       (unsigned long long)other_bytes,
                       100.0 * (double)other_bytes / (double)d->peak_bytes,
                       (unsigned long long)other_blocks, n - MAX_TEXT_HOLDERS, what);
}

static void at_peak(const mf_stats *s, mf_sink *out)
{
    mf_sink_puts(out, "At the peak (all processes together)\n=================\n");
    for (size_t i = 0; i < s->n_peaks; i++) {
        const mf_stats_peak *p = &s->peaks[i];
        const mf_device_model *d = p->dev;
        char dev[16], human[32];
        mf_sink_printf(out, "%s: peak %llu bytes (%s) at %.6f ms\n",
                       mf_model_device_name(d->device, dev, sizeof dev),
                       (unsigned long long)d->peak_bytes,
                       mf_format_bytes(d->peak_bytes, human, sizeof human),
                       (double)rel_ns(s->model, d->peak_time_ns) / 1e6);
        holders(out, d, p->holders, p->n_holders, "  ", "scopes");
        if (!s->has_sites)
            continue;
        mf_sink_puts(out, "  by site:\n");
        holders(out, d, p->by_site, p->n_by_site, "    ", "sites");
    }
    mf_sink_putc(out, '\n');
}

static void leaks(const mf_stats *s, mf_sink *out)
{
    mf_sink_printf(out, "Leaks (largest blocks never freed, up to %zu)\n=================\n",
                   s->max_leaks);
    if (s->n_leaks == 0)
        mf_sink_puts(out, "none\n");
    else
        mf_sink_puts(out, "Device            Address        Requested           Actual"
                          "    Alloc (ms)  Pid     Thread  Scope / name\n");
    for (size_t i = 0; i < s->n_leaks; i++) {
        const mf_block *l = &s->leaks[i];
        char dev[16];
        mf_sink_printf(out, "%-8s %#18llx %16llu %16llu %13.6f  %-6u  %-6u  ",
                       mf_model_device_name(l->device, dev, sizeof dev),
                       (unsigned long long)l->addr, (unsigned long long)l->requested,
                       (unsigned long long)l->actual,
                       (double)rel_ns(s->model, l->alloc_ns) / 1e6, l->pid, l->tid);
        mf_escape_text(out, mf_model_string(s->model, l->scope), MF_ESCAPE_WHOLE);
        mf_escape_text(out, mf_model_string(s->model, l->name), MF_ESCAPE_WHOLE);
        mf_sink_putc(out, '\n');
    }
    mf_sink_putc(out, '\n');
}

static void notes(const mf_stats *s, mf_sink *out)
{
    mf_sink_printf(out, "Unknown frees: %llu\n", (unsigned long long)s->unknown_frees);
    if (s->inherited_frees)
        mf_sink_printf(out, "Frees in forked children of blocks inherited from their parent: "
                       "%llu\n", (unsigned long long)s->inherited_frees);
    for (size_t i = 0; i < s->model->n_warnings; i++) {
        mf_sink_puts(out, "warning: ");
        mf_escape_text(out, s->model->warnings[i], MF_ESCAPE_WHOLE);
        mf_sink_putc(out, '\n');
    }
}

void mf_stats_print_table(const mf_stats *s, mf_sink *out)
{
    header(s, out);
    device_storage(s, out);
    scopes(s, out);
    subblocks(s, out);
    sites(s, out);
    at_peak(s, out);
    leaks(s, out);
    notes(s, out);
}
