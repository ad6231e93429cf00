/*
 * svg_curve.c - the occupancy curve above each map: the device line, the
 * live bytes from the events (shaded, with a min/max line), the allocator /
 * driver samples (off scale when far above), byte ticks, the peak marker,
 * and hover rectangles with the values.  Both series are downsampled to the
 * lowest and highest value of each pixel column, so peaks survive any
 * number of events.  See svg_panel.h.
 */
#include "svg_panel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TICKS 64

/* Per pixel column: the value entering it and the min and max inside it. */
typedef struct envelope {
    uint64_t *enter, *lo, *hi;
    int first, last;          /* columns that have data */
} envelope;

static int column_of(const mf_svg_panel *panel, uint64_t t)
{
    int c = (int)floor(mf_svg_time_x(&panel->time, t)) - MF_SVG_PLOT_X0;
    int w = MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0;
    return c < 0 ? 0 : c >= w ? w - 1 : c;
}

/*
 * Envelope of a step series (time[i], value[i]) read through get(i).
 * Before the first point the value is start; after the last it carries to
 * the right edge when carry is set (events), else the series ends there.
 */
typedef uint64_t (*series_get)(const mf_svg_panel *panel, size_t i, uint64_t *time);

static int build_envelope(const mf_svg_panel *panel, size_t n, series_get get, int from_start,
                          int carry, envelope *env)
{
    int w = MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0;
    env->enter = malloc(3 * (size_t)w * sizeof(uint64_t));
    if (!env->enter)
        return -1;
    env->lo = env->enter + w;
    env->hi = env->lo + w;
    uint64_t cur = 0, t;
    int col = 0;
    env->first = from_start || n == 0 ? 0 : column_of(panel, (get(panel, 0, &t), t));
    col = env->first;
    env->enter[col] = env->lo[col] = env->hi[col] = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = get(panel, i, &t);
        int c = column_of(panel, t);
        while (col < c) {
            col++;
            env->enter[col] = env->lo[col] = env->hi[col] = cur;
        }
        if (i == 0 && !from_start)
            env->enter[col] = env->lo[col] = env->hi[col] = v;
        cur = v;
        env->lo[col] = v < env->lo[col] ? v : env->lo[col];
        env->hi[col] = v > env->hi[col] ? v : env->hi[col];
    }
    env->last = carry ? w - 1 : col;
    while (col < env->last) {
        col++;
        env->enter[col] = env->lo[col] = env->hi[col] = cur;
    }
    return 0;
}

static uint64_t occupancy_get(const mf_svg_panel *panel, size_t i, uint64_t *time)
{
    *time = panel->dev->occupancy[i].time_ns;
    return panel->dev->occupancy[i].live_bytes;
}

/* Which snapshot value is the allocator's / driver's view for this device. */
size_t mf_svg_sample_index(const mf_view *dev)
{
    if (MF_DEVICE_KIND(dev->device) == MF_DEVICE_GPU)
        return MF_SAMPLE_GPU_USED;
    for (size_t i = 0; i < dev->n_snapshots; i++)
        if (dev->snapshots[i].value[MF_SAMPLE_ACTIVE])
            return MF_SAMPLE_ACTIVE;
    return MF_SAMPLE_RESIDENT;
}

static uint64_t snapshot_get(const mf_svg_panel *panel, size_t i, uint64_t *time)
{
    *time = panel->dev->snapshots[i].time_ns;
    return panel->dev->snapshots[i].value[mf_svg_sample_index(panel->dev)];
}

typedef struct curve_scale {
    double top, bottom;
    uint64_t max;             /* value at top */
} curve_scale;

static double curve_y(const curve_scale *s, uint64_t v)
{
    return s->bottom - (double)v / (double)s->max * (s->bottom - s->top);
}

/* The min/max polyline of an envelope; fill closes it down to the axis. */
static void envelope_path(cairo_t *cr, const envelope *env, const curve_scale *s, int fill)
{
    double x0 = MF_SVG_PLOT_X0;
    if (fill) {
        cairo_move_to(cr, x0 + env->first, s->bottom);
        for (int c = env->first; c <= env->last; c++) {
            cairo_line_to(cr, x0 + c, curve_y(s, env->hi[c]));
            cairo_line_to(cr, x0 + c + 1, curve_y(s, env->hi[c]));
        }
        cairo_line_to(cr, x0 + env->last + 1, s->bottom);
        cairo_close_path(cr);
        return;
    }
    cairo_move_to(cr, x0 + env->first, curve_y(s, env->enter[env->first]));
    for (int c = env->first; c <= env->last; c++) {
        uint64_t exit = c < env->last ? env->enter[c + 1] : env->hi[c];
        int rising = exit >= env->enter[c];
        cairo_line_to(cr, x0 + c + 0.5, curve_y(s, rising ? env->lo[c] : env->hi[c]));
        cairo_line_to(cr, x0 + c + 0.5, curve_y(s, rising ? env->hi[c] : env->lo[c]));
    }
}

