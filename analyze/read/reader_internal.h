/*
 * reader_internal.h - the reader's internals: its state of one log, shared
 * by the three files of the reader: reader.c (opens logs, relates
 * processes, drives), log_scan.c (the first pass: indexes chunks, collects
 * strings) and merge.c (the second pass: events of all logs in time order).
 * Internal to analyze/read/.
 *
 * String ids the caller sees are given in the order events use them, not
 * in the order the scan met their records: a string gets its pool id when
 * the merge hands out the first event that names it.  So they depend on
 * the events alone, and a reader that follows logs while
 * they are written (and scans their chunks in whatever order they fill)
 * gives the same ids as one that reads the finished logs.
 */
#ifndef MEMFLOW_READER_INTERNAL_H
#define MEMFLOW_READER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "chunk_source.h"
#include "damage.h"
#include "event.h"
#include "idmap.h"
#include "log_header.h"
#include "record.h"
#include "string_pool.h"

/* Texts the scan read, and the pool ids handed out for them. */
typedef struct mf_rnames {
    mf_strings *texts;       /* every text the scan read (the reader's own ids) */
    mf_strings *pool;        /* the caller's pool: the ids events carry */
    uint32_t *pub;           /* by own id: its pool id (0: not handed out yet) */
    size_t n_pub;
    uint64_t late;           /* placeholders handed out whose text came afterwards */
} mf_rnames;

/* What the scan knows of one chunk, kept to look again at a growing log. */
typedef struct mf_scan_chunk {
    uint64_t index;          /* the chunk's index in the file */
    uint32_t stop;           /* offset where the scan stopped */
    uint32_t done;           /* damaged or full: nothing more can come */
    mf_chunk_state state;    /* decoding state at stop */
    uint32_t sealed;         /* the chunk header's seal at the last look (0: none) */
} mf_scan_chunk;

/*
 * A run of records of one chunk that the scan accepted: the unit the merge
 * reads.  A finished chunk is one segment; a chunk that grew while being
 * read gives one segment per look.
 */
typedef struct mf_segment {
    uint32_t log;
    uint32_t events;         /* event records in [begin, end) */
    uint64_t chunk;          /* the chunk's index in the file */
    uint32_t begin, end;     /* byte offsets inside the chunk */
    uint64_t min_ns, max_ns; /* times of its first / last event by time */
    uint64_t order;          /* tie-break between equal times: order of discovery */
    mf_chunk_state state;    /* decoding state at begin */
    int sorted;              /* event times never decrease in file order */
} mf_segment;

/* A call stack the scan found: a STACK record's place in its log, or a
 * STACK_NODE's frame and caller (chunk MF_STACK_NODE_REF); its index + 1 is
 * its reader id.  (Stack ids are given in the order the scan finds the
 * records, as they always were: they reach no output - sites get their ids
 * as events name them, outputs order stacks by their frames - and a reader
 * of the same finished logs gives the same ids, which an index on disk
 * keeps.) */
typedef struct mf_stack_ref {
    uint32_t log;
    uint32_t depth;
    uint64_t chunk;
    uint32_t offset;         /* of the record in its chunk; a node: its caller's stack
                                id in its log (0: none) */
    uint32_t caller;         /* a node: its caller's reader stack id once read (0: not
                                yet, or none) */
    uint64_t entry;          /* a node's frame, as its log wrote it */
} mf_stack_ref;

#define MF_STACK_NODE_REF UINT64_MAX

/* A log's stack id that an event (or a stack node, as its caller) named
 * before its STACK or STACK_NODE record was read (the event went out
 * without a stack, the node's stack was cut there): mf_rlog.stacks holds
 * this, and the record, read later, counts as late. */
#define MF_STACK_MISSED UINT32_MAX

/* A symbolic frame (FRAME record): its texts as the log's string ids, given
 * pool ids when it is first asked for (mf_reader_frame). */
typedef struct mf_frame_ref {
    uint32_t log;
    uint32_t function, file; /* the log's string ids */
    int named;               /* pub holds pool ids */
    mf_symbolic_frame pub;
} mf_frame_ref;

/* A THREAD or DEVICE record waiting to be handed out: the event, its name
 * as the log's string id, and where it stands (the last one of a thread or
 * device, by log, chunk and offset, names it). */
typedef struct mf_meta_ref {
    mf_event e;
    uint32_t name;           /* the log's string id */
    uint32_t offset;
    uint64_t chunk;
} mf_meta_ref;

