/*
 * grow.h - the one growable-array helper of the offline code (reader,
 * model, outputs).  Not for the recorder's hot path, which never
 * calls malloc.
 */
#ifndef MEMFLOW_GROW_H
#define MEMFLOW_GROW_H

#include <stddef.h>

#include "compiler.h"

/*
 * Make *array (elements of elem bytes, *cap of them allocated) hold at
 * least need elements, doubling from 16.  Returns 0, or -1 when out of
 * memory (the array is then unchanged).
 */
MF_EXPORT int mf_grow(void **array, size_t *cap, size_t need, size_t elem);

/*
 * mf_grow, the new elements (from the old *cap up) set to the byte fill:
 * for tables indexed by id (0 or 0xff: empty).  0, or -1 when out of memory.
 */
MF_EXPORT int mf_grow_filled(void **array, size_t *cap, size_t need, size_t elem, int fill);

#endif
