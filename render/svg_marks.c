/*
 * svg_marks.c - everything around the blocks of the memory_flow picture:
 * the title, each panel's device line, occupancy curve (live bytes from
 * the events, allocator/driver samples, peak marker), the map's frame,
 * address and time ticks, collapsed-gap breaks, the peak line, and the
 * legend.  Curves are downsampled to the min and max of each pixel column
 * so peaks survive.  See svg_panel.h.
 */
#include "svg_panel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FONT "DejaVu Sans"
#define MAX_TICKS 64
#define LEGEND_RIGHT (MF_SVG_PAGE_WIDTH - 8)
#define LINE_H 15

static const mf_svg_rgb text_color = { 0x22, 0x22, 0x22 };
static const mf_svg_rgb muted_color = { 0x70, 0x70, 0x70 };
static const mf_svg_rgb frame_color = { 0xa0, 0xa0, 0xa0 };
static const mf_svg_rgb grid_color = { 0xe6, 0xe6, 0xe6 };
static const mf_svg_rgb curve_fill = { 0xcb, 0xd8, 0xeb };

void mf_svg_set_rgb(cairo_t *cr, mf_svg_rgb rgb)
{
    cairo_set_source_rgb(cr, rgb.r / 255.0, rgb.g / 255.0, rgb.b / 255.0);
}

void mf_svg_show_text(cairo_t *cr, double x, double y, mf_svg_align align, double size,
                      int bold, const char *text, size_t max_chars)
{
    char clean[1024];
    if (max_chars > 240)
        max_chars = 240;
    mf_svg_clean_text(text, max_chars, clean, sizeof clean);
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    if (align != MF_SVG_LEFT) {
        cairo_text_extents_t ext;
        cairo_text_extents(cr, clean, &ext);
        x -= align == MF_SVG_RIGHT ? ext.x_advance : ext.x_advance / 2;
    }
    cairo_move_to(cr, x, y);
    cairo_show_text(cr, clean);
}

/* Text in a colour. */
static void colored_text(cairo_t *cr, mf_svg_rgb color, double x, double y, mf_svg_align align,
                         double size, int bold, const char *text)
{
    mf_svg_set_rgb(cr, color);
    mf_svg_show_text(cr, x, y, align, size, bold, text, 240);
}

/* A 1-px line between pixel centres. */
static void hline(cairo_t *cr, double x0, double x1, double y)
{
    cairo_move_to(cr, x0, floor(y) + 0.5);
    cairo_line_to(cr, x1, floor(y) + 0.5);
}

static void vline(cairo_t *cr, double x, double y0, double y1)
{
    cairo_move_to(cr, floor(x) + 0.5, y0);
    cairo_line_to(cr, floor(x) + 0.5, y1);
}

/* ---- title ------------------------------------------------------------------ */

void mf_svg_draw_title(cairo_t *cr, const mf_model *model, const mf_svg_panel *panels,
                       size_t n_panels, const char *title)
{
    char line[1024], part[128], bytes[32], when[32];
    if (title) {
        snprintf(line, sizeof line, "%s", title);
    } else {
        const char *program = model->n_processes && model->processes[0].program
                                  ? model->processes[0].program : "(program unknown)";
        snprintf(line, sizeof line, "memflow: %s", program);
    }
    colored_text(cr, text_color, 12, 22, MF_SVG_LEFT, 16, 1, line);
    mf_svg_format_time(model->t1_ns - model->t0_ns, when, sizeof when);
    snprintf(line, sizeof line, "duration %s", when);
    for (size_t i = 0; i < n_panels; i++) {
        const mf_device_model *dev = panels[i].dev;
        char device[16];
        mf_svg_format_bytes(dev->peak_bytes, bytes, sizeof bytes);
        mf_svg_format_time(dev->peak_time_ns > model->t0_ns ? dev->peak_time_ns - model->t0_ns : 0,
                           when, sizeof when);
        snprintf(part, sizeof part, "   |   %s peak %s at %s",
                 mf_device_name(dev->device, device, sizeof device), bytes, when);
        strncat(line, part, sizeof line - strlen(line) - 1);
    }
    if (model->n_processes > 1) {
        snprintf(part, sizeof part, "   |   %zu processes", model->n_processes);
        strncat(line, part, sizeof line - strlen(line) - 1);
    }
    if (model->n_warnings > 0) {
        snprintf(part, sizeof part, "   |   %zu warning%s (see memflow stats)", model->n_warnings,
                 model->n_warnings == 1 ? "" : "s");
        strncat(line, part, sizeof line - strlen(line) - 1);
    }
    colored_text(cr, muted_color, 12, 42, MF_SVG_LEFT, 11, 0, line);
}

