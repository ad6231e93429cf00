/*
 * run_analysis.c - memflow run analyses the program's logs while it runs,
 * so that at its exit only the tail is left to read.
 *
 * A thread of memflow run's own, at the lowest priority (SCHED_IDLE: it
 * runs only on a core nothing else wants, so the program never waits for
 * it, and it holds no lock the program takes), follows the logs of the run
 * as they appear in the output folder (their headers name the run) and as
 * they grow, and feeds the model (analyze/model: mf_follow) every event up
 * to a horizon: a time no record can still come before.  A record is
 * stamped before it is written - by a moment (the margin covers it) in a
 * log the program writes itself, by as long as its chunk stays in a staging
 * slot in the log memflow run copies (the stage says how old the oldest
 * slot is), by a whole buffer for the GPU records CUPTI hands over late.
 * The reader counts whatever comes later than the horizon it was read up
 * to (mf_follow_late); then the model is no longer exactly the model of
 * the finished logs, and the analysis starts over from the logs' start
 * with a margin twice that late, on the same idle core, at most
 * MAX_RESTARTS times.  A process that ends with no end mark (killed, and
 * reaped by the program itself) ends at its last event, in the past: it
 * makes a start over too.
 *
 * At the program's exit (run_analysis_finish) the reader looks at the
 * finished logs a last time (the stage is drained by then), the model gets
 * the rest and settles; if anything came late since the last start, NULL
 * says so and memflow run reads the finished logs instead, as before:
 * either way the outputs are exactly those of `memflow render` of the logs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "model.h"
#include "monotonic.h"
#include "progress.h"
#include "run.h"

#define MARGIN_NS 100000000ull      /* from a time stamp to its record in the log */
#define MAX_RESTARTS 4              /* starts over from the logs' start, at most */
#define STEP_EVENTS (1u << 16)      /* events fed between looks at the stop flag */
#define MIN_WAIT_US 20000           /* between looks while the logs grow */
#define MAX_WAIT_US 200000          /* while they do not */

/* A log of the run, as followed. */
typedef struct followed {
    char *path;
    uint64_t start_ns, pid;  /* its header's: the order logs are read in */
    int staged;              /* memflow run may copy staged chunks into it */
} followed;

static struct {
    const run_ident *run;
    pthread_t thread;
    int running;             /* the thread runs */
    int stop;                /* the program is gone: the thread ends (atomic) */
    int stacks;
    mf_follow *f;            /* NULL: not started, or given up */
    followed *logs;          /* in the order added */
    size_t n_logs, cap_logs;
    uint64_t margin_ns;
    int restarts;
    uint64_t late_ns;        /* the latest a record came, over all starts */
    uint64_t fed;            /* events fed so far (atomic: the thread's, read at the exit) */
    uint64_t fed_at_exit;    /* events fed when the program was gone */
    int end_policy;          /* the thread's scheduling policy when it ended */
} a;

/* The order a reader reads logs in (reader.h): start, pid, path. */
static int log_order(const void *pa, const void *pb)
{
    const followed *x = pa, *y = pb;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return strcmp(x->path, y->path);
}

static int followed_path(const char *path)
{
    for (size_t i = 0; i < a.n_logs; i++)
        if (strcmp(a.logs[i].path, path) == 0)
            return 1;
    return 0;
}

/* Follow logs[from..n) (new, in reading order) with the model. */
static int add_to_model(size_t from)
{
    char err[1024];
    for (size_t i = from; i < a.n_logs; i++)
        if (mf_follow_add_log(a.f, a.logs[i].path, a.logs[i].staged, err, sizeof err) < 0)
            return -1;
    return 0;
}

/* The run's logs in the folder not followed yet, added in reading order. */
static int find_new_logs(void)
{
    DIR *d = opendir(a.run->dir);
    if (!d)
        return -1;
    size_t before = a.n_logs;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", a.run->dir, e->d_name) >= (int)sizeof path ||
            followed_path(path))
            continue;
        mf_file_header h;
        int fd = run_logs_open(a.run, e->d_name, O_RDONLY, &h);
        if (fd < 0)
            continue;
        int staged = run_stage_may_copy_into(fd);
        close(fd);
        char *copy = strdup(path);
        if (!copy || (a.n_logs == a.cap_logs &&
                      !(a.logs = realloc(a.logs, (a.cap_logs = a.cap_logs ? 2 * a.cap_logs : 16) *
                                                     sizeof *a.logs)))) {
            free(copy);
            closedir(d);
            return -1;
        }
        a.logs[a.n_logs++] = (followed){ copy, h.start_mono_ns, h.pid, staged };
    }
    closedir(d);
    qsort(a.logs + before, a.n_logs - before, sizeof *a.logs, log_order);
    return add_to_model(before);
}

static void give_up(void)
{
    mf_follow_free(a.f);
    a.f = NULL;
}

/* Start over from the logs' start (every log followed so far, in reading
 * order), the margin past how late a record came. */
static void start_over(uint64_t late_ns)
{
    give_up();
    if (late_ns > a.late_ns)
        a.late_ns = late_ns;
    if (++a.restarts > MAX_RESTARTS)
        return;
    uint64_t want = 2 * late_ns > 2 * a.margin_ns ? 2 * late_ns : 2 * a.margin_ns;
    a.margin_ns = want;
    char err[1024];
    if (!(a.f = mf_follow_new(NULL, a.stacks, err, sizeof err)))
        return;
    qsort(a.logs, a.n_logs, sizeof *a.logs, log_order);
    if (add_to_model(0) < 0)
        give_up();
}

