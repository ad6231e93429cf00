/*
 * svg_blocks.c - the blocks of one panel's map.  The model keeps each
 * view's largest blocks whole (and the largest still live); of those, the
 * panel's quota are vector rectangles (grouped by colour, one Cairo path
 * per colour) with a hover entry each, when they cover a few pixels or
 * more.  Every other block - the rest of the kept ones, the view's tiles
 * (the cells every other block was painted into), its live blocks not
 * kept whole - is written straight into the
 * pixels of one image painted into the map, so any number of blocks costs
 * a bounded amount of SVG and no block vanishes (each covers >= 1 pixel).
 * Sub-blocks (regions inside other blocks, MF_FLAG_SUBBLOCK) come last, on
 * top of their containers' lanes, each with a hover entry: PyTorch's
 * tensors (device memory) filled with their scope's colour inside their
 * segment, other regions (the NVTX memory API) an outline only (white, then
 * dark inside it), so the block that holds them shows through.  See
 * svg_panel.h.
 */
#include "svg_panel.h"

#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One of the first kept blocks: where it is drawn, and whether one by one. */
typedef struct kept_rect {
    mf_svg_rect rect;
    int vector;
} kept_rect;

static uint32_t argb(mf_svg_rgb c)
{
    return 0xff000000u | (uint32_t)c.r << 16 | (uint32_t)c.g << 8 | c.b;
}

/* The pixels of the map: an image covering the plot area. */
typedef struct raster {
    const mf_svg_panel *panel;
    uint32_t *pixels;
    int stride, width, height, left, top;
    uint32_t live;
} raster;

/* Fill a rectangle (page coordinates) clipped to the image. */
static void fill(raster *r, const mf_svg_rect *rect, uint32_t color)
{
    int x = rect->x - r->left, y = rect->y - r->top;
    int x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
    int x1 = x + rect->w > r->width ? r->width : x + rect->w;
    int y1 = y + rect->h > r->height ? r->height : y + rect->h;
    for (int row = y0; row < y1; row++) {
        uint32_t *p = r->pixels + (size_t)row * (size_t)r->stride;
        for (int col = x0; col < x1; col++)
            p[col] = color;
    }
}

/* The dark "never freed" edge at the right end of a rectangle. */
static void live_edge(const mf_svg_rect *r, mf_svg_rect *edge)
{
    int w = r->w < MF_SVG_LIVE_EDGE ? r->w : MF_SVG_LIVE_EDGE;
    *edge = (mf_svg_rect){ r->x + r->w - w, r->y, w, r->h };
}

static void paint_block(raster *r, const mf_block *b)
{
    const mf_svg_panel *panel = r->panel;
    mf_svg_rect rect, edge;
    mf_svg_block_rect(&panel->time, &panel->addr, b, &rect);
    fill(r, &rect, argb(panel->colors.table[mf_svg_block_color(&panel->colors, b)]));
    if (mf_block_never_freed(b)) {
        live_edge(&rect, &edge);
        fill(r, &edge, r->live);
    }
}

static int paint_live(const mf_block *b, void *ctx)
{
    paint_block(ctx, b);
    return 0;
}

static void paint_tiles(raster *r, const mf_view *v)
{
    const mf_svg_panel *panel = r->panel;
    mf_svg_rect rect, edge;
    for (size_t i = 0; i < v->n_tiles; i++) {
        const mf_tile_strip *s = &v->tiles[i];
        unsigned k = 0, first, n;
        mf_svg_tile_rows(&panel->addr, v, s->granule, &rect);   /* the strip's one granule */
        while ((n = mf_tile_run(s, &k, &first)) > 0) {   /* cells painted alike: one rect */
            mf_svg_tile_columns(&panel->time, v, s->first_col + first, n, &rect);
            fill(r, &rect,
                 argb(panel->colors.table[mf_svg_tile_color(&panel->colors, &s->cells[first])]));
        }
        for (mf_tile_mask u = s->unfreed; u; u &= u - 1) {
            mf_svg_tile_columns(&panel->time, v, s->first_col + (unsigned)__builtin_ctz(u), 1,
                                &rect);
            live_edge(&rect, &edge);
            fill(r, &edge, r->live);
        }
    }
}

