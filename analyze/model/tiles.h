/*
 * tiles.h - the blocks of a picture panel that are not kept one by one,
 * summarised in bounded memory: a grid of cells over (time, address),
 * each cell the colour key of the last block painted over it (scope, and
 * lifetime and size classes for the other colourings).  Cells are
 * 2^wshift ns wide and 2^gshift bytes tall; when a grid holds too many
 * cells it is coarsened (cells twice as wide or twice as tall, merged), so
 * memory stays bounded whatever the number of blocks.  The renderer maps
 * cells through the panel's axes into pixels.
 *
 * Cells are stored in strips: MF_TILE_STRIP neighbouring columns of one
 * address granule, found through one hash lookup.  A block lives over
 * several columns, and an address is used again and again by the blocks
 * that follow one another there, so strips fill up; painting a block costs
 * a lookup per row and strip it crosses, then writes its cells in a row.
 */
#ifndef MEMFLOW_TILES_H
#define MEMFLOW_TILES_H

#include <stddef.h>
#include <stdint.h>

#define MF_TILE_STRIP 32          /* columns per strip (the bits of mf_tile_mask) */
#define MF_TILES_FIRST_GSHIFT 6   /* cells of 64 bytes at first */
#define MF_TILES_FIRST_WSHIFT 12  /* and 4 us */

/* What one cell shows. */
typedef struct mf_tile {
    uint32_t scope;           /* string id (a site id when the model keeps tiles by site) */
    uint16_t life;            /* lifetime class: log2(ns) * 256 */
    uint16_t size;            /* size class: log2(requested) * 256 */
} mf_tile;

/* One bit per cell of a strip. */
typedef uint32_t mf_tile_mask;

/* MF_TILE_STRIP cells of one granule: columns first_col .. + MF_TILE_STRIP - 1. */
typedef struct mf_tile_strip {
    uint64_t granule;         /* address >> gshift */
    uint32_t first_col;       /* (time - origin) >> wshift, a multiple of MF_TILE_STRIP */
    mf_tile_mask used;        /* bit k: cell k was painted */
    mf_tile_mask unfreed;     /* bit k: a block that was never freed ends in cell k */
    mf_tile cells[MF_TILE_STRIP];
} mf_tile_strip;

/* A strip found lately: its key beside its index, so that a look that
 * misses reads no strip. */
typedef struct mf_tile_recent {
    uint64_t granule;
    uint32_t first_col;
    uint32_t index;           /* strip index + 1; 0 = none */
} mf_tile_recent;

typedef struct mf_tiles {
    mf_tile_strip *strips;
    size_t n, cap;            /* strips */
    mf_tile_strip *spare;     /* the array before the last coarsening, kept for the next */
    size_t cap_spare;
    uint32_t *slots;          /* tag << 24 | strip index + 1; 0 = empty (tiles.c) */
    size_t n_slots;
    struct mf_tile_recent *recent;  /* strips last found, by a few bits of the hash */
    unsigned gshift, wshift;
    uint64_t origin;          /* time of column 0 (set by the first paint, or before it) */
    int started;
} mf_tiles;

/* The class of a value for the colour ramps: log2(v) * 256 (v >= 1); the
 * 8 bits below the top bit give the fraction. */
static inline uint16_t mf_tile_class(uint64_t v)
{
    if (v <= 1)
        return 0;
    unsigned top = 63 - (unsigned)__builtin_clzll(v);
    uint64_t frac = top >= 8 ? (v >> (top - 8)) & 0xff : (v << (8 - top)) & 0xff;
    return (uint16_t)(top * 256 + frac);
}

/* How many strips painting [addr, addr + span) x [from, to] would touch. */
uint64_t mf_tiles_cost(const mf_tiles *t, uint64_t addr, uint64_t span, uint64_t from,
                       uint64_t to);

/* Whether painting a block of span bytes over [from, to] surely touches 4
 * strips at most (2 rows, 2 strips of columns), so that mf_tiles_cost need
 * not be asked: no taller than a cell, shorter than a strip. */
static inline int mf_tiles_small(const mf_tiles *t, uint64_t span, uint64_t from, uint64_t to)
{
    return t->started && t->gshift < 64 && span <= (1ull << t->gshift) && to >= from &&
           t->wshift < 58 && to - from < ((uint64_t)MF_TILE_STRIP << t->wshift);
}

/* Paint a block (unfreed: it was never freed, it ends in its last column).
 * 0, or -1 when out of memory. */
int mf_tiles_paint(mf_tiles *t, uint64_t addr, uint64_t span, uint64_t from, uint64_t to,
                   mf_tile value, int unfreed);

/* Make cells twice as wide (time != 0) or twice as tall, merging them (the
 * later column wins in time; the strip painted later wins in address). */
int mf_tiles_coarsen(mf_tiles *t, int time);

/*
 * The next run of cells of strip s from cell *k on: cells [*k, *k + n) are
 * painted alike (n returned, 0 when no painted cell is left); *k moves past
 * the run.  *first is the run's first cell.
 */
unsigned mf_tile_run(const mf_tile_strip *s, unsigned *k, unsigned *first);

void mf_tiles_free(mf_tiles *t);

#endif /* MEMFLOW_TILES_H */
