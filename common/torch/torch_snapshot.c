/*
 * torch_snapshot.c - the PyTorch memory snapshot walker (torch_snapshot.h)
 * over the pickle reader's events.
 *
 * A stack of levels follows the reader's containers, each with a role
 * (the snapshot dict, the segments list, a segment, a block, a trace
 * entry, a frames list, a frame ...) decided from its parent's role and its
 * key.  Scalars fill the current record; a record goes to the handler when
 * its dict ends (a trace entry's frames come last in the file).  Frames are
 * interned by content (filename, line, name) and stacks by their frame ids;
 * both are kept by the reader by identity only (MF_PICKLE_KEEP_ID), so a
 * frame dict or frames list that the pickle refers back to (a GET: PyTorch
 * shares them between entries) costs a table lookup and is skipped
 * (MF_PICKLE_SKIP) instead of being read again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torch_grow.h"
#include "torch_snapshot.h"

/* ---- roles and fields ---- */

enum role {
    R_TOP, R_SNAP, R_SEGS, R_SEG, R_BLOCKS, R_BLOCK, R_HISTORY, R_HIST,
    R_TRACES, R_DEVICE, R_ENTRY, R_FRAMES, R_FRAME, R_IGNORE
};

enum field {
    F_OTHER, F_SEGMENTS, F_DEVICE_TRACES, F_DEVICE, F_ADDRESS, F_TOTAL_SIZE, F_ALLOCATED_SIZE,
    F_ACTIVE_SIZE, F_REQUESTED_SIZE, F_STREAM, F_SEGMENT_TYPE, F_SEGMENT_POOL_ID,
    F_IS_EXPANDABLE, F_FRAMES, F_BLOCKS, F_SIZE, F_STATE, F_HISTORY, F_REAL_SIZE, F_ADDR,
    F_ACTION, F_DEVICE_FREE, F_TIME_US, F_COMPILE_CONTEXT, F_USER_METADATA, F_POOL_ID,
    F_FILENAME, F_LINE, F_NAME, F_FIELDS
};

static const char *const field_names[F_FIELDS] = {
    "", "segments", "device_traces", "device", "address", "total_size", "allocated_size",
    "active_size", "requested_size", "stream", "segment_type", "segment_pool_id",
    "is_expandable", "frames", "blocks", "size", "state", "history", "real_size", "addr",
    "action", "device_free", "time_us", "compile_context", "user_metadata", "pool_id",
    "filename", "line", "name"
};

static const char *const action_names[MF_TORCH_ACTIONS] = {
    "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
    "segment_map", "segment_unmap", "snapshot", "oom", "annotate"
};

const char *mf_torch_action_name(mf_torch_action a)
{
    return (unsigned)a < MF_TORCH_ACTIONS ? action_names[a] : "unknown";
}

/* Why the walk stopped its reader (walker.failed). */
enum { W_OK, W_STOPPED = -1, W_OOM = -2 };    /* or MF_TORCH_NOT_A_SNAPSHOT */

#define NONE32 UINT32_MAX
#define TAG_STACK 0x80000000u      /* objmap values: a stack id, else a frame id */
#define TAG_NO_STACK (TAG_STACK | 0x7ffffffeu)   /* an empty frames list */

/* ---- tables ---- */

/* Open addressing: a 64-bit hash (or key) to a 32-bit value; NONE32 marks empty. */
typedef struct table {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap, n;
} table;

typedef struct level {
    uint8_t role;
    uint8_t field;            /* its key in its parent */
    uint64_t count;           /* items seen (lists), for positions */
    uint64_t id;              /* the reader's id of the container */
    uint32_t frames_from;     /* R_FRAMES: where its frame ids start in fids */
    uint32_t filename, name;  /* R_FRAME: string ids, NONE32 when absent */
    int64_t line;
} level;

typedef struct str_ref {
    const char *p;
    uint32_t len;
} str_ref;

typedef struct walker {
    mf_pickle_reader *r;
    const mf_torch_handler *h;
    void *ctx;
    unsigned want;
    mf_torch_stats st;
    size_t mem;
    int failed;               /* W_OK, W_STOPPED, W_OOM or MF_TORCH_NOT_A_SNAPSHOT */
    int done_early;
    char msg[256];
    /* levels */
    level *lv;
    size_t nlv, caplv;
    /* strings: blocks of text that never move */
    char *chunk;
    size_t chunk_used, chunk_cap;
    char **chunks;
    size_t nchunks, capchunks;
    str_ref *strs;
    size_t nstrs, capstrs;
    table strtab, frametab, stacktab, objmap;
    /* frames and stacks */
    mf_torch_frame *frames;
    size_t nframes, capframes;
    uint32_t *fids;           /* the frames lists being read, one after another */
    size_t nfids, capfids;
    uint32_t *sframes;        /* every stack's frames */
    size_t nsframes, capsframes;
    uint64_t *stack_at;       /* stack id -> where its frames start in sframes */
    uint32_t *stack_len;
    size_t nstacks, capstacks, capstacklen;
    /* the record being read */
    mf_torch_segment seg;
    mf_torch_block *blocks;
    size_t nblocks, capblocks;
    uint32_t hist_stack;      /* the current block's first history entry */
    uint64_t hist_size;
    int hist_seen;
    mf_torch_entry ent;
    int ent_action;           /* -1: none, -2: unknown (ent_text holds it) */
    char *ent_text;           /* compile_context \0 user_metadata \0 unknown action \0 */
    size_t ent_text_cap, ent_text_used;
    size_t cc_at, md_at, act_at;
    int has_cc, has_md, has_act_text;
    /* unknown actions reported */
    char *unknown[32];
    size_t nunknown;
    /* a cache of key and action string objects (the pickle memoizes them) */
    uint64_t cache_id[256];
    uint8_t cache_val[256];
    uint8_t cache_kind[256];
    int64_t device;           /* the device trace being read */
    int sections;             /* the snapshot dict had segments or device_traces */
} walker;

