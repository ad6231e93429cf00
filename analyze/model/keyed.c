/*
 * keyed.c - per-key statistics of a device or its sub-blocks (see
 * keyed.h): a dense array of entries and an index by key.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "keyed.h"

static mf_keyed_entry *keyed_new(mf_keyed *t, uint32_t key)
{
    if (mf_grow((void **)&t->items, &t->cap, t->n + 1, sizeof *t->items) < 0)
        return NULL;
    mf_keyed_entry *s = &t->items[t->n++];
    memset(s, 0, sizeof *s);
    s->s.scope = key;
    s->s.min_size = UINT64_MAX;
    return s;
}

mf_keyed_entry *mf_keyed_add(mf_keyed *t, uint32_t key)
{
    if (t->limit && t->n >= t->limit) {
        if (!t->other) {
            if (!keyed_new(t, MF_KEY_OTHER))
                return NULL;
            t->other = (int32_t)t->n;   /* index + 1 */
        }
        return &t->items[t->other - 1];
    }
    if (mf_grow_filled((void **)&t->index, &t->n_index, (size_t)key + 1, sizeof *t->index,
                       0xff) < 0)
        return NULL;
    if (!keyed_new(t, key))
        return NULL;
    t->index[key] = (int32_t)(t->n - 1);
    return &t->items[t->n - 1];
}

void mf_keyed_mark(mf_keyed *t)
{
    for (size_t i = 0; i < t->n; i++) {
        mf_scope_stat *s = &t->items[i].s;
        uint64_t held = t->items[i].held.bytes;
        if (!s->marks) {
            s->held_first_mark = held;
            s->blocks_first_mark = t->items[i].held.count;
        } else if (held > s->held_last_mark) {
            s->marks_grew++;
        }
        s->held_last_mark = held;
        s->blocks_last_mark = t->items[i].held.count;
        s->marks++;
    }
}

void mf_keyed_enter(mf_keyed_entry *s, uint64_t epoch, uint64_t bytes, uint64_t time_ns)
{
    mf_scope_held_change(&s->held, epoch, (int64_t)bytes, 1);
    mf_keyed_own_peak(s, time_ns);
}

void mf_keyed_move(mf_keyed_entry *from, mf_keyed_entry *to, uint64_t epoch, uint64_t bytes,
                   int at_peak, int allocated)
{
    if (from == to)
        return;
    mf_scope_held_change(&from->held, epoch, -(int64_t)bytes, -1);
    mf_scope_held_change(&to->held, epoch, (int64_t)bytes, 1);
    if (allocated) {
        from->s.alloc_count--;
        from->s.alloc_bytes -= bytes;
        to->s.alloc_count++;
        to->s.alloc_bytes += bytes;
        to->s.min_size = bytes < to->s.min_size ? bytes : to->s.min_size;
        to->s.max_size = bytes > to->s.max_size ? bytes : to->s.max_size;
    }
    if (to->held.bytes > to->s.peak_live_bytes)
        to->s.peak_live_bytes = to->held.bytes;
    if (at_peak) {
        from->held.at_peak_bytes -= bytes;
        from->held.at_peak_count--;
        to->held.at_peak_bytes += bytes;
        to->held.at_peak_count++;
    }
}

static int by_key(const void *a, const void *b)
{
    uint32_t x = ((const mf_scope_stat *)a)->scope, y = ((const mf_scope_stat *)b)->scope;
    return x < y ? -1 : x > y;
}

mf_scope_stat *mf_keyed_settle(const mf_keyed *t, uint64_t epoch, uint64_t peak_bytes)
{
    mf_scope_stat *out = malloc((t->n ? t->n : 1) * sizeof *out);
    if (!out)
        return NULL;
    for (size_t i = 0; i < t->n; i++) {
        const mf_keyed_entry *ds = &t->items[i];
        mf_scope_stat *s = &out[i];
        *s = ds->s;
        mf_scope_held_at_peak(&ds->held, epoch, &s->at_peak_bytes, &s->at_peak_count);
        if (peak_bytes == 0)
            s->at_peak_bytes = s->at_peak_count = 0;
        s->live_bytes_end += ds->held.bytes;
        s->live_count_end += ds->held.count;
        if (s->min_size == UINT64_MAX)
            s->min_size = 0;
    }
    qsort(out, t->n, sizeof *out, by_key);
    return out;
}

void mf_keyed_free(mf_keyed *t)
{
    free(t->items);
    free(t->index);
    memset(t, 0, sizeof *t);
}
