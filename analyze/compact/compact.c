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
    mf_compact_entry *early;         /* a writer's: chunks compacted while the log grew */
    size_t n_early, cap_early;
    uint32_t early_prefix;           /* a writer's: the bytes kept free at offset 0 */
    mf_compact_result own_res;       /* a writer's result until finish */
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

/* Whether name is a temporary file of a compaction (of base; NULL: of
 * any log), and its pid. */
static int temp_of(const char *name, const char *base, long *pid)
{
    const char *infix = strstr(name, TEMP_INFIX);
    if (name[0] != '.' || !infix || infix == name + 1)
        return 0;
    while (strstr(infix + 1, TEMP_INFIX))
        infix = strstr(infix + 1, TEMP_INFIX);
    if (base && ((size_t)(infix - name - 1) != strlen(base) ||
                 strncmp(name + 1, base, strlen(base)) != 0))
        return 0;
    char *end;
    *pid = strtol(infix + strlen(TEMP_INFIX), &end, 10);
    return *pid > 0 && *end == '-' && strlen(end + 1) == 6;
}

/* Remove what killed compactions (of logs named base; NULL: any) left in
 * the folder dir_fd: the process named in the file's name is gone, the file
 * is regular and ours.  How many were removed. */
static int remove_temps(int dir_fd, const char *base)
{
    int fd = dup(dir_fd), removed = 0;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    struct dirent *e;
    long pid;
    while ((e = readdir(d))) {
        struct stat st;
        if (temp_of(e->d_name, base, &pid) && kill((pid_t)pid, 0) < 0 && errno == ESRCH &&
            fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && st.st_uid == geteuid())
            removed += unlinkat(dir_fd, e->d_name, 0) == 0;
    }
    closedir(d);
    return removed;
}

static void remove_stale_temps(job *j)
{
    remove_temps(j->dir_fd, j->base);
}

