/*
 * chunk_source.c - the chunks of a live log, read with pread.
 *
 * The file is never mapped: a log cut short while we read it gives short
 * reads, not SIGBUS.  Chunks are found by walking the file's data extents
 * (SEEK_DATA), so the holes of a sparse file cost neither reads nor memory,
 * and only chunks whose header was written are listed.  A live log that is
 * still being written can be looked at again (mf_chunk_source_refresh):
 * chunks claimed since, and chunks that were claimed but not yet written,
 * are picked up.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chunk_source.h"
#include "grow.h"

struct mf_chunk_source {
    int fd;
    char *path;
    uint8_t *header;          /* chunk 0 as read */
    size_t header_len;
    mf_chunk_info *chunks;
    size_t n_chunks, cap_chunks;
    uint64_t next_index;      /* the first chunk index not examined yet */
    uint64_t *pending;        /* chunks claimed but not written when examined */
    size_t n_pending, cap_pending;
    uint64_t file_size;       /* at open or the last refresh */
};

/* pread until len bytes or the end of the file; the byte count, or -1. */
static ssize_t read_full(int fd, void *buf, size_t len, uint64_t offset)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(offset + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* Does the file start like a log?  One damaged magic byte is let through
 * for log_header.c to judge with the header checksum. */
static int looks_like_log(const uint8_t *bytes, size_t len)
{
    int differ = 0;
    for (size_t i = 0; i < 8 && i < len; i++)
        differ += bytes[i] != (uint8_t)MF_LOG_MAGIC[i];
    return len >= 8 && differ <= 1;
}

static int read_header(mf_chunk_source *s, char *err, size_t errlen)
{
    ssize_t n = read_full(s->fd, s->header, MF_CHUNK_SIZE, 0);
    if (n < 0) {
        snprintf(err, errlen, "%s: cannot read: %s", s->path, strerror(errno));
        return -1;
    }
    s->header_len = (size_t)n;
    if (n == 0) {
        snprintf(err, errlen, "%s: empty file, not a memflow log", s->path);
        return -1;
    }
    if (!looks_like_log(s->header, s->header_len)) {
        snprintf(err, errlen, "%s: not a memflow log (no MEMFLOW magic at offset 0)", s->path);
        return -1;
    }
    return 0;
}

/* The first offset at or after offset that holds data, or the file size. */
static uint64_t next_data(int fd, uint64_t offset, uint64_t size)
{
    off_t at = lseek(fd, (off_t)offset, SEEK_DATA);
    if (at < 0)
        return errno == ENXIO ? size : offset; /* no SEEK_DATA: look at every chunk */
    return (uint64_t)at;
}

/* Look at chunk index: list it if its header was written, else remember it. */
static int examine(mf_chunk_source *s, uint64_t index, uint64_t size)
{
    mf_chunk_header ch;
    uint64_t offset = index * MF_CHUNK_SIZE;
    ssize_t n = read_full(s->fd, &ch, sizeof ch, offset);
    if (n < 0)
        return -1;
    if (n < (ssize_t)sizeof ch || ch.magic == 0) {
        if (offset < size && n == (ssize_t)sizeof ch) {
            if (mf_grow((void **)&s->pending, &s->cap_pending, s->n_pending + 1,
                        sizeof *s->pending) < 0)
                return -1;
            s->pending[s->n_pending++] = index;
        }
        return 0;
    }
    if (mf_grow((void **)&s->chunks, &s->cap_chunks, s->n_chunks + 1, sizeof *s->chunks) < 0)
        return -1;
    mf_chunk_info *c = &s->chunks[s->n_chunks++];
    memset(c, 0, sizeof *c);
    c->index = index;
    c->file_offset = offset;
    c->tid = ch.tid;
    return 0;
}

static int compare_chunks(const void *a, const void *b)
{
    uint64_t x = ((const mf_chunk_info *)a)->index, y = ((const mf_chunk_info *)b)->index;
    return x < y ? -1 : x > y;
}

/* List the chunks not examined yet, and the pending ones written since. */
static int scan(mf_chunk_source *s, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(s->fd, &st) < 0) {
        snprintf(err, errlen, "%s: cannot stat: %s", s->path, strerror(errno));
        return -1;
    }
    uint64_t size = (uint64_t)st.st_size;
    s->file_size = size;
    size_t n_old = s->n_pending, n_before = s->n_chunks;
    uint64_t *old = s->pending;
    s->pending = NULL;
    s->n_pending = s->cap_pending = 0;
    int rc = 0;
    for (size_t i = 0; i < n_old && rc == 0; i++)
        rc = examine(s, old[i], size);
    free(old);
    uint64_t index = s->next_index ? s->next_index : 1;
    while (rc == 0 && index * MF_CHUNK_SIZE < size) {
        uint64_t data = next_data(s->fd, index * MF_CHUNK_SIZE, size);
        if (data >= size)
            break;
        index = data / MF_CHUNK_SIZE;
        rc = examine(s, index, size);
        index++;
    }
    s->next_index = index > s->next_index ? index : s->next_index;
    if (rc < 0) {
        snprintf(err, errlen, "%s: cannot read: %s", s->path,
                 errno ? strerror(errno) : "out of memory");
        return -1;
    }
    if (n_old && s->n_chunks > n_before)
        qsort(s->chunks, s->n_chunks, sizeof *s->chunks, compare_chunks);
    return 0;
}

