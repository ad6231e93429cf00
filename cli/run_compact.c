/*
 * run_compact.c - memflow run compacts its program's log while the program
 * runs, so that at the program's exit only the chunks not yet compacted,
 * the index and the trailer are left to write.
 *
 * Which chunks: those the stage's drain copies from a full slot into the
 * log (run_stage_on_final).  A slot is full when the thread that filled it
 * has claimed its next chunk (runtime/recorder.c releases a chunk only
 * then), so nothing is ever written into that chunk again: its bytes in
 * the log are final.  A thread's current chunk, a chunk the program wrote
 * itself (memflow run behind, or gone), the logs of other processes (they
 * write their logs directly) and the header are compacted at the end.
 *
 * The drain hands each index over through a ring it never waits on (a
 * full ring only leaves a chunk to the end); a thread of memflow run's own,
 * at the lowest priority (SCHED_IDLE: it runs on a core nothing else
 * wants, and holds no lock the program or the drain takes), appends each
 * chunk's frame to the compact form (analyze/compact/compact.h,
 * mf_compact_writer), a new private file beside the log.
 *
 * The page cache: once a chunk is compacted, and old enough that the
 * kernel has written it to disk (its dirty expiry and writeback period
 * past, plus 5 s; MEMFLOW_RUN_DROP_AFTER=SECONDS says otherwise), its pages
 * are given back (POSIX_FADV_DONTNEED: clean pages only, nothing is lost;
 * a reader that still wants them reads them from the disk).  A long run
 * then holds the last minute or so of its live log in memory, not all of
 * it: the program keeps the page cache it uses, and freeing the live log
 * when the compact form replaces it does not keep the user waiting
 * (dropping 9.6 GB of cached log took 1.5 s at memflow run's exit).
 *
 * Crash safety: the live log stays the truth until the end.  The new file
 * (.memflow-PID.mfl.compact-MEMFLOWPID-XXXXXX, created O_EXCL, 0600) has
 * no log header at offset 0 until it is complete, synced and renamed over
 * the log (as `memflow compact` does it), so a memflow run killed at any
 * moment leaves the whole live log, and a file no reader takes for a log,
 * which the next memflow command that reads the folder removes
 * (cli/recover.c).  A compaction that fails during the run (a full disk)
 * removes its file at once and leaves the log in its live form.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compact.h"
#include "log_format.h"
#include "monotonic.h"
#include "run.h"

#define RING 4096                   /* chunks handed over, not yet compacted (4 GiB) */
#define MIN_WAIT_US 5000            /* between looks while chunks come */
#define MAX_WAIT_US 100000          /* while they do not */
#define DROP_MARGIN_S 5             /* past the kernel's writeback of a dirty page */

/* A chunk compacted: when, so its pages go once they are written back. */
typedef struct compacted {
    uint64_t index;
    uint64_t at_ns;
} compacted;

static struct {
    uint64_t ring[RING];
    unsigned head, tail;            /* taken by the thread, put by the drain (atomic) */
    uint64_t missed;                /* not handed over: the ring was full (the drain's) */
    int have_log;                   /* log_fd and path are set (atomic; -1: could not) */
    int log_fd;                     /* a copy of the drain's descriptor of the log */
    char path[PATH_MAX];
    pthread_t thread;
    int running;
    int stop;                       /* the program is gone (atomic) */
    mf_compact_writer *w;           /* the compact form being written */
    int failed;                     /* it failed: err says why, the log stays live */
    char err[PATH_MAX + 1400];
    uint64_t added;                 /* chunks compacted so far */
    uint64_t at_exit;               /* of them, when the program was gone */
    int finished;                   /* renamed over the log at the end */
    compacted aging[RING];          /* compacted, pages not given back yet: oldest first */
    unsigned aging_head, aging_tail;
    uint64_t drop_after_ns;         /* how old a compacted chunk's pages are given back */
    uint64_t dropped;               /* chunks whose pages were given back */
} c = { .log_fd = -1 };

/* A number from a /proc/sys file, or fallback. */
static long proc_number(const char *path, long fallback)
{
    FILE *f = fopen(path, "re");
    long v;
    if (!f)
        return fallback;
    if (fscanf(f, "%ld", &v) != 1 || v < 0)
        v = fallback;
    fclose(f);
    return v;
}

/* How old a compacted chunk is when its pages are given back. */
static uint64_t drop_after_ns(void)
{
    const char *s = getenv("MEMFLOW_RUN_DROP_AFTER");
    char *end;
    if (s && *s) {
        double v = strtod(s, &end);
        if (*end == 0 && v >= 0 && v < 1e6)
            return (uint64_t)(v * 1e9);
    }
    long expire = proc_number("/proc/sys/vm/dirty_expire_centisecs", 3000);
    long period = proc_number("/proc/sys/vm/dirty_writeback_centisecs", 500);
    return (uint64_t)(expire + period) * 10000000u + DROP_MARGIN_S * 1000000000ull;
}

/* Give back the pages of the chunks compacted long enough ago (all of
 * them when the ring is full: an early drop only means a later read from
 * the disk). */
static void drop_aged(void)
{
    uint64_t now = mf_monotonic_ns();
    while (c.aging_head != c.aging_tail) {
        const compacted *a = &c.aging[c.aging_head % RING];
        if (now - a->at_ns < c.drop_after_ns && c.aging_tail - c.aging_head < RING)
            break;
        (void)posix_fadvise(c.log_fd, (off_t)(a->index * MF_CHUNK_SIZE), MF_CHUNK_SIZE,
                            POSIX_FADV_DONTNEED);
        c.aging_head++;
        c.dropped++;
    }
}

