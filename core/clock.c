/*
 * clock.c - the one clock of memflow: CLOCK_MONOTONIC in nanoseconds.
 *
 * Every CPU event is stamped with it, and the GPU capture registers it with
 * CUPTI (cuptiActivityRegisterTimestampCallback) so GPU records share it.
 */
#include <time.h>

#include "recorder.h"

uint64_t mf_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
