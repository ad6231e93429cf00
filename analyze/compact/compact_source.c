/*
 * compact_source.c - the chunks of a compact log (compact.h), for
 * chunk_source.c.  At open, the trailer and index are read and checked;
 * when they are missing or damaged (a file cut short, a flipped byte), the
 * frames are found instead by walking them from the end of the file header,
 * header to header, and past a damaged one by looking for the next header
 * whose checksum holds: every intact frame is kept, and what was wrong goes
 * to the source's damage list.  Each chunk is then one pread of its frame,
 * the check of its header and payload checksums, one decompression (zstd
 * checks the content checksum) and, for a densely encoded chunk, one pass
 * of the decoder (compact_codec.h).  The bytes that come back are the
 * chunk as the recorder wrote it; a frame that fails a check is damage
 * (MF_CHUNK_DAMAGED), its chunk lost, the others read.  Threads on spare
 * cores decode the chunks a reader will want next (read-ahead, below).
 * Compact logs of layout 1 (bare zstd frames, no headers) are read through
 * their index as before.
 */
#include <errno.h>
#include <limits.h>
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
#include "damage.h"
#include "grow.h"

/* The largest frame content: a dense encoding is at most this long. */
#define MAX_PLAIN (3u * MF_CHUNK_SIZE)
#define FRAME_HEADER ((uint32_t)sizeof(mf_compact_frame))

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
    uint32_t layout;           /* MF_COMPACT_LAYOUT, or MF_COMPACT_LAYOUT_BARE */
    uint8_t *header;           /* chunk 0 as the recorder wrote it */
    size_t header_len;
    uint64_t live_size;
    mf_compact_entry *entries;
    mf_chunk_info *chunks;
    size_t n_chunks, cap_entries;
    mf_damage damage;          /* what open found wrong */
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

/* "FILE: offset N: compact log: what" in err; returns rc. */
static int bad_rc(const mf_compact_source *s, char *err, size_t errlen, uint64_t offset,
                  const char *what, int rc)
{
    snprintf(err, errlen, "%s: offset %llu: compact log: %s", s->path,
             (unsigned long long)offset, what);
    return rc;
}

static int bad(const mf_compact_source *s, char *err, size_t errlen, uint64_t offset,
               const char *what)
{
    return bad_rc(s, err, errlen, offset, what, -1);
}

/* ---- the trailer and the index ---------------------------------------------
 *
 * Each returns 0 (good), -1 (cannot go on: an I/O error, out of memory, a
 * layout this memflow does not read; err says why) or 1 (damaged: err says
 * what; the frames are then found by walking them).
 */

/* The trailer at the end of a file of size bytes: where the index is. */
static int read_trailer(mf_compact_source *s, uint64_t size, mf_compact_trailer *t, char *err,
                        size_t errlen)
{
    if (size < sizeof(mf_file_header) + sizeof *t)
        return bad_rc(s, err, errlen, size, "file too short for a compact log's trailer (cut "
                      "short)", 1);
    uint64_t at = size - sizeof *t;
    if (read_at(s, t, sizeof *t, at, "the compact trailer", err, errlen) < 0)
        return -1;
    if (memcmp(t->magic, MF_COMPACT_MAGIC, 8) != 0)
        return bad_rc(s, err, errlen, size, "no MFCOMPCT trailer at the end (the file was cut "
                      "short, or its compaction never finished)", 1);
    if (mf_crc32c(0, t, offsetof(mf_compact_trailer, trailer_check)) != t->trailer_check)
        return bad_rc(s, err, errlen, at, "trailer fails its CRC-32C", 1);
    if (t->layout != MF_COMPACT_LAYOUT && t->layout != MF_COMPACT_LAYOUT_BARE) {
        char what[128];
        snprintf(what, sizeof what, "layout %u, this memflow reads layouts %u and %u "
                 "(a newer memflow wrote it)", t->layout, MF_COMPACT_LAYOUT_BARE,
                 MF_COMPACT_LAYOUT);
        return bad(s, err, errlen, at + 24, what);
    }
    if (t->index_size < sizeof(mf_compact_index) || t->index_offset > at ||
        at - t->index_offset != t->index_size)
        return bad_rc(s, err, errlen, at + 8, "index does not end where the trailer starts", 1);
    return 0;
}