int mf_compact_clean_folder(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int n = remove_temps(fd, NULL);
    close(fd);
    return n;
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

/* pwrite n bytes at offset at of the new file (its size unchanged). */
static int put_at(job *j, const void *p, size_t n, uint64_t at)
{
    const char *c = p;
    for (size_t done = 0; done < n;) {
        ssize_t w = pwrite(j->temp_fd, c + done, n - done, (off_t)(at + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return fail(j, MF_COMPACT_FAILED, "cannot write %s: %s", j->temp, strerror(errno));
        done += (size_t)w;
    }
    return 0;
}

/* Append n bytes to the new file. */
static int put(job *j, const void *p, size_t n)
{
    if (put_at(j, p, n, j->offset) < 0)
        return -1;
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

/* The bytes of chunk 0 stored raw at offset 0: the file header and argv. */
static uint32_t prefix_of(const uint8_t *h, size_t len)
{
    uint64_t prefix = sizeof(mf_file_header) + (uint64_t)((const mf_file_header *)(const void *)h)->argv_len;
    return (uint32_t)(prefix < len ? prefix : len);
}

/* The header prefix as it will stand at offset 0, and the rest's frame
 * (where the new file ends: right after the prefix, or after a writer's
 * frames, the prefix's place kept free for it). */
static int put_head(job *j, mf_compact_index *ix)
{
    size_t len;
    const uint8_t *h = mf_chunk_source_header(j->src, &len);
    const mf_file_header *fh = (const void *)h;
    ix->header_len = (uint32_t)len;
    ix->prefix_len = prefix_of(h, len);
    if (j->early_prefix && j->early_prefix != ix->prefix_len)
        return fail(j, MF_COMPACT_FAILED, "its header changed while it was compacted; left "
                    "as it is");
    uint8_t head[sizeof *fh];
    memcpy(head, h, sizeof head);
    ((mf_file_header *)(void *)head)->flags |= MF_HEADER_COMPACT;
    if (put_at(j, head, sizeof head, 0) < 0 ||
        put_at(j, h + sizeof head, ix->prefix_len - sizeof head, sizeof head) < 0)
        return -1;
    if (!j->early_prefix)
        j->offset = ix->prefix_len;
    ix->head_offset = j->offset;
    ix->head_size = 0;
    mf_compact_frame f = { .index = 0, .live_len = ix->header_len, .start = ix->prefix_len,
                           .encoding = MF_COMPACT_RAW };
    if (len > ix->prefix_len)
        return put_frame(j, &f, h + ix->prefix_len, len - ix->prefix_len, &ix->head_size);
    return 0;
}

/* Encode the n bytes of chunk index (thread tid) into a frame at the
 * current offset, or keep them raw if the encoding does not decode to
 * them; its entry in *e. */
static int put_bytes(job *j, uint64_t index, uint32_t tid, long n, mf_compact_entry *e)
{
    const uint8_t *enc;
    mf_chunk_summary sum;
    size_t enc_len = mf_codec_encode(j->codec, j->chunk, (size_t)n, &enc, &sum);
    char why[256];
    int dense = mf_codec_decode(j->codec, enc, enc_len, j->check, why, sizeof why) == n &&
                memcmp(j->check, j->chunk, (size_t)n) == 0;
    if (!dense) /* the encoder's buffers are intact: decoding does not touch them */
        j->res->raw_chunks++;
    *e = (mf_compact_entry){
        .index = index,
        .frame_offset = j->offset,
        .live_len = (uint32_t)n,
        .tid = tid,
        .encoding = dense ? MF_COMPACT_DENSE : MF_COMPACT_RAW,
        .flags = sum.timed ? MF_COMPACT_HAS_TIMES : 0,
        .min_time_ns = sum.timed ? sum.min_time_ns : 0,
        .max_time_ns = sum.max_time_ns,
        .records = sum.records,
    };
    mf_compact_frame f = { .index = e->index, .live_len = e->live_len, .tid = e->tid,
                           .encoding = e->encoding, .flags = e->flags, .records = e->records,
                           .min_time_ns = e->min_time_ns, .max_time_ns = e->max_time_ns };
    return put_frame(j, &f, dense ? enc : j->chunk, dense ? enc_len : (size_t)n, &e->frame_size);
}

/* Room for one more entry in *list. */
static mf_compact_entry *next_entry(job *j, mf_compact_entry **list, size_t *n, size_t *cap)
{
    if (mf_grow((void **)list, cap, *n + 1, sizeof **list) < 0) {
        fail(j, MF_COMPACT_FAILED, "out of memory");
        return NULL;
    }
    return &(*list)[(*n)++];
}

/* The frame a writer made of chunk info while the log grew, if the chunk
 * still reads as it did then (the same length: its bytes are final). */
static const mf_compact_entry *early_frame(job *j, const mf_chunk_info *info, size_t *from)
{
    while (*from < j->n_early && j->early[*from].index < info->index)
        (*from)++;
    if (*from >= j->n_early || j->early[*from].index != info->index)
        return NULL;
    uint64_t size = mf_chunk_source_file_size(j->src);
    uint64_t len = size > info->file_offset ? size - info->file_offset : 0;
    const mf_compact_entry *e = &j->early[*from];
    return e->live_len == (len < MF_CHUNK_SIZE ? len : MF_CHUNK_SIZE) ? e : NULL;
}

/* Chunk i into the index: the frame a writer made of it before, or a new one. */
static int put_chunk(job *j, size_t i, const mf_chunk_info *info, mf_compact_index *ix,
                     size_t *early_at)
{
    mf_compact_entry *e = next_entry(j, &j->entries, &j->n_entries, &j->cap_entries);
    if (!e)
        return MF_COMPACT_FAILED;
    const mf_compact_entry *done = early_frame(j, info, early_at);
    if (done) {
        *e = *done;
    } else {
        long n = mf_chunk_source_read(j->src, i, j->chunk, j->err, j->errlen);
        if (n < 0 || put_bytes(j, info->index, info->tid, n, e) < 0)
            return MF_COMPACT_FAILED;
    }
    ix->events += e->records;
    return 0;
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
    size_t early_at = 0;
    int rc = j->cctx ? 0 : setup_compression(j);
    if (rc == 0)
        rc = put_head(j, &ix);
    for (size_t i = 0; i < n && rc == 0; i++)
        if ((rc = put_chunk(j, i, &chunks[i], &ix, &early_at)) == 0)
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

/* The log's chunks, read through a source of its own descriptor, the
 * bytes of chunks whose header was lost kept. */
static int open_source(job *j)
{
    int fd = dup(j->fd);
    if (fd < 0)
        return fail(j, MF_COMPACT_FAILED, "dup: %s", strerror(errno));
    if (mf_chunk_source_open_fd(fd, j->path, &j->src, j->err, j->errlen) < 0)
        return MF_COMPACT_REFUSED;
    if (mf_chunk_source_settle(j->src, j->err, j->errlen) < 0) /* keep damaged chunks' bytes */
        return MF_COMPACT_FAILED;
    return 0;
}

/* The log's folder, opened, and what killed compactions of it left removed. */
static int open_dir(job *j)
{
    j->dir_fd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (j->dir_fd < 0)
        return fail(j, MF_COMPACT_FAILED, "cannot open folder %s: %s", j->dir, strerror(errno));
    remove_stale_temps(j);
    return 0;
}

/* The live log at j->path opened, named and its header read into *h. */
static int open_log(job *j, mf_file_header *h)
{
    int rc = open_live(j);
    if (rc == 0)
        rc = split_path(j);
    if (rc == 0)
        rc = read_header(j, h);
    return rc;
}

static int run(job *j)
{
    mf_file_header h;
    int rc = open_log(j, &h);
    if (rc < 0 || (h.flags & MF_HEADER_COMPACT))
        return rc; /* already compact: nothing to do */
    if ((rc = check_writer(j, &h)) < 0 || (rc = open_source(j)) < 0 || (rc = open_dir(j)) < 0 ||
        (rc = create_temp(j)) < 0 || (rc = write_compact(j)) < 0)
        return rc;
    return replace(j);
}

/* Remove the new file unless it replaced the log; free everything. */
static void job_end(job *j)
{
    if (j->temp[0])
        unlinkat(j->dir_fd, strrchr(j->temp, '/') + 1, 0);
    if (j->temp_fd >= 0)
        close(j->temp_fd);
    if (j->dir_fd >= 0)
        close(j->dir_fd);
    if (j->fd >= 0)
        close(j->fd);
    mf_chunk_source_close(j->src);
    ZSTD_freeCCtx(j->cctx);
    mf_codec_free(j->codec);
    free(j->chunk);
    free(j->check);
    free(j->zbuf);
    free(j->entries);
    free(j->early);
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
    if (rc < 0)
        memset(result, 0, sizeof *result);
    job_end(&j);
    return rc;
}

/* ---- compaction while the log grows ------------------------------------- */

struct mf_compact_writer {
    job j;
    char path[PATH_MAX];
    mf_compact_options opt;
};

/* The call's message buffer for what fails. */
static job *writer_job(mf_compact_writer *w, char *err, size_t errlen)
{
    w->j.err = err;
    w->j.errlen = errlen;
    return &w->j;
}

static int writer_start(mf_compact_writer *w, dev_t dev, ino_t ino)
{
    job *j = &w->j;
    mf_file_header h;
    int rc = open_log(j, &h);
    if (rc < 0)
        return rc;
    if (j->st.st_dev != dev || j->st.st_ino != ino)
        return fail(j, MF_COMPACT_REFUSED, "is no longer the file its program writes");
    if (h.flags & MF_HEADER_COMPACT)
        return fail(j, MF_COMPACT_REFUSED, "already compact, yet still written");
    if (sizeof h + (uint64_t)h.argv_len >= MF_CHUNK_SIZE)
        return fail(j, MF_COMPACT_REFUSED, "its header says argv is %u bytes long", h.argv_len);
    j->early_prefix = (uint32_t)(sizeof h + h.argv_len);
    if ((rc = open_dir(j)) < 0 || (rc = create_temp(j)) < 0 || (rc = setup_compression(j)) < 0)
        return rc;
    j->offset = j->early_prefix; /* offset 0 stays zeros until the end: no log header */
    return 0;
}

mf_compact_writer *mf_compact_writer_open(const char *path, dev_t dev, ino_t ino,
                                          const mf_compact_options *opt, char *err,
                                          size_t errlen)
{
    mf_compact_writer *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(w->path, sizeof w->path, "%s", path);
    if (opt)
        w->opt = *opt;
    w->j = (job){ .path = w->path, .opt = &w->opt, .fd = -1, .dir_fd = -1, .temp_fd = -1,
                  .res = &w->j.own_res, .err = err, .errlen = errlen };
    if (strlen(path) >= sizeof w->path) {
        fail(&w->j, MF_COMPACT_REFUSED, "path too long");
        mf_compact_writer_abandon(w);
        return NULL;
    }
    if (writer_start(w, dev, ino) < 0) {
        mf_compact_writer_abandon(w);
        return NULL;
    }
    return w;
}

int mf_compact_writer_add(mf_compact_writer *w, uint64_t index, char *err, size_t errlen)
{
    job *j = writer_job(w, err, errlen);
    uint64_t at = index * MF_CHUNK_SIZE;
    ssize_t n = index ? mf_read_full(j->fd, j->chunk, MF_CHUNK_SIZE, at) : -1;
    if (n < 0)
        return fail(j, MF_COMPACT_FAILED, "offset %llu: cannot read: %s", (unsigned long long)at,
                    index ? strerror(errno) : "chunk 0 is the header");
    const mf_chunk_header *ch = (const void *)j->chunk;
    if (n < (ssize_t)sizeof *ch || ch->magic != MF_CHUNK_MAGIC || ch->index != index)
        return fail(j, MF_COMPACT_FAILED, "offset %llu: chunk %llu is not in the file as it "
                    "was said to be", (unsigned long long)at, (unsigned long long)index);
    memset(j->chunk + n, 0, MF_CHUNK_SIZE - (size_t)n);
    mf_compact_entry *e = next_entry(j, &j->early, &j->n_early, &j->cap_early);
    if (!e || put_bytes(j, index, ch->tid, (long)n, e) < 0)
        return MF_COMPACT_FAILED;
    if (j->n_early > 1 && e[-1].index >= e->index) { /* kept in index order */
        mf_compact_entry last = *e;
        size_t k = j->n_early - 1;
        for (; k > 0 && j->early[k - 1].index >= last.index; k--)
            j->early[k] = j->early[k - 1];
        j->early[k] = last;
        if (k + 1 < j->n_early && j->early[k + 1].index == last.index) /* twice: the later */
            memmove(&j->early[k + 1], &j->early[k + 2],
                    (--j->n_early - k - 1) * sizeof *j->early);
    }
    return 0;
}

int mf_compact_writer_finish(mf_compact_writer *w, const mf_compact_options *opt,
                             mf_compact_result *result, char *err, size_t errlen)
{
    job *j = writer_job(w, err, errlen);
    if (opt)
        w->opt.progress = opt->progress, w->opt.arg = opt->arg;
    mf_file_header h;
    mf_compact_result ignored;
    if (!result)
        result = &ignored;
    int rc = fstat(j->fd, &j->st) < 0 ? fail(j, MF_COMPACT_FAILED, "cannot stat: %s",
                                             strerror(errno))
                                      : read_header(j, &h);
    if (rc == 0 && (rc = check_writer(j, &h)) == 0 && (rc = open_source(j)) == 0 &&
        (rc = write_compact(j)) == 0)
        rc = replace(j);
    *result = rc < 0 ? (mf_compact_result){ 0 } : *j->res;
    job_end(j);
    free(w);
    return rc;
}

void mf_compact_writer_abandon(mf_compact_writer *w)
{
    if (!w)
        return;
    job_end(&w->j);
    free(w);
}

int mf_compact_log(const char *path, mf_compact_result *result, char *err, size_t errlen)
{
    return mf_compact_log_with(path, NULL, result, err, errlen);
}