static int oom(walker *w)
{
    w->failed = W_OOM;
    snprintf(w->msg, sizeof w->msg, "offset %llu: out of memory",
             (unsigned long long)mf_pickle_offset(w->r));
    return -1;
}

static void track(walker *w, size_t add)
{
    w->mem += add;
    if (w->mem > w->st.memory_peak)
        w->st.memory_peak = w->mem;
}

static int grow_slow(walker *w, void **a, size_t *cap, size_t need, size_t elem)
{
    if (mf_torch_grow(a, cap, need, elem, &w->mem) < 0)
        return oom(w);
    track(w, 0);
    return 0;
}

/* Room for need elements (several calls an entry: the test that there is, inline). */
static inline int grow(walker *w, void **a, size_t *cap, size_t need, size_t elem)
{
    return MF_LIKELY(need <= *cap) ? 0 : grow_slow(w, a, cap, need, elem);
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return mix(h ^ n);
}

static int table_add(walker *w, table *t, uint64_t key, uint32_t val);

static int table_grow(walker *w, table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 256;
    uint64_t *keys = malloc(cap * sizeof *keys);
    uint32_t *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return oom(w);
    }
    memset(vals, 0xff, cap * sizeof *vals);
    table old = *t;
    *t = (table){ keys, vals, cap, 0 };
    track(w, cap * 12);
    for (size_t i = 0; i < old.cap; i++)
        if (old.vals[i] != NONE32)
            table_add(w, t, old.keys[i], old.vals[i]);
    free(old.keys);
    free(old.vals);
    w->mem -= old.cap * 12;
    return 0;
}

static int table_add(walker *w, table *t, uint64_t key, uint32_t val)
{
    if ((t->n + 1) * 2 > t->cap && table_grow(w, t) < 0)
        return -1;
    size_t i = (size_t)mix(key) & (t->cap - 1);
    while (t->vals[i] != NONE32)
        i = (i + 1) & (t->cap - 1);
    t->keys[i] = key;
    t->vals[i] = val;
    t->n++;
    return 0;
}

/* The values stored under key, one per call: *at is 0 at first; NONE32 at the end. */
static uint32_t table_next(const table *t, uint64_t key, size_t *at)
{
    if (!t->cap)
        return NONE32;
    size_t mask = t->cap - 1;
    size_t i = *at ? *at - 1 : (size_t)mix(key) & mask;    /* *at: where to go on, plus one */
    for (;; i = (i + 1) & mask) {
        if (t->vals[i] == NONE32)
            return NONE32;          /* the load stays under half: there is an empty slot */
        if (t->keys[i] == key) {
            *at = ((i + 1) & mask) + 1;
            return t->vals[i];
        }
    }
}

static void table_free(table *t)
{
    free(t->keys);
    free(t->vals);
}

/* ---- strings, frames, stacks ---- */

static const char *text_copy(walker *w, const char *p, size_t n)
{
    if (w->chunk_used + n + 1 > w->chunk_cap) {
        size_t cap = n + 1 > 65536 ? n + 1 : 65536;
        char *c = malloc(cap);
        if (!c || grow(w, (void **)&w->chunks, &w->capchunks, w->nchunks + 1, sizeof(char *)) < 0) {
            free(c);
            oom(w);
            return NULL;
        }
        track(w, cap);
        w->chunks[w->nchunks++] = c;
        w->chunk = c;
        w->chunk_used = 0;
        w->chunk_cap = cap;
    }
    char *d = w->chunk + w->chunk_used;
    memcpy(d, p, n);
    d[n] = 0;
    w->chunk_used += n + 1;
    return d;
}

