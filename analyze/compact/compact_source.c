/*
 * compact_source.c - the chunks of a compact log (compact.h), for
 * chunk_source.c: the trailer and index are read and checked once at open;
 * each chunk is then one pread of its zstd frame, one decompression (zstd
 * checks the frame's content checksum) and, for a densely encoded chunk,
 * one pass of the decoder (compact_codec.h).  The bytes that come back are
 * the chunk as the recorder wrote it.  Threads on spare cores decode the
 * chunks a reader will want next (read-ahead, below).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "checksum.h"
#include "compact.h"
#include "compact_codec.h"
#include "compact_layout.h"

/* The largest frame content: a dense encoding is at most this long. */
#define MAX_PLAIN (3u * MF_CHUNK_SIZE)

/* What one thread needs to turn frames into chunks. */
typedef struct inflater {
    ZSTD_DCtx *dctx;
    mf_codec *codec;           /* made on the first dense chunk */
    uint8_t *frame;            /* a frame as read */
    size_t frame_cap;
    uint8_t *plain;            /* a dense encoding as decompressed */
} inflater;

typedef struct ahead ahead;    /* the read-ahead threads (below) */
static int wanted_workers(void);

struct mf_compact_source {
    int fd;                    /* the caller's */
    const char *path;          /* the caller's */
    uint8_t *header;           /* chunk 0 as the recorder wrote it */
    size_t header_len;
    uint64_t live_size;
    mf_compact_entry *entries;
    mf_chunk_info *chunks;
    size_t n_chunks;
    inflater own;              /* the caller's thread's */
    ahead *ahead;              /* read-ahead threads, from the first read on */
    int want_ahead;            /* read-ahead threads to start (0: none) */
};

/* Read exactly len bytes at offset; -1 with "FILE: offset N: ..." in err. */
static int read_at(const mf_compact_source *s, void *buf, size_t len, uint64_t offset,
                   const char *what, char *err, size_t errlen)
{
    ssize_t n = mf_read_full(s->fd, buf, len, offset);
    if (n == (ssize_t)len)
        return 0;
    snprintf(err, errlen, "%s: offset %llu: cannot read %s: %s", s->path,
             (unsigned long long)offset, what, n < 0 ? strerror(errno) : "file ends early");
    return -1;
}

static int bad(const mf_compact_source *s, char *err, size_t errlen, uint64_t offset,
               const char *what)
{
    snprintf(err, errlen, "%s: offset %llu: compact log: %s", s->path,
             (unsigned long long)offset, what);
    return -1;
}

/* The trailer at the end of a file of size bytes: where the index is. */
static int read_trailer(mf_compact_source *s, uint64_t size, mf_compact_trailer *t, char *err,
                        size_t errlen)
{
    if (size < sizeof(mf_file_header) + sizeof *t)
        return bad(s, err, errlen, size, "file too short for a compact log");
    uint64_t at = size - sizeof *t;
    if (read_at(s, t, sizeof *t, at, "the compact trailer", err, errlen) < 0)
        return -1;
    if (memcmp(t->magic, MF_COMPACT_MAGIC, 8) != 0)
        return bad(s, err, errlen, at,
                   "no MFCOMPCT trailer (the header says compact: cut short or not finished)");
    if (mf_crc32c(0, t, offsetof(mf_compact_trailer, trailer_check)) != t->trailer_check)
        return bad(s, err, errlen, at, "trailer fails its CRC-32C");
    if (t->layout != MF_COMPACT_LAYOUT) {
        char what[96];
        snprintf(what, sizeof what, "layout %u, this memflow reads layout %u", t->layout,
                 MF_COMPACT_LAYOUT);
        return bad(s, err, errlen, at + 24, what);
    }
    if (t->index_size < sizeof(mf_compact_index) || t->index_offset > at ||
        at - t->index_offset != t->index_size)
        return bad(s, err, errlen, at + 8, "index does not end where the trailer starts");
    return 0;
}

/* Check one index entry against the file and the entry before it. */
static int check_entry(mf_compact_source *s, const mf_compact_entry *e, uint64_t prev_index,
                       uint64_t frames_start, uint64_t frames_end, uint64_t at, char *err,
                       size_t errlen)
{
    if (e->index <= prev_index)
        return bad(s, err, errlen, at, "chunk indexes do not ascend");
    if (e->frame_offset < frames_start || e->frame_offset > frames_end ||
        e->frame_size > frames_end - e->frame_offset)
        return bad(s, err, errlen, at + 8, "frame outside the file's frames");
    if (e->live_len > MF_CHUNK_SIZE || e->encoding > MF_COMPACT_DENSE)
        return bad(s, err, errlen, at + 20, "bad chunk length or encoding");
    return 0;
}

