/*
 * stats_json.c - the statistics as JSON, the same content as the table
 * with exact numbers (docs/OUTPUTS.md lists every key).  Program strings
 * are JSON-escaped (escape.h); times are ns since t0.
 */
#include <stdio.h>

#include "escape.h"
#include "stats.h"

static uint64_t rel_ns(const mf_model *m, uint64_t t)
{
    return t >= m->t0_ns ? t - m->t0_ns : 0;
}

static void str(mf_sink *out, const char *s)
{
    mf_sink_putc(out, '"');
    mf_escape_json(out, s);
    mf_sink_putc(out, '"');
}

static void key_str(mf_sink *out, const char *key, const char *s)
{
    mf_sink_printf(out, "\"%s\":", key);
    str(out, s);
}

static void device_key(mf_sink *out, uint16_t device)
{
    char dev[16];
    key_str(out, "device", mf_model_device_name(device, dev, sizeof dev));
}

static const char *end_name(const mf_process_info *p)
{
    static const char *const names[] = { "unknown", "exit", "exit_now", "exec", "signal" };
    if (p->running || !p->end_ns)
        return "running";
    return p->end_how <= MF_END_SIGNAL ? names[p->end_how] : "unknown";
}

static void processes(const mf_stats *s, mf_sink *out)
{
    const mf_model *m = s->model;
    mf_sink_puts(out, "\"processes\":[");
    for (size_t i = 0; i < m->n_processes; i++) {
        const mf_process_info *p = &m->processes[i];
        char how[128];
        mf_sink_printf(out, "%s{\"pid\":%u,\"ppid\":%u,", i ? "," : "", p->pid, p->ppid);
        key_str(out, "program", p->program ? p->program : "");
        mf_sink_putc(out, ',');
        key_str(out, "log", p->log_path ? p->log_path : "");
        mf_sink_printf(out, ",\"finished\":%s,\"end\":{\"how\":\"%s\",\"status\":%lld,"
                       "\"time_ns\":%llu,\"inferred\":%s},\"abnormal\":%s,",
                       p->finished ? "true" : "false", end_name(p), (long long)p->end_status,
                       (unsigned long long)(p->end_ns ? rel_ns(m, p->end_ns) : 0),
                       p->end_inferred ? "true" : "false", p->abnormal ? "true" : "false");
        key_str(out, "ended", mf_stats_process_end(p, how, sizeof how));
        mf_sink_putc(out, '}');
    }
    mf_sink_printf(out, "],\n\"duration_ns\":%llu,\n", (unsigned long long)(m->t1_ns - m->t0_ns));
}

static void kinds(mf_sink *out, const mf_device_model *d)
{
    int first = 1;
    for (unsigned k = 0; k < MF_MODEL_KINDS; k++) {
        if (!d->kinds[k].alloc_count)
            continue;
        mf_sink_printf(out, "%s\"%s\":{\"alloc_count\":%llu,\"alloc_bytes\":%llu,"
                       "\"live_bytes_end\":%llu}", first ? "" : ",", mf_memory_kind_name(k),
                       (unsigned long long)d->kinds[k].alloc_count,
                       (unsigned long long)d->kinds[k].alloc_bytes,
                       (unsigned long long)d->kinds[k].live_bytes_end);
        first = 0;
    }
}

static void info(const mf_stats *s, mf_sink *out, const mf_device_info *in)
{
    if (!in->known) {
        mf_sink_puts(out, "null");
        return;
    }
    mf_sink_putc(out, '{');
    key_str(out, "name", mf_model_string(s->model, in->name));
    mf_sink_puts(out, ",\"uuid\":\"");
    for (int i = 0; i < 16; i++)
        mf_sink_printf(out, "%02x", in->uuid[i]);
    mf_sink_printf(out, "\",\"total_bytes\":%llu,\"pci_bus\":%u,\"mig\":",
                   (unsigned long long)in->total_bytes, in->pci_bus);
    if (in->mig == UINT32_MAX)
        mf_sink_puts(out, "null}");
    else
        mf_sink_printf(out, "[%u,%u]}", in->mig >> 16, in->mig & 0xffff);
}