/* The id of the string (interned by content); NONE32 when out of memory. */
static uint32_t intern_str(walker *w, const char *p, size_t n)
{
    uint64_t h = hash_bytes(p, n);
    size_t at = 0;
    for (uint32_t id; (id = table_next(&w->strtab, h, &at)) != NONE32;)
        if (w->strs[id].len == n && memcmp(w->strs[id].p, p, n) == 0)
            return id;
    if (n >= UINT32_MAX || grow(w, (void **)&w->strs, &w->capstrs, w->nstrs + 1, sizeof(str_ref)) < 0)
        return NONE32;
    const char *copy = text_copy(w, p, n);
    if (!copy)
        return NONE32;
    uint32_t id = (uint32_t)w->nstrs;
    w->strs[w->nstrs++] = (str_ref){ copy, (uint32_t)n };
    return table_add(w, &w->strtab, h, id) < 0 ? NONE32 : id;
}

static uint64_t frame_hash(uint32_t filename, uint32_t name, int64_t line)
{
    return mix(((uint64_t)filename << 32 | name) ^ mix((uint64_t)line));
}

/* The id of a frame (interned by content, reported when new); NONE32 on failure. */
static uint32_t intern_frame(walker *w, uint32_t filename, uint32_t name, int64_t line)
{
    uint64_t h = frame_hash(filename, name, line);
    size_t at = 0;
    for (uint32_t id; (id = table_next(&w->frametab, h, &at)) != NONE32;) {
        const mf_torch_frame *f = &w->frames[id];
        if (f->filename == w->strs[filename].p && f->name == w->strs[name].p && f->line == line)
            return id;
    }
    if (w->nframes >= TAG_STACK - 1 ||
        grow(w, (void **)&w->frames, &w->capframes, w->nframes + 1, sizeof(mf_torch_frame)) < 0)
        return NONE32;
    uint32_t id = (uint32_t)w->nframes;
    mf_torch_frame *f = &w->frames[w->nframes++];
    *f = (mf_torch_frame){ id, w->strs[filename].p, w->strs[name].p, line };
    w->st.frames++;
    if (table_add(w, &w->frametab, h, id) < 0)
        return NONE32;
    if (w->h->frame && w->h->frame(w->ctx, f) < 0) {
        w->failed = W_STOPPED;
        return NONE32;
    }
    return id;
}

/* The id of the stack of n frame ids at f in *out (interned, reported when new): 0 or -1. */
static int intern_stack(walker *w, const uint32_t *f, uint32_t n, uint32_t *out)
{
    if (n == 0) {
        *out = MF_TORCH_NO_STACK;
        return 0;
    }
    uint64_t h = hash_bytes(f, n * sizeof *f);
    size_t at = 0;
    for (uint32_t id; (id = table_next(&w->stacktab, h, &at)) != NONE32;) {
        if (w->stack_len[id] == n && memcmp(w->sframes + w->stack_at[id], f, n * sizeof *f) == 0) {
            *out = id;
            return 0;
        }
    }
    if (w->nstacks >= (TAG_NO_STACK & ~TAG_STACK) ||
        grow(w, (void **)&w->sframes, &w->capsframes, w->nsframes + n, sizeof(uint32_t)) < 0 ||
        grow(w, (void **)&w->stack_at, &w->capstacks, w->nstacks + 1, sizeof(uint64_t)) < 0 ||
        grow(w, (void **)&w->stack_len, &w->capstacklen, w->nstacks + 1, sizeof(uint32_t)) < 0)
        return oom(w);
    uint32_t id = (uint32_t)w->nstacks++;
    w->stack_at[id] = w->nsframes;
    w->stack_len[id] = n;
    memcpy(w->sframes + w->nsframes, f, n * sizeof *f);
    w->nsframes += n;
    w->st.stacks++;
    if (table_add(w, &w->stacktab, h, id) < 0)
        return -1;
    if (w->h->stack && w->h->stack(w->ctx, id, w->sframes + w->stack_at[id], n) < 0) {
        w->failed = W_STOPPED;
        return -1;
    }
    *out = id;
    return 0;
}

/* ---- values ---- */

/* Which field a key names (a small cache by the key's identity first). */
static enum field field_of(walker *w, const mf_pickle_value *key)
{
    if (!key || key->kind != MF_PICKLE_STR)
        return F_OTHER;
    uint64_t id = mf_pickle_id(key);
    size_t slot = (size_t)(id & 255);
    if (w->cache_id[slot] == id && w->cache_kind[slot] == 1)
        return (enum field)w->cache_val[slot];
    size_t n;
    const char *s = mf_pickle_bytes(key, &n);
    enum field f = F_OTHER;
    for (int i = 1; i < F_FIELDS; i++) {
        if (strlen(field_names[i]) == n && memcmp(field_names[i], s, n) == 0) {
            f = (enum field)i;
            break;
        }
    }
    w->cache_id[slot] = id;
    w->cache_kind[slot] = 1;
    w->cache_val[slot] = (uint8_t)f;
    return f;
}

