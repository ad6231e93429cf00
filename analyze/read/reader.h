/*
 * reader.h - the streaming reader: the events of one or many logs (the
 * processes of one run), merged into one time order, in bounded memory.
 *
 * Data flow: chunk_source (bytes) -> log_header (chunk 0) -> log_scan (first
 * pass: index, strings, damage) -> merge (second pass: events in time
 * order) -> the caller, in batches (the model, cli/serve, mf_log_read).
 * Besides the records, the reader tells how the logs relate: which log is
 * a process's next image (exec), which one a forked child's, and when each
 * process ended (the header's end mark; for an exec, the next image's
 * start; without a mark, its last event), and hands that end to the caller
 * as an MF_EV_PROCESS_END event in its place in time.
 *
 * A log still being written can be looked at again (mf_reader_refresh):
 * only what it gained since is scanned and merged, so a long-lived reader
 * costs what is new, not what is old.  Events that arrive late (stamped
 * before events already handed out: another thread's record not yet
 * written at the last look, or CUPTI's late buffers) are handed out when
 * they arrive, and counted (mf_reader_late): a caller that takes events
 * only up to a time no record can still come before (memflow run during
 * the run) gets exactly what a reader of the finished logs gives, or
 * knows it did not.  docs/FORMAT.md "Order" describes the whole scheme.
 */
#ifndef MEMFLOW_READER_H
#define MEMFLOW_READER_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "damage.h"
#include "event.h"
#include "log_format.h"
#include "string_pool.h"

typedef struct mf_reader mf_reader;

typedef struct mf_reader_options {
    int merge_runs;          /* merge logs whose run ids differ */
    int follow;              /* the logs are being written and will be finished
                                (mf_reader_finish): THREAD and DEVICE names wait
                                for the finish, and claimed chunks missing from
                                a file are damage only then */
    int staged;              /* chunks reach the logs by copies from a staging
                                area while their processes run (a log of a run
                                in progress, memflow serve): read as
                                mf_reader_add_log's staged logs */
} mf_reader_options;

/* What the reader knows of one log (one process image). */
typedef struct mf_log_info {
    const char *path;
    mf_file_header header;   /* checked and repaired (log_header.h) */
    int argc;
    char *const *argv;
    const char *program;     /* argv joined with spaces */
    uint64_t first_ns, last_ns;  /* its earliest and latest event (UINT64_MAX, 0: none) */
    uint64_t records;        /* records read */
    int parent;              /* the image this one was forked from (same program
                                image in the parent), or -1 */
    int prev_image, next_image;  /* images of the same pid before / after exec, or -1 */
    uint64_t end_ns;         /* when this image ended; 0 while it runs */
    unsigned end_how;        /* enum mf_end_how, as marked or inferred */
    int64_t end_status;      /* exit status or signal when marked */
    int end_inferred;        /* no end mark: inferred from a next image or the last event */
    int abnormal;            /* killed by a signal, or ended with no mark and no clean close */
    int running;             /* no end mark and the process still runs */
    const mf_damage *damage;
} mf_log_info;

/* mf_reader_open's return when the logs belong to different runs. */
#define MF_READER_OTHER_RUNS (-2)

/*
 * Open the logs at paths[0..n) and scan them.  The logs are read in the
 * order their process images started (then by pid, then path), whatever
 * order paths gives: log i of mf_reader_log and e->log is that order.
 * String ids of pool are given as the events that name them are handed
 * out (event.h), so they follow the events alone.
 * Returns 0; -1 with "PATH: why" in err when a log cannot be read at all
 * (missing, not a memflow log, another version, out of memory); or
 * MF_READER_OTHER_RUNS with a message naming two logs whose header run ids
 * differ, unless opt->merge_runs.  Damage is no error: see each log's
 * damage list.
 */
MF_EXPORT int mf_reader_open(mf_reader **out, const char *const *paths, size_t n,
                             mf_strings *pool, const mf_reader_options *opt, char *err,
                             size_t errlen);

MF_EXPORT void mf_reader_close(mf_reader *r);

MF_EXPORT size_t mf_reader_n_logs(const mf_reader *r);
MF_EXPORT const mf_log_info *mf_reader_log(const mf_reader *r, size_t i);

/* The earliest event of all logs (UINT64_MAX when none). */
MF_EXPORT uint64_t mf_reader_t0(const mf_reader *r);

/*
 * The next events (at most max, none after until) into out: events in time
 * order, process ends among them, then, once no event up to until is left,
 * the THREAD and DEVICE names found since they were last handed out (time
 * 0; in file order, so the last of a thread names it) - with follow, only
 * after mf_reader_finish.  SAMPLE values go to samples[e->sample.index]
 * (max of them; valid until the next call).  Returns how many, 0 when none
 * is left (for now: a refresh may bring more), or -1 with a message in err.
 */
