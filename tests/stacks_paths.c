/*
 * stacks_paths.c - an unmodified program (built -O2 -fomit-frame-pointer)
 * whose allocations differ only in the outer frames of their call stacks,
 * for tests/stacks_e2e.sh: the recorder remembers each thread's last stack
 * and walks only what changed, and every stack must still come out exact.
 *
 *   site()            the one function that allocates (malloc(64), freed)
 *   path_a(), path_b() two callers of site() with the same frame, called
 *                     in turn 1000 times each
 *   climb(d)          recursion d deep, then site(): depths 8, 2, 8, 5, 0,
 *                     12, 12, 3, ten rounds (deep, shallow, re-entered)
 */
#include <stdlib.h>

static void *volatile sink;
static volatile int calls;

__attribute__((noinline)) static void site(void)
{
    void *p = malloc(64);
    sink = p;
    free(p);
    calls++;
}

__attribute__((noinline)) static void path_a(void)
{
    site();
    calls++;
}

__attribute__((noinline)) static void path_b(void)
{
    site();
    calls += 2; /* not path_a's code: the compiler would fold the two */
}

__attribute__((noinline)) static void climb(int depth)
{
    if (depth > 0)
        climb(depth - 1);
    else
        site();
    calls++;
}

int main(void)
{
    for (int i = 0; i < 1000; i++) {
        path_a();
        path_b();
    }
    static const int depths[] = { 8, 2, 8, 5, 0, 12, 12, 3 };
    for (int round = 0; round < 10; round++)
        for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++)
            climb(depths[i]);
    return 0;
}
