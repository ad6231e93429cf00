/*
 * cmd_compact.c - `memflow compact LOG...`: replace finished logs with
 * their compact form (analyze/compact/compact.h), which every memflow command reads
 * like the live one; and the compaction `memflow run` does after rendering.
 *
 * Ctrl-C, SIGTERM and SIGHUP stop a compaction cleanly (the live log stays,
 * the new file is removed) before the signal takes effect.  memflow run
 * compacts on a thread of its own while it renders (both read the logs, on
 * two cores); a new file replaces its log only once the analysis has read
 * the logs, and a signal before memflow run waits for the compaction kills
 * as it would have (the live log stays; the next memflow command removes
 * the unfinished file).
 * MEMFLOW_TEST_COMPACT_KILL_AT=N (tests only) makes the command SIGKILL
 * itself at the Nth step of its work (a frame written, the new file synced,
 * renamed), so tests can check that no kill loses the log.
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "compact.h"
#include "run.h"

/* Exit statuses of `memflow compact`. */
#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_BUSY 3
#define EXIT_REFUSED 4

static volatile sig_atomic_t stop_signal;
static unsigned long kill_at, steps;

static void usage(FILE *out)
{
    fputs("usage: memflow compact LOG...\n"
          "\n"
          "Replace each finished memflow log with its compact form: the same records,\n"
          "densely encoded and compressed with zstd (a few bytes per event instead of\n"
          "about 24).  memflow stats and memflow render read both forms alike.  A log\n"
          "whose process still runs is left alone; a symbolic link is never followed.\n"
          "The live log stays complete until its compact form is: a kill at any moment\n"
          "loses nothing.\n"
          "\n"
          "exit status: 0 every log is compact, 1 a log could not be compacted (I/O\n"
          "             error; it is left as it was), 2 bad usage, 3 a log is still being\n"
          "             written, 4 not a memflow log, not a regular file, or a link\n",
          out);
}

static void on_stop(int sig)
{
    stop_signal = sig;
}

static const int stop_sigs[] = { SIGINT, SIGTERM, SIGHUP };
#define N_STOP_SIGS (sizeof stop_sigs / sizeof stop_sigs[0])
static struct sigaction saved[N_STOP_SIGS];

/* Catch the signals that should stop a compaction (on), or put back what
 * was there before (off).  A file size limit is a write error, not a
 * SIGXFSZ death: memflow ignores that signal (main.c). */
static void catch_stops(int on)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_STOP_SIGS; i++)
        sigaction(stop_sigs[i], on ? &sa : &saved[i], on ? &saved[i] : NULL);
}

/*
 * memflow run's compaction beside its rendering (cli_compact_run_begin):
 * the thread, what it did, and whether a new file may replace its log yet
 * (not before the analysis has read the logs: held).
 */
static struct {
    pthread_t thread;
    int running;
    int n;
    char **paths;
    uint64_t before, after;
    int done;
    pthread_mutex_t lock;
    pthread_cond_t released;
    int held;
} tail = { .lock = PTHREAD_MUTEX_INITIALIZER, .released = PTHREAD_COND_INITIALIZER };

/* A new file is complete and synced: wait until it may replace its log. */
static void wait_release(void)
{
    pthread_mutex_lock(&tail.lock);
    while (tail.held)
        pthread_cond_wait(&tail.released, &tail.lock);
    pthread_mutex_unlock(&tail.lock);
}

static int on_step(void *arg, enum mf_compact_step step, uint64_t n)
{
    (void)arg, (void)n;
    if (kill_at && ++steps == kill_at)
        raise(SIGKILL);
    if (step == MF_COMPACT_STEP_SYNCED)
        wait_release();
    return stop_signal != 0;
}

/* Compact one log (of memflow run: run, its compaction during the run
 * finished); the mf_compact_log_with status, message printed. */
static int compact_one(const char *path, mf_compact_result *res, const char *who, int run)
{
    char err[PATH_MAX + 2800];
    mf_compact_options opt = { .progress = on_step };
    int rc = run ? run_compact_log(path, &opt, res, err, sizeof err) : 1;
    if (rc == 1)
        rc = mf_compact_log_with(path, &opt, res, err, sizeof err);
    if (rc < 0)
        cli_sayf("", "%s: %s", who, err);
    return rc;
}

/* Before a compaction: the test's kill point, no stop yet. */
static void start_counting(void)
{
    const char *k = getenv("MEMFLOW_TEST_COMPACT_KILL_AT");
    kill_at = k ? strtoul(k, NULL, 10) : 0;
    steps = 0;
    stop_signal = 0;
}

static void start(void)
{
    start_counting();
    catch_stops(1);
}

/* Let a signal that stopped us take effect (as it would have without us),
 * now that the files are safe. */
