/*
 * svg_panel.h - one panel of the memory_flow picture and the drawing steps
 * svg.c runs on it: blocks (svg_blocks.c), hover overlay (svg_overlay.c),
 * occupancy curve (svg_curve.c), legend (svg_legend.c), and the title,
 * axes, breaks and peak line (svg_marks.c).
 *
 * Data flow: svg.c lays out one mf_svg_panel per process shown on a device
 * (the model's views; the processes past the panels' limit share one
 * panel, svg_group.c), with layout and colours from svg_layout.c and
 * svg_color.c, then calls these functions with a Cairo context (SVG, PNG
 * or PDF surface) and, for SVG, the overlay sink that is later spliced in
 * before </svg>.
 */
#ifndef MEMFLOW_SVG_PANEL_H
#define MEMFLOW_SVG_PANEL_H

#include <cairo.h>
#include <stddef.h>

#include "model.h"
#include "svg_color.h"
#include "svg_layout.h"
#include "escape.h"
#include "sink.h"
#include "units.h"

typedef struct mf_svg_panel {
    const mf_model *model;
    const mf_view *dev;             /* what the panel draws: one process on the
                                       device, or several combined */
    const mf_view *const *sources;  /* the views it draws (1, or the group's) */
    size_t n_sources;
    const mf_device_model *device;  /* the whole device (title numbers) */
    uint32_t pid;             /* the process (0 for a group) */
    size_t n_pids;            /* 0: the device's only process; 1: one of several;
                                 >1: a group of other processes */
    mf_svg_panel_box box;
    mf_svg_time_axis time;    /* shared by all panels */
    mf_svg_addr_axis addr;
    mf_svg_colors colors;
    size_t n_vector;          /* blocks drawn one by one (with hover) */
    size_t n_raster;          /* blocks drawn as pixels of one image */
    uint64_t live_end_count;  /* blocks live at end */
} mf_svg_panel;

/* ---- svg_blocks.c ---- */

#define MF_SVG_MIN_VECTOR_PIXELS 16  /* a block drawn one by one covers this many at least */

/*
 * Draw the panel's blocks into its map: of the blocks the model kept whole
 * (the largest by address span), up to quota one by one as vector
 * rectangles (those covering MF_SVG_MIN_VECTOR_PIXELS pixels or more),
 * every other block as pixels of one image painted into the map, with the
 * dark edge of blocks never freed.  With overlay non-NULL a hover entry is
 * appended for every vector block, and vector blocks stop early once
 * overlay->len would pass overlay_budget (the rest become pixels).  Then
 * the sub-blocks of the panel's views, outlined over their lanes, with
 * hover entries within the same budget.  Sets n_vector and n_raster.
 * Returns 0, or -1 when out of memory.
 */
int mf_svg_draw_blocks(cairo_t *cr, mf_svg_panel *panel, size_t quota, mf_sink *overlay,
                       size_t overlay_budget);

/* ---- svg.c ---- */

typedef int (*mf_svg_draw_fn)(cairo_t *cr, void *ctx, mf_sink *overlay);

/*
 * An SVG document of width x height px into out: draw(cr, ctx, overlay)
 * paints it with Cairo and appends hover entries to overlay, which is then
 * spliced in before </svg>.  0, or -1 with why in err.
 */
int mf_svg_document(double width, double height, mf_svg_draw_fn draw, void *ctx, mf_sink *out,
                    char *err, size_t errlen);

/* ---- svg_overlay.c ---- */

/*
 * Append the hover entry of block drawn at rect: a transparent <rect> whose
 * <title> gives scope, name, requested/actual size, address range,
 * alloc/free time (relative to the log start) or how it ended, lifetime,
 * thread and process, and (when not plain CPU heap) the memory kind and
 * flags.  Every string is XML-escaped.  Returns 0 or -1 (memory).
 */
int mf_svg_overlay_block(mf_sink *overlay, const mf_svg_panel *panel, const mf_block *block,
                         const mf_svg_rect *rect);

/* Append a hover entry with a plain title over a rectangle. */
int mf_svg_overlay_note(mf_sink *overlay, double x, double y, double w, double h,
                        const char *title);

/* The same with a two-line title: first (a name from the program), then
 * second; each escaped on its own. */
/* A hover entry whose title is lines[0..n), one a line (each escaped). */
int mf_svg_overlay_text(mf_sink *overlay, double x, double y, double w, double h,
                        const char *const *lines, size_t n);
