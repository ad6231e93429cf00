/*
 * index.h - the index `memflow view` answers from: a run's blocks, its
 * picture at every time resolution and its occupancy, arranged so that any
 * time x address window of any view (one process on one device) is
 * answered by reading a few pieces of one file, whatever the log's length.
 * docs/FORMAT.md "The view index" describes the file.
 *
 * Data flow: reader (events in time order) -> model (pairs allocations and
 * frees into blocks; mf_model_options.on_block tells every block as it
 * starts and ends, on_role every change of a live block's role, on_oom
 * every out-of-memory error with its post-mortem) -> the builder:
 * index_build.c keeps each ended block (with its role) in the time bucket
 * of its lifetime level, follows the occupancy and keeps each view's OOMs;
 * index_cells.c sweeps the held bytes of each view over time into columns
 * of cells (bytes x ns per address granule, and the scope and the role
 * that held the most), merged pairwise into every coarser time level;
 * pieces are written
 * as time passes them, so memory follows what is live, not the log -> the
 * index file, beside the first log (LOG.mfi) -> the queries
 * (index_query.c) -> cli/view_api.c.
 *
 * Time levels: level l has columns of 2^(wshift + l) ns.  Cells exist from
 * the level at which the run takes at most about MF_INDEX_BASE_COLS
 * columns (mf_index_cell_level) up; their address granule is a view's own,
 * doubled while the view holds more than MF_INDEX_ROWS granules at once,
 * so a column has about that many cells at most.  Blocks: a block whose
 * lifetime is at most 2^(wshift + cell level + k) ns is kept in bucket
 * alloc >> (wshift + cell level + k) of lifetime level k, so a window
 * reads two buckets a level; a bucket of more than IX_SORT_MIN blocks
 * (long-lived ones, mostly) is written sorted by address in pieces that
 * say the addresses they span, so a window narrow in address reads few.
 *
 * An index is reused when its header names the same logs (path, size,
 * mtime, run id) and the same version; logs still being written are
 * indexed anew in a file of their own that follows them
 * (mf_index_refresh) and is kept only when they are finished.  String and
 * stack ids are those of the reader of the same logs (the same bytes give
 * the same ids); a reused index keeps its strings in its file.  Not
 * thread-safe: one thread asks (mf_index_load_sites excepted).
 */
#ifndef MEMFLOW_INDEX_H
#define MEMFLOW_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "model.h"
#include "ranges.h"
#include "sites.h"
#include "string_pool.h"

#define MF_INDEX_VERSION 3
#define MF_INDEX_LEVELS 40
#define MF_INDEX_BASE_COLS 32768  /* columns the run takes at most at the finest cell level */
#define MF_INDEX_ROWS 256         /* granules a view holds at once, at most */

/* One block as the index hands it out. */
typedef struct mf_index_block {
    uint64_t addr, requested, actual;
    uint64_t alloc_ns;
    uint64_t free_ns;         /* MF_LIVE_AT_END: live at the index's end */
    uint32_t scope, name, tid, stack;
    uint16_t flags;
    uint8_t end;              /* enum mf_block_end */
    uint8_t level;            /* its lifetime level */
    uint8_t role;             /* mf_block.role: enum mf_block_role | MF_ROLE_* bits, as it
                                 was when it ended (live ones: as it is) */
    uint32_t view;            /* index into the views */
} mf_index_block;

/* One cell: over [t_from, t_to) ns and [addr, addr + bytes), the fraction
 * of bytes x ns held (0..1], and the scope and the role (enum
 * mf_block_role: what its blocks were at each moment) that held the most
 * of it. */
typedef struct mf_index_cell {
    uint64_t t_from, t_to;    /* absolute times */
    uint64_t addr, bytes;
    double fill;
    uint32_t scope;
    uint8_t role;
} mf_index_cell;

/* The occupancy of one column of a level: held bytes (requested) at its
 * lowest, highest and last, and the highest allocator / driver sample
 * (UINT64_MAX: none in it). */
typedef struct mf_index_occ {
    uint64_t col;
    uint64_t min, max, last;
    uint64_t sample;
} mf_index_occ;

