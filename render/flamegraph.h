/*
 * flamegraph.h - what was live at a device's peak, by call stack: folded
 * stacks (stacks.folded, the input of flamegraph.pl, speedscope and
 * inferno) and a flame graph drawn with Cairo (flamegraph.svg).
 *
 * Data flow: model (per device, the bytes each stack held at the peak;
 * sites.h symbolises the stacks) -> a tree of frames from the outermost
 * (here) -> one line per distinct stack, or one rectangle per frame, its
 * width proportional to the bytes held below it, with a hover title.
 * Frames start at the allocation's site (allocator wrappers left out);
 * inlined functions are frames of their own.
 */
#ifndef MEMFLOW_FLAMEGRAPH_H
#define MEMFLOW_FLAMEGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* The flame graph's geometry (px), for the tests. */
#define MF_FLAME_WIDTH 1200
#define MF_FLAME_MARGIN 10        /* left and right of the frames */
#define MF_FLAME_ROW 17           /* height of a row of frames */
#define MF_FLAME_TOP 56           /* the title's band */

/*
 * The device the outputs show: `only` when it is a device (>= 0) of the
 * model, else the first device that held stacks at its peak.  NULL when
 * the model has no stacks, or `only` is not among its devices.
 */
MF_EXPORT const mf_device_model *mf_flame_device(const mf_model *model, int only);

/*
 * Write the folded stacks of device dev's peak into path: one line per
 * distinct stack, "outer;...;inner BYTES", lines sorted.  0, or -1 with a
 * message naming path in err.
 */
MF_EXPORT int mf_folded_write(const mf_model *model, const mf_device_model *dev,
                              const char *path, char *err, size_t errlen);

/*
 * Draw the flame graph of device dev's peak into path (SVG): frames from
 * the bottom row (all stacks) up, each hover title "FUNCTION\nFILE:LINE\n
 * BYTES (P% of the peak)".  0, or -1 with a message naming path in err.
 */
MF_EXPORT int mf_flame_write(const mf_model *model, const mf_device_model *dev,
                             const char *path, char *err, size_t errlen);

#endif /* MEMFLOW_FLAMEGRAPH_H */
