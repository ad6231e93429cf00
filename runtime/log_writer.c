/*
 * log_writer.c - the log file: create it, write its header, hand out chunks.
 *
 * Claiming a chunk (once per MiB of log per thread) takes the grow lock:
 * fallocate() reserves the next chunk's disk blocks (so a full disk means a
 * dropped event, not a SIGBUS on a sparse page), mmap() maps it, and only
 * then is the header's chunks_claimed bumped - a failed claim uses up no
 * chunk number, so when space comes back the file stays dense.  The file
 * never grows past RLIMIT_FSIZE: that is checked first, so the program gets
 * no SIGXFSZ for memflow's growth (its own writes keep their disposition).
 * While the file cannot grow the writer backs off: after the k-th failed try
 * in a row it tries again only after 2^k more dropped events (at most 4096)
 * or 2^k ms (at most 1 s), so a full disk costs a dropped event a counter
 * increment, not a system call.  Nothing here calls malloc.
 *
 * Under `memflow run` (unless MEMFLOW_STAGE=0) the chunks after chunk 0
 * are filled in a staging file shared with memflow run, which copies each full one into the log
 * (stage.c): a claim then numbers the chunk and reserves its disk space as
 * above, but takes a staging slot instead of mapping the file; the header
 * (chunk 0) stays a shared mapping of the file either way.
 *
 * The descriptor is the program's to close: daemons close every descriptor
 * they inherited and reuse the numbers.  So the log's descriptor sits at a
 * high number, and before every use (a claim, a sync, a fork's close) the
 * writer checks it still names the log (device and inode); when it does
 * not, the log is opened again by its absolute path (O_NOFOLLOW, the same
 * device and inode or nothing) and the old number is left to the program.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log_format.h"
#include "log_writer.h"
#include "checksum.h"
#include "descriptor.h"
#include "clock.h"
#include "paths.h"
#include "run_id.h"
#include "stage.h"

static int log_fd = -1;
static dev_t log_dev;                /* what log_fd must name to be the log */
static ino_t log_ino;
static mf_file_header *header;       /* chunk 0, mapped shared */
static char log_path[4096 + 64];     /* absolute */
static uint8_t run_id[MF_RUN_ID_BYTES];
static int run_id_known;             /* kept across fork: a child is of its parent's run */
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static mf_log_writer_stats stats;    /* claims, failures, reopens: grow_lock */

#define BACKOFF_MAX_LEVEL 12         /* at most 2^12 dropped events between tries */
#define BACKOFF_MAX_NS 1000000000ull /* and at least one try a second */
static struct {
    uint64_t retry_at_dropped;       /* 0: not backing off; else try again once */
    uint64_t retry_at_ns;            /* dropped_events or the clock reaches these */
    unsigned level;                  /* failed tries in a row (grow_lock) */
} backoff;

/* Whether log_fd still names the log, open for writing. */
static int descriptor_is_log(void)
{
    struct stat st;
    int mode = fcntl(log_fd, F_GETFL);
    return mode >= 0 && (mode & O_ACCMODE) == O_RDWR && fstat(log_fd, &st) == 0 &&
           st.st_dev == log_dev && st.st_ino == log_ino;
}

/*
 * Make log_fd the log again after the program closed or reused its number:
 * open the log by path, refusing a symlink or any other file put there.
 * The old number is the program's now and is never closed.  grow_lock held.
 */
static int ensure_descriptor(void)
{
    if (descriptor_is_log())
        return 0;
    int fd = open(log_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_dev != log_dev || st.st_ino != log_ino) {
        close(fd);
        return -1;
    }
    log_fd = mf_descriptor_move_high(fd);
    stats.reopens++;
    return 0;
}

