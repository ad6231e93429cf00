/*
 * tiles.c - the cell grid of tiles.h: strips of cells in an array, found
 * through an open-addressing table keyed by (granule, first column).
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "tiles.h"

#define STRIP_MASK ((uint64_t)MF_TILE_STRIP - 1)

/* A slot holds a strip's index + 1 in its low 24 bits and 8 bits of the
 * strip's hash above them (its tag), so a probe that meets another strip
 * seldom has to read it: most strips are old columns, cold in the cache. */
#define SLOT_INDEX_BITS 24
#define SLOT_INDEX_MASK ((1u << SLOT_INDEX_BITS) - 1)
#define SLOT_INDEX(slot) ((slot) & SLOT_INDEX_MASK)
#define SLOT_TAG(hash) ((uint32_t)((hash) >> 56) << SLOT_INDEX_BITS)
#define RECENT 1024u            /* strips remembered as found last */

static uint64_t strip_hash(uint64_t granule, uint32_t first_col)
{
    uint64_t x = granule * 0x9e3779b97f4a7c15ull ^ ((uint64_t)first_col * 0xc2b2ae3d27d4eb4full);
    x ^= x >> 29;
    return x * 0xbf58476d1ce4e5b9ull;
}

static size_t strip_slot(uint64_t hash, size_t n_slots)
{
    return (size_t)(hash >> 32) & (n_slots - 1);
}