/* A device's sub-blocks, apart from its counts: totals, then by scope. */
static void subblocks(const mf_stats *s, mf_sink *out, const mf_device_model *d)
{
    const mf_sub_counts *c = &d->sub;
    mf_sink_printf(out, ",\"subblocks\":{\"alloc_count\":%llu,\"free_count\":%llu,"
                   "\"alloc_bytes\":%llu,\"peak_bytes\":%llu,\"peak_time_ns\":%llu,"
                   "\"live_bytes_end\":%llu,\"live_count_end\":%llu,\"scopes\":[",
                   (unsigned long long)c->alloc_count, (unsigned long long)c->free_count,
                   (unsigned long long)c->alloc_bytes, (unsigned long long)c->peak_bytes,
                   (unsigned long long)rel_ns(s->model, c->peak_time_ns),
                   (unsigned long long)c->live_bytes_end, (unsigned long long)c->live_count_end);
    for (size_t i = 0; i < d->n_sub_scopes; i++) {
        const mf_scope_stat *sc = &d->sub_scopes[i];
        mf_sink_puts(out, i ? ",{" : "{");
        key_str(out, "scope", mf_model_string(s->model, sc->scope));
        mf_sink_printf(out, ",\"alloc_count\":%llu,\"free_count\":%llu,\"alloc_bytes\":%llu,"
                       "\"peak_live_bytes\":%llu,\"live_bytes_end\":%llu,"
                       "\"live_count_end\":%llu}",
                       (unsigned long long)sc->alloc_count, (unsigned long long)sc->free_count,
                       (unsigned long long)sc->alloc_bytes,
                       (unsigned long long)sc->peak_live_bytes,
                       (unsigned long long)sc->live_bytes_end,
                       (unsigned long long)sc->live_count_end);
    }
    mf_sink_puts(out, "]}");
}

static void devices(const mf_stats *s, mf_sink *out)
{
    const mf_model *m = s->model;
    mf_sink_puts(out, "\"devices\":[");
    for (size_t i = 0; i < s->n_devices; i++) {
        const mf_stats_row *r = &s->devices[i];
        const mf_device_model *d = r->dev;
        mf_sink_puts(out, i ? ",\n{" : "\n{");
        device_key(out, d->device);
        mf_sink_putc(out, ',');
        key_str(out, "name", r->name);
        mf_sink_printf(out, ",\"alloc_count\":%llu,\"free_count\":%llu,\"alloc_bytes\":%llu,"
                       "\"alloc_actual_bytes\":%llu,\"min_size\":%llu,\"max_size\":%llu,"
                       "\"avg_size\":%.3f,\"peak_bytes\":%llu,\"peak_time_ns\":%llu,"
                       "\"live_bytes_end\":%llu,\"live_count_end\":%llu,\"held_bytes_end\":%llu,"
                       "\"unknown_frees\":%llu,\"inherited_frees\":%llu,\"replaced_blocks\":%llu,"
                       "\"snapshots\":%llu,\"processes\":%zu,\"kinds\":{",
                       (unsigned long long)d->alloc_count, (unsigned long long)d->free_count,
                       (unsigned long long)d->alloc_bytes,
                       (unsigned long long)d->alloc_actual_bytes, (unsigned long long)d->min_size,
                       (unsigned long long)d->max_size, r->avg, (unsigned long long)d->peak_bytes,
                       (unsigned long long)rel_ns(m, d->peak_time_ns),
                       (unsigned long long)d->live_bytes_end,
                       (unsigned long long)d->live_count_end, (unsigned long long)d->held_bytes,
                       (unsigned long long)d->unknown_frees,
                       (unsigned long long)d->inherited_frees,
                       (unsigned long long)d->replaced_blocks,
                       (unsigned long long)d->snapshots_added, d->n_views);
        kinds(out, d);
        mf_sink_putc(out, '}');
        subblocks(s, out, d);
        mf_sink_puts(out, ",\"info\":");
        info(s, out, &d->info);
        mf_sink_puts(out, ",\"by_process\":[");
        for (size_t v = 0; v < d->n_views; v++) {
            const mf_view *view = d->views[v];
            mf_sink_printf(out, "%s{\"pid\":%u,\"alloc_count\":%llu,\"alloc_bytes\":%llu,"
                           "\"peak_bytes\":%llu,\"peak_time_ns\":%llu,\"live_bytes_end\":%llu,"
                           "\"unknown_frees\":%llu,\"inherited_frees\":%llu}", v ? "," : "",
                           view->pid, (unsigned long long)view->alloc_count,
                           (unsigned long long)view->alloc_bytes,
                           (unsigned long long)view->peak_bytes,
                           (unsigned long long)rel_ns(m, view->peak_time_ns),
                           (unsigned long long)view->live_bytes_end,
                           (unsigned long long)view->unknown_frees,
                           (unsigned long long)view->inherited_frees);
        }
        mf_sink_puts(out, "]}");
    }
    mf_sink_puts(out, "],\n");
}

