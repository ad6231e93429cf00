/*
 * steps.h - one owner's steps (a device's blocks, or its sub-blocks): from
 * one step mark (MF_TRACE_STEP) to the next, what was held at the mark,
 * the most held during the step and what was allocated in it.  The first
 * MF_MODEL_STEPS are kept, later ones only counted, so memory stays
 * bounded whatever the log holds.  model_blocks.c and model_subblocks.c
 * each keep one per device and feed it as their counts change.
 */
#ifndef MEMFLOW_STEPS_H
#define MEMFLOW_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

typedef struct mf_steps {
    mf_step_stat *items;      /* each step marked, in order (MF_MODEL_STEPS) */
    size_t n, cap;
    uint64_t dropped;         /* steps past the bound */
    int open;                 /* items[n - 1] is the current step */
} mf_steps;

/* The current step (the last one marked and kept), or NULL. */
static inline mf_step_stat *mf_steps_current(mf_steps *s)
{
    return s->open ? &s->items[s->n - 1] : NULL;
}

/* A step mark numbered number at time_ns, with held bytes held: the
 * current step ends there, the next begins.  0, or -1 when out of memory. */
int mf_steps_mark(mf_steps *s, uint64_t number, uint64_t time_ns, uint64_t held);

/* The owner now holds held bytes at time_ns, after allocating bytes (0 for
 * a block that only starts being held: live on entry to a window): the
 * current step's allocations and peak. */
void mf_steps_held(mf_steps *s, uint64_t bytes, int allocated, uint64_t held,
                   uint64_t time_ns);

void mf_steps_free(mf_steps *s);

#endif /* MEMFLOW_STEPS_H */