/* The action a string names, or -2 when it is not one the walker knows. */
static int action_of(walker *w, const mf_pickle_value *v)
{
    uint64_t id = mf_pickle_id(v);
    size_t slot = (size_t)((id ^ 0x80) & 255);
    if (w->cache_id[slot] == id && w->cache_kind[slot] == 2)
        return w->cache_val[slot] == 255 ? -2 : w->cache_val[slot];
    size_t n;
    const char *s = mf_pickle_bytes(v, &n);
    int a = -2;
    for (int i = 0; i < MF_TORCH_ACTIONS; i++) {
        if (strlen(action_names[i]) == n && memcmp(action_names[i], s, n) == 0) {
            a = i;
            break;
        }
    }
    w->cache_id[slot] = id;
    w->cache_kind[slot] = 2;
    w->cache_val[slot] = a < 0 ? 255 : (uint8_t)a;
    return a;
}

static int as_u64(walker *w, const mf_pickle_value *v, uint64_t *out)
{
    if (mf_pickle_u64(v, out) == 0)
        return 0;
    w->st.bad_values++;
    return -1;
}

static int as_i64(walker *w, const mf_pickle_value *v, int64_t *out)
{
    uint64_t u;
    if (mf_pickle_i64(v, out) == 0)
        return 0;
    if (mf_pickle_u64(v, &u) == 0) {      /* a stream handle past INT64_MAX */
        *out = (int64_t)u;
        return 0;
    }
    w->st.bad_values++;
    return -1;
}

/* A (int, int) tuple into pool[2]. */
static int as_pool(walker *w, const mf_pickle_value *v, int64_t pool[2])
{
    size_t n;
    const mf_pickle_value *it = mf_pickle_items(v, &n);
    if (v->kind == MF_PICKLE_TUPLE && n == 2 && mf_pickle_i64(&it[0], &pool[0]) == 0 &&
        mf_pickle_i64(&it[1], &pool[1]) == 0)
        return 0;
    w->st.bad_values++;
    return -1;
}

/* Copy a string field of the entry being read into its text buffer; its offset in *at. */
static int entry_text(walker *w, const mf_pickle_value *v, size_t *at, int *has)
{
    size_t n;
    const char *s = mf_pickle_bytes(v, &n);
    if (v->kind != MF_PICKLE_STR) {
        w->st.bad_values++;
        return 0;
    }
    if (grow(w, (void **)&w->ent_text, &w->ent_text_cap, w->ent_text_used + n + 1, 1) < 0)
        return -1;
    memcpy(w->ent_text + w->ent_text_used, s, n);
    w->ent_text[w->ent_text_used + n] = 0;
    *at = w->ent_text_used;
    w->ent_text_used += n + 1;
    *has = 1;
    return 0;
}

/* ---- records ---- */

static int stopped(walker *w, int rc)
{
    if (rc < 0)
        w->failed = W_STOPPED;
    return rc < 0 ? -1 : 0;
}

/* The stack of a frames list goes to the record that holds it. */
static void attach_stack(walker *w, const level *holder, uint32_t stack)
{
    if (!holder)
        return;
    if (holder->role == R_SEG)
        w->seg.stack = stack;
    else if (holder->role == R_BLOCK && w->nblocks)
        w->blocks[w->nblocks - 1].stack = stack;
    else if (holder->role == R_HIST && !w->hist_seen)
        w->hist_stack = stack;
    else if (holder->role == R_ENTRY)
        w->ent.stack = stack;
}

static void entry_reset(walker *w, uint64_t index)
{
    w->ent = (mf_torch_entry){ .device = w->device, .index = index,
                               .offset = mf_pickle_offset(w->r), .stack = MF_TORCH_NO_STACK };
    w->ent_action = -1;
    w->has_cc = w->has_md = w->has_act_text = 0;
    w->ent_text_used = 0;
}

static int entry_done(walker *w)
{
    if (!(w->want & MF_TORCH_WANT_TRACES))
        return 0;
    if (w->ent_action == -1) {
        w->st.bad_entries++;
        return 0;
    }
    if (w->ent_action == -2) {
        w->st.unknown_actions++;
        const char *name = w->ent_text + w->act_at;
        for (size_t i = 0; i < w->nunknown; i++)
            if (strcmp(w->unknown[i], name) == 0)
                return 0;
        if (w->nunknown < sizeof w->unknown / sizeof w->unknown[0]) {
            char *copy = strdup(name);
            if (!copy)
                return oom(w);
            w->unknown[w->nunknown++] = copy;
            if (w->h->unknown_action)
                return stopped(w, w->h->unknown_action(w->ctx, name, w->ent.device, w->ent.index));
        }
        return 0;
    }
    mf_torch_entry *e = &w->ent;
    e->action = (uint32_t)w->ent_action;
    e->compile_context = w->has_cc ? w->ent_text + w->cc_at : NULL;
    e->user_metadata = w->has_md ? w->ent_text + w->md_at : NULL;
    if (e->stack != MF_TORCH_NO_STACK) {
        e->frames = w->sframes + w->stack_at[e->stack];
        e->nframes = w->stack_len[e->stack];
    }
    w->st.entries++;
    w->st.by_action[e->action]++;
    if (e->flags & MF_TORCH_HAS_TIME)
        w->st.with_time++;
    return stopped(w, w->h->entry ? w->h->entry(w->ctx, e) : 0);
}