/* Check one index entry against the file and the entry before it. */
static int check_entry(mf_compact_source *s, const mf_compact_entry *e, uint64_t prev_index,
                       uint64_t frames_start, uint64_t frames_end, uint64_t at, char *err,
                       size_t errlen)
{
    if (e->index <= prev_index)
        return bad_rc(s, err, errlen, at, "index: chunk indexes do not ascend", 1);
    if (e->frame_offset < frames_start || e->frame_offset > frames_end ||
        e->frame_size > frames_end - e->frame_offset ||
        (s->layout == MF_COMPACT_LAYOUT && e->frame_size < FRAME_HEADER))
        return bad_rc(s, err, errlen, at + 8, "index: frame outside the file's frames", 1);
    if (e->live_len > MF_CHUNK_SIZE || e->encoding > MF_COMPACT_DENSE)
        return bad_rc(s, err, errlen, at + 20, "index: bad chunk length or encoding", 1);
    return 0;
}

/* The chunk list of a source from its entries. */
static void list_chunks(mf_compact_source *s)
{
    for (size_t i = 0; i < s->n_chunks; i++) {
        const mf_compact_entry *e = &s->entries[i];
        s->chunks[i] = (mf_chunk_info){
            .index = e->index,
            .file_offset = e->index * MF_CHUNK_SIZE, /* where it stood in the live log */
            .tid = e->tid,
            .has_times = (e->flags & MF_COMPACT_HAS_TIMES) != 0,
            .min_time_ns = e->min_time_ns,
            .max_time_ns = e->max_time_ns,
        };
    }
}

/* Room for n entries and chunks; -1 when out of memory. */
static int make_room(mf_compact_source *s, size_t n)
{
    if (n < s->cap_entries)
        return 0;
    size_t cap = s->cap_entries;
    if (mf_grow((void **)&s->entries, &cap, n + 1, sizeof *s->entries) < 0)
        return -1;
    mf_chunk_info *grown = realloc(s->chunks, cap * sizeof *grown);
    if (!grown)
        return -1;
    s->chunks = grown;
    s->cap_entries = cap;
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
    rc = 1;
    if (mf_crc32c(0, bytes, t->index_size) != t->index_check) {
        bad_rc(s, err, errlen, t->index_offset, "index fails its CRC-32C", 1);
        goto out;
    }
    memcpy(ix, bytes, sizeof *ix);
    if ((uint64_t)ix->n_chunks * sizeof(mf_compact_entry) != t->index_size - sizeof *ix) {
        bad_rc(s, err, errlen, t->index_offset, "index size does not match its chunk count", 1);
        goto out;
    }
    if (make_room(s, ix->n_chunks) < 0) {
        rc = bad(s, err, errlen, t->index_offset, "out of memory for the index");
        goto out;
    }
    memcpy(s->entries, bytes + sizeof *ix, ix->n_chunks * sizeof *s->entries);
    uint64_t prev = 0;
    for (size_t i = 0; i < ix->n_chunks; i++) {
        const mf_compact_entry *e = &s->entries[i];
        uint64_t at = t->index_offset + sizeof *ix + i * sizeof *e;
        if (check_entry(s, e, prev, ix->prefix_len, t->index_offset, at, err, errlen))
            goto out;
        prev = e->index;
    }
    s->n_chunks = ix->n_chunks;
    list_chunks(s);
    rc = 0;
out:
    free(bytes);
    return rc;
}

/* ---- finding the frames without the index ----------------------------------- */

/* Whether the 64 bytes at p are a frame header that can be believed, for
 * a file whose frames end at end (the header at offset at). */
static int frame_header_holds(const uint8_t *p, uint64_t at, uint64_t end, mf_compact_frame *f)
{
    memcpy(f, p, sizeof *f);
    return memcmp(f->magic, MF_COMPACT_FRAME_MAGIC, sizeof f->magic) == 0 &&
           f->header_check == mf_compact_frame_sum(f) && f->live_len <= MF_CHUNK_SIZE &&
           f->encoding <= MF_COMPACT_DENSE && f->payload_size <= MF_COMPACT_MAX_PAYLOAD &&
           f->index <= UINT32_MAX && f->start <= f->live_len && at + FRAME_HEADER <= end;
}

