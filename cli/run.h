/*
 * run.h - the parts of `memflow run` (cli/cmd_run.c drives them):
 * run_child.c starts the program, forwards signals to it and reaps it (and
 * the orphans it leaves, as a child subreaper); run_logs.c finds the logs
 * of this run by run id, writes how a killed process ended into its log,
 * and explains a run that left no log.
 */
#ifndef MEMFLOW_CLI_RUN_H
#define MEMFLOW_CLI_RUN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "log_format.h"
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
 * memflow run's help with the program's log (cli/run_stage.c), from a
 * thread of its own.  prepare, before the program starts: by default it
 * creates the staging area (run->dir/memflow-RUNID.stage) and puts it in
 * MEMFLOW_STAGE for the program; with MEMFLOW_STAGE=0, or when no stage
 * file can be had, it unsets MEMFLOW_STAGE (the program writes its log file
 * directly) and watches run->dir for the run's logs, to keep their next
 * chunks ready; returns -1 (said on stderr) for a MEMFLOW_STAGE that is
 * neither 0 nor 1.
 * child runs in the forked child before exec and makes the staging area
 * that process's; start, once the program runs, starts the thread (copies
 * full chunks into the log, or keeps chunks ready); finish, once the
 * program `child` is gone and reaped, stops it and copies what was left
 * staged, or cuts child's logs back to their claimed chunks (the analysis
 * may read the logs meanwhile: run_stage_unwritten_since still answers);
 * release, after finish and once nothing asks the stage any more (the
 * analysis stopped), removes the staging file.  finish(0) and release
 * when no program started (it could not be executed) remove the staging
 * file, which no process used.
 */
int run_stage_prepare(const run_ident *run);
void run_stage_child(void);
void run_stage_start(void);
void run_stage_finish(pid_t child);
void run_stage_release(void);

/* Before start: the drain also writes what threads that fill their chunks
 * slowly recorded, for the analysis during the run (stage_drain.h
 * mf_stage_write_idle); nothing without a stage. */
void run_stage_write_idle(void);

/* Before start: fn hears of each chunk of the log the drain copies from a
 * full slot, a chunk no record is written into again (stage_drain.h
 * mf_stage_on_final); nothing without a stage. */
void run_stage_on_final(void (*fn)(void *arg, int log_fd, const char *log_path, uint64_t index),
                        void *arg);

/* While the program runs (between start and finish): the earliest time a
 * record the program wrote may carry that is not in its log yet (staged:
 * stage_drain.h mf_stage_unwritten_since), UINT64_MAX without a stage. */
uint64_t run_stage_unwritten_since(uint64_t now_ns);

/* Whether the drain may copy staged chunks into the log open on fd
 * (stage_drain.h mf_stage_may_copy_into); 0 without a stage. */
int run_stage_may_copy_into(int fd);

/*
 * The analysis during the run (cli/run_analysis.c), on a thread of its own
 * at the lowest priority (SCHED_IDLE: it runs on cores the program leaves
 * idle, and the program never waits for it): start, once the program runs,
 * follows the run's logs as they appear and grow and feeds the model up to
 * a horizon no record can still come before; hurry, once the program is
 * gone, raises the thread to normal priority, so it goes on reading while
 * run_stage_finish copies what was left staged (the user now waits for
 * both); stop, after run_stage_finish's copies, ends the thread; finish, once the stage
 * is drained, reads what is left of the logs (paths[0..n): the run's logs)
 * and returns the settled model, or NULL when it cannot be exactly the
 * model of the finished logs (records came later than the horizon allowed
 * and the analysis could not start over in time, or it failed): the caller
 * then reads the finished logs.  stacks: the run records call stacks.
 */
void run_analysis_start(const run_ident *run, int stacks);
void run_analysis_hurry(void);
void run_analysis_stop(void);
struct mf_model *run_analysis_finish(int n, char **paths);

/* Free what the analysis holds, its model unused (the run left no log). */
void run_analysis_discard(void);

/*
 * The threads beside the program (cli/run_idle.c).  mode: the variable's
 * value, "idle" (SCHED_IDLE; the default of both MEMFLOW_RUN_ANALYSIS and
 * MEMFLOW_RUN_COMPACT), "normal" (the tests, on a machine busy with others)
 * or "0" (no such thread), else the caller's fallback.  loop, on the thread:
 * step() until *stop is set or step returns -1; after a step that left
 * more waiting (2) it steps again at once, after one that did something
 * (1) it looks again in min_wait_us, after each that did not (0) twice as
 * late, up to max_wait_us; returns the scheduling policy the
 * thread ended with (SCHED_OTHER once run_idle_stop raised it).  start: a
 * thread running fn with every signal blocked (signals stay the main
 * thread's); whether it started.  lower: the calling thread to SCHED_IDLE
 * (nice 19 where that is refused).  raise: the program is gone and the user
 * waits for the thread's last steps, so it runs them at normal priority
 * (SCHED_OTHER: on a saturated machine an idle thread may not run for many
 * seconds).  stop: raise, then *stop is set and the thread joined.
 */
