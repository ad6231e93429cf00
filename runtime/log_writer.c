/*
 * log_writer.c - the log file: create it, write its header, hand out chunks.
 *
 * Claiming a chunk is one atomic add on the header's chunks_claimed (the
 * header lives in the shared mapping too), one fallocate() to reserve its
 * disk blocks (so a full disk means a dropped event, not a SIGBUS on a
 * sparse page) and one mmap().  No lock is taken; fallocate only grows the
 * file.  Nothing here calls malloc.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log_format.h"
#include "log_writer.h"
#include "paths.h"
#include "recorder.h"

static int log_fd = -1;
static mf_file_header *header;       /* chunk 0, mapped shared */
static char log_path[4096 + 64];
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t dropped_events;

static int create_file(const char *dir, char *err, size_t errlen)
{
    int pid = (int)getpid();
    for (int n = 0; n < 1000; n++) {
        if (n == 0)
            snprintf(log_path, sizeof log_path, "%s/memflow-%d.mfl", dir, pid);
        else
            snprintf(log_path, sizeof log_path, "%s/memflow-%d-%d.mfl", dir, pid, n);
        int fd = open(log_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST) {
            snprintf(err, errlen, "memflow: cannot create log '%s': %s", log_path,
                     strerror(errno));
            return -1;
        }
    }
    snprintf(err, errlen, "memflow: cannot create log in '%s': 1000 names taken", dir);
    return -1;
}

/* Make sure the file covers [offset, offset + len) with real blocks. */
static int reserve(uint64_t offset, uint64_t len)
{
    int rc = posix_fallocate(log_fd, (off_t)offset, (off_t)len);
    if (rc == 0)
        return 0;
    if (rc != EOPNOTSUPP && rc != EINVAL)
        return -1;
    /* File systems without fallocate: grow with ftruncate, never shrink. */
    pthread_mutex_lock(&grow_lock);
    struct stat st;
    int ok = fstat(log_fd, &st) == 0 &&
             ((uint64_t)st.st_size >= offset + len ||
              ftruncate(log_fd, (off_t)(offset + len)) == 0);
    pthread_mutex_unlock(&grow_lock);
    return ok ? 0 : -1;
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

static void write_header(uint64_t ppid)
{
    header->version = MF_LOG_VERSION;
    header->header_size = sizeof *header;
    header->chunk_size = MF_CHUNK_SIZE;
    header->flags = 0;
    header->chunks_claimed = 1;
    header->pid = (uint64_t)getpid();
    header->ppid = ppid;
    header->start_mono_ns = mf_clock_now();
    header->start_real_ns = clock_ns(CLOCK_REALTIME);
    header->clock_id = CLOCK_MONOTONIC;
    gethostname(header->host, sizeof header->host - 1);
    char *argv = (char *)header + sizeof *header;
    read_cmdline(argv, MF_CHUNK_SIZE - sizeof *header, &header->argv_len);
    /* The magic goes last: a file without it was never a log. */
    uint64_t magic;
    memcpy(&magic, MF_LOG_MAGIC, sizeof magic);
    __atomic_store_n((uint64_t *)(void *)header->magic, magic, __ATOMIC_RELEASE);
}

int mf_log_writer_open(const char *dir, uint64_t ppid, char *err, size_t errlen)
{
    if (log_fd >= 0)
        return 0;
    char why[512];
    if (mf_make_dirs(dir, why, sizeof why) < 0) {
        snprintf(err, errlen, "memflow: cannot create the log: %s", why);
        return -1;
    }
    int fd = create_file(dir, err, errlen);
    if (fd < 0)
        return -1;
    log_fd = fd;
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
    header = map;
    write_header(ppid);
    return 0;
}

int mf_log_writer_is_open(void)
{
    return log_fd >= 0;
}

const char *mf_log_writer_path(void)
{
    return log_fd >= 0 ? log_path : "";
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

/*
 * An event is lost because no chunk could be had (a full disk, a file size
 * limit).  Counted, and flagged in the header - its page is mapped already,
 * so flagging needs no disk - so that every reader of the log says so.
 */
static void note_dropped(void)
{
    __atomic_fetch_add(&dropped_events, 1, __ATOMIC_RELAXED);
    __atomic_or_fetch(&header->flags, MF_HEADER_DROPPED, __ATOMIC_RELEASE);
}

char *mf_log_writer_claim(uint32_t tid, char **limit)
{
    if (log_fd < 0)
        return NULL;
    uint64_t index = __atomic_fetch_add(&header->chunks_claimed, 1, __ATOMIC_RELAXED);
    uint64_t offset = index * MF_CHUNK_SIZE;
    if (reserve(offset, MF_CHUNK_SIZE) < 0) {
        note_dropped();
        return NULL;
    }
    char *chunk = mmap(NULL, MF_CHUNK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, log_fd,
                       (off_t)offset);
    if (chunk == MAP_FAILED) {
        note_dropped();
        return NULL;
    }
    prefault(chunk);
    mf_chunk_header *ch = (mf_chunk_header *)chunk;
    ch->index = (uint32_t)index;
    ch->tid = tid;
    __atomic_store_n(&ch->magic, MF_CHUNK_MAGIC, __ATOMIC_RELEASE);
    *limit = chunk + MF_CHUNK_SIZE;
    return chunk + sizeof *ch;
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

void mf_log_writer_sync(void)
{
    if (log_fd >= 0)
        fdatasync(log_fd);
}

void mf_log_writer_forget(void)
{
    if (header)
        munmap(header, MF_CHUNK_SIZE);
    header = NULL;
    if (log_fd >= 0)
        close(log_fd);
    log_fd = -1;
    log_path[0] = 0;
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    grow_lock = fresh;
}

void mf_log_writer_lock(void) { pthread_mutex_lock(&grow_lock); }
void mf_log_writer_unlock(void) { pthread_mutex_unlock(&grow_lock); }

uint64_t mf_log_writer_dropped(void)
{
    return __atomic_load_n(&dropped_events, __ATOMIC_RELAXED);
}
