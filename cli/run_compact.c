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
 * The page cache: a compacted chunk's pages are given back once they are
 * on the disk (POSIX_FADV_DONTNEED drops clean pages only: nothing is
 * lost, and a reader that still wants them reads them from the disk).
 * While the run is younger than the kernel's dirty expiry and writeback
 * period, that is when the kernel would have written them (that long
 * after compaction, plus 5 s); a short run's log is deleted at its end
 * before the kernel writes most of it, and is not written early.  Once
 * the run is older, the kernel writes the log anyway: each compacted
 * chunk's writeback is started at once (sync_file_range) and its pages go
 * QUICK_DROP_S later.  A long run then holds a few seconds of its live log
 * in memory instead of all of it: the program keeps the page cache it
 * uses, and freeing the live log when its compact form replaces it does
 * not keep the user waiting (9.6 GB of cached log took 1.5 s to free at
 * memflow run's exit).  MEMFLOW_RUN_DROP_AFTER=S starts every writeback
 * at once and drops S seconds after compaction (the tests).
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
#define QUICK_DROP_S 2              /* from a writeback started to the pages given back */
#define BACKGROUND_CLOSE_BYTES (256ull << 20)  /* a replaced log this large: close_log */

/* A chunk compacted: when its pages may go (they are on the disk by then). */
typedef struct compacted {
    uint64_t index;
    uint64_t due_ns;
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
    uint64_t start_ns;              /* when the compaction thread started */
    uint64_t early_ns;              /* from start on, writebacks start at compaction */
    uint64_t slow_drop_ns;          /* before early_ns: from compaction to drop */
    uint64_t quick_drop_ns;         /* after: from the writeback started to the drop */
    int early;                      /* writebacks start at compaction */
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

/* When compacted chunks' pages are given back (see the top of the file). */
static void drop_policy(void)
{
    const char *s = getenv("MEMFLOW_RUN_DROP_AFTER");
    char *end;
    c.start_ns = mf_monotonic_ns();
    if (s && *s) {
        double v = strtod(s, &end);
        if (*end == 0 && v >= 0 && v < 1e6) {
            c.early_ns = 0;
            c.quick_drop_ns = (uint64_t)(v * 1e9);
            return;
        }
    }
    long expire = proc_number("/proc/sys/vm/dirty_expire_centisecs", 3000);
    long period = proc_number("/proc/sys/vm/dirty_writeback_centisecs", 500);
    c.early_ns = (uint64_t)(expire + period) * 10000000u;
    c.slow_drop_ns = c.early_ns + DROP_MARGIN_S * 1000000000ull;
    c.quick_drop_ns = QUICK_DROP_S * 1000000000ull;
}

/* sync_file_range of chunk index of the log (how: SYNC_FILE_RANGE_*). */
static void sync_chunk(uint64_t index, unsigned how)
{
    (void)sync_file_range(c.log_fd, (off64_t)(index * MF_CHUNK_SIZE), MF_CHUNK_SIZE, how);
}

/* Once the run is as old as the kernel's writeback delay: the chunks
 * compacted but not given back start their writeback now. */
static void go_early(uint64_t now)
{
    if (c.early || now - c.start_ns < c.early_ns)
        return;
    c.early = 1;
    for (unsigned i = c.aging_head; i != c.aging_tail; i++) {
        compacted *a = &c.aging[i % RING];
        sync_chunk(a->index, SYNC_FILE_RANGE_WRITE);
        if (a->due_ns > now + c.quick_drop_ns)
            a->due_ns = now + c.quick_drop_ns;
    }
}

/* Give back the pages of the compacted chunks that are due (all of them
 * when the ring is full: an early drop only means a later read from the
 * disk). */
static void drop_due(void)
{
    uint64_t now = mf_monotonic_ns();
    go_early(now);
    while (c.aging_head != c.aging_tail) {
        const compacted *a = &c.aging[c.aging_head % RING];
        if (now < a->due_ns && c.aging_tail - c.aging_head < RING)
            break;
        /* on the disk by now, as a rule; else written first (an idle thread's wait) */
        sync_chunk(a->index, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                 SYNC_FILE_RANGE_WAIT_AFTER);
        (void)posix_fadvise(c.log_fd, (off_t)(a->index * MF_CHUNK_SIZE), MF_CHUNK_SIZE,
                            POSIX_FADV_DONTNEED);
        c.aging_head++;
        c.dropped++;
    }
}

/* Chunk index is compacted: its pages go once they are on the disk. */
static void age(uint64_t index)
{
    if (c.aging_tail - c.aging_head >= RING)
        drop_due();
    uint64_t now = mf_monotonic_ns();
    go_early(now);
    if (c.early)
        sync_chunk(index, SYNC_FILE_RANGE_WRITE);   /* its writeback starts now */
    c.aging[c.aging_tail++ % RING] =
        (compacted){ index, now + (c.early ? c.quick_drop_ns : c.slow_drop_ns) };
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
        else {
            c.added++;
            age(c.ring[head % RING]);
        }
        __atomic_store_n(&c.head, head + 1, __ATOMIC_RELEASE);
    }
    drop_due();
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
    drop_policy();
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
    if (run_reporting())
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

/* In the child of close_log: keep only fd and the pipe's end p, wait until
 * memflow run has exited (the pipe's other end closes), and exit, which
 * closes fd.  Async-signal-safe calls only (memflow run has threads). */
static _Noreturn void close_after_parent(int fd, int p)
{
    int lo = fd < p ? fd : p, hi = fd < p ? p : fd;
    if (lo > 0)
        close_range(0, (unsigned)lo - 1, 0);
    if (hi > lo + 1)
        close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
    close_range((unsigned)hi + 1, ~0u, 0);
    char byte;
    while (read(p, &byte, 1) < 0 && errno == EINTR)
        ;
    _exit(0);
}

/*
 * Close our descriptor of the log.  When it is the live log the compact
 * form replaced (no name left) and large, its last close frees its blocks,
 * which takes time that grows with its size (on a file system mounted with
 * online discard about 0.2 s a GB here: 1.7 s for a 400M-event log).  The
 * outputs and the compact log are complete and synced by then, so a child
 * process takes that last close after memflow run has exited, and the user
 * does not wait for it: it holds only the log's descriptor and a pipe whose
 * other end memflow run keeps open until it exits.
 */
static void close_log(int fd)
{
    struct stat st;
    int p[2];
    if (fstat(fd, &st) != 0 || st.st_nlink != 0 ||
        (uint64_t)st.st_blocks * 512 < BACKGROUND_CLOSE_BYTES || pipe2(p, O_CLOEXEC) != 0) {
        close(fd);
        return;
    }
    pid_t pid = fork();
    if (pid == 0)
        close_after_parent(fd, p[0]);
    close(p[0]);
    close(fd);
    if (pid < 0) {
        close(p[1]);
        return;
    }
    /* p[1] stays open until memflow run exits */
    if (run_reporting())
        fprintf(stderr, "memflow run: the live log the compact form replaced (%.1f MB) is "
                "freed by process %d after memflow run's exit\n",
                (double)st.st_blocks * 512 / 1e6, (int)pid);
}

void run_compact_forget(void)
{
    if (c.have_log == 1)
        report();
    mf_compact_writer_abandon(c.w);
    c.w = NULL;
    if (c.log_fd >= 0)
        close_log(c.log_fd);
    c.log_fd = -1;
}
