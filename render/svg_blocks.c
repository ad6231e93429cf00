/*
 * svg_blocks.c - the blocks of one panel's map.  The largest blocks are
 * vector rectangles (grouped by colour, one Cairo path per colour) with a
 * hover entry each; all others are written straight into the pixels of one
 * image that is painted into the map, so any number of blocks costs a
 * bounded amount of SVG and no block vanishes (each covers >= 1 pixel).
 * Selection and rasterising are O(blocks).  See svg_panel.h.
 */
#include "svg_panel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bit length of a block's span: its size class for the selection. */
static unsigned size_class(const mf_block *block)
{
    return 64u - (unsigned)__builtin_clzll(mf_svg_block_span(block));
}

typedef struct candidate {
    uint64_t span;
    size_t index;
} candidate;

static int by_span_descending(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->span != y->span)
        return x->span > y->span ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * The quota largest blocks of dev (all if fewer), largest first, in out.
 * A histogram of size classes finds the cut in one pass; only the chosen
 * (at most quota) are sorted.  Returns the count.
 */
static size_t select_largest(const mf_device_model *dev, size_t quota, candidate *out)
{
    size_t n = dev->n_blocks, k = 0;
    size_t hist[65] = { 0 };
    int cut = -1;
    size_t partial = 0;
    if (quota < n) {
        for (size_t i = 0; i < n; i++)
            hist[size_class(&dev->blocks[i])]++;
        size_t taken = 0;
        cut = 64;
        while (cut >= 0 && taken + hist[cut] <= quota)
            taken += hist[cut--];
        partial = quota - taken;
    }
    for (size_t i = 0; i < n && k < quota; i++) {
        int c = cut < 0 ? 65 : (int)size_class(&dev->blocks[i]);
        if (c > cut || (c == cut && partial > 0)) {
            if (c == cut)
                partial--;
            out[k++] = (candidate){ mf_svg_block_span(&dev->blocks[i]), i };
        }
    }
    qsort(out, k, sizeof *out, by_span_descending);
    return k;
}

static uint32_t argb(mf_svg_rgb c)
{
    return 0xff000000u | (uint32_t)c.r << 16 | (uint32_t)c.g << 8 | c.b;
}

/* Fill a rectangle (image coordinates) clipped to the image. */
static void fill_pixels(uint32_t *pixels, int stride, int width, int height, int x, int y,
                        int w, int h, uint32_t color)
{
    int x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
    int x1 = x + w > width ? width : x + w, y1 = y + h > height ? height : y + h;
    for (int row = y0; row < y1; row++) {
        uint32_t *p = pixels + (size_t)row * (size_t)stride;
        for (int col = x0; col < x1; col++)
            p[col] = color;
    }
}

/* The dark "live at end" edge at the right end of a block's rectangle. */
static void live_edge(const mf_svg_rect *r, mf_svg_rect *edge)
{
    int w = r->w < MF_SVG_LIVE_EDGE ? r->w : MF_SVG_LIVE_EDGE;
    *edge = (mf_svg_rect){ r->x + r->w - w, r->y, w, r->h };
}

/* Draw every block not marked vector into one image painted into the map. */
static int draw_raster(cairo_t *cr, const mf_svg_panel *panel, const uint8_t *is_vector)
{
    int left = MF_SVG_PLOT_X0, top = (int)panel->box.map_top;
    int width = MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0, height = MF_SVG_MAP_H;
    cairo_surface_t *image = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
    if (cairo_surface_status(image) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(image);
        return -1;
    }
    cairo_surface_flush(image);
    uint32_t *pixels = (uint32_t *)cairo_image_surface_get_data(image);
    int stride = cairo_image_surface_get_stride(image) / 4;
    uint32_t live = argb(mf_svg_live_color);
    const mf_device_model *dev = panel->dev;
    for (size_t i = 0; i < dev->n_blocks; i++) {
        if (is_vector[i])
            continue;
        const mf_block *b = &dev->blocks[i];
        mf_svg_rect r, e;
        mf_svg_block_rect(&panel->time, &panel->addr, b, &r);
        uint32_t color = argb(panel->colors.table[mf_svg_block_color(&panel->colors, b)]);
        fill_pixels(pixels, stride, width, height, r.x - left, r.y - top, r.w, r.h, color);
        if (b->free_ns == MF_LIVE_AT_END) {
            live_edge(&r, &e);
            fill_pixels(pixels, stride, width, height, e.x - left, e.y - top, e.w, e.h, live);
        }
    }
    cairo_surface_mark_dirty(image);
    cairo_save(cr);
    cairo_set_source_surface(cr, image, left, top);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_rectangle(cr, left, top, width, height);
    cairo_fill(cr);
    cairo_restore(cr);
    cairo_surface_destroy(image);
    return 0;
}

