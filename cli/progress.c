/*
 * progress.c - a command's progress line on a terminal (see progress.h):
 * memflow import's conversion and the reading of logs (memflow render,
 * stats, memflow run at the program's exit) draw it alike.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "monotonic.h"
#include "progress.h"
#include "units.h"

#define PROGRESS_AFTER_NS 1000000000ull   /* nothing for work under a second */
#define PROGRESS_EVERY_NS 100000000ull    /* then at most ten lines a second */

void cli_progress_begin(cli_progress *p, int on)
{
    *p = (cli_progress){ .on = on, .after_ns = PROGRESS_AFTER_NS };
    p->started_ns = p->last_ns = mf_monotonic_ns();
    const char *after = getenv("MEMFLOW_PROGRESS_AFTER");
    if (after && *after) {
        char *end;
        double s = strtod(after, &end);
        if (!*end && s >= 0 && s < 1e6)
            p->after_ns = (uint64_t)(s * 1e9);
    }
}

/* Draw "memflow: TEXT" over the line on the screen (and end it). */
static void draw(const char *end, const char *fmt, va_list ap)
{
    char line[160];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "\rmemflow: %-70s%s", line, end);
    fflush(stderr);
}

/* Whether a line is due now (shown: when last drawn). */
static int due(const cli_progress *p, uint64_t now)
{
    return p->on && now - p->started_ns >= p->after_ns &&
           (!p->shown || now - p->last_ns >= PROGRESS_EVERY_NS);
}

void cli_progress_show(cli_progress *p, const char *fmt, ...)
{
    uint64_t now = mf_monotonic_ns();
    if (!due(p, now))
        return;
    p->last_ns = now;
    p->shown = 1;
    va_list ap;
    va_start(ap, fmt);
    draw("", fmt, ap);
    va_end(ap);
}

double cli_progress_seconds(const cli_progress *p)
{
    return (double)(mf_monotonic_ns() - p->started_ns) / 1e9;
}

void cli_progress_end(cli_progress *p)
{
    if (p->shown)
        fputc('\n', stderr);
    p->shown = 0;
}

/* ---- reading logs ------------------------------------------------------------ */

/* Events per second so far, in millions. */
static double rate(const cli_progress *p)
{
    double s = cli_progress_seconds(p);
    return s > 0 ? (double)p->done / s / 1e6 : 0;
}

void cli_progress_events(void *ctx, uint64_t done, uint64_t total)
{
    cli_progress *p = ctx;
    p->done = done;
    p->total = total;
    if (!due(p, mf_monotonic_ns()))
        return;
    char d[32], t[32];
    cli_progress_show(p, "reading the logs: %s of %s events (%d%%), %.1f M events/s",
                      mf_format_count(done, d, sizeof d), mf_format_count(total, t, sizeof t),
                      total ? (int)(100 * done / total) : 100, rate(p));
}

static void last_line(cli_progress *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void last_line(cli_progress *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    draw("\n", fmt, ap);
    va_end(ap);
    p->shown = 0;
}

void cli_progress_events_end(cli_progress *p)
{
    if (!p->shown)
        return;
    char d[32];
    last_line(p, "read %s events in %.1f s (%.1f M events/s)",
              mf_format_count(p->done, d, sizeof d), cli_progress_seconds(p), rate(p));
}