/* Read and check the index; fill entries and the chunk list. */
static int read_index(mf_compact_source *s, const mf_compact_trailer *t, mf_compact_index *ix,
                      char *err, size_t errlen)
{
    uint8_t *bytes = malloc(t->index_size);
    if (!bytes)
        return bad(s, err, errlen, t->index_offset, "out of memory for the index");
    int rc = -1;
    if (read_at(s, bytes, t->index_size, t->index_offset, "the compact index", err, errlen) < 0)
        goto out;
    if (mf_crc32c(0, bytes, t->index_size) != t->index_check) {
        bad(s, err, errlen, t->index_offset, "index fails its CRC-32C");
        goto out;
    }
    memcpy(ix, bytes, sizeof *ix);
    if ((uint64_t)ix->n_chunks * sizeof(mf_compact_entry) != t->index_size - sizeof *ix) {
        bad(s, err, errlen, t->index_offset, "index size does not match its chunk count");
        goto out;
    }
    s->n_chunks = ix->n_chunks;
    s->entries = malloc(s->n_chunks * sizeof *s->entries + 1);
    s->chunks = calloc(s->n_chunks + 1, sizeof *s->chunks);
    if (!s->entries || !s->chunks) {
        bad(s, err, errlen, t->index_offset, "out of memory for the index");
        goto out;
    }
    memcpy(s->entries, bytes + sizeof *ix, s->n_chunks * sizeof *s->entries);
    uint64_t prev = 0;
    for (size_t i = 0; i < s->n_chunks; i++) {
        const mf_compact_entry *e = &s->entries[i];
        uint64_t at = t->index_offset + sizeof *ix + i * sizeof *e;
        if (check_entry(s, e, prev, ix->prefix_len, t->index_offset, at, err, errlen) < 0)
            goto out;
        prev = e->index;
        s->chunks[i] = (mf_chunk_info){
            .index = e->index,
            .file_offset = e->index * MF_CHUNK_SIZE, /* where it stood in the live log */
            .tid = e->tid,
            .has_times = (e->flags & MF_COMPACT_HAS_TIMES) != 0,
            .min_time_ns = e->min_time_ns,
            .max_time_ns = e->max_time_ns,
        };
    }
    rc = 0;
out:
    free(bytes);
    return rc;
}

static int inflater_init(inflater *f)
{
    memset(f, 0, sizeof *f);
    f->dctx = ZSTD_createDCtx();
    f->plain = malloc(MAX_PLAIN);
    return f->dctx && f->plain ? 0 : -1;
}

static void inflater_free(inflater *f)
{
    ZSTD_freeDCtx(f->dctx);
    mf_codec_free(f->codec);
    free(f->frame);
    free(f->plain);
    memset(f, 0, sizeof *f);
}

/*
 * Decompress the frame of size bytes at offset into dst (cap bytes); the
 * content size, or -1 with the reason in err.  The frame must carry zstd's
 * content checksum, which decompression verifies.
 */
