/*
 * check_svg.c - Check suite of the memory_flow renderer (render/svg*.c).
 *
 * Models are built by hand (svg_models.c) with blocks at known addresses
 * and times; mf_svg_locate says where the writer puts them.  Every SVG is
 * rendered back to pixels with librsvg (whose XML parser also proves the
 * file is well-formed) and the pixels are checked: a block's scope colour,
 * the background where nothing lived, the peak line, the live-at-end edge,
 * tiny blocks still visible, and a million blocks within 10 MB.  PNG pixels
 * come from cairo_image_surface_create_from_png; the PDF is checked by its
 * header.  The layout and text helpers are compiled in and tested directly.
 */
#include <cairo.h>
#include <check.h>
#include <errno.h>
#include <librsvg/rsvg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "svg.h"
#include "svg_color.h"
#include "svg_layout.h"
#include "svg_models.h"

static const mf_svg_options scope_opt = { MF_COLOR_BY_SCOPE, -1, NULL, 0 };
static const uint16_t cpu0 = MF_DEVICE(MF_DEVICE_CPU, 0);

/* Palette colours of the test scopes (FNV-1a of the name mod 16). */
#define RGB_NET_DENSE0 0x17becfu   /* palette[14] */
#define RGB_NET_DENSE1 0xf7b6d2u   /* palette[11] */
#define RGB_WEIRD 0xffbb78u        /* palette[3] */
#define RGB_BACKGROUND 0xf8f8f8u
#define RGB_PEAK 0xe41a1cu
#define RGB_LIVE_EDGE 0x222222u
#define RGB_WHITE 0xffffffu
#define RGB_RAMP_LOW 0x440154u     /* first ramp stop (68, 1, 84) */
#define RGB_RAMP_HIGH 0xfde725u    /* last ramp stop (253, 231, 37) */

/* ---- helpers ------------------------------------------------------------- */

/* A path under $top_builddir/tests/out/check_svg (created). */
static const char *out_path(const char *name)
{
    static char path[4096];
    const char *top = getenv("top_builddir");
    char dir[4000];
    snprintf(dir, sizeof dir, "%s/tests", top ? top : ".");
    mkdir(dir, 0777);
    snprintf(dir, sizeof dir, "%s/tests/out", top ? top : ".");
    mkdir(dir, 0777);
    snprintf(dir, sizeof dir, "%s/tests/out/check_svg", top ? top : ".");
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static void write_or_fail(const mf_model *m, const char *path, const mf_svg_options *opt)
{
    char err[512] = "";
    int rc = mf_svg_write(m, path, opt, err, sizeof err);
    ck_assert_msg(rc == 0, "mf_svg_write(%s): %s", path, err);
}

/* Render an SVG file with librsvg into a white image of the page's size. */
static cairo_surface_t *rsvg_render(const char *path)
{
    GError *error = NULL;
    RsvgHandle *handle = rsvg_handle_new_from_file(path, &error);
    ck_assert_msg(handle != NULL, "librsvg cannot load %s: %s", path,
                  error ? error->message : "?");
    gdouble w = 0, h = 0;
    ck_assert(rsvg_handle_get_intrinsic_size_in_pixels(handle, &w, &h));
    cairo_surface_t *image = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)w, (int)h);
    cairo_t *cr = cairo_create(image);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    RsvgRectangle viewport = { 0, 0, w, h };
    ck_assert_msg(rsvg_handle_render_document(handle, cr, &viewport, &error),
                  "librsvg cannot render %s: %s", path, error ? error->message : "?");
    cairo_destroy(cr);
    g_object_unref(handle);
    cairo_surface_flush(image);
    return image;
}

/* The 0xRRGGBB of pixel (x, y). */
static unsigned pixel(cairo_surface_t *image, int x, int y)
{
    ck_assert_int_ge(x, 0);
    ck_assert_int_ge(y, 0);
    ck_assert_int_lt(x, cairo_image_surface_get_width(image));
    ck_assert_int_lt(y, cairo_image_surface_get_height(image));
    const unsigned char *row = cairo_image_surface_get_data(image) +
                               (size_t)y * (size_t)cairo_image_surface_get_stride(image);
    return ((const uint32_t *)row)[x] & 0xffffffu;
}

#define ck_assert_pixel(image, x, y, rgb)                                                     \
    do {                                                                                       \
        unsigned got_ = pixel((image), (x), (y));                                              \
        ck_assert_msg(got_ == (rgb), "pixel (%d, %d): expected #%06x, got #%06x", (int)(x),    \
                      (int)(y), (unsigned)(rgb), got_);                                        \
    } while (0)

/* Pixel coordinates of device's memory at (t_rel, addr) in model m. */
static void locate(const mf_model *m, const mf_svg_options *opt, uint16_t device, uint64_t t_rel,
                   uint64_t addr, int *x, int *y)
{
    double fx, fy;
    ck_assert_int_eq(mf_svg_locate(m, opt, device, 0, SVGT_T0 + t_rel, addr, &fx, &fy, NULL), 0);
    *x = (int)fx;
    *y = (int)fy;
}

static off_t file_size(const char *path)
{
    struct stat st;
    ck_assert_msg(stat(path, &st) == 0, "%s: %s", path, strerror(errno));
    return st.st_size;
}

