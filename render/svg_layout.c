/*
 * svg_layout.c - geometry of the memory_flow picture: page and panel boxes,
 * the shared time axis, the compressed address axis, ticks and block
 * rectangles.  See svg_layout.h for the contracts.
 */
#include "svg_layout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- page ---------------------------------------------------------------- */

static double panel_height(void)
{
    return MF_SVG_HEADER_H + MF_SVG_CURVE_H + MF_SVG_CURVE_GAP + MF_SVG_MAP_H + MF_SVG_AXIS_H +
           MF_SVG_PANEL_GAP;
}

void mf_svg_panel_box_at(size_t index, mf_svg_panel_box *box)
{
    box->top = MF_SVG_TITLE_H + (double)index * panel_height();
    box->curve_top = box->top + MF_SVG_HEADER_H;
    box->curve_bottom = box->curve_top + MF_SVG_CURVE_H;
    box->map_top = box->curve_bottom + MF_SVG_CURVE_GAP;
    box->map_bottom = box->map_top + MF_SVG_MAP_H;
    box->bottom = box->map_bottom + MF_SVG_AXIS_H;
}

double mf_svg_page_height(size_t n_panels)
{
    return MF_SVG_TITLE_H + (double)(n_panels ? n_panels : 1) * panel_height();
}

/* ---- time axis ------------------------------------------------------------ */

void mf_svg_time_axis_init(mf_svg_time_axis *axis, uint64_t t0, uint64_t t1, double x0,
                           double x1)
{
    axis->t0 = t0;
    axis->t1 = t1 > t0 ? t1 : t0;
    axis->x0 = x0;
    axis->x1 = x1;
    uint64_t duration = axis->t1 - t0;
    axis->px_per_ns = (x1 - x0) / (double)(duration ? duration : 1);
}

double mf_svg_time_x(const mf_svg_time_axis *axis, uint64_t t)
{
    if (t <= axis->t0)
        return axis->x0;
    if (t >= axis->t1)
        return axis->x1;
    return axis->x0 + (double)(t - axis->t0) * axis->px_per_ns;
}

/* The smallest of 1, 2, 5 x 10^k that is >= raw (raw >= 1). */
static uint64_t nice_step_u64(uint64_t raw)
{
    uint64_t mag = 1;
    while (mag <= UINT64_MAX / 10 && mag * 10 <= raw)
        mag *= 10;
    if (raw <= mag)
        return mag;
    if (raw <= 2 * mag)
        return 2 * mag;
    if (raw <= 5 * mag)
        return 5 * mag;
    return 10 * mag;
}

size_t mf_svg_time_ticks(const mf_svg_time_axis *axis, mf_svg_tick *ticks, size_t max)
{
    uint64_t duration = axis->t1 - axis->t0;
    uint64_t step = nice_step_u64(duration / 8 ? duration / 8 : 1);
    static const struct { uint64_t ns; const char *name; } units[] = {
        { 1000000000ull, "s" }, { 1000000ull, "ms" }, { 1000ull, "us" }, { 1ull, "ns" }
    };
    size_t u = 0;
    while (u + 1 < sizeof units / sizeof units[0] && duration < units[u].ns)
        u++;
    int decimals = 0;
    uint64_t scaled = step;
    while (scaled % units[u].ns != 0 && decimals < 9) {
        scaled *= 10;
        decimals++;
    }
    size_t n = 0;
    for (uint64_t t = 0; t <= duration && n < max; t += step) {
        ticks[n].pos = mf_svg_time_x(axis, axis->t0 + t);
        if (t == 0)
            snprintf(ticks[n].label, sizeof ticks[n].label, "0");
        else
            snprintf(ticks[n].label, sizeof ticks[n].label, "%.*f %s", decimals,
                     (double)t / (double)units[u].ns, units[u].name);
        n++;
        if (t > UINT64_MAX - step)
            break;
    }
    return n;
}

/* ---- address axis ----------------------------------------------------------- */

