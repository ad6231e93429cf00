/* stacks_lib.c - a shared library for the call-stack tests: lib_alloc(n)
 * makes n allocations of 256 bytes from inside the library. */
#include <stdlib.h>

static void *volatile kept[16];

__attribute__((noinline)) void lib_alloc(int n);
__attribute__((noinline)) void lib_alloc(int n)
{
    for (int i = 0; i < n; i++) {
        char *p = malloc(256);
        p[0] = 1;
        kept[i % 16] = p;
    }
}
