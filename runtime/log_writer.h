/*
 * log_writer.h - create the log file and hand out its chunks.
 *
 * The log is a file of MF_CHUNK_SIZE chunks mapped MAP_SHARED: what a thread
 * stores into its chunk is in the page cache at once and survives any death
 * of the process.  Chunk 0 is the file header; threads claim the others
 * under one lock (a claim is once per MiB of a thread's log).  The writer
 * owns nothing the program can take away: it re-opens the log if the
 * program closes its descriptor, never grows the file past RLIMIT_FSIZE,
 * and counts what it cannot write instead of failing the program.
 */
#ifndef MEMFLOW_LOG_WRITER_H
#define MEMFLOW_LOG_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/*
 * Create `<dir>/memflow-<pid>.mfl` (or `-<pid>-N.mfl` if taken, e.g. after
 * exec), creating dir if missing, and write the header.  ppid is recorded
 * as the parent; run_id is MEMFLOW_RUN_ID's, else the one this process (or
 * the parent it was forked from) chose; static_check covers the header and
 * argv.  Returns 0, or -1 with a message naming the path in err.
 */
int mf_log_writer_open(const char *dir, uint64_t ppid, char *err, size_t errlen);

/* Whether a log is open. */
int mf_log_writer_is_open(void);

/* The open log's path ("" if none). */
const char *mf_log_writer_path(void);

/* The open log's clock anchor: its start on the recorder's clock and the
 * wall-clock time then (header start_mono_ns, start_real_ns).  0, or -1
 * when no log is open. */
int mf_log_writer_anchor(uint64_t *mono_ns, uint64_t *real_ns);

/*
 * Claim a fresh chunk for thread tid and map it.  Returns the first byte
 * after the chunk header and sets *limit to the chunk's end, or NULL when the
 * file cannot grow (disk full, file size limit, the log removed): the caller
 * then drops the event, which the writer has counted in the header's
 * dropped_events (flag DROPPED).  After a failure the writer backs off: the
 * next claims fail at once, without a system call, until 2^k more events
 * were dropped or 2^k ms passed (k failures in a row; at most 4096 events
 * or 1 s).  Keeps the calling thread's signal state; raises no SIGXFSZ.
 */
char *mf_log_writer_claim(uint32_t tid, char **limit);

/*
 * The calling thread is done with its chunk (chunk: the chunk's first byte,
 * end: the end of its records): the chunk is sealed (mf_chunk_seal: its
 * records reach end), then a mapping of the file is unmapped, a staging
 * slot handed over to be copied into the file.
 */
void mf_log_writer_release(char *chunk, char *end);

/*
 * Under memflow run's staging: write into the file every record stored so
 * far, so that a reader of the file sees them (exit, exec, memflow_dump).
 * A no-op when chunks are mapped from the file.
 */
void mf_log_writer_flush(void);

/*
 * How the process ends, into the header: end_how (enum mf_end_how), end_ns
 * (now) and end_status, end_how stored last.  Ignored when the calling
 * process is not the log's (a vfork child borrows its parent's memory).
 * mf_log_writer_clear_end undoes it (an exec that failed).
 */
void mf_log_writer_set_end(unsigned how, int64_t status);
void mf_log_writer_clear_end(void);

/* Set or clear the header's FINISHED flag. */
void mf_log_writer_set_finished(int finished);

/* mf_log_writer_flush, then fdatasync (memflow_dump); the data is safe
 * without it. */
void mf_log_writer_sync(void);

/*
 * In a forked child: forget the parent's log (unmap it, close the file)
 * without touching it.  A new one is opened with mf_log_writer_open.
 */
void mf_log_writer_forget(void);

/* fork handlers: hold the grow lock across fork. */
void mf_log_writer_lock(void);
void mf_log_writer_unlock(void);

/* Events dropped because the file could not grow (header flag DROPPED). */
uint64_t mf_log_writer_dropped(void);

/* What the writer did since the log was opened (tests, RELIABILITY.md). */
typedef struct mf_log_writer_stats {
    uint64_t claims;          /* chunks handed out */
    uint64_t staged_claims;   /* of them, filled in memflow run's staging area */
    uint64_t failed_claims;   /* tries to grow the file that failed */
    uint64_t reopens;         /* the program took the log's descriptor: opened again */
    uint64_t dropped_events;  /* events lost because no chunk could be had */
} mf_log_writer_stats;

MF_EXPORT void mf_log_writer_get_stats(mf_log_writer_stats *out);

#endif
