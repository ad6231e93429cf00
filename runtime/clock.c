/*
 * clock.c - the one clock of memflow: CLOCK_MONOTONIC in nanoseconds.
 *
 * Every CPU event is stamped with mf_clock_now(), and the GPU capture
 * registers the same function with CUPTI, so GPU records share the clock.
 *
 * Reading CLOCK_MONOTONIC costs 20-70 ns (more under a hypervisor), which is
 * more than jemalloc's malloc itself.  On x86-64 with an invariant TSC the
 * clock is therefore the TSC scaled onto CLOCK_MONOTONIC:
 * ns = anchor_mono + (tsc - anchor_tsc) * scale, with the scale measured
 * over 2 ms when recording starts (mf_clock_calibrate), before the first
 * event, so a process never mixes two clocks.  Values stay CLOCK_MONOTONIC
 * nanoseconds; the scale is within about 50 parts per million, which only
 * matters when logs of different processes are merged (tens of
 * microseconds per second of run).  MEMFLOW_CLOCK=monotonic keeps
 * clock_gettime for every event.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#define HAVE_TSC 1
#endif

#define CALIBRATION_NS 2000000u

enum { TSC_UNKNOWN = 0, TSC_ON = 1, TSC_OFF = 2 };

static int tsc_state;               /* TSC_ON is published after the scale */
static uint64_t anchor_mono, anchor_tsc;
static uint64_t scale;              /* ns per tick, 32.32 fixed point */

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t mf_clock_now(void)
{
#ifdef HAVE_TSC
    if (MF_LIKELY(__atomic_load_n(&tsc_state, __ATOMIC_ACQUIRE) == TSC_ON)) {
        uint64_t ticks = __rdtsc() - anchor_tsc;
        return anchor_mono + (uint64_t)(((unsigned __int128)ticks * scale) >> 32);
    }
#endif
    return monotonic_ns();
}

#ifdef HAVE_TSC
static int tsc_is_invariant(void)
{
    unsigned a, b, c, d;
    const char *choice = getenv("MEMFLOW_CLOCK");
    if (choice && strcmp(choice, "monotonic") == 0)
        return 0;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1;
}

/* A (CLOCK_MONOTONIC, TSC) pair read as close together as possible. */
static void clock_pair(uint64_t *mono, uint64_t *tsc)
{
    uint64_t before = __rdtsc();
    *mono = monotonic_ns();
    *tsc = before + (__rdtsc() - before) / 2;
}
#endif

void mf_clock_calibrate(void)
{
#ifdef HAVE_TSC
    int expected = TSC_UNKNOWN;
    /* One caller calibrates; the others keep clock_gettime meanwhile. */
    if (!__atomic_compare_exchange_n(&tsc_state, &expected, TSC_OFF, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    if (!tsc_is_invariant())
        return;
    uint64_t mono0, tsc0, mono1, tsc1;
    clock_pair(&mono0, &tsc0);
    do
        clock_pair(&mono1, &tsc1);
    while (mono1 - mono0 < CALIBRATION_NS);
    if (tsc1 <= tsc0)
        return;
    scale = (uint64_t)((((unsigned __int128)(mono1 - mono0)) << 32) / (tsc1 - tsc0));
    anchor_tsc = tsc1;
    anchor_mono = mono1;
    __atomic_store_n(&tsc_state, TSC_ON, __ATOMIC_RELEASE);
#endif
}