static void segment_reset(walker *w, uint64_t index)
{
    w->seg = (mf_torch_segment){ .index = index, .device = -1, .large = -1,
                                 .stack = MF_TORCH_NO_STACK };
    w->nblocks = 0;
}

static int segment_done(walker *w)
{
    mf_torch_segment *s = &w->seg;
    uint64_t at = s->address;
    for (size_t i = 0; i < w->nblocks; i++) {
        mf_torch_block *b = &w->blocks[i];
        if (!(b->flags & MF_TORCH_HAS_ADDRESS))
            b->address = at;             /* 1.13 and 2.0: blocks follow one another */
        if (!(b->flags & MF_TORCH_HAS_REQUESTED))
            b->requested_size = b->size;
        at = b->address + b->size;
    }
    s->blocks = w->blocks;
    s->nblocks = w->nblocks;
    w->st.segments++;
    w->st.blocks += w->nblocks;
    if (!(w->want & MF_TORCH_WANT_SEGMENTS))
        return 0;
    return stopped(w, w->h->segment ? w->h->segment(w->ctx, s) : 0);
}

static int block_new(walker *w)
{
    if (grow(w, (void **)&w->blocks, &w->capblocks, w->nblocks + 1, sizeof(mf_torch_block)) < 0)
        return -1;
    w->blocks[w->nblocks++] = (mf_torch_block){ .stack = MF_TORCH_NO_STACK };
    w->hist_seen = 0;
    w->hist_stack = MF_TORCH_NO_STACK;
    return 0;
}

/* The block's first history entry (2.0) gives what the block lacks. */
static void history_done(walker *w)
{
    if (w->hist_seen || !w->nblocks)
        return;
    w->hist_seen = 1;
    mf_torch_block *b = &w->blocks[w->nblocks - 1];
    if (!(b->flags & MF_TORCH_HAS_REQUESTED) && w->hist_size != UINT64_MAX) {
        b->requested_size = w->hist_size;
        b->flags |= MF_TORCH_HAS_REQUESTED;
    }
    if (b->stack == MF_TORCH_NO_STACK)
        b->stack = w->hist_stack;
}

static int section(walker *w, mf_torch_section which, int begin, int64_t device, uint64_t count)
{
    unsigned need = which == MF_TORCH_SEGMENTS ? MF_TORCH_WANT_SEGMENTS : MF_TORCH_WANT_TRACES;
    if (!(w->want & need) || !w->h->section)
        return 0;
    return stopped(w, w->h->section(w->ctx, which, begin, device, mf_pickle_offset(w->r), count));
}

/* ---- the reader's events ---- */

static int not_snapshot(walker *w, const char *what)
{
    w->failed = MF_TORCH_NOT_A_SNAPSHOT;
    snprintf(w->msg, sizeof w->msg, "offset %llu: not a PyTorch memory snapshot (%s)",
             (unsigned long long)mf_pickle_offset(w->r), what);
    return -1;
}

/* The role of a container of kind with key under a parent of role parent. */
static enum role child_role(enum role parent, enum field f, mf_pickle_kind kind)
{
    int list = kind == MF_PICKLE_LIST, dict = kind == MF_PICKLE_DICT;
    switch (parent) {
    case R_TOP:
        return dict ? R_SNAP : list ? R_SEGS : R_IGNORE;
    case R_SNAP:
        return f == F_SEGMENTS && list ? R_SEGS : f == F_DEVICE_TRACES && list ? R_TRACES
             : R_IGNORE;
    case R_SEGS:
        return dict ? R_SEG : R_IGNORE;
    case R_SEG:
        return f == F_BLOCKS && list ? R_BLOCKS : f == F_FRAMES && list ? R_FRAMES : R_IGNORE;
    case R_BLOCKS:
        return dict ? R_BLOCK : R_IGNORE;
    case R_BLOCK:
        return f == F_HISTORY && list ? R_HISTORY : f == F_FRAMES && list ? R_FRAMES : R_IGNORE;
    case R_HISTORY:
        return dict ? R_HIST : R_IGNORE;
    case R_TRACES:
        return list ? R_DEVICE : R_IGNORE;
    case R_DEVICE:
        return dict ? R_ENTRY : R_IGNORE;
    case R_FRAMES:
        return dict ? R_FRAME : R_IGNORE;
    default:   /* an entry, a history entry, a frame, or what the walker skips */
        return f == F_FRAMES && list ? R_FRAMES : R_IGNORE;
    }
}

/* Start a record for a new level of role (position: its index in its list). */
static int level_start(walker *w, level *l, uint64_t position)
{
    switch (l->role) {
    case R_SEGS:
        w->sections = 1;
        return section(w, MF_TORCH_SEGMENTS, 1, -1, 0);
    case R_TRACES:
        w->sections = 1;
        return section(w, MF_TORCH_TRACES, 1, -1, 0);
    case R_DEVICE:
        w->device = (int64_t)position;
        w->st.devices++;
        return section(w, MF_TORCH_DEVICE, 1, w->device, 0);
    case R_SEG:
        segment_reset(w, position);
        return 0;
    case R_BLOCK:
        return block_new(w);
    case R_HIST:
        w->hist_size = UINT64_MAX;
        return 0;
    case R_ENTRY:
        entry_reset(w, position);
        return 0;
    case R_FRAMES:
        l->frames_from = (uint32_t)w->nfids;
        return 0;
    case R_FRAME:
        l->filename = l->name = NONE32;
        l->line = -1;
        return 0;
    }
    return 0;
}

