/*
 * index_state.h - the parts of the view index (index.h) its own files
 * share: what is open in memory while it is built (per view: the sweep of
 * granules held now, the open column of each time level, the open time
 * buckets of blocks, the open occupancy column; the blocks still live
 * while a log is written), the directories of what was written, the file,
 * and the byte codec of its pieces.  Private to analyze/index/.
 */
#ifndef MEMFLOW_INDEX_STATE_H
#define MEMFLOW_INDEX_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "index.h"
#include "reader.h"

#define IX_BUCKET_RING 4         /* open time buckets per level (keys now-2 .. now) */
#define IX_OCC_PAGE 256          /* occupancy records written at once */
#define IX_SLOTS 3               /* scopes a granule follows at once */
#define IX_GSHIFT0 6             /* a view's first granule: 64 bytes */
#define IX_NONE UINT64_MAX

/* ---- the codec of pieces: LEB128 varints, zigzag for signed ------------------------- */

typedef struct ix_out {
    unsigned char *p;
    size_t n, cap;
    int bad;
} ix_out;

typedef struct ix_in {
    const unsigned char *p;
    size_t n, at;
    int bad;
} ix_in;

int ix_out_room(ix_out *o, size_t more);

static inline void ix_put_u8(ix_out *o, unsigned v)
{
    if (o->n < o->cap || ix_out_room(o, 1) == 0)
        o->p[o->n++] = (unsigned char)v;
}

