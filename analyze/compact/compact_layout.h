/*
 * compact_layout.h - the bytes of a compact log (the compact form at rest,
 * analyze/compact/compact.h), shared by its writer (compact.c) and its reader
 * (compact_source.c).  docs/FORMAT.md ("Compact form") is the prose form.
 *
 *   offset 0           the live file's first prefix_len bytes (file header
 *                      and argv) as the recorder wrote them, except that
 *                      flags has MF_HEADER_COMPACT: any reader of headers
 *                      sees the same run, pid, argv
 *   prefix_len         zstd frames, one per chunk: first the rest of chunk 0,
 *                      then every chunk with data, each densely encoded
 *                      (compact_codec.h) or, rarely, raw
 *   index_offset       the index: mf_compact_index, then one
 *                      mf_compact_entry per chunk
 *   size - 32          mf_compact_trailer: where the index is, its CRC-32C
 *
 * All integers are little-endian.  Every frame carries zstd's content
 * checksum; the index carries CRC-32C (common/checksum.h), and so does the
 * trailer itself.
 */
#ifndef MEMFLOW_COMPACT_LAYOUT_H
#define MEMFLOW_COMPACT_LAYOUT_H

#include <stdint.h>

#define MF_COMPACT_MAGIC "MFCOMPCT"    /* 8 bytes, no NUL: the trailer's */
#define MF_COMPACT_LAYOUT 1u           /* version of these structs */

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
    uint64_t frame_offset;             /* where its zstd frame starts */
    uint32_t frame_size;               /* the frame's bytes */
    uint32_t live_len;                 /* bytes the live file had (< chunk size if cut) */
    uint32_t tid;                      /* the chunk header's thread */
    uint16_t encoding;                 /* enum mf_compact_encoding */
    uint16_t flags;                    /* MF_COMPACT_HAS_TIMES */
    uint64_t min_time_ns;              /* earliest record time */
    uint64_t max_time_ns;              /* latest record time */
    uint32_t records;                  /* records in the chunk */
    uint32_t reserved;                 /* 0 */
} mf_compact_entry;                    /* 56 bytes */

_Static_assert(sizeof(mf_compact_trailer) == 32, "compact trailer");
_Static_assert(sizeof(mf_compact_index) == 40, "compact index");
_Static_assert(sizeof(mf_compact_entry) == 56, "compact entry");

#endif /* MEMFLOW_COMPACT_LAYOUT_H */