typedef struct run_idle {
    const char *variable;
    int (*step)(void);
    const int *stop;
    int min_wait_us, max_wait_us;
} run_idle;
const char *run_idle_mode(const char *variable, const char *fallback);
/* Whether MEMFLOW_RUN_REPORT=1: memflow run and its threads say on stderr
 * what they did (for the tests). */
int run_reporting(void);
int run_idle_loop(const run_idle *t);
int run_idle_start(pthread_t *thread, void *(*fn)(void *));
void run_idle_lower(void);
void run_idle_raise(pthread_t thread);
void run_idle_stop(pthread_t thread, int *stop);

/*
 * Compaction during the run (cli/run_compact.c): start, before the program
 * runs, has the drain hand over each chunk that is final (run_stage_on_final)
 * and starts a thread at the lowest priority (MEMFLOW_RUN_COMPACT: "idle",
 * the default; "normal"; "0": none) that appends each one's frame to the
 * compact form of the staged log, a new private file beside it
 * (mf_compact_writer); stop, once the program is gone, ends the thread;
 * log, for each log of the run after the stage is drained: 1 when path is
 * not the log compacted during the run (the caller compacts it whole),
 * else that compact form finished (opt: its progress) and renamed over the
 * log, returned as mf_compact_log_with does (a failure during the run
 * too: the log left live, err says why).  forget, at the end, removes the
 * new file of a compaction that never finished (the run left no log) and
 * says what the compaction during the run did (MEMFLOW_RUN_REPORT=1).
 */
void run_compact_start(void);
void run_compact_stop(void);
struct mf_compact_options;
struct mf_compact_result;
int run_compact_log(const char *path, const struct mf_compact_options *opt,
                    struct mf_compact_result *res, char *err, size_t errlen);
void run_compact_forget(void);

/*
 * Keeping the next chunks of the run's logs ready (cli/run_ahead.c): open
 * watches run->dir (NULL when it cannot: nothing is kept ready); step
 * finds new logs of the run and reserves and reads ahead the AHEAD chunks
 * after each one's claims, returns whether a log claimed chunks since the
 * last step (stops early once *stop is set); wait sleeps until a file
 * appears, wake or timeout_us; close cuts the logs of the reaped process
 * `gone` (0: none) back to their claimed chunks and frees everything.
 */
typedef struct run_ahead run_ahead;
run_ahead *run_ahead_open(const run_ident *run);
int run_ahead_step(run_ahead *a, const int *stop);
void run_ahead_wait(run_ahead *a, int timeout_us);
void run_ahead_wake(run_ahead *a);
void run_ahead_close(run_ahead *a, pid_t gone);

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

/*
 * Open the file `name` in run->dir (O_NOFOLLOW, a regular file) with flags
 * (O_RDONLY, O_RDWR) if it is a log of this run: a memflow-*.mfl whose
 * header has the log magic, version and run->id (read into *h).  The
 * descriptor, or -1.
 */
int run_logs_open(const run_ident *run, const char *name, int flags, mf_file_header *h);

/* Process pid of this run was killed by signal sig: record how (how:
 * MF_END_SIGNAL, or MF_END_OOM_KILLED) in its newest log (the one its last
 * image wrote). */
void run_logs_mark_signal(const run_ident *run, pid_t pid, int sig, unsigned how);

/*
 * OOM kills (cli/run_oom.c): run_oom_start reads the kernel's count of OOM
 * kills of memflow run's cgroup (v1 memory.oom_control, v2 memory.events;
 * else the system's, /proc/vmstat) before the program starts;
 * run_oom_killed, when a process of the run died of SIGKILL, says whether
 * the count grew since (1: an OOM killer killed it; the kill is counted).
 */
void run_oom_start(void);
int run_oom_killed(void);

/*
 * The program ran but this run has no log: print why on stderr - the
 * executable is statically linked (no PT_INTERP), set-user-ID, or neither
 * (it cleared LD_PRELOAD, or ended before memflow started).
 */
void run_logs_explain_none(const char *command, const char *dir);

#endif
