/*
 * stats_gpu.c - the statistics' GPU sections, through the same emitter
 * as the others (stats_sections.c calls them in their place):
 *   - "Out of memory at T": the post-mortem of each failed allocation
 *     (model_oom.h), the first section of all when there is one;
 *   - "GPU memory: reserved and allocated": where a GPU has sub-blocks
 *     (PyTorch's tensors inside its segments), both peaks per device, per
 *     scope and per site, and what PyTorch's allocator history said (its
 *     time axis, where scopes came from, its offset against CUPTI).
 * docs/OUTPUTS.md describes every line and key.
 */
#include <stdio.h>
#include <string.h>

#include "emitter.h"
#include "sites.h"
#include "stats.h"
#include "units.h"

/* The name of a share's id: a scope, or a site. */
static const char *share_name(const mf_model *m, uint32_t id, int site)
{
    return site ? mf_sites_get(m->sites, id)->name : mf_model_string(m, id);
}

/* Shares of what was live: JSON all of them, the table one a line. */
static void shares(const mf_model *m, mf_emitter *e, const char *key, const char *title,
                   const mf_oom_share *v, size_t n, uint64_t whole, int site, const char *what)
{
    mf_emit_table_printf(e, "%s%s\n", title, n ? "" : " none");
    mf_emit_array_begin(e, key);
    for (size_t i = 0; i < n; i++) {
        const char *name = share_name(m, v[i].id, site);
        mf_emit_object_begin(e, NULL);
        mf_emit_json_str(e, site ? "site" : "scope", name);
        mf_emit_json_u64(e, "bytes", v[i].bytes);
        mf_emit_json_u64(e, "count", v[i].count);
        mf_emit_table_printf(e, "  %16llu bytes %6.2f%% %8llu %s  ",
                             (unsigned long long)v[i].bytes,
                             whole ? 100.0 * (double)v[i].bytes / (double)whole : 0.0,
                             (unsigned long long)v[i].count, what);
        mf_emit_table_text(e, name);
        mf_emit_table_printf(e, "\n");
        mf_emit_close(e);
    }
    mf_emit_close(e);
}

/* Whether the request would have fitted in the largest free gap. */
static const char *gap_verdict(const mf_oom *o)
{
    if (o->largest_gap >= o->requested)
        return "the request fits in it: the segments had room, in the wrong place for the "
               "allocator's rules (its size classes, streams, or the block split)";
    return "the request does not fit in it";
}