static long inflate_frame(const mf_compact_source *s, inflater *f, uint64_t offset, uint32_t size,
                          void *dst, size_t cap, const char *what, char *err, size_t errlen)
{
    if (size > f->frame_cap) {
        uint8_t *grown = realloc(f->frame, size);
        if (!grown)
            return bad(s, err, errlen, offset, "out of memory for a frame");
        f->frame = grown;
        f->frame_cap = size;
    }
    if (read_at(s, f->frame, size, offset, what, err, errlen) < 0)
        return -1;
    char why[160];
    if (size < 6 || ZSTD_findFrameCompressedSize(f->frame, size) != size) {
        snprintf(why, sizeof why, "%s: not one whole zstd frame of %u bytes", what, size);
        return bad(s, err, errlen, offset, why);
    }
    if (!(f->frame[4] & 0x04)) { /* Frame_Header_Descriptor: Content_Checksum_flag */
        snprintf(why, sizeof why, "%s: zstd frame without a content checksum", what);
        return bad(s, err, errlen, offset, why);
    }
    unsigned long long want = ZSTD_getFrameContentSize(f->frame, size);
    if (want == ZSTD_CONTENTSIZE_UNKNOWN || want == ZSTD_CONTENTSIZE_ERROR || want > cap) {
        snprintf(why, sizeof why, "%s: frame content size missing or over %zu bytes", what, cap);
        return bad(s, err, errlen, offset, why);
    }
    size_t got = ZSTD_decompressDCtx(f->dctx, dst, cap, f->frame, size);
    if (ZSTD_isError(got) || got != want) {
        snprintf(why, sizeof why, "%s: zstd: %s", what,
                 ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short content");
        return bad(s, err, errlen, offset, why);
    }
    return (long)got;
}

/* Chunk 0: the raw prefix at offset 0, then the rest from its frame. */
static int read_head(mf_compact_source *s, const mf_compact_index *ix, char *err, size_t errlen)
{
    if (ix->prefix_len < sizeof(mf_file_header) || ix->prefix_len > ix->header_len ||
        ix->header_len > MF_CHUNK_SIZE)
        return bad(s, err, errlen, 0, "bad header lengths in the index");
    if (read_at(s, s->header, ix->prefix_len, 0, "the file header", err, errlen) < 0)
        return -1;
    mf_file_header *h = (mf_file_header *)(void *)s->header;
    h->flags &= ~MF_HEADER_COMPACT; /* as the recorder wrote it */
    s->header_len = ix->header_len;
    size_t rest = ix->header_len - ix->prefix_len;
    if (ix->head_size == 0)
        return rest == 0 ? 0 : bad(s, err, errlen, 0, "no frame for the rest of chunk 0");
    long n = inflate_frame(s, &s->own, ix->head_offset, ix->head_size,
                           s->header + ix->prefix_len, MF_CHUNK_SIZE - ix->prefix_len,
                           "chunk 0", err, errlen);
    if (n < 0)
        return -1;
    if ((size_t)n != rest)
        return bad(s, err, errlen, ix->head_offset, "chunk 0's frame has the wrong length");
    return 0;
}

int mf_compact_source_open(int fd, const char *path, mf_compact_source **out, char *err,
                           size_t errlen)
{
    *out = NULL;
    mf_compact_source *s = calloc(1, sizeof *s);
    if (!s || !(s->header = calloc(1, MF_CHUNK_SIZE)) || inflater_init(&s->own) < 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        mf_compact_source_close(s);
        return -1;
    }
    s->fd = fd;
    s->path = path;
    struct stat st;
    mf_compact_trailer t;
    mf_compact_index ix;
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        mf_compact_source_close(s);
        return -1;
    }
    if (read_trailer(s, (uint64_t)st.st_size, &t, err, errlen) < 0 ||
        read_index(s, &t, &ix, err, errlen) < 0 || read_head(s, &ix, err, errlen) < 0) {
        mf_compact_source_close(s);
        return -1;
    }
    s->live_size = ix.live_size;
    s->want_ahead = s->n_chunks > 1 ? wanted_workers() : 0;
    *out = s;
    return 0;
}

const uint8_t *mf_compact_source_header(const mf_compact_source *s, size_t *len)
{
    *len = s->header_len;
    return s->header;
}

const mf_chunk_info *mf_compact_source_chunks(const mf_compact_source *s, size_t *n)
{
    *n = s->n_chunks;
    return s->chunks;
}

uint64_t mf_compact_source_live_size(const mf_compact_source *s)
{
    return s->live_size;
}

/* Chunk i into buf with the inflater f (any thread: s is only read). */
static long decode_chunk(const mf_compact_source *s, inflater *f, size_t i, uint8_t *buf,
                         char *err, size_t errlen)
{
    const mf_compact_entry *e = &s->entries[i];
    char what[48];
    snprintf(what, sizeof what, "chunk %llu", (unsigned long long)e->index);
    long n;
    if (e->encoding == MF_COMPACT_RAW) {
        n = inflate_frame(s, f, e->frame_offset, e->frame_size, buf, MF_CHUNK_SIZE, what, err,
                          errlen);
        if (n >= 0)
            memset(buf + n, 0, MF_CHUNK_SIZE - (size_t)n);
    } else {
        if (!f->codec && !(f->codec = mf_codec_new()))
            return bad(s, err, errlen, e->frame_offset, "out of memory for the decoder");
        n = inflate_frame(s, f, e->frame_offset, e->frame_size, f->plain, MAX_PLAIN, what, err,
                          errlen);
        char why[320];
        if (n >= 0 && (n = mf_codec_decode(f->codec, f->plain, (size_t)n, buf, why,
                                           sizeof why)) < 0) {
            char full[400];
            snprintf(full, sizeof full, "%s: %s", what, why);
            return bad(s, err, errlen, e->frame_offset, full);
        }
    }
    if (n >= 0 && (uint64_t)n != e->live_len)
        return bad(s, err, errlen, e->frame_offset, "chunk decodes to the wrong length");
    return n;
}