/* ---- occupancy curve -------------------------------------------------------- */

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
static size_t sample_index(const mf_device_model *dev)
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
    return panel->dev->snapshots[i].value[sample_index(panel->dev)];
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
static uint64_t events_max(const mf_device_model *dev)
{
    uint64_t max = dev->peak_bytes;
    for (size_t i = 0; i < dev->n_occupancy; i++)
        max = dev->occupancy[i].live_bytes > max ? dev->occupancy[i].live_bytes : max;
    return max;
}

/* The highest allocator / driver sample (0 without samples). */
static uint64_t samples_max(const mf_device_model *dev)
{
    uint64_t max = 0;
    size_t k = sample_index(dev);
    for (size_t i = 0; i < dev->n_snapshots; i++)
        max = dev->snapshots[i].value[k] > max ? dev->snapshots[i].value[k] : max;
    return max;
}

/* Samples more than this many times the events' maximum (a GPU driver's
 * context, another process) go off scale rather than flatten the events. */
#define OFF_SCALE_FACTOR 4

static int samples_off_scale(const mf_device_model *dev)
{
    uint64_t events = events_max(dev);
    return events > 0 && samples_max(dev) / OFF_SCALE_FACTOR > events;
}

/* The value at the top of the curve: 10% over what is drawn on scale. */
static uint64_t curve_max(const mf_device_model *dev)
{
    uint64_t max = events_max(dev), samples = samples_max(dev);
    if (!samples_off_scale(dev) && samples > max)
        max = samples;
    return max ? max + max / 10 : 1;
}

/* "cpu/0" and its numbers above the curve. */
static void draw_device_line(cairo_t *cr, const mf_svg_panel *panel)
{
    const mf_device_model *dev = panel->dev;
    char device[16], line[512], a[32], b[32], c[32], d[32], e[32], f[32], g[32];
    double y = panel->box.top + 16;
    colored_text(cr, text_color, 12, y, MF_SVG_LEFT, 13, 1,
                 mf_device_name(dev->device, device, sizeof device));
    snprintf(line, sizeof line,
                     "%s allocations, %s frees, %s allocated in all   |   peak %s at %s   |   "
                     "live at end: %s in %s block%s",
                     mf_svg_format_count(dev->alloc_count, a, sizeof a),
                     mf_svg_format_count(dev->free_count, b, sizeof b),
                     mf_svg_format_bytes(dev->alloc_bytes, c, sizeof c),
                     mf_svg_format_bytes(dev->peak_bytes, d, sizeof d),
                     mf_svg_format_time(dev->peak_time_ns > panel->model->t0_ns
                                            ? dev->peak_time_ns - panel->model->t0_ns : 0,
                                        e, sizeof e),
                     mf_svg_format_bytes(dev->live_bytes_end, f, sizeof f),
                     mf_svg_format_count(dev->live_count_end, g, sizeof g),
                     dev->live_count_end == 1 ? "" : "s");
    if (dev->unknown_frees)
        snprintf(line + strlen(line), sizeof line - strlen(line),
                 "   |   %llu frees of unknown addresses", (unsigned long long)dev->unknown_frees);
    colored_text(cr, muted_color, MF_SVG_PLOT_X0, y, MF_SVG_LEFT, 11, 0, line);
}

/* Byte ticks and grid of the curve, and its caption. */
static void draw_curve_axis(cairo_t *cr, const mf_svg_panel *panel, const curve_scale *s)
{
    mf_svg_tick ticks[MAX_TICKS];
    size_t n = mf_svg_bytes_ticks(s->max, s->top, s->bottom, ticks, MAX_TICKS);
    cairo_set_line_width(cr, 1);
    for (size_t i = 0; i < n; i++)
        hline(cr, MF_SVG_PLOT_X0, MF_SVG_PLOT_X1, ticks[i].pos);
    mf_svg_set_rgb(cr, grid_color);
    cairo_stroke(cr);
    for (size_t i = 0; i < n; i++)
        if (ticks[i].pos >= s->top + 4)
            colored_text(cr, muted_color, MF_SVG_PLOT_X0 - 6, ticks[i].pos + 3, MF_SVG_RIGHT, 9, 0,
                         ticks[i].label);
    cairo_save(cr);
    cairo_translate(cr, 16, (panel->box.curve_top + panel->box.curve_bottom) / 2);
    cairo_rotate(cr, -M_PI / 2);
    colored_text(cr, muted_color, 0, 0, MF_SVG_CENTER, 10, 0, "live bytes");
    cairo_restore(cr);
}