/*
 * Give the map's image its PNG encoding, made with libpng's fast settings
 * (no filters, quick zlib), as Cairo's SVG surface embeds an image's PNG
 * data as it is.  Without it the surface encodes the image itself with
 * libpng's defaults, whose adaptive filters and zlib level cost several
 * times as much on the map's flat runs of a few colours (docs/PERFORMANCE.md).
 * Every pixel the map paints is opaque or untouched (0), so Cairo's
 * premultiplied pixels are already the straight ones PNG stores.  On any
 * failure the image simply keeps no PNG data and Cairo encodes it.
 */
static void attach_png(cairo_surface_t *image, const raster *r)
{
    png_image png = {
        .version = PNG_IMAGE_VERSION, .width = (png_uint_32)r->width,
        .height = (png_uint_32)r->height, .flags = PNG_IMAGE_FLAG_FAST,
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        .format = PNG_FORMAT_BGRA,   /* 0xAARRGGBB in memory: B, G, R, A */
#else
        .format = PNG_FORMAT_ARGB,
#endif
    };
    png_alloc_size_t size = PNG_IMAGE_PNG_SIZE_MAX(png);
    void *data = malloc(size);
    if (!data)
        return;
    if (!png_image_write_to_memory(&png, data, &size, 0, r->pixels, r->stride * 4, NULL) ||
        cairo_surface_set_mime_data(image, CAIRO_MIME_TYPE_PNG, data, size, free, data) !=
            CAIRO_STATUS_SUCCESS) {
        png_image_free(&png);
        free(data);
    }
}

/* Draw every block not drawn as a vector into one image painted into the
 * map: the tiles and live blocks of every source view, then the kept
 * blocks not drawn as vectors (kept[0..k): the first k kept blocks'
 * choice), largest last, on top. */
static int draw_raster(cairo_t *cr, const mf_svg_panel *panel, const kept_rect *kept, size_t k)
{
    raster r = { .panel = panel, .left = MF_SVG_PLOT_X0, .top = (int)panel->box.map_top,
                 .width = MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0, .height = MF_SVG_MAP_H,
                 .live = argb(mf_svg_live_color) };
    cairo_surface_t *image = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, r.width, r.height);
    if (cairo_surface_status(image) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(image);
        return -1;
    }
    cairo_surface_flush(image);
    r.pixels = (uint32_t *)cairo_image_surface_get_data(image);
    r.stride = cairo_image_surface_get_stride(image) / 4;
    for (size_t s = 0; s < panel->n_sources; s++) {
        paint_tiles(&r, panel->sources[s]);
        mf_model_each_live(panel->model, panel->sources[s], paint_live, &r);
    }
    const mf_view *v = panel->dev;
    for (size_t i = v->n_blocks; i-- > 0;)
        if (i >= k || !kept[i].vector)
            paint_block(&r, &v->blocks[i]);
    cairo_surface_mark_dirty(image);
    if (cairo_surface_get_type(cairo_get_target(cr)) == CAIRO_SURFACE_TYPE_SVG)
        attach_png(image, &r);
    cairo_save(cr);
    cairo_set_source_surface(cr, image, r.left, r.top);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_rectangle(cr, r.left, r.top, r.width, r.height);
    cairo_fill(cr);
    cairo_restore(cr);
    cairo_surface_destroy(image);
    return 0;
}

/* Draw the kept blocks chosen as vectors (kept[0..n)) as rectangles,
 * one path per colour, then their never-freed edges as one path. */
