/*
 * check_unwind.c - Check suite of the recorder's own stack walk
 * (runtime/unwind.c) against libunwind's unw_backtrace, frame for frame.
 *
 * Built as distributions build (-O2 -fomit-frame-pointer, tests/stacks.mk),
 * with its own copy of unwind.c.  Every capture walks twice from the same
 * function, with mf_unwind_walk (and the thread's memo of its last walk)
 * and with unw_backtrace; above that function the two must agree exactly,
 * for every call path the tests make: recursion that goes deep, unwinds and
 * re-enters at other depths; one function reached from different callers;
 * frames that keep rbp as a frame pointer (alloca) or not; threads.  The
 * memo is what is under test: a walk that reuses the last walk's outer
 * frames must still give the frames libunwind finds.
 */
#include <alloca.h>
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "unwind.h"

#define MAX_FRAMES 200

typedef struct capture {
    uint64_t ours[MAX_FRAMES];
    void *theirs[MAX_FRAMES];
    int n_ours, n_theirs, same;
} capture;

static __thread mf_unwind_memo memo; /* the test's thread state */
static volatile int sink;

/* Both walks, from here: ours[0] and theirs[0] are return addresses into
 * this function (from different calls; unw_backtrace leaves out its own
 * frame), the rest must be equal. */
__attribute__((noinline)) static void capture_both(capture *c)
{
    c->n_ours = mf_unwind_walk(&memo, c->ours, MAX_FRAMES, &c->same);
    if (c->same)
        mf_unwind_memo_ips(&memo, c->ours);
    c->n_theirs = unw_backtrace(c->theirs, MAX_FRAMES);
    sink++; /* no tail call */
}

/* The frames above capture_both agree; returns how many there are. */
static int agree(const capture *c)
{
    ck_assert_msg(c->n_ours > 1, "our walk gave up (%d)", c->n_ours);
    ck_assert_int_eq(c->n_ours, c->n_theirs);
    int differ = 0;
    for (int k = 1; k < c->n_ours; k++)
        differ += c->ours[k] != (uint64_t)(uintptr_t)c->theirs[k];
    ck_assert_msg(!differ, "%d of %d frames differ from libunwind's", differ, c->n_ours - 1);
    return c->n_ours - 1;
}

__attribute__((noinline)) static int recurse(int depth, capture *c)
{
    if (depth == 0)
        capture_both(c);
    else
        recurse(depth - 1, c);
    sink++;
    return c->n_ours;
}

START_TEST(recursion_deep_shallow_and_back)
{
    static const int depths[] = { 0, 5, 5, 1, 30, 30, 2, 17, 0, 60, 59, 61, 3, 100, 3 };
    capture c;
    int frames_at_zero = 0;
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        recurse(depths[i], &c);
        int n = agree(&c);
        if (depths[i] == 0)
            frames_at_zero = n;
        ck_assert_int_eq(n, frames_at_zero + depths[i]);
        if (i > 0 && depths[i] == depths[i - 1])
            ck_assert_msg(c.same, "depth %d again: not the same walk", depths[i]);
        else if (i > 0)
            ck_assert_msg(!c.same, "depth %d after %d: said the same", depths[i],
                          depths[i - 1]);
    }
}
END_TEST

/* One function, common(), reached from two callers in turn. */
__attribute__((noinline)) static void common(capture *c)
{
    capture_both(c);
    sink++;
}

__attribute__((noinline)) static void from_a(capture *c)
{
    common(c);
    sink += 2;
}

__attribute__((noinline)) static void from_b(capture *c)
{
    common(c);
    sink += 3;
}

/*
 * from_a and from_b have the same frame, so common() runs at the same
 * stack pointer on both paths and its return address into capture_both is
 * the same too: only the word holding common's own return address tells
 * the paths apart, and the memo must look at it.
 */
START_TEST(one_function_two_callers)
{
    capture a, b;
    for (int i = 0; i < 200; i++) {
        from_a(&a);
        agree(&a);
        uint64_t common_sp_a = memo.frame[2].sp;
        from_b(&b);
        agree(&b);
        ck_assert_uint_eq(memo.frame[2].sp, common_sp_a);
        /* ours[1] is the return into common, ours[2] into its caller */
        ck_assert_uint_eq(a.ours[1], b.ours[1]);
        ck_assert_msg(a.ours[2] != b.ours[2], "from_a and from_b gave one frame");
        ck_assert_msg(i == 0 || (!a.same && !b.same), "a walk after the other caller's was the same");
    }
}
END_TEST

/* A frame whose CFA is rbp + offset: alloca makes gcc keep a frame pointer. */
__attribute__((noinline)) static void with_alloca(int n, capture *c)
{
    char *buf = alloca((size_t)n);
    memset(buf, n, (size_t)n);
    sink += buf[n / 2];
    capture_both(c);
    sink++;
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static void with_frame_pointer(
    int n, capture *c)
{
    if (n > 0)
        with_alloca(n * 16, c);
    else
        capture_both(c);
    sink++;
}

START_TEST(frame_pointers_and_alloca)
{
    capture c;
    for (int i = 0; i < 50; i++) {
        with_frame_pointer(i % 7, &c);
        agree(&c);
        with_alloca(64 + i * 8, &c); /* another size: its frame moves */
        agree(&c);
    }
}
END_TEST

static void *thread_paths(void *arg)
{
    (void)arg;
    capture *c = malloc(sizeof *c);
    for (int i = 0; i < 100; i++) {
        recurse(i % 13, c);
        agree(c);
        from_b(c);
        agree(c);
    }
    free(c);
    return NULL;
}

START_TEST(threads_walk_their_own_stacks)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_paths, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
}
END_TEST

__attribute__((noinline)) static void unload_if(int yes)
{
    if (yes)
        mf_unwind_code_changed();
    sink++;
}

/* Code unloaded (dlclose): frame rules and the memo are not trusted. */
START_TEST(unloaded_code_forgets_the_memo)
{
    capture c;
    int same[4];
    for (int i = 0; i < 4; i++) {
        unload_if(i == 2); /* a call either way: recurse has one call site */
        recurse(4, &c);
        same[i] = c.same;
    }
    agree(&c);
    ck_assert_int_eq(same[0], 0);
    ck_assert_int_eq(same[1], 1);
    ck_assert_int_eq(same[2], 0); /* after the unload: walked afresh */
    ck_assert_int_eq(same[3], 1);
}
END_TEST

static capture in_handler;

static void on_signal(int sig)
{
    (void)sig;
    capture_both(&in_handler);
}

/* Through a signal frame: our walk gives up (the caller then uses
 * libunwind) or agrees; it never returns other frames. */
START_TEST(signal_frame_gives_up_or_agrees)
{
    signal(SIGUSR1, on_signal);
    recurse(3, &in_handler); /* a memo to tempt it */
    raise(SIGUSR1);
    if (in_handler.n_ours >= 0)
        agree(&in_handler);
}
END_TEST

static Suite *unwind_suite(void)
{
    Suite *s = suite_create("unwind");
    TCase *c = tcase_create("walk");
    tcase_add_test(c, recursion_deep_shallow_and_back);
    tcase_add_test(c, one_function_two_callers);
    tcase_add_test(c, frame_pointers_and_alloca);
    tcase_add_test(c, threads_walk_their_own_stacks);
    tcase_add_test(c, signal_frame_gives_up_or_agrees);
    tcase_add_test(c, unloaded_code_forgets_the_memo);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(unwind_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
