/*
 * progress.h - one line of progress on stderr for a command that takes a
 * while (memflow import): shown only on a terminal, only once the work has
 * taken a second, at most ten times a second, overwritten in place (\r)
 * and ended with a newline when done.  One place for a command's progress
 * line, so that every command that shows one shows it alike.
 */
#ifndef MEMFLOW_CLI_PROGRESS_H
#define MEMFLOW_CLI_PROGRESS_H

#include <stdint.h>

typedef struct cli_progress {
    int on;                   /* stderr is a terminal */
    int shown;                /* a line is on the screen */
    uint64_t started_ns, last_ns;
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

#endif