/*
 * The indices i (1..m-1, ascending) of the regions before which a break
 * goes: the largest gaps between regions i-1 and i that
 * exceed a quarter of the used bytes, at most MF_SVG_MAX_BREAKS.
 */
static size_t pick_breaks(const mf_range *regions, size_t m, size_t *breaks)
{
    uint64_t used = 0;
    for (size_t i = 0; i < m; i++)
        used += regions[i].end - regions[i].start;
    uint64_t threshold = used / 4;
    uint64_t gap_of[MF_SVG_MAX_BREAKS];
    size_t nb = 0;
    for (size_t i = 1; i < m; i++) {
        uint64_t gap = regions[i].start - regions[i - 1].end;
        if (gap <= threshold)
            continue;
        if (nb == MF_SVG_MAX_BREAKS && gap <= gap_of[nb - 1])
            continue;
        size_t at = nb < MF_SVG_MAX_BREAKS ? nb++ : nb - 1;
        while (at > 0 && gap_of[at - 1] < gap) {
            gap_of[at] = gap_of[at - 1];
            breaks[at] = breaks[at - 1];
            at--;
        }
        gap_of[at] = gap;
        breaks[at] = i;
    }
    for (size_t i = 1; i < nb; i++)
        for (size_t j = i; j > 0 && breaks[j - 1] > breaks[j]; j--) {
            size_t t = breaks[j];
            breaks[j] = breaks[j - 1];
            breaks[j - 1] = t;
        }
    return nb;
}

/*
 * How much height each segment deserves: half for its share of the used
 * bytes, half for its share of the blocks, so a heap of many small blocks
 * next to a few huge mappings stays readable.
 */
static void segment_weights(const mf_svg_addr_axis *axis, const mf_range *ranges, size_t n,
                            double *weight)
{
    double count[MF_SVG_MAX_BREAKS + 1] = { 0 }, blocks = 0, used = 0;
    for (size_t i = 0, s = 0; i < n; i++) {
        while (s + 1 < axis->n && axis->seg[s + 1].start <= ranges[i].start)
            s++;
        count[s] += (double)ranges[i].blocks;
        blocks += (double)ranges[i].blocks;
    }
    for (size_t s = 0; s < axis->n; s++)
        used += (double)(axis->seg[s].end - axis->seg[s].start);
    for (size_t s = 0; s < axis->n; s++)
        weight[s] = 0.5 * (double)(axis->seg[s].end - axis->seg[s].start) / used +
                    (blocks > 0 ? 0.5 * count[s] / blocks : 0.5 / (double)axis->n);
}

/* Whole-pixel heights: proportional to weight, at least a readable
 * minimum, summing to avail. */
static void size_segments(mf_svg_addr_axis *axis, const double *weight, double avail)
{
    size_t n = axis->n;
    double min_px = avail / (double)n < 24 ? floor(avail / (double)n) : 24;
    int fixed[MF_SVG_MAX_BREAKS + 1] = { 0 };
    double h[MF_SVG_MAX_BREAKS + 1];
    for (size_t round = 0; round <= n; round++) {
        double free_px = avail, free_weight = 0;
        for (size_t i = 0; i < n; i++) {
            if (fixed[i])
                free_px -= min_px;
            else
                free_weight += weight[i];
        }
        int changed = 0;
        for (size_t i = 0; i < n; i++) {
            if (fixed[i]) {
                h[i] = min_px;
                continue;
            }
            h[i] = free_weight > 0 ? free_px * weight[i] / free_weight : min_px;
            if (h[i] < min_px) {
                fixed[i] = 1;
                changed = 1;
            }
        }
        if (!changed)
            break;
    }
    double total = 0;
    size_t largest = 0;
    for (size_t i = 0; i < n; i++) {
        h[i] = floor(h[i] < min_px ? min_px : h[i]);
        total += h[i];
        if (h[i] > h[largest])
            largest = i;
    }
    h[largest] += avail - total;
    double y = axis->bottom;
    for (size_t i = 0; i < n; i++) {
        axis->seg[i].bottom = y;
        axis->seg[i].height = h[i];
        y -= h[i] + MF_SVG_BREAK_H;
    }
}