/*
 * An object seen before (a GET of a frame dict or frames list, kept by
 * identity): its frame id or stack goes where it is, without reading it
 * again.  1 when known (the caller skips it), 0 when not, -1 on failure.
 */
static int known_again(walker *w, enum role role, uint64_t id)
{
    size_t at = 0;
    uint32_t v = table_next(&w->objmap, id, &at);
    if (v == NONE32)
        return 0;
    level *holder = w->nlv ? &w->lv[w->nlv - 1] : NULL;
    if (role == R_FRAME && !(v & TAG_STACK) && holder && holder->role == R_FRAMES &&
        w->nfids - holder->frames_from < MF_TORCH_MAX_FRAMES) {
        if (grow(w, (void **)&w->fids, &w->capfids, w->nfids + 1, sizeof(uint32_t)) < 0)
            return -1;
        w->fids[w->nfids++] = v;
    } else if (role == R_FRAMES && (v & TAG_STACK)) {
        attach_stack(w, holder, v == TAG_NO_STACK ? MF_TORCH_NO_STACK : v & ~TAG_STACK);
    }
    return 1;
}

static int on_begin(void *ctx, const mf_pickle_value *key, mf_pickle_kind kind, uint64_t id,
                    int replay)
{
    walker *w = ctx;
    level *p = w->nlv ? &w->lv[w->nlv - 1] : NULL;
    enum field f = field_of(w, key);
    enum role role = child_role(p ? (enum role)p->role : R_TOP, f, kind);
    if (!p && role == R_IGNORE)
        return not_snapshot(w, "a set at the top");
    if (!p && role == R_SEGS)
        w->st.top_is_list = 1;
    int known = replay ? known_again(w, role, id) : 0;
    if (known < 0)
        return -1;
    uint64_t position = p ? p->count : 0;
    if (p)
        p->count++;
    if (grow(w, (void **)&w->lv, &w->caplv, w->nlv + 1, sizeof(level)) < 0)
        return -1;
    level *l = &w->lv[w->nlv++];
    if (known) {                 /* its end still comes: a level with nothing to do */
        *l = (level){ .role = R_IGNORE };
        return MF_PICKLE_SKIP;
    }
    *l = (level){ .role = (uint8_t)role, .field = (uint8_t)f, .id = id };
    if (level_start(w, l, position) < 0)
        return -1;
    return role == R_FRAMES || role == R_FRAME ? MF_PICKLE_KEEP_ID : MF_PICKLE_DESCEND;
}

static void frame_value(walker *w, level *l, enum field f, const mf_pickle_value *v)
{
    size_t n;
    const char *s = mf_pickle_bytes(v, &n);
    if (f == F_LINE) {
        if (as_i64(w, v, &l->line) < 0)
            l->line = -1;
    } else if (f == F_FILENAME || f == F_NAME) {
        if (v->kind != MF_PICKLE_STR) {
            w->st.bad_values++;
            return;
        }
        uint32_t id = intern_str(w, s, n);
        if (f == F_FILENAME)
            l->filename = id;
        else
            l->name = id;
    }
}

static void segment_value(walker *w, enum field f, const mf_pickle_value *v)
{
    mf_torch_segment *s = &w->seg;
    switch (f) {
    case F_DEVICE:
        if (as_i64(w, v, &s->device) == 0)
            s->flags |= MF_TORCH_HAS_DEVICE;
        break;
    case F_ADDRESS:
        if (as_u64(w, v, &s->address) == 0)
            s->flags |= MF_TORCH_HAS_ADDRESS;
        break;
    case F_TOTAL_SIZE:
        if (as_u64(w, v, &s->total_size) == 0)
            s->flags |= MF_TORCH_HAS_SIZE;
        break;
    case F_ALLOCATED_SIZE:
        as_u64(w, v, &s->allocated_size);
        break;
    case F_ACTIVE_SIZE:
        as_u64(w, v, &s->active_size);
        break;
    case F_REQUESTED_SIZE:
        if (as_u64(w, v, &s->requested_size) == 0)
            s->flags |= MF_TORCH_HAS_REQUESTED;
        break;
    case F_STREAM:
        if (as_i64(w, v, &s->stream) == 0)
            s->flags |= MF_TORCH_HAS_STREAM;
        break;
    case F_SEGMENT_TYPE:
        if (mf_pickle_is_str(v, "large"))
            s->large = 1;
        else if (mf_pickle_is_str(v, "small"))
            s->large = 0;
        else
            w->st.bad_values++;
        break;
    case F_SEGMENT_POOL_ID:
        if (as_pool(w, v, s->pool_id) == 0)
            s->flags |= MF_TORCH_HAS_POOL;
        break;
    case F_IS_EXPANDABLE:
        if (v->kind == MF_PICKLE_BOOL) {
            s->is_expandable = (int)v->u.i;
            s->flags |= MF_TORCH_HAS_EXPANDABLE;
        } else {
            w->st.bad_values++;
        }
        break;
    default:
        break;
    }
}