int mf_chunk_source_open(const char *path, mf_chunk_source **out, char *err, size_t errlen)
{
    *out = NULL;
    mf_chunk_source *s = calloc(1, sizeof *s);
    if (s)
        s->fd = -1;
    if (!s || !(s->path = strdup(path)) || !(s->header = malloc(MF_CHUNK_SIZE))) {
        snprintf(err, errlen, "%s: out of memory", path);
        mf_chunk_source_close(s);
        return -1;
    }
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (s->fd < 0 || fstat(s->fd, &st) < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        mf_chunk_source_close(s);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        mf_chunk_source_close(s);
        return -1;
    }
    if (read_header(s, err, errlen) < 0 || scan(s, err, errlen) < 0) {
        mf_chunk_source_close(s);
        return -1;
    }
    *out = s;
    return 0;
}

const uint8_t *mf_chunk_source_header(const mf_chunk_source *s, size_t *len)
{
    *len = s->header_len;
    return s->header;
}

const mf_chunk_info *mf_chunk_source_chunks(const mf_chunk_source *s, size_t *n)
{
    *n = s->n_chunks;
    return s->chunks;
}

long mf_chunk_source_read_at(mf_chunk_source *s, size_t i, uint32_t offset, uint8_t *buf,
                             size_t len, char *err, size_t errlen)
{
    if (offset >= MF_CHUNK_SIZE)
        len = 0;
    else if (len > MF_CHUNK_SIZE - offset)
        len = MF_CHUNK_SIZE - offset;
    uint64_t at = s->chunks[i].file_offset + offset;
    ssize_t n = read_full(s->fd, buf, len, at);
    if (n < 0) {
        snprintf(err, errlen, "%s: offset %llu: cannot read: %s", s->path,
                 (unsigned long long)at, strerror(errno));
        return -1;
    }
    memset(buf + n, 0, len - (size_t)n);
    return (long)n;
}

long mf_chunk_source_read(mf_chunk_source *s, size_t i, uint8_t *buf, char *err, size_t errlen)
{
    return mf_chunk_source_read_at(s, i, 0, buf, MF_CHUNK_SIZE, err, errlen);
}

uint64_t mf_chunk_source_file_size(const mf_chunk_source *s)
{
    return s->file_size;
}

int mf_chunk_source_refresh(mf_chunk_source *s, char *err, size_t errlen)
{
    mf_file_header h;
    if (read_full(s->fd, &h, sizeof h, 0) == (ssize_t)sizeof h)
        memcpy(s->header, &h, sizeof h);
    return scan(s, err, errlen);
}

const char *mf_chunk_source_path(const mf_chunk_source *s)
{
    return s->path;
}

void mf_chunk_source_close(mf_chunk_source *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    free(s->path);
    free(s->header);
    free(s->chunks);
    free(s->pending);
    free(s);
}
