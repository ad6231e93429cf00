/*
 * progress.c - a command's progress line on a terminal (see progress.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "progress.h"

#define PROGRESS_AFTER_NS 1000000000ull   /* nothing for work under a second */
#define PROGRESS_EVERY_NS 100000000ull    /* then at most ten lines a second */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cli_progress_begin(cli_progress *p, int on)
{
    p->on = on;
    p->shown = 0;
    p->started_ns = p->last_ns = now_ns();
}

void cli_progress_show(cli_progress *p, const char *fmt, ...)
{
    if (!p->on)
        return;
    uint64_t now = now_ns();
    if (now - p->started_ns < PROGRESS_AFTER_NS || (p->shown && now - p->last_ns < PROGRESS_EVERY_NS))
        return;
    p->last_ns = now;
    p->shown = 1;
    char line[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\rmemflow: %-70s", line);
    fflush(stderr);
}

double cli_progress_seconds(const cli_progress *p)
{
    return (double)(now_ns() - p->started_ns) / 1e9;
}

void cli_progress_end(cli_progress *p)
{
    if (p->shown)
        fputc('\n', stderr);
    p->shown = 0;
}
