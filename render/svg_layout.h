/*
 * svg_layout.h - geometry of the memory_flow picture: where the title,
 * panels, curves, maps and legends go; the time axis (x) shared by every
 * panel; the compressed address axis (y) of each panel; axis ticks; and the
 * pixel rectangle of each block.
 *
 * Data flow: svg.c asks this file where things go, then draws them.  All
 * coordinates are Cairo user units, which are SVG px (the document unit),
 * PNG pixels and PDF points alike, so one layout serves every format and
 * the hover overlay lines up with what Cairo drew.
 */
#ifndef MEMFLOW_SVG_LAYOUT_H
#define MEMFLOW_SVG_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "ranges.h"
#include "tiles.h"
#include "compiler.h"
#include "svg.h"

/* The page, in user units (px). */
#define MF_SVG_PAGE_WIDTH 1280
#define MF_SVG_PLOT_X0 112          /* left edge of curves and maps */
#define MF_SVG_PLOT_X1 1000         /* right edge (= the end of the log) */
#define MF_SVG_LEGEND_X 1016        /* left edge of each panel's legend */
#define MF_SVG_TITLE_H 52           /* title and summary lines */
#define MF_SVG_HEADER_H 24          /* a panel's device line */
#define MF_SVG_CURVE_H 110          /* occupancy curve */
#define MF_SVG_CURVE_GAP 12
#define MF_SVG_MAP_H 340            /* time x address map */
#define MF_SVG_AXIS_H 34            /* time tick labels under the map */
#define MF_SVG_PANEL_GAP 14
#define MF_SVG_BREAK_H 20           /* a collapsed address gap */
#define MF_SVG_MAX_BREAKS 6         /* at most this many gaps collapse */
#define MF_SVG_LIVE_EDGE 3          /* px of the dark "live at end" edge */

/* Vertical extent of one device's panel (page coordinates, y down). */
typedef struct mf_svg_panel_box {
    double top, curve_top, curve_bottom, map_top, map_bottom, bottom;
} mf_svg_panel_box;

/* The box of the panel shown at position index (0 = top). */
void mf_svg_panel_box_at(size_t index, mf_svg_panel_box *box);

/* The page height for n_panels panels (at least one panel's worth). */
double mf_svg_page_height(size_t n_panels);

/* One axis tick: its position (x or y) and its label. */
typedef struct mf_svg_tick {
    double pos;
    char label[40];
} mf_svg_tick;

/* The time axis: [t0, t1] ns onto [x0, x1] (t1 == t0 is allowed). */
typedef struct mf_svg_time_axis {
    uint64_t t0, t1;
    double x0, x1, px_per_ns;
} mf_svg_time_axis;

void mf_svg_time_axis_init(mf_svg_time_axis *axis, uint64_t t0, uint64_t t1, double x0,
                           double x1);

/* x of time t (clamped to [x0, x1]). */
double mf_svg_time_x(const mf_svg_time_axis *axis, uint64_t t);

/*
 * Ticks at 1-2-5 steps (about 8 over the axis), labelled relative to t0 in
 * one unit chosen by the duration ("0", "2 ms", "2.5 ms").  Returns the
 * number written (at most max).
 */
size_t mf_svg_time_ticks(const mf_svg_time_axis *axis, mf_svg_tick *ticks, size_t max);

/* One used address range shown linearly; segments stack bottom-up with a
 * break band between neighbours. */
typedef struct mf_svg_segment {
    uint64_t start, end;      /* [start, end) */
    double bottom, height;    /* y of start, px given to the range */
} mf_svg_segment;

/* The compressed address axis of a panel. */
typedef struct mf_svg_addr_axis {
    mf_svg_segment seg[MF_SVG_MAX_BREAKS + 1];
    size_t n;                 /* segments, by address; >= 1 */
    double top, bottom;       /* the map's extent */
} mf_svg_addr_axis;

/*
 * Build the axis of a map from top to bottom from the used address ranges
 * (disjoint, by address; the model's ranges.h): gaps larger than a
 * quarter of the used bytes collapse into breaks (the largest
 * MF_SVG_MAX_BREAKS of them).  Each segment gets height for its bytes and
 * for its number of blocks, at least a readable minimum.  O(n).
 */
void mf_svg_addr_axis_build(mf_svg_addr_axis *axis, const mf_range *ranges, size_t n,
                            double top, double bottom);

/* y of address addr (in or at the end of a segment; clamped otherwise). */
double mf_svg_addr_y(const mf_svg_addr_axis *axis, uint64_t addr);

/* Hex ticks inside each segment, power-of-two steps, labels >= 12 px apart,
 * and each segment's start when no tick falls in it.  Returns the count. */
size_t mf_svg_addr_ticks(const mf_svg_addr_axis *axis, mf_svg_tick *ticks, size_t max);

/*
 * Ticks of a bytes axis from 0 to max_value on [bottom, top] (y up):
 * multiples of a 1-2-5 step in one binary unit ("0", "256 MiB", "512 MiB").
 * Returns the count.
 */
size_t mf_svg_bytes_ticks(uint64_t max_value, double top, double bottom, mf_svg_tick *ticks,
                          size_t max);

/* A block's rectangle in whole pixels; never narrower or lower than 1. */
typedef struct mf_svg_rect {
    int x, y, w, h;
} mf_svg_rect;

/* The pixel rectangle of block: alloc..free (live: to the right edge) by
 * its address range. */
void mf_svg_block_rect(const mf_svg_time_axis *time, const mf_svg_addr_axis *addr,
                       const mf_block *block, mf_svg_rect *rect);

/* The pixel rectangle of n neighbouring tile cells of a view (tiles.h)
 * from column col of granule, like a block's, in two parts: its rows (y,
 * h), the same for every run of cells of one granule, and its columns (x,
 * w). */
void mf_svg_tile_rows(const mf_svg_addr_axis *addr, const mf_view *view, uint64_t granule,
                      mf_svg_rect *rect);
void mf_svg_tile_columns(const mf_svg_time_axis *time, const mf_view *view, uint64_t col,
                         unsigned n, mf_svg_rect *rect);

/*
 * Where mf_svg_write (with the same model and opt) draws device's memory at
 * time_ns and address addr: *x, *y in user units (= SVG px = PNG pixels),
 * and the panel's box in *box (each may be NULL).  pid picks the panel of
 * that process when the device's blocks come from several (0: the first
 * panel of the device).  Implemented in svg.c with the writer's own layout
 * code; for tests and tools.  Returns 0, or -1 if no such panel is shown
 * or out of memory.
 */
MF_EXPORT int mf_svg_locate(const mf_model *model, const mf_svg_options *opt, uint16_t device,
                            uint32_t pid, uint64_t time_ns, uint64_t addr, double *x, double *y,
                            mf_svg_panel_box *box);

#endif /* MEMFLOW_SVG_LAYOUT_H */
