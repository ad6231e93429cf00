/*
 * torch_convert.c - a PyTorch allocator history into memflow's records
 * (see torch_convert.h).
 *
 * Two walks of the same bytes: the first keeps the final segments and
 * their active blocks (the walker stops where the segments end); the
 * second replays the trace entries against what is live per device (its
 * tensors and its segments, keyed by address) and writes each record as
 * it goes.  What was live before the history began is found on the way
 * (frees of unknown blocks) and at the end (final segments and blocks the
 * replay did not leave live); their ALLOC records, dated at the history's
 * first moment, are written last.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_format.h"
#include "torch_convert.h"
#include "torch_grow.h"

/* ---- an address map: addr -> (size, flags), linear probing ---- */

typedef struct slot {
    uint64_t addr;
    uint64_t size;
    uint32_t flags;
    uint32_t stack;           /* what the allocation carried (for a later look) */
    uint32_t scope;
    uint32_t used;            /* 1: live */
} slot;

typedef struct addr_map {
    slot *s;
    size_t cap, n;
} addr_map;

/* MurmurHash3's finalizer: addresses share their low bits (alignment) and
 * their high ones, so every bit must reach the low bits a table uses. */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* The slot of addr, or NULL. */
static slot *map_find(const addr_map *m, uint64_t addr)
{
    if (!m->cap)
        return NULL;
    for (size_t i = mix(addr) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        slot *s = &m->s[i];
        if (!s->used)
            return NULL;
        if (s->addr == addr)
            return s;
    }
}

static int map_rehash(addr_map *m, size_t cap, size_t *mem)
{
    slot *old = m->s;
    size_t old_cap = m->cap;
    slot *s = calloc(cap, sizeof *s);
    if (!s)
        return -1;
    m->s = s;
    m->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].used) {
            size_t j = mix(old[i].addr) & (cap - 1);
            while (s[j].used)
                j = (j + 1) & (cap - 1);
            s[j] = old[i];
        }
    *mem += cap * sizeof *s;
    *mem -= old_cap * sizeof *s;
    free(old);
    return 0;
}

/* Insert or find addr's slot; the slot, or NULL when out of memory. */
static slot *map_put(addr_map *m, uint64_t addr, size_t *mem)
{
    slot *s = map_find(m, addr);
    if (s)
        return s;
    if ((m->n + 1) * 2 > m->cap && map_rehash(m, m->cap ? m->cap * 2 : 64, mem) < 0)
        return NULL;
    size_t i = mix(addr) & (m->cap - 1);
    while (m->s[i].used)
        i = (i + 1) & (m->cap - 1);
    s = &m->s[i];
    memset(s, 0, sizeof *s);
    s->addr = addr;
    s->used = 1;
    m->n++;
    return s;
}

/* Remove slot s: the entries after it in its run move back (no tombstones,
 * so a table that churns never needs rehashing). */
static void map_del(addr_map *m, slot *s)
{
    size_t i = (size_t)(s - m->s), j = i;
    for (;;) {
        j = (j + 1) & (m->cap - 1);
        if (!m->s[j].used)
            break;
        size_t home = mix(m->s[j].addr) & (m->cap - 1);
        /* move j into the hole at i unless its home lies in (i, j] */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            m->s[i] = m->s[j];
            i = j;
        }
    }
    m->s[i].used = 0;
    m->n--;
}

/* ---- the converter ---- */

typedef struct device_state {
    int known;
    addr_map tensors;         /* live tensors */
    addr_map segments;        /* live segments and mapped ranges (flags: the memory kind) */
    uint64_t fresh_lo, fresh_hi;   /* the segment allocated or mapped just before */
    uint64_t last_ns;         /* the time of its last entry (time_us mode) */
    int order_mode;           /* its times are the event order */
    /* incremental: what earlier runs converted (every entry up to done_us,
     * done_at of those at done_us), and this run's newest entries */
    int has_done;
    int64_t done_us;
    uint64_t done_at, seen_at_done;
    int has_max;
    int64_t max_us;
    uint64_t at_max;
} device_state;

/* Something live before the history began, allocated at its first moment. */
typedef struct before {
    uint16_t device;
    uint16_t tensor;          /* a tensor (sub-block), else a segment */
    uint32_t kind;            /* segments: enum mf_memory_kind */
    uint64_t addr, requested, actual;
    uint32_t scope, stack;
} before;

/* A final segment with its active blocks (the first walk). */
typedef struct final_block {
    uint64_t addr, size, requested;
    uint32_t stack;
} final_block;

typedef struct final_segment {
    int64_t device;
    uint64_t addr, size;
    int expandable;
    uint32_t stack;
    size_t first_block, n_blocks;   /* in blocks */
} final_segment;