/* The first offset in [from, end) where a frame header holds, or end. */
static uint64_t next_frame(const mf_compact_source *s, uint64_t from, uint64_t end,
                           mf_compact_frame *f)
{
    enum { BLOCK = 1 << 16 };
    uint8_t *buf = malloc(BLOCK + FRAME_HEADER);
    if (!buf)
        return end;
    for (uint64_t at = from; at + FRAME_HEADER <= end; at += BLOCK) {
        ssize_t n = mf_read_full(s->fd, buf, BLOCK + FRAME_HEADER, at);
        if (n < (ssize_t)FRAME_HEADER)
            break;
        for (size_t k = 0; k + FRAME_HEADER <= (size_t)n && k < BLOCK; k++)
            if (buf[k] == (uint8_t)MF_COMPACT_FRAME_MAGIC[0] &&
                frame_header_holds(buf + k, at + k, end, f)) {
                free(buf);
                return at + k;
            }
    }
    free(buf);
    return end;
}

/* Whether the bytes at `at` start the index of the frames found (a file
 * whose trailer alone is missing or damaged, or that was cut inside its
 * index): then the frames end there. */
static int index_starts_at(mf_compact_source *s, uint64_t at, uint64_t end, size_t frames)
{
    mf_compact_index ix;
    return at + sizeof ix <= end &&
           mf_read_full(s->fd, &ix, sizeof ix, at) == (ssize_t)sizeof ix &&
           ix.n_chunks == frames && ix.prefix_len >= sizeof(mf_file_header) &&
           ix.prefix_len <= ix.header_len && ix.header_len <= MF_CHUNK_SIZE;
}

/* A frame found by walking: its entry (or, chunk 0's rest, the index's head). */
static int add_frame(mf_compact_source *s, const mf_compact_frame *f, uint64_t at,
                     mf_compact_index *ix)
{
    if (f->index == 0) {
        ix->head_offset = at;
        ix->head_size = FRAME_HEADER + f->payload_size;
        ix->header_len = f->live_len;
        ix->prefix_len = f->start;
        return 0;
    }
    if (make_room(s, s->n_chunks + 1) < 0)
        return -1;
    s->entries[s->n_chunks++] = (mf_compact_entry){
        .index = f->index, .frame_offset = at, .frame_size = FRAME_HEADER + f->payload_size,
        .live_len = f->live_len, .tid = f->tid, .encoding = f->encoding, .flags = f->flags,
        .min_time_ns = f->min_time_ns, .max_time_ns = f->max_time_ns, .records = f->records,
    };
    return 0;
}

/* By index, then by place in the file. */
static int compare_entries(const void *a, const void *b)
{
    const mf_compact_entry *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return x->frame_offset < y->frame_offset ? -1 : x->frame_offset > y->frame_offset;
}

/* Entries in index order, the later frame of a chunk written twice kept. */
static void settle_entries(mf_compact_source *s, mf_compact_index *ix)
{
    qsort(s->entries, s->n_chunks, sizeof *s->entries, compare_entries);
    size_t kept = 0;
    for (size_t i = 0; i < s->n_chunks; i++) {
        if (kept && s->entries[kept - 1].index == s->entries[i].index)
            kept--;
        s->entries[kept++] = s->entries[i];
    }
    s->n_chunks = kept;
    ix->n_chunks = (uint32_t)kept;
    ix->live_size = ix->header_len;
    for (size_t i = 0; i < kept; i++) {
        uint64_t end = s->entries[i].index * MF_CHUNK_SIZE + s->entries[i].live_len;
        ix->live_size = end > ix->live_size ? end : ix->live_size;
    }
    list_chunks(s);
}

/*
 * Walk the frames from `from` to `end` (the index's start when the trailer
 * says where it is, else the end of the file), header to header; a place
 * where no frame header holds is damage, and the walk goes on at the next
 * one that does.  Fills entries and the head of ix.  0, or -1 (err).
 */