/* The marks of the basic scene, checked on any rendering of it. */
static void check_basic_pixels(cairo_surface_t *image, const mf_model *m)
{
    int x, y, peak_x, y_b, y_c_bottom, y_heap_top;
    /* A (net_dense0:) at 450 ms, mid-address: its scope colour. */
    locate(m, &scope_opt, cpu0, 450 * SVGT_MS, SVGT_A_ADDR + 128 * 1024, &x, &y);
    ck_assert_pixel(image, x, y, RGB_NET_DENSE0);
    /* The same address at 50 ms: nothing lived there yet. */
    locate(m, &scope_opt, cpu0, 50 * SVGT_MS, SVGT_A_ADDR + 128 * 1024, &x, &y);
    ck_assert_pixel(image, x, y, RGB_BACKGROUND);
    /* A at 650 ms: freed at 600 ms, background again. */
    locate(m, &scope_opt, cpu0, 650 * SVGT_MS, SVGT_A_ADDR + 128 * 1024, &x, &y);
    ck_assert_pixel(image, x, y, RGB_BACKGROUND);
    /* The weird scope's block (C) in the high segment. */
    locate(m, &scope_opt, cpu0, 500 * SVGT_MS, SVGT_C_ADDR + 512 * 1024, &x, &y);
    ck_assert_pixel(image, x, y, RGB_WEIRD);
    /* The peak (300 ms) line: red in the curve above the peak, behind the
     * blocks in the map (A lives then, so A's colour shows), and red in
     * the map where nothing lives (a later peak is checked in test_peak_line). */
    mf_svg_panel_box box;
    ck_assert_int_eq(mf_svg_locate(m, &scope_opt, cpu0, 0, 0, 0, NULL, NULL, &box), 0);
    locate(m, &scope_opt, cpu0, 300 * SVGT_MS, SVGT_A_ADDR + 128 * 1024, &peak_x, &y);
    ck_assert_pixel(image, peak_x, (int)box.curve_top + 4, RGB_PEAK);
    ck_assert_pixel(image, peak_x - 2, (int)box.curve_top + 4, RGB_WHITE);
    ck_assert_pixel(image, peak_x, y, RGB_NET_DENSE0);
    /* B is live at end: its colour, then the dark edge at the right end. */
    locate(m, &scope_opt, cpu0, 900 * SVGT_MS, SVGT_B_ADDR + 128 * 1024, &x, &y_b);
    ck_assert_pixel(image, x, y_b, RGB_NET_DENSE1);
    ck_assert_pixel(image, MF_SVG_PLOT_X1 - 1, y_b, RGB_LIVE_EDGE);
    ck_assert_pixel(image, MF_SVG_PLOT_X1 - MF_SVG_LIVE_EDGE, y_b, RGB_LIVE_EDGE);
    ck_assert_pixel(image, MF_SVG_PLOT_X1 - MF_SVG_LIVE_EDGE - 1, y_b, RGB_NET_DENSE1);
    /* The gap between the heap and 0x7f... is a white break band. */
    locate(m, &scope_opt, cpu0, 0, SVGT_C_ADDR, &x, &y_c_bottom);
    locate(m, &scope_opt, cpu0, 0, SVGT_B_ADDR + 256 * 1024, &x, &y_heap_top);
    ck_assert_int_eq(y_heap_top - y_c_bottom, MF_SVG_BREAK_H);
    ck_assert_pixel(image, MF_SVG_PLOT_X0 + 20, (y_c_bottom + y_heap_top) / 2, RGB_WHITE);
}

/* ---- pictures ---------------------------------------------------------------- */

START_TEST(test_svg_pixels)
{
    mf_model *m = svgt_model_basic();
    const char *path = out_path("basic.svg");
    write_or_fail(m, path, &scope_opt);
    cairo_surface_t *image = rsvg_render(path);
    ck_assert_int_eq(cairo_image_surface_get_width(image), MF_SVG_PAGE_WIDTH);
    ck_assert_int_eq(cairo_image_surface_get_height(image), (int)mf_svg_page_height(1));
    check_basic_pixels(image, m);
    cairo_surface_destroy(image);
    svgt_model_free(m);
}
END_TEST

/* The hover rect whose title holds `text` in the SVG at path: its x, y, w, h. */
static void hover_rect_of(const char *path, const char *text, int *x, int *y, int *w, int *h)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *at = strstr(buf, text);
    ck_assert_msg(at != NULL, "no hover title with \"%s\" in %s", text, path);
    char *rect = at;
    while (rect > buf && strncmp(rect, "<rect ", 6) != 0)
        rect--;
    ck_assert_int_eq(sscanf(rect, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\">", x, y, w, h),
                     4);
}

/* A sub-block (a region inside block A) is an outline over A's lane, white
 * then dark, with A's colour inside it; its hover title says what it is;
 * every other mark of the scene is unchanged, and A counts once. */
