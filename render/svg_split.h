/*
 * svg_split.h - per-process views of a device for the memory_flow picture.
 *
 * Virtual addresses belong to a process: when logs of several processes
 * merge (a program that forks, several ranks), their blocks on one device
 * may sit at the same addresses.  svg.c then draws one panel per process,
 * each from a view built here: the device model restricted to one
 * process's blocks, with its own occupancy, peak and counts.
 *
 * Data flow: model (device) -> mf_svg_split_processes -> views -> panels.
 */
#ifndef MEMFLOW_SVG_SPLIT_H
#define MEMFLOW_SVG_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"


/* One process's (or the remaining processes') part of a device. */
typedef struct mf_svg_view {
    mf_device_model dev;      /* owns blocks and occupancy; no snapshots */
    uint32_t pid;             /* the process; 0 for "the other processes" */
    size_t n_pids;            /* processes in this view (1, or more for other) */
} mf_svg_view;

/*
 * Split dev by process into at most max_views views.  If its blocks come
 * from one process (or none), or max_views < 2, returns 0 and *views is
 * NULL: draw dev itself.  Otherwise returns the number of views in *views:
 * the processes by ascending pid, the ones past the limit merged into a
 * last view with pid 0.  Blocks keep their order (by alloc time); occupancy
 * and every count and peak are recomputed for the view; unknown frees and
 * samples cannot be told apart by process and are left out.  Returns -1
 * when out of memory.
 */
int mf_svg_split_processes(const mf_device_model *dev, size_t max_views, mf_svg_view **views);

/* Free views returned by mf_svg_split_processes (NULL is fine). */
void mf_svg_views_free(mf_svg_view *views, size_t n);

#endif /* MEMFLOW_SVG_SPLIT_H */
