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

#endif
