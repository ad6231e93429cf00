/*
 * clock.c - the one clock of memflow: CLOCK_MONOTONIC in nanoseconds.
 *
 * Every CPU event is stamped with mf_clock_now(), and the GPU capture
 * registers the same function with CUPTI, so GPU records share the clock.
 *
 * Reading CLOCK_MONOTONIC costs 20-70 ns (more under a hypervisor), which is
 * more than jemalloc's malloc itself.  On x86-64 with an invariant TSC the
 * clock therefore switches, once the process has run for 20 ms, to the TSC
 * scaled onto CLOCK_MONOTONIC: ns = anchor_mono + (tsc - anchor_tsc) * scale,
 * with the scale measured over those first 20 ms and the anchor taken at the
 * switch (so time never steps back).  The values stay CLOCK_MONOTONIC
 * nanoseconds: the scale error is a few parts per million, which only
 * matters when logs of different processes are merged (microseconds per
 * second of run).  Set MEMFLOW_CLOCK=monotonic to keep clock_gettime.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "recorder.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#define HAVE_TSC 1
#endif

#define CALIBRATION_NS 20000000u

enum { TSC_UNKNOWN = 0, TSC_CALIBRATING = 1, TSC_SWITCHING = 2, TSC_ON = 3, TSC_OFF = 4 };

static int tsc_state;               /* enum above; TSC_ON is published last */
static uint64_t calib_mono, calib_tsc;
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
#endif

void mf_clock_calibrate(void)
{
#ifdef HAVE_TSC
    int state = __atomic_load_n(&tsc_state, __ATOMIC_ACQUIRE);
    if (state == TSC_ON || state == TSC_OFF || state == TSC_SWITCHING)
        return;
    if (state == TSC_UNKNOWN) {
        int expected = TSC_UNKNOWN;
        if (!__atomic_compare_exchange_n(&tsc_state, &expected, TSC_CALIBRATING, 0,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return;
        if (!tsc_is_invariant()) {
            __atomic_store_n(&tsc_state, TSC_OFF, __ATOMIC_RELEASE);
            return;
        }
        calib_tsc = __rdtsc();
        calib_mono = monotonic_ns();
        return;
    }
    /* TSC_CALIBRATING: switch once enough time has passed.  Only one caller
     * wins the exchange below; the anchor and scale are written before
     * TSC_ON is published. */
    uint64_t mono = monotonic_ns();
    uint64_t tsc = __rdtsc();
    if (mono - calib_mono < CALIBRATION_NS || tsc <= calib_tsc)
        return;
    int expected = TSC_CALIBRATING;
    if (!__atomic_compare_exchange_n(&tsc_state, &expected, TSC_SWITCHING, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    scale = (uint64_t)((((unsigned __int128)(mono - calib_mono)) << 32) / (tsc - calib_tsc));
    anchor_tsc = tsc;
    anchor_mono = mono;
    __atomic_store_n(&tsc_state, TSC_ON, __ATOMIC_RELEASE);
#endif
}
