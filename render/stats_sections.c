/*
 * stats_sections.c - the statistics' one walk: every section, in order,
 * told once to an emitter (emitter.h) that writes the text table or JSON.
 *
 * Sections: the processes and the duration; the out-of-memory post-mortems
 * (stats_gpu.c); MXNet's "Device Storage" (its column names; kB = 1000
 * bytes as MXNet prints them, labelled); per scope; GPU memory reserved
 * against allocated (stats_gpu.c); the sub-blocks (the table's own
 * section; JSON has them per device); per
 * allocation site (with stacks); at each peak (by scope and by site);
 * leaks; notes.  The table shows sizes outside MXNet's table in binary
 * units (units.h) and lists the first rows where JSON lists all; JSON has
 * exact numbers, times in ns since t0.  docs/OUTPUTS.md lists every
 * section, column and key.
 */
#include <stdio.h>
#include <string.h>

#include "emitter.h"
#include "stats.h"
#include "units.h"

#define MAX_TEXT_HOLDERS 20  /* scopes (sites) listed at a peak in the table; JSON has all */
#define MAX_TEXT_SITES 20    /* allocation sites listed in the table; JSON has all */
#define MAX_TEXT_NAMES 10    /* tensor names listed at a peak in the table; JSON has all */
#define MAX_TEXT_STEPS 20    /* steps listed per device in the table; JSON has all */
#define JSON_SITE_FRAMES 8   /* frames of a site's first stack, from the site outward */
#define KB 1000.0            /* MXNet's "kB" */

static uint64_t rel_ns(const mf_model *m, uint64_t t)
{
    return mf_stats_rel_ns(m, t);
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

/* JSON's "device":"cpu/0", or the table's padded device column. */
static void device(mf_emitter *e, uint16_t device, const char *table_fmt)
{
    char dev[16];
    mf_emit_name(e, "device", table_fmt, mf_model_device_name(device, dev, sizeof dev));
}

/* ---- processes ------------------------------------------------------------------ */

static const char *end_name(const mf_process_info *p)
{
    static const char *const names[] = { "unknown", "exit", "exit_now", "exec", "signal",
                                         "oom_killed", "snapshot" };
    if (p->end_how == MF_END_SNAPSHOT)
        return "snapshot";
    if (p->running || !p->end_ns)
        return "running";
    return p->end_how <= MF_END_SNAPSHOT ? names[p->end_how] : "unknown";
}

/* Whether process p shares the summary line (it held little, ended well). */
static int small(const mf_stats *s, const mf_process_info *p)
{
    return !p->abnormal && !p->running &&
           mf_model_small_process(s->model, p->peak_bytes, p->interpreter, s->small_pct);
}

/* How many images exec'd into p, one after the other (a launcher's chain). */
static size_t execs_before(const mf_model *m, const mf_process_info *p)
{
    size_t n = 0;
    for (int at = (int)(p - m->processes), again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < m->n_processes; i++)
            if (m->processes[i].next_image == at && n < m->n_processes) {
                n++;
                at = (int)i;
                again = 1;
                break;
            }
    }
    return n;
}

static void process(const mf_stats *s, mf_emitter *e, const mf_process_info *p)
{
    const mf_model *m = s->model;
    char how[128];
    /* the table: one line per process that held much, its last image (the
     * images it exec'd from counted on it) */
    int quiet = (small(s, p) || (p->next_image >= 0 && !p->abnormal)) && !mf_emit_json(e);
    mf_stats_process_end(p, how, sizeof how);
    mf_emit_object_begin(e, NULL);
    mf_emit_json_u64(e, "pid", p->pid);
    mf_emit_json_u64(e, "ppid", p->ppid);
    mf_emit_json_str(e, "program", p->program ? p->program : "");
    mf_emit_json_u64(e, "peak_bytes", p->peak_bytes);
    mf_emit_json_bool(e, "interpreter", p->interpreter);
    mf_emit_json_bool(e, "small", small(s, p));
    if (!quiet) {
        mf_emit_table_printf(e, "process %llu: ", (unsigned long long)p->pid);
        mf_emit_table_text(e, p->program ? p->program : "");
        size_t execs = mf_emit_json(e) ? 0 : execs_before(m, p);
        if (execs)
            mf_emit_table_printf(e, " (exec'd by %zu image%s before it)", execs,
                                 execs == 1 ? "" : "s");
        if (p->abnormal)
            mf_emit_table_printf(e, " (not finished: %s)", how);
        else if (p->running)
            mf_emit_table_printf(e, " (still running)");
        mf_emit_table_printf(e, "\n");
    }
    mf_emit_json_str(e, "log", p->log_path ? p->log_path : "");
    mf_emit_json_bool(e, "finished", p->finished);
    mf_emit_object_begin(e, "end");
    mf_emit_json_str(e, "how", end_name(p));
    mf_emit_json_i64(e, "status", p->end_status);
    mf_emit_json_u64(e, "time_ns", p->end_ns ? rel_ns(m, p->end_ns) : 0);
    mf_emit_json_bool(e, "inferred", p->end_inferred);
    mf_emit_close(e);
    mf_emit_json_bool(e, "abnormal", p->abnormal);
    mf_emit_json_str(e, "ended", how);
    mf_emit_close(e);
}

/* A window (--from/--to): what it is, in the table and in JSON (null when
 * everything is counted). */