static void oom_one(const mf_stats *s, mf_emitter *e, const mf_oom *o)
{
    const mf_model *m = s->model;
    char dev[16], a[32], b[32], c[32];
    const char *what = o->tensors ? "tensors" : "blocks";
    mf_emit_object_begin(e, NULL);
    uint64_t at = mf_stats_rel_ns(m, o->time_ns);
    mf_emit_json_u64(e, "time_ns", at);
    char title[96];
    snprintf(title, sizeof title, "Out of memory at %.6f ms", (double)at / 1e6);
    mf_emit_table_title(e, title);
    mf_emit_name(e, "device", "%s", mf_model_device_name(o->device, dev, sizeof dev));
    mf_emit_u64(e, "pid", " (pid %llu)", o->pid);
    mf_emit_json_str(e, "route", mf_oom_route_key(o->route));
    if (o->route == MF_OOM_KILLED)
        mf_emit_table_printf(e, ": killed by the kernel's or a cgroup's OOM killer (%s)",
                             mf_oom_route_name(o->route));
    else
        mf_emit_table_printf(e, ", seen by %s: %s (%llu bytes) were asked for",
                             mf_oom_route_name(o->route), mf_format_bytes(o->requested, a, sizeof a),
                             (unsigned long long)o->requested);
    mf_emit_json_u64(e, "requested", o->requested);
    if (o->device_free != UINT64_MAX) {
        mf_emit_table_printf(e, "; the device had %s free",
                             mf_format_bytes(o->device_free, b, sizeof b));
        mf_emit_json_u64(e, "device_free", o->device_free);
    } else {
        mf_emit_json_printf(e, "device_free", "null");
    }
    mf_emit_json_u64(e, "device_limit", o->device_limit);
    mf_emit_table_printf(e, "\n  in scope ");
    mf_emit_text(e, "scope", mf_model_string(m, o->scope), 0);
    if (m->sites) {
        mf_emit_table_printf(e, ", at ");
        mf_emit_text(e, "site", mf_sites_get(m->sites, o->site)->name, 0);
    }
    if (o->tensors)
        mf_emit_table_printf(e, "\n  reserved %s in %llu blocks, allocated %s in %llu %s",
                             mf_format_bytes(o->reserved_bytes, a, sizeof a),
                             (unsigned long long)o->reserved_count,
                             mf_format_bytes(o->allocated_bytes, b, sizeof b),
                             (unsigned long long)o->allocated_count, what);
    else
        mf_emit_table_printf(e, "\n  held %s in %llu blocks",
                             mf_format_bytes(o->reserved_bytes, a, sizeof a),
                             (unsigned long long)o->reserved_count);
    mf_emit_json_u64(e, "reserved_bytes", o->reserved_bytes);
    mf_emit_json_u64(e, "reserved_count", o->reserved_count);
    mf_emit_json_u64(e, "allocated_bytes", o->allocated_bytes);
    mf_emit_json_u64(e, "allocated_count", o->allocated_count);
    mf_emit_json_bool(e, "tensors", o->tensors);
    if (o->tensors) {
        mf_emit_table_printf(e, "; the largest free gap inside the segments is %s: %s",
                             mf_format_bytes(o->largest_gap, c, sizeof c), gap_verdict(o));
        mf_emit_json_u64(e, "largest_gap", o->largest_gap);
    } else {
        mf_emit_json_printf(e, "largest_gap", "null");
    }
    mf_emit_table_printf(e, "\n");
    uint64_t live = o->tensors ? o->allocated_bytes : o->reserved_bytes;
    shares(m, e, "by_scope", "  live by scope:", o->by_scope, o->n_by_scope, live, 0, what);
    if (m->sites)
        shares(m, e, "by_site", "  live by site:", o->by_site, o->n_by_site, live, 1, what);
    char grew[160];
    snprintf(grew, sizeof grew, "  grew in the last tenth of the time (since %.6f ms, live "
             "then, allocated since): %s", (double)mf_stats_rel_ns(m, o->grew_since_ns) / 1e6,
             mf_format_bytes(o->grew_bytes, a, sizeof a));
    mf_emit_json_u64(e, "grew_since_ns", mf_stats_rel_ns(m, o->grew_since_ns));
    mf_emit_json_u64(e, "grew_bytes", o->grew_bytes);
    shares(m, e, "grew", grew, o->grew, o->n_grew, o->grew_bytes, 0, what);
    mf_emit_table_printf(e, "\n");
    mf_emit_close(e);
}

void mf_stats_emit_ooms(const mf_stats *s, mf_emitter *e)
{
    const mf_model *m = s->model;
    mf_emit_array_begin(e, "ooms");
    for (size_t i = 0; i < m->n_ooms; i++)
        oom_one(s, e, &m->ooms[i]);
    mf_emit_close(e);
    mf_emit_json_u64(e, "ooms_total", m->ooms_total);
    if (m->ooms_total > m->n_ooms)
        mf_emit_table_printf(e, "(%llu more out-of-memory errors not shown)\n\n",
                             (unsigned long long)(m->ooms_total - m->n_ooms));
}

/* ---- reserved and allocated ---- */

static int any_tensors(const mf_model *m)
{
    for (size_t i = 0; i < m->n_devices; i++)
        if (MF_DEVICE_KIND(m->devices[i].device) == MF_DEVICE_GPU && m->devices[i].sub.alloc_count)
            return 1;
    return 0;
}

/* One row: a key's reserved peak (its blocks) and allocated peak (its
 * sub-blocks); either may be missing. */
