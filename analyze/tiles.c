/*
 * tiles.c - the cell grid of tiles.h: cells in an array, found through an
 * open-addressing table keyed by (granule, column).
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "tiles.h"


uint16_t mf_tile_class(uint64_t v)
{
    if (v <= 1)
        return 0;
    unsigned top = 63 - (unsigned)__builtin_clzll(v);
    /* the 8 bits below the top bit give the fraction */
    uint64_t frac = top >= 8 ? (v >> (top - 8)) & 0xff : (v << (8 - top)) & 0xff;
    return (uint16_t)(top * 256 + frac);
}

static uint32_t cell_hash(uint64_t granule, uint32_t col)
{
    uint64_t x = granule * 0x9e3779b97f4a7c15ull ^ ((uint64_t)col * 0xc2b2ae3d27d4eb4full);
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(x >> 32);
}

static int rehash(mf_tiles *t, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t c = 0; c < t->n; c++) {
        size_t i = cell_hash(t->cells[c].granule, t->cells[c].col) & (n_slots - 1);
        while (slots[i])
            i = (i + 1) & (n_slots - 1);
        slots[i] = (uint32_t)c + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

/* The cell (granule, col), added if new; NULL when out of memory. */
static mf_tile *cell(mf_tiles *t, uint64_t granule, uint32_t col)
{
    if ((t->n + 1) * 2 > t->n_slots && rehash(t, t->n_slots ? 2 * t->n_slots : 1024) < 0)
        return NULL;
    size_t i = cell_hash(granule, col) & (t->n_slots - 1);
    for (; t->slots[i]; i = (i + 1) & (t->n_slots - 1)) {
        mf_tile *c = &t->cells[t->slots[i] - 1];
        if (c->granule == granule && c->col == col)
            return c;
    }
    if (mf_grow((void **)&t->cells, &t->cap, t->n + 1, sizeof *t->cells) < 0)
        return NULL;
    mf_tile *c = &t->cells[t->n++];
    memset(c, 0, sizeof *c);
    c->granule = granule;
    c->col = col;
    t->slots[i] = (uint32_t)t->n;
    return c;
}

static void start(mf_tiles *t, uint64_t from)
{
    if (t->started)
        return;
    t->started = 1;
    t->gshift = MF_TILES_FIRST_GSHIFT;
    t->wshift = MF_TILES_FIRST_WSHIFT;
    t->origin = from;
}

static uint64_t column(const mf_tiles *t, uint64_t time)
{
    return time > t->origin ? (time - t->origin) >> t->wshift : 0;
}

uint64_t mf_tiles_cost(const mf_tiles *t, uint64_t addr, uint64_t span, uint64_t from,
                       uint64_t to)
{
    if (!t->started)
        return 1;
    uint64_t last = addr + span - 1 < addr ? UINT64_MAX : addr + span - 1;
    uint64_t rows = (last >> t->gshift) - (addr >> t->gshift) + 1;
    uint64_t cols = column(t, to) - column(t, from) + 1;
    return rows > UINT64_MAX / cols ? UINT64_MAX : rows * cols;
}

int mf_tiles_paint(mf_tiles *t, uint64_t addr, uint64_t span, uint64_t from, uint64_t to,
                   uint32_t scope, uint16_t life, uint16_t size, uint32_t flags)
{
    start(t, from);
    uint64_t last = addr + span - 1 < addr ? UINT64_MAX : addr + span - 1;
    uint64_t g0 = addr >> t->gshift, g1 = last >> t->gshift;
    uint64_t c0 = column(t, from), c1 = column(t, to > from ? to : from);
    if (c1 > UINT32_MAX)
        c1 = UINT32_MAX;
    if (c0 > c1)
        c0 = c1;
    for (uint64_t c = c0; c <= c1; c++) {
        for (uint64_t g = g0;; g++) {
            mf_tile *cl = cell(t, g, (uint32_t)c);
            if (!cl)
                return -1;
            cl->scope = scope;
            cl->life = life;
            cl->size = size;
            cl->flags = c == c1 ? flags : cl->flags & ~MF_TILE_UNFREED;
            if (g == g1)
                break;
        }
    }
    return 0;
}

int mf_tiles_coarsen(mf_tiles *t, int time)
{
    mf_tile *old = t->cells;
    size_t n = t->n;
    t->cells = NULL;
    t->n = t->cap = 0;
    free(t->slots);
    t->slots = NULL;
    t->n_slots = 0;
    if (time)
        t->wshift++;
    else
        t->gshift++;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        mf_tile *c = cell(t, time ? old[i].granule : old[i].granule >> 1,
                          time ? old[i].col >> 1 : old[i].col);
        if (!c) {
            rc = -1;
            break;
        }
        uint32_t flags = c->flags | old[i].flags;
        *c = (mf_tile){ c->granule, c->col, old[i].scope, old[i].life, old[i].size, flags };
    }
    free(old);
    return rc;
}

void mf_tiles_free(mf_tiles *t)
{
    free(t->cells);
    free(t->slots);
    memset(t, 0, sizeof *t);
}