void mf_svg_addr_axis_build(mf_svg_addr_axis *axis, const mf_range *ranges, size_t n,
                            double top, double bottom)
{
    memset(axis, 0, sizeof *axis);
    axis->top = top;
    axis->bottom = bottom;
    axis->n = 1;
    axis->seg[0].start = 0;
    axis->seg[0].end = 1;
    if (n == 0) {
        axis->seg[0].bottom = bottom;
        axis->seg[0].height = bottom - top;
        return;
    }
    size_t breaks[MF_SVG_MAX_BREAKS];
    size_t nb = pick_breaks(ranges, n, breaks);
    axis->n = nb + 1;
    size_t first = 0;
    for (size_t s = 0; s <= nb; s++) {
        size_t last = s < nb ? breaks[s] - 1 : n - 1;
        axis->seg[s].start = ranges[first].start;
        axis->seg[s].end = ranges[last].end;
        first = last + 1;
    }
    double weight[MF_SVG_MAX_BREAKS + 1];
    segment_weights(axis, ranges, n, weight);
    size_segments(axis, weight, (bottom - top) - (double)nb * MF_SVG_BREAK_H);
}

/* The segment that shows addr (the last one starting at or below it). */
static const mf_svg_segment *segment_of(const mf_svg_addr_axis *axis, uint64_t addr)
{
    size_t s = 0;
    while (s + 1 < axis->n && axis->seg[s + 1].start <= addr)
        s++;
    return &axis->seg[s];
}

double mf_svg_addr_y(const mf_svg_addr_axis *axis, uint64_t addr)
{
    const mf_svg_segment *seg = segment_of(axis, addr);
    if (addr <= seg->start)
        return seg->bottom;
    if (addr >= seg->end)
        return seg->bottom - seg->height;
    return seg->bottom - (double)(addr - seg->start) * seg->height / (double)(seg->end - seg->start);
}

size_t mf_svg_addr_ticks(const mf_svg_addr_axis *axis, mf_svg_tick *ticks, size_t max)
{
    size_t n = 0;
    double last_pos = 1e30;
    for (size_t s = 0; s < axis->n && n < max; s++) {
        const mf_svg_segment *seg = &axis->seg[s];
        double bytes_per_px = (double)(seg->end - seg->start) / (seg->height > 1 ? seg->height : 1);
        uint64_t step = 1;
        while (step < (UINT64_C(1) << 62) && (double)step < 40 * bytes_per_px)
            step <<= 1;
        size_t in_segment = 0;
        uint64_t first = seg->start % step ? seg->start - seg->start % step + step : seg->start;
        for (uint64_t a = first; a >= seg->start && a <= seg->end && n < max; a += step) {
            double pos = mf_svg_addr_y(axis, a);
            if (last_pos - pos >= 12) {
                ticks[n].pos = pos;
                snprintf(ticks[n].label, sizeof ticks[n].label, "0x%llx", (unsigned long long)a);
                last_pos = pos;
                n++;
                in_segment++;
            }
            if (a > UINT64_MAX - step)
                break;
        }
        if (in_segment == 0 && n < max && last_pos - seg->bottom >= 12) {
            ticks[n].pos = seg->bottom;
            snprintf(ticks[n].label, sizeof ticks[n].label, "0x%llx",
                     (unsigned long long)seg->start);
            last_pos = seg->bottom;
            n++;
        }
    }
    return n;
}