START_TEST(test_subblock_outline)
{
    svgt_scene *s = svgt_scene_basic();
    svgt_block(s, cpu0, "layer:", "weights", SVGT_A_ADDR + 32 * 1024, 64 * 1024, 64 * 1024,
               200 * SVGT_MS, 400 * SVGT_MS, 101);
    svgt_last_block(s)->flags = MF_FLAG_SUBBLOCK;
    mf_model *m = svgt_finish(s);
    const mf_device_model *d = mf_model_device(m, cpu0);
    mf_model *plain = svgt_model_basic();
    ck_assert_uint_eq(d->alloc_count, 3);
    ck_assert_uint_eq(d->peak_bytes, mf_model_device(plain, cpu0)->peak_bytes);
    svgt_model_free(plain);
    ck_assert_uint_eq(d->sub.alloc_count, 1);
    const char *path = out_path("subblock.svg");
    write_or_fail(m, path, &scope_opt);
    int x, y, w, h;
    hover_rect_of(path, "scope: layer:\nname: weights\nrequested 65,536 B (64.0 KiB)", &x, &y, &w,
                  &h);
    hover_rect_of(path, "pid 4242\na region inside another block</title>", &x, &y, &w, &h);
    int sx, sy;
    locate(m, &scope_opt, cpu0, 200 * SVGT_MS, SVGT_A_ADDR + 96 * 1024, &sx, &sy);
    ck_assert_int_ge(w, 20);
    ck_assert_int_ge(h, 8);
    ck_assert_int_le(abs(x - sx), 1);   /* at its allocation time, at A's address + 32 KiB.. */
    ck_assert_int_le(abs(y - sy), 1);   /* ..+ 96 KiB (the top of the rect is its end) */
    cairo_surface_t *image = rsvg_render(path);
    int mid = y + h / 2;
    ck_assert_pixel(image, x, mid, RGB_WHITE);
    ck_assert_pixel(image, x + w - 1, mid, RGB_WHITE);
    ck_assert_pixel(image, x + w / 2, y, RGB_WHITE);
    ck_assert_pixel(image, x + 1, mid, RGB_LIVE_EDGE);
    ck_assert_pixel(image, x + w / 2, y + h - 2, RGB_LIVE_EDGE);
    ck_assert_pixel(image, x + w / 2, mid, RGB_NET_DENSE0);   /* A shows through */
    ck_assert_pixel(image, x - 2, mid, RGB_NET_DENSE0);       /* A beside it */
    check_basic_pixels(image, m);
    cairo_surface_destroy(image);
    svgt_model_free(m);
}
END_TEST

START_TEST(test_png_pixels)
{
    mf_model *m = svgt_model_basic();
    const char *path = out_path("basic.png");
    write_or_fail(m, path, &scope_opt);
    cairo_surface_t *image = cairo_image_surface_create_from_png(path);
    ck_assert_int_eq(cairo_surface_status(image), CAIRO_STATUS_SUCCESS);
    ck_assert_int_eq(cairo_image_surface_get_width(image), MF_SVG_PAGE_WIDTH);
    check_basic_pixels(image, m);
    cairo_surface_destroy(image);
    svgt_model_free(m);
}
END_TEST

START_TEST(test_pdf_written)
{
    mf_model *m = svgt_model_basic();
    const char *path = out_path("basic.pdf");
    write_or_fail(m, path, &scope_opt);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char head[5] = { 0 };
    ck_assert_int_eq(fread(head, 1, 5, f), 5);
    fclose(f);
    ck_assert_mem_eq(head, "%PDF-", 5);
    ck_assert_int_gt(file_size(path), 4000);
    svgt_model_free(m);
}
END_TEST

START_TEST(test_color_by_lifetime_and_size)
{
    mf_model *m = svgt_model_basic();
    int x, y;
    /* Lifetimes: A 500 ms (shortest), B 800 ms to the end (longest). */
    mf_svg_options opt = { MF_COLOR_BY_LIFETIME, -1, NULL, 0 };
    const char *path = out_path("lifetime.svg");
    write_or_fail(m, path, &opt);
    cairo_surface_t *image = rsvg_render(path);
    locate(m, &opt, cpu0, 450 * SVGT_MS, SVGT_A_ADDR + 128 * 1024, &x, &y);
    ck_assert_pixel(image, x, y, RGB_RAMP_LOW);
    locate(m, &opt, cpu0, 900 * SVGT_MS, SVGT_B_ADDR + 128 * 1024, &x, &y);
    ck_assert_pixel(image, x, y, RGB_RAMP_HIGH);
    cairo_surface_destroy(image);
    /* Sizes: B 256 KiB - 8 (smallest), C 1 MiB (largest). */
    opt.color_by = MF_COLOR_BY_SIZE;
    path = out_path("size.png");
    write_or_fail(m, path, &opt);
    image = cairo_image_surface_create_from_png(path);
    locate(m, &opt, cpu0, 900 * SVGT_MS, SVGT_B_ADDR + 128 * 1024, &x, &y);
    ck_assert_pixel(image, x, y, RGB_RAMP_LOW);
    locate(m, &opt, cpu0, 500 * SVGT_MS, SVGT_C_ADDR + 512 * 1024, &x, &y);
    ck_assert_pixel(image, x, y, RGB_RAMP_HIGH);
    cairo_surface_destroy(image);
    svgt_model_free(m);
}
END_TEST

/* A 1-byte block living 1 ns near a 64 MiB one still gets its pixel. */
START_TEST(test_tiny_block_visible)
{
    svgt_scene *s = svgt_model_new(1000 * SVGT_MS, "tiny");
    svgt_block(s, cpu0, "tiny:", "t", 0x100000, 1, 1, 875 * SVGT_MS, 875 * SVGT_MS + 1, 1);
    svgt_block(s, cpu0, "big:", "b", 0x200000, 64 << 20, 64 << 20, 0, 800 * SVGT_MS, 1);
    mf_model *m = svgt_finish(s);
    const char *path = out_path("tiny.svg");
    write_or_fail(m, path, &scope_opt);
    cairo_surface_t *image = rsvg_render(path);
    int x, y;
    locate(m, &scope_opt, cpu0, 875 * SVGT_MS, 0x100000, &x, &y);   /* x = 889 exactly */
    mf_svg_rgb tiny = mf_svg_scope_color("tiny:");
    unsigned rgb = (unsigned)tiny.r << 16 | (unsigned)tiny.g << 8 | tiny.b;
    /* Segment bottom: the one pixel row above y, the column of x. */
    ck_assert_pixel(image, x, y - 1, rgb);
    ck_assert_pixel(image, x + 2, y - 1, RGB_BACKGROUND);
    cairo_surface_destroy(image);
    svgt_model_free(m);
}
END_TEST

