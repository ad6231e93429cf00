/*
 * compact_layout.h - the bytes of a compact log (the compact form at rest,
 * analyze/compact/compact.h), shared by its writer (compact.c) and its reader
 * (compact_source.c).  docs/FORMAT.md ("Compact form") is the prose form.
 *
 *   offset 0           the live file's first prefix_len bytes (file header
 *                      and argv) as the recorder wrote them, except that
 *                      flags has MF_HEADER_COMPACT: any reader of headers
 *                      sees the same run, pid, argv
 *   prefix_len         frames: each a 64-byte mf_compact_frame header (what
 *                      chunk it holds, its times, CRC-32C of the header and
 *                      of the payload), then its payload, one zstd frame;
 *                      first the rest of chunk 0, then every chunk with
 *                      data, each densely encoded (compact_codec.h) or,
 *                      rarely, raw
 *   index_offset       the index: mf_compact_index, then one
 *                      mf_compact_entry per chunk
 *   size - 32          mf_compact_trailer: where the index is, its CRC-32C
 *
 * All integers are little-endian.  Every frame says what it is and is
 * checked on its own, so a reader finds the frames without the index and
 * trailer (a file cut short, a compaction still appending frames) by
 * walking from prefix_len, header to header, and past damage by looking
 * for the next header whose checksum holds.  Every payload also carries
 * zstd's content checksum; the index carries CRC-32C (common/checksum.h),
 * and so does the trailer itself.  Layout 1 (before frame headers: the
 * index pointed at bare zstd frames) is still read.
 */
#ifndef MEMFLOW_COMPACT_LAYOUT_H
#define MEMFLOW_COMPACT_LAYOUT_H

#include <stdint.h>

#include "checksum.h"
#include "log_format.h"

#define MF_COMPACT_MAGIC "MFCOMPCT"    /* 8 bytes, no NUL: the trailer's */
#define MF_COMPACT_LAYOUT 2u           /* version of these structs: frames with headers */
#define MF_COMPACT_LAYOUT_BARE 1u      /* the layout before: bare zstd frames (still read) */
#define MF_COMPACT_FRAME_MAGIC "MFCF"  /* 4 bytes, no NUL: a frame header's */
#define MF_COMPACT_MAX_PAYLOAD (4u * MF_CHUNK_SIZE) /* more than any chunk's zstd frame */

/* What a frame holds (mf_compact_entry.encoding). */
enum mf_compact_encoding {
    MF_COMPACT_RAW = 0,                /* the chunk's bytes as they were */
    MF_COMPACT_DENSE = 1               /* compact_codec.h's encoding of them */
};

#define MF_COMPACT_HAS_TIMES 0x1u      /* mf_compact_entry.flags: min/max known */

/* The last 32 bytes of the file. */
typedef struct mf_compact_trailer {
    char magic[8];                     /* MF_COMPACT_MAGIC */
    uint64_t index_offset;             /* where mf_compact_index starts */
    uint32_t index_size;               /* bytes of the index with its entries */
    uint32_t index_check;              /* CRC-32C of those bytes */
    uint32_t layout;                   /* MF_COMPACT_LAYOUT */
    uint32_t trailer_check;            /* CRC-32C of the 28 bytes before it */
} mf_compact_trailer;

typedef struct mf_compact_index {
    uint64_t live_size;                /* bytes of the live file */
    uint64_t events;                   /* records in all chunks */
    uint32_t prefix_len;               /* chunk 0 bytes stored raw at offset 0 */
    uint32_t header_len;               /* chunk 0 bytes the live file had */
    uint64_t head_offset;              /* frame of chunk 0's bytes after the prefix */
    uint32_t head_size;                /* its size (0: nothing after the prefix) */
    uint32_t n_chunks;                 /* entries that follow */
} mf_compact_index;                    /* 40 bytes */

typedef struct mf_compact_entry {
    uint64_t index;                    /* the chunk's index in the live file */
    uint64_t frame_offset;             /* where its frame (its header) starts */
    uint32_t frame_size;               /* the frame's bytes, header included */
    uint32_t live_len;                 /* bytes the live file had (< chunk size if cut) */
    uint32_t tid;                      /* the chunk header's thread */
    uint16_t encoding;                 /* enum mf_compact_encoding */
    uint16_t flags;                    /* MF_COMPACT_HAS_TIMES */
    uint64_t min_time_ns;              /* earliest record time */
    uint64_t max_time_ns;              /* latest record time */
    uint32_t records;                  /* records in the chunk */
    uint32_t reserved;                 /* 0 */
} mf_compact_entry;                    /* 56 bytes */

/*
 * The header of every frame (layout 2).  A reader believes a frame when its
 * magic and header_check hold; the payload must then match payload_check
 * and zstd's content checksum.  Frames may come in any order; when two
 * hold the same chunk the later one in the file counts (a writer that
 * appends may write a chunk again as it grows).
 */
typedef struct mf_compact_frame {
    char magic[4];                     /* MF_COMPACT_FRAME_MAGIC */
    uint32_t header_check;             /* CRC-32C of the header's bytes 8..63 */
    uint64_t index;                    /* the chunk's index (0: the rest of chunk 0) */
    uint32_t payload_size;             /* bytes of the zstd frame after this header */
    uint32_t payload_check;            /* CRC-32C of them */
    uint32_t live_len;                 /* bytes the live file had for the chunk */
    uint32_t tid;                      /* the chunk header's thread */
    uint16_t encoding;                 /* enum mf_compact_encoding */
    uint16_t flags;                    /* MF_COMPACT_HAS_TIMES */
    uint32_t records;                  /* records in the chunk */
    uint64_t min_time_ns;              /* earliest record time */
    uint64_t max_time_ns;              /* latest record time */
    uint32_t start;                    /* the payload's first byte's place in the chunk:
                                          chunk 0's prefix_len, else 0 */
    uint32_t reserved;                 /* 0 */
} mf_compact_frame;                    /* 64 bytes */

/* The header_check a frame header must carry. */
static inline uint32_t mf_compact_frame_sum(const mf_compact_frame *f)
{
    return mf_crc32c(0, (const char *)f + 8, sizeof *f - 8);
}

_Static_assert(sizeof(mf_compact_trailer) == 32, "compact trailer");
_Static_assert(sizeof(mf_compact_frame) == 64, "compact frame header");
_Static_assert(sizeof(mf_compact_index) == 40, "compact index");
_Static_assert(sizeof(mf_compact_entry) == 56, "compact entry");

#endif /* MEMFLOW_COMPACT_LAYOUT_H */
