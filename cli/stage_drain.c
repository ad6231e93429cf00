/*
 * stage_drain.c - memflow run's side of the staging area (stage_drain.h),
 * and a reader's: compiled into the memflow program, not into libmemflow.
 *
 * memflow run creates the staging file and hands it to the process it
 * starts; while the program runs it copies each full slot into the log
 * (stage_slots.c) and does the program's slower kernel work ahead of it:
 * it reserves the log file's disk space (fallocate) a few chunks beyond the
 * program's last claim, so that a claim finds its chunk reserved and takes
 * no lock on the file that memflow run's copies hold, and it brings the
 * pages of the next slots into the page cache, so that the program's first
 * use of a slot only maps them.  When the program is gone it writes every
 * slot into the log and removes the file.  A reader of an output folder
 * writes back what a run killed as a whole left staged (mf_stage_recover).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "descriptor.h"
#include "monotonic.h"
#include "reader.h"
#include "stage_drain.h"
#include "stage_slots.h"

#define RESERVE_AHEAD 8u                /* chunks memflow run reserves beyond the claims */
#define RESERVE_RETRY_NS 100000000ull   /* after the disk refused, try again this much later */
#define POPULATE_AHEAD 4u               /* slots beyond the highest in use it maps */
#define IDLE_WRITE_NS 200000000ull      /* records of a slot filling slowly wait this at most */

struct mf_stage {                    /* memflow run's handle */
    stage_header *h;
    size_t bytes;
    int fd;                          /* the stage file, locked */
    int complete;                    /* the final drain wrote every slot */
    char path[4096 + 64];
    int log_fd;                      /* the log, opened once the program names it */
    uint32_t populated;              /* slots [0, n) have their pages in the page cache */
    uint64_t reserved_by_us;         /* the log's length as reserved ahead here */
    uint64_t claimed_seen;           /* the program's claims at the last look */
    int busy;                        /* they moved since the look before */
    uint64_t reserve_retry_ns;       /* the disk said no: the program reserves itself
                                        until then (CLOCK_MONOTONIC) */
    struct slot_watch {              /* mf_stage_unwritten_since, slot by slot */
        uint32_t seq;                /* the slot's chunk: its sequence */
        int valid;                   /* seen taken under seq */
        int has_first;               /* first_ns is its first event's time */
        uint64_t seen_ns, first_ns;
    } watch[MF_STAGE_SLOTS];
    int write_idle;                  /* mf_stage_write_idle: on */
    char *scratch;                   /* a chunk's copy for those writes */
    struct slot_written {            /* what the drain wrote of slots still filling */
        uint32_t seq;
        int valid;
        size_t len, written;         /* recorded at the last look; in the log */
        uint64_t grew_ns;            /* when it first held more than written */
    } written[MF_STAGE_SLOTS];
    mf_stage_final_fn on_final;      /* mf_stage_on_final */
    void *on_final_arg;
    uint32_t snap_seq[MF_STAGE_SLOTS];   /* slot i under sequence snap_seq[i] has */
    uint64_t snap_ns[MF_STAGE_SLOTS];    /* everything recorded before snap_ns[i] in the log */
};

/*
 * The stage file: created new (never through a symlink, never another
 * run's), 0600, its whole size reserved on disk so that no store into the
 * mapping can meet a full disk (SIGBUS), and locked.  The lock is on the
 * open file: memflow run's descriptor, the program's inherited one and its
 * mapping all hold it, so it is free exactly when every process that could
 * still write a slot is gone (mf_stage_recover).  -1 with a message.
 */
static int create_file(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "no staging area: cannot create '%s': %s", path, strerror(errno));
        return -1;
    }
    const char *failed = NULL;
    if (fallocate(fd, 0, 0, (off_t)mf_stage_area_bytes()) != 0)
        failed = "reserve its disk space";
    else if (flock(fd, LOCK_EX | LOCK_NB) != 0)
        failed = "lock it";
    if (failed) {
        snprintf(err, errlen, "no staging area: cannot %s ('%s'): %s", failed, path,
                 strerror(errno));
        unlink(path);
        close(fd);
        return -1;
    }
    return mf_descriptor_move_high(fd); /* the program's low numbers stay free */
}

