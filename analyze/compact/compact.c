/*
 * compact.c - replace a finished live log with its compact form (compact.h).
 *
 * The flow for one log: open it without following links; refuse it while
 * its writer lives; read its chunks through mf_chunk_source; encode each
 * densely (compact_codec.h), decode it again and compare (a chunk that does
 * not come back byte for byte is kept raw), compress it into one zstd frame
 * with a content checksum behind a frame header that says what it holds
 * (so it can be found and checked without the index); write the frames, the
 * index and the trailer (compact_layout.h) into a new private file in the
 * log's folder; fsync it;
 * check that the log did not change meanwhile; rename it over the log;
 * fsync the folder.  Until the rename the live log is untouched, after it
 * the compact log is complete: a SIGKILL at any moment loses nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "checksum.h"
#include "compact.h"
#include "compact_codec.h"
#include "compact_layout.h"
#include "grow.h"
#include "process_start.h"

#define DEFAULT_LEVEL 3
#define TEMP_INFIX ".compact-"      /* .LOGNAME.compact-PID-XXXXXX */

typedef struct job {
    const char *path;
    const mf_compact_options *opt;
    int fd;                          /* the live log, opened without following links */
    struct stat st;                  /* its identity and size when opened */
    mf_chunk_source *src;
    char dir[PATH_MAX];
    const char *base;                /* the log's name in dir */
    int dir_fd;
    char temp[PATH_MAX];             /* the new file while it is written ("" = none) */
    int temp_fd;
    uint64_t offset;                 /* bytes written to it */
    ZSTD_CCtx *cctx;
    mf_codec *codec;
    uint8_t *chunk, *check, *zbuf;
    size_t zcap;
    mf_compact_entry *entries;
    size_t n_entries, cap_entries;
    mf_compact_result *res;
    char *err;
    size_t errlen;
} job;

