/*
 * svg_legend.c - the legend right of each panel: keys of the curve's lines,
 * the scopes holding the most at the peak (or the lifetime / size ramp),
 * the live-at-end mark and how many blocks are drawn as pixels.  Scope rows
 * hover with the whole name.  See svg_panel.h.
 */
#include "svg_panel.h"

#include <math.h>
#include <stdio.h>

#define LEGEND_RIGHT (MF_SVG_PAGE_WIDTH - 8)
#define LINE_H 15

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
    const mf_view *dev = panel->dev;
    double x = MF_SVG_LEGEND_X, tx = x + 18;
    line_swatch(cr, x, y, mf_svg_curve_color, 2);
    mf_svg_colored_text(cr, mf_svg_text_color, tx, y, MF_SVG_LEFT, 10, 0, "live bytes (from the events)");
    y += LINE_H;
    if (dev->n_snapshots > 0) {
        int gpu = MF_DEVICE_KIND(dev->device) == MF_DEVICE_GPU;
        cairo_arc(cr, x + 6, y - 4, 2, 0, 2 * M_PI);
        mf_svg_set_rgb(cr, mf_svg_sample_color);
        cairo_fill(cr);
        mf_svg_colored_text(cr, mf_svg_text_color, tx, y, MF_SVG_LEFT, 10, 0,
                     gpu ? "device memory used (driver samples)"
                         : mf_svg_sample_index(dev) == MF_SAMPLE_ACTIVE
                               ? "allocator active bytes (samples)"
                               : "allocator resident bytes (samples)");
        y += LINE_H;
        if (mf_svg_samples_off_scale(dev)) {
            char bytes[32], label[96];
            snprintf(label, sizeof label, "off scale above the curve, up to %s",
                     mf_format_bytes(mf_svg_samples_max(dev), bytes, sizeof bytes));
            mf_svg_colored_text(cr, mf_svg_muted_color, tx, y, MF_SVG_LEFT, 9, 0, label);
            y += LINE_H - 3;
        }
    }
    if (dev->peak_bytes > 0) {
        line_swatch(cr, x, y, mf_svg_peak_color, 2);
        mf_svg_colored_text(cr, mf_svg_text_color, tx, y, MF_SVG_LEFT, 10, 0, "peak (line through the map)");
        y += LINE_H;
    }
    return y;
}

/* Hover over a legend row: the whole scope name and its bytes. */
static int legend_hover(mf_sink *overlay, const mf_svg_legend_entry *e, double y)
{
    char peak[32], total[32], detail[128];
    if (!overlay)
        return 0;
    snprintf(detail, sizeof detail, "%s held at the peak, %s allocated in all",
             mf_format_bytes(e->bytes_at_peak, peak, sizeof peak),
             mf_format_bytes(e->bytes_total, total, sizeof total));
    return mf_svg_overlay_lines(overlay, MF_SVG_LEGEND_X, y - 11, LEGEND_RIGHT - MF_SVG_LEGEND_X,
                                LINE_H, e->label, detail);
}

/* Scope swatches with bytes at the peak, then "other". Returns next y,
 * or a negative value when out of memory. */
