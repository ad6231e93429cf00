/*
 * model_subblocks.h - the model's sub-blocks (MF_FLAG_SUBBLOCK): regions a
 * program's own allocator hands out inside memory already counted (the
 * NVTX memory API).  They live in a table of their own and are counted
 * apart: per device their own counts, peak and scopes (mf_sub_counts,
 * sub_scopes), per view the largest of them to draw over their lanes.
 * Nothing here touches a device's or a view's block counts, so memory is
 * never counted twice.
 *
 * model.c routes sub-block ALLOC and FREE, NVTX heap POOL records, region
 * names and process ends here; it tells the sub-blocks which devices and
 * views exist (model.c's indices), and, for a heap, which device the live
 * GPU block at its address is on (model_blocks.h knows).
 */
#ifndef MEMFLOW_MODEL_SUBBLOCKS_H
#define MEMFLOW_MODEL_SUBBLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "live_table.h"
#include "model.h"

struct mf_sub_device;
struct mf_sub_view;
struct mf_heap;

typedef struct mf_subblocks {
    int keep_picture;         /* keep the largest of each view to draw */
    mf_live_table live;       /* live sub-blocks, keyed by the device recorded */
    struct mf_heap *heaps;    /* NVTX heaps registered, in no order */
    size_t n_heaps, cap_heaps;
    struct mf_sub_device **devs;     /* by device slot (model.c's) */
    size_t n_devs, cap_devs;
    struct mf_sub_view **views;      /* by view index (model.c's) */
    size_t n_views, cap_views;
    int oom;
} mf_subblocks;

/* No sub-blocks yet; keep_picture: keep each view's largest to draw. */
void mf_sub_init(mf_subblocks *s, int keep_picture);

/* A new device, slot s->n_devs.  0, or -1 when out of memory. */
int mf_sub_add_device(mf_subblocks *s);

/* A new view (process pid on device, whose slot is slot), index
 * s->n_views.  0, or -1 when out of memory. */
int mf_sub_add_view(mf_subblocks *s, uint32_t slot, uint32_t pid, uint16_t device);

/*
 * An NVTX heap's POOL record (MF_POOL_HEAP_*); gpu_device: the device of
 * the live GPU block of its process at the heap's address, or the record's
 * own device.  *device gets the device the heap belongs to (its pool event
 * is shown there).  0, or -1 when out of memory.
 */
int mf_sub_on_heap(mf_subblocks *s, const mf_event *e, uint16_t gpu_device, uint16_t *device);

/* The device sub-block ALLOC e counts on: its heap's, or the one recorded. */
uint16_t mf_sub_device_of(const mf_subblocks *s, const mf_event *e);

/* Sub-block ALLOC e, counted in view (on mf_sub_device_of's device).  0,
 * or -1 when out of memory. */
int mf_sub_on_alloc(mf_subblocks *s, const mf_event *e, uint32_t view);

/* Sub-block FREE e.  0, or -1 when out of memory. */
int mf_sub_on_free(mf_subblocks *s, const mf_event *e);

/* The sub-blocks of log still live end with its process.  0, or -1. */
int mf_sub_on_process_end(mf_subblocks *s, uint16_t log, uint64_t time_ns);

/* TRACE MF_TRACE_REGION_NAME or MF_TRACE_BLOCK_NAME: a live sub-block gets
 * its name; 1 if one was live at the address, else 0. */
int mf_sub_on_name(mf_subblocks *s, const mf_event *e);

/* out's sub-block counts and scopes of the device of slot.  0, or -1. */
int mf_sub_settle_device(mf_subblocks *s, uint32_t slot, mf_device_model *out);

/* out's sub-blocks to draw of view.  0, or -1 when out of memory. */
int mf_sub_settle_view(mf_subblocks *s, uint32_t view, mf_view *out);

void mf_sub_free(mf_subblocks *s);

#endif /* MEMFLOW_MODEL_SUBBLOCKS_H */