/* The counts of a scope's or a site's row (after its name and device). */
static void keyed_counts(const mf_stats *s, mf_sink *out, const mf_stats_row *r)
{
    const mf_scope_stat *sc = r->scope;
    mf_sink_printf(out, ",\"alloc_count\":%llu,\"free_count\":%llu,\"alloc_bytes\":%llu,"
                   "\"min_size\":%llu,\"max_size\":%llu,\"avg_size\":%.3f,"
                   "\"peak_live_bytes\":%llu,\"peak_live_time_ns\":%llu,"
                   "\"live_bytes_end\":%llu,\"live_count_end\":%llu",
                   (unsigned long long)sc->alloc_count, (unsigned long long)sc->free_count,
                   (unsigned long long)sc->alloc_bytes, (unsigned long long)sc->min_size,
                   (unsigned long long)sc->max_size, r->avg,
                   (unsigned long long)sc->peak_live_bytes,
                   (unsigned long long)rel_ns(s->model, sc->peak_live_time_ns),
                   (unsigned long long)sc->live_bytes_end,
                   (unsigned long long)sc->live_count_end);
}

static void scopes(const mf_stats *s, mf_sink *out)
{
    mf_sink_puts(out, "\"scopes\":[");
    for (size_t i = 0; i < s->n_scopes; i++) {
        mf_sink_puts(out, i ? ",\n{" : "\n{");
        key_str(out, "scope", s->scopes[i].name);
        mf_sink_putc(out, ',');
        device_key(out, s->scopes[i].dev->device);
        keyed_counts(s, out, &s->scopes[i]);
        mf_sink_putc(out, '}');
    }
    mf_sink_puts(out, "],\n");
}

#define JSON_SITE_FRAMES 8   /* frames of a site's first stack, from the site outward */

static void frame(mf_sink *out, const mf_site_frame *f)
{
    mf_sink_putc(out, '{');
    key_str(out, "function", f->function ? f->function : "?");
    mf_sink_puts(out, ",\"file\":");
    if (f->file)
        str(out, f->file);
    else
        mf_sink_puts(out, "null");
    mf_sink_printf(out, ",\"line\":%u,\"module\":", f->line);
    if (f->module)
        str(out, f->module);
    else
        mf_sink_puts(out, "null");
    mf_sink_putc(out, '}');
}

static void sites(const mf_stats *s, mf_sink *out)
{
    if (!s->has_sites)
        return;
    mf_sites *all = s->model->sites;
    mf_sink_puts(out, "\"sites\":[");
    for (size_t i = 0; i < s->n_sites; i++) {
        const mf_stats_row *r = &s->sites[i];
        const mf_site *site = mf_sites_get(all, r->scope->scope);
        mf_site_frame frames[JSON_SITE_FRAMES];
        size_t n = mf_sites_frames(all, site->stack, frames, JSON_SITE_FRAMES);
        mf_sink_puts(out, i ? ",\n{" : "\n{");
        key_str(out, "site", r->name);
        mf_sink_putc(out, ',');
        device_key(out, r->dev->device);
        keyed_counts(s, out, r);
        mf_sink_puts(out, ",\"frames\":[");
        for (size_t f = 0; f < n; f++) {
            if (f)
                mf_sink_putc(out, ',');
            frame(out, &frames[f]);
        }
        mf_sink_puts(out, "]}");
    }
    mf_sink_puts(out, "],\n");
}

