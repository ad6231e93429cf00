/*
 * run_ahead.c - memflow run keeps the next chunks of the program's logs
 * ready, so that a claim finds its pages in the page cache.
 *
 * A thread that claims a chunk of its log maps it and faults its 256 pages
 * in (MADV_POPULATE_WRITE, runtime/log_writer.c); on ext4 that is ~1 ms a
 * chunk of the program's time, part of it the page cache allocating and
 * zeroing fresh pages.  memflow run is idle while the program runs: here
 * it watches the output folder (inotify) for the run's logs (run id
 * checked, common/log_format.h), follows each log's chunks_claimed, and
 * keeps chunks [claimed, claimed + AHEAD) reserved (fallocate) and in the
 * page cache (readahead: zero pages of the reserved blocks).  The claim
 * then maps pages that exist: ~0.6 ms a chunk instead of ~0.95 ms, for
 * ~0.3 ms of memflow run's time.  (Populating the pages writable through a
 * mapping of memflow run's own, MADV_POPULATE_WRITE, leaves the claim
 * ~0.4 ms but costs memflow run ~1 ms a chunk: more CPU in all, and slower
 * when the program has no idle core beside it; see docs/PERFORMANCE.md.)
 * Nothing is written into the file, so a chunk the program claims
 * meanwhile is safe.
 *
 * The program is unchanged and stays correct without memflow run; its
 * records still go straight into the file's page cache (crash safety is the
 * same).  What memflow run reserved beyond the last claim is given back
 * when the program is gone: the logs of the process memflow run started
 * (and reaped) are cut back to their claimed chunks.  Logs of other
 * processes of the run may keep up to AHEAD chunks of zeros at their end,
 * which readers take as claimed and never written.  A full disk or a file
 * size limit (memflow ignores SIGXFSZ: cli/main.c)
 * makes it stop trying for a while; the program then reserves its chunks
 * itself and drops events as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "monotonic.h"
#include "run.h"

#define AHEAD 8u                        /* chunks ready beyond each log's claims */
#define MAX_LOGS 64                     /* logs followed at once */
#define RETRY_NS 50000000ull            /* after a refused fallocate: 50 ms */
#define CONFIRM_NS 2000000000ull        /* a new file has 2 s to become this run's log */
#define HEADER_MAP 4096                 /* the part of chunk 0 followed */

typedef struct ahead_log {
    int fd;                             /* -1: free entry */
    const mf_file_header *header;       /* NULL until the file is known to be this run's */
    uint64_t pid;                       /* the header's */
    uint64_t ready;                     /* chunks [0, ready) reserved, read ahead */
    uint64_t last_claimed;
    uint64_t moved_ns;                  /* when it last claimed a chunk */
    uint64_t retry_ns;                  /* not before this (a refused fallocate) */
    uint64_t seen_ns;                   /* when the file appeared */
    char name[NAME_MAX + 1];
} ahead_log;

struct run_ahead {
    const run_ident *run;
    int inotify;
    int wake;                           /* eventfd: run_ahead_wake */
    ahead_log logs[MAX_LOGS];
};

run_ahead *run_ahead_open(const run_ident *run)
{
    run_ahead *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->run = run;
    for (int i = 0; i < MAX_LOGS; i++)
        a->logs[i].fd = -1;
    a->inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    a->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (a->inotify < 0 || a->wake < 0 ||
        inotify_add_watch(a->inotify, run->dir, IN_CREATE | IN_ONLYDIR) < 0) {
        run_ahead_close(a, 0);
        return NULL;
    }
    return a;
}

static void forget(ahead_log *l)
{
    if (l->header)
        munmap((void *)l->header, HEADER_MAP);
    if (l->fd >= 0)
        close(l->fd);
    memset(l, 0, sizeof *l);
    l->fd = -1;
}

/* A file appeared in the folder: follow it once it shows to be a log of
 * this run.  With every entry taken, the one idle longest gives way. */
static void appeared(run_ahead *a, const char *name)
{
    ahead_log *slot = &a->logs[0];
    for (int i = 0; i < MAX_LOGS && slot->name[0]; i++)
        if (!a->logs[i].name[0] || a->logs[i].moved_ns < slot->moved_ns)
            slot = &a->logs[i];
    if (strlen(name) >= sizeof slot->name)
        return;
    forget(slot);
    strcpy(slot->name, name);
    slot->seen_ns = slot->moved_ns = mf_monotonic_ns();
}

/* Read what inotify says: the names of new files. */
static void read_events(run_ahead *a)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(a->inotify, buf, sizeof buf)) > 0)
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *e = (const void *)p;
            if (e->len && !(e->mask & IN_ISDIR))
                appeared(a, e->name);
            p += sizeof *e + e->len;
        }
}