static double legend_scopes(cairo_t *cr, const mf_svg_panel *panel, mf_sink *overlay,
                            double y)
{
    const mf_svg_colors *c = &panel->colors;
    const char *what = c->by == MF_COLOR_BY_SITE ? "site" : c->by == MF_COLOR_BY_ROLE ? "role"
                                                                                   : "scope";
    char bytes[32], label[64];
    mf_svg_colored_text(cr, mf_svg_text_color, MF_SVG_LEGEND_X, y, MF_SVG_LEFT, 10.5, 1, what);
    mf_svg_colored_text(cr, mf_svg_text_color, LEGEND_RIGHT, y, MF_SVG_RIGHT, 10.5, 1,
                        panel->n_pids > 1 ? "held at their peaks" : "held at peak");
    y += LINE_H + 2;
    for (size_t i = 0; i < c->n_legend; i++) {
        swatch(cr, MF_SVG_LEGEND_X, y, c->table[c->legend[i].color]);
        mf_svg_set_rgb(cr, mf_svg_text_color);
        mf_svg_show_text(cr, MF_SVG_LEGEND_X + 18, y, MF_SVG_LEFT, 10, 0, c->legend[i].label,
                         24);
        mf_svg_colored_text(cr, mf_svg_muted_color, LEGEND_RIGHT, y, MF_SVG_RIGHT, 10, 0,
                     mf_format_bytes(c->legend[i].bytes_at_peak, bytes, sizeof bytes));
        if (legend_hover(overlay, &c->legend[i], y) != 0)
            return -1;
        y += LINE_H;
    }
    if (c->other_scopes > 0) {
        swatch(cr, MF_SVG_LEGEND_X, y, c->table[MF_SVG_COLOR_OTHER]);
        snprintf(label, sizeof label, "other (%zu %s%s)", c->other_scopes, what,
                 c->other_scopes == 1 ? "" : "s");
        mf_svg_colored_text(cr, mf_svg_text_color, MF_SVG_LEGEND_X + 18, y, MF_SVG_LEFT, 10, 0, label);
        mf_svg_colored_text(cr, mf_svg_muted_color, LEGEND_RIGHT, y, MF_SVG_RIGHT, 10, 0,
                     mf_format_bytes(c->other_at_peak, bytes, sizeof bytes));
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
    mf_svg_colored_text(cr, mf_svg_text_color, MF_SVG_LEGEND_X, y, MF_SVG_LEFT, 10.5, 1,
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
        mf_format_time(c->ramp_lo_value, lo, sizeof lo);
        mf_format_time(c->ramp_hi_value, hi, sizeof hi);
    } else {
        mf_format_bytes(c->ramp_lo_value, lo, sizeof lo);
        mf_format_bytes(c->ramp_hi_value, hi, sizeof hi);
    }
    mf_svg_colored_text(cr, mf_svg_muted_color, MF_SVG_LEGEND_X, y, MF_SVG_LEFT, 9.5, 0, lo);
    mf_svg_colored_text(cr, mf_svg_muted_color, LEGEND_RIGHT, y, MF_SVG_RIGHT, 9.5, 0, hi);
    return y + LINE_H;
}

/* The live-at-end key and the raster note. */
static void legend_block_keys(cairo_t *cr, const mf_svg_panel *panel, double y)
{
    const mf_view *dev = panel->dev;
    char count[32], bytes[32], label[128];
    swatch(cr, MF_SVG_LEGEND_X, y, panel->colors.table[MF_SVG_COLOR_OTHER]);
    cairo_rectangle(cr, MF_SVG_LEGEND_X + 12 - MF_SVG_LIVE_EDGE, y - 9, MF_SVG_LIVE_EDGE, 10);
    mf_svg_set_rgb(cr, mf_svg_live_color);
    cairo_fill(cr);
    snprintf(label, sizeof label, "%s: %s block%s, %s",
             mf_model_cut(panel->model) ? "live at the window's end" : "never freed",
             mf_format_count(dev->live_count_end, count, sizeof count),
             dev->live_count_end == 1 ? "" : "s",
             mf_format_bytes(dev->live_bytes_end, bytes, sizeof bytes));
    mf_svg_colored_text(cr, mf_svg_text_color, MF_SVG_LEGEND_X + 18, y, MF_SVG_LEFT, 10, 0, label);
    y += LINE_H;
    mf_svg_colored_text(cr, mf_svg_muted_color, MF_SVG_LEGEND_X, y, MF_SVG_LEFT, 9, 0,
                 "each block: alloc..free time x its addresses");
    y += LINE_H - 3;
    if (panel->n_raster > 0) {
        snprintf(label, sizeof label, "%s small blocks drawn as pixels;",
                 mf_format_count(panel->n_raster, count, sizeof count));
        mf_svg_colored_text(cr, mf_svg_muted_color, MF_SVG_LEGEND_X, y, MF_SVG_LEFT, 9, 0, label);
        y += LINE_H - 3;
        snprintf(label, sizeof label, "hover details for %s of the largest",
                 mf_format_count(panel->n_vector, count, sizeof count));
        mf_svg_colored_text(cr, mf_svg_muted_color, MF_SVG_LEGEND_X, y, MF_SVG_LEFT, 9, 0, label);
    }
}

int mf_svg_draw_legend(cairo_t *cr, const mf_svg_panel *panel, mf_sink *overlay)
{
    double y = panel->box.curve_top + 10;
    y = legend_curve_keys(cr, panel, y);
    y += 10;
    if (panel->colors.by == MF_COLOR_BY_SCOPE || panel->colors.by == MF_COLOR_BY_SITE ||
        panel->colors.by == MF_COLOR_BY_ROLE)
        y = legend_scopes(cr, panel, overlay, y);
    else
        y = legend_ramp(cr, panel, y);
    if (y < 0)
        return -1;
    y += 10;
    legend_block_keys(cr, panel, y);
    return 0;
}