/* Red dot and "peak 12.3 MiB at 1.2 s" at the device's peak. */
static int draw_peak_marker(cairo_t *cr, const mf_svg_panel *panel, const curve_scale *s,
                            mf_svg_buf *overlay)
{
    const mf_device_model *dev = panel->dev;
    if (dev->peak_bytes == 0)
        return 0;
    char label[96], bytes[32], when[32];
    double x = floor(mf_svg_time_x(&panel->time, dev->peak_time_ns)) + 0.5;
    double y = curve_y(s, dev->peak_bytes);
    cairo_arc(cr, x, y, 3.5, 0, 2 * M_PI);
    mf_svg_set_rgb(cr, mf_svg_peak_color);
    cairo_fill(cr);
    snprintf(label, sizeof label, "peak %s at %s", mf_svg_format_bytes(dev->peak_bytes, bytes, sizeof bytes),
             mf_svg_format_time(dev->peak_time_ns > panel->model->t0_ns
                                    ? dev->peak_time_ns - panel->model->t0_ns : 0,
                                when, sizeof when));
    int right_side = x < MF_SVG_PLOT_X1 - 180;
    double tx = right_side ? x + 7 : x - 7, ty = y < s->top + 14 ? y + 14 : y - 5;
    cairo_text_extents_t ext;
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    cairo_set_font_size(cr, 10.5);
    cairo_text_extents(cr, label, &ext);
    cairo_rectangle(cr, right_side ? tx - 3 : tx - ext.x_advance - 3, ty - 10, ext.x_advance + 6, 13);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
    cairo_fill(cr);
    colored_text(cr, mf_svg_peak_color, tx, ty, right_side ? MF_SVG_LEFT : MF_SVG_RIGHT, 10.5, 1,
                 label);
    if (overlay)
        return mf_svg_overlay_note(overlay, x - 5, y - 5, 10, 10, label);
    return 0;
}

/* The events' curve: shaded area and min/max line. */
static void draw_events_curve(cairo_t *cr, const envelope *events, const curve_scale *s)
{
    envelope_path(cr, events, s, 1);
    mf_svg_set_rgb(cr, curve_fill);
    cairo_fill(cr);
    envelope_path(cr, events, s, 0);
    mf_svg_set_rgb(cr, mf_svg_curve_color);
    cairo_set_line_width(cr, 1.25);
    cairo_stroke(cr);
}

/* The samples' line, clipped to the curve's box (it may go off scale). */
static void draw_samples_curve(cairo_t *cr, const envelope *samples, const curve_scale *s)
{
    cairo_save(cr);
    cairo_rectangle(cr, MF_SVG_PLOT_X0, s->top, MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0, s->bottom - s->top);
    cairo_clip(cr);
    envelope_path(cr, samples, s, 0);
    mf_svg_set_rgb(cr, mf_svg_sample_color);
    cairo_set_line_width(cr, 1.5);
    cairo_stroke(cr);
    cairo_restore(cr);
}

#define HOVER_COLUMNS 4   /* pixel columns per hover rectangle of the curve */

/* "300 ms - 304 ms: live 1.50 MiB" (or "live 1.20 MiB to 1.50 MiB"),
 * then the allocator / driver sample there, for columns [c0, c1). */