static void both_row(const mf_model *m, mf_emitter *e, const char *key, const char *name,
                     uint16_t device, const mf_scope_stat *res, const mf_scope_stat *alloc)
{
    char dev[16];
    mf_emit_object_begin(e, NULL);
    mf_emit_text(e, key, name, 28);
    mf_emit_name(e, "device", " %-8s", mf_model_device_name(device, dev, sizeof dev));
    mf_emit_bytes(e, "reserved_peak_bytes", res ? res->peak_live_bytes : 0, 15);
    mf_emit_bytes(e, "allocated_peak_bytes", alloc ? alloc->peak_live_bytes : 0, 15);
    mf_emit_u64(e, "tensors", " %10llu", alloc ? alloc->alloc_count : 0);
    mf_emit_json_u64(e, "reserved_peak_time_ns", res ? mf_stats_rel_ns(m, res->peak_live_time_ns) : 0);
    mf_emit_json_u64(e, "allocated_peak_time_ns",
                     alloc ? mf_stats_rel_ns(m, alloc->peak_live_time_ns) : 0);
    mf_emit_table_printf(e, "\n");
    mf_emit_close(e);
}

/* The union of two lists sorted by key (scopes or sites), one row each. */
static void both(const mf_model *m, mf_emitter *e, const char *key, uint16_t device,
                 const mf_scope_stat *res, size_t n_res, const mf_scope_stat *alloc,
                 size_t n_alloc, int site)
{
    size_t i = 0, j = 0;
    while (i < n_res || j < n_alloc) {
        uint32_t a = i < n_res ? res[i].scope : UINT32_MAX;
        uint32_t b = j < n_alloc ? alloc[j].scope : UINT32_MAX;
        uint32_t id = a < b ? a : b;
        const mf_scope_stat *r = a == id ? &res[i++] : NULL;
        const mf_scope_stat *t = b == id ? &alloc[j++] : NULL;
        both_row(m, e, key, site ? mf_sites_get(m->sites, id)->name : mf_model_string(m, id),
                 device, r, t);
    }
}

/* Every GPU with tensors: its scopes (site 0) or sites (site 1), both peaks. */
static void keyed_rows(const mf_model *m, mf_emitter *e, int site)
{
    mf_emit_table_printf(e, "\n");
    mf_emit_table_cell(e, site ? "Site" : "Scope", 28);
    mf_emit_table_printf(e, " Device     Reserved peak Allocated peak    Tensors\n");
    mf_emit_array_begin(e, site ? "gpu_sites" : "gpu_scopes");
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        if (MF_DEVICE_KIND(d->device) != MF_DEVICE_GPU || !d->sub.alloc_count)
            continue;
        if (site)
            both(m, e, "site", d->device, d->sites, d->n_sites, d->sub_sites, d->n_sub_sites, 1);
        else
            both(m, e, "scope", d->device, d->scopes, d->n_scopes, d->sub_scopes,
                 d->n_sub_scopes, 0);
    }
    mf_emit_close(e);
}

static void device_line(const mf_stats *s, mf_emitter *e, const mf_device_model *d)
{
    const mf_model *m = s->model;
    char dev[16];
    mf_emit_object_begin(e, NULL);
    mf_emit_name(e, "device", "%-8s", mf_model_device_name(d->device, dev, sizeof dev));
    uint64_t at_res = mf_stats_rel_ns(m, d->peak_time_ns);
    uint64_t at_alloc = mf_stats_rel_ns(m, d->sub.peak_time_ns);
    mf_emit_bytes(e, "reserved_peak_bytes", d->peak_bytes, 15);
    mf_emit_json_u64(e, "reserved_peak_time_ns", at_res);
    mf_emit_table_printf(e, " %11.3f", (double)at_res / 1e3);
    mf_emit_bytes(e, "allocated_peak_bytes", d->sub.peak_bytes, 15);
    mf_emit_json_u64(e, "allocated_peak_time_ns", at_alloc);
    mf_emit_table_printf(e, " %11.3f", (double)at_alloc / 1e3);
    mf_emit_u64(e, "tensors", " %10llu", d->sub.alloc_count);
    mf_emit_u64(e, "from_cache", " %10llu", d->sub.reused_count);
    mf_emit_u64(e, "before_recording", " %10llu", d->sub.before_count);
    mf_emit_json_u64(e, "before_recording_bytes", d->sub.before_bytes);
    mf_emit_table_printf(e, "\n");
    mf_emit_close(e);
}