static void window(const mf_stats *s, mf_emitter *e)
{
    const mf_model *m = s->model;
    int has = m->since_ns || m->window_from_step || m->window_to_step ||
              m->until_ns != UINT64_MAX;
    if (!has) {
        mf_emit_json_printf(e, "window", "null");
        return;
    }
    mf_emit_object_begin(e, "window");
    mf_emit_json_u64(e, "from_step", m->window_from_step);
    mf_emit_json_u64(e, "to_step", m->window_to_step);
    uint64_t origin = m->origin_ns ? m->origin_ns : m->t0_ns;
    uint64_t start = m->since_ns ? m->since_ns : m->t0_ns;
    uint64_t end = m->until_ns == UINT64_MAX || m->until_ns > m->t1_ns ? m->t1_ns : m->until_ns;
    mf_emit_json_u64(e, "start_ns", start > origin ? start - origin : 0);  /* as --from counts */
    mf_emit_json_u64(e, "end_ns", end > origin ? end - origin : 0);
    mf_emit_close(e);
    double from_ms = (double)(start > origin ? start - origin : 0) / 1e6;
    double to_ms = (double)(end > origin ? end - origin : 0) / 1e6;
    mf_emit_table_printf(e, "window: from ");
    if (m->window_from_step)
        mf_emit_table_printf(e, "step %llu (", (unsigned long long)m->window_from_step);
    mf_emit_table_printf(e, "%.3f ms%s to ", from_ms, m->window_from_step ? ")" : "");
    if (m->window_to_step)
        mf_emit_table_printf(e, "the end of step %llu (", (unsigned long long)m->window_to_step);
    mf_emit_table_printf(e, "%.3f ms%s after the logs' start; times below are since the "
                            "window's start, blocks live on entry are held from there, not "
                            "counted as allocations\n", to_ms, m->window_to_step ? ")" : "");
}

/* The one line of the processes that held little: how many, under what,
 * their programs' names with their counts. */
static void small_processes(const mf_stats *s, mf_emitter *e)
{
    const mf_model *m = s->model;
    size_t n = 0;
    uint64_t most = 0;
    for (size_t i = 0; i < m->n_processes; i++)
        if (small(s, &m->processes[i])) {
            n++;
            most = m->processes[i].peak_bytes > most ? m->processes[i].peak_bytes : most;
        }
    mf_emit_object_begin(e, "small_processes");
    mf_emit_json_u64(e, "count", n);
    mf_emit_json_double(e, "below_percent", s->small_pct);
    mf_emit_close(e);
    if (!n)
        return;
    char bytes[32];
    mf_emit_table_printf(e, "%zu more process%s, each under %g%% of the largest peak (%s at "
                            "most):", n, n == 1 ? "" : "es", s->small_pct,
                         mf_format_bytes(most, bytes, sizeof bytes));
    /* their programs' first words, each once with its count, in order met */
    size_t listed = 0;
    for (size_t i = 0; i < m->n_processes && listed < 8; i++) {
        const mf_process_info *p = &m->processes[i];
        const char *prog = p->program ? p->program : "";
        size_t len = strcspn(prog, " ");
        int seen = 0, count = 0;
        for (size_t j = 0; j < m->n_processes; j++) {
            const mf_process_info *q = &m->processes[j];
            const char *other = q->program ? q->program : "";
            if (!small(s, q) || strcspn(other, " ") != len || strncmp(other, prog, len) != 0)
                continue;
            seen |= j < i;
            count++;
        }
        if (!small(s, p) || seen)
            continue;
        char word[96];
        snprintf(word, sizeof word, "%.*s", (int)(len < 80 ? len : 80), prog);
        mf_emit_table_printf(e, "%s ", listed ? "," : "");
        mf_emit_table_text(e, word);
        mf_emit_table_printf(e, " x%d", count);
        listed++;
    }
    mf_emit_table_printf(e, "%s\n", listed == 8 ? ", ..." : "");
}

static void processes(const mf_stats *s, mf_emitter *e)
{
    const mf_model *m = s->model;
    mf_emit_table_printf(e, "memflow statistics\n");
    mf_emit_array_begin(e, "processes");
    for (size_t i = 0; i < m->n_processes; i++)
        process(s, e, &m->processes[i]);
    mf_emit_close(e);
    small_processes(s, e);
    mf_emit_json_u64(e, "duration_ns", m->t1_ns - m->t0_ns);
    mf_emit_table_printf(e, "duration: %.3f ms\n", (double)(m->t1_ns - m->t0_ns) / 1e6);
    window(s, e);
    mf_emit_table_printf(e, "\n");
}

/* ---- devices: MXNet's Device Storage -------------------------------------------- */

static void kinds_json(mf_emitter *e, const mf_device_model *d)
{
    mf_emit_object_begin(e, "kinds");
    for (unsigned k = 0; k < MF_MODEL_KINDS; k++) {
        if (!d->kinds[k].alloc_count)
            continue;
        mf_emit_object_begin(e, mf_memory_kind_name(k));
        mf_emit_json_u64(e, "alloc_count", d->kinds[k].alloc_count);
        mf_emit_json_u64(e, "alloc_bytes", d->kinds[k].alloc_bytes);
        mf_emit_json_u64(e, "live_bytes_end", d->kinds[k].live_bytes_end);
        mf_emit_close(e);
    }
    mf_emit_close(e);
}

/* A device's sub-blocks, apart from its counts: totals, then by scope. */
static void subblocks_json(const mf_stats *s, mf_emitter *e, const mf_device_model *d)
{
    const mf_sub_counts *c = &d->sub;
    mf_emit_object_begin(e, "subblocks");
    mf_emit_json_u64(e, "alloc_count", c->alloc_count);
    mf_emit_json_u64(e, "free_count", c->free_count);
    mf_emit_json_u64(e, "alloc_bytes", c->alloc_bytes);
    mf_emit_json_u64(e, "peak_bytes", c->peak_bytes);
    mf_emit_json_u64(e, "peak_time_ns", rel_ns(s->model, c->peak_time_ns));
    mf_emit_json_u64(e, "live_bytes_end", c->live_bytes_end);
    mf_emit_json_u64(e, "live_count_end", c->live_count_end);
    mf_emit_json_u64(e, "reused_count", c->reused_count);
    mf_emit_json_u64(e, "before_count", c->before_count);
    mf_emit_json_u64(e, "before_bytes", c->before_bytes);
    mf_emit_array_begin(e, "sites");
    for (size_t i = 0; i < d->n_sub_sites; i++) {
        const mf_scope_stat *sc = &d->sub_sites[i];
        mf_emit_object_begin(e, NULL);
        mf_emit_json_str(e, "site", mf_sites_get(s->model->sites, sc->scope)->name);
        mf_emit_json_u64(e, "alloc_count", sc->alloc_count);
        mf_emit_json_u64(e, "alloc_bytes", sc->alloc_bytes);
        mf_emit_json_u64(e, "peak_live_bytes", sc->peak_live_bytes);
        mf_emit_json_u64(e, "live_bytes_end", sc->live_bytes_end);
        mf_emit_close(e);
    }
    mf_emit_close(e);
    mf_emit_array_begin(e, "scopes");
    for (size_t i = 0; i < d->n_sub_scopes; i++) {
        const mf_scope_stat *sc = &d->sub_scopes[i];
        mf_emit_object_begin(e, NULL);
        mf_emit_json_str(e, "scope", mf_model_string(s->model, sc->scope));
        mf_emit_json_u64(e, "alloc_count", sc->alloc_count);
        mf_emit_json_u64(e, "free_count", sc->free_count);
        mf_emit_json_u64(e, "alloc_bytes", sc->alloc_bytes);
        mf_emit_json_u64(e, "peak_live_bytes", sc->peak_live_bytes);
        mf_emit_json_u64(e, "live_bytes_end", sc->live_bytes_end);
        mf_emit_json_u64(e, "live_count_end", sc->live_count_end);
        mf_emit_close(e);
    }
    mf_emit_close(e);
    mf_emit_close(e);
}