struct mf_torch_convert {
    mf_torch_sink sink;
    mf_torch_options opt;
    size_t mem, mem_peak;
    int failed;               /* out of memory */
    device_state *dev;
    size_t n_dev;
    /* this run's frames and stacks: the walk's ids -> the sink's */
    uint32_t *frame_of, *stack_of;
    size_t n_frame_of, n_stack_of;
    uint64_t *entries;        /* a stack being composed */
    /* the last scope met (PyTorch repeats one metadata string) */
    char *last_md;
    size_t last_md_len, last_md_cap;
    uint32_t last_md_scope;
    uint32_t unk_scope;       /* the sink's id of "<unk>:" (0: not asked yet) */
    /* what was live before */
    before *before;
    size_t n_before, cap_before;
    final_segment *fsegs;
    size_t n_fsegs, cap_fsegs;
    final_block *fblocks;
    size_t n_fblocks, cap_fblocks;
    mf_pickle_reader *reading;   /* the walk's reader (for progress) */
    int scopes_noted;         /* MF_NOTE_TORCH_SCOPES written (user_metadata met) */
    mf_torch_result r;
};

static void note_mem(mf_torch_convert *c, size_t add)
{
    c->mem += add;
    if (c->mem > c->mem_peak)
        c->mem_peak = c->mem;
}

/* Make room for need elements of *a (capacity *cap).  0, or -1. */
static int grow(mf_torch_convert *c, void **a, size_t *cap, size_t need, size_t elem)
{
    if (mf_torch_grow(a, cap, need, elem, &c->mem) < 0) {
        c->failed = 1;
        return -1;
    }
    note_mem(c, 0);
    return 0;
}

mf_torch_convert *mf_torch_convert_new(const mf_torch_sink *sink, const mf_torch_options *opt)
{
    mf_torch_convert *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->sink = *sink;
    c->opt = *opt;
    c->entries = malloc(MF_STACK_MAX_DEPTH * sizeof *c->entries);
    if (!c->entries) {
        free(c);
        return NULL;
    }
    return c;
}

static void free_maps(mf_torch_convert *c)
{
    for (size_t i = 0; i < c->n_dev; i++) {
        free(c->dev[i].tensors.s);
        free(c->dev[i].segments.s);
    }
}

void mf_torch_convert_free(mf_torch_convert *c)
{
    if (!c)
        return;
    free_maps(c);
    free(c->dev);
    free(c->frame_of);
    free(c->stack_of);
    free(c->entries);
    free(c->last_md);
    free(c->before);
    free(c->fsegs);
    free(c->fblocks);
    free(c);
}

unsigned mf_torch_frame_kind(const char *filename)
{
    size_t n = filename ? strlen(filename) : 0;
    if ((n >= 3 && strcmp(filename + n - 3, ".py") == 0) || (n && filename[0] == '<'))
        return MF_FRAME_PYTHON;
    return MF_FRAME_NATIVE;
}

/* The state of device d (a GPU index), or NULL when out of memory or past 255. */
static device_state *device_of(mf_torch_convert *c, int64_t d)
{
    if (d < 0 || d > 255)
        return NULL;
    size_t cap = c->n_dev;
    if ((size_t)d >= c->n_dev &&
        grow(c, (void **)&c->dev, &cap, (size_t)d + 1, sizeof *c->dev) < 0)
        return NULL;
    if (cap > c->n_dev)
        c->n_dev = cap;
    device_state *s = &c->dev[d];
    s->known = 1;
    return s;
}

static uint16_t gpu(int64_t d)
{
    return MF_DEVICE(MF_DEVICE_GPU, (unsigned)d);
}

/* The time of entry e of device s on the log's clock. */
static uint64_t entry_time(mf_torch_convert *c, device_state *s, const mf_torch_entry *e)
{
    uint64_t t;
    if ((e->flags & MF_TORCH_HAS_TIME) && !s->order_mode) {
        int64_t ns;   /* a time_us no clock can have saturates, never overflows */
        if (__builtin_mul_overflow(e->time_us, 1000, &ns) ||
            __builtin_sub_overflow(ns, (int64_t)c->opt.real_ns, &ns) ||
            __builtin_add_overflow(ns, (int64_t)c->opt.mono_ns, &ns))
            ns = e->time_us < 0 ? 1 : INT64_MAX;
        t = ns > 0 ? (uint64_t)ns : 1;
        s->last_ns = t;
    } else if (s->last_ns && !s->order_mode) {
        t = s->last_ns;   /* an entry without time_us among timed ones */
    } else {
        if (!s->order_mode) {
            s->order_mode = 1;
            c->r.event_order_devices++;
            if (c->sink.note)
                c->sink.note(c->sink.ctx, MF_NOTE_TORCH_EVENT_ORDER, c->opt.order_origin_ns,
                             (uint64_t)e->device);
        }
        t = c->opt.order_origin_ns + e->index * 1000;
    }
    if (!c->r.first_ns || t < c->r.first_ns)
        c->r.first_ns = t;
    if (t > c->r.last_ns)
        c->r.last_ns = t;
    return t;
}

