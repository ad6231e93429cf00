/*
 * many_sites.c - a program with 5000 allocation sites, for the call-stack
 * test that every site is counted on its own (tests/stacks_e2e.sh).
 *
 * Functions s0000 .. s4999, each a site of its own: s<K> mallocs K + 1
 * bytes once and keeps the block (nothing is freed), so site s<K> holds
 * exactly 1 allocation of K + 1 bytes.  Their bodies differ (each stores
 * its own number after the call), so no two are folded into one and none
 * ends in a tail call.  Unmodified: no memflow in it.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned last_site;

#define SITE(a, b, c, d)                                                        \
    static __attribute__((noinline)) void *s##a##b##c##d(size_t n)             \
    {                                                                          \
        void *p = malloc(n);                                                   \
        last_site = 1##a##b##c##d;                                             \
        return p;                                                              \
    }
#define SITES_10(a, b, c) SITE(a, b, c, 0) SITE(a, b, c, 1) SITE(a, b, c, 2) SITE(a, b, c, 3) \
    SITE(a, b, c, 4) SITE(a, b, c, 5) SITE(a, b, c, 6) SITE(a, b, c, 7) SITE(a, b, c, 8) \
    SITE(a, b, c, 9)
#define SITES_100(a, b) SITES_10(a, b, 0) SITES_10(a, b, 1) SITES_10(a, b, 2) SITES_10(a, b, 3) \
    SITES_10(a, b, 4) SITES_10(a, b, 5) SITES_10(a, b, 6) SITES_10(a, b, 7) SITES_10(a, b, 8) \
    SITES_10(a, b, 9)
#define SITES_1000(a) SITES_100(a, 0) SITES_100(a, 1) SITES_100(a, 2) SITES_100(a, 3) \
    SITES_100(a, 4) SITES_100(a, 5) SITES_100(a, 6) SITES_100(a, 7) SITES_100(a, 8) \
    SITES_100(a, 9)
SITES_1000(0) SITES_1000(1) SITES_1000(2) SITES_1000(3) SITES_1000(4)

#undef SITE
#define SITE(a, b, c, d) s##a##b##c##d,
static void *(*const sites[])(size_t) = {
    SITES_1000(0) SITES_1000(1) SITES_1000(2) SITES_1000(3) SITES_1000(4)
};

int main(void)
{
    size_t n = sizeof sites / sizeof sites[0];
    for (size_t k = 0; k < n; k++)
        if (!sites[k](k + 1))
            return 1;
    printf("sites %zu\n", n);
    return 0;
}
