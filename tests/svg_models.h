/*
 * svg_models.h - scenes for the memory_flow tests (check_svg.c and
 * svg_fixture.c): blocks placed at known addresses and times, thread names
 * and samples, turned into events (ALLOC, FREE, THREAD, SAMPLE) in time
 * order and fed to the real model, so the pictures are drawn from a model
 * built the way `memflow render` builds one.
 */
#ifndef MEMFLOW_TESTS_SVG_MODELS_H
#define MEMFLOW_TESTS_SVG_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

#define SVGT_T0 1000000000ull             /* start of every test scene (ns) */
#define SVGT_MS 1000000ull
#define SVGT_PID 4242u                    /* the pid of blocks unless set */

typedef struct svgt_scene svgt_scene;

/* An empty scene over [SVGT_T0, SVGT_T0 + duration_ns]. */
svgt_scene *svgt_model_new(uint64_t duration_ns, const char *program);

/* Add a block; times relative to SVGT_T0; free_rel MF_LIVE_AT_END = live. */
void svgt_block(svgt_scene *s, uint16_t device, const char *scope, const char *name,
                uint64_t addr, uint64_t requested, uint64_t actual, uint64_t alloc_rel,
                uint64_t free_rel, uint32_t tid);

/* The block added last (to set its flags or pid before svgt_finish). */
mf_block *svgt_last_block(svgt_scene *s);

/* Add a thread name (of pid SVGT_PID). */
void svgt_thread(svgt_scene *s, uint32_t tid, const char *name);

/* Add a sample_rate snapshot: value is the allocator's active bytes (CPU)
 * or the driver's used bytes (GPU). */
void svgt_snapshot(svgt_scene *s, uint16_t device, uint64_t time_rel, uint64_t value);

/* Feed the scene to a new model, settle it and free the scene. */
mf_model *svgt_finish(svgt_scene *s);

void svgt_model_free(mf_model *model);

/* The blocks of the last scene finished with svgt_model_many (n of them). */
const mf_block *svgt_many_blocks(size_t *n);

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
svgt_scene *svgt_scene_basic(void);   /* the same, not finished yet */

/* n blocks on cpu/0 in 2,000 address slots of a heap, plus a few large
 * blocks far away; deterministic. */
mf_model *svgt_model_many(size_t n);

#endif
