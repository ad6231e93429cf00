/*
 * compact_codec.h - the dense encoding of one log chunk, the first half of
 * the compact form (analyze/compact/compact.h; zstd is the second half, applied by
 * compact.c to what this codec produces).
 *
 * A chunk's records are split into streams of like bytes (record kinds,
 * time deltas, sizes, addresses, back-references, other fields, raw bytes)
 * and the malloc family's compact records are predicted from what the
 * chunk said before: a free names the live block it releases by its place
 * in the chunk's live table, an allocation's usable size is the smallest
 * size class seen so far that holds it, its address the block the same
 * size class freed last (the allocator's LIFO cache) or the next one in the
 * class's slab.  Every other record is kept as column deltas against the
 * previous record of its type, or verbatim.  Whatever the codec does not
 * understand (damage, bytes after the end of the records) is kept verbatim,
 * so any chunk - damaged, truncated, half-written - decodes byte for byte.
 *
 * Each chunk is encoded on its own (the model starts empty), so any chunk
 * of a compact log can be read without the others.  docs/FORMAT.md
 * ("Compact form") describes the bytes.
 */
#ifndef MEMFLOW_COMPACT_CODEC_H
#define MEMFLOW_COMPACT_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

typedef struct mf_codec mf_codec;

/* What the encoder learnt about a chunk while encoding it. */
typedef struct mf_chunk_summary {
    uint32_t records;        /* records before the end (or the damage) */
    uint32_t timed;          /* how many of them carry a time */
    uint64_t min_time_ns;    /* their earliest time (UINT64_MAX if none) */
    uint64_t max_time_ns;    /* their latest time (0 if none) */
} mf_chunk_summary;

/* A codec (model state and buffers for one chunk at a time), or NULL when
 * out of memory.  Not thread-safe: one per thread. */
MF_EXPORT mf_codec *mf_codec_new(void);
MF_EXPORT void mf_codec_free(mf_codec *c);

/*
 * Encode the len bytes at chunk (len <= MF_CHUNK_SIZE: the bytes the live
 * file holds for that chunk).  On return *out points at the encoding (it
 * lives until the next call on c) and the result is its size; sum says
 * what the chunk holds.  Never fails: any bytes can be encoded.
 */
MF_EXPORT size_t mf_codec_encode(mf_codec *c, const uint8_t *chunk, size_t len,
                                 const uint8_t **out, mf_chunk_summary *sum);

/*
 * Decode an encoding back into chunk (MF_CHUNK_SIZE bytes): the bytes
 * mf_codec_encode was given, the rest of the buffer zeroed.  Returns their
 * count, or -1 with what is wrong ("record 12 at chunk offset 376: a
 * back-reference past the live blocks") in err when enc is not a valid
 * encoding.  Never reads or writes out of bounds, whatever enc holds.
 */
MF_EXPORT long mf_codec_decode(mf_codec *c, const uint8_t *enc, size_t enc_len, uint8_t *chunk,
                               char *err, size_t errlen);

#endif /* MEMFLOW_COMPACT_CODEC_H */