/* Draw the chosen blocks as rectangles, one path per colour, then their
 * live-at-end edges as one path. */
static void draw_vectors(cairo_t *cr, const mf_svg_panel *panel, const candidate *chosen,
                         size_t n)
{
    const mf_device_model *dev = panel->dev;
    mf_svg_rect r, e;
    for (size_t color = 0; color < panel->colors.n_table; color++) {
        int any = 0;
        for (size_t k = 0; k < n; k++) {
            const mf_block *b = &dev->blocks[chosen[k].index];
            if (mf_svg_block_color(&panel->colors, b) != color)
                continue;
            mf_svg_block_rect(&panel->time, &panel->addr, b, &r);
            cairo_rectangle(cr, r.x, r.y, r.w, r.h);
            any = 1;
        }
        if (any) {
            mf_svg_set_rgb(cr, panel->colors.table[color]);
            cairo_fill(cr);
        }
    }
    int any_live = 0;
    for (size_t k = 0; k < n; k++) {
        const mf_block *b = &dev->blocks[chosen[k].index];
        if (b->free_ns != MF_LIVE_AT_END)
            continue;
        mf_svg_block_rect(&panel->time, &panel->addr, b, &r);
        live_edge(&r, &e);
        cairo_rectangle(cr, e.x, e.y, e.w, e.h);
        any_live = 1;
    }
    if (any_live) {
        mf_svg_set_rgb(cr, mf_svg_live_color);
        cairo_fill(cr);
    }
}

/*
 * Hover entries of the chosen blocks, largest first, into entries while
 * overlay->len + entries->len stays within budget.  Returns how many
 * blocks got one (those stay vector), or (size_t)-1 when out of memory.
 */
static size_t write_hover(const mf_svg_panel *panel, const candidate *chosen, size_t n,
                          const mf_sink *overlay, size_t budget, mf_sink *entries)
{
    mf_svg_threads threads;
    if (mf_svg_threads_build(&threads, panel->model) != 0)
        return (size_t)-1;
    size_t k;
    for (k = 0; k < n; k++) {
        size_t before = entries->len;
        const mf_block *b = &panel->dev->blocks[chosen[k].index];
        mf_svg_rect r;
        mf_svg_block_rect(&panel->time, &panel->addr, b, &r);
        if (mf_svg_overlay_block(entries, panel, &threads, b, &r) != 0) {
            mf_svg_threads_free(&threads);
            return (size_t)-1;
        }
        if (overlay->len + entries->len > budget) {
            entries->len = before;
            entries->buf[before] = '\0';
            break;
        }
    }
    mf_svg_threads_free(&threads);
    return k;
}

/* The hover entry of the pixel image: what it holds and why. */
static int write_raster_note(mf_sink *overlay, const mf_svg_panel *panel)
{
    char count[32], shown[32], text[256];
    mf_format_count(panel->n_raster, count, sizeof count);
    mf_format_count(panel->n_vector, shown, sizeof shown);
    snprintf(text, sizeof text,
             "%s smaller allocations are drawn as pixels here (no details); "
             "hover details are given for the %s largest",
             count, shown);
    return mf_svg_overlay_note(overlay, MF_SVG_PLOT_X0, panel->box.map_top,
                               MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0, MF_SVG_MAP_H, text);
}

int mf_svg_draw_blocks(cairo_t *cr, mf_svg_panel *panel, size_t quota, mf_sink *overlay,
                       size_t overlay_budget)
{
    const mf_device_model *dev = panel->dev;
    size_t n = dev->n_blocks;
    if (quota > n)
        quota = n;
    candidate *chosen = malloc((quota ? quota : 1) * sizeof *chosen);
    uint8_t *is_vector = calloc(n ? n : 1, 1);
    mf_sink entries = { 0 };
    int rc = -1;
    if (!chosen || !is_vector)
        goto out;
    size_t k = select_largest(dev, quota, chosen);
    if (overlay) {
        k = write_hover(panel, chosen, k, overlay, overlay_budget, &entries);
        if (k == (size_t)-1)
            goto out;
    }
    for (size_t i = 0; i < k; i++)
        is_vector[chosen[i].index] = 1;
    panel->n_vector = k;
    panel->n_raster = n - k;
    if (panel->n_raster > 0 && draw_raster(cr, panel, is_vector) != 0)
        goto out;
    draw_vectors(cr, panel, chosen, k);
    if (overlay) {
        if (panel->n_raster > 0 && write_raster_note(overlay, panel) != 0)
            goto out;
        mf_sink_write(overlay, entries.buf, entries.len);
        if (overlay->error)
            goto out;
    }
    rc = 0;
out:
    free(chosen);
    free(is_vector);
    mf_sink_free(&entries);
    return rc;
}