int mf_svg_overlay_lines(mf_sink *overlay, double x, double y, double w, double h,
                         const char *first, const char *second);

/*
 * Splice overlay into the SVG document svg right before its closing
 * </svg>, wrapped in <g id="memflow-hover"> with transparent, pointer-
 * catching style.  Returns 0, or -1 if svg has no </svg> or out of memory.
 */
int mf_svg_overlay_splice(mf_sink *svg, const mf_sink *overlay);

/* ---- svg_marks.c: drawing helpers, title, map marks ---- */

#define MF_SVG_FONT "DejaVu Sans"

/* Text alignment of mf_svg_show_text. */
typedef enum mf_svg_align { MF_SVG_LEFT, MF_SVG_RIGHT, MF_SVG_CENTER } mf_svg_align;

/* Show text (any bytes: cleaned for Cairo, at most max_chars characters)
 * with its baseline at y, in the current colour. */
void mf_svg_show_text(cairo_t *cr, double x, double y, mf_svg_align align, double size,
                      int bold, const char *text, size_t max_chars);

/* The same in color, at most 240 characters. */
void mf_svg_colored_text(cairo_t *cr, mf_svg_rgb color, double x, double y, mf_svg_align align,
                         double size, int bold, const char *text);

/* A muted axis title written bottom-up, centred on (16, y_mid): the
 * occupancy curve's "live bytes" and the address map's title. */
void mf_svg_axis_title(cairo_t *cr, double y_mid, const char *text);

/* Add a crisp 1-px horizontal (vertical) line to the path, on the pixel
 * row (column) that contains y (x). */
void mf_svg_hline(cairo_t *cr, double x0, double x1, double y);
void mf_svg_vline(cairo_t *cr, double x, double y0, double y1);

/* Set the source colour. */
void mf_svg_set_rgb(cairo_t *cr, mf_svg_rgb rgb);

/* Title and summary line at the top of the page; with an out-of-memory
 * error the title is its post-mortem (mf_svg_oom_text); with overlay, a
 * hover entry over them with both lines whole.  0, or -1 when out of memory. */
int mf_svg_draw_title(cairo_t *cr, const mf_model *model, const mf_svg_panel *panels,
                      size_t n_panels, const char *title, mf_sink *overlay);

/* "Out of memory at T on gpu/N: X asked, R reserved, A allocated, largest
 * free gap G" into buf (len bytes). */
void mf_svg_oom_text(const mf_model *model, const mf_oom *o, char *buf, size_t len);

/* The panel's out-of-memory errors: a dashed line at each through curve and
 * map, labelled, with a hover entry saying what failed.  0, or -1. */
int mf_svg_draw_ooms(cairo_t *cr, const mf_svg_panel *panel, mf_sink *overlay);

/* ---- svg_curve.c: the occupancy curve ---- */

/* Device line, occupancy curve (events, and samples as marks and steps),
 * peak marker; with overlay, hover entries for the curve and the peak.
 * Returns 0, or -1 when out of memory. */
int mf_svg_draw_curve(cairo_t *cr, const mf_svg_panel *panel, mf_sink *overlay);

/* Which mf_snapshot value is the allocator's or driver's view for a view:
 * GPU used; CPU active (resident if active is never reported). */
size_t mf_svg_sample_index(const mf_view *dev);

/* The highest such sample (0 without samples). */
uint64_t mf_svg_samples_max(const mf_view *dev);

/* Are the samples drawn off scale (over 4 times the events' maximum)? */
int mf_svg_samples_off_scale(const mf_view *dev);

/* Map background and the map's part of the peak line, both drawn before
 * (behind) the blocks. */
void mf_svg_draw_map_background(cairo_t *cr, const mf_svg_panel *panel);

/* Map frame, address and time ticks, breaks and the curve's part of the
 * peak line (drawn after the blocks). */
void mf_svg_draw_map_marks(cairo_t *cr, const mf_svg_panel *panel);

/* ---- svg_legend.c ---- */

/* The legend right of the panel; with overlay, each scope row gets a hover
 * entry with the whole name.  Returns 0, or -1 when out of memory. */
int mf_svg_draw_legend(cairo_t *cr, const mf_svg_panel *panel, mf_sink *overlay);

#endif /* MEMFLOW_SVG_PANEL_H */