/* ---- frames, stacks, scopes ---- */

static uint32_t intern(mf_torch_convert *c, const char *p, size_t n)
{
    return c->sink.intern ? c->sink.intern(c->sink.ctx, p, n) : 0;
}

static int on_frame(void *ctx, const mf_torch_frame *f)
{
    mf_torch_convert *c = ctx;
    if (f->id < c->n_frame_of && c->frame_of[f->id])
        return 0;   /* the second walk: known */
    if (grow(c, (void **)&c->frame_of, &c->n_frame_of, (size_t)f->id + 1,
             sizeof *c->frame_of) < 0)
        return -1;
    const char *file = f->filename;
    int known_file = file && *file && strcmp(file, "??") != 0;
    uint32_t function = intern(c, f->name && *f->name ? f->name : "?",
                               f->name && *f->name ? strlen(f->name) : 1);
    uint32_t file_id = known_file ? intern(c, file, strlen(file)) : 0;
    uint32_t line = f->line > 0 && f->line <= UINT32_MAX ? (uint32_t)f->line : 0;
    uint32_t id = function && c->sink.frame
                      ? c->sink.frame(c->sink.ctx, function, file_id, line,
                                      mf_torch_frame_kind(file))
                      : 0;
    c->frame_of[f->id] = id ? id : UINT32_MAX;   /* UINT32_MAX: known, left out */
    return 0;
}

static int on_stack(void *ctx, uint32_t id, const uint32_t *frames, uint32_t n)
{
    mf_torch_convert *c = ctx;
    if (id < c->n_stack_of && c->stack_of[id])
        return 0;
    if (grow(c, (void **)&c->stack_of, &c->n_stack_of, (size_t)id + 1, sizeof *c->stack_of) < 0)
        return -1;
    uint32_t depth = 0;
    for (uint32_t i = 0; i < n && depth < MF_STACK_MAX_DEPTH; i++) {
        uint32_t f = frames[i] < c->n_frame_of ? c->frame_of[frames[i]] : 0;
        if (f && f != UINT32_MAX)
            c->entries[depth++] = mf_stack_frame_entry(f);
    }
    uint32_t s = depth && c->sink.stack ? c->sink.stack(c->sink.ctx, c->entries, depth) : 0;
    c->stack_of[id] = s ? s : UINT32_MAX;
    return 0;
}

/* The sink's stack id of a walk's stack id (0: none). */
static uint32_t stack_id(const mf_torch_convert *c, uint32_t walk_stack)
{
    if (walk_stack == MF_TORCH_NO_STACK || walk_stack >= c->n_stack_of)
        return 0;
    uint32_t s = c->stack_of[walk_stack];
    return s == UINT32_MAX ? 0 : s;
}

/* The sink's id of the default scope "<unk>:", interned through the sink
 * like any other string (the sink's ids are its own: the log's 1 for
 * "<unk>:" is a convention of the log writers, not of every sink). */
static uint32_t default_scope(mf_torch_convert *c)
{
    if (!c->unk_scope)
        c->unk_scope = intern(c, "<unk>:", 6);
    return c->unk_scope;
}

/* The scope of an entry: its user_metadata ("" or none: the sink's scope
 * at that time, else <unk>:), with a ':' appended if missing. */
static uint32_t scope_of(mf_torch_convert *c, const mf_torch_entry *e, uint64_t t)
{
    const char *md = e->user_metadata;
    size_t n = md ? strlen(md) : 0;
    if (!n)
        return c->sink.scope_at ? c->sink.scope_at(c->sink.ctx, t) : default_scope(c);
    if (!c->scopes_noted && c->sink.note) {   /* the outputs say where scopes came from */
        c->scopes_noted = 1;
        c->sink.note(c->sink.ctx, MF_NOTE_TORCH_SCOPES, t, MF_TORCH_SCOPES_METADATA);
    }
    if (c->last_md && n == c->last_md_len && memcmp(md, c->last_md, n) == 0)
        return c->last_md_scope;
    if (grow(c, (void **)&c->last_md, &c->last_md_cap, n + 2, 1) < 0)
        return default_scope(c);
    memcpy(c->last_md, md, n);
    size_t len = n;
    if (md[n - 1] != ':')
        c->last_md[len++] = ':';
    uint32_t id = intern(c, c->last_md, len);
    c->last_md_len = n;
    memcpy(c->last_md, md, n);   /* the cache keeps the metadata as given */
    c->last_md_scope = id ? id : default_scope(c);
    return c->last_md_scope;
}

