/*
 * commands.h - the subcommands of the `memflow` command.  Each takes the
 * arguments after its name (argv[0] is the subcommand) and returns the exit
 * status: 0 ok, 1 failure (message on stderr), 2 bad usage.
 */
#ifndef MEMFLOW_COMMANDS_H
#define MEMFLOW_COMMANDS_H

#include <stdint.h>

int cmd_run(int argc, char **argv);     /* cli/cmd_run.c */
int cmd_stats(int argc, char **argv);   /* cli/cmd_stats.c */
int cmd_render(int argc, char **argv);  /* cli/cmd_render.c */
int cmd_serve(int argc, char **argv);   /* cli/cmd_serve.c */
int cmd_compact(int argc, char **argv); /* cli/cmd_compact.c */
int cmd_view(int argc, char **argv);    /* cli/cmd_view.c */

/* Compact the logs of a run (memflow run, after rendering): one line on
 * stderr says how much smaller they became; a log that cannot be compacted
 * is named on stderr and stays live (nothing is lost). */
void cli_compact_run_logs(int n, char **paths);

/* One line on stderr: prefix, then text escaped for a terminal (names in
 * it may come from hostile files). */
void cli_say(const char *prefix, const char *text);

/* Before reading paths (logs or folders): every stage file that a killed
 * run left in their folders is written into its log and removed
 * (cli/recover.c); what was done, or left, is said on stderr. */
void cli_recover_staged(int n, char *const *paths);

/* A line of progress on the terminal while logs are read (cli/progress.c):
 * start before the reading (it shows nothing unless stderr is a
 * terminal and the reading takes more than a second); events is an
 * mf_load_progress (ctx: the cli_progress); end writes the last line. */
typedef struct cli_progress {
    int on, shown;
    unsigned long long start_ns, shown_ns, after_ns;
    unsigned long long done, total;
} cli_progress;
void cli_progress_start(cli_progress *p);
void cli_progress_events(void *ctx, uint64_t done, uint64_t total);
void cli_progress_end(cli_progress *p);

/* Exit statuses of stats, render and serve. */
#define CLI_EXIT_DAMAGED 3       /* outputs written from a damaged log */
#define CLI_EXIT_OTHER_RUNS 4    /* logs of different runs, not merged */

typedef struct cli_load_options {
    unsigned long long until_ns; /* ns since the earliest event; ULLONG_MAX: all */
    int merge_runs;              /* merge logs of different runs */
    int no_picture, no_trace;    /* the outputs need no memory_flow / no trace */
    int tiles_by_site;           /* memory_flow is coloured by allocation site */
} cli_load_options;

/* Read every log of paths into a model (shared by run, stats and render).
 * Damage is reported on stderr and kept as model warnings; returns NULL
 * (message printed, *exit_code 1, or CLI_EXIT_OTHER_RUNS when the logs are
 * of different runs) when the logs cannot be read. */
struct mf_model;
struct mf_model *cli_load(int n, char **paths, const cli_load_options *opt, int *exit_code);

/* The same with the defaults (runs not merged); until_ns as above. */
struct mf_model *cli_load_model(int n, char **paths, unsigned long long until_ns);

/* The model's warnings on stderr ("memflow: warning: ...", escaped for a
 * terminal), as cli_load prints them. */
void cli_print_warnings(const struct mf_model *m);

#endif
