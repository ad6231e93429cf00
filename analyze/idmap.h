/*
 * idmap.h - a sparse map from 32-bit ids to 32-bit values (0 = absent),
 * for the ids a log assigns itself: string ids, stack ids.  Ids are dense
 * from 1 in a healthy log, but a damaged record may carry any id; memory
 * follows the ids actually present (pages of 1024 values under a two-level
 * table), never the largest id, and a lookup is three loads.
 */
#ifndef MEMFLOW_IDMAP_H
#define MEMFLOW_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mf_idmap {
    uint32_t ***mid;     /* [id >> 20] -> [(id >> 10) & 1023] -> page of 1024 */
    size_t pages;        /* pages allocated (memory: pages * 4 KiB) */
} mf_idmap;

#define MF_IDMAP_INIT { NULL, 0 }

/* The value stored for id, or 0. */
static inline uint32_t mf_idmap_get(const mf_idmap *m, uint32_t id)
{
    uint32_t **mid = m->mid ? m->mid[id >> 20] : NULL;
    uint32_t *page = mid ? mid[(id >> 10) & 1023] : NULL;
    return page ? page[id & 1023] : 0;
}

/* Store value for id.  Returns 0, or -1 when out of memory. */
int mf_idmap_set(mf_idmap *m, uint32_t id, uint32_t value);

/* Free the map's memory; it is empty (and usable) afterwards. */
void mf_idmap_free(mf_idmap *m);

#endif /* MEMFLOW_IDMAP_H */