static void draw_vectors(cairo_t *cr, const mf_svg_panel *panel, const kept_rect *kept, size_t n)
{
    const mf_view *v = panel->dev;
    mf_svg_rect e;
    for (size_t color = 0; color < panel->colors.n_table; color++) {
        int any = 0;
        for (size_t k = 0; k < n; k++) {
            const mf_svg_rect *r = &kept[k].rect;
            if (!kept[k].vector || mf_svg_block_color(&panel->colors, &v->blocks[k]) != color)
                continue;
            cairo_rectangle(cr, r->x, r->y, r->w, r->h);
            any = 1;
        }
        if (any) {
            mf_svg_set_rgb(cr, panel->colors.table[color]);
            cairo_fill(cr);
        }
    }
    int any_live = 0;
    for (size_t k = 0; k < n; k++) {
        if (!kept[k].vector || !mf_block_never_freed(&v->blocks[k]))
            continue;
        live_edge(&kept[k].rect, &e);
        cairo_rectangle(cr, e.x, e.y, e.w, e.h);
        any_live = 1;
    }
    if (any_live) {
        mf_svg_set_rgb(cr, mf_svg_live_color);
        cairo_fill(cr);
    }
}

/* A one-pixel frame along the inside of r, filled in whole pixels. */
static void frame(cairo_t *cr, int x, int y, int w, int h, mf_svg_rgb color)
{
    cairo_rectangle(cr, x, y, w, 1);
    cairo_rectangle(cr, x, y + h - 1, w, 1);
    cairo_rectangle(cr, x, y, 1, h);
    cairo_rectangle(cr, x + w - 1, y, 1, h);
    mf_svg_set_rgb(cr, color);
    cairo_fill(cr);
}

/* One sub-block's outline: a white frame on its edge, a dark one inside it
 * (when it is 4 pixels or more each way). */
static void outline(cairo_t *cr, const mf_svg_rect *r)
{
    frame(cr, r->x, r->y, r->w, r->h, mf_svg_subblock_color);
    if (r->w >= 4 && r->h >= 4)
        frame(cr, r->x + 1, r->y + 1, r->w - 2, r->h - 2, mf_svg_live_color);
}

/* A tensor (a sub-block of device memory: PyTorch's): filled with its
 * colour (its scope's), framed in white when it is 3 pixels or more each
 * way, so neighbours stay apart. */
static void tensor(cairo_t *cr, const mf_svg_panel *panel, const mf_block *b,
                   const mf_svg_rect *r)
{
    cairo_rectangle(cr, r->x, r->y, r->w, r->h);
    mf_svg_set_rgb(cr, panel->colors.table[mf_svg_block_color(&panel->colors, b)]);
    cairo_fill(cr);
    if (r->w >= 3 && r->h >= 3)
        frame(cr, r->x, r->y, r->w, r->h, mf_svg_subblock_color);
}

static int is_tensor(const mf_block *b)
{
    return (b->flags & MF_MEMKIND_MASK) >> MF_MEMKIND_SHIFT == MF_MEM_DEVICE;
}

/* The panel's sub-blocks over their lanes (largest first, so the smaller
 * are on top), with a hover entry each while overlay stays within budget. */
static int draw_subblocks(cairo_t *cr, const mf_svg_panel *panel, mf_sink *overlay,
                          size_t budget)
{
    for (size_t s = 0; s < panel->n_sources; s++) {
        const mf_view *v = panel->sources[s];
        for (size_t i = 0; i < v->n_subblocks; i++) {
            mf_svg_rect r;
            mf_svg_block_rect(&panel->time, &panel->addr, &v->subblocks[i], &r);
            if (is_tensor(&v->subblocks[i]))
                tensor(cr, panel, &v->subblocks[i], &r);
            else
                outline(cr, &r);
            size_t before = overlay ? overlay->len : 0;
            if (overlay && before < budget) {
                if (mf_svg_overlay_block(overlay, panel, &v->subblocks[i], &r) != 0)
                    return -1;
                if (overlay->len > budget)
                    overlay->len = before;
            }
        }
    }
    return 0;
}