static void info_json(const mf_stats *s, mf_emitter *e, const mf_device_info *in)
{
    if (!in->known) {
        mf_emit_json_printf(e, "info", "null");
        return;
    }
    char uuid[33];
    for (int i = 0; i < 16; i++)
        snprintf(uuid + 2 * i, 3, "%02x", in->uuid[i]);
    mf_emit_object_begin(e, "info");
    mf_emit_json_str(e, "name", mf_model_string(s->model, in->name));
    mf_emit_json_str(e, "uuid", uuid);
    mf_emit_json_u64(e, "total_bytes", in->total_bytes);
    mf_emit_json_u64(e, "pci_bus", in->pci_bus);
    if (in->mig == UINT32_MAX) {
        mf_emit_json_printf(e, "mig", "null");
    } else {
        mf_emit_array_begin(e, "mig");
        mf_emit_json_u64(e, NULL, in->mig >> 16);
        mf_emit_json_u64(e, NULL, in->mig & 0xffff);
        mf_emit_close(e);
    }
    mf_emit_close(e);
}

static void by_process_json(const mf_stats *s, mf_emitter *e, const mf_device_model *d)
{
    mf_emit_array_begin(e, "by_process");
    for (size_t v = 0; v < d->n_views; v++) {
        const mf_view *view = d->views[v];
        mf_emit_object_begin(e, NULL);
        mf_emit_json_u64(e, "pid", view->pid);
        mf_emit_json_u64(e, "alloc_count", view->alloc_count);
        mf_emit_json_u64(e, "alloc_bytes", view->alloc_bytes);
        mf_emit_json_u64(e, "peak_bytes", view->peak_bytes);
        mf_emit_json_u64(e, "peak_time_ns", rel_ns(s->model, view->peak_time_ns));
        mf_emit_json_u64(e, "live_bytes_end", view->live_bytes_end);
        mf_emit_json_u64(e, "unknown_frees", view->unknown_frees);
        mf_emit_json_u64(e, "inherited_frees", view->inherited_frees);
        mf_emit_close(e);
    }
    mf_emit_close(e);
}

/* One device: MXNet's row in the table (its usage counter: updates, and
 * the smallest, largest and mean value, in kB), everything known in JSON
 * (the counter in bytes). */