static int curve_hover(mf_svg_buf *overlay, const mf_svg_panel *panel, const envelope *events,
                       const envelope *samples, int c0, int c1, const curve_scale *s)
{
    char from[32], to[32], lo[32], hi[32], text[192];
    uint64_t min = UINT64_MAX, max = 0;
    for (int c = c0; c < c1; c++) {
        min = events->lo[c] < min ? events->lo[c] : min;
        max = events->hi[c] > max ? events->hi[c] : max;
    }
    const mf_svg_time_axis *t = &panel->time;
    mf_svg_format_time((uint64_t)(c0 / t->px_per_ns), from, sizeof from);
    mf_svg_format_time((uint64_t)(c1 / t->px_per_ns), to, sizeof to);
    mf_svg_format_bytes(min, lo, sizeof lo);
    int n = min == max ? snprintf(text, sizeof text, "%s - %s: live %s", from, to, lo)
                       : snprintf(text, sizeof text, "%s - %s: live %s to %s", from, to, lo,
                                  mf_svg_format_bytes(max, hi, sizeof hi));
    if (samples && c1 - 1 >= samples->first && c1 - 1 <= samples->last)
        snprintf(text + n, sizeof text - (size_t)n, "; %s %s",
                 MF_DEVICE_KIND(panel->dev->device) == MF_DEVICE_GPU ? "driver used" : "allocator",
                 mf_svg_format_bytes(samples->hi[c1 - 1], hi, sizeof hi));
    return mf_svg_overlay_note(overlay, MF_SVG_PLOT_X0 + c0, s->top, c1 - c0, s->bottom - s->top,
                               text);
}

/* Hover rectangles over the curve, HOVER_COLUMNS pixels each. */
static int curve_hovers(mf_svg_buf *overlay, const mf_svg_panel *panel, const envelope *events,
                        const envelope *samples, const curve_scale *s)
{
    int w = MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0;
    for (int c = 0; c < w; c += HOVER_COLUMNS)
        if (curve_hover(overlay, panel, events, samples, c, c + HOVER_COLUMNS < w ? c + HOVER_COLUMNS : w,
                        s) != 0)
            return -1;
    return 0;
}