typedef struct mf_rlog {
    char *path;
    mf_chunk_source *src;
    mf_log_meta meta;
    mf_damage damage;
    mf_idmap strings;        /* the log's string id -> own id (mf_rnames.texts) */
    uint32_t memo_id, memo_pool;  /* the string id mf_rlog_string mapped last and
                                     its pool id (0: none; forgotten at a STRING record) */
    mf_idmap stacks;         /* the log's stack id -> scan index + 1, or MF_STACK_MISSED */
    mf_idmap frames;         /* the log's frame id -> reader frame id, or MF_STACK_MISSED */
    mf_module *modules;      /* MODULE records, in the order scanned (paths: see */
    uint32_t *module_paths;  /* these, the log's string ids, given texts on demand) */
    uint64_t *module_at;     /* where each stands in the file: chunk << 21 | offset */
    size_t n_modules, cap_modules;
    size_t modules_named;    /* modules[0, n) have their path's text */
    mf_scan_chunk *chunks;   /* by index */
    size_t n_chunks, cap_chunks;
    uint64_t first_ns, last_ns;   /* earliest and latest event time (UINT64_MAX, 0: none) */
    uint64_t records;        /* records the scan accepted */
    uint64_t events;         /* event records among them */
    mf_record_limits limits;
    int writing;             /* its process may still write it: a zero word may be a
                                record not yet stored, so no hole is judged yet */
    int staged;              /* its chunks may reach it by copies from a staging
                                area until mf_reader_finish: writing till then, and
                                a sealed chunk is read up to its seal */
} mf_rlog;

/* The reader's shared tables the scan fills. */
typedef struct mf_scan_sink {
    mf_rnames names;
    mf_stack_ref *stacks;    /* reader stack ids - 1, in the order scanned */
    size_t n_stacks, cap_stacks;
    uint64_t late_stacks;    /* STACK and FRAME records read after an event went out
                                without them */
    mf_frame_ref *frames;    /* reader frame ids - 1 (FRAME records) */
    size_t n_frames, cap_frames;
    mf_meta_ref *meta;       /* THREAD and DEVICE records waiting to be handed out */
    size_t n_meta, cap_meta;
    mf_segment *segments;    /* new segments for the merge */
    size_t n_segments, cap_segments;
    uint64_t next_order;
    uint64_t scanned;        /* records scanned, all logs (serve counts them) */
} mf_scan_sink;

/*
 * Scan what is new in every chunk of log (index li): chunks not seen yet,
 * and chunks that stopped at the end of what was written.  New segments,
 * strings, stacks, threads and devices go to sink; damage to log->damage.
 * Unless log->writing, a zero record word followed by records again (or
 * before the chunk's seal) is a hole: reported, and the records after it
 * are read as a segment of their own.
 * Returns 0, or -1 with "PATH: ..." in err on a read error or out of memory.
 */
int mf_scan_log(mf_rlog *log, uint32_t li, mf_scan_sink *sink, char *err, size_t errlen);

/* The pool id of a log's string id, given now if it has none yet (a
 * placeholder "?ID" when the log has not written the string);
 * MF_STRINGS_FAILED when out of memory.  Events name one scope many times
 * in a row: the id mapped last is answered without a look. */
static inline uint32_t mf_rlog_string(mf_rlog *log, mf_rnames *names, uint32_t id);

/* mf_rlog_string's slow path (out of line). */
uint32_t mf_rlog_string_map(mf_rlog *log, mf_rnames *names, uint32_t id);

static inline uint32_t mf_rlog_string(mf_rlog *log, mf_rnames *names, uint32_t id)
{
    if (id == MF_STRING_UNKNOWN)
        return 0;
    if (id == log->memo_id)
        return log->memo_pool;
    return mf_rlog_string_map(log, names, id);
}

/* The reader id of a log's stack id; 0 when the log has not written that
 * stack (remembered, so that a STACK record read later counts as late);
 * MF_STRINGS_FAILED when out of memory. */
uint32_t mf_rlog_stack(mf_rlog *log, uint32_t id);

/* The text of a log's string id, for the reader's own use (never handed
 * out as an id): "?ID" when the log has not written it.  NULL when out of
 * memory. */
const char *mf_rlog_text(mf_rlog *log, mf_rnames *names, uint32_t id);

/* Where chunk `index` is in the log's chunk source list, or SIZE_MAX. */
size_t mf_rlog_chunk_position(const mf_rlog *log, uint64_t index);

#endif /* MEMFLOW_READER_INTERNAL_H */
