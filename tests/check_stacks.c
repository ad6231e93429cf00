/*
 * check_stacks.c - Check suite of the stack table (runtime/stacks.c) at its
 * bound: this program carries its own copy of the runtime, built with a
 * tree of MF_STACKS_MAX = 64 nodes (tests/stacks.mk), records through it
 * and reads its log back with the reader.
 *
 * Distinct stacks come from recursion: climb(k) calls itself k times, then
 * asks for the stack, so each k is a stack of its own.  All share their
 * outer frames (the test's), so climb(0) costs one node per frame and each
 * deeper climb(k) the same few: its k-th recursive call and climb(0)'s
 * innermost frames.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_in_memory.h"
#include "memflow.h"
#include "recorder.h"
#include "stacks.h"

static volatile int depth_sink;

__attribute__((noinline, noipa)) static uint32_t climb(int k)
{
    uint32_t id = k > 0 ? climb(k - 1) : mf_recorder_stack(0);
    depth_sink++; /* not a tail call: every level stays on the stack */
    return id;
}

static void start_recording(const char *name, const char *depth)
{
    char dir[4096];
    const char *top = getenv("top_builddir");
    snprintf(dir, sizeof dir, "%s/tests/out/check_stacks/%s", top ? top : ".", name);
    const char *keys[] = { "path", "stacks" }, *vals[] = { dir, depth };
    ck_assert_int_eq(memflow_set_config(2, keys, vals), 0);
    ck_assert_int_eq(memflow_set_state(MEMFLOW_RUN), 0);
}

static mf_log *stop_and_read(void)
{
    mf_log *log;
    char err[512];
    memflow_set_state(MEMFLOW_STOP);
    ck_assert_int_eq(mf_log_read(mf_recorder_log_path(), &log, err, sizeof err), 0);
    return log;
}

START_TEST(table_full_refuses_new_stacks_and_keeps_old_ones)
{
    ck_assert_uint_eq(MF_STACKS_MAX, 64);
    start_recording("full", "256");
    /* one call site (the loop's), twice: the second time every stack is
     * the very same as the first */
    enum { CLIMBS = 40 };
    uint32_t id[2][CLIMBS];
    for (volatile int pass = 0; pass < 2; pass++)   /* volatile: never unrolled */
        for (volatile int k = 0; k < CLIMBS; k++)
            id[pass][k] = climb(k);
    /* climb(0) costs one node per frame (its id is its depth); each deeper
     * climb the frames below its recursive call: that call and climb(0)'s
     * innermost frames (memflow's own, built into this program, among them) */
    uint32_t first = id[0][0], per = id[0][1] - id[0][0];
    ck_assert_uint_ge(first, 3);
    ck_assert_uint_ge(per, 2);
    ck_assert_uint_le(per, 4);
    int last = (int)((MF_STACKS_MAX - first) / per);   /* the deepest climb that fits */
    ck_assert_int_gt(last, 4);
    ck_assert_int_lt(last, CLIMBS - 1);
    for (int k = 0; k < CLIMBS; k++) {
        ck_assert_uint_eq(id[0][k], k <= last ? first + per * (uint32_t)k : 0);
        ck_assert_uint_eq(id[1][k], id[0][k]);
    }
    ck_assert_uint_eq(mf_stacks_lost(), 2u * (uint32_t)(CLIMBS - 1 - last));
    mf_log *log = stop_and_read();
    uint32_t stored = 0;
    for (uint32_t i = 0; i < log->n_stacks; i++)
        stored += log->stacks[i].depth != 0;
    uint32_t nodes = first + per * (uint32_t)last;
    ck_assert_uint_eq(stored, nodes);
    /* deeper recursion, deeper stack: climb(k) has k more frames than climb(0) */
    ck_assert_uint_eq(mf_log_stack(log, nodes)->depth - mf_log_stack(log, first)->depth,
                      (uint32_t)last);
    ck_assert_uint_eq(mf_log_stack(log, first)->depth, first);
    size_t full_notes = 0;
    for (size_t i = 0; i < log->n_events; i++)
        if (log->events[i].type == MF_REC_NOTE &&
            log->events[i].note.code == MF_NOTE_STACKS_FULL) {
            full_notes++;
            ck_assert_uint_eq(log->events[i].note.value, nodes);
        }
    ck_assert_uint_eq(full_notes, 1);
    mf_log_free(log);
}
END_TEST

START_TEST(depth_keeps_the_innermost_frames)
{
    /* The same stack (one call site) with 64 frames, then with 3. */
    static const char *const depth[] = { "64", "3" };
    uint32_t id[2];
    for (int i = 0; i < 2; i++) {
        memflow_set_state(MEMFLOW_STOP);
        start_recording("depth", depth[i]);
        id[i] = climb(20);
    }
    mf_log *log = stop_and_read();
    const mf_stack *full = mf_log_stack(log, id[0]), *cut = mf_log_stack(log, id[1]);
    ck_assert_ptr_nonnull(full);
    ck_assert_ptr_nonnull(cut);
    ck_assert_uint_ge(full->depth, 21);
    ck_assert_uint_eq(cut->depth, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(cut->ip[i], full->ip[i]);
    mf_log_free(log);
}
END_TEST

START_TEST(stacks_key_is_checked)
{
    const char *k = "stacks";
    const char *bad[] = { "257", "-1", "deep", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(memflow_set_config(1, &k, &bad[i]), -1);
        ck_assert_ptr_nonnull(strstr(memflow_last_error(),
                                     "accepted: a call-stack depth from 0 (off) to 256"));
    }
    const char *good = "256";
    ck_assert_int_eq(memflow_set_config(1, &k, &good), 0);
}
END_TEST

START_TEST(stacks_off_gives_no_stack)
{
    start_recording("off", "0");
    ck_assert_uint_eq(climb(2), 0);
    mf_log *log = stop_and_read();
    ck_assert_uint_eq(log->n_stacks, 0);
    ck_assert_uint_eq(log->n_modules, 0);
    mf_log_free(log);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stacks");
    TCase *c = tcase_create("table");
    tcase_add_test(c, table_full_refuses_new_stacks_and_keeps_old_ones);
    tcase_add_test(c, depth_keeps_the_innermost_frames);
    tcase_add_test(c, stacks_key_is_checked);
    tcase_add_test(c, stacks_off_gives_no_stack);
    suite_add_tcase(s, c);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