/* The peak line runs through the map behind the blocks: red where nothing
 * lives, while a one-pixel block allocated at the peak stays visible. */
START_TEST(test_peak_line)
{
    svgt_scene *s = svgt_model_new(1000 * SVGT_MS, "peak");
    svgt_block(s, cpu0, "base:", "b", 0x100000, 4 << 20, 4 << 20, 0, 900 * SVGT_MS, 1);
    svgt_block(s, cpu0, "spike:", "s", 0x600000, 1 << 20, 1 << 20, 500 * SVGT_MS,
               500 * SVGT_MS + 1000, 1);
    mf_model *m = svgt_finish(s);
    ck_assert_uint_eq(m->devices[0].peak_time_ns, SVGT_T0 + 500 * SVGT_MS);
    const char *path = out_path("peak.svg");
    write_or_fail(m, path, &scope_opt);
    cairo_surface_t *image = rsvg_render(path);
    int x, y_spike, y_empty;
    locate(m, &scope_opt, cpu0, 500 * SVGT_MS, 0x600000 + (1 << 19), &x, &y_spike);
    locate(m, &scope_opt, cpu0, 500 * SVGT_MS, 0x500000 + (1 << 19), &x, &y_empty);
    ck_assert_int_eq(x, 556);   /* 112 + 888 / 2 */
    mf_svg_rgb spike = mf_svg_scope_color("spike:");
    ck_assert_pixel(image, x, y_spike, (unsigned)spike.r << 16 | (unsigned)spike.g << 8 | spike.b);
    ck_assert_pixel(image, x + 1, y_spike, RGB_BACKGROUND);
    ck_assert_pixel(image, x, y_empty, RGB_PEAK);
    ck_assert_pixel(image, x + 1, y_empty, RGB_BACKGROUND);
    cairo_surface_destroy(image);
    svgt_model_free(m);
}
END_TEST

/* A GPU driver's samples far above the program's own bytes (the CUDA
 * context) go off scale: the events' curve keeps its height, so the peak
 * dot sits at 1/1.1 of the curve, not squashed near the bottom. */
START_TEST(test_gpu_samples_off_scale)
{
    uint16_t gpu0 = MF_DEVICE(MF_DEVICE_GPU, 0);
    svgt_scene *s = svgt_model_new(1000 * SVGT_MS, "gpu");
    svgt_block(s, gpu0, "w:", "w", 0x7f5000000000ull, 8 << 20, 8 << 20, 375 * SVGT_MS,
               750 * SVGT_MS, 1);
    svgt_snapshot(s, gpu0, 100 * SVGT_MS, 600ull << 20);
    svgt_snapshot(s, gpu0, 500 * SVGT_MS, 608ull << 20);
    mf_model *m = svgt_finish(s);
    const char *path = out_path("gpu_off_scale.png");
    write_or_fail(m, path, &scope_opt);
    cairo_surface_t *image = cairo_image_surface_create_from_png(path);
    mf_svg_panel_box box;
    double fx;
    ck_assert_int_eq(mf_svg_locate(m, &scope_opt, gpu0, 0, SVGT_T0 + 375 * SVGT_MS, 0, &fx, NULL,
                                   &box), 0);
    ck_assert(fx == 445);   /* 112 + 888 * 3 / 8 */
    ck_assert_pixel(image, 445, (int)box.curve_bottom - 100, RGB_PEAK);
    cairo_surface_destroy(image);
    svgt_model_free(m);
}
END_TEST

/* Whether pixel (x, y) is within tol of rgb on every channel (antialiased
 * lines). */
static int pixel_near(cairo_surface_t *image, int x, int y, unsigned rgb, int tol)
{
    unsigned got = pixel(image, x, y);
    for (int shift = 0; shift < 24; shift += 8) {
        int d = (int)(got >> shift & 0xff) - (int)(rgb >> shift & 0xff);
        if (d > tol || d < -tol)
            return 0;
    }
    return 1;
}

/* The allocator's samples (basic scene: 400 KiB at 150 ms, 1800 KiB at 350
 * ms, 1400 KiB at 700 ms) are drawn as samples: a step at 400 KiB from 150
 * ms that stops at 350 ms, and no line joining it to the next sample (half
 * way up between the two values at 350 ms, no sample colour). */