/* ---- read-ahead ----------------------------------------------------------
 *
 * Decoding a chunk costs about ten times what copying it does, so while the
 * caller works on one chunk, threads decode the ones it will want next into
 * slots: after a read of chunk i, the chunks after i in index order; and
 * any chunk mf_compact_source_prefetch names (a reader that merges chunks
 * by time knows its own order).  A read of a decoded chunk is one copy; a
 * read of a chunk no thread has started is decoded by the caller itself.
 * There is one thread per spare core (at most MAX_WORKERS; the environment
 * variable MEMFLOW_READ_THREADS=N says N instead, 0 = none), none on one
 * core; when every slot is taken, the one queued longest ago is reused.
 * At most MAX_AHEAD_SOURCES logs of a process read ahead at once, so a
 * reader of hundreds of logs does not start hundreds of threads.
 */
#define MAX_WORKERS 4
#define MAX_SLOTS (2 * MAX_WORKERS)
#define MAX_AHEAD_SOURCES 2

static int ahead_sources;      /* sources reading ahead now (atomic) */

enum slot_state { SLOT_FREE, SLOT_QUEUED, SLOT_BUSY, SLOT_DONE };

typedef struct slot {
    enum slot_state state;
    size_t chunk;
    uint64_t queued;           /* when it was queued (a counter): the oldest goes first */
    long result;               /* bytes, or -1 with err */
    char err[512];
    uint8_t *buf;
} slot;

typedef struct worker {
    struct ahead *a;
    pthread_t thread;
    inflater f;
} worker;

struct ahead {
    mf_compact_source *s;
    pthread_mutex_t lock;
    pthread_cond_t work;       /* a slot was queued, or stop */
    pthread_cond_t done;       /* a slot is done */
    int stop;
    int n_workers, n_slots;
    uint64_t clock;
    worker workers[MAX_WORKERS];
    slot slots[MAX_SLOTS];
};

static slot *find_slot(ahead *a, size_t chunk)
{
    for (int k = 0; k < a->n_slots; k++)
        if (a->slots[k].state != SLOT_FREE && a->slots[k].chunk == chunk)
            return &a->slots[k];
    return NULL;
}

/* The queued slot to decode next (the lowest chunk), or NULL. */
static slot *next_job(ahead *a)
{
    slot *next = NULL;
    for (int k = 0; k < a->n_slots; k++)
        if (a->slots[k].state == SLOT_QUEUED && (!next || a->slots[k].chunk < next->chunk))
            next = &a->slots[k];
    return next;
}