static int rehash(mf_tiles *t, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots || (!t->recent && !(t->recent = calloc(RECENT, sizeof *t->recent)))) {
        free(slots);
        return -1;
    }
    for (size_t c = 0; c < t->n; c++) {
        uint64_t h = strip_hash(t->strips[c].granule, t->strips[c].first_col);
        size_t i = strip_slot(h, n_slots);
        while (slots[i])
            i = (i + 1) & (n_slots - 1);
        slots[i] = SLOT_TAG(h) | ((uint32_t)c + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

/* The strip (granule, first_col), added empty if new; NULL when out of memory.
 * The strips found last, by a few bits of their hash, are looked at first:
 * blocks at one address follow one another in the same columns, and the
 * slots of the whole table are far from the cache. */
static mf_tile_strip *strip(mf_tiles *t, uint64_t granule, uint32_t first_col)
{
    if ((t->n + 1) * 2 > t->n_slots && rehash(t, t->n_slots ? 2 * t->n_slots : 1024) < 0)
        return NULL;
    uint64_t h = strip_hash(granule, first_col);
    mf_tile_recent *recent = &t->recent[(h >> 20) & (RECENT - 1)];
    if (recent->index && recent->granule == granule && recent->first_col == first_col)
        return &t->strips[recent->index - 1];
    uint32_t tag = SLOT_TAG(h);
    size_t i = strip_slot(h, t->n_slots);
    for (uint32_t slot; (slot = t->slots[i]); i = (i + 1) & (t->n_slots - 1)) {
        if ((slot & ~SLOT_INDEX_MASK) != tag)
            continue;
        mf_tile_strip *s = &t->strips[SLOT_INDEX(slot) - 1];
        if (s->granule == granule && s->first_col == first_col) {
            *recent = (mf_tile_recent){ granule, first_col, SLOT_INDEX(slot) };
            return s;
        }
    }
    if (t->n + 1 >= (1u << SLOT_INDEX_BITS) ||   /* never: the budget keeps far fewer */
        mf_grow((void **)&t->strips, &t->cap, t->n + 1, sizeof *t->strips) < 0)
        return NULL;
    mf_tile_strip *s = &t->strips[t->n++];
    memset(s, 0, sizeof *s);
    s->granule = granule;
    s->first_col = first_col;
    t->slots[i] = tag | (uint32_t)t->n;
    *recent = (mf_tile_recent){ granule, first_col, (uint32_t)t->n };
    return s;
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

/* The column of time, at most the last column a strip can start in. */
static uint64_t column(const mf_tiles *t, uint64_t time)
{
    uint64_t c = time > t->origin ? (time - t->origin) >> t->wshift : 0;
    return c > UINT32_MAX ? UINT32_MAX : c;
}

uint64_t mf_tiles_cost(const mf_tiles *t, uint64_t addr, uint64_t span, uint64_t from,
                       uint64_t to)
{
    if (!t->started)
        return 1;
    uint64_t last = addr + span - 1 < addr ? UINT64_MAX : addr + span - 1;
    uint64_t rows = (last >> t->gshift) - (addr >> t->gshift) + 1;
    uint64_t strips = column(t, to) / MF_TILE_STRIP - column(t, from) / MF_TILE_STRIP + 1;
    return rows > UINT64_MAX / strips ? UINT64_MAX : rows * strips;
}

/* Bits lo..hi (0 <= lo <= hi < MF_TILE_STRIP). */
static mf_tile_mask bits(unsigned lo, unsigned hi)
{
    return (mf_tile_mask)(((2ull << hi) - 1) & ~((1ull << lo) - 1));
}

int mf_tiles_paint(mf_tiles *t, uint64_t addr, uint64_t span, uint64_t from, uint64_t to,
                   mf_tile value, int unfreed)
{
    start(t, from);
    uint64_t last = addr + span - 1 < addr ? UINT64_MAX : addr + span - 1;
    uint64_t g0 = addr >> t->gshift, g1 = last >> t->gshift;
    uint64_t c0 = column(t, from), c1 = column(t, to > from ? to : from);
    if (c0 > c1)
        c0 = c1;
    for (uint64_t g = g0;; g++) {
        for (uint64_t first = c0 & ~STRIP_MASK; first <= c1; first += MF_TILE_STRIP) {
            mf_tile_strip *s = strip(t, g, (uint32_t)first);
            if (!s)
                return -1;
            unsigned lo = first < c0 ? (unsigned)(c0 - first) : 0;
            unsigned hi = c1 - first < MF_TILE_STRIP ? (unsigned)(c1 - first) : MF_TILE_STRIP - 1;
            for (unsigned k = lo; k <= hi; k++)
                s->cells[k] = value;
            mf_tile_mask painted = bits(lo, hi);
            s->used |= painted;
            s->unfreed &= (mf_tile_mask)~painted;
            if (unfreed && c1 - first < MF_TILE_STRIP)
                s->unfreed |= (mf_tile_mask)1 << hi;
        }
        if (g == g1)
            break;
    }
    return 0;
}

/* Bit j (j < 16) of the result: bit 2j of x. */
static uint32_t even_bits(uint32_t x)
{
    x &= 0x55555555u;
    x = (x | x >> 1) & 0x33333333u;
    x = (x | x >> 2) & 0x0f0f0f0fu;
    x = (x | x >> 4) & 0x00ff00ffu;
    return (x | x >> 8) & 0x0000ffffu;
}

/* Strip from, its cells made twice as wide, into cells base .. base + 15 of
 * to: cells 2j and 2j + 1 become cell j, the later painted one winning. */
static void merge_in_time(mf_tile_strip *to, unsigned base, const mf_tile_strip *from)
{
    uint32_t odd = even_bits(from->used >> 1), any = even_bits(from->used | from->used >> 1);
    for (uint32_t m = any; m; m &= m - 1) {
        unsigned j = (unsigned)__builtin_ctz(m);
        to->cells[base + j] = from->cells[2 * j + (odd >> j & 1u)];
    }
    to->used |= (mf_tile_mask)(any << base);
    to->unfreed |= (mf_tile_mask)(even_bits(from->unfreed | from->unfreed >> 1) << base);
}

/* Strip from's painted cells over to's (the same columns, a granule twice
 * as tall). */
static void merge_in_address(mf_tile_strip *to, const mf_tile_strip *from)
{
    for (mf_tile_mask m = from->used; m; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctz(m);
        to->cells[k] = from->cells[k];
    }
    to->used |= from->used;
    to->unfreed |= from->unfreed;
}

/* Coarsening writes the merged strips into the array the last one read
 * (kept as the spare), so its pages are not given back and faulted in
 * again each time. */
int mf_tiles_coarsen(mf_tiles *t, int time)
{
    mf_tile_strip *old = t->strips;
    size_t n = t->n, old_cap = t->cap;
    t->strips = t->spare;
    t->cap = t->cap_spare;
    t->n = 0;
    free(t->slots);
    t->slots = NULL;
    t->n_slots = 0;
    if (t->recent)           /* the strips get new indices */
        memset(t->recent, 0, RECENT * sizeof *t->recent);
    if (time)
        t->wshift++;
    else
        t->gshift++;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const mf_tile_strip *o = &old[i];
        uint32_t half = o->first_col / 2;     /* a multiple of MF_TILE_STRIP / 2 */
        mf_tile_strip *s = time ? strip(t, o->granule, half & ~(uint32_t)STRIP_MASK)
                                : strip(t, o->granule >> 1, o->first_col);
        if (!s) {
            rc = -1;
            break;
        }
        if (time)
            merge_in_time(s, half & (uint32_t)STRIP_MASK, o);
        else
            merge_in_address(s, o);
    }
    t->spare = old;
    t->cap_spare = old_cap;
    return rc;
}

unsigned mf_tile_run(const mf_tile_strip *s, unsigned *k, unsigned *first)
{
    while (*k < MF_TILE_STRIP && !(s->used >> *k & 1u))
        (*k)++;
    if (*k >= MF_TILE_STRIP)
        return 0;
    const mf_tile *a = &s->cells[*k];
    unsigned n = 1;
    *first = *k;
    while (*k + n < MF_TILE_STRIP && (s->used >> (*k + n) & 1u) &&
           s->cells[*k + n].scope == a->scope && s->cells[*k + n].life == a->life &&
           s->cells[*k + n].size == a->size)
        n++;
    *k += n;
    return n;
}

void mf_tiles_free(mf_tiles *t)
{
    free(t->strips);
    free(t->spare);
    free(t->slots);
    free(t->recent);
    memset(t, 0, sizeof *t);
}
