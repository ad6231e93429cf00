/*
 * model_subblocks.h - the model's sub-blocks (MF_FLAG_SUBBLOCK): regions a
 * program's own allocator hands out inside memory already counted (the
 * NVTX memory API).  They live in a table of their own and are counted
 * apart: per device their own counts, peak, scopes, sites, roles, tensor
 * names and steps (mf_sub_counts, sub_scopes, sub_sites, sub_roles,
 * sub_names, sub_steps), per view the largest of them to draw over their
 * lanes.
 * Nothing here touches a device's or a view's block counts, so memory is
 * never counted twice.
 *
 * model.c routes sub-block ALLOC and FREE, NVTX heap POOL records, region
 * and tensor names, step marks and process ends here (with what the blocks
 * know of each process: whether its training began, its steps); it tells the sub-blocks which devices and
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
    struct mf_sites *sites;   /* count by site; NULL: no stacks */
    mf_live_table live;       /* live sub-blocks, keyed by the device recorded */
    uint64_t *release_of;     /* by live id - 1: when the program let it go (0: not yet) */
    size_t n_release;
    mf_block *gpu_ended;      /* GPU sub-blocks that ended with their process */
    size_t n_gpu_ended, cap_gpu_ended;
    mf_block *gpu_out;        /* what the last settle made (mf_model's gpu_sub_live) */
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

/* From now on, count sub-blocks per site through sites. */
void mf_sub_set_sites(mf_subblocks *s, struct mf_sites *sites);

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

/* Sub-block ALLOC e, counted in view (on mf_sub_device_of's device);
 * training: its process has begun training (mf_blocks_training), so a
 * tensor with no role given is MF_ROLE_OTHER, else MF_ROLE_UNKNOWN; steps:
 * the step marks its process has seen.  0, or -1 when out of memory. */
int mf_sub_on_alloc(mf_subblocks *s, const mf_event *e, uint32_t view, int training,
                    uint32_t steps);

/* Sub-block FREE e, its process having seen steps step marks (a tensor of
 * role other freed in the step it was allocated in is a temporary).  0, or
 * -1 when out of memory. */
int mf_sub_on_free(mf_subblocks *s, const mf_event *e, uint32_t steps);

/* TRACE MF_TRACE_STEP: every device's sub-blocks end their current step
 * and begin the next; their scopes and sites note what they hold.  0, or
 * -1 when out of memory. */
int mf_sub_on_step(mf_subblocks *s, const mf_event *e);

/* TRACE MF_TRACE_FREE_REQUESTED: the program let go of the live sub-block
 * at the address (value) on the device (arg); its FREE comes later. */
void mf_sub_on_release(mf_subblocks *s, const mf_event *e);

/*
 * Call fn(block, ctx) for every sub-block of log live now on device (as
 * recorded, or through its heap), in no order.  Stops when fn returns
 * non-zero and returns that.
 */
int mf_sub_each_live(const mf_subblocks *s, uint16_t log, uint16_t device,
                     int (*fn)(const mf_block *blk, void *ctx), void *ctx);

/* Sub-block bytes log holds now on device. */
uint64_t mf_sub_held(const mf_subblocks *s, uint16_t log, uint16_t device);

/* The sub-blocks of log still live end with its process.  0, or -1. */
int mf_sub_on_process_end(mf_subblocks *s, uint16_t log, uint64_t time_ns);

/* TRACE MF_TRACE_REGION_NAME or MF_TRACE_BLOCK_NAME: the live sub-block
 * that starts at the address (value) on the device (arg) gets its name, and
 * for BLOCK_NAME its role unless 0 (counted under both from then on, at its
 * device's sub-block peak if it was held then); 1 if one starts there, 0
 * if none does, -1 when out of memory. */
int mf_sub_on_name(mf_subblocks *s, const mf_event *e);

/* out's sub-block counts, scopes, sites, roles, names and steps of the
 * device of slot.  0, or -1. */
int mf_sub_settle_device(mf_subblocks *s, uint32_t slot, mf_device_model *out);

/* out's sub-blocks to draw of view.  0, or -1 when out of memory. */
int mf_sub_settle_view(mf_subblocks *s, uint32_t view, mf_view *out);

/* out's GPU sub-blocks never freed (gpu_sub_live), by pid.  0, or -1. */
int mf_sub_settle(mf_subblocks *s, mf_model *out);

void mf_sub_free(mf_subblocks *s);

#endif /* MEMFLOW_MODEL_SUBBLOCKS_H */
