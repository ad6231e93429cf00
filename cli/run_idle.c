/*
 * run_idle.c - the threads memflow run keeps beside the program (the
 * analysis during the run, cli/run_analysis.c; the compaction during the
 * run, cli/run_compact.c): each at the lowest priority (SCHED_IDLE: it runs
 * only on a core nothing else wants, so the program never waits for it),
 * looking for work now and then, more often while there is some.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "run.h"

const char *run_idle_mode(const char *variable, const char *fallback)
{
    const char *mode = getenv(variable);
    return mode && (!strcmp(mode, "idle") || !strcmp(mode, "normal") || !strcmp(mode, "0"))
               ? mode
               : fallback;
}

int run_reporting(void)
{
    const char *want = getenv("MEMFLOW_RUN_REPORT");
    return want && strcmp(want, "1") == 0;
}

void run_idle_lower(void)
{
    struct sched_param idle = { 0 };
    if (sched_setscheduler(0, SCHED_IDLE, &idle) != 0)   /* this thread (Linux) */
        setpriority(PRIO_PROCESS, 0, 19);
}

int run_idle_loop(const run_idle *t)
{
    if (strcmp(run_idle_mode(t->variable, "idle"), "normal") != 0)
        run_idle_lower();
    int wait_us = t->min_wait_us;
    for (int did; !__atomic_load_n(t->stop, __ATOMIC_ACQUIRE) && (did = t->step()) >= 0;) {
        if (did == 2)
            continue;            /* more is waiting: look again at once */
        if (did)
            wait_us = t->min_wait_us;
        else if ((wait_us *= 2) > t->max_wait_us)
            wait_us = t->max_wait_us;
        struct timespec ts = { 0, wait_us * 1000L };
        nanosleep(&ts, NULL);
    }
    return sched_getscheduler(0);
}

void run_idle_raise(pthread_t thread)
{
    struct sched_param normal = { 0 };
    pthread_setschedparam(thread, SCHED_OTHER, &normal);
}

void run_idle_stop(pthread_t thread, int *stop)
{
    run_idle_raise(thread);   /* before the flag: its last steps */
    __atomic_store_n(stop, 1, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
}

int run_idle_start(pthread_t *thread, void *(*fn)(void *))
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);   /* signals stay the main thread's */
    int started = pthread_create(thread, NULL, fn, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return started;
}
