/*
 * model_picture.h - the model's picture: what memory_flow needs of each
 * view (one process on one device), kept in bounded memory as blocks end.
 * The blocks (model_blocks.c) hand it every allocation and every ended
 * block of a view, with the view's peak epoch; model.c settles it into the
 * picture fields of each mf_view.  It knows nothing of devices, processes
 * or counts beyond what those calls pass in.
 */
#ifndef MEMFLOW_MODEL_PICTURE_H
#define MEMFLOW_MODEL_PICTURE_H

#include <stddef.h>
#include <stdint.h>

#include "live_table.h"
#include "model.h"
#include "topk.h"

/* The model's time span so far: earliest and latest event time (UINT64_MAX
 * and 0 before the first event).  model.c keeps it; the picture reads it
 * each time it paints (a pixel column is the span over the plot's width). */
typedef struct mf_time_span {
    uint64_t t0, t1;
} mf_time_span;

struct mf_picture_view;

typedef struct mf_picture {
    const mf_time_span *span;
    mf_time_span now;         /* the span as it stood when the block at hand came */
    struct mf_worker *worker; /* NULL: the picture is kept on the model's thread */
    int tiles_by;             /* what cells keep: enum mf_tiles_by */
    struct mf_sites *sites;   /* NULL: no stacks (cells keep the scope) */
    struct mf_picture_view **views;   /* by view index */
    size_t n_views, cap_views;
    size_t kept_limit;        /* blocks kept whole per view, for the current view count */
    size_t tiles_total;       /* tile strips of all views */
} mf_picture;

/* An empty picture reading the model's time span; tiles_by: what cells
 * keep (enum mf_tiles_by, mf_model_options). */
void mf_picture_init(mf_picture *p, const mf_time_span *span, int tiles_by);

/* From now on, cells of blocks with a stack are keyed by its site. */
void mf_picture_set_sites(mf_picture *p, struct mf_sites *sites);

/*
 * From now on, keep the picture on a thread of its own (worker.h): alloc,
 * rekey and retire hand their block over with the time span as it stands
 * and return at once (their -1 comes from the next add_view or settle);
 * the picture is exactly what it would be on the model's thread.  Not
 * when cells are keyed by site (the sites grow on the model's thread), on
 * one core, or when no thread starts: then nothing changes.
 */
void mf_picture_use_thread(mf_picture *p);

/* A new view, index p->n_views; the per-view share of blocks kept whole
 * shrinks as views are added.  0, or -1 when out of memory (here or in
 * what the picture's thread did before). */
int mf_picture_add_view(mf_picture *p);

/* Live block b of view was allocated; epoch: the view's peaks so far (its
 * legend counts the scope's bytes at the view's peak).  0, or -1 when out
 * of memory. */
int mf_picture_alloc(mf_picture *p, uint32_t view, uint64_t epoch, const mf_live *b);

/* Live block b of view changed legend key (mf_block_legend_key: it is now,
 * or no longer, held from before its process's training): its legend share
 * moves from from_key to to_key, its share at the view's latest peak
 * (epoch) too when it was held then (at_peak).  0, or -1 when out of memory. */
int mf_picture_rekey(mf_picture *p, uint32_t view, uint64_t epoch, const mf_live *b,
                     uint32_t from_key, uint32_t to_key, int at_peak);

/* Block b of view ended (freed, replaced, or its process ended): kept
 * whole among the largest, or painted into the view's tiles.  0, or -1. */
int mf_picture_retire(mf_picture *p, uint32_t view, uint64_t epoch, const mf_block *b);

/* Calls fn(b, fn_ctx) for every block of one view live now; stops at a
 * non-zero return and returns it (model.c's mf_model_each_live). */
typedef int (*mf_live_visitor)(void *src, int (*fn)(const mf_block *b, void *fn_ctx),
                               void *fn_ctx);

/*
 * Fill out's picture fields (tiles, ranges, legend, the blocks drawn whole,
 * the colour ramps' ends) for view, whose peaks so far are epoch, at the
 * model's end t1.  visit(src, ...) visits the view's live blocks, with
 * out->n_blocks 0 (all of them); the largest join the blocks drawn whole.
 * 0, or -1 when out of memory (here or in what the picture's thread did
 * before).
 */
int mf_picture_settle(mf_picture *p, uint32_t view, uint64_t epoch, uint64_t t1, mf_view *out,
                      mf_live_visitor visit, void *src);

/* Is live block b of v among v->blocks (chosen at the last settle)? */
int mf_picture_kept_whole(const mf_view *v, const mf_block *b);

/* An empty selection of the largest blocks (mf_block), in the picture's
 * order (mf_block_ranks_below). */
void mf_picture_kept_init(mf_topk *k, size_t limit);

void mf_picture_free(mf_picture *p);

#endif /* MEMFLOW_MODEL_PICTURE_H */
