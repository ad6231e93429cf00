/*
 * svg_fixture.c - writes the memory_flow pictures the shell and browser
 * tests look at: `svg_fixture DIR` renders the basic scene (svg_models.h)
 * to DIR/basic.svg, .png and .pdf, and writes DIR/probes.json with where
 * each known block, an empty spot and the occupancy curve at 450 ms are
 * drawn (user units = SVG px), so the tests know where to point; and
 * DIR/gpu.svg, GPU blocks of known memory kinds and flags; DIR/tiny.svg,
 * a large block among blocks of a pixel each, and DIR/tiny.json, where
 * the first small one is drawn.
 */
#include <stdio.h>
#include <stdlib.h>

#include "svg.h"
#include "svg_layout.h"
#include "svg_models.h"

static int locate(const mf_model *m, uint64_t t_rel, uint64_t addr, double *x, double *y)
{
    mf_svg_options opt = { MF_COLOR_BY_SCOPE, -1, NULL, 0 };
    return mf_svg_locate(m, &opt, MF_DEVICE(MF_DEVICE_CPU, 0), 0, SVGT_T0 + t_rel, addr, x, y, NULL);
}

static int render(const mf_model *m, const char *dir, const char *name)
{
    char path[4096], err[512];
    mf_svg_options opt = { MF_COLOR_BY_SCOPE, -1, NULL, 0 };
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (mf_svg_write(m, path, &opt, err, sizeof err) != 0) {
        fprintf(stderr, "svg_fixture: %s\n", err);
        return -1;
    }
    return 0;
}

/* DIR/NAME opened for writing, or NULL (said on stderr). */
static FILE *open_json(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        perror(path);
    return f;
}

/* tiny.svg: one large block, and 50 blocks of a pixel each (64 bytes for
 * 50 us, in a 50 KiB range, over 100 ms): only the large one is drawn one
 * by one, with a hover entry; the others are pixels.  tiny.json: where the
 * first small block is drawn. */
static int write_tiny(const char *dir)
{
    uint16_t cpu0 = MF_DEVICE(MF_DEVICE_CPU, 0);
    svgt_scene *t = svgt_model_new(100 * SVGT_MS, "tiny");
    svgt_block(t, cpu0, "big:", "whole", 0x7f6000000000ull, 1 << 20, 1 << 20, 10 * SVGT_MS,
               90 * SVGT_MS, 1);
    for (uint64_t i = 0; i < 50; i++)
        svgt_block(t, cpu0, "tiny:", "t", 0x7f7000000000ull + i * 1024, 64, 64,
                   (10 + i) * SVGT_MS, (10 + i) * SVGT_MS + 50000, 1);
    mf_model *m = svgt_finish(t);
    double x, y;
    FILE *f = NULL;
    int rc = render(m, dir, "tiny.svg") != 0 ||
             locate(m, 10 * SVGT_MS + 25000, 0x7f7000000000ull + 32, &x, &y) != 0 ||
             !(f = open_json(dir, "tiny.json"));
    if (f) {
        fprintf(f, "{\"x\": %d, \"y\": %d}\n", (int)x, (int)y);
        fclose(f);
    }
    svgt_model_free(m);
    return rc ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: svg_fixture DIR\n");
        return 2;
    }
    /* gpu.svg: GPU blocks whose hover names their memory kind and flags. */
    uint16_t gpu0 = MF_DEVICE(MF_DEVICE_GPU, 0);
    svgt_scene *s = svgt_model_new(100 * SVGT_MS, "gpu");
    svgt_block(s, gpu0, "net:", "w", 0x7f5000000000ull, 5120, 8192, 10 * SVGT_MS, 60 * SVGT_MS, 7);
    svgt_last_block(s)->flags = MF_MEM_POOL << MF_MEMKIND_SHIFT | MF_FLAG_ASYNC | MF_FLAG_REUSED;
    svgt_block(s, gpu0, "pinned:", "h", 0x7f5000002000ull, 4096, 4096, 20 * SVGT_MS,
               MF_LIVE_AT_END, 7);
    svgt_last_block(s)->flags = MF_MEM_PINNED << MF_MEMKIND_SHIFT;
    mf_model *g = svgt_finish(s);
    if (render(g, argv[1], "gpu.svg"))
        return 1;
    svgt_model_free(g);

    if (write_tiny(argv[1]) != 0)
        return 1;

    mf_model *m = svgt_model_basic();
    if (render(m, argv[1], "basic.svg") || render(m, argv[1], "basic.png") ||
        render(m, argv[1], "basic.pdf"))
        return 1;
    struct { const char *what; uint64_t t; uint64_t addr; } probes[] = {
        { "a", 450 * SVGT_MS, SVGT_A_ADDR + 128 * 1024 },
        { "b", 500 * SVGT_MS, SVGT_B_ADDR + 128 * 1024 },
        { "c", 500 * SVGT_MS, SVGT_C_ADDR + 512 * 1024 },
        { "empty", 50 * SVGT_MS, SVGT_A_ADDR + 128 * 1024 },
    };
    FILE *f = open_json(argv[1], "probes.json");
    if (!f)
        return 1;
    fprintf(f, "{");
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        double x, y;
        if (locate(m, probes[i].t, probes[i].addr, &x, &y) != 0)
            return 1;
        fprintf(f, "%s\"%s\": {\"x\": %.1f, \"y\": %.1f}", i ? ", " : "", probes[i].what, x, y);
    }
    mf_svg_panel_box box;
    double x;
    mf_svg_options opt = { MF_COLOR_BY_SCOPE, -1, NULL, 0 };
    if (mf_svg_locate(m, &opt, MF_DEVICE(MF_DEVICE_CPU, 0), 0, SVGT_T0 + 450 * SVGT_MS, 0, &x, NULL,
                      &box) != 0)
        return 1;
    fprintf(f, ", \"curve\": {\"x\": %.1f, \"y\": %.1f}}\n", x, box.curve_top + 50);
    fclose(f);
    svgt_model_free(m);
    return 0;
}