static void device_row(const mf_stats *s, mf_emitter *e, const mf_stats_row *r, size_t width)
{
    const mf_device_model *d = r->dev;
    char dev[16];
    mf_emit_object_begin(e, NULL);
    mf_emit_json_str(e, "device", mf_model_device_name(d->device, dev, sizeof dev));
    mf_emit_text(e, "name", r->name, width);
    mf_emit_table_printf(e, "%16llu %16.4f %16.4f %16.4f\n", (unsigned long long)r->count,
                         (double)r->min / KB, (double)r->max / KB, r->avg / KB);
    mf_emit_json_u64(e, "use_count", r->count);
    mf_emit_json_u64(e, "min_use", r->min);
    mf_emit_json_u64(e, "max_use", r->max);
    mf_emit_json_double(e, "avg_use", r->avg);
    mf_emit_json_u64(e, "alloc_count", d->alloc_count);
    mf_emit_json_u64(e, "free_count", d->free_count);
    mf_emit_json_u64(e, "alloc_bytes", d->alloc_bytes);
    mf_emit_json_u64(e, "alloc_actual_bytes", d->alloc_actual_bytes);
    mf_emit_json_u64(e, "min_size", d->min_size);
    mf_emit_json_u64(e, "max_size", d->max_size);
    mf_emit_json_double(e, "avg_size",
                        d->alloc_count ? (double)d->alloc_bytes / (double)d->alloc_count : 0.0);
    mf_emit_json_u64(e, "peak_bytes", d->peak_bytes);
    mf_emit_json_u64(e, "peak_time_ns", rel_ns(s->model, d->peak_time_ns));
    mf_emit_json_u64(e, "live_bytes_end", d->live_bytes_end);
    mf_emit_json_u64(e, "live_count_end", d->live_count_end);
    mf_emit_json_u64(e, "held_bytes_end", d->held_bytes);
    mf_emit_json_u64(e, "unknown_frees", d->unknown_frees);
    mf_emit_json_u64(e, "inherited_frees", d->inherited_frees);
    mf_emit_json_u64(e, "replaced_blocks", d->replaced_blocks);
    mf_emit_json_u64(e, "live_on_entry_bytes", d->entry_bytes);
    mf_emit_json_u64(e, "live_on_entry_count", d->entry_count);
    mf_emit_json_u64(e, "snapshots", d->snapshots_added);
    mf_emit_json_u64(e, "processes", d->n_views);
    kinds_json(e, d);
    subblocks_json(s, e, d);
    info_json(s, e, &d->info);
    by_process_json(s, e, d);
    mf_emit_close(e);
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

/* The table's lines under Device Storage: what each GPU is, and the memory
 * kinds of a device that used several. */
static void device_notes_table(const mf_stats *s, mf_emitter *e, const mf_device_model *d)
{
    char dev[16], text[512], a[32], b[32];
    mf_model_device_name(d->device, dev, sizeof dev);
    if (d->entry_count)
        mf_emit_table_printf(e, "%s: live on entry to the window: %llu blocks, %s (held, not "
                             "counted as allocations)\n", dev, (unsigned long long)d->entry_count,
                             mf_format_bytes(d->entry_bytes, a, sizeof a));
    if (d->info.known) {
        mf_emit_table_printf(e, "%s: ", dev);
        mf_format_device_info(mf_model_string(s->model, d->info.name), d->info.uuid,
                              d->info.mig, d->info.total_bytes, text, sizeof text);
        mf_emit_table_text(e, text);
        mf_emit_table_printf(e, "\n");
    }
    if (!mixed_kinds(d))
        return;
    mf_emit_table_printf(e, "%s by memory kind:", dev);
    for (unsigned k = 0; k < MF_MODEL_KINDS; k++)
        if (d->kinds[k].alloc_count)
            mf_emit_table_printf(e, " %s %llu allocations, %s (%s never freed);",
                                 mf_memory_kind_name(k),
                                 (unsigned long long)d->kinds[k].alloc_count,
                                 mf_format_bytes(d->kinds[k].alloc_bytes, a, sizeof a),
                                 mf_format_bytes(d->kinds[k].live_bytes_end, b, sizeof b));
    mf_emit_table_printf(e, "\n");
}

static void devices(const mf_stats *s, mf_emitter *e)
{
    size_t w = name_width(s->devices, s->n_devices, 30);
    mf_emit_table_title(e, "Device Storage");
    mf_emit_table_cell(e, "Name", w);
    mf_emit_table_printf(e, "     Total Count    Min Use  (kB)    Max Use  (kB)"
                            "    Avg Use  (kB)\n");
    mf_emit_table_cell(e, "----", w);
    mf_emit_table_printf(e, "     -----------    -------------    -------------"
                            "    -------------\n");
    mf_emit_array_begin(e, "devices");
    mf_emit_lines(e);
    for (size_t i = 0; i < s->n_devices; i++)
        device_row(s, e, &s->devices[i], w);
    mf_emit_close(e);
    mf_emit_table_printf(e, "Use: requested bytes held on the device after each allocation and "
                            "free (Total Count: how many; kB = 1000 bytes, as MXNet prints it); "
                            "Max Use is the peak; Avg is their mean, not MXNet's (max - min) / 2."
                            "\n");
    for (size_t i = 0; i < s->model->n_devices; i++)
        device_notes_table(s, e, &s->model->devices[i]);
    mf_emit_table_printf(e, "\n");
}

/* ---- scopes and sites ------------------------------------------------------------- */

/* A scope's or a site's counts, after its name: device, count and bytes in
 * both; the sizes too in the table when `sizes`; the rest in JSON. */
static void keyed_counts(const mf_stats *s, mf_emitter *e, const mf_stats_row *r, int sizes)
{
    const mf_scope_stat *sc = r->scope;
    device(e, r->dev->device, "%-8s");
    mf_emit_u64(e, "alloc_count", " %13llu", sc->alloc_count);
    mf_emit_json_u64(e, "free_count", sc->free_count);
    mf_emit_bytes(e, "alloc_bytes", sc->alloc_bytes, 11);
    if (sizes) {
        mf_emit_bytes(e, "min_size", sc->min_size, 11);
        mf_emit_bytes(e, "max_size", sc->max_size, 11);
        /* the mean of sizes near 2^64 rounds to 2^64, past uint64_t */
        mf_emit_table_bytes(e, r->avg < 18446744073709549568.0 ? (uint64_t)(r->avg + 0.5)
                                                                : UINT64_MAX, 11);
    } else {
        mf_emit_json_u64(e, "min_size", sc->min_size);
        mf_emit_json_u64(e, "max_size", sc->max_size);
    }
    mf_emit_json_double(e, "avg_size", r->avg);
    mf_emit_bytes(e, "peak_live_bytes", sc->peak_live_bytes, 11);
    mf_emit_json_u64(e, "peak_live_time_ns", rel_ns(s->model, sc->peak_live_time_ns));
    mf_emit_bytes(e, "live_bytes_end", sc->live_bytes_end, 12);
    mf_emit_json_u64(e, "live_count_end", sc->live_count_end);
}

static void scopes(const mf_stats *s, mf_emitter *e)
{
    size_t w = name_width(s->scopes, s->n_scopes, 24);
    mf_emit_table_title(e, "Scopes");
    mf_emit_table_cell(e, "Name", w);
    mf_emit_table_printf(e, "Device     Total Count   Total Use     Min Use     Max Use     Avg Use"
                            "   Peak Live  Never Freed\n");
    mf_emit_array_begin(e, "scopes");
    mf_emit_lines(e);
    for (size_t i = 0; i < s->n_scopes; i++) {
        mf_emit_object_begin(e, NULL);
        mf_emit_text(e, "scope", s->scopes[i].name, w);
        keyed_counts(s, e, &s->scopes[i], 1);
        mf_emit_table_printf(e, "\n");
        mf_emit_close(e);
    }
    mf_emit_close(e);
    mf_emit_table_printf(e, "\n");
}

/* The table's sub-blocks section, when there are any: per device, then by
 * scope (JSON has them in each device). */
static void subblocks_table(const mf_stats *s, mf_emitter *e)
{
    const mf_model *m = s->model;
    int any = 0;
    for (size_t i = 0; i < m->n_devices; i++)
        any |= m->devices[i].sub.alloc_count != 0;
    if (!any || mf_emit_json(e))
        return;
    mf_emit_table_title(e, "Sub-blocks (regions inside other blocks: PyTorch's tensors, the "
                           "NVTX memory API; not in the counts above)");
    mf_emit_table_printf(e, "Device   Scope                         Count   Total Use   Peak Live"
                            "  Never Freed\n");
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        char dev[16];
        if (!d->sub.alloc_count)
            continue;
        mf_emit_table_printf(e, "%-8s %-24s %10llu",
                             mf_model_device_name(d->device, dev, sizeof dev), "(all)",
                             (unsigned long long)d->sub.alloc_count);
        mf_emit_table_bytes(e, d->sub.alloc_bytes, 11);
        mf_emit_table_bytes(e, d->sub.peak_bytes, 11);
        mf_emit_table_bytes(e, d->sub.live_bytes_end, 12);
        mf_emit_table_printf(e, "\n");
        for (size_t j = 0; j < d->n_sub_scopes; j++) {
            const mf_scope_stat *sc = &d->sub_scopes[j];
            mf_emit_table_printf(e, "%-8s ", "");
            mf_emit_table_cell(e, mf_model_string(m, sc->scope), 24);
            mf_emit_table_printf(e, "%10llu", (unsigned long long)sc->alloc_count);
            mf_emit_table_bytes(e, sc->alloc_bytes, 11);
            mf_emit_table_bytes(e, sc->peak_live_bytes, 11);
            mf_emit_table_bytes(e, sc->live_bytes_end, 12);
            mf_emit_table_printf(e, "\n");
        }
    }
    mf_emit_table_printf(e, "\n");
}

