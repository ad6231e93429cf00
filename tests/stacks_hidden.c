/* stacks_hidden.c - a shared library that is stripped (strip --strip-all)
 * for the call-stack tests: the allocating function is not exported, so
 * nothing names it and memflow shows it as module+offset.
 * stripped_entry(n) makes n allocations of 4096 bytes. */
#include <stdlib.h>

static void *volatile kept[16];

__attribute__((noinline)) static void hidden_alloc(int i)
{
    char *p = malloc(4096);
    p[0] = 1;
    kept[i % 16] = p;
}

void stripped_entry(int n);
void stripped_entry(int n)
{
    for (int i = 0; i < n; i++)
        hidden_alloc(i);
    kept[15] = 0;
}
