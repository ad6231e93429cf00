/*
 * progress.c - a line of progress on the terminal while memflow reads logs
 * (memflow render, stats, and memflow run's reading at the program's exit):
 * once the reading has taken more than a second, stderr shows
 * "memflow: reading the logs: D of T events (P%), R M events/s", redrawn
 * at most ten times a second, and at the end "memflow: read T events in
 * S s (R M events/s)".  Nothing when stderr is not a terminal (a file, a
 * pipe: the outputs' consumers and the tests read stderr), so scripts see
 * exactly what they saw before.  MEMFLOW_PROGRESS_AFTER (seconds, an
 * internal variable) moves the second.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "units.h"

#define AFTER_NS 1000000000ull       /* no line for work shorter than this */
#define EVERY_NS 100000000ull        /* redrawn at most this often */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cli_progress_start(cli_progress *p)
{
    const char *after = getenv("MEMFLOW_PROGRESS_AFTER");
    *p = (cli_progress){ .on = isatty(2), .start_ns = now_ns(), .after_ns = AFTER_NS };
    if (after && *after) {
        char *end;
        double s = strtod(after, &end);
        if (!*end && s >= 0 && s < 1e6)
            p->after_ns = (uint64_t)(s * 1e9);
    }
}

/* Events per second so far, in millions. */
static double rate(const cli_progress *p, uint64_t at)
{
    double s = (double)(at - p->start_ns) / 1e9;
    return s > 0 ? (double)p->done / s / 1e6 : 0;
}

void cli_progress_events(void *ctx, uint64_t done, uint64_t total)
{
    cli_progress *p = ctx;
    p->done = done;
    p->total = total;
    if (!p->on)
        return;
    uint64_t at = now_ns();
    if (at - p->start_ns < p->after_ns || (p->shown && at - p->shown_ns < EVERY_NS))
        return;
    char d[32], t[32];
    fprintf(stderr, "\rmemflow: reading the logs: %s of %s events (%d%%), %.1f M events/s   ",
            mf_format_count(done, d, sizeof d), mf_format_count(total, t, sizeof t),
            total ? (int)(100 * done / total) : 100, rate(p, at));
    fflush(stderr);
    p->shown = 1;
    p->shown_ns = at;
}

void cli_progress_end(cli_progress *p)
{
    if (!p->shown)
        return;
    uint64_t at = now_ns();
    char d[32];
    fprintf(stderr, "\rmemflow: read %s events in %.1f s (%.1f M events/s)%24s\n",
            mf_format_count(p->done, d, sizeof d), (double)(at - p->start_ns) / 1e9,
            rate(p, at), "");
    p->shown = 0;
}