/* Decode job with inflater f (lock held on entry and on return). */
static void run_job(ahead *a, slot *job, inflater *f)
{
    job->state = SLOT_BUSY;
    pthread_mutex_unlock(&a->lock);
    long n = decode_chunk(a->s, f, job->chunk, job->buf, job->err, sizeof job->err);
    pthread_mutex_lock(&a->lock);
    job->result = n;
    job->state = SLOT_DONE;
    pthread_cond_broadcast(&a->done);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    ahead *a = w->a;
    pthread_mutex_lock(&a->lock);
    while (!a->stop) {
        slot *job = next_job(a);
        if (job)
            run_job(a, job, &w->f);
        else
            pthread_cond_wait(&a->work, &a->lock);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

static void stop_ahead(ahead *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stop = 1;
    pthread_cond_broadcast(&a->work);
    pthread_mutex_unlock(&a->lock);
    for (int w = 0; w < a->n_workers; w++) {
        pthread_join(a->workers[w].thread, NULL);
        inflater_free(&a->workers[w].f);
    }
    for (int k = 0; k < MAX_SLOTS; k++)
        free(a->slots[k].buf);
    pthread_cond_destroy(&a->work);
    pthread_cond_destroy(&a->done);
    pthread_mutex_destroy(&a->lock);
    free(a);
    __atomic_sub_fetch(&ahead_sources, 1, __ATOMIC_RELAXED);
}

/* Read-ahead threads to start: 0 when there is no spare core. */
static int wanted_workers(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *knob = getenv("MEMFLOW_READ_THREADS");
    if (knob)
        cores = atol(knob) + 1;
    return cores - 1 > MAX_WORKERS ? MAX_WORKERS : cores > 1 ? (int)(cores - 1) : 0;
}

/* The threads, or NULL (one core, no memory, no threads): the caller's
 * thread then decodes every chunk itself. */
static ahead *start_ahead(mf_compact_source *s, int n)
{
    if (__atomic_add_fetch(&ahead_sources, 1, __ATOMIC_RELAXED) > MAX_AHEAD_SOURCES) {
        __atomic_sub_fetch(&ahead_sources, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    ahead *a = calloc(1, sizeof *a);
    if (!a) {
        __atomic_sub_fetch(&ahead_sources, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    a->s = s;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->work, NULL);
    pthread_cond_init(&a->done, NULL);
    while (a->n_slots < 2 * n && (a->slots[a->n_slots].buf = malloc(MF_CHUNK_SIZE)))
        a->n_slots++;
    for (int i = 0; i < n && a->n_slots >= 2; i++) {
        worker *w = &a->workers[i];
        w->a = a;
        if (inflater_init(&w->f) < 0 || pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            inflater_free(&w->f);
            break;
        }
        a->n_workers++;
    }
    if (a->n_workers == 0) {
        stop_ahead(a);
        return NULL;
    }
    return a;
}

/* Queue chunk for a thread (lock held): into a free slot, else into the
 * slot queued longest ago that no thread is decoding. */
static void queue(ahead *a, size_t chunk)
{
    if (chunk >= a->s->n_chunks || find_slot(a, chunk))
        return;
    slot *use = NULL;
    for (int k = 0; k < a->n_slots; k++) {
        slot *sl = &a->slots[k];
        if (sl->state == SLOT_FREE) {
            use = sl;
            break;
        }
        if (sl->state != SLOT_BUSY && (!use || sl->queued < use->queued))
            use = sl;
    }
    if (!use)
        return;
    use->state = SLOT_QUEUED;
    use->chunk = chunk;
    use->queued = ++a->clock;
    pthread_cond_signal(&a->work);
}

/* Chunk i from its slot if a thread has started it: the result; else -2
 * (and a queued slot for it is dropped: the caller decodes it now).  While
 * a thread decodes it, the caller decodes queued chunks instead of waiting. */
static long take(ahead *a, size_t i, uint8_t *buf, char *err, size_t errlen)
{
    slot *sl = find_slot(a, i);
    if (!sl || sl->state == SLOT_QUEUED) {
        if (sl)
            sl->state = SLOT_FREE;
        return -2;
    }
    while (sl->state == SLOT_BUSY) {
        slot *job = next_job(a);
        if (job)
            run_job(a, job, &a->s->own);
        else
            pthread_cond_wait(&a->done, &a->lock);
    }
    long n = sl->result;
    if (n >= 0)
        memcpy(buf, sl->buf, MF_CHUNK_SIZE);
    else
        snprintf(err, errlen, "%s", sl->err);
    sl->state = SLOT_FREE;
    return n;
}

long mf_compact_source_read(mf_compact_source *s, size_t i, uint8_t *buf, char *err,
                            size_t errlen)
{
    if (!s->ahead && s->want_ahead)
        s->ahead = start_ahead(s, s->want_ahead);
    ahead *a = s->ahead;
    long n = -2;
    if (a) {
        pthread_mutex_lock(&a->lock);
        n = take(a, i, buf, err, errlen);
        for (size_t next = i + 1; next <= i + (size_t)a->n_slots; next++)
            queue(a, next);
        pthread_mutex_unlock(&a->lock);
    }
    return n == -2 ? decode_chunk(s, &s->own, i, buf, err, errlen) : n;
}

void mf_compact_source_prefetch(mf_compact_source *s, size_t i)
{
    ahead *a = s->ahead;
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    queue(a, i);
    pthread_mutex_unlock(&a->lock);
}

void mf_compact_source_close(mf_compact_source *s)
{
    if (!s)
        return;
    stop_ahead(s->ahead);
    free(s->header);
    free(s->entries);
    free(s->chunks);
    inflater_free(&s->own);
    free(s);
}