/* ---- damaged and contradictory entries ---- */

/* Report entry e: "device D, entry I: " and what (printf-style). */
static void problem(mf_torch_convert *c, const mf_torch_entry *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void problem(mf_torch_convert *c, const mf_torch_entry *e, const char *fmt, ...)
{
    if (!c->opt.problem)
        return;
    char what[256];
    int n = snprintf(what, sizeof what, "device %lld, entry %llu: ", (long long)e->device,
                     (unsigned long long)e->index);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what + n, sizeof what - (size_t)n, fmt, ap);
    va_end(ap);
    c->opt.problem(c->opt.problem_arg, e->offset, what);
}

/* "an alloc", "a segment_free": the action with its article. */
static const char *article(unsigned action)
{
    return action == MF_TORCH_ALLOC || action == MF_TORCH_OOM ? "an" : "a";
}

/* The field entry e lacks for its action ("addr", "size"), or NULL.
 * PyTorch writes addr (device_free for oom) and size on every entry. */
static const char *missing_field(const mf_torch_entry *e)
{
    int addr = (e->flags & MF_TORCH_HAS_ADDRESS) != 0, size = (e->flags & MF_TORCH_HAS_SIZE) != 0;
    switch (e->action) {
    case MF_TORCH_ALLOC:
    case MF_TORCH_FREE_COMPLETED:
    case MF_TORCH_SEGMENT_ALLOC:
    case MF_TORCH_SEGMENT_FREE:
    case MF_TORCH_SEGMENT_MAP:
    case MF_TORCH_SEGMENT_UNMAP:
        return !addr ? "addr" : !size ? "size" : NULL;
    case MF_TORCH_FREE_REQUESTED:
        return !addr ? "addr" : NULL;
    case MF_TORCH_OOM:
        return !size ? "size" : NULL;
    default:
        return NULL;
    }
}

/* ---- what was live before ---- */

static void add_before(mf_torch_convert *c, const before *b)
{
    if (grow(c, (void **)&c->before, &c->cap_before, c->n_before + 1, sizeof *c->before) < 0)
        return;
    c->before[c->n_before++] = *b;
    if (b->tensor)
        c->r.before_tensors++;
    else
        c->r.before_segments++;
}

/* ---- the first walk: the final segments ---- */

static int on_segment(void *ctx, const mf_torch_segment *s)
{
    mf_torch_convert *c = ctx;
    if (!(s->flags & MF_TORCH_HAS_ADDRESS) || !(s->flags & MF_TORCH_HAS_SIZE))
        return 0;
    if (grow(c, (void **)&c->fsegs, &c->cap_fsegs, c->n_fsegs + 1, sizeof *c->fsegs) < 0)
        return -1;
    final_segment *f = &c->fsegs[c->n_fsegs++];
    *f = (final_segment){ .device = (s->flags & MF_TORCH_HAS_DEVICE) ? s->device : 0,
                          .addr = s->address, .size = s->total_size,
                          .expandable = s->is_expandable > 0, .stack = s->stack,
                          .first_block = c->n_fblocks };
    for (size_t i = 0; i < s->nblocks; i++) {
        const mf_torch_block *b = &s->blocks[i];
        if (b->state != MF_TORCH_ACTIVE_ALLOCATED && b->state != MF_TORCH_ACTIVE_PENDING_FREE)
            continue;
        if (grow(c, (void **)&c->fblocks, &c->cap_fblocks, c->n_fblocks + 1,
                 sizeof *c->fblocks) < 0)
            return -1;
        c->fblocks[c->n_fblocks++] = (final_block){ b->address, b->size,
                                                    b->requested_size ? b->requested_size
                                                                      : b->size,
                                                    b->stack };
        f->n_blocks++;
    }
    return 0;
}

/* ---- the second walk: the trace ---- */

static unsigned segment_kind(unsigned action)
{
    return action == MF_TORCH_SEGMENT_MAP || action == MF_TORCH_SEGMENT_UNMAP ? MF_MEM_VMM
                                                                               : MF_MEM_DEVICE;
}

static unsigned kind_flags(unsigned kind)
{
    return kind << MF_MEMKIND_SHIFT;
}

/* A segment (or a mapped range) begins or ends: a block's ALLOC or FREE,
 * or a SEGMENT record where another capture records the memory. */
