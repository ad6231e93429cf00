/*
 * progress.h - one line of progress on stderr for a command that takes a
 * while: memflow import converting a snapshot, and every command that reads
 * logs (memflow render, stats, memflow run's reading at the program's
 * exit).  Shown only on a terminal (a file or a pipe gets not a byte: the
 * outputs' consumers and the tests read stderr), only once the work has
 * taken a second, at most ten times a second, overwritten in place (\r)
 * and ended with a newline when done.  One place for a command's progress
 * line, so that every command that shows one shows it alike.
 * MEMFLOW_PROGRESS_AFTER (seconds, an internal variable) moves the second.
 */
#ifndef MEMFLOW_CLI_PROGRESS_H
#define MEMFLOW_CLI_PROGRESS_H

#include <stdint.h>

typedef struct cli_progress {
    int on;                   /* stderr is a terminal */
    int shown;                /* a line is on the screen */
    uint64_t started_ns, last_ns;
    uint64_t after_ns;        /* nothing for work shorter than this */
    uint64_t done, total;     /* events read, of (cli_progress_events) */
} cli_progress;

/* Start timing (on: whether to show anything at all; isatty(2) usually). */
void cli_progress_begin(cli_progress *p, int on);

/* Show "memflow: TEXT" (printf format) if due; cheap when not. */
void cli_progress_show(cli_progress *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Seconds since cli_progress_begin. */
double cli_progress_seconds(const cli_progress *p);

/* End the line if one was shown. */
void cli_progress_end(cli_progress *p);

/*
 * Reading logs: an mf_load_progress (model.h; ctx: the cli_progress) that
 * shows "memflow: reading the logs: D of T events (P%), R M events/s";
 * and its end, which, if a line was shown, replaces it with "memflow: read
 * T events in S s (R M events/s)".
 */
void cli_progress_events(void *ctx, uint64_t done, uint64_t total);
void cli_progress_events_end(cli_progress *p);

#endif