static void block_value(walker *w, enum field f, const mf_pickle_value *v)
{
    if (!w->nblocks)
        return;
    mf_torch_block *b = &w->blocks[w->nblocks - 1];
    if (f == F_ADDRESS && as_u64(w, v, &b->address) == 0) {
        b->flags |= MF_TORCH_HAS_ADDRESS;
    } else if (f == F_SIZE && as_u64(w, v, &b->size) == 0) {
        b->flags |= MF_TORCH_HAS_SIZE;
    } else if (f == F_REQUESTED_SIZE && as_u64(w, v, &b->requested_size) == 0) {
        b->flags |= MF_TORCH_HAS_REQUESTED;
    } else if (f == F_STATE) {
        b->state = mf_pickle_is_str(v, "active_allocated") ? MF_TORCH_ACTIVE_ALLOCATED
                 : mf_pickle_is_str(v, "active_pending_free") ? MF_TORCH_ACTIVE_PENDING_FREE
                 : mf_pickle_is_str(v, "active_awaiting_free") ? MF_TORCH_ACTIVE_PENDING_FREE
                 : mf_pickle_is_str(v, "inactive") ? MF_TORCH_INACTIVE : MF_TORCH_STATE_UNKNOWN;
    }
}

static int entry_value(walker *w, enum field f, const mf_pickle_value *v)
{
    mf_torch_entry *e = &w->ent;
    switch (f) {
    case F_ACTION:
        if (v->kind != MF_PICKLE_STR) {
            w->st.bad_values++;
            return 0;
        }
        w->ent_action = action_of(w, v);
        if (w->ent_action == -2)
            return entry_text(w, v, &w->act_at, &w->has_act_text);
        return 0;
    case F_ADDR:
        if (as_u64(w, v, &e->addr) == 0)
            e->flags |= MF_TORCH_HAS_ADDRESS;
        return 0;
    case F_SIZE:
        if (as_u64(w, v, &e->size) == 0)
            e->flags |= MF_TORCH_HAS_SIZE;
        return 0;
    case F_DEVICE_FREE:
        if (as_u64(w, v, &e->device_free) == 0)
            e->flags |= MF_TORCH_HAS_DEVICE_FREE;
        return 0;
    case F_STREAM:
        if (as_i64(w, v, &e->stream) == 0)
            e->flags |= MF_TORCH_HAS_STREAM;
        return 0;
    case F_TIME_US:
        if (as_i64(w, v, &e->time_us) == 0)
            e->flags |= MF_TORCH_HAS_TIME;
        return 0;
    case F_POOL_ID:
        if (as_pool(w, v, e->pool_id) == 0)
            e->flags |= MF_TORCH_HAS_POOL;
        return 0;
    case F_COMPILE_CONTEXT:
        if (entry_text(w, v, &w->cc_at, &w->has_cc) < 0)
            return -1;
        if (w->has_cc)
            e->flags |= MF_TORCH_HAS_COMPILE;
        return 0;
    case F_USER_METADATA:
        if (entry_text(w, v, &w->md_at, &w->has_md) < 0)
            return -1;
        if (w->has_md)
            e->flags |= MF_TORCH_HAS_METADATA;
        return 0;
    default:
        return 0;
    }
}

static int on_value(void *ctx, const mf_pickle_value *key, const mf_pickle_value *v)
{
    walker *w = ctx;
    if (!w->nlv) {
        char what[64];
        snprintf(what, sizeof what, "a %s at the top", mf_pickle_kind_name((mf_pickle_kind)v->kind));
        return not_snapshot(w, what);
    }
    level *l = &w->lv[w->nlv - 1];
    l->count++;
    enum field f = field_of(w, key);
    switch (l->role) {
    case R_SEG:
        segment_value(w, f, v);
        return 0;
    case R_BLOCK:
        block_value(w, f, v);
        return 0;
    case R_HIST:
        if (!w->hist_seen && f == F_REAL_SIZE && as_u64(w, v, &w->hist_size) < 0)
            w->hist_size = UINT64_MAX;
        return 0;
    case R_ENTRY:
        return entry_value(w, f, v);
    case R_FRAME:
        frame_value(w, l, f, v);
        return w->failed ? -1 : 0;
    default:
        return 0;
    }
}

