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
#include <sys/types.h>

#include "compiler.h"

#include "chunk_source.h"

typedef struct mf_compact_result {
    uint64_t bytes_before;       /* live log size on disk (allocated blocks) */
    uint64_t bytes_after;        /* compact log size */
    uint64_t events;             /* records kept */
    uint64_t chunks;             /* chunks with data */
    uint64_t raw_chunks;         /* of them, kept raw (the dense encoding did not fit) */
} mf_compact_result;

/* Why mf_compact_log failed (every value is negative: `< 0` means failed). */
enum mf_compact_status {
    MF_COMPACT_FAILED = -1,      /* I/O error, out of memory, stopped by progress */
    MF_COMPACT_BUSY = -2,        /* a process still writes the log (or may: see err) */
    MF_COMPACT_REFUSED = -3      /* not a regular file (a symlink, ...) or not a memflow log */
};

/* The steps mf_compact_options.progress hears of. */
enum mf_compact_step {
    MF_COMPACT_STEP_FRAME = 1,   /* n frames are written to the new file */
    MF_COMPACT_STEP_SYNCED = 2,  /* the new file is complete and synced, not yet renamed */
    MF_COMPACT_STEP_RENAMED = 3  /* it replaced the live log; the folder is not yet synced */
};

typedef struct mf_compact_options {
    int level;                   /* zstd level; 0 = 3 (zstd's default) */
    /*
     * Called after each step; a nonzero return before RENAMED stops the
     * compaction: the new file is removed, the live log untouched, and
     * mf_compact_log returns MF_COMPACT_FAILED ("stopped").  NULL: none.
     */
    int (*progress)(void *arg, enum mf_compact_step step, uint64_t n);
    void *arg;
} mf_compact_options;

/*
 * Replace the finished live log at path with its compact form.  A log
 * that is already compact is left alone (0, result zero).  Returns 0, or
 * -1 with "FILE: ..." in err and the live log untouched.
 *
 * Refuses (MF_COMPACT_REFUSED) a path that is a symbolic link (never
 * followed) or no regular file, and (MF_COMPACT_BUSY) a log whose writing
 * process still has it open (the header's pid on this host), or may have
 * it (a log of another host not marked finished, a process memflow may not
 * inspect that started before the log).  Temporary files of compactions
 * that were killed are removed when their process is gone.
 */
MF_EXPORT int mf_compact_log(const char *path, mf_compact_result *result, char *err, size_t errlen);

/*
 * Remove from folder dir what compactions that were killed left there: the
 * files .LOG.compact-PID-XXXXXX whose process PID is gone (regular files
 * of this user only).  No reader takes them for logs (their names are no
 * log names, and one still being written holds no log header at offset
 * 0).  Returns how many were removed.
 */
MF_EXPORT int mf_compact_clean_folder(const char *dir);

/* mf_compact_log with options (NULL = defaults). */
MF_EXPORT int mf_compact_log_with(const char *path, const mf_compact_options *opt,
                        mf_compact_result *result, char *err, size_t errlen);

/*
 * Compaction while the log grows (memflow run compacts the chunks of its
 * program's log as they become final).  open starts the compact form of
 * the live log at path, which must be the file (dev, ino) and is still
 * written: it creates the new private file beside it (offset 0 holds no
 * log header until finish: the file is never taken for a log) and returns
 * the writer, or NULL with "FILE: ..." in err.  add compacts chunk index,
 * whose bytes the caller knows are final (no record will be written into
 * it again: memflow run's drain wrote it from a full slot); 0, or < 0
 * (err; then abandon).  finish, once the
 * log's writer is gone, does what mf_compact_log does (opt: its progress;
 * NULL: open's), reusing the frames
 * of chunks that still read as they did when added: the result equals
 * mf_compact_log's except for the frames' order in the file (the same
 * frames, index, header and trailer).  It frees w and returns as
 * mf_compact_log_with (the live log untouched on failure, the new file
 * removed).  abandon removes the new file and frees w (NULL: nothing).
 * One thread at a time may use a writer.
 */
typedef struct mf_compact_writer mf_compact_writer;
MF_EXPORT mf_compact_writer *mf_compact_writer_open(const char *path, dev_t dev, ino_t ino,
                                                    const mf_compact_options *opt, char *err,
                                                    size_t errlen);
MF_EXPORT int mf_compact_writer_add(mf_compact_writer *w, uint64_t index, char *err,
                                    size_t errlen);
MF_EXPORT int mf_compact_writer_finish(mf_compact_writer *w, const mf_compact_options *opt,
                                       mf_compact_result *result, char *err, size_t errlen);
MF_EXPORT void mf_compact_writer_abandon(mf_compact_writer *w);

/*
 * The compact form's half of mf_chunk_source (chunk_source.c calls these
 * when the header has MF_HEADER_COMPACT): the same contract as the
 * mf_chunk_source functions, over the open file fd (owned by the caller;
 * path is kept, not copied, for messages).  The header comes back as the
 * recorder wrote it (MF_HEADER_COMPACT clear); mf_chunk_info.file_offset
 * is where the chunk stood in the live log, so a reader's messages name
 * the same offsets in both forms; has_times and the times are filled.
 * Damage is no failure: a file without its trailer or index, or with
 * damaged frames, opens with every intact frame (mf_compact_source_damage
 * says what is lost), and a chunk whose frame fails its checks reads as
 * MF_CHUNK_DAMAGED (chunk_source.h).  Only a file that cannot be read, a
 * layout this memflow does not know, or a layout-1 file without its index
 * fail to open.
 */
typedef struct mf_compact_source mf_compact_source;
MF_EXPORT int mf_compact_source_open(int fd, const char *path, mf_compact_source **out, char *err,
                           size_t errlen);
MF_EXPORT const uint8_t *mf_compact_source_header(const mf_compact_source *s, size_t *len);
MF_EXPORT const mf_chunk_info *mf_compact_source_chunks(const mf_compact_source *s, size_t *n);
MF_EXPORT long mf_compact_source_read(mf_compact_source *s, size_t i, uint8_t *buf, char *err,
                            size_t errlen);
/* The size the live log had: its chunks' offsets and a cut at the end
 * read the same in both forms. */
MF_EXPORT uint64_t mf_compact_source_live_size(const mf_compact_source *s);
/* What open found wrong (a missing trailer, frames that are no frames):
 * the damage list of the file, "FILE: offset N: compact log: ...". */
struct mf_damage;
MF_EXPORT const struct mf_damage *mf_compact_source_damage(const mf_compact_source *s);
MF_EXPORT void mf_compact_source_close(mf_compact_source *s);
/* Chunk i will be read soon: decode it on another core meanwhile (chunks
 * after the one just read are decoded ahead without being named). */
MF_EXPORT void mf_compact_source_prefetch(mf_compact_source *s, size_t i);

#endif /* MEMFLOW_COMPACT_H */