/* A scope of a view's legend. */
typedef struct mf_index_scope {
    uint32_t scope;
    uint64_t bytes;           /* requested bytes allocated in all */
    uint64_t count;
} mf_index_scope;

#define MF_INDEX_OOM_TOP MF_OOM_TOP   /* scopes kept of what was live at an OOM */
#define MF_INDEX_OOMS 1024            /* OOMs kept per view; more are counted */

/* An allocation that failed for want of memory (an OOM record, or the
 * post-mortem of a process an OOM killer killed): what it asked, what the
 * device had as recorded, and what its process held on the device then
 * (from the model's post-mortem: known for the first MF_OOM_KEPT OOMs of
 * the logs, once they are finished or after the next refresh). */
typedef struct mf_index_oom {
    uint64_t time_ns;         /* absolute */
    uint64_t requested;       /* bytes asked for */
    uint64_t device_free;     /* the device's free memory; UINT64_MAX: unknown */
    uint64_t device_limit;    /* its total or the allocator's limit; 0: unknown */
    uint32_t scope;           /* the request's scope (string id) */
    uint16_t route;           /* enum mf_oom_route */
    uint8_t known;            /* live_*, tensors and top are known */
    uint8_t tensors;          /* what was live is sub-blocks (PyTorch's tensors) */
    uint64_t live_bytes, live_count;   /* held then (tensors, or blocks) */
    mf_oom_share top[MF_INDEX_OOM_TOP];   /* that by scope, most bytes first */
    uint32_t n_top;
    uint32_t reserved;
} mf_index_oom;

/* One process on one device. */
typedef struct mf_index_view {
    uint16_t device;
    uint32_t pid;
    uint64_t first_ns, last_ns;     /* its first and last block event */
    uint64_t peak_bytes, peak_ns;   /* most requested bytes held at once, first time */
    uint64_t held_bytes;            /* held at the index's end */
    uint64_t blocks;                /* blocks started */
    uint64_t min_addr, max_addr;    /* lowest address, highest end */
    mf_index_block largest_leak;    /* the largest never freed (requested 0: none) */
    mf_ranges ranges;               /* addresses used (the page's address axis) */
    mf_index_scope *scopes;         /* by bytes, most first (after mf_index_settle) */
    size_t n_scopes;
    uint64_t role_bytes[MF_ROLES];  /* requested bytes allocated, by the role of each
                                       block as it ended (live ones: as it is) */
    uint64_t role_count[MF_ROLES];
    mf_index_oom *ooms;             /* its OOMs in time order (MF_INDEX_OOMS at most) */
    size_t n_ooms;
    uint64_t ooms_total;            /* all of them */
} mf_index_view;

typedef struct mf_index mf_index;

typedef struct mf_index_options {
    const char *path;         /* the index file; NULL: beside the first log (LOG.mfi) */
    int merge_runs;           /* logs of different runs together */
    int rebuild;              /* never reuse an index file */
} mf_index_options;

/*
 * Open the index of the logs at paths[0..n): reuse the index file when it
 * is fresh, else read the logs once and build it.  NULL with a message in
 * err naming the file when a log cannot be read (*rc -1 or
 * MF_READER_OTHER_RUNS).  An index that cannot be written beside the log
 * is built in a temporary file instead (a warning says so).
 */
MF_EXPORT mf_index *mf_index_open(const char *const *paths, size_t n,
                                  const mf_index_options *opt, int *rc, char *err,
                                  size_t errlen);

MF_EXPORT void mf_index_close(mf_index *ix);

/*
 * Read what the logs gained since the last look (logs still being
 * written).  *grew gets 1 when anything was new.  0, or -1 with err.
 */
MF_EXPORT int mf_index_refresh(mf_index *ix, int *grew, char *err, size_t errlen);

/* Was the index reused from its file (not built by this process)? */
MF_EXPORT int mf_index_reused(const mf_index *ix);

/* Where the index file is ("" when in a temporary file). */
MF_EXPORT const char *mf_index_path(const mf_index *ix);

