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
int cmd_view(int argc, char **argv);    /* cli/cmd_view.c */
int cmd_import(int argc, char **argv);  /* cli/cmd_import.c */

/* Compact the logs of a run (memflow run, after rendering): one line on
 * stderr says how much smaller they became; a log that cannot be compacted
 * is named on stderr and stays live (nothing is lost). */
void cli_compact_run_logs(int n, char **paths);

/*
 * The same beside the rendering: begin starts compacting paths[0..n) (kept,
 * not copied) on a thread of its own, whose new files wait, complete and
 * synced, until release says the logs have been read (the analysis has its
 * model); end releases, waits for the thread and says what
 * cli_compact_run_logs says.  begin returns 0 when no thread could start:
 * end then compacts the logs itself.
 */
int cli_compact_run_begin(int n, char **paths);
void cli_compact_run_release(void);
void cli_compact_run_end(void);

/* One line on stderr: prefix, then text escaped for a terminal (names in
 * it may come from hostile files). */
void cli_say(const char *prefix, const char *text);

/* cli_say of a printf-formatted text (every part of it escaped). */
void cli_sayf(const char *prefix, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cli_say for each line of lines ('\n'-separated). */
void cli_say_lines(const char *prefix, const char *lines);

/*
 * memflow ignores SIGXFSZ in itself from its start (main.c): a file size
 * limit makes its writes fail with EFBIG, said like a full disk, instead of
 * killing it.  The program `memflow run` starts gets the disposition
 * memflow was started with: the child calls this before its exec.
 */
void cli_restore_inherited_signals(void);

/* Before reading paths (logs or folders): every stage file that a killed
 * run left in their folders is written into its log and removed
 * (cli/recover.c); what was done, or left, is said on stderr. */
void cli_recover_staged(int n, char *const *paths);

/* Exit statuses of stats, render and serve. */
#define CLI_EXIT_DAMAGED 3       /* outputs written from a damaged log */
#define CLI_EXIT_OTHER_RUNS 4    /* logs of different runs, not merged */

typedef struct cli_load_options {
    unsigned long long until_ns; /* ns since the earliest event; ULLONG_MAX: all */
    unsigned long long from_ns;  /* a window from ns since the earliest event (0: none) */
    unsigned long long from_step, to_step;  /* a window of steps (0: none) */
    int merge_runs;              /* merge logs of different runs */
    int no_picture, no_trace;    /* the outputs need no memory_flow / no trace */
    int tiles_by;                /* what memory_flow is coloured by: enum mf_tiles_by */
} cli_load_options;

/* Read every log of paths into a model (shared by run, stats and render).
 * Damage is reported on stderr and kept as model warnings; returns NULL
 * (message printed, *exit_code 1, or CLI_EXIT_OTHER_RUNS when the logs are
 * of different runs) when the logs cannot be read. */
struct mf_model;
struct mf_model *cli_load(int n, char **paths, const cli_load_options *opt, int *exit_code);

/* The same with the defaults (runs not merged); until_ns as above. */
struct mf_model *cli_load_model(int n, char **paths, unsigned long long until_ns);

/* Render the logs of a run (memflow run, memflow import) into dir: every
 * output the configuration names, with the GPU CSV and the flame graph
 * when the logs call for them; progress on a terminal; one line says what
 * was written.  model: their model when the caller has it already (memflow
 * run's analysis during the run; freed here), NULL to read them.  0, or -1
 * (said on stderr, prefixed by who). */
int cli_render_logs(const char *who, const char *dir, int n, char **paths,
                    struct mf_model *model);

/* The model's warnings on stderr ("memflow: warning: ...", escaped for a
 * terminal), as cli_load prints them. */
void cli_print_warnings(const struct mf_model *m);

#endif