static void segment_record(mf_torch_convert *c, int64_t d, unsigned kind, int begin,
                           unsigned flags, uint64_t t, uint64_t addr, uint64_t size,
                           uint32_t scope, uint32_t stack)
{
    if (c->opt.segments_as_records) {
        unsigned op = kind == MF_MEM_VMM ? (begin ? MF_SEGMENT_MAP : MF_SEGMENT_UNMAP)
                                         : (begin ? MF_SEGMENT_ALLOC : MF_SEGMENT_FREE);
        if (c->sink.segment)
            c->sink.segment(c->sink.ctx, gpu(d), op, t, addr, size);
    } else if (begin && c->sink.alloc) {
        c->sink.alloc(c->sink.ctx, gpu(d), kind_flags(kind) | flags, t, addr, size, size, scope,
                      stack);
    } else if (!begin && c->sink.free) {
        c->sink.free(c->sink.ctx, gpu(d), kind_flags(kind), t, addr);
    }
}

/* A segment (or a mapped range) begins: recorded, and live from now on. */
static void segment_begin(mf_torch_convert *c, device_state *s, int64_t d, unsigned kind,
                          unsigned flags, uint64_t t, uint64_t addr, uint64_t size,
                          uint32_t scope, uint32_t stack)
{
    segment_record(c, d, kind, 1, flags, t, addr, size, scope, stack);
    slot *sl = map_put(&s->segments, addr, &c->mem);
    if (!sl) {
        c->failed = 1;
        return;
    }
    note_mem(c, 0);
    sl->size = size;
    sl->flags = kind;
    sl->scope = scope;
    sl->stack = stack;
}

static void segment_end(mf_torch_convert *c, int64_t d, unsigned kind, uint64_t t,
                        uint64_t addr, uint64_t size)
{
    segment_record(c, d, kind, 0, 0, t, addr, size, 0, 0);
}

/* The live mapped ranges (VMM) of s that overlap [lo, hi), sorted by
 * address, into *out (malloc'd); how many, or -1. */
static long overlapping(mf_torch_convert *c, const device_state *s, uint64_t lo, uint64_t hi,
                        slot **out)
{
    size_t n = 0, cap = 0;
    slot *v = NULL;
    for (size_t i = 0; i < s->segments.cap; i++) {
        const slot *x = &s->segments.s[i];
        if (x->used != 1 || x->flags != MF_MEM_VMM || x->addr >= hi || x->addr + x->size <= lo)
            continue;
        if (grow(c, (void **)&v, &cap, n + 1, sizeof *v) < 0) {
            free(v);
            return -1;
        }
        size_t j = n++;
        while (j > 0 && v[j - 1].addr > x->addr) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = *x;
    }
    c->mem -= cap * sizeof *v;
    *out = v;
    return (long)n;
}

/* The pieces of [lo, hi) no live mapped range covers become mappings live
 * before the history began (end_t: they end now, 0: they stay live). */
static void uncovered_before(mf_torch_convert *c, int64_t d, const slot *v, long n, uint64_t lo,
                             uint64_t hi, uint64_t end_t, uint32_t stack)
{
    uint64_t at = lo;
    for (long i = 0; i <= n && at < hi; i++) {
        uint64_t next = i < n ? (v[i].addr > lo ? v[i].addr : lo) : hi;
        if (next > hi)
            next = hi;
        if (next > at) {
            before b = { .device = (uint16_t)d, .kind = MF_MEM_VMM, .addr = at,
                         .requested = next - at, .actual = next - at,
                         .scope = default_scope(c), .stack = stack };
            add_before(c, &b);
            if (end_t) {
                segment_end(c, d, MF_MEM_VMM, end_t, at, next - at);
            } else {   /* live from now on (a later run of an incremental converter) */
                device_state *s = device_of(c, d);
                slot *sl = s ? map_put(&s->segments, at, &c->mem) : NULL;
                if (sl) {
                    sl->size = next - at;
                    sl->flags = MF_MEM_VMM;
                }
            }
        }
        if (i < n && v[i].addr + v[i].size > at)
            at = v[i].addr + v[i].size;
    }
}

/* segment_unmap of [addr, addr + size): the mapped ranges it touches end;
 * the parts of them outside it begin again (REALLOC); what it unmaps that
 * was never mapped in the history was mapped before. */
