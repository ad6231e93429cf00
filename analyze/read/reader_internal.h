/*
 * reader_internal.h - the reader's internals: its state of one log, shared
 * by the three files of the reader: reader.c (opens logs, relates
 * processes, drives), log_scan.c (the first pass: indexes chunks, collects
 * strings) and merge.c (the second pass: events of all logs in time order).
 * Internal to analyze/read/.
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

/* A thread's name in one log. */
typedef struct mf_tid_name {
    uint32_t tid;
    uint32_t name;           /* pool id */
} mf_tid_name;

/* A call stack of the reader's table (STACK record). */
typedef struct mf_stack_ref {
    uint32_t log;
    uint32_t depth;
    uint64_t chunk;
    uint32_t offset;         /* of the record in its chunk */
} mf_stack_ref;

typedef struct mf_rlog {
    char *path;
    mf_chunk_source *src;
    mf_log_meta meta;
    mf_damage damage;
    mf_idmap strings;        /* the log's string id -> pool id */
    mf_idmap stacks;         /* the log's stack id -> reader stack id */
    mf_tid_name *threads;    /* THREAD records, latest last */
    size_t n_threads, cap_threads;
    mf_module *modules;      /* MODULE records, in the order scanned */
    size_t n_modules, cap_modules;
    mf_scan_chunk *chunks;   /* by index */
    size_t n_chunks, cap_chunks;
    uint64_t first_ns, last_ns;   /* earliest and latest event time (UINT64_MAX, 0: none) */
    uint64_t records;        /* records the scan accepted */
    uint64_t events;         /* event records among them */
    mf_record_limits limits;
    int writing;             /* its process may still write it: a zero word may be a
                                record not yet stored, so no hole is judged yet */
} mf_rlog;

/* The reader's shared tables the scan fills. */
typedef struct mf_scan_sink {
    mf_strings *pool;
    mf_stack_ref *stacks;    /* reader stack ids - 1 */
    size_t n_stacks, cap_stacks;
    mf_event *meta;          /* THREAD and DEVICE events waiting for the next batch */
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

/* The pool id of a log's string id (a placeholder "?ID" when the log has
 * not written it); MF_STRINGS_FAILED when out of memory. */
uint32_t mf_rlog_string(mf_rlog *log, mf_strings *pool, uint32_t id);

/* Where chunk `index` is in the log's chunk source list, or SIZE_MAX. */
size_t mf_rlog_chunk_position(const mf_rlog *log, uint64_t index);

#endif /* MEMFLOW_READER_INTERNAL_H */
