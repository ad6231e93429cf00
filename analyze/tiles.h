/*
 * tiles.h - the blocks of a picture panel that are not kept one by one,
 * summarised in bounded memory: a grid of cells over (time, address),
 * each cell the colour key of the last block painted over it (scope, and
 * lifetime and size classes for the other colourings).  Cells are
 * 2^wshift ns wide and 2^gshift bytes tall; when a grid holds too many
 * cells it is coarsened (cells twice as wide or twice as tall, merged), so
 * memory stays bounded whatever the number of blocks, and painting a block
 * costs the cells it covers.  The renderer maps each cell through the
 * panel's axes into pixels.
 */
#ifndef MEMFLOW_TILES_H
#define MEMFLOW_TILES_H

#include <stddef.h>
#include <stdint.h>

#define MF_TILE_UNFREED 0x1u   /* a block that was never freed ends in this cell */
#define MF_TILES_FIRST_GSHIFT 6   /* cells of 64 bytes at first */
#define MF_TILES_FIRST_WSHIFT 12  /* and 4 us */

typedef struct mf_tile {
    uint64_t granule;         /* address >> gshift */
    uint32_t col;             /* (time - origin) >> wshift */
    uint32_t scope;           /* string id */
    uint16_t life;            /* lifetime class: log2(ns) * 256 */
    uint16_t size;            /* size class: log2(requested) * 256 */
    uint32_t flags;           /* MF_TILE_* */
} mf_tile;

typedef struct mf_tiles {
    mf_tile *cells;
    size_t n, cap;
    uint32_t *slots;          /* cell index + 1; 0 = empty */
    size_t n_slots;
    unsigned gshift, wshift;
    uint64_t origin;          /* time of column 0 (set by the first paint, or before it) */
    int started;
} mf_tiles;

/* The class of a value for the colour ramps: log2(v) * 256 (v >= 1). */
uint16_t mf_tile_class(uint64_t v);

/* How many cells painting [addr, addr + span) x [from, to] would touch. */
uint64_t mf_tiles_cost(const mf_tiles *t, uint64_t addr, uint64_t span, uint64_t from,
                       uint64_t to);

/* Paint a block.  0, or -1 when out of memory. */
int mf_tiles_paint(mf_tiles *t, uint64_t addr, uint64_t span, uint64_t from, uint64_t to,
                   uint32_t scope, uint16_t life, uint16_t size, uint32_t flags);

/* Make cells twice as wide (time != 0) or twice as tall, merging them. */
int mf_tiles_coarsen(mf_tiles *t, int time);

void mf_tiles_free(mf_tiles *t);

#endif /* MEMFLOW_TILES_H */
