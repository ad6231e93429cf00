/*
 * view_raster.h - a picture of one window of a view in the page's own
 * pixels (`memflow view`'s level of detail): rectangles of time x address
 * (blocks, or the index's cells) with a density and a scope are added; each
 * pixel then says the scope that held most of it and how full it was.
 * Where anything was held, the pixel is never empty, however small its
 * share.  The address axis is the page's: the used ranges end to end
 * (view.js axisOf), so gaps take no room.
 */
#ifndef MEMFLOW_VIEW_RASTER_H
#define MEMFLOW_VIEW_RASTER_H

#include <stddef.h>
#include <stdint.h>

#include "ranges.h"

#define MF_RASTER_LAYERS 16       /* scopes told apart; the rest share the last */
#define MF_RASTER_OTHER UINT32_MAX    /* the scope of the shared layer */
#define MF_RASTER_NONE 255        /* a pixel that held nothing */

typedef struct mf_axis {
    const mf_range *r;        /* by address */
    size_t n;
    uint64_t *at;             /* where each range starts on the axis */
    uint64_t total;
    mf_range own;             /* the one range when the view has none */
    size_t last;              /* the range found last (cells come by address) */
} mf_axis;

/* The axis of ranges r[0..n) (n 0: one range [lo, hi)).  0, or -1 when out of memory. */
int mf_axis_init(mf_axis *a, const mf_range *r, size_t n, uint64_t lo, uint64_t hi);
void mf_axis_free(mf_axis *a);

/* Where addr is on the axis, and the address at place y. */
double mf_axis_y(mf_axis *a, uint64_t addr);
uint64_t mf_axis_addr(const mf_axis *a, uint64_t y);

typedef struct mf_raster {
    mf_axis *axis;
    uint32_t w, h;
    double t0, t1, y0, y1;    /* the window: ns, axis places */
    uint32_t scope[MF_RASTER_LAYERS];
    double *layer[MF_RASTER_LAYERS];  /* per row: w + 1 differences along x */
    size_t n_layers;
    int32_t *count;           /* per row: w + 1 differences of how many things cover it */
    int oom;
} mf_raster;

/* An empty w x h picture of [t0, t1] x [y0, y1] on axis.  0, or -1. */
int mf_raster_init(mf_raster *r, mf_axis *axis, uint32_t w, uint32_t h, uint64_t t0,
                   uint64_t t1, uint64_t y0, uint64_t y1);

/* [t_from, t_to) x [addr, addr + bytes) held at density (0..1] by scope. */
void mf_raster_add(mf_raster *r, uint64_t t_from, uint64_t t_to, uint64_t addr,
                   uint64_t bytes, double density, uint32_t scope);

/* The pixels, row 0 at the top (the highest place): layer[w * h] (an index
 * into r->scope, MF_RASTER_NONE where nothing was held) and fill[w * h]
 * (0..255, at least 1 where held).  0, or -1 when out of memory. */
int mf_raster_finish(mf_raster *r, uint8_t *layer, uint8_t *fill);

void mf_raster_free(mf_raster *r);

#endif /* MEMFLOW_VIEW_RASTER_H */
