/*
 * live_table.c - the live blocks (see live_table.h): entries in a pool,
 * an open-addressing table of 64-bit slots (32-bit hash, entry index) with
 * backward-shift deletion, and a doubly linked list per log.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "live_table.h"
#include "log_format.h"

static int same_key(const mf_live *b, uint16_t log, uint16_t device, unsigned flags,
                    uint64_t addr)
{
    return b->addr == addr && b->log == log && b->device == device &&
           ((b->flags ^ flags) & MF_FLAG_EXPLICIT) == 0;
}

uint32_t mf_live_find_at(const mf_live_table *t, uint32_t h, uint16_t log, uint16_t device,
                         unsigned flags, uint64_t addr)
{
    if (!t->n_slots)
        return 0;
    size_t mask = t->n_slots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint64_t s = t->slots[i];
        if (!s)
            return 0;
        uint32_t id = (uint32_t)s;
        if ((uint32_t)(s >> 32) == h && same_key(&t->pool[id - 1], log, device, flags, addr))
            return id;
    }
}

static void place(uint64_t *slots, size_t n_slots, uint64_t s)
{
    size_t i = (uint32_t)(s >> 32) & (n_slots - 1);
    while (slots[i])
        i = (i + 1) & (n_slots - 1);
    slots[i] = s;
}

static int resize(mf_live_table *t, size_t n_slots)
{
    uint64_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < t->n_slots; i++)
        if (t->slots[i])
            place(slots, n_slots, t->slots[i]);
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

static int grow_logs(mf_live_table *t, uint16_t log)
{
    if (log < t->n_logs)
        return 0;
    size_t n = (size_t)log + 1 > 2 * t->n_logs ? (size_t)log + 1 : 2 * t->n_logs;
    uint32_t *heads = realloc(t->log_head, n * sizeof *heads);
    if (!heads)
        return -1;
    memset(heads + t->n_logs, 0, (n - t->n_logs) * sizeof *heads);
    t->log_head = heads;
    t->n_logs = n;
    return 0;
}

uint32_t mf_live_insert_at(mf_live_table *t, const mf_live *b, uint32_t hash)
{
    if (((t->used + 1) * 2 > t->n_slots && resize(t, t->n_slots ? 2 * t->n_slots : 1024) < 0) ||
        grow_logs(t, b->log) < 0)
        return 0;
    uint32_t id = t->free_head;
    if (id) {
        t->free_head = t->pool[id - 1].next;
    } else {
        if (t->n_pool >= UINT32_MAX - 1 ||
            mf_grow((void **)&t->pool, &t->cap_pool, t->n_pool + 1, sizeof *t->pool) < 0)
            return 0;
        id = (uint32_t)++t->n_pool;
    }
    mf_live *e = &t->pool[id - 1];
    *e = *b;
    e->prev = 0;
    e->next = t->log_head[b->log];
    if (e->next)
        t->pool[e->next - 1].prev = id;
    t->log_head[b->log] = id;
    place(t->slots, t->n_slots, (uint64_t)hash << 32 | id);
    t->used++;
    return id;
}

void mf_live_remove_at(mf_live_table *t, uint32_t id, uint32_t h)
{
    mf_live *e = &t->pool[id - 1];
    size_t mask = t->n_slots - 1, hole = h & mask;
    while ((uint32_t)t->slots[hole] != id)
        hole = (hole + 1) & mask;
    for (size_t i = (hole + 1) & mask; t->slots[i]; i = (i + 1) & mask) {
        size_t home = (uint32_t)(t->slots[i] >> 32) & mask;
        int stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            t->slots[hole] = t->slots[i];
            hole = i;
        }
    }
    t->slots[hole] = 0;
    t->used--;
    if (e->prev)
        t->pool[e->prev - 1].next = e->next;
    else
        t->log_head[e->log] = e->next;
    if (e->next)
        t->pool[e->next - 1].prev = e->prev;
    e->next = t->free_head;
    t->free_head = id;
}

void mf_live_free(mf_live_table *t)
{
    free(t->pool);
    free(t->slots);
    free(t->log_head);
    memset(t, 0, sizeof *t);
}