static void unmap(mf_torch_convert *c, device_state *s, int64_t d, uint64_t t, uint64_t addr,
                  uint64_t size)
{
    slot *v;
    uint64_t hi = addr + size;
    long n = overlapping(c, s, addr, hi, &v);
    if (n < 0)
        return;
    uncovered_before(c, d, v, n, addr, hi, t, 0);
    for (long i = 0; i < n; i++) {
        slot *live = map_find(&s->segments, v[i].addr);
        segment_end(c, d, MF_MEM_VMM, t, v[i].addr, v[i].size);
        if (live)
            map_del(&s->segments, live);
        c->r.segment_frees++;
        uint64_t end = v[i].addr + v[i].size;
        if (v[i].addr < addr)
            segment_begin(c, s, d, MF_MEM_VMM, MF_FLAG_REALLOC, t, v[i].addr, addr - v[i].addr,
                          v[i].scope, v[i].stack);
        if (end > hi)
            segment_begin(c, s, d, MF_MEM_VMM, MF_FLAG_REALLOC, t, hi, end - hi, v[i].scope,
                          v[i].stack);
    }
    free(v);
}

static void tensor_alloc(mf_torch_convert *c, device_state *s, int64_t d, uint64_t t,
                         const mf_torch_entry *e, uint32_t scope, uint32_t stack)
{
    slot *old = map_find(&s->tensors, e->addr);
    if (old) {   /* never freed in the history: it ends here */
        c->r.inconsistent++;
        problem(c, e, "an alloc at %#llx, where a tensor is live: that tensor ends here",
                (unsigned long long)e->addr);
        if (c->sink.free)
            c->sink.free(c->sink.ctx, gpu(d), MF_FLAG_SUBBLOCK | kind_flags(MF_MEM_DEVICE), t,
                         e->addr);
    }
    int fresh = e->addr >= s->fresh_lo && e->addr < s->fresh_hi;
    unsigned flags = MF_FLAG_SUBBLOCK | kind_flags(MF_MEM_DEVICE) | (fresh ? 0 : MF_FLAG_REUSED);
    if (c->sink.alloc)
        c->sink.alloc(c->sink.ctx, gpu(d), flags, t, e->addr, e->size, e->size, scope, stack);
    s->fresh_lo = s->fresh_hi = 0;
    slot *sl = map_put(&s->tensors, e->addr, &c->mem);
    if (!sl) {
        c->failed = 1;
        return;
    }
    note_mem(c, 0);
    sl->size = e->size;
    c->r.tensors++;
}

static void tensor_free(mf_torch_convert *c, device_state *s, int64_t d, uint64_t t,
                        const mf_torch_entry *e, uint32_t scope, uint32_t stack)
{
    slot *sl = map_find(&s->tensors, e->addr);
    if (sl) {
        map_del(&s->tensors, sl);
    } else {   /* allocated before the history began */
        before b = { .device = (uint16_t)d, .tensor = 1, .kind = MF_MEM_DEVICE, .addr = e->addr,
                     .requested = e->size, .actual = e->size, .scope = scope, .stack = stack };
        add_before(c, &b);
    }
    if (c->sink.free)
        c->sink.free(c->sink.ctx, gpu(d), MF_FLAG_SUBBLOCK | kind_flags(MF_MEM_DEVICE), t,
                     e->addr);
    c->r.tensor_frees++;
}

static void segment_entry(mf_torch_convert *c, device_state *s, int64_t d, uint64_t t,
                          const mf_torch_entry *e, uint32_t scope, uint32_t stack)
{
    unsigned kind = segment_kind(e->action);
    if (e->action == MF_TORCH_SEGMENT_ALLOC || e->action == MF_TORCH_SEGMENT_MAP) {
        slot *old = map_find(&s->segments, e->addr);
        if (old) {
            c->r.inconsistent++;
            problem(c, e, "a %s at %#llx, where a segment is live: that segment ends here",
                    mf_torch_action_name(e->action), (unsigned long long)e->addr);
            segment_end(c, d, old->flags, t, e->addr, old->size);
            map_del(&s->segments, old);
        }
        segment_begin(c, s, d, kind, 0, t, e->addr, e->size, scope, stack);
        s->fresh_lo = e->addr;
        s->fresh_hi = e->addr + e->size;
        c->r.segments++;
        return;
    }
    if (e->action == MF_TORCH_SEGMENT_UNMAP) {
        unmap(c, s, d, t, e->addr, e->size);
        return;
    }
    slot *sl = map_find(&s->segments, e->addr);   /* segment_free */
    if (sl) {
        map_del(&s->segments, sl);
    } else {
        before b = { .device = (uint16_t)d, .kind = MF_MEM_DEVICE, .addr = e->addr,
                     .requested = e->size, .actual = e->size, .scope = scope, .stack = stack };
        add_before(c, &b);
    }
    segment_end(c, d, MF_MEM_DEVICE, t, e->addr, e->size);
    c->r.segment_frees++;
}