static void frames_json(const mf_stats *s, mf_emitter *e, const mf_stats_row *r)
{
    mf_sites *all = s->model->sites;
    const mf_site *site = mf_sites_get(all, r->scope->scope);
    mf_site_frame frames[JSON_SITE_FRAMES];
    size_t n = mf_sites_frames(all, site->stack, frames, JSON_SITE_FRAMES);
    mf_emit_array_begin(e, "frames");
    for (size_t f = 0; f < n; f++) {
        mf_emit_object_begin(e, NULL);
        mf_emit_json_str(e, "function", frames[f].function ? frames[f].function : "?");
        mf_emit_json_str(e, "file", frames[f].file);
        mf_emit_json_u64(e, "line", frames[f].line);
        mf_emit_json_str(e, "module", frames[f].module);
        mf_emit_close(e);
    }
    mf_emit_close(e);
}

/* The allocation sites: all in JSON, the first MAX_TEXT_SITES in the
 * table, in the sort order. */
static void sites(const mf_stats *s, mf_emitter *e)
{
    if (!s->has_sites)
        return;
    size_t n = mf_emit_json(e) || s->n_sites < MAX_TEXT_SITES ? s->n_sites : MAX_TEXT_SITES;
    size_t w = name_width(s->sites, n, 24);
    char title[160];
    snprintf(title, sizeof title, "Top allocation sites (%zu of %zu, by %s)", n, s->n_sites,
             mf_stats_sort_name(s->sort_by));
    mf_emit_table_title(e, title);
    mf_emit_table_cell(e, "Site", w);
    mf_emit_table_printf(e, "Device     Total Count   Total Use   Peak Live  Never Freed\n");
    mf_emit_array_begin(e, "sites");
    mf_emit_lines(e);
    for (size_t i = 0; i < n; i++) {
        mf_emit_object_begin(e, NULL);
        mf_emit_text(e, "site", s->sites[i].name, w);
        keyed_counts(s, e, &s->sites[i], 0);
        frames_json(s, e, &s->sites[i]);
        mf_emit_table_printf(e, "\n");
        mf_emit_close(e);
    }
    mf_emit_close(e);
    mf_emit_table_printf(e, "\n");
}

/* ---- at the peak ------------------------------------------------------------------ */

/* Who held a peak of peak_bytes: all in JSON; in the table the first
 * `most`, then the rest summed. */
static void holders_upto(mf_emitter *e, uint64_t peak_bytes, const mf_stats_holder *h,
                         size_t n, const char *key, const char *what, const char *indent,
                         size_t most)
{
    uint64_t other_bytes = 0, other_blocks = 0;
    double peak = (double)peak_bytes;
    mf_emit_array_begin(e, key);
    for (size_t j = 0; j < n; j++) {
        if (j >= most && !mf_emit_json(e)) {
            other_bytes += h[j].bytes;
            other_blocks += h[j].blocks;
            continue;
        }
        mf_emit_object_begin(e, NULL);
        mf_emit_json_str(e, what, h[j].name);
        mf_emit_json_u64(e, "bytes", h[j].bytes);
        mf_emit_json_u64(e, "blocks", h[j].blocks);
        mf_emit_table_printf(e, "%s%16llu bytes %6.2f%% %8llu blocks  ", indent,
                             (unsigned long long)h[j].bytes, 100.0 * (double)h[j].bytes / peak,
                             (unsigned long long)h[j].blocks);
        mf_emit_table_text(e, h[j].name);
        mf_emit_table_printf(e, "\n");
        mf_emit_close(e);
    }
    mf_emit_close(e);
    if (n > most)
        mf_emit_table_printf(e, "%s%16llu bytes %6.2f%% %8llu blocks  (%zu other %ss)\n", indent,
                             (unsigned long long)other_bytes, 100.0 * (double)other_bytes / peak,
                             (unsigned long long)other_blocks, n - most, what);
}

static void holders(mf_emitter *e, const mf_device_model *d, const mf_stats_holder *h, size_t n,
                    const char *key, const char *what, const char *indent)
{
    holders_upto(e, d->peak_bytes, h, n, key, what, indent, MAX_TEXT_HOLDERS);
}

/* A device's tensors (sub-blocks within its segments) at their own peak,
 * by role and by name. */
static void tensors_at_peak(const mf_stats *s, mf_emitter *e, const mf_stats_peak *p)
{
    const mf_device_model *d = p->dev;
    char human[32];
    mf_emit_object_begin(e, "tensors");
    mf_emit_u64(e, "peak_bytes", "  tensors (sub-blocks within its segments): their peak %llu bytes",
                d->sub.peak_bytes);
    mf_emit_json_u64(e, "peak_time_ns", rel_ns(s->model, d->sub.peak_time_ns));
    mf_emit_table_printf(e, " (%s) at %.6f ms\n",
                         mf_format_bytes(d->sub.peak_bytes, human, sizeof human),
                         (double)rel_ns(s->model, d->sub.peak_time_ns) / 1e6);
    mf_emit_table_printf(e, "    tensors by role:\n");
    holders_upto(e, d->sub.peak_bytes, p->tensor_by_role, p->n_tensor_by_role, "by_role",
                 "role", "      ", MAX_TEXT_HOLDERS);
    mf_emit_table_printf(e, "    tensors by name (the first %d):\n", MAX_TEXT_NAMES);
    holders_upto(e, d->sub.peak_bytes, p->tensor_by_name, p->n_tensor_by_name, "by_name",
                 "name", "      ", MAX_TEXT_NAMES);
    mf_emit_close(e);
}

