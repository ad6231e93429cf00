/*
 * chunk_source.h - a log's chunks as raw bytes, whatever form the file is
 * in: live (.mfl as the recorder writes it) or compact at rest
 * (MF_HEADER_COMPACT, analyze/compact/compact.h).  The reader is built on it;
 * nothing else in memflow reads log files.
 *
 * Contract: a chunk comes back exactly as the recorder wrote it (chunk
 * header, records, zero tail), so one decoder serves both forms.  Reading
 * never faults: a live file is read with pread, never mapped, so a file cut
 * short under the reader cannot raise SIGBUS; holes of a sparse file are
 * skipped without reading them, so memory and time follow the real data.
 */
#ifndef MEMFLOW_CHUNK_SOURCE_H
#define MEMFLOW_CHUNK_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compiler.h"

#include "log_format.h"

typedef struct mf_chunk_source mf_chunk_source;

/* Where a chunk is and what is known of it without decoding it. */
typedef struct mf_chunk_info {
    uint64_t index;          /* the chunk's index in the live layout (>= 1) */
    uint64_t file_offset;    /* where its bytes start in the file (for messages) */
    uint32_t tid;            /* the thread of its chunk header */
    uint32_t has_times;      /* 1 when the times below are known (compact form) */
    uint64_t min_time_ns;    /* earliest record time in the chunk */
    uint64_t max_time_ns;    /* latest record time in the chunk */
} mf_chunk_info;

/*
 * Open the log at path (either form).  Returns 0, or -1 with a message
 * naming the file and the reason in err ("FILE: not a memflow log", "FILE:
 * empty file, not a memflow log", "FILE: cannot open: ...").  The header's
 * fields are not checked here (log_header.c does, and tells damage
 * from another version); only that the file starts like a log: its magic,
 * of which one byte may be damaged.
 */
MF_EXPORT int mf_chunk_source_open(const char *path, mf_chunk_source **out, char *err,
                                   size_t errlen);

/*
 * mf_chunk_source_open over a file the caller opened (e.g. with O_NOFOLLOW,
 * to be sure which file is read); the source owns fd from here on, and
 * closes it even when the open fails.  path is for messages.
 */
MF_EXPORT int mf_chunk_source_open_fd(int fd, const char *path, mf_chunk_source **out, char *err,
                            size_t errlen);

/*
 * Chunk 0 as written: the file header and the argv bytes (at most
 * MF_CHUNK_SIZE bytes, *len of them valid).  The pointer lives as long as
 * the source.
 */
MF_EXPORT const uint8_t *mf_chunk_source_header(const mf_chunk_source *s, size_t *len);

/*
 * The chunks with data, in index order (chunk 0 excluded; never-written
 * chunks and holes left out).  The array lives as long as the source.
 */
MF_EXPORT const mf_chunk_info *mf_chunk_source_chunks(const mf_chunk_source *s, size_t *n);

/* mf_chunk_source_read*: the chunk's bytes are damaged (a compact frame
 * that fails its checks): err says "FILE: offset N: what"; other chunks
 * read on. */
#define MF_CHUNK_DAMAGED (-2)

/*
 * Read chunk chunks[i] into buf (MF_CHUNK_SIZE bytes).  Returns the number of
 * bytes that came from the file (the rest of buf is zeroed), -1 with
 * "FILE: offset N: what" in err when the bytes cannot be had (an I/O error),
 * or MF_CHUNK_DAMAGED (the same message) when the chunk is lost to damage.
 */
MF_EXPORT long mf_chunk_source_read(mf_chunk_source *s, size_t i, uint8_t *buf, char *err,
                          size_t errlen);

/*
 * Chunk chunks[i] will be read soon (a hint; reads work without it): a
 * compact log decodes it on another core meanwhile.  The chunks after the
 * one just read are decoded ahead anyway, so a reader that reads in index
 * order needs no hints.  A live log ignores it.
 */
MF_EXPORT void mf_chunk_source_prefetch(mf_chunk_source *s, size_t i);

/*
 * Read len bytes of chunk chunks[i] from offset into buf: the same bytes
 * mf_chunk_source_read gives there.  Returns how many came from the file
 * (the rest of buf is zeroed), or -1 as mf_chunk_source_read.  A live log
 * reads just those bytes; a compact log decodes the whole chunk (the last
 * 16 decoded are kept, so reading chunks piece by piece, several in turn,
 * decodes each about once).
 */
MF_EXPORT long mf_chunk_source_read_at(mf_chunk_source *s, size_t i, uint32_t offset, uint8_t *buf,
                             size_t len, char *err, size_t errlen);

/* The file's size in bytes when it was opened or last refreshed (a
 * compact log: the size its live form had). */
MF_EXPORT uint64_t mf_chunk_source_file_size(const mf_chunk_source *s);

/*
 * A live log being written: look again for chunks claimed since open (and
 * for chunks already returned, re-read them as they grow).  0, or -1 as
 * mf_chunk_source_open.  Compact logs do not change.
 */
MF_EXPORT int mf_chunk_source_refresh(mf_chunk_source *s, char *err, size_t errlen);

/*
 * What opening the file found damaged: a compact log without its trailer
 * or index, or with frames that are no frames ("FILE: offset N: compact
 * log: ..."); every intact chunk is still listed.  Empty for a live log.
 */
struct mf_damage;
MF_EXPORT const struct mf_damage *mf_chunk_source_damage(const mf_chunk_source *s);

/*
 * The log's writer is gone (a reader that knows it, a compaction): chunks
 * claimed whose header was never written but which hold data - their header
 * zeroed by a torn write or a bad sector - are listed too, so that readers
 * report them (the chunk header is zeros) and compaction keeps their bytes.
 * A live log only; 0, or -1 with "FILE: ..." in err on a read error.
 */
MF_EXPORT int mf_chunk_source_settle(mf_chunk_source *s, char *err, size_t errlen);

/* The path the source was opened with. */
MF_EXPORT const char *mf_chunk_source_path(const mf_chunk_source *s);

MF_EXPORT void mf_chunk_source_close(mf_chunk_source *s);

/* pread until len bytes or the end of the file (EINTR retried): the byte
 * count, short only at the end of the file, or -1 with errno set.  The
 * one read loop of the log readers (live and compact). */
MF_EXPORT ssize_t mf_read_full(int fd, void *buf, size_t len, uint64_t offset);

#endif /* MEMFLOW_CHUNK_SOURCE_H */