/* Incremental runs: whether an earlier run converted entry e already (a
 * device's trace is in time order: what earlier runs had is a prefix). */
static int converted_before(mf_torch_convert *c, device_state *s, const mf_torch_entry *e)
{
    if (!c->opt.incremental || !(e->flags & MF_TORCH_HAS_TIME))
        return 0;
    int64_t t = e->time_us;
    if (s->has_done && (t < s->done_us || (t == s->done_us && s->seen_at_done < s->done_at))) {
        s->seen_at_done += t == s->done_us;
        return 1;
    }
    if (!s->has_max || t > s->max_us) {
        s->has_max = 1;
        s->max_us = t;
        s->at_max = 0;
    }
    s->at_max += t == s->max_us;
    return 0;
}

/* The end of an incremental run: what it converted counts as done. */
static void runs_done(mf_torch_convert *c)
{
    for (size_t i = 0; i < c->n_dev; i++) {
        device_state *s = &c->dev[i];
        if (s->has_max && (!s->has_done || s->max_us > s->done_us)) {
            s->done_us = s->max_us;
            s->done_at = s->at_max;
        } else if (s->has_max && s->max_us == s->done_us) {
            s->done_at = s->seen_at_done + s->at_max;
        }
        s->has_done |= s->has_max;
        s->has_max = 0;
        s->seen_at_done = s->at_max = 0;
    }
}

static int on_entry(void *ctx, const mf_torch_entry *e)
{
    mf_torch_convert *c = ctx;
    device_state *s = device_of(c, e->device);
    if (!s)
        return c->failed ? -1 : 0;
    if (converted_before(c, s, e)) {
        c->r.skipped++;
        return 0;
    }
    const char *missing = missing_field(e);
    if (missing) {
        c->r.damaged++;
        problem(c, e, "%s %s without an integer %s: skipped", article(e->action),
                mf_torch_action_name(e->action), missing);
        return 0;
    }
    uint64_t t = entry_time(c, s, e);
    uint32_t scope = scope_of(c, e, t), stack = stack_id(c, e->stack);
    if ((++c->r.entries & 0xffff) == 0 && c->opt.progress)
        c->opt.progress(c->opt.progress_arg, mf_pickle_offset(c->reading), c->r.entries);
    switch (e->action) {
    case MF_TORCH_ALLOC:
        tensor_alloc(c, s, e->device, t, e, scope, stack);
        break;
    case MF_TORCH_FREE_REQUESTED:
        if (c->sink.trace)
            c->sink.trace(c->sink.ctx, MF_TRACE_FREE_REQUESTED, t, e->addr, gpu(e->device));
        break;
    case MF_TORCH_FREE_COMPLETED:
        tensor_free(c, s, e->device, t, e, scope, stack);
        break;
    case MF_TORCH_SEGMENT_ALLOC:
    case MF_TORCH_SEGMENT_FREE:
    case MF_TORCH_SEGMENT_MAP:
    case MF_TORCH_SEGMENT_UNMAP:
        segment_entry(c, s, e->device, t, e, scope, stack);
        break;
    case MF_TORCH_OOM:
        c->r.ooms++;
        if (c->sink.oom)
            c->sink.oom(c->sink.ctx, gpu(e->device), MF_OOM_TORCH_TRACE, t, e->size,
                        (e->flags & MF_TORCH_HAS_DEVICE_FREE) ? e->device_free : UINT64_MAX,
                        scope, stack);
        break;
    default:   /* snapshot, annotate: nothing to record */
        break;
    }
    return c->failed ? -1 : 0;
}

/* ---- after the trace ---- */

/* The final segments and their active blocks the replay did not leave
 * live were live before the history began (and still are). */
static void final_before(mf_torch_convert *c)
{
    for (size_t i = 0; i < c->n_fsegs; i++) {
        const final_segment *f = &c->fsegs[i];
        device_state *s = device_of(c, f->device);
        if (!s)
            continue;
        if (f->expandable) {
            slot *v;
            long n = overlapping(c, s, f->addr, f->addr + f->size, &v);
            if (n >= 0)
                uncovered_before(c, f->device, v, n, f->addr, f->addr + f->size, 0,
                                 stack_id(c, f->stack));
            free(v);
        } else if (!map_find(&s->segments, f->addr)) {
            before b = { .device = (uint16_t)f->device, .kind = MF_MEM_DEVICE, .addr = f->addr,
                         .requested = f->size, .actual = f->size,
                         .scope = default_scope(c), .stack = stack_id(c, f->stack) };
            add_before(c, &b);
            slot *sl = map_put(&s->segments, f->addr, &c->mem);   /* live from now on */
            if (sl) {
                sl->size = f->size;
                sl->flags = MF_MEM_DEVICE;
            }
        }
        for (size_t k = 0; k < f->n_blocks; k++) {
            const final_block *fb = &c->fblocks[f->first_block + k];
            if (map_find(&s->tensors, fb->addr))
                continue;
            before b = { .device = (uint16_t)f->device, .tensor = 1, .kind = MF_MEM_DEVICE,
                         .addr = fb->addr, .requested = fb->requested, .actual = fb->size,
                         .scope = default_scope(c), .stack = stack_id(c, fb->stack) };
            add_before(c, &b);
            slot *sl = map_put(&s->tensors, fb->addr, &c->mem);
            if (sl)
                sl->size = fb->size;
        }
    }
}