static void at_peak(const mf_stats *s, mf_emitter *e)
{
    mf_emit_table_title(e, "At the peak (all processes together)");
    mf_emit_array_begin(e, "at_peak");
    mf_emit_lines(e);
    for (size_t i = 0; i < s->n_peaks; i++) {
        const mf_stats_peak *p = &s->peaks[i];
        const mf_device_model *d = p->dev;
        char human[32];
        mf_emit_object_begin(e, NULL);
        device(e, d->device, "%s: ");
        mf_emit_u64(e, "peak_bytes", "peak %llu bytes", d->peak_bytes);
        mf_emit_json_u64(e, "peak_time_ns", rel_ns(s->model, d->peak_time_ns));
        mf_emit_table_printf(e, " (%s) at %.6f ms\n",
                             mf_format_bytes(d->peak_bytes, human, sizeof human),
                             (double)rel_ns(s->model, d->peak_time_ns) / 1e6);
        holders(e, d, p->holders, p->n_holders, "holders", "scope", "  ");
        if (s->has_sites) {
            mf_emit_table_printf(e, "  by site:\n");
            holders(e, d, p->by_site, p->n_by_site, "by_site", "site", "    ");
        }
        int tensors = p->n_by_role > 1 || (p->n_by_role == 1 && p->by_role[0].scope->scope);
        if (tensors)
            mf_emit_table_printf(e, "  by role:\n");
        if (tensors || mf_emit_json(e))
            holders(e, d, p->by_role, p->n_by_role, "by_role", "role", "    ");
        if (tensors)
            mf_emit_table_printf(e, "  by tensor name (the first %d):\n", MAX_TEXT_NAMES);
        if (tensors || mf_emit_json(e))
            holders_upto(e, d->peak_bytes, p->by_name, p->n_by_name, "by_name", "name", "    ",
                         MAX_TEXT_NAMES);
        if (d->sub.alloc_count)
            tensors_at_peak(s, e, p);
        mf_emit_close(e);
    }
    mf_emit_close(e);
    mf_emit_table_printf(e, "\n");
}

/* ---- steps ------------------------------------------------------------------------- */

/* The step with the highest peak of steps[0..n) (n > 0). */
static size_t highest_step(const mf_step_stat *steps, size_t n)
{
    size_t top = 0;
    for (size_t j = 1; j < n; j++)
        top = steps[j].peak_bytes > steps[top].peak_bytes ? j : top;
    return top;
}

/* One owner's steps (a device's blocks, or its tensors): in the table the
 * first MAX_TEXT_STEPS and the one with the highest peak; JSON all. */
static void step_rows(const mf_stats *s, mf_emitter *e, const mf_step_stat *steps, size_t n,
                      uint64_t dropped, const char *indent)
{
    const mf_model *m = s->model;
    size_t top = highest_step(steps, n);
    mf_emit_table_printf(e, "%s%8s %12s %12s %11s %11s %11s %9s\n", indent, "Step",
                         "Start (ms)", "End (ms)", "At start", "Peak", "Allocated", "Blocks");
    mf_emit_json_u64(e, "dropped", dropped);
    mf_emit_array_begin(e, "steps");
    for (size_t j = 0; j < n; j++) {
        const mf_step_stat *st = &steps[j];
        if (j >= MAX_TEXT_STEPS && j != top && !mf_emit_json(e))
            continue;
        uint64_t end = st->end_ns == UINT64_MAX ? m->t1_ns : st->end_ns;
        mf_emit_object_begin(e, NULL);
        mf_emit_table_printf(e, "%s", indent);
        mf_emit_u64(e, "step", "%8llu", st->number);
        mf_emit_json_u64(e, "start_ns", rel_ns(m, st->start_ns));
        mf_emit_json_u64(e, "end_ns", rel_ns(m, end));
        mf_emit_table_printf(e, " %12.3f %12.3f", (double)rel_ns(m, st->start_ns) / 1e6,
                             (double)rel_ns(m, end) / 1e6);
        mf_emit_bytes(e, "held_start", st->held_start, 11);
        mf_emit_bytes(e, "peak_bytes", st->peak_bytes, 11);
        mf_emit_json_u64(e, "peak_time_ns", rel_ns(m, st->peak_time_ns));
        mf_emit_bytes(e, "alloc_bytes", st->alloc_bytes, 11);
        mf_emit_u64(e, "alloc_count", " %9llu", st->alloc_count);
        mf_emit_table_printf(e, "%s\n", j == top ? "  <- highest peak" : "");
        mf_emit_close(e);
    }
    mf_emit_close(e);
    if (n > MAX_TEXT_STEPS)
        mf_emit_table_printf(e, "%s(%zu steps in all; stats.json lists every one)\n", indent,
                             n);
}

/* Each device's steps (from one step mark to the next), and apart those of
 * its tensors (sub-blocks within its segments) when it has any. */
static void steps(const mf_stats *s, mf_emitter *e)
{
    const mf_model *m = s->model;
    int any = 0;
    for (size_t i = 0; i < m->n_devices; i++)
        any |= m->devices[i].n_steps != 0;
    if (any)
        mf_emit_table_title(e, "Steps (from one optimizer step's mark to the next)");
    mf_emit_array_begin(e, "steps");
    mf_emit_lines(e);
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        if (!d->n_steps)
            continue;
        mf_emit_object_begin(e, NULL);
        device(e, d->device, "%s:");
        mf_emit_table_printf(e, " %zu steps, the highest peak in step %llu\n", d->n_steps,
                             (unsigned long long)d->steps[highest_step(d->steps, d->n_steps)]
                                 .number);
        step_rows(s, e, d->steps, d->n_steps, d->steps_dropped, "  ");
        if (d->sub.alloc_count && d->n_sub_steps) {
            mf_emit_object_begin(e, "tensors");
            mf_emit_table_printf(e, "  tensors (sub-blocks within its segments): the highest "
                                 "peak in step %llu\n",
                                 (unsigned long long)d->sub_steps[highest_step(
                                     d->sub_steps, d->n_sub_steps)].number);
            step_rows(s, e, d->sub_steps, d->n_sub_steps, d->sub_steps_dropped, "    ");
            mf_emit_close(e);
        }
        mf_emit_close(e);
    }
    mf_emit_close(e);
    if (any)
        mf_emit_table_printf(e, "\n");
}