/* The texts of string ids. */
MF_EXPORT const mf_strings *mf_index_strings(const mf_index *ix);

/*
 * The sites and stacks of the logs: NULL when they have none, or, for a
 * reused index, until mf_index_load_sites is done.  A reused index opens
 * no reader, so its first picture needs no pass over the logs;
 * mf_index_load_sites reads the logs' stacks with a reader of its own
 * (seconds for a large log) and may run on a thread of its own while one
 * other thread asks the index (it touches nothing else; the sites are
 * published atomically).  0, or -1 with err.
 */
MF_EXPORT mf_sites *mf_index_sites(mf_index *ix);
MF_EXPORT int mf_index_load_sites(mf_index *ix, char *err, size_t errlen);

/* Warnings (damage, a log still running...), one line each. */
MF_EXPORT size_t mf_index_n_warnings(const mf_index *ix);
MF_EXPORT const char *mf_index_warning(const mf_index *ix, size_t i);

/* Times: the earliest event (t0) and the latest (t1); the column shift of
 * level 0 (columns of 2^wshift ns); the finest level with cells. */
MF_EXPORT uint64_t mf_index_t0(const mf_index *ix);
MF_EXPORT uint64_t mf_index_t1(const mf_index *ix);
MF_EXPORT unsigned mf_index_wshift(const mf_index *ix);
MF_EXPORT int mf_index_cell_level(const mf_index *ix);
MF_EXPORT int mf_index_running(const mf_index *ix);   /* some log is still written */

/* The program of process pid (argv joined), "" when unknown. */
MF_EXPORT const char *mf_index_program(const mf_index *ix, uint32_t pid);

MF_EXPORT size_t mf_index_n_views(const mf_index *ix);
MF_EXPORT const mf_index_view *mf_index_view_at(const mf_index *ix, size_t i);

/*
 * At most how many blocks of view v the window [t_from, t_to] x [a_from,
 * a_to) may hold (the blocks of the pieces it reads), counting no further
 * than limit + 1.
 */
MF_EXPORT uint64_t mf_index_count_blocks(const mf_index *ix, size_t v, uint64_t t_from,
                                         uint64_t t_to, uint64_t a_from, uint64_t a_to,
                                         uint64_t limit);

/*
 * Every block of view v in the window [t_from, t_to] x [a_from, a_to)
 * (blocks live at the end reach t1), to fn.  fn's non-zero return stops
 * the walk and is returned; -1 when the file cannot be read or is damaged
 * (err).
 */
MF_EXPORT int mf_index_blocks(mf_index *ix, size_t v, uint64_t t_from, uint64_t t_to,
                              uint64_t a_from, uint64_t a_to,
                              int (*fn)(void *ctx, const mf_index_block *b), void *ctx,
                              char *err, size_t errlen);

/* Every block of view v live at time t (alloc_ns <= t < free_ns), to fn. */
MF_EXPORT int mf_index_live_at(mf_index *ix, size_t v, uint64_t t,
                               int (*fn)(void *ctx, const mf_index_block *b), void *ctx,
                               char *err, size_t errlen);

/*
 * The cells of view v at level (at least mf_index_cell_level) that meet
 * [t_from, t_to], to fn, with those of the columns still open while the
 * logs are written.  Same returns as mf_index_blocks.
 */
MF_EXPORT int mf_index_cells(mf_index *ix, size_t v, int level, uint64_t t_from,
                             uint64_t t_to, int (*fn)(void *ctx, const mf_index_cell *c),
                             void *ctx, char *err, size_t errlen);

/*
 * The occupancy of view v over [t_from, t_to] at the finest level with at
 * most max_cols columns in it (at least level 0), in time order, to fn;
 * *level gets the level used.
 */
MF_EXPORT int mf_index_occupancy(mf_index *ix, size_t v, uint64_t t_from, uint64_t t_to,
                                 size_t max_cols, int *level,
                                 int (*fn)(void *ctx, const mf_index_occ *o), void *ctx,
                                 char *err, size_t errlen);

#endif /* MEMFLOW_INDEX_H */
