/*
 * live_table.h - the blocks live at the moment the model has reached: the
 * one structure of the model whose size follows the program (what it holds
 * at once), not the log.  A block is found by (log, device, explicit or
 * not, address) - a custom allocator's blocks (memflow_record_alloc) never
 * collide with the CUPTI segments they sit in, nor a process's with
 * another's - and every log's live blocks are linked, so a process's end
 * visits exactly its own.
 */
#ifndef MEMFLOW_LIVE_TABLE_H
#define MEMFLOW_LIVE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "log_format.h"

typedef struct mf_live {
    uint64_t addr, requested, actual, alloc_ns;
    uint64_t epoch0;          /* its device's peak epoch before it was allocated */
    uint64_t vepoch0;         /* its view's */
    uint32_t scope, name, tid, stack;
    uint32_t view;            /* the model's view (device, process) it counts in */
    uint32_t prev, next;      /* the log's live blocks: index + 1, 0 = none */
    uint32_t step;            /* its process's step marks before it was allocated */
    uint16_t device, flags, log;
    uint8_t role;             /* mf_block.role */
    uint8_t entered;          /* live on entry to the window (mf_block.entered) */
} mf_live;

typedef struct mf_live_table {
    mf_live *pool;            /* entries by index; free ones chained through next */
    size_t n_pool, cap_pool;
    uint32_t free_head;       /* index + 1 */
    uint64_t *slots;          /* hash << 32 | (index + 1); 0 = empty */
    size_t n_slots, used;
    uint32_t *log_head;       /* per log: its first live block, index + 1 */
    size_t n_logs;
} mf_live_table;

/* The hash of a key (the table's slots are searched from it). */
static MF_ALWAYS_INLINE uint32_t mf_live_hash(uint16_t log, uint16_t device, unsigned flags,
                                               uint64_t addr)
{
    uint64_t tag = (uint64_t)log << 17 | (uint64_t)device << 1 | ((flags & MF_FLAG_EXPLICIT) != 0);
    uint64_t x = addr ^ (tag * 0x9e3779b97f4a7c15ull);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return (uint32_t)(x ^ (x >> 31));
}

/* Hints, for a caller that knows its next keys by their hashes: start
 * loading the table slot where a key's search begins (mf_live_prefetch),
 * and, some time later, the entry that slot names when it may be the
 * key's (its hash matches).  They change nothing; a find that follows
 * soon misses the cache less. */
static MF_ALWAYS_INLINE void mf_live_prefetch(const mf_live_table *t, uint32_t hash)
{
    if (t->n_slots)
        __builtin_prefetch(&t->slots[hash & (t->n_slots - 1)]);
}

static MF_ALWAYS_INLINE void mf_live_prefetch_entry(const mf_live_table *t, uint32_t hash)
{
    if (!t->n_slots)
        return;
    uint64_t s = t->slots[hash & (t->n_slots - 1)];
    if (s && (uint32_t)(s >> 32) == hash)
        __builtin_prefetch(&t->pool[(uint32_t)s - 1]);
}

/* The live block (index + 1) with this key, or 0; hash: the key's
 * (mf_live_hash), for a caller that has it already. */
uint32_t mf_live_find_at(const mf_live_table *t, uint32_t hash, uint16_t log, uint16_t device,
                         unsigned flags, uint64_t addr);

static inline uint32_t mf_live_find(const mf_live_table *t, uint16_t log, uint16_t device,
                                    unsigned flags, uint64_t addr)
{
    return mf_live_find_at(t, mf_live_hash(log, device, flags, addr), log, device, flags, addr);
}

/* Add a block whose key is not live (b->prev/next are set here); hash: its
 * key's.  Returns its index + 1, or 0 when out of memory. */
uint32_t mf_live_insert_at(mf_live_table *t, const mf_live *b, uint32_t hash);

static inline uint32_t mf_live_insert(mf_live_table *t, const mf_live *b)
{
    return mf_live_insert_at(t, b, mf_live_hash(b->log, b->device, b->flags, b->addr));
}

/* Remove block index + 1 = id; hash: its key's. */
void mf_live_remove_at(mf_live_table *t, uint32_t id, uint32_t hash);

/* The hash of live block id's key. */
static inline uint32_t mf_live_hash_of(const mf_live_table *t, uint32_t id)
{
    const mf_live *e = &t->pool[id - 1];
    return mf_live_hash(e->log, e->device, e->flags, e->addr);
}

static inline void mf_live_remove(mf_live_table *t, uint32_t id)
{
    mf_live_remove_at(t, id, mf_live_hash_of(t, id));
}

static inline mf_live *mf_live_get(const mf_live_table *t, uint32_t id)
{
    return &t->pool[id - 1];
}

/* The first live block of log (index + 1), or 0; then follow ->next. */
static inline uint32_t mf_live_first(const mf_live_table *t, uint16_t log)
{
    return log < t->n_logs ? t->log_head[log] : 0;
}

void mf_live_free(mf_live_table *t);

#endif /* MEMFLOW_LIVE_TABLE_H */
