/*
 * commands.h - the subcommands of the `memflow` command.  Each takes the
 * arguments after its name (argv[0] is the subcommand) and returns the exit
 * status: 0 ok, 1 failure (message on stderr), 2 bad usage.
 */
#ifndef MEMFLOW_COMMANDS_H
#define MEMFLOW_COMMANDS_H

int cmd_run(int argc, char **argv);     /* cli/cmd_run.c */
int cmd_stats(int argc, char **argv);   /* cli/cmd_stats.c */
int cmd_render(int argc, char **argv);  /* cli/cmd_render.c */
int cmd_serve(int argc, char **argv);   /* cli/cmd_serve.c */
int cmd_compact(int argc, char **argv); /* cli/cmd_compact.c */

/* Compact the logs of a run (memflow run, after rendering): one line on
 * stderr says how much smaller they became; a log that cannot be compacted
 * is named on stderr and stays live (nothing is lost). */
void cli_compact_run_logs(int n, char **paths);

/* Read every log of paths into a model (shared by run, stats and render).
 * until_ns: ns since the earliest event, ULLONG_MAX for everything.
 * Damage is reported on stderr and kept as model warnings; returns NULL
 * (message printed) when a log cannot be read at all. */
struct mf_model;
struct mf_model *cli_load_model(int n, char **paths, unsigned long long until_ns);

#endif