static inline void ix_put_var(ix_out *o, uint64_t v)
{
    if (o->cap - o->n < 10 && ix_out_room(o, 10) < 0)
        return;
    while (v >= 0x80) {
        o->p[o->n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    o->p[o->n++] = (unsigned char)v;
}

static inline uint64_t ix_zig(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t ix_unzig(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline unsigned ix_get_u8(ix_in *in)
{
    if (in->at >= in->n) {
        in->bad = 1;
        return 0;
    }
    return in->p[in->at++];
}

static inline uint64_t ix_get_var(ix_in *in)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (in->at >= in->n) {
            in->bad = 1;
            return 0;
        }
        unsigned char b = in->p[in->at++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    in->bad = 1;
    return 0;
}

/* Where a piece written to the file is. */
typedef struct ix_dirent {
    uint64_t key;             /* cells: first column; blocks: bucket; occupancy: first column */
    uint64_t offset;          /* in the file */
    uint64_t bytes;           /* its length */
    uint64_t count;           /* cells, blocks or records */
    uint64_t aux;             /* cells: (last column - first) << 8 | granule shift */
    uint64_t lo, hi;          /* blocks: the addresses they span, [lo, hi); else all */
} ix_dirent;

typedef struct ix_dir {
    ix_dirent *e;             /* by key */
    size_t n, cap;
} ix_dir;

/* A granule of a view's sweep: bytes held in it now, and bytes x ns held
 * in the open column, in all, by the scopes that held the most and by
 * role (every role: there are few). */
typedef struct ix_grain {
    uint64_t granule;
    uint64_t last_ns;         /* the amounts are counted up to here */
    uint64_t bytes;
    double amount;
    uint64_t sbytes[IX_SLOTS];
    double samount[IX_SLOTS];
    uint32_t scope[IX_SLOTS];
    uint64_t rbytes[MF_ROLES];
    double ramount[MF_ROLES];
} ix_grain;

/* A cell of a column being made: bytes x ns over one column, and of the
 * heaviest scope and role (estimates: the heaviest ones seen). */
typedef struct ix_cell {
    uint64_t granule;
    double amount, top, rtop;
    uint32_t scope;
    uint8_t role;
} ix_cell;

/* Cells by granule (an open column of a coarser level). */
typedef struct ix_cells {
    ix_cell *c;
    size_t n, cap;
    uint32_t *slots;          /* cell index + 1; 0 empty */
    size_t n_slots;
} ix_cells;

/* A time bucket of blocks being filled: its blocks encoded as they end
 * (the piece it will be), and the block before the next (fields that do
 * not change are not written again). */
typedef struct ix_bucket {
    uint64_t key;             /* IX_NONE: the slot is free */
    ix_out bytes;
    uint64_t n;
    uint64_t lo, hi;          /* the addresses its blocks span */
    mf_index_block prev;
} ix_bucket;

#define IX_SORT_MIN 65536        /* a bucket with more blocks is written sorted by address, */
#define IX_PIECE_BLOCKS 8192     /* ...in pieces of this many, each with its address bounds */

/* One time level of one view. */
typedef struct ix_level {
    uint64_t col;             /* its open cell column (IX_NONE: none) */
    ix_cells open;
    ix_dir cell_dir;
    ix_bucket buckets[IX_BUCKET_RING];   /* blocks of this lifetime level */
    ix_dir block_dir;
    mf_index_occ occ;         /* the open occupancy column (col IX_NONE: none) */
    mf_index_occ *occ_page;   /* records not written yet */
    size_t n_occ_page;
    ix_dir occ_dir;
} ix_level;

/* A view and what is open for it. */
typedef struct ix_view {
    mf_index_view pub;
    ix_level *levels;         /* MF_INDEX_LEVELS of them */
    uint64_t held_actual;
    uint64_t flushed_col;     /* cell-level column of its last bucket flush */
    size_t cap_ooms;
    size_t *scope_slots;      /* scope index + 1 by hash */
    size_t n_scope_slots, cap_scopes;
    /* the sweep, at the cell level */
    unsigned gshift;          /* granules of 2^gshift bytes */
    int rebase_due;           /* an open column holds too many cells */
    uint64_t col;             /* the open column (IX_NONE: none yet) */
    ix_grain *g;
    size_t n_g, cap_g;
    uint32_t *gslots;         /* grain index + 1; 0 empty */
    size_t n_gslots;
    ix_cell *scratch;         /* a column's cells, as they are written */
    size_t cap_scratch;
    char *program;            /* its program, from the file (a reused index) */
} ix_view;

/* Blocks not ended yet (kept only while a log is written), by (view, addr, alloc_ns). */
typedef struct ix_live {
    mf_index_block *b;
    size_t n, cap;
    uint32_t *slots;          /* index + 1; 0 empty; UINT32_MAX deleted */
    size_t n_slots, used;     /* used: slots not empty (deleted included) */
} ix_live;

struct mf_index {
    mf_reader *reader;        /* NULL when the index was reused */
    mf_strings *pool;         /* the model's, or own_pool */
    mf_strings *own_pool;     /* a reused index's strings, from its file */
    mf_model *model;          /* NULL when the index was reused */
    mf_sites *sites;          /* published by mf_index_load_sites (atomic) */
    mf_strings *sites_pool;   /* the texts of sites read by a reader of their own */
    char **log_paths;
    size_t n_logs;
    int merge_runs;
    char *path;               /* the index file ("" while temporary) */
    char *final_path;         /* where it goes when finished */
    int fd;
    uint64_t end;             /* bytes written */
    int reused, running, failed;
    int track_live;           /* keep ix->live (the logs were being written) */
    uint64_t t0, t1, now;     /* now: the latest event fed */
    unsigned wshift;          /* level 0's columns: 2^wshift ns */
    int cell_level;           /* the finest level with cells */
    ix_view *views;
    size_t n_views, cap_views;
    size_t last_view;
    ix_live live;
    char **warnings;
    size_t n_warnings;
    mf_event *batch;
    mf_sample_values *samples;
    size_t *told;             /* per log: damage lines warned about */
    unsigned char *buf;       /* a piece being encoded or decoded */
    size_t cap_buf;
};

static inline uint64_t ix_rel(const mf_index *ix, uint64_t t)
{
    return t > ix->t0 ? t - ix->t0 : 0;
}

/* The bytes a block spans: actual when known, else requested, at least 1. */
static inline uint64_t ix_span(const mf_index_block *b)
{
    uint64_t s = b->actual ? b->actual : b->requested;
    return s ? s : 1;
}

/* The shift of lifetime level k's buckets. */
static inline unsigned ix_bucket_shift(const mf_index *ix, int k)
{
    unsigned s = ix->wshift + (unsigned)ix->cell_level + (unsigned)k;
    return s > 62 ? 62 : s;
}

/* index_build.c: views, legends, occupancy, blocks, OOMs. */
void ix_on_block(void *ctx, const mf_block *b, int ended);
void ix_on_role(void *ctx, const mf_block *b, unsigned from, uint64_t time_ns);
void ix_on_oom(void *ctx, const mf_oom *o, int analysed);
void ix_on_sample(mf_index *ix, const mf_event *e, const mf_sample_values *v);
int ix_view_of(mf_index *ix, uint16_t device, uint32_t pid);
void ix_flush(mf_index *ix);
int ix_finish(mf_index *ix);
void ix_view_init_levels(ix_view *v);
void ix_view_free(ix_view *v);
void ix_settle_views(mf_index *ix);
uint64_t ix_block_end(const mf_index *ix, const mf_index_block *b);
int ix_decode_blocks(mf_index *ix, const ix_dirent *e, int k, uint32_t view,
                     int (*fn)(void *ctx, const mf_index_block *b), void *ctx, char *err,
                     size_t errlen);
int ix_open_blocks(mf_index *ix, const ix_bucket *bk, int k, uint32_t view,
                   int (*fn)(void *ctx, const mf_index_block *b), void *ctx, char *err,
                   size_t errlen);

/* index_cells.c: the sweep and the time levels of cells. */
void ix_cells_advance(mf_index *ix, ix_view *v, uint64_t t);
void ix_cells_change(mf_index *ix, ix_view *v, uint64_t t, const mf_index_block *b, int sign);
void ix_cells_role(mf_index *ix, ix_view *v, uint64_t t, const mf_index_block *b, unsigned from);
void ix_cells_finish(mf_index *ix, ix_view *v);
void ix_cells_free(ix_view *v);
int ix_cells_open(mf_index *ix, ix_view *v, int level, uint64_t t_from, uint64_t t_to,
                  int (*fn)(void *ctx, const mf_index_cell *c), void *ctx);
int ix_decode_cells(mf_index *ix, const ix_dirent *e, int level, uint64_t t_from,
                    uint64_t t_to, int (*fn)(void *ctx, const mf_index_cell *c), void *ctx,
                    char *err, size_t errlen);

/* index_file.c: the file. */
int ix_write(mf_index *ix, const void *bytes, size_t n, uint64_t *offset);
int ix_read(mf_index *ix, uint64_t offset, void *out, size_t n, char *err, size_t errlen);
int ix_read_piece(mf_index *ix, const ix_dirent *e, ix_in *in, char *err, size_t errlen);
ix_dirent *ix_dir_add(ix_dir *d, uint64_t key, uint64_t offset, uint64_t bytes,
                      uint64_t count, uint64_t aux);
size_t ix_dir_lower(const ix_dir *d, uint64_t key);
int ix_save(mf_index *ix);
int ix_load(mf_index *ix, int fd);
void ix_warn(mf_index *ix, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* MEMFLOW_INDEX_STATE_H */
