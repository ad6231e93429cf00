/*
 * clock.c - the one clock of memflow: CLOCK_MONOTONIC in nanoseconds.
 *
 * Every CPU event is stamped with mf_clock_now(), and the GPU capture
 * registers the same function with CUPTI, so GPU records share the clock;
 * logs of different processes merge because each sits on CLOCK_MONOTONIC.
 *
 * Reading CLOCK_MONOTONIC costs 20-70 ns (more under a hypervisor), more
 * than jemalloc's malloc itself.  On x86-64 with an invariant TSC the clock
 * is therefore the TSC mapped onto CLOCK_MONOTONIC, piecewise linearly:
 *
 *   ns = segment.start_ns + (tsc - segment.start_tsc) * segment.scale
 *
 * How the segments stay within a part per million of CLOCK_MONOTONIC:
 *  - A (CLOCK_MONOTONIC, TSC) pair is the best of 32 readings, each
 *    bracketed by two TSC reads, after a warm-up: the reading with the
 *    narrowest bracket wins, so a cold vDSO page, an interrupt or a
 *    preempted vCPU cannot spoil it (one cold pair over 2 ms was 70-2300
 *    ppm off).
 *  - Nothing blocks at start: mf_clock_calibrate() takes one pair; events
 *    of the first SWITCH_NS use clock_gettime itself.  The first event after
 *    that measures a second pair, and the scale comes from a 20 ms baseline.
 *  - Re-anchoring: 1 s later, then 2, 4 ... 64 s apart, a new pair measures
 *    the rate over the long baseline and a new segment takes over, steered
 *    (at most MAX_STEER_PPM) so the offset the old one gathered is worked
 *    off over the next interval.
 *
 * mf_clock_now() stays a TSC read, one load and a multiply.  Time never
 * goes backwards within a thread: the mapping is a pure, non-decreasing
 * function of the TSC.  A segment is made with its start MARGIN_NS in the
 * future and continuous with its predecessor there, and a reader reads the
 * TSC before it loads the newest segment (walking back when that one starts
 * later than its tick), so every reader maps every tick with the same
 * segment.  The first segment starts a guard above its pair, so it never
 * maps below a clock_gettime value read before it.
 *
 * MEMFLOW_CLOCK=monotonic, or a TSC that is not invariant, keeps
 * clock_gettime for every event.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "clock_fast.h"

#if defined(__x86_64__)
#include <cpuid.h>
#define HAVE_TSC 1
#endif

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#ifndef HAVE_TSC

uint64_t mf_clock_now(void)
{
    return monotonic_ns();
}

void mf_clock_calibrate(void)
{
}

#else

#define SWITCH_NS 20000000ull          /* clock_gettime for the first 20 ms */
#define FIRST_REFINE_NS 1000000000ull  /* then re-anchor after 1 s, 2 s, 4 s ... */
#define MAX_REFINE_NS 64000000000ull   /* ... at most 64 s apart */
#define MARGIN_NS 1000000ull           /* a segment starts 1 ms after it is made */
#define MAX_STEER_PPM 5                /* how fast an offset is worked off */
#define PAIR_TRIES 32
#define MAX_PAIR_TICKS 100000u         /* a narrower bracket than this, or no TSC */
#define SEGMENTS 256                   /* then the last one runs on */

enum { TSC_UNKNOWN = 0, TSC_PENDING = 1, TSC_OFF = 2 };

typedef mf_clock_pair clock_pair;          /* clock_fast.h */
typedef mf_clock_segment clock_segment;

static clock_segment segments[SEGMENTS];
static unsigned n_segments;
const clock_segment *mf_clock_newest;  /* NULL until the switch to the TSC */
static int tsc_state;
static clock_pair first_pair;          /* taken by mf_clock_calibrate */
static int refiner;                    /* pid of the process whose thread re-anchors */

static uint64_t ns_of(uint64_t ticks, uint64_t scale)
{
    return (uint64_t)(((unsigned __int128)ticks * scale) >> 32);
}

static uint64_t ticks_of(uint64_t ns, uint64_t scale)
{
    return (uint64_t)(((unsigned __int128)ns << 32) / scale);
}

static uint64_t scale_of(uint64_t ns, uint64_t ticks)
{
    return (uint64_t)(((unsigned __int128)ns << 32) / ticks);
}

static uint64_t map(const clock_segment *s, uint64_t tsc)
{
    return mf_clock_map(s, tsc);
}

uint64_t mf_clock_now(void)
{
    return mf_clock_fast();
}

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

/* The best of PAIR_TRIES bracketed readings, after warming clock_gettime up. */
static clock_pair measure_pair(void)
{
    clock_pair best = { 0, 0, UINT64_MAX };
    monotonic_ns();
    monotonic_ns();
    for (int i = 0; i < PAIR_TRIES; i++) {
        uint64_t before = __rdtsc();
        uint64_t mono = monotonic_ns();
        uint64_t after = __rdtsc();
        if (after > before && after - before < best.width)
            best = (clock_pair){ mono, before + (after - before) / 2, after - before };
    }
    return best;
}

/* One thread of this process re-anchors at a time (a forked child may take
 * the lock its parent's other thread held). */