/* Whether a growth is of a device's tensors (sub-blocks within its
 * segments, "tensors": true) or of its blocks; the table says "tensors in
 * gpu/0 at" before a tensors' site. */
static void tensors_of(mf_emitter *e, const mf_stats_growth *g)
{
    char dev[16];
    mf_emit_json_bool(e, "tensors", g->tensors);
    if (g->tensors)
        mf_emit_table_printf(e, "tensors in %s at ",
                             mf_model_device_name(g->dev->device, dev, sizeof dev));
}

/* What grew from step mark to step mark, by site (by scope without stacks). */
static void growth(const mf_stats *s, mf_emitter *e)
{
    const char *what = s->growth_by_site ? "site" : "scope";
    if (s->n_growth) {
        char title[128];
        snprintf(title, sizeof title, "Growth per step (by %s: held at each step mark; memory "
                 "that grows step after step)", what);
        mf_emit_table_title(e, title);
        mf_emit_table_printf(e, "  %11s %6s %11s %11s  %s\n", "Per step", "Grew", "First mark",
                             "Last mark", what);
    }
    mf_emit_array_begin(e, "growth");
    mf_emit_lines(e);
    for (size_t i = 0; i < s->n_growth; i++) {
        const mf_stats_growth *g = &s->growth[i];
        if (i >= MAX_TEXT_SITES && !mf_emit_json(e))
            break;
        char grew[32];
        snprintf(grew, sizeof grew, "%u/%u", g->key->marks_grew, g->key->marks - 1);
        mf_emit_object_begin(e, NULL);
        mf_emit_json_str(e, what, g->name);
        device(e, g->dev->device, "%.0s");
        mf_emit_json_double(e, "bytes_per_step", g->bytes_per_step);
        mf_emit_table_bytes(e, (uint64_t)(g->bytes_per_step + 0.5), 13);
        mf_emit_table_printf(e, " %6s", grew);
        mf_emit_json_u64(e, "marks", g->key->marks);
        mf_emit_json_u64(e, "marks_grew", g->key->marks_grew);
        mf_emit_bytes(e, "held_first_mark", g->key->held_first_mark, 11);
        mf_emit_bytes(e, "held_last_mark", g->key->held_last_mark, 11);
        mf_emit_table_printf(e, "  ");
        tensors_of(e, g);
        mf_emit_table_text(e, g->name);
        mf_emit_table_printf(e, "\n");
        mf_emit_close(e);
    }
    mf_emit_close(e);
    if (s->n_growth)
        mf_emit_table_printf(e, "\n");
}

/* ---- leaks and notes ---------------------------------------------------------------- */

static void leak(const mf_stats *s, mf_emitter *e, const mf_block *l)
{
    const mf_model *m = s->model;
    const char *thread = mf_model_thread_name(m, l->pid, l->tid);
    mf_emit_object_begin(e, NULL);
    mf_emit_json_str(e, "scope", mf_model_string(m, l->scope));
    mf_emit_json_str(e, "name", mf_model_string(m, l->name));
    mf_emit_json_str(e, "role", mf_role_name(l->role));
    device(e, l->device, "%-8s");
    mf_emit_json_printf(e, "address", "\"0x%llx\"", (unsigned long long)l->addr);
    mf_emit_table_printf(e, " %#18llx", (unsigned long long)l->addr);
    mf_emit_u64(e, "requested", " %16llu", l->requested);
    mf_emit_u64(e, "actual", " %16llu", l->actual);
    mf_emit_json_u64(e, "alloc_time_ns", rel_ns(m, l->alloc_ns));
    mf_emit_table_printf(e, " %13.6f", (double)rel_ns(m, l->alloc_ns) / 1e6);
    mf_emit_u64(e, "pid", "  %-6llu", l->pid);
    mf_emit_u64(e, "thread", "  %-6llu  ", l->tid);
    mf_emit_json_bool(e, "held_until_process_end", l->end == MF_BLOCK_PROCESS_ENDED);
    const char *site = s->has_sites ? mf_sites_get(m->sites,
                                                   mf_sites_of_stack(m->sites, l->stack))->name
                                    : NULL;
    if (site)
        mf_emit_json_str(e, "site", site);
    mf_emit_json_str(e, "thread_name", thread ? thread : "unknown");
    mf_emit_table_text(e, mf_model_string(m, l->scope));
    mf_emit_table_text(e, mf_model_string(m, l->name));
    if (site) {
        mf_emit_table_printf(e, "  at ");
        mf_emit_table_text(e, site);
    }
    mf_emit_table_printf(e, "\n");
    mf_emit_close(e);
}

/* A list of blocks never freed: JSON's key, the table's section. */
static void blocks(const mf_stats *s, mf_emitter *e, const char *key, const char *title,
                   const mf_block *b, size_t n)
{
    if (title)
        mf_emit_table_title(e, title);
    if (n == 0)
        mf_emit_table_printf(e, "none\n");
    else
        mf_emit_table_printf(e, "Device            Address        Requested           Actual"
                                "    Alloc (ms)  Pid     Thread  Scope / name\n");
    mf_emit_array_begin(e, key);
    mf_emit_lines(e);
    for (size_t i = 0; i < n; i++)
        leak(s, e, &b[i]);
    mf_emit_close(e);
    mf_emit_table_printf(e, "\n");
}