static void holders(mf_sink *out, const char *key, const char *what, const mf_stats_holder *h,
                    size_t n)
{
    mf_sink_printf(out, ",\"%s\":[", key);
    for (size_t j = 0; j < n; j++) {
        mf_sink_puts(out, j ? ",{" : "{");
        key_str(out, what, h[j].name);
        mf_sink_printf(out, ",\"bytes\":%llu,\"blocks\":%llu}", (unsigned long long)h[j].bytes,
                       (unsigned long long)h[j].blocks);
    }
    mf_sink_putc(out, ']');
}

static void at_peak(const mf_stats *s, mf_sink *out)
{
    mf_sink_puts(out, "\"at_peak\":[");
    for (size_t i = 0; i < s->n_peaks; i++) {
        const mf_stats_peak *p = &s->peaks[i];
        mf_sink_puts(out, i ? ",\n{" : "\n{");
        device_key(out, p->dev->device);
        mf_sink_printf(out, ",\"peak_bytes\":%llu,\"peak_time_ns\":%llu",
                       (unsigned long long)p->dev->peak_bytes,
                       (unsigned long long)rel_ns(s->model, p->dev->peak_time_ns));
        holders(out, "holders", "scope", p->holders, p->n_holders);
        if (s->has_sites)
            holders(out, "by_site", "site", p->by_site, p->n_by_site);
        mf_sink_putc(out, '}');
    }
    mf_sink_puts(out, "],\n");
}

static void leaks(const mf_stats *s, mf_sink *out)
{
    const mf_model *m = s->model;
    mf_sink_puts(out, "\"leaks\":[");
    for (size_t i = 0; i < s->n_leaks; i++) {
        const mf_block *l = &s->leaks[i];
        const char *thread = mf_model_thread_name(m, l->pid, l->tid);
        mf_sink_puts(out, i ? ",\n{" : "\n{");
        key_str(out, "scope", mf_model_string(m, l->scope));
        mf_sink_putc(out, ',');
        key_str(out, "name", mf_model_string(m, l->name));
        mf_sink_putc(out, ',');
        device_key(out, l->device);
        mf_sink_printf(out, ",\"address\":\"0x%llx\",\"requested\":%llu,\"actual\":%llu,"
                       "\"alloc_time_ns\":%llu,\"pid\":%u,\"thread\":%u,"
                       "\"held_until_process_end\":%s,",
                       (unsigned long long)l->addr, (unsigned long long)l->requested,
                       (unsigned long long)l->actual, (unsigned long long)rel_ns(m, l->alloc_ns),
                       l->pid, l->tid, l->end == MF_BLOCK_PROCESS_ENDED ? "true" : "false");
        key_str(out, "thread_name", thread ? thread : "unknown");
        mf_sink_putc(out, '}');
    }
    mf_sink_puts(out, "],\n");
}

static void notes(const mf_stats *s, mf_sink *out)
{
    const mf_model *m = s->model;
    mf_sink_printf(out, "\"unknown_frees\":%llu,\n\"inherited_frees\":%llu,\n"
                   "\"gpu_dropped\":%llu,\n\"damaged\":%s,\n\"warnings\":[",
                   (unsigned long long)s->unknown_frees, (unsigned long long)s->inherited_frees,
                   (unsigned long long)m->gpu_dropped, m->damaged ? "true" : "false");
    for (size_t i = 0; i < m->n_warnings; i++) {
        if (i)
            mf_sink_putc(out, ',');
        str(out, m->warnings[i]);
    }
    mf_sink_puts(out, "]\n");
}

void mf_stats_print_json(const mf_stats *s, mf_sink *out)
{
    mf_sink_printf(out, "{\"sort_by\":\"%s\",\"ascending\":%s,\n", mf_stats_sort_name(s->sort_by),
                   s->ascending ? "true" : "false");
    processes(s, out);
    devices(s, out);
    scopes(s, out);
    sites(s, out);
    at_peak(s, out);
    leaks(s, out);
    notes(s, out);
    mf_sink_puts(out, "}\n");
}