mf_stage *mf_stage_create(const char *dir, const uint8_t run_id[MF_RUN_ID_BYTES], char *env,
                          size_t envlen, char *err, size_t errlen)
{
    static mf_stage handle;
    char hex[MF_RUN_ID_HEX];
    mf_run_id_format(run_id, hex);
    handle = (mf_stage){ .fd = -1, .log_fd = -1 };
    /* no slot's chunk was written while filling yet: a slot's first chunk
     * has sequence 0, which a zero here would claim written at time 0 (and
     * hold the analysis's horizon there until the chunk is full) */
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++)
        handle.snap_seq[i] = UINT32_MAX;
    if ((size_t)snprintf(handle.path, sizeof handle.path, "%s/memflow-%s%s", dir, hex,
                         MF_STAGE_SUFFIX) >= sizeof handle.path) {
        snprintf(err, errlen, "no staging area: the folder name is too long");
        return NULL;
    }
    int fd = create_file(handle.path, err, errlen);
    struct stat st;
    if (fd < 0)
        return NULL;
    stage_header *h = fstat(fd, &st) == 0 ? mmap(NULL, mf_stage_area_bytes(), PROT_READ | PROT_WRITE,
                                                 MAP_SHARED, fd, 0)
                                          : MAP_FAILED;
    if (h == MAP_FAILED) {
        snprintf(err, errlen, "no staging area (mmap '%s'): %s", handle.path, strerror(errno));
        unlink(handle.path);
        close(fd);
        return NULL;
    }
    memcpy(h->magic, STAGE_MAGIC, 8);
    h->version = STAGE_VERSION;
    h->slots = MF_STAGE_SLOTS;
    h->slot_size = MF_CHUNK_SIZE;
    h->header_bytes = STAGE_HEADER_BYTES;
    h->consumer = (int32_t)getpid();
    snprintf(env, envlen, "%d:%llu:%llu", fd, (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    handle.h = h;
    handle.bytes = mf_stage_area_bytes();
    handle.fd = fd;
    return &handle;
}

void mf_stage_child_owns(mf_stage *s)
{
    __atomic_store_n(&s->h->owner, (int32_t)getpid(), __ATOMIC_RELEASE);
    fcntl(s->fd, F_SETFD, 0);
}

/*
 * The log the program named in h (its path copied into path, which holds
 * sizeof h->log_path bytes), open for
 * writing, if that name is still the file the program opened (device,
 * inode) and that file still the log of its run (the run id in its
 * header); else -1 with *why saying what is wrong.
 */
static int open_named_log(const stage_header *h, char *path, const char **why)
{
    snprintf(path, sizeof h->log_path, "%.*s", (int)sizeof h->log_path - 1, h->log_path);
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    mf_file_header lh;
    *why = NULL;
    if (fd < 0)
        *why = strerror(errno);
    else if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != h->log_dev ||
             (uint64_t)st.st_ino != h->log_ino)
        *why = "another file has its name now";
    else if (pread(fd, &lh, sizeof lh, 0) != (ssize_t)sizeof lh ||
             memcmp(lh.run_id, h->log_run_id, MF_RUN_ID_BYTES) != 0)
        *why = "it is the log of another run now";
    if (!*why)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* The log the program named, opened for writing; -1 if it has named none
 * yet, -2 (a message in err) if it cannot be opened. */
static int open_log(mf_stage *s, char *err, size_t errlen)
{
    if (s->log_fd >= 0)
        return s->log_fd;
    stage_header *h = s->h;
    if (!__atomic_load_n(&h->log_set, __ATOMIC_ACQUIRE))
        return -1;
    char path[sizeof h->log_path];
    const char *why;
    int fd = open_named_log(h, path, &why);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open the log '%s' to copy staged chunks into: %s", path,
                 why);
        return -2;
    }
    return s->log_fd = fd;
}

/* The log's chunks_claimed, as the program's header says now. */
static uint64_t chunks_claimed(int fd)
{
    uint64_t n = 0;
    if (pread(fd, &n, sizeof n, (off_t)offsetof(mf_file_header, chunks_claimed)) != sizeof n)
        return 0;
    return n;
}