int mf_svg_draw_curve(cairo_t *cr, const mf_svg_panel *panel, mf_svg_buf *overlay)
{
    const mf_device_model *dev = panel->dev;
    curve_scale s = { panel->box.curve_top, panel->box.curve_bottom, curve_max(dev) };
    envelope events = { 0 }, samples = { 0 };
    int has_samples = dev->n_snapshots > 0, rc = -1;
    draw_device_line(cr, panel);
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
        draw_samples_curve(cr, &samples, &s);
    cairo_rectangle(cr, MF_SVG_PLOT_X0 + 0.5, s.top + 0.5, MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0 - 1,
                    s.bottom - s.top - 1);
    mf_svg_set_rgb(cr, frame_color);
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

/* ---- map ------------------------------------------------------------------------ */

/* The vertical peak line from y0 to y1. */
static void draw_peak_line(cairo_t *cr, const mf_svg_panel *panel, double y0, double y1)
{
    if (panel->dev->peak_bytes == 0)
        return;
    vline(cr, mf_svg_time_x(&panel->time, panel->dev->peak_time_ns), y0, y1);
    mf_svg_set_rgb(cr, mf_svg_peak_color);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
}

void mf_svg_draw_map_background(cairo_t *cr, const mf_svg_panel *panel)
{
    cairo_rectangle(cr, MF_SVG_PLOT_X0, panel->box.map_top, MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0,
                    MF_SVG_MAP_H);
    mf_svg_set_rgb(cr, mf_svg_background);
    cairo_fill(cr);
    /* Behind the blocks: the block allocated at the peak, often a
     * short-lived temporary one pixel wide, stays visible. */
    draw_peak_line(cr, panel, panel->box.map_top, panel->box.map_bottom);
}

/* A zig-zag line across [x0, x1] at y. */
static void zigzag(cairo_t *cr, double x0, double x1, double y)
{
    cairo_move_to(cr, x0, y);
    int up = 1;
    for (double x = x0 + 4; x <= x1; x += 4, up = !up)
        cairo_line_to(cr, x, up ? y - 2 : y + 2);
}

/* The collapsed gaps between address segments: a white band with zig-zag
 * edges labelled with the skipped size. */
static void draw_breaks(cairo_t *cr, const mf_svg_panel *panel)
{
    const mf_svg_addr_axis *axis = &panel->addr;
    for (size_t i = 0; i + 1 < axis->n; i++) {
        double lower = axis->seg[i].bottom - axis->seg[i].height;   /* top of segment i */
        double upper = axis->seg[i + 1].bottom;                     /* bottom of segment i+1 */
        cairo_rectangle(cr, MF_SVG_PLOT_X0 - 10, upper, MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0 + 20,
                        lower - upper);
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_fill(cr);
        zigzag(cr, MF_SVG_PLOT_X0 - 10, MF_SVG_PLOT_X1 + 10, upper + 3);
        zigzag(cr, MF_SVG_PLOT_X0 - 10, MF_SVG_PLOT_X1 + 10, lower - 3);
        mf_svg_set_rgb(cr, frame_color);
        cairo_set_line_width(cr, 1);
        cairo_stroke(cr);
        char bytes[32], label[96];
        snprintf(label, sizeof label, "%s of unused addresses not shown",
                 mf_svg_format_bytes(axis->seg[i + 1].start - axis->seg[i].end, bytes, sizeof bytes));
        colored_text(cr, muted_color, (MF_SVG_PLOT_X0 + MF_SVG_PLOT_X1) / 2.0, (upper + lower) / 2 + 3,
                     MF_SVG_CENTER, 8.5, 0, label);
    }
}

static void draw_address_ticks(cairo_t *cr, const mf_svg_panel *panel)
{
    mf_svg_tick ticks[MAX_TICKS];
    size_t n = mf_svg_addr_ticks(&panel->addr, ticks, MAX_TICKS);
    if (panel->dev->n_blocks == 0)
        n = 0;
    for (size_t i = 0; i < n; i++) {
        cairo_move_to(cr, MF_SVG_PLOT_X0 - 4, floor(ticks[i].pos) + 0.5);
        cairo_line_to(cr, MF_SVG_PLOT_X0, floor(ticks[i].pos) + 0.5);
    }
    mf_svg_set_rgb(cr, frame_color);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    for (size_t i = 0; i < n; i++)
        colored_text(cr, muted_color, MF_SVG_PLOT_X0 - 6, ticks[i].pos + 3, MF_SVG_RIGHT, 9, 0,
                     ticks[i].label);
    cairo_save(cr);
    cairo_translate(cr, 16, (panel->box.map_top + panel->box.map_bottom) / 2);
    cairo_rotate(cr, -M_PI / 2);
    colored_text(cr, muted_color, 0, 0, MF_SVG_CENTER, 10, 0, "address (compressed where unused)");
    cairo_restore(cr);
}

static void draw_time_ticks(cairo_t *cr, const mf_svg_panel *panel)
{
    mf_svg_tick ticks[MAX_TICKS];
    size_t n = mf_svg_time_ticks(&panel->time, ticks, MAX_TICKS);
    double bottom = panel->box.map_bottom, curve_bottom = panel->box.curve_bottom;
    for (size_t i = 0; i < n; i++) {
        vline(cr, ticks[i].pos, bottom, bottom + 4);
        vline(cr, ticks[i].pos, curve_bottom, curve_bottom + 3);
    }
    mf_svg_set_rgb(cr, frame_color);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    for (size_t i = 0; i < n; i++)
        colored_text(cr, muted_color, ticks[i].pos, bottom + 14, MF_SVG_CENTER, 9, 0,
                     ticks[i].label);
    colored_text(cr, muted_color, MF_SVG_PLOT_X1, bottom + 28, MF_SVG_RIGHT, 10, 0,
                 "time since start");
}

void mf_svg_draw_map_marks(cairo_t *cr, const mf_svg_panel *panel)
{
    cairo_rectangle(cr, MF_SVG_PLOT_X0 - 0.5, panel->box.map_top - 0.5,
                    MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0 + 1, MF_SVG_MAP_H + 1);
    mf_svg_set_rgb(cr, frame_color);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    draw_breaks(cr, panel);
    draw_address_ticks(cr, panel);
    draw_time_ticks(cr, panel);
    draw_peak_line(cr, panel, panel->box.curve_top, panel->box.map_top);
    if (panel->dev->n_blocks == 0)
        colored_text(cr, muted_color, (MF_SVG_PLOT_X0 + MF_SVG_PLOT_X1) / 2.0,
                     (panel->box.map_top + panel->box.map_bottom) / 2, MF_SVG_CENTER, 12, 0,
                     "no allocations recorded on this device");
}

/* ---- legend ---------------------------------------------------------------------- */

static void swatch(cairo_t *cr, double x, double y, mf_svg_rgb color)
{
    cairo_rectangle(cr, x, y - 9, 12, 10);
    mf_svg_set_rgb(cr, color);
    cairo_fill(cr);
}

static void line_swatch(cairo_t *cr, double x, double y, mf_svg_rgb color, double width)
{
    cairo_move_to(cr, x, y - 4);
    cairo_line_to(cr, x + 12, y - 4);
    mf_svg_set_rgb(cr, color);
    cairo_set_line_width(cr, width);
    cairo_stroke(cr);
}

/* The curve's keys: events line, samples line, peak. Returns the next y. */
static double legend_curve_keys(cairo_t *cr, const mf_svg_panel *panel, double y)
{
    const mf_device_model *dev = panel->dev;
    double x = MF_SVG_LEGEND_X, tx = x + 18;
    line_swatch(cr, x, y, mf_svg_curve_color, 2);
    colored_text(cr, text_color, tx, y, MF_SVG_LEFT, 10, 0, "live bytes (from the events)");
    y += LINE_H;
    if (dev->n_snapshots > 0) {
        int gpu = MF_DEVICE_KIND(dev->device) == MF_DEVICE_GPU;
        line_swatch(cr, x, y, mf_svg_sample_color, 2);
        colored_text(cr, text_color, tx, y, MF_SVG_LEFT, 10, 0,
                     gpu ? "device memory used (driver samples)"
                         : sample_index(dev) == MF_SAMPLE_ACTIVE
                               ? "allocator active bytes (samples)"
                               : "allocator resident bytes (samples)");
        y += LINE_H;
        if (samples_off_scale(dev)) {
            char bytes[32], label[96];
            snprintf(label, sizeof label, "off scale above the curve, up to %s",
                     mf_svg_format_bytes(samples_max(dev), bytes, sizeof bytes));
            colored_text(cr, muted_color, tx, y, MF_SVG_LEFT, 9, 0, label);
            y += LINE_H - 3;
        }
    }
    if (dev->peak_bytes > 0) {
        line_swatch(cr, x, y, mf_svg_peak_color, 2);
        colored_text(cr, text_color, tx, y, MF_SVG_LEFT, 10, 0, "peak (line through the map)");
        y += LINE_H;
    }
    return y;
}

/* Hover over a legend row: the whole scope name and its bytes. */
static int legend_hover(mf_svg_buf *overlay, const mf_svg_panel *panel,
                        const mf_svg_legend_entry *e, double y)
{
    char peak[32], total[32], detail[128];
    if (!overlay)
        return 0;
    snprintf(detail, sizeof detail, "%s held at the peak, %s allocated in all",
             mf_svg_format_bytes(e->bytes_at_peak, peak, sizeof peak),
             mf_svg_format_bytes(e->bytes_total, total, sizeof total));
    return mf_svg_overlay_lines(overlay, MF_SVG_LEGEND_X, y - 11, LEGEND_RIGHT - MF_SVG_LEGEND_X,
                                LINE_H, mf_svg_string(panel->model, e->scope), detail);
}

/* Scope swatches with bytes at the peak, then "other". Returns next y,
 * or a negative value when out of memory. */
static double legend_scopes(cairo_t *cr, const mf_svg_panel *panel, mf_svg_buf *overlay,
                            double y)
{
    const mf_svg_colors *c = &panel->colors;
    char bytes[32], label[64];
    colored_text(cr, text_color, MF_SVG_LEGEND_X, y, MF_SVG_LEFT, 10.5, 1, "scope");
    colored_text(cr, text_color, LEGEND_RIGHT, y, MF_SVG_RIGHT, 10.5, 1, "held at peak");
    y += LINE_H + 2;
    for (size_t i = 0; i < c->n_legend; i++) {
        swatch(cr, MF_SVG_LEGEND_X, y, c->table[c->legend[i].color]);
        mf_svg_set_rgb(cr, text_color);
        mf_svg_show_text(cr, MF_SVG_LEGEND_X + 18, y, MF_SVG_LEFT, 10, 0,
                         mf_svg_string(panel->model, c->legend[i].scope), 24);
        colored_text(cr, muted_color, LEGEND_RIGHT, y, MF_SVG_RIGHT, 10, 0,
                     mf_svg_format_bytes(c->legend[i].bytes_at_peak, bytes, sizeof bytes));
        if (legend_hover(overlay, panel, &c->legend[i], y) != 0)
            return -1;
        y += LINE_H;
    }
    if (c->other_scopes > 0) {
        swatch(cr, MF_SVG_LEGEND_X, y, c->table[MF_SVG_COLOR_OTHER]);
        snprintf(label, sizeof label, "other (%zu scope%s)", c->other_scopes,
                 c->other_scopes == 1 ? "" : "s");
        colored_text(cr, text_color, MF_SVG_LEGEND_X + 18, y, MF_SVG_LEFT, 10, 0, label);
        colored_text(cr, muted_color, LEGEND_RIGHT, y, MF_SVG_RIGHT, 10, 0,
                     mf_svg_format_bytes(c->other_at_peak, bytes, sizeof bytes));
        y += LINE_H;
    }
    return y;
}

/* The lifetime or size ramp with its end values. Returns next y. */
static double legend_ramp(cairo_t *cr, const mf_svg_panel *panel, double y)
{
    const mf_svg_colors *c = &panel->colors;
    int lifetime = c->by == MF_COLOR_BY_LIFETIME;
    char lo[32], hi[32];
    colored_text(cr, text_color, MF_SVG_LEGEND_X, y, MF_SVG_LEFT, 10.5, 1,
                 lifetime ? "colour: lifetime (log scale)" : "colour: size (log scale)");
    y += 8;
    double w = (LEGEND_RIGHT - MF_SVG_LEGEND_X) / (double)MF_SVG_RAMP_STEPS;
    for (size_t i = 0; i < MF_SVG_RAMP_STEPS; i++) {
        cairo_rectangle(cr, MF_SVG_LEGEND_X + i * w, y, w + 0.5, 12);
        mf_svg_set_rgb(cr, c->table[i]);
        cairo_fill(cr);
    }
    y += 24;
    if (lifetime) {
        mf_svg_format_time(c->ramp_lo_value, lo, sizeof lo);
        mf_svg_format_time(c->ramp_hi_value, hi, sizeof hi);
    } else {
        mf_svg_format_bytes(c->ramp_lo_value, lo, sizeof lo);
        mf_svg_format_bytes(c->ramp_hi_value, hi, sizeof hi);
    }
    colored_text(cr, muted_color, MF_SVG_LEGEND_X, y, MF_SVG_LEFT, 9.5, 0, lo);
    colored_text(cr, muted_color, LEGEND_RIGHT, y, MF_SVG_RIGHT, 9.5, 0, hi);
    return y + LINE_H;
}

/* The live-at-end key and the raster note. */
static void legend_block_keys(cairo_t *cr, const mf_svg_panel *panel, double y)
{
    const mf_device_model *dev = panel->dev;
    char count[32], bytes[32], label[128];
    swatch(cr, MF_SVG_LEGEND_X, y, panel->colors.table[MF_SVG_COLOR_OTHER]);
    cairo_rectangle(cr, MF_SVG_LEGEND_X + 12 - MF_SVG_LIVE_EDGE, y - 9, MF_SVG_LIVE_EDGE, 10);
    mf_svg_set_rgb(cr, mf_svg_live_color);
    cairo_fill(cr);
    snprintf(label, sizeof label, "live at end: %s block%s, %s",
             mf_svg_format_count(dev->live_count_end, count, sizeof count),
             dev->live_count_end == 1 ? "" : "s",
             mf_svg_format_bytes(dev->live_bytes_end, bytes, sizeof bytes));
    colored_text(cr, text_color, MF_SVG_LEGEND_X + 18, y, MF_SVG_LEFT, 10, 0, label);
    y += LINE_H;
    colored_text(cr, muted_color, MF_SVG_LEGEND_X, y, MF_SVG_LEFT, 9, 0,
                 "each block: alloc..free time x its addresses");
    y += LINE_H - 3;
    if (panel->n_raster > 0) {
        snprintf(label, sizeof label, "%s small blocks drawn as pixels;",
                 mf_svg_format_count(panel->n_raster, count, sizeof count));
        colored_text(cr, muted_color, MF_SVG_LEGEND_X, y, MF_SVG_LEFT, 9, 0, label);
        y += LINE_H - 3;
        snprintf(label, sizeof label, "hover details for the %s largest",
                 mf_svg_format_count(panel->n_vector, count, sizeof count));
        colored_text(cr, muted_color, MF_SVG_LEGEND_X, y, MF_SVG_LEFT, 9, 0, label);
    }
}

int mf_svg_draw_legend(cairo_t *cr, const mf_svg_panel *panel, mf_svg_buf *overlay)
{
    double y = panel->box.curve_top + 10;
    y = legend_curve_keys(cr, panel, y);
    y += 10;
    if (panel->colors.by == MF_COLOR_BY_SCOPE)
        y = legend_scopes(cr, panel, overlay, y);
    else
        y = legend_ramp(cr, panel, y);
    if (y < 0)
        return -1;
    y += 10;
    legend_block_keys(cr, panel, y);
    return 0;
}