START_TEST(test_samples_as_steps)
{
    mf_model *m = svgt_model_basic();
    const char *path = out_path("samples.png");
    write_or_fail(m, path, &scope_opt);
    cairo_surface_t *image = cairo_image_surface_create_from_png(path);
    mf_svg_panel_box box;
    double fx250, fx350;
    ck_assert_int_eq(mf_svg_locate(m, &scope_opt, cpu0, 0, SVGT_T0 + 250 * SVGT_MS, 0, &fx250,
                                   NULL, &box), 0);
    ck_assert_int_eq(mf_svg_locate(m, &scope_opt, cpu0, 0, SVGT_T0 + 350 * SVGT_MS, 0, &fx350,
                                   NULL, NULL), 0);
    /* the curve's top is 10% over the highest sample (above the events) */
    double max = 1800 * 1024 + 1800 * 1024 / 10, h = box.curve_bottom - box.curve_top;
    double y400 = box.curve_bottom - 400 * 1024 / max * h;
    double y1800 = box.curve_bottom - 1800 * 1024 / max * h;
    unsigned orange = (unsigned)mf_svg_sample_color.r << 16 | (unsigned)mf_svg_sample_color.g << 8 |
                      mf_svg_sample_color.b;
    int on_step = 0;
    for (int y = (int)y400 - 1; y <= (int)y400 + 1; y++)
        on_step |= pixel_near(image, (int)fx250, y, orange, 48);
    ck_assert_msg(on_step, "no sample step at 400 KiB at 250 ms (x %d, y %.1f)", (int)fx250, y400);
    for (int x = (int)fx350 - 1; x <= (int)fx350 + 1; x++)
        ck_assert_msg(!pixel_near(image, x, (int)((y400 + y1800) / 2), orange, 96),
                      "a line joins two samples at 350 ms (x %d)", x);
    cairo_surface_destroy(image);
    svgt_model_free(m);
}
END_TEST

/* Two processes (a fork) with blocks at the same addresses on cpu/0: one
 * panel each, so neither hides the other; ten processes: seven panels of
 * their own (the seven largest peaks) and one for the other three. */
START_TEST(test_processes_apart)
{
    svgt_scene *s = svgt_model_new(1000 * SVGT_MS, "parent");
    svgt_block(s, cpu0, "parent:", "p", 0x1000, 0x1000, 0x1000, 100 * SVGT_MS, 500 * SVGT_MS, 1);
    svgt_last_block(s)->pid = 100;
    svgt_block(s, cpu0, "child:", "c", 0x1000, 0x1000, 0x1000, 300 * SVGT_MS, 900 * SVGT_MS, 2);
    svgt_last_block(s)->pid = 200;
    mf_model *m = svgt_finish(s);
    const char *path = out_path("fork.svg");
    write_or_fail(m, path, &scope_opt);
    cairo_surface_t *image = rsvg_render(path);
    ck_assert_int_eq(cairo_image_surface_get_height(image), (int)mf_svg_page_height(2));
    double x, y_parent, y_child;
    mf_svg_panel_box parent_box, child_box;
    ck_assert_int_eq(mf_svg_locate(m, &scope_opt, cpu0, 100, SVGT_T0 + 400 * SVGT_MS, 0x1800, &x,
                                   &y_parent, &parent_box), 0);
    ck_assert_int_eq(mf_svg_locate(m, &scope_opt, cpu0, 200, SVGT_T0 + 400 * SVGT_MS, 0x1800, &x,
                                   &y_child, &child_box), 0);
    ck_assert(child_box.top >= parent_box.bottom);
    mf_svg_rgb parent = mf_svg_scope_color("parent:"), child = mf_svg_scope_color("child:");
    ck_assert_pixel(image, (int)x, (int)y_parent,
                    (unsigned)parent.r << 16 | (unsigned)parent.g << 8 | parent.b);
    ck_assert_pixel(image, (int)x, (int)y_child,
                    (unsigned)child.r << 16 | (unsigned)child.g << 8 | child.b);
    cairo_surface_destroy(image);
    svgt_model_free(m);

    s = svgt_model_new(1000 * SVGT_MS, "ranks");
    for (uint32_t pid = 1; pid <= 10; pid++) {
        uint64_t size = 4096ull * pid;
        svgt_block(s, cpu0, "rank:", "r", 0x100000, size, size, pid * SVGT_MS, 500 * SVGT_MS, pid);
        svgt_last_block(s)->pid = pid;
    }
    m = svgt_finish(s);
    path = out_path("ranks.svg");
    write_or_fail(m, path, &scope_opt);
    image = rsvg_render(path);
    ck_assert_int_eq(cairo_image_surface_get_height(image), (int)mf_svg_page_height(8));
    cairo_surface_destroy(image);
    /* the panels go to the largest peaks (pids 4..10), not the lowest pids */
    for (uint32_t pid = 1; pid <= 10; pid++)
        ck_assert_int_eq(mf_svg_locate(m, &scope_opt, cpu0, pid, SVGT_T0 + 600 * SVGT_MS, 0x100000,
                                       NULL, NULL, NULL),
                         pid >= 4 ? 0 : -1);
    svgt_model_free(m);
}
END_TEST

/* Two devices: two panels sharing the time axis, the GPU block below. */
START_TEST(test_two_devices)
{
    svgt_scene *s = svgt_scene_basic();
    uint16_t gpu0 = MF_DEVICE(MF_DEVICE_GPU, 0);
    svgt_block(s, gpu0, "gpu_weights:", "w", 0x7f5000000000ull, 8 << 20, 8 << 20, 100 * SVGT_MS,
               700 * SVGT_MS, 101);
    mf_model *m = svgt_finish(s);
    const char *path = out_path("two.svg");
    write_or_fail(m, path, &scope_opt);
    cairo_surface_t *image = rsvg_render(path);
    ck_assert_int_eq(cairo_image_surface_get_height(image), (int)mf_svg_page_height(2));
    mf_svg_panel_box cpu_box, gpu_box;
    double fx, fy;
    ck_assert_int_eq(mf_svg_locate(m, &scope_opt, gpu0, 0, SVGT_T0 + 400 * SVGT_MS,
                                   0x7f5000000000ull + (4 << 20), &fx, &fy, &gpu_box), 0);
    ck_assert_int_eq(mf_svg_locate(m, &scope_opt, cpu0, 0, SVGT_T0, 0, NULL, NULL, &cpu_box), 0);
    ck_assert(gpu_box.top >= cpu_box.bottom);
    ck_assert(fy > gpu_box.map_top && fy < gpu_box.map_bottom);
    ck_assert_pixel(image, (int)fx, (int)fy, 0x9edae5u);   /* palette[15] */
    check_basic_pixels(image, m);
    cairo_surface_destroy(image);
    /* Only gpu/0: one panel; a device not in the log is an error naming it. */
    mf_svg_options only = { MF_COLOR_BY_SCOPE, gpu0, NULL, 0 };
    path = out_path("gpu_only.svg");
    write_or_fail(m, path, &only);
    image = rsvg_render(path);
    ck_assert_int_eq(cairo_image_surface_get_height(image), (int)mf_svg_page_height(1));
    cairo_surface_destroy(image);
    char err[512] = "";
    only.only_device = MF_DEVICE(MF_DEVICE_GPU, 3);
    ck_assert_int_eq(mf_svg_write(m, path, &only, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "gpu/3") && strstr(err, "gpu_only.svg"), "err: %s", err);
    svgt_model_free(m);
}
END_TEST

