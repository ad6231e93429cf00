/*
 * svg.h - memory_flow: the time x address picture of a model, drawn with
 * Cairo (SVG, PNG or PDF by the file's extension), one panel per device.
 */
#ifndef MEMFLOW_SVG_H
#define MEMFLOW_SVG_H

#include <stddef.h>

#include "model.h"

typedef enum mf_color_by {
    MF_COLOR_BY_SCOPE = 0,
    MF_COLOR_BY_LIFETIME = 1,
    MF_COLOR_BY_SIZE = 2,
    MF_COLOR_BY_SITE = 3,     /* the allocation site (sites.h): logs with call stacks */
    MF_COLOR_BY_ROLE = 4      /* the block's role (mf_block.role): tensors' roles */
} mf_color_by;

typedef struct mf_svg_options {
    mf_color_by color_by;
    int only_device;          /* -1: every device; else an MF_DEVICE value */
    const char *title;        /* NULL: "memflow: <program>" */
    double summary_below;     /* processes under this percent of the largest process
                                 peak share one summary panel (mf_model_small_process;
                                 0: MF_SMALL_PROCESS_PCT, < 0: none) */
} mf_svg_options;

/*
 * Draw the model into path; the format follows the extension (.svg, .png,
 * .pdf).  SVG output carries hover details (<title>) for every block drawn
 * one by one and stays under 10 MB for any model.  Returns 0, or -1 with a
 * message naming path in err.
 */
MF_EXPORT int mf_svg_write(const mf_model *model, const char *path, const mf_svg_options *opt,
                 char *err, size_t errlen);

#endif
