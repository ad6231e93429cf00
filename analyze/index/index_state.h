/*
 * index_state.h - the parts of the view index (index.h) its own files
 * share: what is open in memory while it is built (rings of time buckets
 * and columns per level, the current occupancy column, the blocks still
 * live), the directories of what was written, and the file.  Private to
 * analyze/index*.c.
 */
#ifndef MEMFLOW_INDEX_STATE_H
#define MEMFLOW_INDEX_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "index.h"
#include "reader.h"

#define IX_COL_RING 128          /* open columns per level (> MF_INDEX_CELLS + 3) */
#define IX_BUCKET_RING 8         /* open time buckets per level (> 3) */
#define IX_BUCKET_SHIFT 6        /* a bucket is 2^6 = MF_INDEX_CELLS columns */
#define IX_OCC_PAGE 256          /* occupancy records written at once */
#define IX_NONE UINT64_MAX

/* Where a piece written to the file is. */
typedef struct ix_dirent {
    uint64_t key;             /* column, bucket, or first column of an occupancy page */
    uint64_t offset;          /* in the file */
    uint64_t count;           /* cells, blocks or records */
    uint64_t extra;           /* buckets: the largest span of a block in it */
} ix_dirent;

typedef struct ix_dir {
    ix_dirent *e;             /* by key */
    size_t n, cap;
} ix_dir;

/* A cell being painted. */
typedef struct ix_cell {
    uint64_t granule;
    double amount;            /* bytes x ns */
    double top_amount;        /* of the heaviest scope */
    uint32_t scope;
} ix_cell;

/* One open column of a level: its cells, found by granule through a hash. */
typedef struct ix_column {
    uint64_t col;             /* IX_NONE: the slot is free */
    ix_cell *cells;
    size_t n, cap;
    uint32_t *slots;          /* cell index + 1; 0 empty */
    size_t n_slots;
} ix_column;

typedef struct ix_bucket {
    uint64_t key;             /* IX_NONE: the slot is free */
    mf_index_block *blocks;
    size_t n, cap;
} ix_bucket;

/* One level of one view. */
typedef struct ix_level {
    ix_column cols[IX_COL_RING];
    ix_bucket buckets[IX_BUCKET_RING];
    uint64_t cols_done;       /* columns below this are written */
    uint64_t buckets_done;    /* buckets below this are written */
    ix_dir cell_dir, block_dir, occ_dir;
    mf_index_occ occ;         /* the open occupancy column (col IX_NONE: none) */
    mf_index_occ *occ_page;   /* records not written yet */
    size_t n_occ_page;
} ix_level;

/* A view and what is open for it. */
typedef struct ix_view {
    mf_index_view pub;
    ix_level *levels;         /* MF_INDEX_LEVELS of them */
    uint64_t held_actual;
    uint64_t flushed_col;     /* level-0 column of now at its last flush */
    size_t *scope_slots;      /* scope index + 1 by hash */
    size_t n_scope_slots, cap_scopes;
} ix_view;

/* Blocks not ended yet, found by (view, addr, alloc_ns). */
typedef struct ix_live {
    mf_index_block *b;
    size_t n, cap;
    uint32_t *slots;          /* index + 1; 0 empty; UINT32_MAX deleted */
    size_t n_slots, used;     /* used: slots not empty (deleted included) */
} ix_live;

struct mf_index {
    mf_reader *reader;
    mf_strings *pool;         /* the model's: the reader interns into it */
    mf_model *model;          /* fed only when the index is built here */
    mf_sites *sites;
    char *path;               /* the index file ("" while temporary) */
    char *final_path;         /* where it goes when finished */
    char **log_paths;
    size_t n_logs;
    int fd;
    uint64_t end;             /* bytes written */
    int reused, running, failed;
    uint64_t t0, t1, now;     /* now: the latest event fed */
    unsigned wshift;
    ix_view *views;
    size_t n_views, cap_views;
    size_t last_view;
    ix_live live;
    char **warnings;
    size_t n_warnings;
    mf_event *batch;
    mf_sample_values *samples;
    size_t *told;             /* per log: damage lines warned about */
};

/* index_build.c: the builder. */
void ix_on_block(void *ctx, const mf_block *b, int ended);
void ix_on_sample(mf_index *ix, const mf_event *e, const mf_sample_values *v);
int ix_view_of(mf_index *ix, uint16_t device, uint32_t pid);
void ix_flush(mf_index *ix, int all);
void ix_flush_view(mf_index *ix, ix_view *v, int all);
int ix_finish(mf_index *ix);
void ix_view_free(ix_view *v);
void ix_settle_views(mf_index *ix);
uint64_t ix_block_end(const mf_index *ix, const mf_index_block *b);

/* index_file.c: the file. */
int ix_write(mf_index *ix, const void *bytes, size_t n, uint64_t *offset);
int ix_read(mf_index *ix, uint64_t offset, void *out, size_t n, char *err, size_t errlen);
int ix_dir_add(mf_index *ix, ix_dir *d, uint64_t key, uint64_t offset, uint64_t count,
               uint64_t extra);
int ix_save(mf_index *ix);
int ix_load(mf_index *ix, int fd);
void ix_warn(mf_index *ix, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* MEMFLOW_INDEX_STATE_H */
