/*
 * keyed.h - per-key statistics of one owner (a device, or a device's
 * sub-blocks), by a small key: a scope string id, a site id or a stack id.
 * Each entry counts what was allocated under its key and what it holds
 * now, and keeps its share at the owner's latest peak.  The blocks
 * (model_blocks.c) keep a device's scopes, sites and stacks in them; the
 * sub-blocks (model_subblocks.c) their scopes.  Past an optional limit of
 * keys, new keys share one entry, keyed MF_KEY_OTHER, so memory stays
 * bounded whatever a damaged log carries.
 *
 * The owner's peaks are counted as epochs: when the owner reaches a new
 * peak it moves to the next epoch, and an entry that changes after that
 * first saves what it held (mf_scope_held_change), so its share at the
 * peak is known without visiting every entry at every peak.
 */
#ifndef MEMFLOW_KEYED_H
#define MEMFLOW_KEYED_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* What a key holds of its owner now, and held at the owner's latest peak
 * (valid when epoch is the owner's; else what it holds now is that). */
typedef struct mf_scope_held {
    uint64_t bytes, count;
    uint64_t at_peak_bytes, at_peak_count;
    uint64_t epoch;
} mf_scope_held;

/* Change a key's held bytes, capturing its share at the owner's last peak. */
static inline void mf_scope_held_change(mf_scope_held *s, uint64_t owner_epoch, int64_t bytes,
                                        int64_t count)
{
    if (s->epoch != owner_epoch) {
        s->at_peak_bytes = s->bytes;
        s->at_peak_count = s->count;
        s->epoch = owner_epoch;
    }
    s->bytes += (uint64_t)bytes;
    s->count += (uint64_t)count;
}

/* Its bytes and blocks at the owner's (latest) peak. */
static inline void mf_scope_held_at_peak(const mf_scope_held *s, uint64_t owner_epoch,
                                         uint64_t *bytes, uint64_t *count)
{
    *bytes = s->epoch != owner_epoch ? s->bytes : s->at_peak_bytes;
    *count = s->epoch != owner_epoch ? s->count : s->at_peak_count;
}

/* One key's entry: its statistics (s.scope is the key; live_bytes_end and
 * live_count_end: the part that ended with a process) and what it holds. */
typedef struct mf_keyed_entry {
    mf_scope_stat s;
    mf_scope_held held;
} mf_keyed_entry;

/* The table (all zero: empty, no limit). */
typedef struct mf_keyed {
    mf_keyed_entry *items;
    size_t n, cap;
    int32_t *index;           /* by key: index into items, -1 */
    size_t n_index;
    size_t limit;             /* keys counted one by one at most; 0: no limit */
    int32_t other;            /* index + 1 of the shared entry; 0: none yet */
} mf_keyed;

/* The entry of key, created if new (the shared one past the limit); NULL
 * when out of memory.  Creating an entry may move the others: a pointer
 * got earlier from the same table is stale then. */
static inline mf_keyed_entry *mf_keyed_get(mf_keyed *t, uint32_t key);

/* mf_keyed_get's slow path (out of line), for a key with no entry yet: its
 * new entry, or the shared one past the limit; NULL when out of memory. */
mf_keyed_entry *mf_keyed_add(mf_keyed *t, uint32_t key);

/* Count an allocation of bytes at time_ns in an entry whose owner is at
 * epoch: its counts, sizes, held bytes and its own peak. */
static inline void mf_keyed_alloc(mf_keyed_entry *s, uint64_t epoch, uint64_t bytes,
                                  uint64_t time_ns);

/* Count a block of bytes live on entry to a window (held, not allocated) in
 * an entry whose owner is at epoch. */
void mf_keyed_enter(mf_keyed_entry *s, uint64_t epoch, uint64_t bytes, uint64_t time_ns);

/*
 * A live block of `bytes` moves from entry `from` to entry `to` (its key
 * changed: a role or a name given after it was allocated): what each holds
 * now, what each allocated (when `allocated`: not a block live on entry to
 * the window), and, when the block was held at the owner's latest peak
 * (at_peak), their shares at that peak.  The owner is at epoch.
 */
void mf_keyed_move(mf_keyed_entry *from, mf_keyed_entry *to, uint64_t epoch, uint64_t bytes,
                   int at_peak, int allocated);

/* A step mark: every entry notes what it holds (mf_scope_stat's held_*_mark,
 * marks, marks_grew). */
void mf_keyed_mark(mf_keyed *t);

/*
 * The table's statistics as the outputs read them, sorted by key: with
 * their share at the owner's peak (epoch; none when peak_bytes is 0), and
 * what they still hold added to live_bytes_end / live_count_end.  A new
 * array of t->n entries (the caller frees it); NULL when out of memory.
 */
mf_scope_stat *mf_keyed_settle(const mf_keyed *t, uint64_t epoch, uint64_t peak_bytes);

/* Free the table's memory; it is empty, with no limit, afterwards. */
void mf_keyed_free(mf_keyed *t);

/* ---- inline part: once per block, a few times ---- */

static inline mf_keyed_entry *mf_keyed_get(mf_keyed *t, uint32_t key)
{
    if (key < t->n_index && t->index[key] >= 0)
        return &t->items[t->index[key]];
    return mf_keyed_add(t, key);
}

/* Its own peak (the most it held at once), after it grew at time_ns. */
static inline void mf_keyed_own_peak(mf_keyed_entry *s, uint64_t time_ns)
{
    if (s->held.bytes > s->s.peak_live_bytes) {
        s->s.peak_live_bytes = s->held.bytes;
        s->s.peak_live_time_ns = time_ns;
    }
}

static inline void mf_keyed_alloc(mf_keyed_entry *s, uint64_t epoch, uint64_t bytes,
                                  uint64_t time_ns)
{
    s->s.alloc_count++;
    s->s.alloc_bytes += bytes;
    s->s.min_size = bytes < s->s.min_size ? bytes : s->s.min_size;
    s->s.max_size = bytes > s->s.max_size ? bytes : s->s.max_size;
    mf_scope_held_change(&s->held, epoch, (int64_t)bytes, 1);
    mf_keyed_own_peak(s, time_ns);
}

#endif /* MEMFLOW_KEYED_H */
