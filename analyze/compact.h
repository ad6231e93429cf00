/*
 * compact.h - the compact form of a finished log at rest: the same chunks,
 * densely encoded and compressed with zstd, with an index of chunk times.
 * docs/FORMAT.md describes the bytes.  `memflow run` compacts the logs of a
 * run when the program has ended; `memflow compact LOG...` does it by hand.
 *
 * Crash safety: the compact form is written to a new private file in the
 * log's folder, synced, and renamed over the live log only when complete;
 * a SIGKILL at any moment leaves either the whole live log or the whole
 * compact log, never less.
 */
#ifndef MEMFLOW_COMPACT_H
#define MEMFLOW_COMPACT_H

#include <stddef.h>
#include <stdint.h>

#include "chunk_source.h"

typedef struct mf_compact_result {
    uint64_t bytes_before;       /* live log size on disk (allocated blocks) */
    uint64_t bytes_after;        /* compact log size */
    uint64_t events;             /* records kept */
} mf_compact_result;

/*
 * Replace the finished live log at path with its compact form.  A log
 * that is already compact is left alone (0, result zero).  Returns 0, or
 * -1 with "FILE: ..." in err and the live log untouched.
 */
int mf_compact_log(const char *path, mf_compact_result *result, char *err, size_t errlen);

/*
 * The compact form's half of mf_chunk_source (chunk_source.c calls these
 * when the header has MF_HEADER_COMPACT): the same contract as the
 * mf_chunk_source functions, over the open file fd (owned by the caller).
 */
typedef struct mf_compact_source mf_compact_source;
int mf_compact_source_open(int fd, const char *path, mf_compact_source **out, char *err,
                           size_t errlen);
const uint8_t *mf_compact_source_header(const mf_compact_source *s, size_t *len);
const mf_chunk_info *mf_compact_source_chunks(const mf_compact_source *s, size_t *n);
long mf_compact_source_read(mf_compact_source *s, size_t i, uint8_t *buf, char *err,
                            size_t errlen);
void mf_compact_source_close(mf_compact_source *s);

#endif /* MEMFLOW_COMPACT_H */