/* dir as an absolute path into out (the program may chdir later). */
static int absolute_dir(const char *dir, char *out, size_t len, char *err, size_t errlen)
{
    char cwd[4096];
    int n;
    while (dir[0] == '.' && dir[1] == '/')
        dir += 2;
    if (dir[0] == '/')
        n = snprintf(out, len, "%s", dir);
    else if (getcwd(cwd, sizeof cwd))
        n = strcmp(dir, ".") == 0 || !*dir ? snprintf(out, len, "%s", cwd)
                                           : snprintf(out, len, "%s/%s", cwd, dir);
    else
        n = -1;
    if (n < 0 || (size_t)n >= len) {
        snprintf(err, errlen, "memflow: cannot create the log in '%s': path too long or "
                 "no current folder", dir);
        return -1;
    }
    return 0;
}

static int create_file(const char *dir, char *err, size_t errlen)
{
    int pid = (int)getpid();
    for (int n = 0; n < 1000; n++) {
        if (n == 0)
            snprintf(log_path, sizeof log_path, "%s/memflow-%d.mfl", dir, pid);
        else
            snprintf(log_path, sizeof log_path, "%s/memflow-%d-%d.mfl", dir, pid, n);
        int fd = open(log_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0)
            return mf_descriptor_move_high(fd);
        if (errno != EEXIST) {
            snprintf(err, errlen, "memflow: cannot create log '%s': %s", log_path,
                     strerror(errno));
            return -1;
        }
    }
    snprintf(err, errlen, "memflow: cannot create log in '%s': 1000 names taken", dir);
    return -1;
}

/* Whether a file of end bytes is within RLIMIT_FSIZE (growing past it
 * would raise SIGXFSZ). */
static int within_file_size_limit(uint64_t end)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
           end <= (uint64_t)rl.rlim_cur;
}

/*
 * File systems without fallocate: write the zeros, so that the blocks exist
 * (growing a sparse file with ftruncate would turn a full disk into a
 * SIGBUS when the mapping is written).  The range is past every claimed
 * chunk: nothing there is in use.
 */
static int write_zeros(uint64_t offset, uint64_t len)
{
    static const char zeros[65536];
    while (len) {
        size_t n = len < sizeof zeros ? (size_t)len : sizeof zeros;
        ssize_t w = pwrite(log_fd, zeros, n, (off_t)offset);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        offset += (uint64_t)w;
        len -= (uint64_t)w;
    }
    return 0;
}

/* Make sure the file covers [offset, offset + len) with real blocks.
 * grow_lock held (or the log not yet shared). */
static int reserve(uint64_t offset, uint64_t len)
{
    if (!within_file_size_limit(offset + len)) {
        errno = EFBIG;
        return -1;
    }
    int rc = fallocate(log_fd, 0, (off_t)offset, (off_t)len) == 0 ? 0 : errno;
    if (rc == 0)
        return 0;
    if (rc != EOPNOTSUPP && rc != ENOSYS) {
        errno = rc;
        return -1;
    }
    return write_zeros(offset, len);
}

/* Chunk index's disk space: reserved here, or by memflow run ahead of the
 * claims (then only this process's file size limit is checked). */
static int reserve_chunk(uint64_t index)
{
    if (!mf_stage_reserved(index))
        return reserve(index * MF_CHUNK_SIZE, MF_CHUNK_SIZE);
    if (within_file_size_limit((index + 1) * MF_CHUNK_SIZE))
        return 0;
    errno = EFBIG;
    return -1;
}

