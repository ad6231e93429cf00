/*
 * svg_pixel.c - an SVG read back with librsvg, for the shell tests of the
 * pictures drawn from real logs (flamegraph.svg, memory_flow.svg --color-by
 * site): prints the colour of a pixel, and whether it is the palette colour
 * memflow gives a name (svg_color.c: palette[FNV-1a(name) % 16]).
 *
 * Usage: svg_pixel SVG X Y [NAME]   -> "#rrggbb" or "#rrggbb NAME: yes|no (#expected)"
 *        svg_pixel --png SVG OUT.png (the rendering, to look at)
 * Exit status: 0; 1 if librsvg cannot read or render SVG, or X Y lie outside.
 */
#include <librsvg/rsvg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg_color.h"

static cairo_surface_t *render(const char *path)
{
    GError *error = NULL;
    RsvgHandle *handle = rsvg_handle_new_from_file(path, &error);
    gdouble w = 0, h = 0;
    if (!handle || !rsvg_handle_get_intrinsic_size_in_pixels(handle, &w, &h)) {
        fprintf(stderr, "svg_pixel: librsvg cannot load %s: %s\n", path,
                error ? error->message : "no size");
        return NULL;
    }
    cairo_surface_t *image = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)w, (int)h);
    cairo_t *cr = cairo_create(image);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    RsvgRectangle viewport = { 0, 0, w, h };
    int ok = rsvg_handle_render_document(handle, cr, &viewport, &error);
    cairo_destroy(cr);
    g_object_unref(handle);
    if (!ok) {
        fprintf(stderr, "svg_pixel: librsvg cannot render %s: %s\n", path,
                error ? error->message : "?");
        cairo_surface_destroy(image);
        return NULL;
    }
    cairo_surface_flush(image);
    return image;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--png")) {
        cairo_surface_t *image = render(argv[2]);
        int rc = image && cairo_surface_write_to_png(image, argv[3]) == CAIRO_STATUS_SUCCESS;
        if (image)
            cairo_surface_destroy(image);
        return rc ? 0 : 1;
    }
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: svg_pixel SVG X Y [NAME] | svg_pixel --png SVG OUT.png\n");
        return 2;
    }
    cairo_surface_t *image = render(argv[1]);
    if (!image)
        return 1;
    int x = atoi(argv[2]), y = atoi(argv[3]);
    if (x < 0 || y < 0 || x >= cairo_image_surface_get_width(image) ||
        y >= cairo_image_surface_get_height(image)) {
        fprintf(stderr, "svg_pixel: (%d, %d) is outside %s\n", x, y, argv[1]);
        return 1;
    }
    const unsigned char *row = cairo_image_surface_get_data(image) +
                               (size_t)y * (size_t)cairo_image_surface_get_stride(image);
    unsigned got = ((const uint32_t *)row)[x] & 0xffffffu;
    printf("#%06x", got);
    if (argc == 5) {
        mf_svg_rgb c = mf_svg_scope_color(argv[4]);
        unsigned want = (unsigned)c.r << 16 | (unsigned)c.g << 8 | c.b;
        printf(" %s: %s (#%06x)", argv[4], got == want ? "yes" : "no", want);
    }
    putchar('\n');
    cairo_surface_destroy(image);
    return 0;
}
