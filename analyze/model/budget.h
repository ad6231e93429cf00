/*
 * budget.h - one view's share of a budget that all views of the model
 * split (the blocks' occupancy points, the picture's blocks kept whole):
 * the budget over the number of views, rounded down to a power of two (so
 * shares change only when the count crosses one) and kept within [lo, hi].
 */
#ifndef MEMFLOW_BUDGET_H
#define MEMFLOW_BUDGET_H

#include <stddef.h>

static inline size_t mf_budget_share(size_t all, size_t views, size_t lo, size_t hi)
{
    size_t x = all / (views ? views : 1), p = 1;
    while (p * 2 <= x)
        p *= 2;
    return p < lo ? lo : p > hi ? hi : p;
}

#endif /* MEMFLOW_BUDGET_H */