static int refine_lock(void)
{
    int mine = (int)getpid();
    int holder = __atomic_load_n(&refiner, __ATOMIC_ACQUIRE);
    if (holder == mine)
        return 0;
    return __atomic_compare_exchange_n(&refiner, &holder, mine, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

static void refine_unlock(void)
{
    __atomic_store_n(&refiner, 0, __ATOMIC_RELEASE);
}

static void publish(clock_segment *s, uint64_t interval_ns)
{
    s->interval_ns = interval_ns;
    s->refine_span = n_segments + 1 < SEGMENTS ? ticks_of(interval_ns, s->scale) : UINT64_MAX;
    n_segments++;
    __atomic_store_n(&mf_clock_newest, s, __ATOMIC_RELEASE);
}

/* First segment: the rate over the baseline from first_pair, starting a
 * guard above the pair so no earlier clock_gettime value is passed. */
static void switch_to_tsc(void)
{
    clock_pair p = measure_pair();
    if (p.width > MAX_PAIR_TICKS || first_pair.width > MAX_PAIR_TICKS ||
        p.tsc <= first_pair.tsc || p.mono <= first_pair.mono) {
        __atomic_store_n(&tsc_state, TSC_OFF, __ATOMIC_RELEASE);
        return;
    }
    clock_segment *s = &segments[0];
    s->scale = scale_of(p.mono - first_pair.mono, p.tsc - first_pair.tsc);
    uint64_t margin = ticks_of(MARGIN_NS, s->scale);
    uint64_t guard = ns_of(p.width, s->scale) + 1;
    s->start_tsc = p.tsc + margin;
    s->start_ns = p.mono + ns_of(margin, s->scale) + guard;
    s->prev = NULL;
    s->pair = p;
    publish(s, FIRST_REFINE_NS);
}

/*
 * Re-anchor: the rate over the baseline since the newest segment's pair;
 * the new segment starts MARGIN_NS ahead, where it equals the old one, and
 * is steered to meet CLOCK_MONOTONIC at the end of its interval.
 */
static void re_anchor(const clock_segment *old)
{
    clock_pair p = measure_pair();
    if (p.width > MAX_PAIR_TICKS || p.tsc <= old->pair.tsc || p.mono <= old->pair.mono)
        return; /* try again at the next slow call */
    clock_segment *s = &segments[n_segments];
    uint64_t rate = scale_of(p.mono - old->pair.mono, p.tsc - old->pair.tsc);
    uint64_t margin = ticks_of(MARGIN_NS, rate);
    uint64_t interval = old->interval_ns * 2 < MAX_REFINE_NS ? old->interval_ns * 2
                                                              : MAX_REFINE_NS;
    s->start_tsc = p.tsc + margin;
    s->start_ns = map(old, s->start_tsc);
    int64_t offset = (int64_t)(s->start_ns - (p.mono + ns_of(margin, rate)));
    int64_t steer = (int64_t)(((__int128)offset * ((__int128)1 << 32)) /
                              (__int128)ticks_of(interval, rate));
    int64_t limit = (int64_t)(rate / 1000000u * MAX_STEER_PPM);
    steer = steer > limit ? limit : steer < -limit ? -limit : steer;
    s->scale = (uint64_t)((int64_t)rate - steer);
    s->prev = old;
    s->pair = p;
    publish(s, interval);
}

/* Before the switch: clock_gettime, and the switch once SWITCH_NS passed. */
static uint64_t before_tsc(void)
{
    uint64_t now = monotonic_ns();
    if (__atomic_load_n(&tsc_state, __ATOMIC_ACQUIRE) != TSC_PENDING ||
        now - first_pair.mono < SWITCH_NS || !refine_lock())
        return now;
    if (!__atomic_load_n(&mf_clock_newest, __ATOMIC_ACQUIRE) &&
        __atomic_load_n(&tsc_state, __ATOMIC_ACQUIRE) == TSC_PENDING)
        switch_to_tsc();
    refine_unlock();
    return now;
}

/* Ticks the newest segment does not cover, or no segment yet. */
__attribute__((noinline)) uint64_t mf_clock_slow(uint64_t tsc, const clock_segment *s)
{
    if (!s)
        return before_tsc();
    while (s->prev && tsc < s->start_tsc)
        s = s->prev; /* a segment newer than this tick */
    if (tsc < s->start_tsc)
        return monotonic_ns(); /* just before the first segment */
    if (tsc - s->start_tsc >= s->refine_span && refine_lock()) {
        if (s == __atomic_load_n(&mf_clock_newest, __ATOMIC_ACQUIRE))
            re_anchor(s);
        refine_unlock();
    }
    return map(s, tsc);
}

void mf_clock_calibrate(void)
{
    int expected = TSC_UNKNOWN;
    /* One caller decides; the others keep clock_gettime meanwhile. */
    if (!__atomic_compare_exchange_n(&tsc_state, &expected, TSC_OFF, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    if (!tsc_is_invariant())
        return;
    first_pair = measure_pair();
    __atomic_store_n(&tsc_state, TSC_PENDING, __ATOMIC_RELEASE);
}

#endif /* HAVE_TSC */