/* Keep the log's disk space reserved RESERVE_AHEAD chunks beyond the
 * program's claims; when the disk or a file size limit says no, leave it to
 * the program for RESERVE_RETRY_NS. */
static void reserve_ahead(mf_stage *s, int fd)
{
    stage_header *h = s->h;
    uint64_t claimed = chunks_claimed(fd);
    s->busy = claimed != s->claimed_seen;
    s->claimed_seen = claimed;
    uint64_t want = claimed + RESERVE_AHEAD;
    if (want <= s->reserved_by_us + RESERVE_AHEAD / 2)
        return;
    if (s->reserve_retry_ns && mf_monotonic_ns() < s->reserve_retry_ns)
        return;
    uint64_t from = s->reserved_by_us > claimed ? s->reserved_by_us : claimed ? claimed : 1;
    if (fallocate(fd, 0, (off_t)(from * MF_CHUNK_SIZE),
                  (off_t)((want - from) * MF_CHUNK_SIZE)) != 0) {
        s->reserve_retry_ns = mf_monotonic_ns() + RESERVE_RETRY_NS;
        return;
    }
    s->reserve_retry_ns = 0;
    s->reserved_by_us = want;
    __atomic_store_n(&h->reserved_chunks, want, __ATOMIC_RELEASE);
}

/* Bring the pages of the slots the program will take next into the page
 * cache. */
static void populate_ahead(mf_stage *s)
{
    uint32_t highest = 0;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++)
        if (__atomic_load_n(&s->h->state[i], __ATOMIC_RELAXED) != SLOT_FREE)
            highest = i + 1;
    uint32_t want = highest + POPULATE_AHEAD < MF_STAGE_SLOTS ? highest + POPULATE_AHEAD
                                                              : MF_STAGE_SLOTS;
    if (want > s->populated &&
        madvise(mf_stage_slot_base(s->h, s->populated), (size_t)(want - s->populated) * MF_CHUNK_SIZE,
                MADV_POPULATE_WRITE) == 0)
        s->populated = want;
}

/* After the program: the log no longer than its claimed chunks (what was
 * reserved ahead and never claimed is given back). */
static void trim(mf_stage *s, int fd)
{
    uint64_t claimed = chunks_claimed(fd);
    if (s->reserved_by_us > claimed && claimed > 0)
        if (ftruncate(fd, (off_t)(claimed * MF_CHUNK_SIZE)) != 0)
            return; /* the longer file reads the same: unclaimed chunks are zeros */
}

/*
 * What the threads that are slow to fill their slots recorded goes into the
 * log now (mf_stage_write_idle): a slot whose records did not grow since
 * the last look, or that has held records not in the log for
 * IDLE_WRITE_NS, gets them written where its chunk goes (the whole chunk
 * follows when it is full).  Each such write publishes the time it began:
 * what the slot records after it is stamped after it (give or take the
 * moment between a time stamp and its record: mf_stage_unwritten_since).
 */
static int write_idle_slots(mf_stage *s, int fd)
{
    stage_header *h = s->h;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++) {
        struct slot_written *w = &s->written[i];
        if (__atomic_load_n(&h->state[i], __ATOMIC_ACQUIRE) != SLOT_FILLING) {
            w->valid = 0;
            continue;
        }
        uint64_t now = mf_monotonic_ns();
        uint32_t seq = __atomic_load_n(&h->seq[i], __ATOMIC_ACQUIRE);
        if (!w->valid || w->seq != seq)
            *w = (struct slot_written){ .seq = seq, .valid = 1 };
        size_t len = mf_stage_recorded(h, i, w->len);
        int idle = len == w->len;
        w->len = len;
        if (len <= sizeof(mf_chunk_header) || len <= w->written)
            continue;
        if (!w->grew_ns)
            w->grew_ns = now;
        if (!idle && now - w->grew_ns < IDLE_WRITE_NS)
            continue;
        size_t end;
        if (mf_stage_write_snapshot_from(h, i, fd, s->scratch, w->written, seq, &end) < 0)
            return -1;
        if (end == w->written)
            continue;            /* cleared meanwhile */
        w->written = end;
        w->grew_ns = 0;
        __atomic_store_n(&s->snap_ns[i], now, __ATOMIC_RELEASE);
        __atomic_store_n(&s->snap_seq[i], seq, __ATOMIC_RELEASE);
    }
    return 0;
}

