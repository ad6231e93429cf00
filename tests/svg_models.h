/*
 * svg_models.h - hand-built models for the memory_flow tests (check_svg.c
 * and svg_fixture.c), so the renderer is tested without the model builder:
 * blocks are placed at known addresses and times, and the derived numbers
 * (occupancy, peak, live at end) are computed here the simple way.
 */
#ifndef MEMFLOW_TESTS_SVG_MODELS_H
#define MEMFLOW_TESTS_SVG_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

#define SVGT_T0 1000000000ull             /* start of every test model (ns) */
#define SVGT_MS 1000000ull

/* An empty model over [SVGT_T0, SVGT_T0 + duration_ns]. */
mf_model *svgt_model_new(uint64_t duration_ns, const char *program);

/* The id of text in the model's string table (added if new). */
uint32_t svgt_string(mf_model *model, const char *text);

/* The index of device in model->devices (added if new). */
size_t svgt_device(mf_model *model, uint16_t device);

/* Add a block; times relative to SVGT_T0; free_rel MF_LIVE_AT_END = live. */
void svgt_block(mf_model *model, uint16_t device, const char *scope, const char *name,
                uint64_t addr, uint64_t requested, uint64_t actual, uint64_t alloc_rel,
                uint64_t free_rel, uint32_t tid);

/* The block added last on device (to set its flags). */
mf_block *svgt_last_block(mf_model *model, uint16_t device);

/* Add a thread name. */
void svgt_thread(mf_model *model, uint32_t tid, const char *name);

/* Add a sample_rate snapshot to device: value is the allocator's active
 * bytes (CPU) or the driver's used bytes (GPU). */
void svgt_snapshot(mf_model *model, uint16_t device, uint64_t time_rel, uint64_t value);

/* Compute every device's occupancy, counts, peak and live-at-end numbers. */
void svgt_finish(mf_model *model);

void svgt_model_free(mf_model *model);

/*
 * The basic scene (times after SVGT_T0, cpu/0):
 *   A "net_dense0:" "weight"  0x555555560000 +256 KiB, 100..600 ms, tid 101
 *   B "net_dense1:" "bias"    0x5555555a0000 +256 KiB, 200 ms..live at end
 *   C SVGT_WEIRD_SCOPE "x&y"   0x7f0000000000 +1 MiB,   300..800 ms
 * The peak (1.5 MiB) is at 300 ms; a 1 s log.
 */
#define SVGT_WEIRD_SCOPE "a<b\"c&d\ne\xff"
#define SVGT_A_ADDR 0x555555560000ull
#define SVGT_B_ADDR 0x5555555a0000ull
#define SVGT_C_ADDR 0x7f0000000000ull
mf_model *svgt_model_basic(void);

/* n blocks on cpu/0 in 2,000 address slots of a heap, plus a few large
 * blocks far away; deterministic. */
mf_model *svgt_model_many(size_t n);

#endif
