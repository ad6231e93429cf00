/*
 * svg_group.h - the processes of a device past the picture's panel limit,
 * combined into one view for one panel ("N other processes"): their counts
 * added, their occupancy curves summed point by point in time order, their
 * address ranges united, their largest blocks and legend scopes together.
 * Their tiles and live blocks stay theirs: the panel draws each source.
 * Samples are not combined (each process samples its own allocator).
 *
 * Data flow: model views -> mf_svg_group_build -> a panel's view.
 */
#ifndef MEMFLOW_SVG_GROUP_H
#define MEMFLOW_SVG_GROUP_H

#include <stddef.h>

#include "model.h"

typedef struct mf_svg_group {
    mf_view view;             /* the combined view (owns its arrays) */
    const mf_view *const *sources;
    size_t n_sources;
} mf_svg_group;

/* Combine views[0..n).  Returns 0, or -1 when out of memory. */
int mf_svg_group_build(mf_svg_group *g, const mf_view *const *views, size_t n);

void mf_svg_group_free(mf_svg_group *g);

#endif /* MEMFLOW_SVG_GROUP_H */