int mf_stage_write_idle(mf_stage *s)
{
    if (!s->scratch && !(s->scratch = malloc(MF_CHUNK_SIZE)))
        return -1;
    s->write_idle = 1;
    return 0;
}

void mf_stage_on_final(mf_stage *s, mf_stage_final_fn fn, void *arg)
{
    s->on_final_arg = arg;
    s->on_final = fn;
}

/* Every FULL slot into the log, each then FREE, its chunk said final. */
static int write_full_slots(mf_stage *s, int fd)
{
    stage_header *h = s->h;
    int n = 0;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++) {
        int rc = mf_stage_write_full_slot(h, i, fd);
        if (rc < 0)
            return -1;
        if (rc == 0)
            continue;
        /* WRITING: ours until freed, so its header still names its chunk */
        uint32_t index = ((const mf_chunk_header *)(const void *)mf_stage_slot_base(h, i))->index;
        __atomic_store_n(&h->state[i], SLOT_FREE, __ATOMIC_RELEASE);
        if (s->on_final)
            s->on_final(s->on_final_arg, fd, h->log_path, index);
        n++;
    }
    return n;
}

int mf_stage_drain(mf_stage *s, int final, char *err, size_t errlen)
{
    stage_header *h = s->h;
    if (!final)
        populate_ahead(s);
    int fd = open_log(s, err, errlen);
    if (fd == -1)
        return 0;
    if (fd < 0 || (!final && __atomic_load_n(&h->consumer_gone, __ATOMIC_RELAXED)))
        return fd < 0 ? -1 : 0;
    if (!final)
        reserve_ahead(s, fd);
    int n = write_full_slots(s, fd);
    if (n >= 0 && !final && s->write_idle && write_idle_slots(s, fd) < 0)
        n = -1;
    if (n < 0) {
        snprintf(err, errlen, "cannot copy staged chunks into the log '%s': %s", h->log_path,
                 strerror(errno));
        __atomic_store_n(&h->consumer_gone, 1, __ATOMIC_RELAXED);
        return -1;
    }
    if (!final)
        return n;
    /* The process is gone: what its slots hold no longer changes. */
    int rest = mf_stage_write_every_slot(h, fd);
    if (rest < 0) {
        snprintf(err, errlen, "cannot copy staged chunks into the log '%s': %s", h->log_path,
                 strerror(errno));
        return -1;
    }
    s->complete = 1;
    trim(s, fd);
    return n + rest;
}

uint64_t mf_stage_unwritten_since(mf_stage *s, uint64_t now_ns)
{
    stage_header *h = s->h;
    uint64_t oldest = UINT64_MAX;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++) {
        struct slot_watch *w = &s->watch[i];
        if (__atomic_load_n(&h->state[i], __ATOMIC_ACQUIRE) == SLOT_FREE) {
            w->valid = 0;
            continue;
        }
        uint32_t seq = __atomic_load_n(&h->seq[i], __ATOMIC_ACQUIRE);
        if (!w->valid || w->seq != seq)
            *w = (struct slot_watch){ .seq = seq, .valid = 1, .seen_ns = now_ns };
        uint64_t since;
        if (__atomic_load_n(&s->snap_seq[i], __ATOMIC_ACQUIRE) == seq) {
            since = __atomic_load_n(&s->snap_ns[i], __ATOMIC_ACQUIRE);  /* written before */
        } else {
            /* records are stored word last: what is read before a zero word is whole */
            if (!w->has_first)
                w->has_first = mf_chunk_first_event((const uint8_t *)mf_stage_slot_base(h, i),
                                                    MF_CHUNK_SIZE, &w->first_ns);
            since = w->has_first && w->first_ns < w->seen_ns ? w->first_ns : w->seen_ns;
        }
        oldest = since < oldest ? since : oldest;
    }
    return oldest;
}

int mf_stage_may_copy_into(mf_stage *s, uint64_t dev, uint64_t ino)
{
    const stage_header *h = s->h;
    if (!__atomic_load_n(&h->log_set, __ATOMIC_ACQUIRE))
        return 1;
    return h->log_dev == dev && h->log_ino == ino;
}

