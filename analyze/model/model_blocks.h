/*
 * model_blocks.h - the model's blocks: an allocation starts one; a free,
 * an allocation over its still-live address, or its process's end ends
 * it.  Each change updates, in O(1), the counts, occupancy curves, peaks
 * and per-scope, per-site and per-stack statistics of the device and of
 * the view (one process on one device) the block counts in; an ended block
 * goes to the picture (model_picture.h) and, never freed, to the leaks.
 *
 * model.c tells it which devices, views and processes exist (their indices
 * are model.c's) and routes ALLOC, FREE, SAMPLE and process ends here; the
 * blocks know nothing of events of other kinds.  Sub-blocks
 * (MF_FLAG_SUBBLOCK) never come here (model_subblocks.h).
 */
#ifndef MEMFLOW_MODEL_BLOCKS_H
#define MEMFLOW_MODEL_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "live_table.h"
#include "model.h"
#include "model_picture.h"
#include "topk.h"

struct mf_blocks_device;
struct mf_blocks_view;
struct mf_blocks_process;

typedef struct mf_blocks {
    mf_picture *picture;      /* where ended blocks go; NULL: no picture */
    struct mf_sites *sites;   /* count by site and stack; NULL: no stacks */
    void (*on_block)(void *ctx, const mf_block *blk, int ended);   /* NULL: nobody */
    void (*on_role)(void *ctx, const mf_block *blk, unsigned from, uint64_t time_ns);
    void *on_block_ctx;
    int no_curves;            /* add no occupancy points (mf_model_options.no_curves) */
    struct mf_blocks_device **devs;  /* by device slot (model.c's) */
    size_t n_devs, cap_devs;
    struct mf_blocks_view **views;   /* by view index (model.c's) */
    size_t n_views, cap_views;
    size_t view_points;       /* occupancy points per view, for the current view count */
    struct mf_blocks_process *procs; /* by log */
    size_t n_procs;
    mf_live_table live;       /* the blocks live now */
    mf_topk leaks;            /* mf_block never freed whose process ended */
    int counting;             /* 0 before a window: blocks are kept live, not counted */
    mf_step_mark *marks;      /* step marks while counting (MF_MODEL_STEPS) */
    size_t n_marks, cap_marks;
    int oom;
    mf_block *leaks_out, *gpu_out;   /* what the last settle made (mf_model's) */
    const mf_event *hand;     /* the event at hand and its key hash (mf_blocks_at_hand) */
    uint32_t hand_hash;
} mf_blocks;

/* No blocks yet; ended blocks go to picture (NULL: none). */
void mf_blocks_init(mf_blocks *b, mf_picture *picture);

/* Tell fn of every block as it starts (ended 0) and ends (ended 1), and
 * role_fn of every change of a live block's role, as mf_model_options.on_block
 * and on_role say; NULL: nobody. */
void mf_blocks_set_observer(mf_blocks *b, void (*fn)(void *ctx, const mf_block *blk, int ended),
                            void (*role_fn)(void *ctx, const mf_block *blk, unsigned from,
                                            uint64_t time_ns),
                            void *ctx);

/* From now on, count allocations per site and per stack through sites. */
void mf_blocks_set_sites(mf_blocks *b, struct mf_sites *sites);

/* A new device, slot b->n_devs.  0, or -1 when out of memory. */
int mf_blocks_add_device(mf_blocks *b, uint16_t device);

/* A new view (process pid on the device of slot), index b->n_views; the
 * per-view share of occupancy points shrinks as views are added.  0, or -1. */
int mf_blocks_add_view(mf_blocks *b, uint32_t slot, uint32_t pid);

/* Process image `log` is pid, forked from another image or not (a forked
 * child's frees of addresses it never allocated free what it inherited),
 * a Python interpreter or not (its blocks held at exit are not leaks; an
 * allocation with a Python site makes it one too).  0, or -1 when out of
 * memory. */
int mf_blocks_set_process(mf_blocks *b, uint16_t log, uint32_t pid, int forked,
                          int interpreter);

/* Whether process image log has begun training (it named a tensor), and
 * in *steps the step marks it has seen (what a tensor allocated now is
 * counted in: its role by rule, mf_block.role). */
int mf_blocks_training(const mf_blocks *b, uint16_t log, uint32_t *steps);

/* Whether process image log is a Python interpreter (so far). */
int mf_blocks_interpreter(const mf_blocks *b, uint16_t log);

/* ALLOC e (not a sub-block), counted in view.  0, or -1 when out of memory. */
int mf_blocks_on_alloc(mf_blocks *b, const mf_event *e, uint32_t view);

/* FREE e (not a sub-block): 1 when it ended a live block, 0 when its
 * address was not live (then call mf_blocks_on_unknown_free), -1 when out of
 * memory. */
int mf_blocks_on_free(mf_blocks *b, const mf_event *e);

/* The key hash (mf_live_hash) of an allocation or free of a block (not a
 * sub-block) into *hash: 1; 0 for any other event. */