static int walk_frames(mf_compact_source *s, uint64_t from, uint64_t end, int index_known,
                       mf_compact_index *ix, char *err, size_t errlen)
{
    uint64_t at = from;
    mf_compact_frame f;
    uint8_t raw[sizeof f];
    while (at < end) {
        ssize_t n = mf_read_full(s->fd, raw, sizeof raw, at);
        if (n < 0)
            return read_at(s, raw, sizeof raw, at, "a frame header", err, errlen);
        if (n == (ssize_t)sizeof raw && frame_header_holds(raw, at, end, &f)) {
            uint64_t next = at + FRAME_HEADER + f.payload_size;
            if (next > end) {
                mf_damage_add(&s->damage, s->path, at, "compact log: the frame of chunk %llu "
                              "is cut short (it needs %llu bytes, the file ends after %llu): "
                              "its records are lost", (unsigned long long)f.index,
                              (unsigned long long)(FRAME_HEADER + f.payload_size),
                              (unsigned long long)(end - at));
                break;
            }
            if (add_frame(s, &f, at, ix) < 0)
                return bad(s, err, errlen, at, "out of memory for the frames");
            at = next;
            continue;
        }
        if (!index_known && index_starts_at(s, at, end, s->n_chunks))
            break;               /* the index of these frames: only the trailer is lost */
        uint64_t found = next_frame(s, at + 1, end, &f);
        if (found >= end && end - at < FRAME_HEADER && !index_known)
            mf_damage_add(&s->damage, s->path, at, "compact log: the file ends inside a frame "
                          "header (cut short)");
        else
            mf_damage_add(&s->damage, s->path, at, "compact log: %llu bytes that are no frame "
                          "(damaged): the chunks they held are lost%s",
                          (unsigned long long)(found - at),
                          found < end ? "; frames go on after them" : "");
        at = found;
    }
    settle_entries(s, ix);
    return 0;
}

/* ---- chunk 0 and open --------------------------------------------------------- */

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
 * Read the frame of size bytes at offset into f->frame and check it: for
 * layout 2, its header (magic, checksum, what it says against what the
 * index said: index, live_len, encoding, size) and its payload's CRC-32C.
 * The payload and its size in *payload, *payload_size.  0; -1 when it cannot
 * be read (err); MF_CHUNK_DAMAGED when it is damaged (err says how).
 */
static int read_frame(const mf_compact_source *s, inflater *f, const mf_compact_entry *e,
                      const char *what, const uint8_t **payload, uint32_t *payload_size,
                      char *err, size_t errlen)
{
    if (e->frame_size > f->frame_cap) {
        uint8_t *grown = realloc(f->frame, e->frame_size);
        if (!grown)
            return bad(s, err, errlen, e->frame_offset, "out of memory for a frame");
        f->frame = grown;
        f->frame_cap = e->frame_size;
    }
    ssize_t n = mf_read_full(s->fd, f->frame, e->frame_size, e->frame_offset);
    char why[200];
    if (n < 0)
        return read_at(s, f->frame, e->frame_size, e->frame_offset, what, err, errlen);
    if (n < (ssize_t)e->frame_size) {
        snprintf(why, sizeof why, "%s: the file ends inside its frame: its records are lost",
                 what);
        return bad_rc(s, err, errlen, e->frame_offset, why, MF_CHUNK_DAMAGED);
    }
    *payload = f->frame;
    *payload_size = e->frame_size;
    if (s->layout == MF_COMPACT_LAYOUT_BARE)
        return 0;
    mf_compact_frame h;
    if (!frame_header_holds(f->frame, e->frame_offset, UINT64_MAX, &h) || h.index != e->index ||
        h.live_len != e->live_len || h.encoding != e->encoding ||
        h.payload_size != e->frame_size - FRAME_HEADER) {
        snprintf(why, sizeof why, "%s: its frame header is damaged (magic, CRC-32C, or what it "
                 "says against the index): its records are lost", what);
        return bad_rc(s, err, errlen, e->frame_offset, why, MF_CHUNK_DAMAGED);
    }
    *payload = f->frame + FRAME_HEADER;
    *payload_size = h.payload_size;
    if (mf_crc32c(0, *payload, *payload_size) != h.payload_check) {
        snprintf(why, sizeof why, "%s: its frame fails its CRC-32C (damaged): its records are "
                 "lost", what);
        return bad_rc(s, err, errlen, e->frame_offset, why, MF_CHUNK_DAMAGED);
    }
    return 0;
}

/*
 * Decompress the frame of entry e into dst (cap bytes); the content size,
 * or -1 / MF_CHUNK_DAMAGED with the reason in err.  The zstd frame must carry
 * zstd's content checksum, which decompression verifies.
 */