static void read_cmdline(char *dst, size_t cap, uint32_t *len)
{
    *len = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n;
    while (*len < cap && (n = read(fd, dst + *len, cap - *len)) > 0)
        *len += (uint32_t)n;
    close(fd);
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * This process's run: the id `memflow run` passed in MEMFLOW_RUN_ID, the
 * parent's (a forked child), or a fresh one for a process tree of its own.
 */
static void choose_run_id(void)
{
    if (run_id_known)
        return;
    const char *hex = getenv("MEMFLOW_RUN_ID");
    if (!hex || mf_run_id_parse(hex, run_id) < 0) {
        if (hex)
            fprintf(stderr, "memflow: MEMFLOW_RUN_ID='%.40s' is not 32 hex digits; process "
                    "%d starts a run of its own\n", hex, (int)getpid());
        mf_run_id_fresh(run_id);
    }
    run_id_known = 1;
}

static void write_header(mf_file_header *h, uint64_t ppid)
{
    h->version = MF_LOG_VERSION;
    h->header_size = sizeof *h;
    h->chunk_size = MF_CHUNK_SIZE;
    h->flags = 0;
    h->chunks_claimed = 1;
    h->pid = (uint64_t)getpid();
    h->ppid = ppid;
    h->start_mono_ns = mf_clock_now();
    h->start_real_ns = clock_ns(CLOCK_REALTIME);
    h->clock_id = CLOCK_MONOTONIC;
    gethostname(h->host, sizeof h->host - 1);
    choose_run_id();
    memcpy(h->run_id, run_id, sizeof h->run_id);
    char *argv = (char *)h + sizeof *h;
    read_cmdline(argv, MF_CHUNK_SIZE - sizeof *h, &h->argv_len);
    h->static_check = mf_header_static_check(h, argv, h->argv_len);
    /* The magic goes last: a file without it was never a log. */
    uint64_t magic;
    memcpy(&magic, MF_LOG_MAGIC, sizeof magic);
    __atomic_store_n((uint64_t *)(void *)h->magic, magic, __ATOMIC_RELEASE);
}

int mf_log_writer_open(const char *dir, uint64_t ppid, char *err, size_t errlen)
{
    if (mf_log_writer_is_open())
        return 0;
    char why[512], abs_dir[4096];
    if (mf_make_dirs(dir, why, sizeof why) < 0) {
        snprintf(err, errlen, "memflow: cannot create the log: %s", why);
        return -1;
    }
    if (absolute_dir(dir, abs_dir, sizeof abs_dir, err, errlen) < 0)
        return -1;
    int fd = create_file(abs_dir, err, errlen);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "memflow: cannot stat log '%s': %s", log_path, strerror(errno));
        close(fd);
        unlink(log_path);
        return -1;
    }
    log_fd = fd;
    log_dev = st.st_dev;
    log_ino = st.st_ino;
    void *map = MAP_FAILED;
    if (reserve(0, MF_CHUNK_SIZE) == 0)
        map = mmap(NULL, MF_CHUNK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "memflow: cannot map log '%s': %s", log_path, strerror(errno));
        close(fd);
        unlink(log_path);
        log_fd = -1;
        return -1;
    }
    write_header(map, ppid);
    __atomic_store_n(&header, (mf_file_header *)map, __ATOMIC_RELEASE);
    mf_stage_adopt(log_path, log_dev, log_ino, run_id);
    return 0;
}

int mf_log_writer_is_open(void)
{
    return __atomic_load_n(&header, __ATOMIC_ACQUIRE) != NULL;
}

const char *mf_log_writer_path(void)
{
    return mf_log_writer_is_open() ? log_path : "";
}

