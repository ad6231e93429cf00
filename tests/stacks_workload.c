/*
 * stacks_workload.c - an unmodified program for the call-stack tests, built
 * as distributions build: -O2 -fomit-frame-pointer (with -g so the analysis
 * can name inline functions and lines).  It knows nothing of memflow.
 *
 * Each allocating function uses what malloc returns, so the compiler cannot
 * turn the call into a tail jump (which would leave the function off the
 * stack).  Sizes and counts are fixed; tests/stacks_e2e.sh sums them:
 *
 *   direct_alloc      20 x malloc(1000)                    20 allocs, 20000 bytes
 *   inline_buffer     always inlined into fill_inline:     7 allocs,   7 x 300 bytes
 *                     7 x calloc(3, 100)
 *   lib_alloc         (libstacks_lib.so, dlopen'ed)        5 allocs,   5 x 256 bytes
 *   hidden helper     (libstacks_hidden.so, stripped)      3 allocs,   3 x 4096 bytes
 *
 * Usage: stacks_workload LIBDIR   (the folder of the two test libraries)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink[64];

__attribute__((noinline)) static void direct_alloc(int n)
{
    for (int i = 0; i < n; i++) {
        char *p = malloc(1000);
        p[0] = (char)i;
        sink[i % 64] = p;
    }
}

static inline __attribute__((always_inline)) char *inline_buffer(void)
{
    char *p = calloc(3, 100);
    p[1] = 1;
    return p;
}

__attribute__((noinline)) static void fill_inline(int n)
{
    for (int i = 0; i < n; i++)
        sink[i % 64] = inline_buffer();
}

static void *symbol(const char *dir, const char *lib, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, lib);
    void *h = dlopen(path, RTLD_NOW);
    void *fn = h ? dlsym(h, name) : NULL;
    if (!fn) {
        fprintf(stderr, "stacks_workload: %s: %s\n", path, dlerror());
        exit(2);
    }
    return fn;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: stacks_workload LIBDIR\n");
        return 2;
    }
    void (*lib_alloc)(int) = (void (*)(int))symbol(argv[1], "libstacks_lib.so", "lib_alloc");
    void (*hidden)(int) = (void (*)(int))symbol(argv[1], "libstacks_hidden.so",
                                                "stripped_entry");
    direct_alloc(20);
    fill_inline(7);
    lib_alloc(5);
    hidden(3);
    return 0;
}