static long inflate_frame(const mf_compact_source *s, inflater *f, const mf_compact_entry *e,
                          void *dst, size_t cap, const char *what, char *err, size_t errlen)
{
    const uint8_t *z = NULL;
    uint32_t size = 0;
    int rc = read_frame(s, f, e, what, &z, &size, err, errlen);
    if (rc != 0)
        return rc;
    char why[200];
    if (size < 6 || ZSTD_findFrameCompressedSize(z, size) != size) {
        snprintf(why, sizeof why, "%s: not one whole zstd frame of %u bytes", what, size);
        return bad_rc(s, err, errlen, e->frame_offset, why, MF_CHUNK_DAMAGED);
    }
    if (!(z[4] & 0x04)) { /* Frame_Header_Descriptor: Content_Checksum_flag */
        snprintf(why, sizeof why, "%s: zstd frame without a content checksum", what);
        return bad_rc(s, err, errlen, e->frame_offset, why, MF_CHUNK_DAMAGED);
    }
    unsigned long long want = ZSTD_getFrameContentSize(z, size);
    if (want == ZSTD_CONTENTSIZE_UNKNOWN || want == ZSTD_CONTENTSIZE_ERROR || want > cap) {
        snprintf(why, sizeof why, "%s: frame content size missing or over %zu bytes", what, cap);
        return bad_rc(s, err, errlen, e->frame_offset, why, MF_CHUNK_DAMAGED);
    }
    size_t got = ZSTD_decompressDCtx(f->dctx, dst, cap, z, size);
    if (ZSTD_isError(got) || got != want) {
        snprintf(why, sizeof why, "%s: zstd: %s", what,
                 ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short content");
        return bad_rc(s, err, errlen, e->frame_offset, why, MF_CHUNK_DAMAGED);
    }
    return (long)got;
}

/* Chunk 0: the raw prefix at offset 0, then the rest from its frame (a
 * frame that is missing or damaged is damage: the rest reads as zeros). */
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
    if (ix->head_size == 0) {
        if (rest)
            mf_damage_add(&s->damage, s->path, ix->prefix_len, "compact log: no frame for the "
                          "rest of chunk 0 (it reads as zeros)");
        return 0;
    }
    mf_compact_entry e = { .index = 0, .frame_offset = ix->head_offset,
                           .frame_size = ix->head_size, .live_len = ix->header_len,
                           .encoding = MF_COMPACT_RAW };
    char why[512];
    long n = inflate_frame(s, &s->own, &e, s->header + ix->prefix_len,
                           MF_CHUNK_SIZE - ix->prefix_len, "chunk 0", why, sizeof why);
    if (n == MF_CHUNK_DAMAGED || (n >= 0 && (size_t)n != rest)) {
        memset(s->header + ix->prefix_len, 0, MF_CHUNK_SIZE - ix->prefix_len);
        mf_damage_add(&s->damage, s->path, ix->head_offset, "compact log: chunk 0's frame %s: "
                      "the rest of chunk 0 reads as zeros", n >= 0 ? "has the wrong length"
                                                                   : "is damaged");
        return 0;
    }
    if (n < 0)
        snprintf(err, errlen, "%s", why);
    return n < 0 ? -1 : 0;
}

/* Where the frames start by the file header itself (its argv_len): for a
 * file whose index is lost.  The header's own checks are log_header.c's. */
