/*
 * grow.c - the growable-array helper of grow.h.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"

int mf_grow(void **array, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(*array, n * elem);
    if (!p)
        return -1;
    *array = p;
    *cap = n;
    return 0;
}

int mf_grow_filled(void **array, size_t *cap, size_t need, size_t elem, int fill)
{
    size_t old = *cap;
    if (mf_grow(array, cap, need, elem) < 0)
        return -1;
    memset((char *)*array + old * elem, fill, (*cap - old) * elem);
    return 0;
}