static void finish(void)
{
    catch_stops(0);
    if (stop_signal)
        raise(stop_signal);
}

/* "49.3 MB", "413.0 kB", "980 bytes" (buf of 32 bytes). */
static const char *human(uint64_t bytes, char *buf)
{
    if (bytes >= 1000000)
        snprintf(buf, 32, "%.1f MB", (double)bytes / 1e6);
    else if (bytes >= 1000)
        snprintf(buf, 32, "%.1f kB", (double)bytes / 1e3);
    else
        snprintf(buf, 32, "%llu bytes", (unsigned long long)bytes);
    return buf;
}

int cmd_compact(int argc, char **argv)
{
    int n_logs = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1] && strcmp(argv[i], "--")) {
            fprintf(stderr, "memflow compact: unknown option '%s' (see 'memflow compact "
                    "--help')\n", argv[i]);
            return EXIT_USAGE;
        }
        n_logs += strcmp(argv[i], "--") != 0;
    }
    if (n_logs == 0) {
        fputs("memflow compact: no log given (see 'memflow compact --help')\n", stderr);
        return EXIT_USAGE;
    }
    int failed = 0, refused = 0, busy = 0;
    start();
    for (int i = 1; i < argc && !stop_signal; i++) {
        if (!strcmp(argv[i], "--"))
            continue;
        mf_compact_result r;
        char before[32], after[32];
        cli_recover_staged(1, &argv[i]);
        int rc = compact_one(argv[i], &r, "memflow compact", 0);
        failed |= rc == MF_COMPACT_FAILED;
        refused |= rc == MF_COMPACT_REFUSED;
        busy |= rc == MF_COMPACT_BUSY;
        if (rc == 0 && r.chunks + r.bytes_after == 0)
            printf("%s: already compact\n", argv[i]);
        else if (rc == 0)
            printf("%s: %s -> %s (%.1fx smaller), %llu records, %.2f bytes each\n", argv[i],
                   human(r.bytes_before, before), human(r.bytes_after, after),
                   r.bytes_after ? (double)r.bytes_before / (double)r.bytes_after : 0.0,
                   (unsigned long long)r.events,
                   r.events ? (double)r.bytes_after / (double)r.events : 0.0);
    }
    fflush(stdout);
    finish();
    return failed ? EXIT_FAILED : refused ? EXIT_REFUSED : busy ? EXIT_BUSY : 0;
}

/* Compact the run's logs, adding up what they became (tail's counts). */
static void compact_run_logs(void)
{
    for (int i = 0; i < tail.n && !stop_signal; i++) {
        mf_compact_result r;
        if (compact_one(tail.paths[i], &r, "memflow run: compact", 1) == 0 && r.bytes_after) {
            tail.before += r.bytes_before;
            tail.after += r.bytes_after;
            tail.done++;
        }
    }
}

/* The compaction after the program's exit yields to the rendering
 * (SCHED_IDLE, this thread only): the outputs wait for the analysis's
 * threads, the compaction takes the time they leave on the cores, and
 * once they are written it runs at normal priority (cli_compact_run_end). */
static void *compact_thread(void *arg)
{
    (void)arg;
    run_idle_lower();
    compact_run_logs();
    return NULL;
}

/* The run's logs paths[0..n) to compact, none yet; renames held or not. */
static void tail_set(int n, char **paths, int held)
{
    tail.n = n;
    tail.paths = paths;
    tail.before = tail.after = 0;
    tail.done = 0;
    tail.held = held;
    start_counting();
}

int cli_compact_run_begin(int n, char **paths)
{
    tail_set(n, paths, 1);
    tail.running = run_idle_start(&tail.thread, compact_thread);
    if (!tail.running)
        tail.held = 0;
    return tail.running;
}

void cli_compact_run_release(void)
{
    pthread_mutex_lock(&tail.lock);
    tail.held = 0;
    pthread_cond_broadcast(&tail.released);
    pthread_mutex_unlock(&tail.lock);
}

void cli_compact_run_end(void)
{
    char b1[32], b2[32];
    cli_compact_run_release();
    catch_stops(1);
    if (tail.running) {
        run_idle_raise(tail.thread);   /* the user now waits for it alone */
        pthread_join(tail.thread, NULL);
    } else {
        compact_run_logs();
    }
    tail.running = 0;
    if (tail.done)
        fprintf(stderr, "memflow: %d log%s compacted: %s -> %s (%.1fx smaller)\n", tail.done,
                tail.done == 1 ? "" : "s", human(tail.before, b1), human(tail.after, b2),
                (double)tail.before / (double)tail.after);
    finish();
}

void cli_compact_run_logs(int n, char **paths)
{
    tail_set(n, paths, 0);    /* no thread: cli_compact_run_end compacts them */
    cli_compact_run_end();
}
