/*
 * slots.c - the lock-free-read pointer table of stacks.c and frames.c (see
 * slots.h).
 */
#include <stddef.h>
#include <sys/mman.h>

#include "slots.h"

void *mf_map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void mf_slots_put(mf_slots *s, void *entry)
{
    uint32_t i = (uint32_t)mf_slots_hash(entry) & s->mask;
    while (s->slot[i])
        i = (i + 1) & s->mask;
    __atomic_store_n(&s->slot[i], entry, __ATOMIC_RELEASE);
    s->used++;
}

int mf_slots_reserve(mf_slots **table)
{
    mf_slots *old = *table;
    if (old && (old->used + 1) * 2 <= old->mask + 1)
        return 0;
    uint32_t size = old ? (old->mask + 1) * 2 : 4096;
    mf_slots *s = mf_map_zeroed(sizeof *s + size * sizeof(void *));
    if (!s)
        return -1;
    s->mask = size - 1;
    for (uint32_t i = 0; old && i <= old->mask; i++)
        if (old->slot[i])
            mf_slots_put(s, old->slot[i]);
    __atomic_store_n(table, s, __ATOMIC_RELEASE);
    return 0;
}