/* What grew at more than half the step marks: leaks, listed first. */
static void growing(const mf_stats *s, mf_emitter *e)
{
    const char *what = s->growth_by_site ? "site" : "scope";
    if (s->n_growing)
        mf_emit_table_printf(e, "Grew from step to step (at more than half the step marks):\n");
    mf_emit_array_begin(e, "growing");
    mf_emit_lines(e);
    for (size_t i = 0; i < s->n_growing; i++) {
        const mf_stats_growth *g = &s->growth[i];
        char per[32], last[32];
        mf_emit_object_begin(e, NULL);
        mf_emit_json_str(e, what, g->name);
        device(e, g->dev->device, "  %-8s");
        mf_emit_json_double(e, "bytes_per_step", g->bytes_per_step);
        mf_emit_json_u64(e, "marks", g->key->marks);
        mf_emit_json_u64(e, "marks_grew", g->key->marks_grew);
        mf_emit_json_u64(e, "held_last_mark", g->key->held_last_mark);
        mf_emit_table_printf(e, " +%s a step (grew at %u of %u), %s at the last mark  ",
                             mf_format_bytes((uint64_t)(g->bytes_per_step + 0.5), per,
                                             sizeof per),
                             g->key->marks_grew, g->key->marks - 1,
                             mf_format_bytes(g->key->held_last_mark, last, sizeof last));
        tensors_of(e, g);
        mf_emit_table_text(e, g->name);
        mf_emit_table_printf(e, "\n");
        mf_emit_close(e);
    }
    mf_emit_close(e);
    if (s->n_growing)
        mf_emit_table_printf(e, "Blocks never freed:\n");
}

/* What interpreters held at exit (not allocated by the program's own code):
 * not leaks, grouped by site (scope). */
static void held_at_exit(const mf_stats *s, mf_emitter *e)
{
    const char *what = s->has_sites ? "site" : "scope";
    if (s->n_held_at_exit) {
        char title[200];
        snprintf(title, sizeof title, "Held at exit (what Python interpreters had not freed when "
                 "they exited, outside the program's own code: not leaks; by %s)", what);
        mf_emit_table_title(e, title);
    }
    mf_emit_array_begin(e, "held_at_exit");
    mf_emit_lines(e);
    uint64_t rest_bytes = 0, rest_blocks = 0;
    for (size_t i = 0; i < s->n_held_at_exit; i++) {
        const mf_stats_holder *h = &s->held_at_exit[i];
        if (i >= MAX_TEXT_HOLDERS && !mf_emit_json(e)) {
            rest_bytes += h->bytes;
            rest_blocks += h->blocks;
            continue;
        }
        mf_emit_object_begin(e, NULL);
        mf_emit_json_str(e, what, h->name);
        device(e, h->dev->device, "%-8s");
        mf_emit_bytes(e, "bytes", h->bytes, 11);
        mf_emit_u64(e, "blocks", " %9llu blocks  ", h->blocks);
        mf_emit_table_text(e, h->name);
        mf_emit_table_printf(e, "\n");
        mf_emit_close(e);
    }
    mf_emit_close(e);
    if (s->n_held_at_exit > MAX_TEXT_HOLDERS) {
        char bytes[32];
        mf_emit_table_printf(e, "%-8s %11s %9llu blocks  (%zu other %ss)\n", "",
                             mf_format_bytes(rest_bytes, bytes, sizeof bytes),
                             (unsigned long long)rest_blocks,
                             s->n_held_at_exit - MAX_TEXT_HOLDERS, what);
    }
    if (s->n_held_at_exit)
        mf_emit_table_printf(e, "\n");
}

/* The leaks (what grew from step to step, then the largest blocks never
 * freed; of interpreters, only those of the program's own code); what
 * interpreters held at exit; then, in JSON always and in the table while a
 * process runs (or a window ends before the logs), the blocks live then:
 * live now, not leaks. */
static void leaks(const mf_stats *s, mf_emitter *e)
{
    char title[128];
    snprintf(title, sizeof title, "Leaks (largest blocks never freed, up to %zu)", s->max_leaks);
    if (s->n_growing) {
        mf_emit_table_title(e, title);
        growing(s, e);
        blocks(s, e, "leaks", NULL, s->leaks, s->n_leaks);
    } else {
        growing(s, e);
        blocks(s, e, "leaks", title, s->leaks, s->n_leaks);
    }
    held_at_exit(s, e);
    int cut = mf_model_cut(s->model);
    if (!s->running && !cut && !mf_emit_json(e))
        return;
    if (cut)
        snprintf(title, sizeof title, "Live at the window's end (largest blocks, up to %zu)",
                 s->max_leaks);
    else
        snprintf(title, sizeof title, "Live now (largest blocks of processes still running, "
                 "up to %zu)", s->max_leaks);
    blocks(s, e, "live_now", title, s->live_now, s->n_live_now);
}

static void notes(const mf_stats *s, mf_emitter *e)
{
    const mf_model *m = s->model;
    mf_emit_u64(e, "unknown_frees", "Unknown frees: %llu\n", s->unknown_frees);
    if (s->inherited_frees)
        mf_emit_u64(e, "inherited_frees", "Frees in forked children of blocks inherited from "
                                          "their parent: %llu\n", s->inherited_frees);
    else
        mf_emit_json_u64(e, "inherited_frees", 0);
    mf_emit_json_u64(e, "gpu_dropped", m->gpu_dropped);
    mf_emit_json_bool(e, "damaged", m->damaged);
    mf_emit_array_begin(e, "warnings");
    for (size_t i = 0; i < m->n_warnings; i++) {
        mf_emit_table_printf(e, "warning: ");
        mf_emit_text(e, NULL, m->warnings[i], 0);
        mf_emit_table_printf(e, "\n");
    }
    mf_emit_close(e);
}

void mf_stats_emit(const mf_stats *s, mf_emitter *e)
{
    mf_emit_begin(e);
    mf_emit_json_str(e, "sort_by", mf_stats_sort_name(s->sort_by));
    mf_emit_json_bool(e, "ascending", s->ascending);
    mf_emit_lines(e);
    processes(s, e);
    mf_stats_emit_ooms(s, e);
    devices(s, e);
    scopes(s, e);
    mf_stats_emit_gpu_memory(s, e);
    subblocks_table(s, e);
    sites(s, e);
    at_peak(s, e);
    steps(s, e);
    growth(s, e);
    leaks(s, e);
    notes(s, e);
    mf_emit_end(e);
}