/* The most live bytes by the events. */
static uint64_t events_max(const mf_view *dev)
{
    uint64_t max = dev->peak_bytes;
    for (size_t i = 0; i < dev->n_occupancy; i++)
        max = dev->occupancy[i].live_bytes > max ? dev->occupancy[i].live_bytes : max;
    return max;
}

/* The highest allocator / driver sample (0 without samples). */
uint64_t mf_svg_samples_max(const mf_view *dev)
{
    uint64_t max = 0;
    size_t k = mf_svg_sample_index(dev);
    for (size_t i = 0; i < dev->n_snapshots; i++)
        max = dev->snapshots[i].value[k] > max ? dev->snapshots[i].value[k] : max;
    return max;
}

/* Samples more than this many times the events' maximum (a GPU driver's
 * context, another process) go off scale rather than flatten the events. */
#define OFF_SCALE_FACTOR 4

int mf_svg_samples_off_scale(const mf_view *dev)
{
    uint64_t events = events_max(dev);
    return events > 0 && mf_svg_samples_max(dev) / OFF_SCALE_FACTOR > events;
}

/* The value at the top of the curve: 10% over what is drawn on scale. */
static uint64_t curve_max(const mf_view *dev)
{
    uint64_t max = events_max(dev), samples = mf_svg_samples_max(dev);
    if (!mf_svg_samples_off_scale(dev) && samples > max)
        max = samples;
    return max ? max + max / 10 : 1;
}

/* "pid 1234 (./prog): " or "3 other processes: " for a process view. */
static void process_prefix(const mf_svg_panel *panel, char *out, size_t len)
{
    char program[160];
    const char *name = mf_model_program(panel->model, panel->pid);
    out[0] = '\0';
    if (panel->n_pids > 1)
        snprintf(out, len, "%zu other processes:   ", panel->n_pids);
    else if (panel->n_pids == 1 && *name)
        snprintf(out, len, "pid %u (%s):   ", panel->pid,
                 mf_clean_text(name, 30, program, sizeof program));
    else if (panel->n_pids == 1)
        snprintf(out, len, "pid %u:   ", panel->pid);
}

/* "cpu/0" and its numbers above the curve; with overlay, a hover entry
 * over them with the line whole.  0, or -1 when out of memory. */
static int draw_device_line(cairo_t *cr, const mf_svg_panel *panel, mf_sink *overlay)
{
    const mf_view *dev = panel->dev;
    char device[16], line[768], a[32], b[32], c[32], d[32], e[32], f[32], g[32];
    double y = panel->box.top + 16;
    uint64_t at = dev->peak_time_ns > panel->model->t0_ns ? dev->peak_time_ns - panel->model->t0_ns
                                                          : 0;
    mf_svg_colored_text(cr, mf_svg_text_color, 12, y, MF_SVG_LEFT, 13, 1,
                        mf_device_name(dev->device, device, sizeof device));
    line[0] = '\0';
    const mf_device_info *info = &panel->device->info;
    if (info->known) {
        char text[256];
        mf_format_device_info(mf_model_string(panel->model, info->name), info->uuid, info->mig,
                              info->total_bytes, text, sizeof text);
        mf_clean_text(text, 60, line, sizeof line - 8);
        strcat(line, ":   ");
    }
    size_t used = strlen(line);
    process_prefix(panel, line + used, sizeof line - used);
    used = strlen(line);
    snprintf(line + used, sizeof line - used,
             "%s allocations, %s frees, %s allocated in all   |   peak %s at %s   |   "
             "live at end: %s in %s block%s",
             mf_format_count(dev->alloc_count, a, sizeof a),
             mf_format_count(dev->free_count, b, sizeof b),
             mf_format_bytes(dev->alloc_bytes, c, sizeof c),
             mf_format_bytes(dev->peak_bytes, d, sizeof d), mf_format_time(at, e, sizeof e),
             mf_format_bytes(dev->live_bytes_end, f, sizeof f),
             mf_format_count(dev->live_count_end, g, sizeof g),
             dev->live_count_end == 1 ? "" : "s");
    if (dev->unknown_frees)
        snprintf(line + strlen(line), sizeof line - strlen(line),
                 "   |   %llu frees of unknown addresses", (unsigned long long)dev->unknown_frees);
    mf_svg_colored_text(cr, mf_svg_muted_color, MF_SVG_PLOT_X0, y, MF_SVG_LEFT, 11, 0, line);
    return overlay ? mf_svg_overlay_lines(overlay, 12, y - 12, MF_SVG_PLOT_X1 - 12, 16,
                                          mf_device_name(dev->device, device, sizeof device),
                                          line)
                   : 0;
}