static int fail(job *j, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(job *j, int status, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(j->err, j->errlen, "%s: %s", j->path, what);
    return status;
}

/* ---- which file, and is anybody still writing it ------------------------ */

/* Open the log itself, never a link to it.  MF_COMPACT_REFUSED if not a
 * regular file. */
static int open_live(job *j)
{
    j->fd = open(j->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (j->fd < 0 && errno == ELOOP)
        return fail(j, MF_COMPACT_REFUSED, "is a symbolic link: memflow compacts the log "
                    "itself, never through a link (name the file it points to)");
    if (j->fd < 0)
        return fail(j, MF_COMPACT_FAILED, "cannot open: %s", strerror(errno));
    if (fstat(j->fd, &j->st) < 0)
        return fail(j, MF_COMPACT_FAILED, "cannot stat: %s", strerror(errno));
    if (!S_ISREG(j->st.st_mode))
        return fail(j, MF_COMPACT_REFUSED, "not a regular file");
    return 0;
}

/* Split path into its folder and name. */
static int split_path(job *j)
{
    const char *slash = strrchr(j->path, '/');
    j->base = slash ? slash + 1 : j->path;
    int n = !slash ? snprintf(j->dir, sizeof j->dir, ".")
            : slash == j->path ? snprintf(j->dir, sizeof j->dir, "/")
            : snprintf(j->dir, sizeof j->dir, "%.*s", (int)(slash - j->path), j->path);
    if (n < 0 || (size_t)n >= sizeof j->dir || !*j->base)
        return fail(j, MF_COMPACT_REFUSED, "not a file name");
    return 0;
}

/* The process pid: 0 gone, 1 holds the file (dev, ino) open, 2 alive but
 * its open files cannot be seen (another user's), -1 cannot tell.  Our own
 * descriptor mine does not count. */
static int process_holds(uint64_t pid, dev_t dev, ino_t ino, int mine)
{
    char own[16];
    snprintf(own, sizeof own, "%d", pid == (uint64_t)getpid() ? mine : -1);
    char fds[64];
    snprintf(fds, sizeof fds, "/proc/%llu/fd", (unsigned long long)pid);
    DIR *d = opendir(fds);
    if (!d)
        return errno == ENOENT ? 0 : errno == EACCES || errno == EPERM ? 2 : -1;
    int holds = 0;
    struct dirent *e;
    while (!holds && (e = readdir(d))) {
        char link[64 + sizeof e->d_name];
        struct stat st;
        snprintf(link, sizeof link, "%s/%s", fds, e->d_name);
        holds = e->d_name[0] != '.' && strcmp(e->d_name, own) != 0 && stat(link, &st) == 0 &&
                st.st_dev == dev && st.st_ino == ino;
    }
    closedir(d);
    return holds;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Whether the log may still be written: MF_COMPACT_BUSY with the reason,
 * or 0.  The writer is the header's pid on the header's host; it keeps the
 * log open until it ends (even after exit handlers set FINISHED), so "it
 * holds the file open" is the test.  A process memflow may not inspect
 * counts as the writer unless it started after the log did (a reused pid).
 */
static int check_writer(job *j, const mf_file_header *h)
{
    char host[sizeof h->host + 1] = "";
    gethostname(host, sizeof host - 1);
    if (strncmp(host, h->host, sizeof h->host) != 0) {
        if (h->flags & MF_HEADER_FINISHED)
            return 0;
        return fail(j, MF_COMPACT_BUSY, "written on host '%.64s' and not marked finished: "
                    "cannot see whether its process (pid %llu) still writes it", h->host,
                    (unsigned long long)h->pid);
    }
    int holds = process_holds(h->pid, j->st.st_dev, j->st.st_ino, j->fd);
    if (holds == 1)
        return fail(j, MF_COMPACT_BUSY, "still being written: process %llu has it open",
                    (unsigned long long)h->pid);
    if (holds == 2 || holds < 0) {
        uint64_t started = mf_process_start_ns(h->pid);
        uint64_t suspended = clock_ns(CLOCK_BOOTTIME) - clock_ns(CLOCK_MONOTONIC);
        uint64_t tick = 1000000000ull / 100;
        if (started == 0 || started <= h->start_mono_ns + suspended + tick)
            return fail(j, MF_COMPACT_BUSY, "process %llu, which may be writing it, still "
                        "runs and its open files cannot be inspected",
                        (unsigned long long)h->pid);
    }
    return 0;
}

/* Whether name is a temporary file of a compaction of base, and its pid. */
static int temp_of(const char *name, const char *base, long *pid)
{
    size_t n = strlen(base);
    if (name[0] != '.' || strncmp(name + 1, base, n) != 0 ||
        strncmp(name + 1 + n, TEMP_INFIX, strlen(TEMP_INFIX)) != 0)
        return 0;
    char *end;
    *pid = strtol(name + 1 + n + strlen(TEMP_INFIX), &end, 10);
    return *pid > 0 && *end == '-';
}

/* Remove what compactions of this log left when they were killed. */
static void remove_stale_temps(job *j)
{
    int fd = dup(j->dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *e;
    long pid;
    while ((e = readdir(d))) {
        struct stat st;
        if (temp_of(e->d_name, j->base, &pid) && kill((pid_t)pid, 0) < 0 && errno == ESRCH &&
            fstatat(j->dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && st.st_uid == geteuid())
            unlinkat(j->dir_fd, e->d_name, 0);
    }
    closedir(d);
}

/* ---- writing the new file ---------------------------------------------- */

static int create_temp(job *j)
{
    int n = snprintf(j->temp, sizeof j->temp, "%s/.%s%s%ld-XXXXXX", j->dir, j->base,
                     TEMP_INFIX, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof j->temp) {
        j->temp[0] = 0;
        return fail(j, MF_COMPACT_FAILED, "path too long for a temporary file beside it");
    }
    j->temp_fd = mkostemp(j->temp, O_CLOEXEC); /* O_EXCL, mode 0600: private */
    if (j->temp_fd < 0) {
        int why = errno;
        j->temp[0] = 0;
        return fail(j, MF_COMPACT_FAILED, "cannot create a file in %s: %s", j->dir,
                    strerror(why));
    }
    return 0;
}

static int put(job *j, const void *p, size_t n)
{
    const char *c = p;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(j->temp_fd, c + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return fail(j, MF_COMPACT_FAILED, "cannot write %s: %s", j->temp, strerror(errno));
        done += (size_t)w;
    }
    j->offset += n;
    return 0;
}

static int step(job *j, enum mf_compact_step s, uint64_t n)
{
    const mf_compact_options *o = j->opt;
    if (o && o->progress && o->progress(o->arg, s, n) && s != MF_COMPACT_STEP_RENAMED)
        return fail(j, MF_COMPACT_FAILED, "compaction stopped; the log is left as it was");
    return 0;
}

/* Compress n bytes into one frame at the current offset: the header f
 * (what the frame holds; its magic, sizes and checksums are set here),
 * then the zstd frame.  Its size, header included, in *size. */
static int put_frame(job *j, mf_compact_frame *f, const void *p, size_t n, uint32_t *size)
{
    size_t z = ZSTD_compress2(j->cctx, j->zbuf, j->zcap, p, n);
    if (ZSTD_isError(z))
        return fail(j, MF_COMPACT_FAILED, "zstd: %s", ZSTD_getErrorName(z));
    memcpy(f->magic, MF_COMPACT_FRAME_MAGIC, sizeof f->magic);
    f->payload_size = (uint32_t)z;
    f->payload_check = mf_crc32c(0, j->zbuf, z);
    f->header_check = mf_compact_frame_sum(f);
    *size = (uint32_t)(sizeof *f + z);
    if (put(j, f, sizeof *f) < 0)
        return -1;
    return put(j, j->zbuf, z);
}

/* The header prefix as it will stand at offset 0, and the rest's frame. */
static int put_head(job *j, mf_compact_index *ix)
{
    size_t len;
    const uint8_t *h = mf_chunk_source_header(j->src, &len);
    const mf_file_header *fh = (const void *)h;
    uint64_t prefix = sizeof *fh + (uint64_t)fh->argv_len;
    ix->header_len = (uint32_t)len;
    ix->prefix_len = (uint32_t)(prefix < len ? prefix : len);
    uint8_t head[sizeof *fh];
    memcpy(head, h, sizeof head);
    ((mf_file_header *)(void *)head)->flags |= MF_HEADER_COMPACT;
    if (put(j, head, sizeof head) < 0 ||
        put(j, h + sizeof head, ix->prefix_len - sizeof head) < 0)
        return -1;
    ix->head_offset = j->offset;
    ix->head_size = 0;
    mf_compact_frame f = { .index = 0, .live_len = ix->header_len, .start = ix->prefix_len,
                           .encoding = MF_COMPACT_RAW };
    if (len > ix->prefix_len)
        return put_frame(j, &f, h + ix->prefix_len, len - ix->prefix_len, &ix->head_size);
    return 0;
}

/* Encode chunk i; keep it raw if the encoding does not decode to it. */
static int put_chunk(job *j, size_t i, const mf_chunk_info *info, mf_compact_index *ix)
{
    long n = mf_chunk_source_read(j->src, i, j->chunk, j->err, j->errlen);
    if (n < 0)
        return MF_COMPACT_FAILED;
    if (mf_grow((void **)&j->entries, &j->cap_entries, j->n_entries + 1, sizeof *j->entries) < 0)
        return fail(j, MF_COMPACT_FAILED, "out of memory");
    const uint8_t *enc;
    mf_chunk_summary sum;
    size_t enc_len = mf_codec_encode(j->codec, j->chunk, (size_t)n, &enc, &sum);
    char why[256];
    int dense = mf_codec_decode(j->codec, enc, enc_len, j->check, why, sizeof why) == n &&
                memcmp(j->check, j->chunk, (size_t)n) == 0;
    if (!dense) /* the encoder's buffers are intact: decoding does not touch them */
        j->res->raw_chunks++;
    mf_compact_entry *e = &j->entries[j->n_entries++];
    *e = (mf_compact_entry){
        .index = info->index,
        .frame_offset = j->offset,
        .live_len = (uint32_t)n,
        .tid = info->tid,
        .encoding = dense ? MF_COMPACT_DENSE : MF_COMPACT_RAW,
        .flags = sum.timed ? MF_COMPACT_HAS_TIMES : 0,
        .min_time_ns = sum.timed ? sum.min_time_ns : 0,
        .max_time_ns = sum.max_time_ns,
        .records = sum.records,
    };
    ix->events += sum.records;
    mf_compact_frame f = { .index = e->index, .live_len = e->live_len, .tid = e->tid,
                           .encoding = e->encoding, .flags = e->flags, .records = e->records,
                           .min_time_ns = e->min_time_ns, .max_time_ns = e->max_time_ns };
    return put_frame(j, &f, dense ? enc : j->chunk, dense ? enc_len : (size_t)n, &e->frame_size);
}

static int put_index(job *j, mf_compact_index *ix)
{
    ix->n_chunks = (uint32_t)j->n_entries;
    size_t entries = j->n_entries * sizeof *j->entries;
    mf_compact_trailer t = { .index_offset = j->offset,
                             .index_size = (uint32_t)(sizeof *ix + entries),
                             .layout = MF_COMPACT_LAYOUT };
    memcpy(t.magic, MF_COMPACT_MAGIC, 8);
    t.index_check = mf_crc32c(mf_crc32c(0, ix, sizeof *ix), j->entries, entries);
    t.trailer_check = mf_crc32c(0, &t, offsetof(mf_compact_trailer, trailer_check));
    if (put(j, ix, sizeof *ix) < 0 || put(j, j->entries, entries) < 0)
        return -1;
    return put(j, &t, sizeof t);
}

static int setup_compression(job *j)
{
    int level = j->opt && j->opt->level ? j->opt->level : DEFAULT_LEVEL;
    j->zcap = ZSTD_compressBound(3 * MF_CHUNK_SIZE);
    j->cctx = ZSTD_createCCtx();
    j->codec = mf_codec_new();
    j->chunk = malloc(MF_CHUNK_SIZE);
    j->check = malloc(MF_CHUNK_SIZE);
    j->zbuf = malloc(j->zcap);
    if (!j->cctx || !j->codec || !j->chunk || !j->check || !j->zbuf)
        return fail(j, MF_COMPACT_FAILED, "out of memory");
    if (ZSTD_isError(ZSTD_CCtx_setParameter(j->cctx, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(j->cctx, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(j->cctx, ZSTD_c_contentSizeFlag, 1)))
        return fail(j, MF_COMPACT_FAILED, "zstd refuses level %d", level);
    return 0;
}

/* Everything of the compact form into the new file, synced. */
static int write_compact(job *j)
{
    mf_compact_index ix = { .live_size = (uint64_t)j->st.st_size };
    size_t n;
    const mf_chunk_info *chunks = mf_chunk_source_chunks(j->src, &n);
    int rc = setup_compression(j);
    if (rc == 0)
        rc = put_head(j, &ix);
    for (size_t i = 0; i < n && rc == 0; i++)
        if ((rc = put_chunk(j, i, &chunks[i], &ix)) == 0)
            rc = step(j, MF_COMPACT_STEP_FRAME, i + 1);
    if (rc == 0)
        rc = put_index(j, &ix);
    if (rc == 0 && fchmod(j->temp_fd, j->st.st_mode & 07777) < 0)
        rc = fail(j, MF_COMPACT_FAILED, "cannot set the mode of %s: %s", j->temp, strerror(errno));
    if (rc == 0 && geteuid() == 0 && j->st.st_uid != 0)
        (void)!fchown(j->temp_fd, j->st.st_uid, j->st.st_gid); /* root compacts a user's log */
    if (rc == 0 && fsync(j->temp_fd) < 0)
        rc = fail(j, MF_COMPACT_FAILED, "cannot sync %s: %s", j->temp, strerror(errno));
    j->res->events = ix.events;
    j->res->chunks = n;
    return rc;
}

/* The log is still the file we read, as it was when we read it. */
static int check_unchanged(job *j)
{
    struct stat now, named;
    if (fstat(j->fd, &now) < 0 || fstatat(j->dir_fd, j->base, &named, AT_SYMLINK_NOFOLLOW) < 0)
        return fail(j, MF_COMPACT_FAILED, "cannot stat it again: %s", strerror(errno));
    if (named.st_dev != j->st.st_dev || named.st_ino != j->st.st_ino)
        return fail(j, MF_COMPACT_FAILED, "replaced by another file while it was compacted; "
                    "left alone");
    if (now.st_size != j->st.st_size || now.st_mtim.tv_sec != j->st.st_mtim.tv_sec ||
        now.st_mtim.tv_nsec != j->st.st_mtim.tv_nsec)
        return fail(j, MF_COMPACT_FAILED, "changed while it was compacted; left as it is");
    return 0;
}

/* Rename the new file over the log and make the rename durable. */
static int replace(job *j)
{
    int rc = step(j, MF_COMPACT_STEP_SYNCED, j->n_entries);
    if (rc == 0)
        rc = check_unchanged(j);
    if (rc == 0 && renameat(j->dir_fd, strrchr(j->temp, '/') + 1, j->dir_fd, j->base) < 0)
        rc = fail(j, MF_COMPACT_FAILED, "cannot rename %s over it: %s", j->temp,
                  strerror(errno));
    if (rc < 0)
        return rc;
    j->temp[0] = 0;
    step(j, MF_COMPACT_STEP_RENAMED, j->n_entries);
    if (fsync(j->dir_fd) < 0)
        return fail(j, MF_COMPACT_FAILED, "compacted, but syncing folder %s failed: %s", j->dir,
                    strerror(errno));
    struct stat st;
    if (fstat(j->temp_fd, &st) == 0)
        j->res->bytes_after = (uint64_t)st.st_size;
    j->res->bytes_before = (uint64_t)j->st.st_blocks * 512;
    return 0;
}

/* The live log's header, straight from the file. */
static int read_header(job *j, mf_file_header *h)
{
    ssize_t n = pread(j->fd, h, sizeof *h, 0);
    if (n != (ssize_t)sizeof *h || memcmp(h->magic, MF_LOG_MAGIC, 8) != 0)
        return fail(j, MF_COMPACT_REFUSED, "not a memflow log (no MEMFLOW header at offset 0)");
    return 0;
}

static int run(job *j)
{
    mf_file_header h;
    int rc = open_live(j);
    if (rc == 0)
        rc = split_path(j);
    if (rc == 0)
        rc = read_header(j, &h);
    if (rc < 0 || (h.flags & MF_HEADER_COMPACT))
        return rc; /* already compact: nothing to do */
    if ((rc = check_writer(j, &h)) < 0)
        return rc;
    int fd = dup(j->fd);
    if (fd < 0)
        return fail(j, MF_COMPACT_FAILED, "dup: %s", strerror(errno));
    if (mf_chunk_source_open_fd(fd, j->path, &j->src, j->err, j->errlen) < 0)
        return MF_COMPACT_REFUSED;
    if (mf_chunk_source_settle(j->src, j->err, j->errlen) < 0) /* keep damaged chunks' bytes */
        return MF_COMPACT_FAILED;
    j->dir_fd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (j->dir_fd < 0)
        return fail(j, MF_COMPACT_FAILED, "cannot open folder %s: %s", j->dir, strerror(errno));
    remove_stale_temps(j);
    if ((rc = create_temp(j)) < 0 || (rc = write_compact(j)) < 0)
        return rc;
    return replace(j);
}

int mf_compact_log_with(const char *path, const mf_compact_options *opt,
                        mf_compact_result *result, char *err, size_t errlen)
{
    mf_compact_result ignored;
    if (!result)
        result = &ignored;
    memset(result, 0, sizeof *result);
    job j = { .path = path, .opt = opt, .fd = -1, .dir_fd = -1, .temp_fd = -1,
              .res = result, .err = err, .errlen = errlen };
    int rc = run(&j);
    if (j.temp[0])
        unlinkat(j.dir_fd, strrchr(j.temp, '/') + 1, 0);
    if (rc < 0)
        memset(result, 0, sizeof *result);
    if (j.temp_fd >= 0)
        close(j.temp_fd);
    if (j.dir_fd >= 0)
        close(j.dir_fd);
    if (j.fd >= 0)
        close(j.fd);
    mf_chunk_source_close(j.src);
    ZSTD_freeCCtx(j.cctx);
    mf_codec_free(j.codec);
    free(j.chunk);
    free(j.check);
    free(j.zbuf);
    free(j.entries);
    return rc;
}

int mf_compact_log(const char *path, mf_compact_result *result, char *err, size_t errlen)
{
    return mf_compact_log_with(path, NULL, result, err, errlen);
}