int mf_log_writer_anchor(uint64_t *mono_ns, uint64_t *real_ns)
{
    if (!mf_log_writer_is_open() || !header)
        return -1;
    *mono_ns = header->start_mono_ns;
    *real_ns = header->start_real_ns;
    return 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/*
 * Fault the whole chunk in, writable, with one system call instead of one
 * page fault per 4 KiB page on the hot path.  Kernels before 5.14 refuse it;
 * the pages are then faulted in one by one as the thread writes.
 */
static void prefault(char *chunk)
{
    madvise(chunk, MF_CHUNK_SIZE, MADV_POPULATE_WRITE);
}

/* Whether the open log is this process's own: a vfork child runs in its
 * parent's memory, header included, until it execs or exits. */
static mf_file_header *own_header(void)
{
    mf_file_header *h = __atomic_load_n(&header, __ATOMIC_ACQUIRE);
    return h && h->pid == (uint64_t)getpid() ? h : NULL;
}

/*
 * An event is lost because no chunk could be had (a full disk, a file size
 * limit).  Counted in the header's dropped_events and flagged DROPPED - its
 * page is mapped already, so this needs no disk - so that every reader of
 * the log says so.
 */
static void note_dropped(void)
{
    __atomic_fetch_add(&header->dropped_events, 1, __ATOMIC_RELAXED);
    if (!(__atomic_load_n(&header->flags, __ATOMIC_RELAXED) & MF_HEADER_DROPPED))
        __atomic_or_fetch(&header->flags, MF_HEADER_DROPPED, __ATOMIC_RELEASE);
}

/* Whether the last try to grow failed and it is not yet time to try again. */
static int backing_off(void)
{
    uint64_t at = __atomic_load_n(&backoff.retry_at_dropped, __ATOMIC_RELAXED);
    if (MF_LIKELY(!at))
        return 0;
    if (__atomic_load_n(&header->dropped_events, __ATOMIC_RELAXED) >= at)
        return 0;
    return mf_clock_now() < __atomic_load_n(&backoff.retry_at_ns, __ATOMIC_RELAXED);
}

/* A try to grow failed: wait twice as long as last time.  grow_lock held. */
static void backoff_after_failure(void)
{
    unsigned level = backoff.level < BACKOFF_MAX_LEVEL ? backoff.level : BACKOFF_MAX_LEVEL;
    backoff.level++;
    uint64_t wait_ns = 1000000ull << level;
    if (wait_ns > BACKOFF_MAX_NS)
        wait_ns = BACKOFF_MAX_NS;
    uint64_t dropped = __atomic_load_n(&header->dropped_events, __ATOMIC_RELAXED);
    __atomic_store_n(&backoff.retry_at_ns, mf_clock_now() + wait_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&backoff.retry_at_dropped, dropped + (1ull << level), __ATOMIC_RELAXED);
}

static void backoff_reset(void)
{
    backoff.level = 0;
    __atomic_store_n(&backoff.retry_at_dropped, 0, __ATOMIC_RELAXED);
}

/* Map chunk `index` of the file and write its chunk header; NULL if it
 * cannot be mapped.  grow_lock held. */
static char *map_chunk(uint64_t index, uint32_t tid)
{
    char *chunk = mmap(NULL, MF_CHUNK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, log_fd,
                       (off_t)(index * MF_CHUNK_SIZE));
    if (chunk == MAP_FAILED)
        return NULL;
    mf_chunk_header *ch = (mf_chunk_header *)chunk;
    ch->index = (uint32_t)index;
    ch->tid = tid;
    __atomic_store_n(&ch->magic, MF_CHUNK_MAGIC, __ATOMIC_RELEASE);
    return chunk;
}

/*
 * Grow the file by chunk `index` and give it a place to be written: a
 * staging slot, else a mapping of the file (*direct set).  Returns the
 * chunk's first byte or NULL.  grow_lock held.
 */
static char *grow_by_chunk(uint64_t index, uint32_t tid, int *direct)
{
    if (ensure_descriptor() < 0 || reserve_chunk(index) < 0)
        return NULL;
    char *chunk = mf_stage_take((uint32_t)index, tid, log_fd);
    *direct = chunk == NULL;
    return chunk ? chunk : map_chunk(index, tid);
}

char *mf_log_writer_claim(uint32_t tid, char **limit)
{
    if (!mf_log_writer_is_open())
        return NULL;
    if (backing_off()) {
        note_dropped();
        return NULL;
    }
    pthread_mutex_lock(&grow_lock);
    uint64_t index = header->chunks_claimed;
    int direct = 0;
    char *chunk = grow_by_chunk(index, tid, &direct);
    if (chunk) {
        __atomic_store_n(&header->chunks_claimed, index + 1, __ATOMIC_RELEASE);
        stats.claims++;
        stats.staged_claims += !direct;
        backoff_reset();
    } else {
        stats.failed_claims++;
        backoff_after_failure();
    }
    pthread_mutex_unlock(&grow_lock);
    if (!chunk) {
        note_dropped();
        return NULL;
    }
    if (direct)
        prefault(chunk);
    *limit = chunk + MF_CHUNK_SIZE;
    return chunk + sizeof(mf_chunk_header);
}

void mf_log_writer_release(char *chunk, char *end)
{
    mf_chunk_seal(chunk, (uint64_t)(end - chunk));
    if (!mf_stage_owns(chunk)) {
        munmap(chunk, MF_CHUNK_SIZE);
        return;
    }
    pthread_mutex_lock(&grow_lock);
    mf_stage_full(chunk, (size_t)(end - chunk), ensure_descriptor() == 0 ? log_fd : -1);
    pthread_mutex_unlock(&grow_lock);
}

void mf_log_writer_flush(void)
{
    if (!mf_stage_active())
        return;
    pthread_mutex_lock(&grow_lock);
    if (own_header() && ensure_descriptor() == 0)
        mf_stage_flush(log_fd);
    pthread_mutex_unlock(&grow_lock);
}

void mf_log_writer_set_finished(int finished)
{
    if (!header)
        return;
    if (finished)
        __atomic_or_fetch(&header->flags, MF_HEADER_FINISHED, __ATOMIC_RELEASE);
    else
        __atomic_and_fetch(&header->flags, ~MF_HEADER_FINISHED, __ATOMIC_RELEASE);
}

void mf_log_writer_set_end(unsigned how, int64_t status)
{
    mf_file_header *h = own_header();
    if (!h)
        return;
    __atomic_store_n(&h->end_ns, mf_clock_now(), __ATOMIC_RELAXED);
    __atomic_store_n(&h->end_status, status, __ATOMIC_RELAXED);
    __atomic_store_n(&h->end_how, how, __ATOMIC_RELEASE);
}

void mf_log_writer_clear_end(void)
{
    mf_file_header *h = own_header();
    if (!h)
        return;
    __atomic_store_n(&h->end_how, MF_END_UNKNOWN, __ATOMIC_RELEASE);
    __atomic_store_n(&h->end_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&h->end_status, 0, __ATOMIC_RELAXED);
}

void mf_log_writer_sync(void)
{
    if (!mf_log_writer_is_open())
        return;
    mf_log_writer_flush();
    pthread_mutex_lock(&grow_lock);
    if (ensure_descriptor() == 0)
        fdatasync(log_fd);
    pthread_mutex_unlock(&grow_lock);
}

/* In the forked child (one thread, grow_lock fresh): close the parent's
 * descriptor only if the program has not taken its number. */
void mf_log_writer_forget(void)
{
    mf_stage_forget();
    if (header)
        munmap(header, MF_CHUNK_SIZE);
    header = NULL;
    if (log_fd >= 0 && descriptor_is_log())
        close(log_fd);
    log_fd = -1;
    log_path[0] = 0;
    memset(&stats, 0, sizeof stats);
    memset(&backoff, 0, sizeof backoff);
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    grow_lock = fresh;
}

void mf_log_writer_lock(void) { pthread_mutex_lock(&grow_lock); }
void mf_log_writer_unlock(void) { pthread_mutex_unlock(&grow_lock); }

uint64_t mf_log_writer_dropped(void)
{
    mf_file_header *h = __atomic_load_n(&header, __ATOMIC_ACQUIRE);
    return h ? __atomic_load_n(&h->dropped_events, __ATOMIC_RELAXED) : 0;
}

void mf_log_writer_get_stats(mf_log_writer_stats *out)
{
    pthread_mutex_lock(&grow_lock);
    *out = stats;
    pthread_mutex_unlock(&grow_lock);
    out->dropped_events = mf_log_writer_dropped();
}
