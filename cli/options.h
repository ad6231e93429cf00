/*
 * options.h - the argument handling shared by the subcommands: options
 * ("--opt VALUE" and "--opt=VALUE" both work) and the folders of paths.
 */
#ifndef MEMFLOW_CLI_OPTIONS_H
#define MEMFLOW_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "commands.h"

/* Whether arg is the option opt, alone or as "opt=VALUE". */
int cli_is_option(const char *arg, const char *opt);

/*
 * The value of option opt at argv[*i]: the text after "opt=", or the next
 * argument (then *i moves past it).  NULL when the value is missing.
 */
const char *cli_option_value(int argc, char **argv, int *i, const char *opt);

/* The folder that holds path, in buf: "." when path has no slash, "/" for
 * a file at the root (truncated to len). */
void cli_folder_of(const char *path, char *buf, size_t len);

/* "123", "1.5ms", "20us", "2s", "100ns" -> ns.  0, or -1 if malformed. */
int cli_parse_time(const char *text, uint64_t *ns);

/* --summary-below PERCENT: a number from 0 to 100 into *pct as the output
 * options take it (0 becomes -1: no process is small).  0, or -1 if bad. */
int cli_parse_percent(const char *text, double *pct);

#define CLI_SUMMARY_HELP "--summary-below needs a percent from 0 to 100"

/* One end of a window: a time since the logs' start, or a step. */
typedef struct cli_bound {
    uint64_t ns;
    uint64_t step;            /* 0: a time */
} cli_bound;

/* "step:N" (N >= 1) or a time (cli_parse_time).  0, or -1 if malformed. */
int cli_parse_bound(const char *text, cli_bound *b);

/*
 * --from and --to of `memflow CMD` at argv[*i]: 1 when it was one (lo's
 * window set; *i moved past its value), 0 when argv[*i] is another
 * argument, -1 (message on stderr) when its value is bad.
 */
int cli_window_options(int argc, char **argv, int *i, cli_load_options *lo, const char *cmd);

/* -1 (message on stderr) when lo's window ends before it begins, else 0. */
int cli_window_check(const cli_load_options *lo, const char *cmd);

#endif