static MF_ALWAYS_INLINE int mf_blocks_event_hash(const mf_event *e, uint32_t *hash)
{
    unsigned flags;
    uint64_t addr;
    if (e->type == MF_REC_ALLOC) {
        flags = e->alloc.flags;
        addr = e->alloc.addr;
    } else if (e->type == MF_REC_FREE) {
        flags = e->free.flags;
        addr = e->free.addr;
    } else {
        return 0;
    }
    if (flags & MF_FLAG_SUBBLOCK)
        return 0;
    *hash = mf_live_hash(e->log, e->device, flags, addr);
    return 1;
}

/* A hint for an allocation or free e a few events ahead, whose key hashes
 * to hash: stage 0 starts loading where its live block is looked up,
 * stage 1 (later, once that has come) the live block itself. */
static MF_ALWAYS_INLINE void mf_blocks_prefetch(const mf_blocks *b, const mf_event *e,
                                                uint32_t hash, int stage)
{
    if (stage == 0)
        mf_live_prefetch(&b->live, hash);
    else if (e->type == MF_REC_FREE)     /* an allocation's key is seldom live */
        mf_live_prefetch_entry(&b->live, hash);
}

/* The event the model is about to feed (NULL: none) and its key hash, so
 * that mf_blocks_on_alloc and mf_blocks_on_free do not compute it again. */
static inline void mf_blocks_at_hand(mf_blocks *b, const mf_event *e, uint32_t hash)
{
    b->hand = e;
    b->hand_hash = hash;
}

/* TRACE MF_TRACE_BLOCK_NAME: its process's training has begun
 * (mf_block.role); unless named_elsewhere (a sub-block took the name), the
 * block live at the address on the device (a program's or a custom
 * allocator's) gets the name, and the role unless it is 0.  0, or -1 when
 * out of memory. */
int mf_blocks_on_name(mf_blocks *b, const mf_event *e, int named_elsewhere);

/* TRACE MF_TRACE_STEP of process pid: its process's next step began; while
 * counting, every device's current step ends and the next begins (their
 * scopes and sites note what they hold).  0, or -1 when out of memory. */
int mf_blocks_on_step(mf_blocks *b, const mf_event *e, uint32_t pid);

/* Before a window: from now on blocks are only followed (allocated, freed,
 * named), not counted, until mf_blocks_enter. */
void mf_blocks_pause(mf_blocks *b);

/* The window begins at time_ns: every block live now counts as live on
 * entry (held from time_ns, mf_counts.entry_*), and what follows is counted.
 * 0, or -1 when out of memory. */
int mf_blocks_enter(mf_blocks *b, uint64_t time_ns);

/* FREE e of an address not live, counted in view: an unknown free, or an
 * inherited one in a forked child. */
void mf_blocks_on_unknown_free(mf_blocks *b, const mf_event *e, uint32_t view);

/* SAMPLE e with its values, counted in view.  0, or -1 when out of memory. */
int mf_blocks_on_sample(mf_blocks *b, const mf_event *e, uint32_t view,
                        const mf_sample_values *values);

/* Process image `log` ended at time_ns: its live blocks end with it, then
 * its views' curves (view_of[slot]: view index + 1 by device slot, 0:
 * none) get one point.  1 when some block ended, 0 when none, -1 when out
 * of memory. */
int mf_blocks_on_process_end(mf_blocks *b, uint16_t log, uint64_t time_ns,
                             const uint32_t *view_of, size_t n_view_of);

/* The device of the live GPU block of log that starts at addr, or
 * fallback (where an NVTX heap's sub-blocks belong). */
uint16_t mf_blocks_gpu_block_device(const mf_blocks *b, uint16_t log, uint64_t addr,
                                    uint16_t fallback);

/* When the live block of log on device at addr (not a custom allocator's)
 * was allocated: 1 and *alloc_ns set, or 0 when none is live there. */
int mf_blocks_alloc_time(const mf_blocks *b, uint16_t log, uint16_t device, uint64_t addr,
                         uint64_t *alloc_ns);

/* The peaks view has reached (its epoch: the picture's legend counts at it). */
uint64_t mf_blocks_view_epoch(const mf_blocks *b, uint32_t view);

/*
 * Call fn(block, ctx) for every block of log live now that counts in view
 * on device, in the live table's order.  Stops when fn returns non-zero
 * and returns that.
 */
int mf_blocks_each_live(const mf_blocks *b, uint16_t log, uint32_t view, uint16_t device,
                        int (*fn)(const mf_block *blk, void *ctx), void *ctx);

/* out's counts, kinds, curves, samples, scopes, sites, peak stacks, roles
 * and names of the device of slot.  0, or -1 when out of memory. */
int mf_blocks_settle_device(mf_blocks *b, uint32_t slot, mf_device_model *out);

/* out's counts, curve and samples of view.  0, or -1 when out of memory. */
int mf_blocks_settle_view(mf_blocks *b, uint32_t view, mf_view *out);

/* out's leaks (the largest blocks never freed) and GPU blocks never freed.
 * 0, or -1 when out of memory. */
int mf_blocks_settle(mf_blocks *b, mf_model *out);

void mf_blocks_free(mf_blocks *b);

#endif /* MEMFLOW_MODEL_BLOCKS_H */