MF_EXPORT long mf_reader_next(mf_reader *r, mf_event *out, mf_sample_values *samples,
                              size_t max, uint64_t until, char *err, size_t errlen);

/*
 * Look again at logs being written: new chunks, chunks that grew, header
 * changes (an end mark).  0, or -1 with a message in err.
 */
MF_EXPORT int mf_reader_refresh(mf_reader *r, char *err, size_t errlen);

/*
 * Follow one more log (a process of the run that started since): it is
 * read as log mf_reader_n_logs() - 1, and scanned now with the others.
 * staged: its chunks may reach it by copies (pwrite) from a staging area
 * (memflow run's; docs/FORMAT.md), also after its process is gone, until
 * mf_reader_finish: till then a sealed chunk is read only up to its seal,
 * past which a record being copied may be half there, and no hole or
 * missing chunk is judged; 0: the process writes it itself (each record's
 * word last), and chunks are read up to their first zero word while it
 * runs.
 * 0, or -1 with "PATH: why" in err.
 */
MF_EXPORT int mf_reader_add_log(mf_reader *r, const char *path, int staged, char *err,
                                size_t errlen);

/*
 * The logs are finished (their processes are gone, their last records
 * written): look at them a last time, as mf_reader_open would (claimed
 * chunks the file lacks are damage now), and hand out the THREAD and
 * DEVICE names after the events.  0, or -1 with a message in err.
 */
MF_EXPORT int mf_reader_finish(mf_reader *r, char *err, size_t errlen);

/*
 * How many times what was handed out so far differs from what a reader of
 * the finished logs hands out: records that came after events stamped
 * later were handed out (a log that grew behind the reader's time), a
 * process end that moved after it was handed out, a string or stack an
 * event named before its record was read, a log added after one that
 * started later.  0 when the events, their order and their ids are exactly
 * those of a reader opened on the finished logs.  *by_ns (may be NULL):
 * the most such a record came late by.
 */
MF_EXPORT uint64_t mf_reader_late(const mf_reader *r, uint64_t *by_ns);

/*
 * The time of the first event record of a chunk image (a chunk header, then
 * records, as a staging slot or the file holds it; len bytes at chunk),
 * for memflow run's view of chunks not yet in a log.  1 with *time_ns, or
 * 0 when it has none yet (or is no chunk, or is damaged before one).
 */
MF_EXPORT int mf_chunk_first_event(const uint8_t *chunk, size_t len, uint64_t *time_ns);

/* The event records the logs hold (as scanned so far): what
 * mf_reader_next hands out in all, besides process ends and names. */
MF_EXPORT uint64_t mf_reader_events(const mf_reader *r);

/* Records scanned and events decoded so far, all logs. */
MF_EXPORT void mf_reader_counts(const mf_reader *r, uint64_t *scanned, uint64_t *decoded);

/*
 * Stack id (as in ALLOC events) into its log and return addresses: up to
 * max of them into ip, innermost first.  An entry with MF_STACK_FRAME_TAG
 * is a symbolic frame whose low 32 bits are translated to the reader's
 * frame id (mf_reader_frame; 0 when its log never wrote it).  Returns the
 * depth, or -1 when the id is unknown or the record cannot be read.
 */
MF_EXPORT int mf_reader_stack(mf_reader *r, uint32_t id, uint32_t *log, uint64_t *ip,
                              uint32_t max);

/* The stacks the logs hold (read so far): ids 1 .. mf_reader_n_stacks(r),
 * in the order the scan read their records. */
MF_EXPORT uint32_t mf_reader_n_stacks(const mf_reader *r);

/* Whether the logs hold STACK records (read so far). */
MF_EXPORT int mf_reader_has_stacks(const mf_reader *r);

/* The symbolic frames (FRAME records) of all logs: ids 1 ..
 * mf_reader_n_frames(r); NULL for 0 or an unknown id.  A frame's texts get
 * their pool ids when it is first asked for (an output or a site names it:
 * in the order events reach them). */
MF_EXPORT uint32_t mf_reader_n_frames(const mf_reader *r);
MF_EXPORT const mf_symbolic_frame *mf_reader_frame(mf_reader *r, uint32_t id);

/* Log i's MODULE records (the ELF modules its stacks' addresses lie in;
 * paths the reader's texts, valid while it is open); *n of them, NULL
 * when out of memory. */
MF_EXPORT const mf_module *mf_reader_modules(mf_reader *r, size_t i, size_t *n);

#endif /* MEMFLOW_READER_H */
