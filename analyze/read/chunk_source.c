/*
 * chunk_source.c - the chunks of a live log, read with pread.
 *
 * The file is never mapped: a log cut short while we read it gives short
 * reads, not SIGBUS.  Chunks are found by walking the file's data extents
 * (SEEK_DATA), so the holes of a sparse file cost neither reads nor memory,
 * and only chunks whose header was written are listed.  A live log that is
 * still being written can be looked at again (mf_chunk_source_refresh):
 * chunks claimed since, and chunks that were claimed but not yet written,
 * are picked up.  A compact log (MF_HEADER_COMPACT) is handed to
 * compact_source.c, which gives back the same chunks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chunk_source.h"
#include "compact.h"
#include "compact_layout.h"
#include "damage.h"
#include "grow.h"

/* A decoded chunk of a compact log.  The reader reads a chunk in pieces
 * (windows of its segments, several chunks in turn), and a compact chunk
 * is decoded whole: the last CACHED_CHUNKS decoded are kept, so each is
 * decoded about once while a merge goes through them. */
#define CACHED_CHUNKS 16
typedef struct decoded {
    size_t index;             /* chunks[] index; SIZE_MAX: empty */
    long len;                 /* bytes the chunk holds, the rest reads zero */
    unsigned used;            /* cache_clock at the last use */
    uint8_t *bytes;           /* MF_CHUNK_SIZE */
} decoded;

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
    mf_compact_source *compact; /* the compact form's reader (MF_HEADER_COMPACT) */
    decoded *cache;           /* its recently decoded chunks (CACHED_CHUNKS) */
    unsigned cache_clock;
    uint64_t file_size;       /* at open or the last refresh */
    mf_damage damage;         /* what open found (a flipped COMPACT flag) */
};

ssize_t mf_read_full(int fd, void *buf, size_t len, uint64_t offset)
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
    ssize_t n = mf_read_full(s->fd, s->header, MF_CHUNK_SIZE, 0);
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
    ssize_t n = mf_read_full(s->fd, &ch, sizeof ch, offset);
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
        /* chunks skipped as holes may be written later (a thread's chunk
         * still staged while a later one is in the file): looked at again */
        for (; rc == 0 && index < data / MF_CHUNK_SIZE; index++)
            if (mf_grow((void **)&s->pending, &s->cap_pending, s->n_pending + 1,
                        sizeof *s->pending) < 0)
                rc = -1;
            else
                s->pending[s->n_pending++] = index;
        if (rc < 0)
            break;
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
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    return mf_chunk_source_open_fd(fd, path, out, err, errlen);
}

/* Whether the file's bytes say compact form: a frame header where the file
 * header and argv end, or a compact trailer at the end. */
static int looks_compact(const mf_chunk_source *s)
{
    const mf_file_header *h = (const void *)s->header;
    uint64_t prefix = sizeof *h + (uint64_t)h->argv_len;
    char magic[8];
    struct stat st;
    if (prefix + 4 <= s->header_len && memcmp(s->header + prefix, MF_COMPACT_FRAME_MAGIC, 4) == 0)
        return 1;
    return fstat(s->fd, &st) == 0 && st.st_size >= (off_t)sizeof(mf_compact_trailer) &&
           mf_read_full(s->fd, magic, 8, (uint64_t)st.st_size - sizeof(mf_compact_trailer)) == 8 &&
           memcmp(magic, MF_COMPACT_MAGIC, 8) == 0;
}

/* Whether chunk 1 of the file is a live chunk: its header in its place. */
static int looks_live(const mf_chunk_source *s)
{
    mf_chunk_header ch;
    return mf_read_full(s->fd, &ch, sizeof ch, MF_CHUNK_SIZE) == (ssize_t)sizeof ch &&
           ch.magic == MF_CHUNK_MAGIC && ch.index == 1;
}

/* A compact log: its chunks come from compact_source.c.  The header's
 * COMPACT flag (not covered by its checksum) decides, unless the bytes say
 * the other form: then the flag was damaged, and said so. */
