/*
 * slots.h - the open-addressing table of pointers that the recorder's
 * deduplicating tables (stacks.c, frames.c) share: readers look entries up
 * without a lock (acquire loads of the slots), a writer adds under its
 * table's lock and grows the table by publishing a doubled copy (old copies
 * stay mapped: readers may still be walking them).  Every entry begins with
 * its 64-bit hash (never 0).  mmap'd, never malloc'd.
 */
#ifndef MEMFLOW_SLOTS_H
#define MEMFLOW_SLOTS_H

#include <stdint.h>

typedef struct mf_slots {
    uint32_t mask;
    uint32_t used;
    void *slot[];
} mf_slots;

/* The hash an entry begins with. */
static inline uint64_t mf_slots_hash(const void *entry)
{
    return *(const uint64_t *)entry;
}

/* Put entry into s (which has room), publishing it with release order. */
void mf_slots_put(mf_slots *s, void *entry);

/* Make room for one more entry in *table (load at most 1/2), replacing it
 * by a doubled copy when needed.  The caller holds its table's lock.
 * 0, or -1 when out of memory. */
int mf_slots_reserve(mf_slots **table);

/* Zeroed anonymous memory (NULL when out of memory). */
void *mf_map_zeroed(size_t bytes);

#endif /* MEMFLOW_SLOTS_H */
