/*
 * steps.c - an owner's steps (see steps.h): a bounded array, the last one
 * open until the next mark.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "steps.h"

int mf_steps_mark(mf_steps *s, uint64_t number, uint64_t time_ns, uint64_t held)
{
    mf_step_stat *cur = mf_steps_current(s);
    if (cur)
        cur->end_ns = time_ns;
    s->open = 0;
    if (s->n >= MF_MODEL_STEPS) {
        s->dropped++;
        return 0;
    }
    if (mf_grow((void **)&s->items, &s->cap, s->n + 1, sizeof *s->items) < 0)
        return -1;
    s->items[s->n++] = (mf_step_stat){
        .number = number, .start_ns = time_ns, .end_ns = UINT64_MAX, .held_start = held,
        .peak_bytes = held, .peak_time_ns = time_ns,
    };
    s->open = 1;
    return 0;
}

void mf_steps_held(mf_steps *s, uint64_t bytes, int allocated, uint64_t held,
                   uint64_t time_ns)
{
    mf_step_stat *cur = mf_steps_current(s);
    if (!cur)
        return;
    if (allocated) {
        cur->alloc_count++;
        cur->alloc_bytes += bytes;
    }
    if (held > cur->peak_bytes) {
        cur->peak_bytes = held;
        cur->peak_time_ns = time_ns;
    }
}

void mf_steps_free(mf_steps *s)
{
    free(s->items);
    memset(s, 0, sizeof *s);
}