static int open_form(mf_chunk_source *s, char *err, size_t errlen)
{
    const mf_file_header *h = (const void *)s->header;
    int compact = (h->flags & MF_HEADER_COMPACT) != 0;
    if (compact != looks_compact(s) && (compact ? looks_live(s) : 1)) {
        mf_damage_add(&s->damage, s->path, offsetof(mf_file_header, flags),
                      "the header's flags say the %s form (bit 2), but the file is in the %s "
                      "form: read as it is", compact ? "compact" : "live",
                      compact ? "live" : "compact");
        compact = !compact;
    }
    if (!compact)
        return scan(s, err, errlen);
    if (mf_compact_source_open(s->fd, s->path, &s->compact, err, errlen) < 0)
        return -1;
    const mf_damage *d = mf_compact_source_damage(s->compact);
    for (size_t i = 0; i < d->n; i++)
        mf_damage_add_line(&s->damage, d->lines[i]);
    s->damage.more += d->more;
    return 0;
}

int mf_chunk_source_open_fd(int fd, const char *path, mf_chunk_source **out, char *err,
                            size_t errlen)
{
    *out = NULL;
    mf_chunk_source *s = calloc(1, sizeof *s);
    if (s)
        s->fd = fd;
    if (!s || !(s->path = strdup(path)) || !(s->header = malloc(MF_CHUNK_SIZE))) {
        snprintf(err, errlen, "%s: out of memory", path);
        if (!s)
            close(fd);
        mf_chunk_source_close(s);
        return -1;
    }
    struct stat st;
    if (fstat(s->fd, &st) < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        mf_chunk_source_close(s);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        mf_chunk_source_close(s);
        return -1;
    }
    if (read_header(s, err, errlen) < 0 || open_form(s, err, errlen) < 0) {
        mf_chunk_source_close(s);
        return -1;
    }
    *out = s;
    return 0;
}

const uint8_t *mf_chunk_source_header(const mf_chunk_source *s, size_t *len)
{
    if (s->compact)
        return mf_compact_source_header(s->compact, len);
    *len = s->header_len;
    return s->header;
}

const mf_chunk_info *mf_chunk_source_chunks(const mf_chunk_source *s, size_t *n)
{
    if (s->compact)
        return mf_compact_source_chunks(s->compact, n);
    *n = s->n_chunks;
    return s->chunks;
}

/* The cache entry holding chunk i of a compact log, decoding it into the
 * least recently used entry if none does; NULL with err set and *rc (-1 or
 * MF_CHUNK_DAMAGED) on failure. */
static decoded *decoded_chunk(mf_chunk_source *s, size_t i, long *rc, char *err, size_t errlen)
{
    *rc = -1;
    if (!s->cache && !(s->cache = calloc(CACHED_CHUNKS, sizeof *s->cache))) {
        snprintf(err, errlen, "%s: out of memory", s->path);
        return NULL;
    }
    decoded *victim = &s->cache[0];
    for (int k = 0; k < CACHED_CHUNKS; k++) {
        decoded *d = &s->cache[k];
        if (d->bytes && d->index == i) {
            d->used = ++s->cache_clock;
            return d;
        }
        if (!d->bytes || d->used < victim->used)
            victim = d;
        if (!d->bytes)
            break;
    }
    if (!victim->bytes && !(victim->bytes = malloc(MF_CHUNK_SIZE))) {
        snprintf(err, errlen, "%s: out of memory", s->path);
        return NULL;
    }
    victim->index = SIZE_MAX;
    victim->len = mf_compact_source_read(s->compact, i, victim->bytes, err, errlen);
    if (victim->len < 0) {
        *rc = victim->len;
        return NULL;
    }
    victim->index = i;
    victim->used = ++s->cache_clock;
    return victim;
}

/* mf_chunk_source_read_at for a compact log: from the decoded chunk. */
static long read_compact_at(mf_chunk_source *s, size_t i, uint32_t offset, uint8_t *buf,
                            size_t len, char *err, size_t errlen)
{
    if (offset >= MF_CHUNK_SIZE)
        return 0;
    if (len > MF_CHUNK_SIZE - offset)
        len = MF_CHUNK_SIZE - offset;
    long rc;
    decoded *d = decoded_chunk(s, i, &rc, err, errlen);
    if (!d)
        return rc;
    memcpy(buf, d->bytes + offset, len);
    long held = d->len > (long)offset ? d->len - (long)offset : 0;
    return held < (long)len ? held : (long)len;
}

