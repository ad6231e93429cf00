/*
 * stackdepth.c - benchmark workload for the cost of call stacks by depth.
 *
 * Recurses DEPTH calls deep (each level stays on the stack), then makes N
 * malloc/free pairs of 32 bytes there: every allocation's call stack is
 * DEPTH + 5 frames (the recursion, main, libc's start, _start).  Built
 * -O2 -fomit-frame-pointer, as distributions build.  Timed by hand against
 * `memflow run --stacks` and heaptrack (docs/PERFORMANCE.md gives the
 * commands); no memflow in it.
 *
 * Usage: stackdepth DEPTH N
 */
#include <stdio.h>
#include <stdlib.h>

static void *volatile sink;
static volatile int levels;

__attribute__((noinline)) static void descend(int depth, long n)
{
    if (depth > 0) {
        descend(depth - 1, n);
        levels++; /* after the call: not a tail call */
        return;
    }
    for (long i = 0; i < n; i++) {
        void *p = malloc(32);
        sink = p;
        free(p);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: stackdepth DEPTH N\n");
        return 1;
    }
    descend(atoi(argv[1]), atol(argv[2]));
    return 0;
}
