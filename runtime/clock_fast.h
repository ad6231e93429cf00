/*
 * clock_fast.h - mf_clock_now() inlined, for the recorder's hot path.
 *
 * clock.c maps the TSC onto CLOCK_MONOTONIC through a chain of segments; the
 * common case is one rdtsc, one load of the newest segment and a multiply.
 * The recorder calls it in the middle of writing a record: through the
 * exported mf_clock_now that is a call through the PLT, which makes the
 * caller save registers around it.  This header gives libmemflow's own code
 * the same computation inline; everything rarer (no segment yet, time to
 * re-anchor, a tick older than the newest segment) stays in clock.c, out of
 * line.  Private to libmemflow: nothing here is exported.
 */
#ifndef MEMFLOW_CLOCK_FAST_H
#define MEMFLOW_CLOCK_FAST_H

#include <stdint.h>

#include "clock.h"

#if defined(__x86_64__)
#include <x86intrin.h>

#define MF_HIDDEN __attribute__((visibility("hidden")))

/* A CLOCK_MONOTONIC reading and the TSC at its middle; width: bracket ticks. */
typedef struct mf_clock_pair {
    uint64_t mono, tsc, width;
} mf_clock_pair;

/* ns = start_ns + (tsc - start_tsc) * scale, for ticks up to refine_span. */
typedef struct mf_clock_segment {
    uint64_t start_tsc;
    uint64_t refine_span;              /* ticks after start_tsc: re-anchor due */
    uint64_t start_ns;
    uint64_t scale;                    /* ns per tick, 32.32 fixed point */
    const struct mf_clock_segment *prev;
    mf_clock_pair pair;                /* what it was measured from */
    uint64_t interval_ns;              /* until its re-anchoring */
} mf_clock_segment;

/* The segment that maps the newest ticks; NULL until the switch to the TSC. */
extern MF_HIDDEN const mf_clock_segment *mf_clock_newest;

/* Every case the inline path does not take (clock.c). */
MF_HIDDEN uint64_t mf_clock_slow(uint64_t tsc, const mf_clock_segment *s);

static inline uint64_t mf_clock_map(const mf_clock_segment *s, uint64_t tsc)
{
    return s->start_ns + (uint64_t)(((unsigned __int128)(tsc - s->start_tsc) * s->scale) >> 32);
}

/*
 * The common case alone: 1 and the time in *now when the newest segment
 * maps this tick, else 0 (then call mf_clock_now or mf_clock_fast).  For a
 * hot path that leaves every rarer case to a slow path of its own.
 */
static inline int mf_clock_try_fast(uint64_t *now)
{
    uint64_t tsc = __rdtsc();
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    const mf_clock_segment *s = __atomic_load_n(&mf_clock_newest, __ATOMIC_ACQUIRE);
    if (__builtin_expect(s == NULL || tsc - s->start_tsc >= s->refine_span, 0))
        return 0;
    *now = mf_clock_map(s, tsc);
    return 1;
}

/* mf_clock_now(), inline: the tick first, then the segment. */
static inline uint64_t mf_clock_fast(void)
{
    uint64_t tsc = __rdtsc();
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    const mf_clock_segment *s = __atomic_load_n(&mf_clock_newest, __ATOMIC_ACQUIRE);
    if (__builtin_expect(s != NULL && tsc - s->start_tsc < s->refine_span, 1))
        return mf_clock_map(s, tsc);
    return mf_clock_slow(tsc, s);
}

#else

static inline uint64_t mf_clock_fast(void)
{
    return mf_clock_now();
}

static inline int mf_clock_try_fast(uint64_t *now)
{
    *now = mf_clock_now();
    return 1;
}

#endif

#endif /* MEMFLOW_CLOCK_FAST_H */