long mf_chunk_source_read_at(mf_chunk_source *s, size_t i, uint32_t offset, uint8_t *buf,
                             size_t len, char *err, size_t errlen)
{
    if (s->compact)
        return read_compact_at(s, i, offset, buf, len, err, errlen);
    if (offset >= MF_CHUNK_SIZE)
        len = 0;
    else if (len > MF_CHUNK_SIZE - offset)
        len = MF_CHUNK_SIZE - offset;
    uint64_t at = s->chunks[i].file_offset + offset;
    ssize_t n = mf_read_full(s->fd, buf, len, at);
    if (n < 0) {
        snprintf(err, errlen, "%s: offset %llu: cannot read: %s", s->path,
                 (unsigned long long)at, strerror(errno));
        return -1;
    }
    memset(buf + n, 0, len - (size_t)n);
    return (long)n;
}

void mf_chunk_source_prefetch(mf_chunk_source *s, size_t i)
{
    if (s->compact)
        mf_compact_source_prefetch(s->compact, i);
}

long mf_chunk_source_read(mf_chunk_source *s, size_t i, uint8_t *buf, char *err, size_t errlen)
{
    if (s->compact)            /* a whole chunk: decoded straight into buf */
        return mf_compact_source_read(s->compact, i, buf, err, errlen);
    return mf_chunk_source_read_at(s, i, 0, buf, MF_CHUNK_SIZE, err, errlen);
}

uint64_t mf_chunk_source_file_size(const mf_chunk_source *s)
{
    return s->compact ? mf_compact_source_live_size(s->compact) : s->file_size;
}

int mf_chunk_source_refresh(mf_chunk_source *s, char *err, size_t errlen)
{
    if (s->compact)
        return 0; /* a compact log does not change */
    mf_file_header h;
    if (mf_read_full(s->fd, &h, sizeof h, 0) == (ssize_t)sizeof h)
        memcpy(s->header, &h, sizeof h);
    return scan(s, err, errlen);
}

/* Whether chunk index holds a byte that is not zero after its header. */
static int holds_data(mf_chunk_source *s, uint64_t index, uint8_t *buf, size_t len)
{
    uint64_t start = index * MF_CHUNK_SIZE, end = start + MF_CHUNK_SIZE;
    for (uint64_t at = next_data(s->fd, start, end); at < end;) {
        ssize_t n = mf_read_full(s->fd, buf, len < end - at ? len : end - at, at);
        if (n <= 0)
            return n < 0 ? -1 : 0;
        for (ssize_t k = at == start ? (ssize_t)sizeof(mf_chunk_header) : 0; k < n; k++)
            if (buf[k])
                return 1;
        at += (uint64_t)n;
    }
    return 0;
}

int mf_chunk_source_settle(mf_chunk_source *s, char *err, size_t errlen)
{
    if (s->compact || s->n_pending == 0)
        return 0;
    const mf_file_header *h = (const void *)s->header;
    uint8_t *buf = malloc(1 << 16);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", s->path);
        return -1;
    }
    size_t kept = 0, added = 0;
    int rc = 0;
    for (size_t i = 0; i < s->n_pending && rc == 0; i++) {
        uint64_t index = s->pending[i];
        int data = index < h->chunks_claimed ? holds_data(s, index, buf, 1 << 16) : 0;
        if (data > 0 && mf_grow((void **)&s->chunks, &s->cap_chunks, s->n_chunks + 1,
                                sizeof *s->chunks) == 0) {
            s->chunks[s->n_chunks++] = (mf_chunk_info){ .index = index,
                                                       .file_offset = index * MF_CHUNK_SIZE };
            added++;
        } else {
            rc = data < 0 ? -1 : 0;
            s->pending[kept++] = index;
        }
    }
    free(buf);
    s->n_pending = kept;
    if (added)
        qsort(s->chunks, s->n_chunks, sizeof *s->chunks, compare_chunks);
    if (rc < 0)
        snprintf(err, errlen, "%s: cannot read: %s", s->path, strerror(errno));
    return rc;
}

const mf_damage *mf_chunk_source_damage(const mf_chunk_source *s)
{
    return &s->damage;
}

const char *mf_chunk_source_path(const mf_chunk_source *s)
{
    return s->path;
}

void mf_chunk_source_close(mf_chunk_source *s)
{
    if (!s)
        return;
    mf_compact_source_close(s->compact);
    mf_damage_free(&s->damage);
    for (int k = 0; s->cache && k < CACHED_CHUNKS; k++)
        free(s->cache[k].bytes);
    free(s->cache);
    if (s->fd >= 0)
        close(s->fd);
    free(s->path);
    free(s->header);
    free(s->chunks);
    free(s->pending);
    free(s);
}
