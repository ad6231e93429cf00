/*
 * run.h - the parts of `memflow run` (cli/cmd_run.c drives them):
 * run_child.c starts the program, forwards signals to it and reaps it (and
 * the orphans it leaves, as a child subreaper); run_logs.c finds the logs
 * of this run by run id, writes how a killed process ended into its log,
 * and explains a run that left no log.
 */
#ifndef MEMFLOW_CLI_RUN_H
#define MEMFLOW_CLI_RUN_H

#include <stdint.h>
#include <sys/types.h>

#include "run_id.h"

/* Exit statuses of memflow's own failures before the program runs (as env
 * and timeout use them), so they cannot be taken for the program's. */
#define RUN_EXIT_OWN_ERROR 125  /* bad usage, bad configuration, no output folder */
#define RUN_EXIT_CANNOT_RUN 126 /* the command exists but cannot be executed */
#define RUN_EXIT_NOT_FOUND 127  /* no such command */

/* This run: where its logs go and the id in their headers. */
typedef struct run_ident {
    const char *dir;                 /* absolute output folder */
    uint8_t id[MF_RUN_ID_BYTES];
} run_ident;

/*
 * The staging area (cli/run_stage.c), opt-in: prepare creates it when
 * MEMFLOW_STAGE=1 and puts it in MEMFLOW_STAGE for the program (none by
 * default or when the kernel has no memfd: the program then writes its log
 * file directly); returns -1 (said on stderr) for a MEMFLOW_STAGE that is
 * neither 0 nor 1; child runs
 * in the forked child before exec and makes it that process's; start, once
 * the program runs, starts the thread that copies full chunks into the log;
 * finish, once the program is gone, stops it and copies what was left.
 */
int run_stage_prepare(void);
void run_stage_child(void);
void run_stage_start(void);
void run_stage_finish(void);

/*
 * Start command (searched in PATH like execvp) as a child with the current
 * environment.  Returns the child's pid; -1 with the errno of the failed
 * exec in *exec_errno (the child is then already reaped); -2 when no child
 * could be started (message printed).
 */
pid_t run_child_start(char **command, int *exec_errno);

/*
 * Wait for the child pid, forwarding SIGTERM, SIGINT, SIGHUP and SIGQUIT
 * sent to memflow (not those the terminal sent to the whole process group,
 * which the child got itself).  Every process of the run that this process
 * reaps - the child, and orphans adopted as subreaper - and that a signal
 * killed gets MF_END_SIGNAL in its log.  Returns the child's status in the
 * shell's convention (128+N for signal N).
 */
int run_child_wait(pid_t pid, const run_ident *run);

/* Become the subreaper of the program's orphans (PR_SET_CHILD_SUBREAPER). */
void run_child_adopt_orphans(void);

/*
 * The logs in run->dir whose header carries run->id: regular files named
 * memflow-*.mfl, opened without following symlinks.  Returns a malloc'd
 * array of malloc'd paths (sorted) and their count in *count.
 */
char **run_logs_find(const run_ident *run, int *count);

/* Process pid of this run was killed by signal sig: record MF_END_SIGNAL
 * in its newest log (the one its last image wrote). */
void run_logs_mark_signal(const run_ident *run, pid_t pid, int sig);

/*
 * The program ran but this run has no log: print why on stderr - the
 * executable is statically linked (no PT_INTERP), set-user-ID, or neither
 * (it cleared LD_PRELOAD, or ended before memflow started).
 */
void run_logs_explain_none(const char *command, const char *dir);

#endif
