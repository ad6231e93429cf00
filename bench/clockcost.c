/*
 * clockcost.c - what reading the time costs on this machine, for the
 * benchmark's machine section (bench/run.sh, docs/PERFORMANCE.md).
 *
 * memflow stamps every event with the TSC mapped onto CLOCK_MONOTONIC
 * (runtime/clock.c), so one TSC read is a floor under the recording cost of
 * an event; under a hypervisor it can cost as much as glibc's malloc.
 * Prints one line: ns per TSC read (x86-64 only) and per
 * clock_gettime(CLOCK_MONOTONIC), each the best of 5 loops of 10 M reads.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define READS 10000000
#define LOOPS 5

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile uint64_t sink;

#if defined(__x86_64__)
static double tsc_loop(void)
{
    uint64_t sum = 0;
    double start = now_ns();
    for (int i = 0; i < READS; i++)
        sum += __rdtsc();
    sink = sum;
    return (now_ns() - start) / READS;
}
#endif

static double gettime_loop(void)
{
    uint64_t sum = 0;
    double start = now_ns();
    for (int i = 0; i < READS; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        sum += (uint64_t)ts.tv_nsec;
    }
    sink = sum;
    return (now_ns() - start) / READS;
}

/* The best of LOOPS runs of loop. */
static double best(double (*loop)(void))
{
    double min = loop();
    for (int i = 1; i < LOOPS; i++) {
        double t = loop();
        if (t < min)
            min = t;
    }
    return min;
}

int main(void)
{
#if defined(__x86_64__)
    printf("TSC read %.1f ns, ", best(tsc_loop));
#else
    printf("TSC read n/a, ");
#endif
    printf("clock_gettime(CLOCK_MONOTONIC) %.1f ns\n", best(gettime_loop));
    return 0;
}