/* Write the ALLOC records of what was live before, at the first moment. */
static void write_before(mf_torch_convert *c)
{
    uint64_t t0 = c->r.first_ns ? c->r.first_ns : c->opt.order_origin_ns;
    if (!c->r.first_ns && c->n_before)
        c->r.first_ns = c->r.last_ns = t0;
    for (size_t i = 0; i < c->n_before; i++) {
        const before *b = &c->before[i];
        if (!b->tensor)
            segment_record(c, b->device, b->kind, 1, MF_FLAG_BEFORE, t0, b->addr, b->actual,
                           b->scope, b->stack);
        else if (c->sink.alloc)
            c->sink.alloc(c->sink.ctx, gpu(b->device),
                          MF_FLAG_BEFORE | MF_FLAG_SUBBLOCK | kind_flags(b->kind), t0, b->addr,
                          b->requested, b->actual, b->scope, b->stack);
    }
    c->n_before = 0;
}

/* ---- a run ---- */

/* One walk of a new reader: 0, or the walk's status. */
static int walk(mf_torch_convert *c, mf_pickle_reader *(*open)(void *, char *, size_t),
                void *arg, unsigned want, char *err, size_t errlen)
{
    mf_pickle_reader *rd = open(arg, err, errlen);
    if (!rd)
        return MF_PICKLE_MEMORY;
    mf_torch_handler h = { .frame = on_frame, .stack = on_stack, .segment = on_segment,
                           .entry = on_entry };
    if (want == MF_TORCH_WANT_SEGMENTS)
        h.entry = NULL;
    else
        h.segment = NULL;
    c->reading = rd;
    int rc = mf_torch_walk(rd, want, &h, c, &c->r.walk, err, errlen);
    c->reading = NULL;
    mf_pickle_reader_free(rd);
    if (rc == MF_PICKLE_STOPPED && c->failed)
        snprintf(err, errlen, "out of memory converting the snapshot");
    return rc == MF_PICKLE_STOPPED && c->failed ? MF_PICKLE_MEMORY : rc;
}

int mf_torch_convert_run(mf_torch_convert *c,
                         mf_pickle_reader *(*open)(void *arg, char *err, size_t errlen),
                         void *arg, mf_torch_result *out, char *err, size_t errlen)
{
    mf_torch_result keep = c->r;
    memset(&c->r, 0, sizeof c->r);
    c->r.first_ns = keep.first_ns;   /* the first moment of every run so far */
    c->r.last_ns = keep.last_ns;
    /* the walk's ids are this snapshot's */
    if (c->n_frame_of)
        memset(c->frame_of, 0, c->n_frame_of * sizeof *c->frame_of);
    if (c->n_stack_of)
        memset(c->stack_of, 0, c->n_stack_of * sizeof *c->stack_of);
    c->n_fsegs = c->n_fblocks = 0;
    int rc = walk(c, open, arg, MF_TORCH_WANT_SEGMENTS, err, errlen);
    if (rc == 0)
        rc = walk(c, open, arg, MF_TORCH_WANT_TRACES, err, errlen);
    if (c->opt.incremental)
        runs_done(c);
    if (rc == 0) {
        final_before(c);
        if (!c->r.first_ns && c->n_before && c->sink.note)   /* no trace: one moment */
            c->sink.note(c->sink.ctx, MF_NOTE_TORCH_EVENT_ORDER, c->opt.order_origin_ns,
                         UINT64_MAX);
        write_before(c);
    }
    if (c->r.inconsistent && c->sink.note)
        c->sink.note(c->sink.ctx, MF_NOTE_TORCH_INCONSISTENT,
                     c->r.last_ns ? c->r.last_ns : c->opt.order_origin_ns, c->r.inconsistent);
    c->r.memory_peak = c->mem_peak;
    if (out)
        *out = c->r;
    return c->failed && rc == 0 ? MF_PICKLE_MEMORY : rc;
}