static uint32_t prefix_by_header(mf_compact_source *s, uint64_t size)
{
    mf_file_header h;
    if (mf_read_full(s->fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
        return sizeof h;
    uint64_t prefix = sizeof h + (uint64_t)h.argv_len;
    return (uint32_t)(prefix > size || prefix > MF_CHUNK_SIZE ? sizeof h : prefix);
}

/* Whether the bytes at offset are a zstd frame's magic (a layout 1 frame). */
static int bare_frame_at(const mf_compact_source *s, uint64_t offset)
{
    static const uint8_t zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
    uint8_t m[4];
    return mf_read_full(s->fd, m, 4, offset) == 4 && memcmp(m, zstd_magic, 4) == 0;
}

/* The index is lost or damaged (why): find the frames by walking them. */
static int open_by_walking(mf_compact_source *s, uint64_t size, const mf_compact_trailer *t,
                           int trailer_good, mf_compact_index *ix, const char *why, char *err,
                           size_t errlen)
{
    uint32_t prefix = prefix_by_header(s, size);
    if (bare_frame_at(s, prefix) && !(trailer_good && t->layout == MF_COMPACT_LAYOUT))
        return bad(s, err, errlen, prefix, "a compact log of layout 1 (an older memflow) whose "
                   "index is lost: its frames cannot be found without it");
    char line[1400];
    snprintf(line, sizeof line, "%s; every intact frame is read, found by walking the frames",
             why);
    mf_damage_add_line(&s->damage, line);
    s->layout = MF_COMPACT_LAYOUT;
    s->n_chunks = 0;
    *ix = (mf_compact_index){ .prefix_len = prefix, .header_len = prefix };
    uint64_t end = trailer_good ? t->index_offset : size;
    return walk_frames(s, prefix, end, trailer_good, ix, err, errlen);
}

int mf_compact_source_open(int fd, const char *path, mf_compact_source **out, char *err,
                           size_t errlen)
{
    *out = NULL;
    mf_compact_source *s = calloc(1, sizeof *s);
    if (!s || !(s->header = calloc(1, MF_CHUNK_SIZE)) || inflater_init(&s->own) < 0 ||
        make_room(s, 0) < 0) {
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
    char why[1024];
    int rc = read_trailer(s, (uint64_t)st.st_size, &t, why, sizeof why);
    int trailer_good = rc == 0;
    if (rc == 0) {
        s->layout = t.layout;
        rc = read_index(s, &t, &ix, why, sizeof why);
    }
    if (rc > 0)
        rc = open_by_walking(s, (uint64_t)st.st_size, &t, trailer_good, &ix, why, why,
                             sizeof why);
    if (rc < 0 || read_head(s, &ix, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s", why);
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

const mf_damage *mf_compact_source_damage(const mf_compact_source *s)
{
    return &s->damage;
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
        n = inflate_frame(s, f, e, buf, MF_CHUNK_SIZE, what, err, errlen);
        if (n >= 0)
            memset(buf + n, 0, MF_CHUNK_SIZE - (size_t)n);
    } else {
        if (!f->codec && !(f->codec = mf_codec_new()))
            return bad(s, err, errlen, e->frame_offset, "out of memory for the decoder");
        n = inflate_frame(s, f, e, f->plain, MAX_PLAIN, what, err, errlen);
        char why[320];
        if (n >= 0 && (n = mf_codec_decode(f->codec, f->plain, (size_t)n, buf, why,
                                           sizeof why)) < 0) {
            char full[400];
            snprintf(full, sizeof full, "%s: %s", what, why);
            return bad_rc(s, err, errlen, e->frame_offset, full, MF_CHUNK_DAMAGED);
        }
    }
    if (n >= 0 && (uint64_t)n != e->live_len)
        return bad_rc(s, err, errlen, e->frame_offset, "chunk decodes to the wrong length",
                      MF_CHUNK_DAMAGED);
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

/* Chunk i from its slot if a thread has started it: the result; else
 * NOT_TAKEN (and a queued slot for it is dropped: the caller decodes it
 * now).  While a thread decodes it, the caller decodes queued chunks
 * instead of waiting. */
#define NOT_TAKEN LONG_MIN
static long take(ahead *a, size_t i, uint8_t *buf, char *err, size_t errlen)
{
    slot *sl = find_slot(a, i);
    if (!sl || sl->state == SLOT_QUEUED) {
        if (sl)
            sl->state = SLOT_FREE;
        return NOT_TAKEN;
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
    long n = NOT_TAKEN;
    if (a) {
        pthread_mutex_lock(&a->lock);
        n = take(a, i, buf, err, errlen);
        for (size_t next = i + 1; next <= i + (size_t)a->n_slots; next++)
            queue(a, next);
        pthread_mutex_unlock(&a->lock);
    }
    return n == NOT_TAKEN ? decode_chunk(s, &s->own, i, buf, err, errlen) : n;
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
    mf_damage_free(&s->damage);
    free(s->header);
    free(s->entries);
    free(s->chunks);
    inflater_free(&s->own);
    free(s);
}