/* Chunk index is compacted: its pages go once it is old enough. */
static void age(uint64_t index)
{
    if (c.aging_tail - c.aging_head >= RING)
        drop_aged();
    c.aging[c.aging_tail++ % RING] = (compacted){ index, mf_monotonic_ns() };
}

/* On the drain's thread: chunk index of the log is final. */
static void on_final(void *arg, int log_fd, const char *log_path, uint64_t index)
{
    (void)arg;
    int have = __atomic_load_n(&c.have_log, __ATOMIC_ACQUIRE);
    if (have == 0) {
        c.log_fd = fcntl(log_fd, F_DUPFD_CLOEXEC, 0);
        snprintf(c.path, sizeof c.path, "%.*s", (int)sizeof c.path - 1, log_path);
        have = c.log_fd >= 0 ? 1 : -1;
        __atomic_store_n(&c.have_log, have, __ATOMIC_RELEASE);
    }
    unsigned tail = c.tail, head = __atomic_load_n(&c.head, __ATOMIC_ACQUIRE);
    if (have < 0 || tail - head >= RING) {
        c.missed++;
        return;
    }
    c.ring[tail % RING] = index;
    __atomic_store_n(&c.tail, tail + 1, __ATOMIC_RELEASE);
}

/* Give up compacting during the run: the new file goes, err says why. */
static void give_up(void)
{
    mf_compact_writer_abandon(c.w);
    c.w = NULL;
    c.failed = 1;
}

/* The writer for the log the drain named, started on first use. */
static int have_writer(void)
{
    if (c.w || c.failed)
        return c.w != NULL;
    struct stat st;
    if (fstat(c.log_fd, &st) < 0) {
        snprintf(c.err, sizeof c.err, "%s: cannot stat: %s", c.path, strerror(errno));
        c.failed = 1;
        return 0;
    }
    c.w = mf_compact_writer_open(c.path, st.st_dev, st.st_ino, NULL, c.err, sizeof c.err);
    c.failed = c.w == NULL;
    return c.w != NULL;
}

/* Compact what the drain handed over.  Whether there was any. */
static int compact_handed(void)
{
    if (__atomic_load_n(&c.have_log, __ATOMIC_ACQUIRE) != 1)
        return 0;
    unsigned start = c.head, head = start, tail = __atomic_load_n(&c.tail, __ATOMIC_ACQUIRE);
    for (; head != tail && !__atomic_load_n(&c.stop, __ATOMIC_ACQUIRE); head++) {
        if (!have_writer())
            ;
        else if (mf_compact_writer_add(c.w, c.ring[head % RING], c.err, sizeof c.err) < 0)
            give_up();
        else
            c.added++, age(c.ring[head % RING]);
        __atomic_store_n(&c.head, head + 1, __ATOMIC_RELEASE);
    }
    drop_aged();
    return head != start;
}

/* MEMFLOW_RUN_COMPACT: "idle" (the default), "normal", "0" (after the run
 * only). */
static void *compact_loop(void *arg)
{
    (void)arg;
    run_idle t = { "MEMFLOW_RUN_COMPACT", compact_handed, &c.stop, MIN_WAIT_US, MAX_WAIT_US };
    run_idle_loop(&t);
    return NULL;
}

void run_compact_start(void)
{
    if (!strcmp(run_idle_mode("MEMFLOW_RUN_COMPACT", "idle"), "0"))
        return;
    c.drop_after_ns = drop_after_ns();
    c.running = run_idle_start(&c.thread, compact_loop);
    if (c.running)
        run_stage_on_final(on_final, NULL);
}

void run_compact_stop(void)
{
    if (!c.running)
        return;
    run_idle_stop(c.thread, &c.stop);
    c.running = 0;
    c.at_exit = c.added;
}

/* MEMFLOW_RUN_REPORT=1 (for the tests): what the compaction during the run
 * did, on stderr. */
static void report(void)
{
    const char *want = getenv("MEMFLOW_RUN_REPORT");
    if (want && strcmp(want, "1") == 0)
        fprintf(stderr, "memflow run: compaction during the run: %llu chunks before the "
                "program's exit, %llu left to the end by a full ring; %s; the pages of %llu "
                "compacted chunks given back\n",
                (unsigned long long)c.at_exit, (unsigned long long)c.missed,
                c.failed ? "failed" : c.finished ? "finished at the end" : "not finished",
                (unsigned long long)c.dropped);
}

/* Whether path names the log the drain wrote (the same file). */
static int is_our_log(const char *path)
{
    struct stat ours, named;
    return __atomic_load_n(&c.have_log, __ATOMIC_ACQUIRE) == 1 && fstat(c.log_fd, &ours) == 0 &&
           lstat(path, &named) == 0 && ours.st_dev == named.st_dev &&
           ours.st_ino == named.st_ino;
}

int run_compact_log(const char *path, const struct mf_compact_options *opt,
                    struct mf_compact_result *res, char *err, size_t errlen)
{
    if (!is_our_log(path) || (!c.w && !c.failed))
        return 1;
    if (c.failed) {
        snprintf(err, errlen, "%s; the log is left in its live form ('memflow compact' "
                 "compacts it later)", c.err);
        memset(res, 0, sizeof *res);
        return MF_COMPACT_FAILED;
    }
    int rc = mf_compact_writer_finish(c.w, opt, res, err, errlen);
    c.w = NULL;
    c.finished = rc == 0;
    c.failed = rc < 0;
    return rc;
}

void run_compact_forget(void)
{
    if (c.have_log == 1)
        report();
    mf_compact_writer_abandon(c.w);
    c.w = NULL;
    if (c.log_fd >= 0)
        close(c.log_fd);
    c.log_fd = -1;
}
