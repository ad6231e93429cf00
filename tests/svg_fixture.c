/*
 * svg_fixture.c - writes the memory_flow pictures the shell and browser
 * tests look at: `svg_fixture DIR` renders the basic scene (svg_models.h)
 * to DIR/basic.svg, .png and .pdf, and writes DIR/probes.json with where
 * each known block, an empty spot and the occupancy curve at 450 ms are
 * drawn (user units = SVG px), so the tests know where to point; and
 * DIR/gpu.svg, GPU blocks of known memory kinds and flags.
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
    char path[4096];
    snprintf(path, sizeof path, "%s/probes.json", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
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