/*
 * Where the first n kept blocks are drawn, and which of them one by one
 * (kept[k].vector): those that cover MF_SVG_MIN_VECTOR_PIXELS pixels or
 * more.  A block of a pixel or two cannot be pointed at among its
 * neighbours, and as a vector it would cost the SVG bytes (and Cairo the
 * time) of one that can: it is drawn as pixels of the image, as the
 * blocks not kept whole are.  Returns how many were chosen.
 */
static size_t choose_vectors(const mf_svg_panel *panel, size_t n, kept_rect *kept)
{
    size_t chosen = 0;
    for (size_t k = 0; k < n; k++) {
        mf_svg_rect *r = &kept[k].rect;
        mf_svg_block_rect(&panel->time, &panel->addr, &panel->dev->blocks[k], r);
        kept[k].vector = (int64_t)r->w * r->h >= MF_SVG_MIN_VECTOR_PIXELS;
        chosen += (size_t)kept[k].vector;
    }
    return chosen;
}

/*
 * Hover entries of the kept blocks chosen as vectors (kept[0..n)), largest
 * first, into entries while overlay->len + entries->len stays within
 * budget; the blocks past it are unchosen (drawn as pixels).  Returns how
 * many blocks got one, or (size_t)-1 when out of memory.
 */
static size_t write_hover(const mf_svg_panel *panel, kept_rect *kept, size_t n,
                          const mf_sink *overlay, size_t budget, mf_sink *entries)
{
    size_t got = 0, k;
    for (k = 0; k < n; k++) {
        if (!kept[k].vector)
            continue;
        size_t before = entries->len;
        if (mf_svg_overlay_block(entries, panel, &panel->dev->blocks[k], &kept[k].rect) != 0)
            return (size_t)-1;
        if (overlay->len + entries->len > budget) {
            entries->len = before;
            break;
        }
        got++;
    }
    for (; k < n; k++)
        kept[k].vector = 0;
    return got;
}

/* The hover entry of the pixel image: what it holds and why. */
static int write_raster_note(mf_sink *overlay, const mf_svg_panel *panel)
{
    char count[32], shown[32], text[256];
    mf_format_count(panel->n_raster, count, sizeof count);
    mf_format_count(panel->n_vector, shown, sizeof shown);
    snprintf(text, sizeof text,
             "%s smaller allocations are drawn as pixels here (no details); "
             "hover details are given for %s of the largest (%d pixels or more)",
             count, shown, MF_SVG_MIN_VECTOR_PIXELS);
    return mf_svg_overlay_note(overlay, MF_SVG_PLOT_X0, panel->box.map_top,
                               MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0, MF_SVG_MAP_H, text);
}

int mf_svg_draw_blocks(cairo_t *cr, mf_svg_panel *panel, size_t quota, mf_sink *overlay,
                       size_t overlay_budget)
{
    const mf_view *v = panel->dev;
    size_t k = quota < v->n_blocks ? quota : v->n_blocks;
    mf_sink entries = { 0 };
    int rc = -1;
    kept_rect *kept = malloc((k ? k : 1) * sizeof *kept);
    if (!kept)
        return -1;
    size_t n = choose_vectors(panel, k, kept);
    if (overlay) {
        n = write_hover(panel, kept, k, overlay, overlay_budget, &entries);
        if (n == (size_t)-1)
            goto out;
    }
    panel->n_vector = n;
    panel->n_raster = v->alloc_count > n ? v->alloc_count - n : 0;
    if (panel->n_raster > 0 && draw_raster(cr, panel, kept, k) != 0)
        goto out;
    draw_vectors(cr, panel, kept, k);
    if (overlay) {
        if (panel->n_raster > 0 && write_raster_note(overlay, panel) != 0)
            goto out;
        mf_sink_write(overlay, entries.buf, entries.len);
        if (overlay->error)
            goto out;
    }
    if (draw_subblocks(cr, panel, overlay, overlay_budget) != 0)
        goto out;
    rc = 0;
out:
    mf_sink_free(&entries);
    free(kept);
    return rc;
}
