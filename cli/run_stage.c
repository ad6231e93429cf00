/*
 * run_stage.c - memflow run's help with the program's log, from a thread of
 * its own while the program runs.  By default it is memflow run's half of
 * the staging area (runtime/stage.h): it copies each chunk the program
 * filled into its log file, on memflow run's own core, and when the
 * program is gone, whatever it left staged goes into the log before the
 * logs are read.  With MEMFLOW_STAGE=0, or when no stage file can be had
 * (a full disk, a file size limit under 32 MiB, a file system without
 * fallocate or flock), the program maps its log file directly and the
 * thread keeps the next chunks of the run's logs reserved and in the page
 * cache instead (cli/run_ahead.c).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run.h"
#include "stage_drain.h"

/* How long the drain sleeps between looks: MIN_WAIT_US while the program
 * records (its claims move, slots fill), twice as long after each look
 * that found it idle, up to MAX_WAIT_US. */
#define MIN_WAIT_US 1000
#define MAX_WAIT_US 100000

static mf_stage *stage;
static run_ahead *ahead;       /* without a stage */
static pthread_t drainer;
static int draining;           /* the thread runs */
static int stop;               /* the program is gone: the thread ends (atomic) */
static int reported;           /* a copy failed and was said (the drainer only) */

/* Say once that staged chunks could not be copied (the program then
 * writes them itself while it runs). */
static void report(const char *err)
{
    if (!reported++)
        fprintf(stderr, "memflow run: %s; the program writes its log itself\n", err);
}

/* One look: copy full slots, or keep the logs' next chunks ready.
 * Whether the program is recording. */
static int help_once(void)
{
    if (!stage)
        return run_ahead_step(ahead, &stop);
    char err[1024];
    int n = mf_stage_drain(stage, 0, err, sizeof err);
    if (n < 0)
        report(err);
    return n > 0 || mf_stage_busy(stage);
}

static void *help_loop(void *arg)
{
    (void)arg;
    int wait_us = MIN_WAIT_US;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        if (help_once())
            wait_us = MIN_WAIT_US;
        else if ((wait_us *= 2) > MAX_WAIT_US)
            wait_us = MAX_WAIT_US;
        if (stage)
            mf_stage_wait(stage, wait_us);
        else
            run_ahead_wait(ahead, wait_us);
    }
    return NULL;
}

/* Whether MEMFLOW_STAGE asks for a staging area: 2 when "1" asks for it by
 * name, 1 when unset or empty (the default); 0 for "0" or the area of an
 * outer memflow run ("FD:DEV:INO", which is not ours to hand on); anything
 * else is an error (-1, said on stderr). */
static int stage_wanted(void)
{
    const char *choice = getenv("MEMFLOW_STAGE");
    if (!choice || !*choice)
        return 1;
    if (strcmp(choice, "1") == 0)
        return 2;
    if (strcmp(choice, "0") == 0 || strchr(choice, ':'))
        return 0;
    fprintf(stderr, "memflow run: MEMFLOW_STAGE='%.40s': expected 1 (the default: stage the "
            "log through memflow run) or 0 (the program maps its log)\n", choice);
    return -1;
}

/* The program maps its log itself; memflow run keeps its next chunks ready. */
static void without_stage(const run_ident *run)
{
    unsetenv("MEMFLOW_STAGE");
    ahead = run_ahead_open(run);
}

int run_stage_prepare(const run_ident *run)
{
    char env[128], err[4300];
    int wanted = stage_wanted();
    if (wanted < 0)
        return -1;
    if (wanted == 0) {
        without_stage(run);
        return 0;
    }
    /* A file size limit below the area's size: no stage (EFBIG, memflow
     * ignores SIGXFSZ: main.c). */
    stage = mf_stage_create(run->dir, run->id, env, sizeof env, err, sizeof err);
    if (!stage) {
        if (wanted == 2) /* asked for by name: say why not */
            fprintf(stderr, "memflow run: %s; the program writes its log directly\n", err);
        without_stage(run);
        return 0;
    }
    setenv("MEMFLOW_STAGE", env, 1);
    return 0;
}

void run_stage_on_final(void (*fn)(void *arg, int log_fd, const char *log_path, uint64_t index),
                        void *arg)
{
    if (stage)
        mf_stage_on_final(stage, fn, arg);
}

void run_stage_write_idle(void)
{
    if (stage && mf_stage_write_idle(stage) < 0)
        fprintf(stderr, "memflow run: out of memory: records of idle threads reach the log "
                "when their chunks fill\n");
}

uint64_t run_stage_unwritten_since(uint64_t now_ns)
{
    return stage ? mf_stage_unwritten_since(stage, now_ns) : UINT64_MAX;
}

int run_stage_may_copy_into(int fd)
{
    struct stat st;
    if (!stage)
        return 0;
    return fstat(fd, &st) != 0 ||
           mf_stage_may_copy_into(stage, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
}

void run_stage_child(void)
{
    if (stage)
        mf_stage_child_owns(stage);
}

void run_stage_start(void)
{
    if (!stage && !ahead)
        return;
    /* The program may grow its log up to its own file size limit: a copy
     * beyond memflow run's is an error (EFBIG) here, never a SIGXFSZ
     * (main.c).  Signals stay the main thread's, which forwards them and waits. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    draining = pthread_create(&drainer, NULL, help_loop, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void run_stage_finish(pid_t child)
{
    if (draining) {
        __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
        if (stage)
            mf_stage_wake(stage);
        else
            run_ahead_wake(ahead);
        pthread_join(drainer, NULL);
        draining = 0;
    }
    if (ahead) {
        run_ahead_close(ahead, child);
        ahead = NULL;
    }
    if (!stage)
        return;
    char err[1024];
    if (mf_stage_drain(stage, 1, err, sizeof err) < 0)
        fprintf(stderr, "memflow run: %s: the log misses what the program left staged\n", err);
}

void run_stage_release(void)
{
    if (!stage)
        return;
    mf_stage_destroy(stage);
    stage = NULL;
}