/* A new file: this run's log yet?  (Its magic is stored last.)  Given up
 * after CONFIRM_NS. */
static void confirm(run_ahead *a, ahead_log *l)
{
    mf_file_header h;
    int fd = run_logs_open(a->run, l->name, O_RDWR, &h);
    if (fd < 0) {
        if (mf_monotonic_ns() - l->seen_ns > CONFIRM_NS)
            forget(l);
        return;
    }
    void *map = mmap(NULL, HEADER_MAP, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        close(fd);
        forget(l);
        return;
    }
    l->fd = fd;
    l->header = map;
    l->pid = h.pid;
    l->ready = l->last_claimed = h.chunks_claimed;
}

/* Reserve chunk `index` and bring its pages into the page cache.  0, or -1
 * when the file may not grow (full disk, file size limit). */
static int make_ready(const ahead_log *l, uint64_t index)
{
    off_t at = (off_t)(index * MF_CHUNK_SIZE);
    if (fallocate(l->fd, 0, at, MF_CHUNK_SIZE) != 0)
        return errno == EOPNOTSUPP || errno == ENOSYS ? 0 : -1;
    readahead(l->fd, at, MF_CHUNK_SIZE);
    return 0;
}

/* Keep AHEAD chunks of the log ready beyond its claims; whether it claimed
 * chunks since the last look.  A chunk the program reached first is
 * skipped: it faulted that one in itself. */
static int keep_ahead(ahead_log *l, const int *stop)
{
    uint64_t claimed = __atomic_load_n(&l->header->chunks_claimed, __ATOMIC_ACQUIRE);
    int moved = claimed != l->last_claimed;
    l->last_claimed = claimed;
    if (moved)
        l->moved_ns = mf_monotonic_ns();
    if (l->retry_ns && mf_monotonic_ns() < l->retry_ns)
        return moved;
    l->retry_ns = 0;
    while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
        claimed = __atomic_load_n(&l->header->chunks_claimed, __ATOMIC_ACQUIRE);
        uint64_t next = l->ready > claimed ? l->ready : claimed + 1;
        if (next >= claimed + AHEAD)
            break;
        if (make_ready(l, next) < 0) {
            l->retry_ns = mf_monotonic_ns() + RETRY_NS;
            break;
        }
        l->ready = next + 1;
    }
    return moved;
}

int run_ahead_step(run_ahead *a, const int *stop)
{
    int busy = 0;
    read_events(a);
    for (int i = 0; i < MAX_LOGS; i++) {
        ahead_log *l = &a->logs[i];
        if (l->name[0] && !l->header) {
            confirm(a, l);
            busy |= l->name[0] != 0; /* a log is starting */
        }
        if (l->header)
            busy |= keep_ahead(l, stop);
    }
    return busy;
}

void run_ahead_wait(run_ahead *a, int timeout_us)
{
    struct pollfd fds[2] = { { .fd = a->inotify, .events = POLLIN },
                             { .fd = a->wake, .events = POLLIN } };
    poll(fds, 2, (timeout_us + 999) / 1000);
}

void run_ahead_wake(run_ahead *a)
{
    uint64_t one = 1;
    if (write(a->wake, &one, sizeof one) < 0) { /* full: awake already */ }
}

/* The log of a process that is gone: give back what was reserved beyond
 * its claims.  (Only then: a live process may be mapping the chunk after
 * its last claim, and a write beyond the end of the file is a SIGBUS.) */
static void cut_back(ahead_log *l)
{
    struct stat st;
    uint64_t claimed = __atomic_load_n(&l->header->chunks_claimed, __ATOMIC_ACQUIRE);
    if (claimed && fstat(l->fd, &st) == 0 && (uint64_t)st.st_size > claimed * MF_CHUNK_SIZE)
        if (ftruncate(l->fd, (off_t)(claimed * MF_CHUNK_SIZE)) != 0) { /* kept: zeros */ }
}

void run_ahead_close(run_ahead *a, pid_t gone)
{
    if (!a)
        return;
    for (int i = 0; i < MAX_LOGS; i++) {
        ahead_log *l = &a->logs[i];
        /* The process memflow run started (and reaped): its pid and parent;
         * a pid of a namespace of the program's own may have the number. */
        if (l->header && gone > 0 && l->pid == (uint64_t)gone &&
            l->header->ppid == (uint64_t)getpid())
            cut_back(l);
        forget(l);
    }
    if (a->inotify >= 0)
        close(a->inotify);
    if (a->wake >= 0)
        close(a->wake);
    free(a);
}