static void torch_json(const mf_model *m, mf_emitter *e)
{
    const mf_torch_info *t = &m->torch;
    static const char *const scopes[] = { "none", "user_metadata", "by_time" };
    static const char *const off[] = { "", "other_tool", "too_old", "failed" };
    mf_emit_object_begin(e, "pytorch");
    mf_emit_json_bool(e, "history", t->history);
    mf_emit_json_str(e, "time_axis", t->event_order ? "event_order" : "time");
    mf_emit_json_str(e, "scopes", t->scopes <= 2 ? scopes[t->scopes] : "none");
    mf_emit_json_str(e, "off", t->off <= 3 ? off[t->off] : "");
    mf_emit_json_u64(e, "ring_entries", t->ring);
    mf_emit_json_u64(e, "inconsistent", t->inconsistent);
    mf_emit_json_u64(e, "segments_matched", t->matched);
    mf_emit_json_u64(e, "segments_unmatched", t->unmatched);
    mf_emit_json_i64(e, "offset_mean_ns", t->matched ? t->offset_sum_ns / (int64_t)t->matched : 0);
    mf_emit_json_i64(e, "offset_min_ns", t->offset_min_ns);
    mf_emit_json_i64(e, "offset_max_ns", t->offset_max_ns);
    mf_emit_close(e);
}

static const char *off_text(unsigned off)
{
    switch (off) {
    case MF_TORCH_OFF_OTHER_TOOL: return "another tool recorded it";
    case MF_TORCH_OFF_TOO_OLD: return "this torch has no timed history: torch >= 2.2 has it";
    case MF_TORCH_OFF_FAILED: return "turning it on failed";
    }
    return "unknown";
}

/* What the table says of the history: one line each. */
static void torch_table(const mf_model *m, mf_emitter *e)
{
    const mf_torch_info *t = &m->torch;
    if (t->event_order)
        mf_emit_table_printf(e, "Time axis: the order of PyTorch's allocator events, 1 us apart "
                                "(the snapshot has no time_us)\n");
    if (t->scopes == MF_TORCH_SCOPES_METADATA)
        mf_emit_table_printf(e, "Tensor scopes: exact (torch's allocator metadata, set to the "
                                "module scope as it changed)\n");
    else if (t->scopes == MF_TORCH_SCOPES_BY_TIME)
        mf_emit_table_printf(e, "Tensor scopes: the scope current at each event's time on the "
                                "thread that ran the modules (this torch has no "
                                "_set_memory_metadata)\n");
    if (t->ring)
        mf_emit_table_printf(e, "Live allocator history: a ring of %llu entries\n",
                             (unsigned long long)t->ring);
    if (t->matched)
        mf_emit_table_printf(e, "History against CUPTI: %llu segments matched by address, "
                                "offset %.3f us mean, %.3f .. %.3f us (%llu unmatched)\n",
                             (unsigned long long)t->matched,
                             (double)t->offset_sum_ns / (double)t->matched / 1e3,
                             (double)t->offset_min_ns / 1e3, (double)t->offset_max_ns / 1e3,
                             (unsigned long long)t->unmatched);
    if (t->inconsistent)
        mf_emit_table_printf(e, "History entries that contradict its state: %llu\n",
                             (unsigned long long)t->inconsistent);
}

void mf_stats_emit_gpu_memory(const mf_stats *s, mf_emitter *e)
{
    const mf_model *m = s->model;
    torch_json(m, e);
    if (!any_tensors(m)) {
        if (m->torch.off)
            mf_emit_table_printf(e, "PyTorch's allocator history was off (%s): GPU memory is "
                                    "the segments CUPTI saw\n\n", off_text(m->torch.off));
        if (mf_emit_json(e)) {
            mf_emit_array_begin(e, "gpu_memory");
            mf_emit_close(e);
        }
        return;
    }
    mf_emit_table_title(e, "GPU memory: reserved (segments) and allocated (tensors)");
    torch_table(m, e);
    mf_emit_table_printf(e, "Device     Reserved peak     at (us)  Allocated peak     at (us)"
                            "    Tensors From cache     Before\n");
    mf_emit_array_begin(e, "gpu_memory");
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        if (MF_DEVICE_KIND(d->device) != MF_DEVICE_GPU || !d->sub.alloc_count)
            continue;
        device_line(s, e, d);
    }
    mf_emit_close(e);
    keyed_rows(m, e, 0);
    if (m->sites)
        keyed_rows(m, e, 1);
    mf_emit_table_printf(e, "\n");
}
