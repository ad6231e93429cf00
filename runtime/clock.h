/*
 * clock.h - the one clock of every memflow event: CLOCK_MONOTONIC
 * nanoseconds, read cheaply (see clock.c).  CPU events, GPU records (CUPTI's
 * timestamp callback) and every process of a run use it.
 */
#ifndef MEMFLOW_CLOCK_H
#define MEMFLOW_CLOCK_H

#include <stdint.h>

#include "compiler.h"

/* The monotonic nanosecond clock of every event (CLOCK_MONOTONIC). */
MF_EXPORT uint64_t mf_clock_now(void);

/*
 * Called once when recording starts, before the first event: measures the
 * invariant TSC against CLOCK_MONOTONIC and moves mf_clock_now() onto it
 * (see clock.c).  Later calls return at once.
 */
MF_EXPORT void mf_clock_calibrate(void);

#endif /* MEMFLOW_CLOCK_H */