/* The smallest of 1, 2, 5 x 10^k that is >= raw (raw > 0). */
static double nice_step(double raw)
{
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

size_t mf_svg_bytes_ticks(uint64_t max_value, double top, double bottom, mf_svg_tick *ticks,
                          size_t max)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (max == 0)
        return 0;
    ticks[0].pos = bottom;
    snprintf(ticks[0].label, sizeof ticks[0].label, "0");
    if (max_value == 0)
        return 1;
    size_t u = 0;
    double unit = 1;
    while (u + 1 < sizeof units / sizeof units[0] && (double)max_value / unit >= 1024) {
        unit *= 1024;
        u++;
    }
    double top_value = (double)max_value / unit;
    double step = nice_step(top_value / 4);
    size_t n = 1;
    for (double v = step; v <= top_value * (1 + 1e-9) && n < max; v += step) {
        ticks[n].pos = bottom - v / top_value * (bottom - top);
        snprintf(ticks[n].label, sizeof ticks[n].label, "%g %s", v, units[u]);
        n++;
    }
    return n;
}

/* ---- blocks ----------------------------------------------------------------- */

/* lround(x) (halves away from zero) for the pixel positions of a rectangle,
 * without a call into libm: a map rounds several million of them. */
static inline long round_px(double x)
{
    if (!(x > -1e15 && x < 1e15))
        return lround(x);
    long t = (long)x;           /* toward zero; x - t is exact */
    if (x >= 0)
        return x - (double)t >= 0.5 ? t + 1 : t;
    return (double)t - x >= 0.5 ? t - 1 : t;
}

/* A rectangle's columns: alloc_ns .. free_ns (MF_LIVE_AT_END: to the
 * right edge), at least one pixel wide. */
static void rect_columns(const mf_svg_time_axis *time, uint64_t alloc_ns, uint64_t free_ns,
                         mf_svg_rect *rect)
{
    long right = round_px(time->x1);
    long x0 = round_px(mf_svg_time_x(time, alloc_ns));
    long x1 = free_ns == MF_LIVE_AT_END
                  ? right : round_px(mf_svg_time_x(time, free_ns > alloc_ns ? free_ns : alloc_ns));
    if (x0 >= right)
        x0 = right - 1;
    if (x1 <= x0)
        x1 = x0 + 1;
    rect->x = (int)x0;
    rect->w = (int)(x1 - x0);
}

/* A rectangle's rows: [start, start + span), at least one pixel tall
 * (grown inside its segment). */
static void rect_rows(const mf_svg_addr_axis *addr, uint64_t start, uint64_t span,
                      mf_svg_rect *rect)
{
    uint64_t end = start > UINT64_MAX - span ? UINT64_MAX : start + span;
    long y0 = round_px(mf_svg_addr_y(addr, end));
    long y1 = round_px(mf_svg_addr_y(addr, start));
    if (y1 <= y0) {             /* too small for a pixel: grow it inside its segment */
        const mf_svg_segment *seg = segment_of(addr, start);
        long seg_top = round_px(seg->bottom - seg->height);
        y0 = y1 - 1 >= seg_top ? y1 - 1 : seg_top;
        y1 = y0 + 1;
    }
    rect->y = (int)y0;
    rect->h = (int)(y1 - y0);
}

void mf_svg_block_rect(const mf_svg_time_axis *time, const mf_svg_addr_axis *addr,
                       const mf_block *block, mf_svg_rect *rect)
{
    rect_columns(time, block->alloc_ns, block->free_ns, rect);
    rect_rows(addr, block->addr, mf_block_span(block), rect);
}

void mf_svg_tile_rows(const mf_svg_addr_axis *addr, const mf_view *view, uint64_t granule,
                      mf_svg_rect *rect)
{
    unsigned g = view->tile_gshift;
    rect_rows(addr, g >= 64 ? 0 : granule << g, g >= 64 ? UINT64_MAX : UINT64_C(1) << g, rect);
}

void mf_svg_tile_columns(const mf_svg_time_axis *time, const mf_view *view, uint64_t col,
                         unsigned n, mf_svg_rect *rect)
{
    unsigned w = view->tile_wshift;
    uint64_t from = view->tile_origin + (col << w);
    uint64_t to = from + ((uint64_t)n << w) - 1;
    rect_columns(time, from, to < from ? UINT64_MAX - 1 : to, rect);
}