/* A frame dict ends: intern it, remember its identity, add it to its list. */
static int frame_done(walker *w, const level *l, level *holder)
{
    uint32_t filename = l->filename != NONE32 ? l->filename : intern_str(w, "", 0);
    uint32_t name = l->name != NONE32 ? l->name : intern_str(w, "", 0);
    if (filename == NONE32 || name == NONE32)
        return -1;
    uint32_t id = intern_frame(w, filename, name, l->line);
    if (id == NONE32 || table_add(w, &w->objmap, l->id, id) < 0)
        return -1;
    if (!holder || holder->role != R_FRAMES)
        return 0;
    if (w->nfids - holder->frames_from >= MF_TORCH_MAX_FRAMES)
        return 0;
    if (grow(w, (void **)&w->fids, &w->capfids, w->nfids + 1, sizeof(uint32_t)) < 0)
        return -1;
    w->fids[w->nfids++] = id;
    return 0;
}

/* A frames list ends: its stack goes to the record that holds it. */
static int frames_done(walker *w, const level *l, const level *holder)
{
    uint32_t n = (uint32_t)(w->nfids - l->frames_from), stack;
    if (l->count > MF_TORCH_MAX_FRAMES)
        w->st.cut_stacks++;
    if (intern_stack(w, n ? w->fids + l->frames_from : NULL, n, &stack) != 0)
        return -1;
    w->nfids = l->frames_from;
    uint32_t tagged = stack == MF_TORCH_NO_STACK ? TAG_NO_STACK : TAG_STACK | stack;
    if (table_add(w, &w->objmap, l->id, tagged) < 0)
        return -1;
    attach_stack(w, holder, stack);
    return 0;
}

static int level_end(walker *w, level *l, level *holder)
{
    switch (l->role) {
    case R_FRAME:
        return frame_done(w, l, holder);
    case R_FRAMES:
        return frames_done(w, l, holder);
    case R_HIST:
        history_done(w);
        return 0;
    case R_SEG:
        return segment_done(w);
    case R_ENTRY:
        return entry_done(w);
    case R_DEVICE:
        return section(w, MF_TORCH_DEVICE, 0, w->device, l->count);
    case R_TRACES:
        return section(w, MF_TORCH_TRACES, 0, -1, l->count);
    case R_SEGS:
        if (section(w, MF_TORCH_SEGMENTS, 0, -1, l->count) < 0)
            return -1;
        if (w->want == MF_TORCH_WANT_SEGMENTS) {
            w->done_early = 1;       /* the rest is not wanted */
            return -1;
        }
        return 0;
    case R_SNAP:
        if (!w->sections)
            return not_snapshot(w, "a dict with neither 'segments' nor 'device_traces'");
        return 0;
    }
    return 0;
}

static int on_end(void *ctx, mf_pickle_kind kind)
{
    walker *w = ctx;
    (void)kind;
    level l = w->lv[--w->nlv];
    level *holder = w->nlv ? &w->lv[w->nlv - 1] : NULL;
    int rc = level_end(w, &l, holder);
    if (rc < 0 && !w->failed && !w->done_early)
        w->failed = W_STOPPED;
    return rc;
}

/* ---- the walk ---- */

static void walker_free(walker *w)
{
    for (size_t i = 0; i < w->nchunks; i++)
        free(w->chunks[i]);
    for (size_t i = 0; i < w->nunknown; i++)
        free(w->unknown[i]);
    free(w->chunks);
    free(w->strs);
    table_free(&w->strtab);
    table_free(&w->frametab);
    table_free(&w->stacktab);
    table_free(&w->objmap);
    free(w->frames);
    free(w->fids);
    free(w->sframes);
    free(w->stack_at);
    free(w->stack_len);
    free(w->blocks);
    free(w->ent_text);
    free(w->lv);
}

int mf_torch_walk(mf_pickle_reader *r, unsigned want, const mf_torch_handler *h, void *ctx,
                  mf_torch_stats *stats, char *err, size_t errlen)
{
    static const mf_torch_handler none = { 0 };
    walker *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return MF_PICKLE_MEMORY;
    }
    w->r = r;
    w->h = h ? h : &none;
    w->ctx = ctx;
    w->want = want;
    w->device = -1;
    mf_pickle_handler ph = { on_begin, on_value, on_end };
    mf_pickle_status s = mf_pickle_read(r, &ph, w);
    int rc = (int)s;
    if (s == MF_PICKLE_STOPPED && w->done_early) {
        rc = 0;
        w->st.stopped_early = 1;
    } else if (s == MF_PICKLE_STOPPED && w->failed == MF_TORCH_NOT_A_SNAPSHOT) {
        rc = MF_TORCH_NOT_A_SNAPSHOT;
        snprintf(err, errlen, "%s", w->msg);
    } else if (s == MF_PICKLE_STOPPED && w->failed == W_OOM) {
        rc = MF_PICKLE_MEMORY;
        snprintf(err, errlen, "%s", w->msg);
    } else if (s != MF_PICKLE_OK) {
        snprintf(err, errlen, "%s", mf_pickle_error(r));
    }
    mf_pickle_stats_get(r, &w->st.pickle);
    if (stats)
        *stats = w->st;
    walker_free(w);
    free(w);
    return rc;
}