/* Scope, name and thread strings with XML specials, control bytes and
 * invalid UTF-8 still give an SVG that librsvg's XML parser accepts. */
START_TEST(test_hostile_strings)
{
    static const char *const hostile[] = {
        "<script>alert(1)</script>", "\"quoted\" & 'single'", "]]><!--", "line\nbreak\r\ttab",
        "\x01\x02\x1b[31m", "bad \xff\xfe utf8", "surrogate \xed\xa0\x80", "overlong \xc0\xaf",
        "truncated \xe2\x82", "nonchar \xef\xbf\xbe", "&amp;&#0;&#xD800;",
    };
    svgt_scene *s = svgt_model_new(100 * SVGT_MS, "hostile \xff <prog>");
    size_t n = sizeof hostile / sizeof hostile[0];
    for (size_t i = 0; i < n; i++) {
        svgt_block(s, cpu0, hostile[i], hostile[(i + 1) % n], 0x10000 + i * 0x1000, 0x1000, 0x1000,
                   i * SVGT_MS, 50 * SVGT_MS + i * SVGT_MS, (uint32_t)(200 + i));
        svgt_thread(s, (uint32_t)(200 + i), hostile[(i + 2) % n]);
    }
    mf_model *m = svgt_finish(s);
    const char *path = out_path("hostile.svg");
    write_or_fail(m, path, &scope_opt);
    cairo_surface_t *image = rsvg_render(path);
    cairo_surface_destroy(image);
    path = out_path("hostile.png");
    write_or_fail(m, path, &scope_opt);
    svgt_model_free(m);
}
END_TEST

START_TEST(test_empty_model)
{
    mf_model *m = svgt_finish(svgt_model_new(0, "idle"));
    const char *path = out_path("empty.svg");
    write_or_fail(m, path, &scope_opt);
    cairo_surface_t *image = rsvg_render(path);
    ck_assert_int_eq(cairo_image_surface_get_height(image), (int)mf_svg_page_height(1));
    cairo_surface_destroy(image);
    svgt_model_free(m);
}
END_TEST

START_TEST(test_bad_paths)
{
    mf_model *m = svgt_model_basic();
    char err[512] = "";
    ck_assert_int_eq(mf_svg_write(m, "/nonexistent-dir/x.svg", &scope_opt, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "/nonexistent-dir/x.svg") && strstr(err, "cannot create"), "%s", err);
    ck_assert_int_eq(mf_svg_write(m, "/nonexistent-dir/x.png", &scope_opt, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "/nonexistent-dir/x.png"), "%s", err);
    ck_assert_int_eq(mf_svg_write(m, "picture.gif", &scope_opt, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "picture.gif") && strstr(err, ".svg, .png or .pdf"), "%s", err);
    svgt_model_free(m);
}
END_TEST

/* One million blocks: an SVG of at most 10 MB that librsvg renders, in
 * which every sampled block covers its pixel with a scope colour. */
