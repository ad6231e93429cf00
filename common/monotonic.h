/*
 * monotonic.h - CLOCK_MONOTONIC in nanoseconds, the one clock the memflow
 * program's threads time their waits and steps with (the recorder stamps
 * events with its own clock: runtime/clock.h).
 */
#ifndef MEMFLOW_MONOTONIC_H
#define MEMFLOW_MONOTONIC_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mf_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* MEMFLOW_MONOTONIC_H */
