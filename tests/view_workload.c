/*
 * view_workload.c - a real program for `memflow view`'s browser test
 * (view_browser.sh): under `memflow run --stacks` it makes allocations of
 * sizes found nowhere else in known scopes - 50 small ones in view_small:,
 * one of 777777 bytes in view_big: made by make_big() - and frees them;
 * then, in scope view_gpu:, it records a block of 1 MiB on gpu/0 and one of
 * 2 MiB on gpu/1 (memflow_record_alloc: a GPU sub-allocator's blocks),
 * freed at once, so the run has three views: one lane each.
 * Given a path, it then waits (up to 60 s) until that file exists and
 * makes one more, 333333 bytes in view_late:, so the test can watch a
 * growing log.  Built with -fno-builtin (tests/view.mk).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memflow.h"

static void *volatile sink;

__attribute__((noinline)) static char *make_big(void)
{
    char *p = malloc(777777);
    if (p)
        memset(p, 7, 777777);
    return p;
}

static void pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    memflow_scope_push("view_small", 0);
    char *small[50];
    for (int i = 0; i < 50; i++) {
        small[i] = malloc(64 + (size_t)i);
        sink = small[i];
    }
    memflow_scope_pop();
    pause_ms(20);
    memflow_scope_push("view_big", 0);
    char *big = make_big();
    memflow_scope_pop();
    if (!big) {
        fprintf(stderr, "view_workload: out of memory\n");
        return 1;
    }
    pause_ms(20);
    free(big);
    for (int i = 0; i < 50; i++)
        free(small[i]);
    memflow_scope_push("view_gpu", 0);
    memflow_record_alloc("gpu/0", (void *)0x7f0000000000ull, 1 << 20, 1 << 20, "weights", 0);
    memflow_record_alloc("gpu/1", (void *)0x7f0000000000ull, 2 << 20, 2 << 20, "weights", 0);
    pause_ms(5);
    memflow_record_free("gpu/0", (void *)0x7f0000000000ull);
    memflow_record_free("gpu/1", (void *)0x7f0000000000ull);
    memflow_scope_pop();
    if (argc > 1) {
        for (int i = 0; i < 6000 && access(argv[1], F_OK) != 0; i++)
            pause_ms(10);
        memflow_scope_push("view_late", 0);
        char *late = malloc(333333);
        sink = late;
        memflow_scope_pop();
        pause_ms(20);
        free(late);
    }
    return 0;
}
