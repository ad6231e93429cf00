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
 * they arrive.  docs/FORMAT.md "Order" describes the whole scheme.
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
 * Open the logs at paths[0..n) and scan them; their strings go into pool.
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
 * The next events (at most max, none after until) into out: first THREAD
 * and DEVICE names found since the last call (time 0), then events in time
 * order, process ends among them.  SAMPLE values go to samples[e->extra]
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

/* The stacks the logs hold: ids 1 .. mf_reader_n_stacks(r). */
MF_EXPORT uint32_t mf_reader_n_stacks(const mf_reader *r);

/* The symbolic frames (FRAME records) of all logs: ids 1 ..
 * mf_reader_n_frames(r), texts in the pool; NULL for 0 or an unknown id. */
MF_EXPORT uint32_t mf_reader_n_frames(const mf_reader *r);
MF_EXPORT const mf_symbolic_frame *mf_reader_frame(const mf_reader *r, uint32_t id);

/* Log i's MODULE records (the ELF modules its stacks' addresses lie in,
 * path string ids in the pool); *n of them. */
MF_EXPORT const mf_module *mf_reader_modules(const mf_reader *r, size_t i, size_t *n);

#endif /* MEMFLOW_READER_H */