int mf_stage_busy(mf_stage *s)
{
    return s->busy || !__atomic_load_n(&s->h->log_set, __ATOMIC_ACQUIRE);
}

void mf_stage_wait(mf_stage *s, int timeout_us)
{
    stage_header *h = s->h;
    uint32_t seen = __atomic_load_n(&h->wake, __ATOMIC_SEQ_CST);
    __atomic_store_n(&h->waiting, 1, __ATOMIC_SEQ_CST);
    if (mf_stage_count_state(h, SLOT_FULL) < STAGE_WAKE_AT_FULL) {
        struct timespec ts = { timeout_us / 1000000, (long)(timeout_us % 1000000) * 1000 };
        mf_stage_futex(&h->wake, FUTEX_WAIT, seen, &ts);
    }
    __atomic_store_n(&h->waiting, 0, __ATOMIC_SEQ_CST);
}

void mf_stage_wake(mf_stage *s)
{
    __atomic_add_fetch(&s->h->wake, 1, __ATOMIC_SEQ_CST);
    mf_stage_futex(&s->h->wake, FUTEX_WAKE, 1, NULL);
}

/* Remove path if it still names the file fd has open (and nothing
 * planted in its place since). */
static void remove_if_same(const char *path, int fd)
{
    struct stat mine, named;
    if (fstat(fd, &mine) == 0 && lstat(path, &named) == 0 && mine.st_dev == named.st_dev &&
        mine.st_ino == named.st_ino)
        unlink(path);
}

void mf_stage_destroy(mf_stage *s)
{
    free(s->scratch);
    s->scratch = NULL;
    if (s->log_fd >= 0)
        close(s->log_fd);
    if (s->complete || !__atomic_load_n(&s->h->log_set, __ATOMIC_ACQUIRE))
        remove_if_same(s->path, s->fd); /* written back, or never used */
    munmap(s->h, s->bytes);
    close(s->fd);
    s->h = NULL;
}

/* ---- a reader's side: what a killed run left staged --------------------- */

/* The stage file at path, open, if it is a regular file of this user that
 * only this user may write; else -1 (errno). */
static int open_own_file(const char *path, struct stat *st)
{
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_uid != geteuid() ||
        (st->st_mode & 022)) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

int mf_stage_recover(const char *path, char *msg, size_t msglen)
{
    struct stat st;
    msg[0] = 0;
    int fd = open_own_file(path, &st);
    if (fd < 0) {
        snprintf(msg, msglen, "'%s': not a staging file of this user (%s); left as it is", path,
                 strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd); /* a run still holds it: memflow run or the program writes it back */
        return 0;
    }
    stage_header *h = (size_t)st.st_size == mf_stage_area_bytes()
                          ? mmap(NULL, mf_stage_area_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                          : MAP_FAILED;
    if (h == MAP_FAILED || !mf_stage_layout_ok(h)) {
        snprintf(msg, msglen, "'%s': not a staging file of this memflow (size %lld, or its "
                 "header); left as it is", path, (long long)st.st_size);
        if (h != MAP_FAILED)
            munmap(h, mf_stage_area_bytes());
        close(fd);
        return -1;
    }
    int n = 0, log_fd = -1;
    if (h->log_set && !h->recovered) {
        char log_path[sizeof h->log_path];
        const char *why;
        log_fd = open_named_log(h, log_path, &why);
        n = log_fd < 0 ? -1 : mf_stage_write_every_slot(h, log_fd);
        if (log_fd < 0)
            snprintf(msg, msglen, "'%s' holds staged records of the log '%s', which cannot take "
                     "them (%s); left as it is", path, log_path, why);
        else if (n < 0)
            snprintf(msg, msglen, "cannot write the records staged in '%s' into the log '%s': "
                     "%s; left as it is", path, log_path, strerror(errno));
        else if (n > 0)
            snprintf(msg, msglen, "wrote %d chunk(s) that a killed run left in '%s' into its "
                     "log '%s'", n, path, log_path);
    }
    if (n >= 0) {
        h->recovered = 1;
        remove_if_same(path, fd);
    }
    if (log_fd >= 0)
        close(log_fd);
    munmap(h, mf_stage_area_bytes());
    close(fd);
    return n;
}