/* The horizon: no record can still come stamped before it. */
static uint64_t horizon(void)
{
    uint64_t now = mf_monotonic_ns();
    uint64_t h = now > a.margin_ns ? now - a.margin_ns : 0;
    uint64_t staged = run_stage_unwritten_since(now);
    if (staged <= h)
        h = staged ? staged - 1 : 0;
    return h;
}

/* One look: new logs, what the logs gained up to the horizon.  Whether it
 * fed events: 2 when it fed a whole step's worth (more may be waiting, so
 * the thread does not sleep before the next look), 1 fewer, 0 none. */
static int step(void)
{
    char err[1024];
    uint64_t until = horizon();
    if (find_new_logs() < 0)
        return 0;            /* tried again at the next look */
    uint64_t before = mf_follow_fed(a.f);
    int fed = mf_follow_step(a.f, until, STEP_EVENTS, err, sizeof err);
    if (fed < 0) {
        give_up();           /* memflow run reads the finished logs */
        return 0;
    }
    uint64_t late_ns;
    if (mf_follow_late(a.f, &late_ns)) {
        start_over(late_ns);
        return 1;
    }
    uint64_t now_fed = mf_follow_fed(a.f);
    __atomic_store_n(&a.fed, now_fed, __ATOMIC_RELAXED);
    return fed && now_fed - before >= STEP_EVENTS ? 2 : fed;
}

/* One look, or -1 once the analysis gave up. */
static int look(void)
{
    return a.f ? step() : -1;
}

/* MEMFLOW_RUN_ANALYSIS: "idle" (the default), "normal", "0" (none during
 * the run: the logs are read at the program's exit). */
static void *analyse(void *arg)
{
    (void)arg;
    run_idle t = { "MEMFLOW_RUN_ANALYSIS", look, &a.stop, MIN_WAIT_US, MAX_WAIT_US };
    a.end_policy = run_idle_loop(&t);
    return NULL;
}

void run_analysis_start(const run_ident *run, int stacks)
{
    char err[1024];
    a.run = run;
    a.stacks = stacks;
    a.margin_ns = MARGIN_NS;
    if (!strcmp(run_idle_mode("MEMFLOW_RUN_ANALYSIS", "idle"), "0") ||
        !(a.f = mf_follow_new(NULL, stacks, err, sizeof err)))
        return;
    a.running = run_idle_start(&a.thread, analyse);
    if (!a.running)
        give_up();
}

void run_analysis_hurry(void)
{
    if (!a.running)
        return;
    a.fed_at_exit = __atomic_load_n(&a.fed, __ATOMIC_RELAXED);
    run_idle_raise(a.thread);
}

void run_analysis_stop(void)
{
    if (!a.running)
        return;
    run_idle_stop(a.thread, &a.stop);
    a.running = 0;
}

/* MEMFLOW_RUN_REPORT=1 (for the tests): what the analysis did, on stderr. */
static void report(const char *outcome, uint64_t fed)
{
    if (run_reporting())
        fprintf(stderr, "memflow run: analysis during the run: %s; %llu events before the "
                "program's exit, %llu after; %d start(s) over; margin %.3f s; its last steps "
                "at %s priority\n", outcome, (unsigned long long)a.fed_at_exit,
                (unsigned long long)(fed > a.fed_at_exit ? fed - a.fed_at_exit : 0), a.restarts,
                (double)a.margin_ns / 1e9, a.end_policy == SCHED_IDLE ? "idle" : "normal");
}

static void forget_logs(void)
{
    for (size_t i = 0; i < a.n_logs; i++)
        free(a.logs[i].path);
    free(a.logs);
    a.logs = NULL;
    a.n_logs = a.cap_logs = 0;
}

/* Whether paths[0..n) are exactly the logs followed (the run's logs found
 * at the end; any not seen yet is added now), and the rest of them could
 * be read. */
static int same_logs(int n, char **paths)
{
    char err[1024];
    if (find_new_logs() < 0)
        return 0;
    if ((size_t)n != a.n_logs)
        return 0;
    for (int i = 0; i < n; i++)
        if (!followed_path(paths[i]))
            return 0;
    cli_progress progress;
    cli_progress_begin(&progress, isatty(2));
    mf_follow_set_progress(a.f, cli_progress_events, &progress);
    int rc = mf_follow_finish(a.f, err, sizeof err);
    cli_progress_events_end(&progress);
    return rc == 0;
}

void run_analysis_discard(void)
{
    give_up();
    forget_logs();
}

struct mf_model *run_analysis_finish(int n, char **paths)
{
    mf_model *m = NULL;
    uint64_t late_ns = 0;
    if (a.f && same_logs(n, paths) && !mf_follow_late(a.f, &late_ns)) {
        int rc;
        report("exact", mf_follow_fed(a.f));
        m = mf_follow_take(a.f, &rc);
        a.f = NULL;
    } else if (a.f || a.restarts > MAX_RESTARTS) {
        report("not exact", a.f ? mf_follow_fed(a.f) : 0);
        if (late_ns > a.late_ns)
            a.late_ns = late_ns;
        if (a.late_ns)
            fprintf(stderr, "memflow run: records reached the logs up to %.3f s after their "
                    "time stamps; the outputs are built from the finished logs\n",
                    (double)a.late_ns / 1e9);
    }
    run_analysis_discard();
    return m;
}