START_TEST(test_million_blocks_bounded)
{
    mf_model *m = svgt_model_many(1000000);
    const char *path = out_path("million.svg");
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    write_or_fail(m, path, &scope_opt);
    clock_gettime(CLOCK_MONOTONIC, &b);
    off_t size = file_size(path);
    fprintf(stderr, "check_svg: 1,000,008 blocks -> %lld-byte SVG in %.3f s\n", (long long)size,
            (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
    ck_assert_int_le(size, 10 * 1024 * 1024);
    cairo_surface_t *image = rsvg_render(path);
    const mf_device_model *dev = &m->devices[0];
    ck_assert_uint_eq(dev->alloc_count, 1000008);
    ck_assert_uint_eq(dev->n_views, 1);
    const mf_view *view = dev->views[0];
    mf_svg_colors colors;
    ck_assert_int_eq(mf_svg_colors_build(&colors, m, view, MF_COLOR_BY_SCOPE), 0);
    ck_assert_uint_eq(colors.n_legend, 6);
    ck_assert_uint_eq(colors.other_scopes, 0);
    /* The writer's axes of this panel, to find each block's pixels. */
    mf_svg_panel_box box;
    ck_assert_int_eq(mf_svg_locate(m, &scope_opt, cpu0, 0, 0, 0, NULL, NULL, &box), 0);
    mf_svg_time_axis time;
    mf_svg_addr_axis addr;
    mf_svg_time_axis_init(&time, m->t0_ns, m->t1_ns, MF_SVG_PLOT_X0, MF_SVG_PLOT_X1);
    mf_svg_addr_axis_build(&addr, view->ranges, view->n_ranges, box.map_top, box.map_bottom);
    ck_assert_uint_eq(addr.n, 2);   /* the heap, a break, the large blocks */
    size_t n_blocks;
    const mf_block *blocks = svgt_many_blocks(&n_blocks);
    ck_assert_uint_eq(n_blocks, 1000008);
    for (size_t i = 0; i < n_blocks; i += 9973) {
        mf_svg_rect r;
        mf_svg_block_rect(&time, &addr, &blocks[i], &r);
        int x = r.x + r.w / 2, y = r.y + r.h / 2;
        unsigned got = pixel(image, x, y);
        int is_scope_color = 0;
        for (size_t k = 0; k < colors.n_legend; k++) {
            mf_svg_rgb c = colors.table[colors.legend[k].color];
            is_scope_color |= got == ((unsigned)c.r << 16 | (unsigned)c.g << 8 | c.b);
        }
        ck_assert_msg(is_scope_color || got == RGB_PEAK || got == RGB_LIVE_EDGE,
                      "block %zu at (%d, %d): #%06x is no scope colour", i, x, y, got);
    }
    mf_svg_colors_free(&colors);
    cairo_surface_destroy(image);
    svgt_model_free(m);
}
END_TEST

/* A hostile model for the bound: 8 devices, 480,000 blocks scattered over
 * the address space, 4 KiB scope, name and thread strings full of XML
 * specials and invalid bytes.  Still at most 10 MB, and librsvg reads it. */
START_TEST(test_worst_case_bounded)
{
    svgt_scene *s = svgt_model_new(1000 * SVGT_MS, "worst");
    char names[64][4097];
    for (size_t k = 0; k < 64; k++) {
        for (size_t i = 0; i < 4096; i++)
            names[k][i] = "<&\"\xff\n"[(i + k) % 5];
        snprintf(names[k], 16, "%zu:", k);
        names[k][strlen(names[k])] = '<';
        names[k][4096] = '\0';
    }
    for (uint32_t t = 0; t < 64; t++)
        svgt_thread(s, t, names[(t + 7) % 64]);
    uint64_t seed = 99;
    for (unsigned d = 0; d < 8; d++) {
        uint16_t dev = d == 0 ? cpu0 : MF_DEVICE(MF_DEVICE_GPU, d - 1);
        for (size_t i = 0; i < 60000; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t at = (seed >> 24) % (900 * SVGT_MS);
            svgt_block(s, dev, names[seed % 64], names[(seed >> 8) % 64],
                       (seed >> 16) << 12, 4096 + (seed >> 50), 8192, at, at + 50 * SVGT_MS,
                       (uint32_t)((seed >> 30) % 64));
        }
    }
    mf_model *m = svgt_finish(s);
    const char *path = out_path("worst.svg");
    write_or_fail(m, path, &scope_opt);
    off_t size = file_size(path);
    fprintf(stderr, "check_svg: worst case, 8 devices x 60,000 blocks -> %lld-byte SVG\n",
            (long long)size);
    ck_assert_int_le(size, 10 * 1024 * 1024);
    cairo_surface_t *image = rsvg_render(path);
    ck_assert_int_eq(cairo_image_surface_get_height(image), (int)mf_svg_page_height(8));
    cairo_surface_destroy(image);
    svgt_model_free(m);
}
END_TEST

/* Edge values do not crash or break the picture: addresses and sizes of
 * 0 and near 2^64, frees before allocations, times outside the log, a log
 * that ends before it starts, unknown string ids, any flags, up to 12
 * processes.  Each of 60
 * deterministic random models gives a valid SVG (librsvg loads it), a PNG
 * and a PDF. */
static uint64_t edge_seed = 7;

static uint64_t edge_random(void)
{
    edge_seed = edge_seed * 6364136223846793005ull + 1442695040888963407ull;
    return edge_seed >> 11;
}

static uint64_t edge_value(void)
{
    switch (edge_random() % 8) {
    case 0: return 0;
    case 1: return UINT64_MAX;
    case 2: return UINT64_MAX - edge_random() % 100;
    case 3: return edge_random() % 16;
    case 4: return edge_random();
    default: return edge_random() % 100000000;
    }
}

START_TEST(test_edge_values)
{
    for (int round = 0; round < 60; round++) {
        svgt_scene *s = svgt_model_new(edge_value() % 2000000000ull, "edges");
        for (int d = 0, devices = 1 + (int)(edge_random() % 3); d < devices; d++) {
            uint16_t dev = d == 0 ? cpu0 : MF_DEVICE(MF_DEVICE_GPU, edge_random() % 4);
            for (int b = 0, n = (int)(edge_random() % 50); b < n; b++) {
                char scope[8];
                snprintf(scope, sizeof scope, "s%d", (int)(edge_random() % 20));
                svgt_block(s, dev, scope, "n", edge_value(), edge_value(), edge_value(),
                           edge_value(), edge_random() % 3 ? edge_value() : MF_LIVE_AT_END,
                           (uint32_t)edge_random());
                mf_block *blk = svgt_last_block(s);
                blk->flags = (uint16_t)edge_random();
                if (edge_random() % 2)
                    blk->pid = (uint32_t)(edge_random() % 12);
                if (edge_random() % 7 == 0)
                    blk->scope = (uint32_t)edge_random();
            }
            if (edge_random() % 2)
                svgt_snapshot(s, dev, edge_value(), edge_value());
        }
        mf_model *m = svgt_finish(s);
        mf_svg_options opt = { (mf_color_by)(edge_random() % 3), -1, NULL, 0 };
        const char *path = out_path("edges.svg");
        write_or_fail(m, path, &opt);
        cairo_surface_destroy(rsvg_render(path));
        write_or_fail(m, out_path("edges.png"), &opt);
        write_or_fail(m, out_path("edges.pdf"), &opt);
        svgt_model_free(m);
    }
}
END_TEST

/* ---- layout and text helpers --------------------------------------------------- */

static void check_time_ticks(uint64_t duration, size_t count, const char *first,
                             const char *second, const char *last)
{
    mf_svg_time_axis axis;
    mf_svg_tick ticks[64];
    mf_svg_time_axis_init(&axis, 5000, 5000 + duration, 100, 900);
    size_t n = mf_svg_time_ticks(&axis, ticks, 64);
    ck_assert_uint_eq(n, count);
    ck_assert_str_eq(ticks[0].label, first);
    if (count > 1)
        ck_assert_str_eq(ticks[1].label, second);
    ck_assert_str_eq(ticks[n - 1].label, last);
    ck_assert(ticks[0].pos == 100);
}

START_TEST(test_time_ticks)
{
    check_time_ticks(1000 * SVGT_MS, 6, "0", "0.2 s", "1.0 s");
    check_time_ticks(5 * SVGT_MS, 6, "0", "1 ms", "5 ms");
    check_time_ticks(37, 8, "0", "5 ns", "35 ns");
    check_time_ticks(2500000, 6, "0", "0.5 ms", "2.5 ms");
    check_time_ticks(90ull * 1000 * SVGT_MS, 5, "0", "20 s", "80 s");
    check_time_ticks(0, 1, "0", NULL, "0");
}
END_TEST

START_TEST(test_address_compression)
{
    mf_range ranges[2] = {
        { 0x555555554000, 0x555555558000, 2 },   /* two blocks with a small gap, joined */
        { 0x7f0000000000, 0x7f0000010000, 2 },   /* one block and one inside it */
    };
    mf_svg_addr_axis axis;
    mf_svg_addr_axis_build(&axis, ranges, 2, 100, 440);
    ck_assert_uint_eq(axis.n, 2);
    ck_assert_uint_eq(axis.seg[0].start, 0x555555554000);
    ck_assert_uint_eq(axis.seg[0].end, 0x555555558000);
    ck_assert_uint_eq(axis.seg[1].start, 0x7f0000000000);
    ck_assert_uint_eq(axis.seg[1].end, 0x7f0000010000);
    ck_assert(axis.seg[0].bottom == 440);
    ck_assert(axis.seg[0].height + axis.seg[1].height + MF_SVG_BREAK_H == 340);
    ck_assert(axis.seg[0].height >= 24);   /* 16 KiB next to 64 KiB: still readable */
    ck_assert(mf_svg_addr_y(&axis, 0x7f0000010000) == 100);
    ck_assert(mf_svg_addr_y(&axis, 0x555555554000) == 440);
    /* Block rectangles: whole pixels, at least 1x1. */
    mf_svg_time_axis time;
    mf_svg_time_axis_init(&time, 0, 1000, 100, 1100);
    mf_block one = { .addr = 0x7f0000008000, .actual = 1, .alloc_ns = 500, .free_ns = 500 };
    mf_svg_rect r;
    mf_svg_block_rect(&time, &axis, &one, &r);
    ck_assert_int_eq(r.x, 600);
    ck_assert_int_eq(r.w, 1);
    ck_assert_int_eq(r.h, 1);
    one.free_ns = MF_LIVE_AT_END;
    mf_svg_block_rect(&time, &axis, &one, &r);
    ck_assert_int_eq(r.x + r.w, 1100);
    /* No ranges: one placeholder segment over the whole map. */
    mf_svg_addr_axis_build(&axis, ranges, 0, 100, 440);
    ck_assert_uint_eq(axis.n, 1);
}
END_TEST

static Suite *svg_suite(void)
{
    Suite *s = suite_create("memory_flow");
    TCase *pictures = tcase_create("pictures");
    tcase_set_timeout(pictures, 300);
    tcase_add_test(pictures, test_svg_pixels);
    tcase_add_test(pictures, test_subblock_outline);
    tcase_add_test(pictures, test_png_pixels);
    tcase_add_test(pictures, test_pdf_written);
    tcase_add_test(pictures, test_color_by_lifetime_and_size);
    tcase_add_test(pictures, test_tiny_block_visible);
    tcase_add_test(pictures, test_peak_line);
    tcase_add_test(pictures, test_gpu_samples_off_scale);
    tcase_add_test(pictures, test_samples_as_steps);
    tcase_add_test(pictures, test_two_devices);
    tcase_add_test(pictures, test_processes_apart);
    tcase_add_test(pictures, test_hostile_strings);
    tcase_add_test(pictures, test_empty_model);
    tcase_add_test(pictures, test_bad_paths);
    tcase_add_test(pictures, test_million_blocks_bounded);
    tcase_add_test(pictures, test_worst_case_bounded);
    tcase_add_test(pictures, test_edge_values);
    suite_add_tcase(s, pictures);
    TCase *helpers = tcase_create("helpers");
    tcase_add_test(helpers, test_time_ticks);
    tcase_add_test(helpers, test_address_compression);
    suite_add_tcase(s, helpers);
    return s;
}

int main(void)
{
    SRunner *runner = srunner_create(svg_suite());
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