/* Byte ticks and grid of the curve, and its caption. */
static void draw_curve_axis(cairo_t *cr, const mf_svg_panel *panel, const curve_scale *s)
{
    mf_svg_tick ticks[MAX_TICKS];
    size_t n = mf_svg_bytes_ticks(s->max, s->top, s->bottom, ticks, MAX_TICKS);
    cairo_set_line_width(cr, 1);
    for (size_t i = 0; i < n; i++)
        mf_svg_hline(cr, MF_SVG_PLOT_X0, MF_SVG_PLOT_X1, ticks[i].pos);
    mf_svg_set_rgb(cr, mf_svg_grid_color);
    cairo_stroke(cr);
    for (size_t i = 0; i < n; i++)
        if (ticks[i].pos >= s->top + 4)
            mf_svg_colored_text(cr, mf_svg_muted_color, MF_SVG_PLOT_X0 - 6, ticks[i].pos + 3, MF_SVG_RIGHT, 9, 0,
                         ticks[i].label);
    mf_svg_axis_title(cr, (panel->box.curve_top + panel->box.curve_bottom) / 2, "live bytes");
}

/* Red dot and "peak 12.3 MiB at 1.2 s" at the device's peak. */
static int draw_peak_marker(cairo_t *cr, const mf_svg_panel *panel, const curve_scale *s,
                            mf_sink *overlay)
{
    const mf_view *dev = panel->dev;
    if (dev->peak_bytes == 0)
        return 0;
    char label[96], bytes[32], when[32];
    double x = floor(mf_svg_time_x(&panel->time, dev->peak_time_ns)) + 0.5;
    double y = curve_y(s, dev->peak_bytes);
    cairo_arc(cr, x, y, 3.5, 0, 2 * M_PI);
    mf_svg_set_rgb(cr, mf_svg_peak_color);
    cairo_fill(cr);
    snprintf(label, sizeof label, "peak %s at %s", mf_format_bytes(dev->peak_bytes, bytes, sizeof bytes),
             mf_format_time(dev->peak_time_ns > panel->model->t0_ns
                                    ? dev->peak_time_ns - panel->model->t0_ns : 0,
                                when, sizeof when));
    int right_side = x < MF_SVG_PLOT_X1 - 180;
    double tx = right_side ? x + 7 : x - 7, ty = y < s->top + 14 ? y + 14 : y - 5;
    cairo_text_extents_t ext;
    cairo_select_font_face(cr, MF_SVG_FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    cairo_set_font_size(cr, 10.5);
    cairo_text_extents(cr, label, &ext);
    cairo_rectangle(cr, right_side ? tx - 3 : tx - ext.x_advance - 3, ty - 10, ext.x_advance + 6, 13);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
    cairo_fill(cr);
    mf_svg_colored_text(cr, mf_svg_peak_color, tx, ty, right_side ? MF_SVG_LEFT : MF_SVG_RIGHT, 10.5, 1,
                 label);
    if (overlay)
        return mf_svg_overlay_note(overlay, x - 5, y - 5, 10, 10, label);
    return 0;
}

/* The events' curve: shaded area and min/max line. */
static void draw_events_curve(cairo_t *cr, const envelope *events, const curve_scale *s)
{
    envelope_path(cr, events, s, 1);
    mf_svg_set_rgb(cr, mf_svg_curve_fill);
    cairo_fill(cr);
    envelope_path(cr, events, s, 0);
    mf_svg_set_rgb(cr, mf_svg_curve_color);
    cairo_set_line_width(cr, 1.25);
    cairo_stroke(cr);
}

/*
 * The samples as what they are: a mark at each sample and, when samples
 * are further apart than a pixel, a step that stops where the next sample
 * starts (no line joins two samples: between them nothing was measured).
 * More samples than pixel columns: one mark per column from the lowest to
 * the highest sample in it.  Clipped to the curve's box (samples may go off
 * scale).
 */
static void draw_samples(cairo_t *cr, const mf_svg_panel *panel, const envelope *samples,
                         const curve_scale *s)
{
    const mf_view *dev = panel->dev;
    size_t k = mf_svg_sample_index(dev), n = dev->n_snapshots;
    cairo_save(cr);
    cairo_rectangle(cr, MF_SVG_PLOT_X0, s->top, MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0, s->bottom - s->top);
    cairo_clip(cr);
    mf_svg_set_rgb(cr, mf_svg_sample_color);
    if (n > (size_t)(MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0) / 2) {
        for (int c = samples->first; c <= samples->last; c++) {
            double y0 = curve_y(s, samples->lo[c]), y1 = curve_y(s, samples->hi[c]);
            cairo_rectangle(cr, MF_SVG_PLOT_X0 + c, y1 - 1, 1, y0 - y1 + 2);
        }
        cairo_fill(cr);
        cairo_restore(cr);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const mf_snapshot *snap = &dev->snapshots[i];
        double x = mf_svg_time_x(&panel->time, snap->time_ns), y = curve_y(s, snap->value[k]);
        double next = i + 1 < n ? mf_svg_time_x(&panel->time, dev->snapshots[i + 1].time_ns) : x;
        if (next - x >= 2) {
            cairo_move_to(cr, x, y);
            cairo_line_to(cr, next, y);
        }
    }
    cairo_set_line_width(cr, 1.5);
    cairo_stroke(cr);
    for (size_t i = 0; i < n; i++) {
        const mf_snapshot *snap = &dev->snapshots[i];
        cairo_arc(cr, mf_svg_time_x(&panel->time, snap->time_ns), curve_y(s, snap->value[k]), 2,
                  0, 2 * M_PI);
        cairo_fill(cr);
    }
    cairo_restore(cr);
}

#define HOVER_COLUMNS 4   /* pixel columns per hover rectangle of the curve */

/* "300 ms - 304 ms: live 1.50 MiB" (or "live 1.20 MiB to 1.50 MiB"),
 * then the allocator / driver sample there, for columns [c0, c1). */
static int curve_hover(mf_sink *overlay, const mf_svg_panel *panel, const envelope *events,
                       const envelope *samples, int c0, int c1, const curve_scale *s)
{
    char from[32], to[32], lo[32], hi[32], text[192];
    uint64_t min = UINT64_MAX, max = 0;
    for (int c = c0; c < c1; c++) {
        min = events->lo[c] < min ? events->lo[c] : min;
        max = events->hi[c] > max ? events->hi[c] : max;
    }
    const mf_svg_time_axis *t = &panel->time;
    mf_format_time((uint64_t)(c0 / t->px_per_ns), from, sizeof from);
    mf_format_time((uint64_t)(c1 / t->px_per_ns), to, sizeof to);
    mf_format_bytes(min, lo, sizeof lo);
    int n = min == max ? snprintf(text, sizeof text, "%s - %s: live %s", from, to, lo)
                       : snprintf(text, sizeof text, "%s - %s: live %s to %s", from, to, lo,
                                  mf_format_bytes(max, hi, sizeof hi));
    if (samples && c1 - 1 >= samples->first && c1 - 1 <= samples->last)
        snprintf(text + n, sizeof text - (size_t)n, "; %s %s",
                 MF_DEVICE_KIND(panel->dev->device) == MF_DEVICE_GPU ? "driver used" : "allocator",
                 mf_format_bytes(samples->hi[c1 - 1], hi, sizeof hi));
    return mf_svg_overlay_note(overlay, MF_SVG_PLOT_X0 + c0, s->top, c1 - c0, s->bottom - s->top,
                               text);
}

/* Hover rectangles over the curve, HOVER_COLUMNS pixels each. */
static int curve_hovers(mf_sink *overlay, const mf_svg_panel *panel, const envelope *events,
                        const envelope *samples, const curve_scale *s)
{
    int w = MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0;
    for (int c = 0; c < w; c += HOVER_COLUMNS)
        if (curve_hover(overlay, panel, events, samples, c, c + HOVER_COLUMNS < w ? c + HOVER_COLUMNS : w,
                        s) != 0)
            return -1;
    return 0;
}

int mf_svg_draw_curve(cairo_t *cr, const mf_svg_panel *panel, mf_sink *overlay)
{
    const mf_view *dev = panel->dev;
    curve_scale s = { panel->box.curve_top, panel->box.curve_bottom, curve_max(dev) };
    envelope events = { 0 }, samples = { 0 };
    int has_samples = dev->n_snapshots > 0, rc = -1;
    if (draw_device_line(cr, panel, overlay) != 0)
        return -1;
    cairo_rectangle(cr, MF_SVG_PLOT_X0, s.top, MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0, s.bottom - s.top);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_fill(cr);
    draw_curve_axis(cr, panel, &s);
    if (build_envelope(panel, dev->n_occupancy, occupancy_get, 1, 1, &events) != 0)
        goto out;
    if (has_samples && build_envelope(panel, dev->n_snapshots, snapshot_get, 0, 0, &samples) != 0)
        goto out;
    draw_events_curve(cr, &events, &s);
    if (has_samples)
        draw_samples(cr, panel, &samples, &s);
    cairo_rectangle(cr, MF_SVG_PLOT_X0 + 0.5, s.top + 0.5, MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0 - 1,
                    s.bottom - s.top - 1);
    mf_svg_set_rgb(cr, mf_svg_frame_color);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    if (overlay && curve_hovers(overlay, panel, &events, has_samples ? &samples : NULL, &s) != 0)
        goto out;
    rc = draw_peak_marker(cr, panel, &s, overlay);
out:
    free(events.enter);
    free(samples.enter);
    return rc;
}
