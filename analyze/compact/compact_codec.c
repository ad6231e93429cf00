/*
 * compact_codec.c - the dense encoding of one log chunk (compact_codec.h).
 *
 * The encoder walks the chunk's records the way the reader does and sends
 * each field to the stream of its kind; the decoder replays the same model
 * from the same streams and writes the records back.  Both sides keep the
 * model in one struct (struct model) and change it through the same small
 * functions, so they cannot drift apart.  docs/FORMAT.md ("Compact form")
 * lists the opcodes and streams.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compact_codec.h"
#include "compiler.h"
#include "log_format.h"

/* The streams, in the order they are stored. */
enum stream {
    S_OPS,      /* one opcode per record */
    S_TIME,     /* time deltas: compact records' aux, TIME records */
    S_SIZE,     /* requested sizes of allocations */
    S_ADDR,     /* addresses no prediction gave, as deltas */
    S_REF,      /* frees: the place of the freed block in the live table */
    S_MISC,     /* slack, scope, flags, stack id when not predicted */
    S_COLS,     /* other fixed-size records: column deltas */
    S_RAW,      /* chunk header, verbatim records, bytes after the records */
    N_STREAMS
};

#define ENC_HEADER (4u + 4u * N_STREAMS) /* live length, then each stream's length */

/* Opcodes (docs/FORMAT.md). */
#define OP_ALLOC 0x00u        /* 0x00..0x3f: CPU_ALLOC[_STACK], these bits: */
#define ALLOC_ADDR_MASK 0x03u /*   how the address is found (ADDR_*) */
#define ALLOC_SLACK 0x04u     /*   slack in MISC (else: the smallest class >= requested) */
#define ALLOC_SCOPE 0x08u     /*   scope in MISC (else: the previous allocation's) */
#define ALLOC_FLAGS 0x10u     /*   flags in MISC (else 0) */
#define ALLOC_STACK 0x20u     /*   CPU_ALLOC_STACK: stack id in MISC */
#define OP_FREE 0x40u         /* 0x40..0x43: CPU_FREE, these bits: */
#define FREE_ADDR 0x01u       /*   address as a delta in ADDR (else a live-table place in REF) */
#define FREE_FLAGS 0x02u      /*   flags in MISC (else 0) */
#define OP_TIME 0x48u         /* TIME: time delta in TIME */
#define OP_COLUMNS 0x80u      /* 0x80 + type: column deltas in COLS */
#define OP_VERBATIM 0xc0u     /* the whole record in RAW */
#define OP_END 0xfeu          /* the rest of the chunk is zero */
#define OP_TAIL 0xffu         /* the rest of the chunk is in RAW */

enum addr_mode {
    ADDR_CACHED = 0,          /* the class's last freed block (LIFO cache) */
    ADDR_NEXT = 1,            /* the class's last allocation + its size */
    ADDR_DELTA = 2            /* delta from the class's last allocation (or the last address) */
};

#define MAX_CLASSES 1024u
#define NO_CLASS 0xffffffffu
#define CACHE_DEPTH 16u       /* freed blocks remembered per class */
#define MAX_LIVE (MF_CHUNK_SIZE / sizeof(mf_rec_cpu_alloc) + 1)
#define HASH_BITS 16u
#define HASH_SLOTS (1u << HASH_BITS)
#define COL_TYPES 64u
#define COL_WORDS 8u
#define MASK48 ((UINT64_C(1) << MF_CPU_SIZE_BITS) - 1)
#define MASK56 ((UINT64_C(1) << MF_CPU_ADDR_BITS) - 1)
#define STREAM_CAP (2u * MF_CHUNK_SIZE)

typedef struct live_block {
    uint64_t addr;
    uint32_t cls;             /* class id, or NO_CLASS */
} live_block;

/* Sizes fall in buckets of a quarter of a power of two: 4 per doubling,
 * the spacing of allocators' size classes. */
#define BUCKETS 256u

typedef struct size_class {
    uint64_t last;            /* address of the class's last allocation */
    uint32_t has_last;
    uint32_t top;             /* cache[(top - 1) % CACHE_DEPTH] is the newest */
    uint32_t n_cached;
    uint64_t cache[CACHE_DEPTH];
} size_class;

/* The model both sides keep while walking one chunk. */
struct model {
    uint32_t n_classes;
    uint64_t class_size[MAX_CLASSES];   /* ascending */
    uint32_t class_id[MAX_CLASSES];     /* id of class_size[i] */
    size_class classes[MAX_CLASSES];    /* by id */
    uint32_t n_live;
    live_block live[MAX_LIVE];
    uint64_t prev_addr;
    uint64_t prev_time;
    uint32_t prev_scope;
    uint64_t cols[COL_TYPES][COL_WORDS];
    uint32_t first_in[BUCKETS];         /* place of the first class in bucket >= b */
};

/* Encoder only: live block address -> its place in model.live. */
typedef struct hash_slot {
    uint64_t addr;
    uint32_t place;
    uint32_t gen;             /* the slot is used when gen == codec gen */
} hash_slot;

typedef struct stream_buf {
    uint8_t *p;
    size_t len;
} stream_buf;

struct mf_codec {
    struct model m;
    hash_slot *hash;
    uint32_t gen;
    stream_buf s[N_STREAMS];
    uint8_t *out;
};

/* ---- little-endian loads and stores ------------------------------------ */

static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline void st64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline void st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static inline uint64_t zigzag(uint64_t delta)
{
    return (delta << 1) ^ (uint64_t)-(int64_t)(delta >> 63);
}

static inline uint64_t unzigzag(uint64_t v)
{
    return (v >> 1) ^ (uint64_t)-(int64_t)(v & 1);
}

/* ---- the model: size classes, their caches, the live table -------------- */

static void model_reset(struct model *m)
{
    m->n_classes = 0;
    m->n_live = 0;
    m->prev_addr = 0;
    m->prev_time = 0;
    m->prev_scope = MF_STRING_DEFAULT_SCOPE;
    memset(m->cols, 0, sizeof m->cols);
    memset(m->first_in, 0, sizeof m->first_in);
}

/* The bucket of a size: which quarter of which power of two. */
static inline unsigned bucket_of(uint64_t size)
{
    if (size < 4)
        return (unsigned)size;
    unsigned high = 63u - (unsigned)__builtin_clzll(size);
    return high * 4 + (unsigned)((size >> (high - 2)) & 3);
}

/* The place in class_size of the smallest class >= size (n_classes if
 * none): a short walk from the first class of the size's bucket. */
static inline uint32_t class_at_least(const struct model *m, uint64_t size)
{
    uint32_t at = m->first_in[bucket_of(size)];
    while (at < m->n_classes && m->class_size[at] < size)
        at++;
    return at;
}

/* The id of the class of exactly size, created if new (NO_CLASS when full). */
static uint32_t class_of(struct model *m, uint64_t size)
{
    uint32_t at = class_at_least(m, size);
    if (at < m->n_classes && m->class_size[at] == size)
        return m->class_id[at];
    if (m->n_classes == MAX_CLASSES)
        return NO_CLASS;
    memmove(&m->class_size[at + 1], &m->class_size[at],
            (m->n_classes - at) * sizeof m->class_size[0]);
    memmove(&m->class_id[at + 1], &m->class_id[at], (m->n_classes - at) * sizeof m->class_id[0]);
    uint32_t id = m->n_classes++;
    for (unsigned b = bucket_of(size) + 1; b < BUCKETS; b++)
        m->first_in[b]++;
    m->class_size[at] = size;
    m->class_id[at] = id;
    size_class *c = &m->classes[id];
    c->has_last = 0;
    c->top = 0;
    c->n_cached = 0;
    return id;
}

static inline void cache_push(struct model *m, uint32_t cls, uint64_t addr)
{
    if (cls == NO_CLASS)
        return;
    size_class *c = &m->classes[cls];
    c->cache[c->top++ % CACHE_DEPTH] = addr;
    if (c->n_cached < CACHE_DEPTH)
        c->n_cached++;
}

/* The class's newest freed block, if any (1), else 0. */
static inline int cache_peek(const struct model *m, uint32_t cls, uint64_t *addr)
{
    if (cls == NO_CLASS || m->classes[cls].n_cached == 0)
        return 0;
    const size_class *c = &m->classes[cls];
    *addr = c->cache[(c->top - 1) % CACHE_DEPTH];
    return 1;
}

static inline void cache_pop(struct model *m, uint32_t cls)
{
    size_class *c = &m->classes[cls];
    c->top--;
    c->n_cached--;
}

/* An allocation at addr in class cls: the class's last, the live table. */
static inline void note_alloc(struct model *m, uint32_t cls, uint64_t addr)
{
    if (cls != NO_CLASS) {
        m->classes[cls].last = addr;
        m->classes[cls].has_last = 1;
    }
    m->prev_addr = addr;
    m->live[m->n_live].addr = addr;
    m->live[m->n_live].cls = cls;
    m->n_live++;
}

/* The free of live[place]: it leaves the table (the last block takes its
 * place) and becomes its class's newest freed block. */
static inline void note_free_live(struct model *m, uint32_t place)
{
    live_block b = m->live[place];
    m->live[place] = m->live[--m->n_live];
    cache_push(m, b.cls, b.addr & MASK56);
    m->prev_addr = b.addr & MASK56;
}

/* Whether records of type carry their time at offset 8. */
static int has_time_field(unsigned type)
{
    switch (type) {
    case MF_REC_ALLOC: case MF_REC_FREE: case MF_REC_SCOPE: case MF_REC_SAMPLE:
    case MF_REC_ACTIVITY: case MF_REC_STATE: case MF_REC_NOTE: case MF_REC_POOL:
    case MF_REC_TIME: case MF_REC_OWNER: case MF_REC_TRACE:
        return 1;
    }
    return 0;
}

/* ---- codec life --------------------------------------------------------- */

mf_codec *mf_codec_new(void)
{
    mf_codec *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->hash = calloc(HASH_SLOTS, sizeof *c->hash);
    c->out = malloc(ENC_HEADER + STREAM_CAP);
    int ok = c->hash && c->out;
    for (int i = 0; i < N_STREAMS && ok; i++)
        ok = (c->s[i].p = malloc(STREAM_CAP)) != NULL;
    if (!ok) {
        mf_codec_free(c);
        return NULL;
    }
    return c;
}

void mf_codec_free(mf_codec *c)
{
    if (!c)
        return;
    for (int i = 0; i < N_STREAMS; i++)
        free(c->s[i].p);
    free(c->hash);
    free(c->out);
    free(c);
}

/* ---- encoder ------------------------------------------------------------ */

static inline void put_byte(mf_codec *c, enum stream s, uint8_t b)
{
    c->s[s].p[c->s[s].len++] = b;
}

static inline void put_varint(mf_codec *c, enum stream s, uint64_t v)
{
    stream_buf *b = &c->s[s];
    while (v >= 0x80) {
        b->p[b->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->len++] = (uint8_t)v;
}

static void put_bytes(mf_codec *c, enum stream s, const uint8_t *p, size_t n)
{
    memcpy(c->s[s].p + c->s[s].len, p, n);
    c->s[s].len += n;
}

static inline uint32_t hash_home(uint64_t addr)
{
    return (uint32_t)(((addr >> 4) * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - HASH_BITS));
}

static inline int slot_used(const mf_codec *c, uint32_t i)
{
    return c->hash[i].gen == c->gen;
}

/* The slot holding addr, or the empty slot where it would go. */
static inline uint32_t hash_find(const mf_codec *c, uint64_t addr)
{
    uint32_t i = hash_home(addr);
    while (slot_used(c, i) && c->hash[i].addr != addr)
        i = (i + 1) & (HASH_SLOTS - 1);
    return i;
}

static inline void hash_set(mf_codec *c, uint64_t addr, uint32_t place)
{
    uint32_t i = hash_find(c, addr);
    c->hash[i] = (hash_slot){ addr, place, c->gen };
}

/* Empty slot i, moving later entries of its probe run back (no tombstones). */
static void hash_delete(mf_codec *c, uint32_t i)
{
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & (HASH_SLOTS - 1);
        if (!slot_used(c, j))
            break;
        uint32_t home = hash_home(c->hash[j].addr);
        int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            c->hash[i] = c->hash[j];
            i = j;
        }
    }
    c->hash[i].gen = c->gen - 1;
}

/* A new chunk: empty model, empty hash (by generation), empty streams. */
static void encoder_reset(mf_codec *c)
{
    model_reset(&c->m);
    if (++c->gen == 0) {
        memset(c->hash, 0, HASH_SLOTS * sizeof *c->hash);
        c->gen = 1;
    }
    for (int i = 0; i < N_STREAMS; i++)
        c->s[i].len = 0;
}

static void encode_alloc(mf_codec *c, const uint8_t *p, unsigned type, uint32_t aux)
{
    struct model *m = &c->m;
    uint64_t addr = ld64(p + 8), rf = ld64(p + 16);
    uint32_t slack = ld32(p + 24), scope = ld32(p + 28);
    uint64_t req = rf & MASK48, actual = req + slack;
    unsigned op = OP_ALLOC;
    uint32_t at = class_at_least(m, req), cls;
    if (at < m->n_classes && m->class_size[at] == actual) {
        cls = m->class_id[at];
    } else {
        op |= ALLOC_SLACK;
        put_varint(c, S_MISC, slack);
        cls = class_of(m, actual);
    }
    uint64_t cached;
    if (cache_peek(m, cls, &cached) && cached == addr) {
        op |= ADDR_CACHED;
        cache_pop(m, cls);
    } else if (cls != NO_CLASS && m->classes[cls].has_last &&
               m->classes[cls].last + actual == addr) {
        op |= ADDR_NEXT;
    } else {
        op |= ADDR_DELTA;
        uint64_t base = cls != NO_CLASS && m->classes[cls].has_last ? m->classes[cls].last
                                                                    : m->prev_addr;
        put_varint(c, S_ADDR, zigzag(addr - base));
    }
    if (scope != m->prev_scope) {
        op |= ALLOC_SCOPE;
        put_varint(c, S_MISC, scope);
        m->prev_scope = scope;
    }
    if (rf >> MF_CPU_SIZE_BITS) {
        op |= ALLOC_FLAGS;
        put_varint(c, S_MISC, rf >> MF_CPU_SIZE_BITS);
    }
    if (type == MF_REC_CPU_ALLOC_STACK) {
        op |= ALLOC_STACK;
        put_varint(c, S_MISC, ld32(p + 32));
    }
    put_varint(c, S_TIME, aux);
    put_varint(c, S_SIZE, req);
    put_byte(c, S_OPS, (uint8_t)op);
    hash_set(c, addr, m->n_live);
    note_alloc(m, cls, addr);
}

static void encode_free(mf_codec *c, const uint8_t *p, uint32_t aux)
{
    struct model *m = &c->m;
    uint64_t af = ld64(p + 8), addr = af & MASK56;
    unsigned op = OP_FREE;
    uint32_t slot = hash_find(c, addr);
    if (slot_used(c, slot)) {
        uint32_t place = c->hash[slot].place, last = m->n_live - 1;
        put_varint(c, S_REF, place);
        hash_delete(c, slot);
        if (place != last) { /* the last block moves into place */
            uint32_t moved = hash_find(c, m->live[last].addr);
            if (slot_used(c, moved) && c->hash[moved].place == last)
                c->hash[moved].place = place;
        }
        note_free_live(m, place);
    } else {
        op |= FREE_ADDR;
        put_varint(c, S_ADDR, zigzag(addr - m->prev_addr));
        m->prev_addr = addr;
    }
    if (af >> MF_CPU_ADDR_BITS) {
        op |= FREE_FLAGS;
        put_varint(c, S_MISC, af >> MF_CPU_ADDR_BITS);
    }
    put_varint(c, S_TIME, aux);
    put_byte(c, S_OPS, (uint8_t)op);
}

static void encode_time(mf_codec *c, const uint8_t *p)
{
    uint64_t t = ld64(p + 8);
    put_varint(c, S_TIME, zigzag(t - c->m.prev_time));
    c->m.prev_time = t;
    put_byte(c, S_OPS, OP_TIME);
}

static void encode_columns(mf_codec *c, const uint8_t *p, unsigned type, unsigned size)
{
    uint64_t *prev = c->m.cols[type];
    for (unsigned k = 0; k < size / 8; k++) {
        uint64_t v = ld64(p + 8 * k);
        put_varint(c, S_COLS, zigzag(v - prev[k]));
        prev[k] = v;
    }
    put_byte(c, S_OPS, (uint8_t)(OP_COLUMNS + type));
}

/* The reader's view of times: a running base for compact records. */
typedef struct time_walk {
    uint64_t base;
    int valid;
} time_walk;

static void note_time(mf_chunk_summary *sum, uint64_t t)
{
    sum->timed++;
    if (t < sum->min_time_ns)
        sum->min_time_ns = t;
    if (t > sum->max_time_ns)
        sum->max_time_ns = t;
}

/* What record (type, aux) at p means for the chunk's times. */
static void walk_time(time_walk *w, mf_chunk_summary *sum, const uint8_t *p, unsigned type,
                      unsigned size, uint32_t aux)
{
    if (type == MF_REC_OWNER) {
        w->valid = 0;
    } else if (type == MF_REC_TIME && size == sizeof(mf_rec_time)) {
        w->base = ld64(p + 8);
        w->valid = 1;
    } else if (type == MF_REC_CPU_ALLOC || type == MF_REC_CPU_FREE ||
               type == MF_REC_CPU_ALLOC_STACK) {
        if (!w->valid)
            return; /* damage: the reader stops here, later times are only bounds */
        w->base += aux;
        note_time(sum, w->base);
        return;
    }
    if (has_time_field(type) && size >= 16)
        note_time(sum, ld64(p + 8));
}

/* Which opcode family record (type, size) at p goes to. */
static unsigned encoding_of(const uint8_t *p, unsigned type, unsigned size, uint32_t aux)
{
    if ((type == MF_REC_CPU_ALLOC && size == sizeof(mf_rec_cpu_alloc)) ||
        (type == MF_REC_CPU_ALLOC_STACK && size == sizeof(mf_rec_cpu_alloc_stack) &&
         ld32(p + 36) == 0))
        return OP_ALLOC;
    if (type == MF_REC_CPU_FREE && size == sizeof(mf_rec_cpu_free))
        return OP_FREE;
    if (type == MF_REC_TIME && size == sizeof(mf_rec_time) && aux == 0)
        return OP_TIME;
    if (type < COL_TYPES && mf_record_fixed_size(type) == size)
        return OP_COLUMNS;
    return OP_VERBATIM;
}

/* Whether the len bytes at p are all zero. */
static int all_zero(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i])
            return 0;
    return 1;
}

/* Lay the streams out after the header; returns the encoding's size. */
static size_t finish_encoding(mf_codec *c, size_t len)
{
    uint8_t *o = c->out;
    st32(o, (uint32_t)len);
    size_t at = ENC_HEADER;
    for (int i = 0; i < N_STREAMS; i++) {
        st32(o + 4 + 4 * i, (uint32_t)c->s[i].len);
        memcpy(o + at, c->s[i].p, c->s[i].len);
        at += c->s[i].len;
    }
    return at;
}

size_t mf_codec_encode(mf_codec *c, const uint8_t *chunk, size_t len, const uint8_t **out,
                       mf_chunk_summary *sum)
{
    encoder_reset(c);
    *sum = (mf_chunk_summary){ 0, 0, UINT64_MAX, 0 };
    time_walk tw = { 0, 0 };
    size_t at = 0;
    if (len >= sizeof(mf_chunk_header)) {
        put_bytes(c, S_RAW, chunk, sizeof(mf_chunk_header));
        at = sizeof(mf_chunk_header);
    }
    while (at && at + 8 <= len) {
        const uint8_t *p = chunk + at;
        uint64_t word = ld64(p);
        unsigned type = MF_WORD_TYPE(word), size = MF_WORD_SIZE(word);
        uint32_t aux = MF_WORD_AUX(word);
        if (word == 0 || size < 8 || size % 8 || size > len - at)
            break;
        switch (encoding_of(p, type, size, aux)) {
        case OP_ALLOC: encode_alloc(c, p, type, aux); break;
        case OP_FREE: encode_free(c, p, aux); break;
        case OP_TIME: encode_time(c, p); break;
        case OP_COLUMNS: encode_columns(c, p, type, size); break;
        default:
            put_byte(c, S_OPS, OP_VERBATIM);
            put_bytes(c, S_RAW, p, size);
        }
        walk_time(&tw, sum, p, type, size, aux);
        sum->records++;
        at += size;
    }
    if (all_zero(chunk + at, len - at)) {
        put_byte(c, S_OPS, OP_END);
    } else {
        put_byte(c, S_OPS, OP_TAIL);
        put_bytes(c, S_RAW, chunk + at, len - at);
    }
    *out = c->out;
    return finish_encoding(c, len);
}

/* ---- decoder ------------------------------------------------------------
 *
 * The decoder's state (struct decoder) is a local of mf_codec_decode that
 * never leaves it: every function here is inlined, and a failure is a
 * constant string in d->why formatted at the end.  So the compiler keeps
 * the stream positions in registers even though every record store could,
 * as a char store, alias anything in memory.
 */

typedef struct reader {
    const uint8_t *p, *end;
} reader;

typedef struct decoder {
    reader s[N_STREAMS];
    uint8_t *chunk;
    size_t at, len;
    uint32_t record;
    const char *why;          /* what was wrong, when a function returned -1 */
} decoder;

static inline int fail(decoder *d, const char *why)
{
    d->why = why;
    return -1;
}

/* A varint the fast path could not read: the value and where the stream
 * goes on (p NULL: it ends inside, or the varint is over 64 bits). */
typedef struct varint {
    const uint8_t *p;
    uint64_t v;
} varint;

static __attribute__((noinline)) varint varint_slow(const uint8_t *p, const uint8_t *end)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64 && p < end; shift += 7) {
        uint8_t b = *p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80)
            return (varint){ p, x };
    }
    return (varint){ NULL, 0 };
}

/* A varint of at most max from stream s into *v, or -1 (why = what). */
static inline int get_field(decoder *d, enum stream s, uint64_t max, uint64_t *v,
                            const char *what)
{
    reader *r = &d->s[s];
    if (MF_LIKELY(r->end - r->p >= 2)) {
        if (r->p[0] < 0x80) {
            *v = *r->p++;
            return *v <= max ? 0 : fail(d, what);
        }
        if (r->p[1] < 0x80) {
            *v = (uint64_t)(r->p[0] & 0x7f) | (uint64_t)r->p[1] << 7;
            r->p += 2;
            return *v <= max ? 0 : fail(d, what);
        }
    }
    varint got = varint_slow(r->p, r->end);
    if (!got.p || got.v > max)
        return fail(d, what);
    r->p = got.p;
    *v = got.v;
    return 0;
}

static inline int get_bytes(decoder *d, uint8_t *dst, size_t n, const char *what)
{
    reader *r = &d->s[S_RAW];
    if ((size_t)(r->end - r->p) < n)
        return fail(d, what);
    memcpy(dst, r->p, n);
    r->p += n;
    return 0;
}

/* Room for a record of size bytes at the current place, or -1. */
static inline int room(decoder *d, size_t size)
{
    if (MF_LIKELY(size <= d->len - d->at))
        return 0;
    return fail(d, "a record runs past the chunk's length");
}

static inline int decode_alloc(decoder *d, struct model *m, unsigned op)
{
    unsigned type = op & ALLOC_STACK ? MF_REC_CPU_ALLOC_STACK : MF_REC_CPU_ALLOC;
    size_t size = op & ALLOC_STACK ? sizeof(mf_rec_cpu_alloc_stack) : sizeof(mf_rec_cpu_alloc);
    uint64_t delta, req, slack, scope = m->prev_scope, flags = 0, stack = 0, addr, actual, v;
    uint32_t cls;
    if (room(d, size) < 0 || get_field(d, S_TIME, UINT32_MAX, &delta, "bad time delta") < 0 ||
        get_field(d, S_SIZE, MASK48, &req, "bad requested size") < 0)
        return -1;
    if (op & ALLOC_SLACK) {
        if (get_field(d, S_MISC, UINT32_MAX, &slack, "bad slack") < 0)
            return -1;
        actual = req + slack;
        cls = class_of(m, actual);
    } else {
        uint32_t at = class_at_least(m, req);
        if (at == m->n_classes || m->class_size[at] - req > UINT32_MAX)
            return fail(d, "no size class predicts the slack");
        actual = m->class_size[at];
        slack = actual - req;
        cls = m->class_id[at];
    }
    switch (op & ALLOC_ADDR_MASK) {
    case ADDR_CACHED:
        if (!cache_peek(m, cls, &addr))
            return fail(d, "no freed block of the size to reuse");
        cache_pop(m, cls);
        break;
    case ADDR_NEXT:
        if (cls == NO_CLASS || !m->classes[cls].has_last)
            return fail(d, "no earlier block of the size");
        addr = m->classes[cls].last + actual;
        break;
    case ADDR_DELTA:
        if (get_field(d, S_ADDR, UINT64_MAX, &v, "bad address") < 0)
            return -1;
        addr = unzigzag(v) +
               (cls != NO_CLASS && m->classes[cls].has_last ? m->classes[cls].last
                                                            : m->prev_addr);
        break;
    default:
        return fail(d, "bad address mode in an allocation's opcode");
    }
    if ((op & ALLOC_SCOPE) && get_field(d, S_MISC, UINT32_MAX, &scope, "bad scope") < 0)
        return -1;
    if ((op & ALLOC_FLAGS) && get_field(d, S_MISC, 0xffff, &flags, "bad flags") < 0)
        return -1;
    if ((op & ALLOC_STACK) && get_field(d, S_MISC, UINT32_MAX, &stack, "bad stack id") < 0)
        return -1;
    if (m->n_live == MAX_LIVE)
        return fail(d, "more live blocks than a chunk can hold");
    m->prev_scope = (uint32_t)scope;
    note_alloc(m, cls, addr);
    uint8_t *p = d->chunk + d->at;
    st64(p, MF_RECORD_WORD(type, size, delta));
    st64(p + 8, addr);
    st64(p + 16, req | flags << MF_CPU_SIZE_BITS);
    st32(p + 24, (uint32_t)slack);
    st32(p + 28, (uint32_t)scope);
    if (op & ALLOC_STACK) {
        st32(p + 32, (uint32_t)stack);
        st32(p + 36, 0);
    }
    d->at += size;
    return 0;
}

static inline int decode_free(decoder *d, struct model *m, unsigned op)
{
    uint64_t delta, v, flags = 0, addr;
    if (room(d, sizeof(mf_rec_cpu_free)) < 0 ||
        get_field(d, S_TIME, UINT32_MAX, &delta, "bad time delta") < 0)
        return -1;
    if (op & FREE_ADDR) {
        if (get_field(d, S_ADDR, UINT64_MAX, &v, "bad address") < 0)
            return -1;
        addr = m->prev_addr + unzigzag(v);
        if (addr > MASK56)
            return fail(d, "a freed address over 56 bits");
        m->prev_addr = addr;
    } else {
        if (get_field(d, S_REF, UINT32_MAX, &v, "bad live-table place") < 0)
            return -1;
        if (v >= m->n_live)
            return fail(d, "a back-reference past the live blocks");
        addr = m->live[v].addr & MASK56;
        note_free_live(m, (uint32_t)v);
    }
    if ((op & FREE_FLAGS) && get_field(d, S_MISC, 0xff, &flags, "bad flags") < 0)
        return -1;
    uint8_t *p = d->chunk + d->at;
    st64(p, MF_RECORD_WORD(MF_REC_CPU_FREE, sizeof(mf_rec_cpu_free), delta));
    st64(p + 8, addr | flags << MF_CPU_ADDR_BITS);
    d->at += sizeof(mf_rec_cpu_free);
    return 0;
}

static inline int decode_time(decoder *d, struct model *m)
{
    uint64_t v;
    if (room(d, sizeof(mf_rec_time)) < 0 || get_field(d, S_TIME, UINT64_MAX, &v, "bad time") < 0)
        return -1;
    m->prev_time += unzigzag(v);
    uint8_t *p = d->chunk + d->at;
    st64(p, MF_RECORD_WORD(MF_REC_TIME, sizeof(mf_rec_time), 0));
    st64(p + 8, m->prev_time);
    d->at += sizeof(mf_rec_time);
    return 0;
}

static inline int decode_columns(decoder *d, struct model *m, unsigned type)
{
    unsigned size = mf_record_fixed_size(type);
    if (size == 0)
        return fail(d, "column deltas of a record type without a fixed size");
    if (room(d, size) < 0)
        return -1;
    uint64_t *prev = m->cols[type], v;
    uint8_t *p = d->chunk + d->at;
    for (unsigned k = 0; k < size / 8; k++) {
        if (get_field(d, S_COLS, UINT64_MAX, &v, "bad column") < 0)
            return -1;
        prev[k] += unzigzag(v);
        st64(p + 8 * k, prev[k]);
    }
    uint64_t word = prev[0];
    if (MF_WORD_TYPE(word) != type || MF_WORD_SIZE(word) != size)
        return fail(d, "a column record's word is not of its type");
    d->at += size;
    return 0;
}

static inline int decode_verbatim(decoder *d)
{
    uint8_t *p = d->chunk + d->at;
    if (room(d, 8) < 0 || get_bytes(d, p, 8, "raw bytes end inside a record word") < 0)
        return -1;
    unsigned size = MF_WORD_SIZE(ld64(p));
    if (size < 8 || size % 8)
        return fail(d, "a verbatim record of a bad size");
    if (room(d, size) < 0 || get_bytes(d, p + 8, size - 8, "raw bytes end inside a record") < 0)
        return -1;
    d->at += size;
    return 0;
}

/* Split the encoding into its streams. */
static inline int open_streams(decoder *d, const uint8_t *enc, size_t enc_len)
{
    if (enc_len < ENC_HEADER)
        return fail(d, "the encoding is shorter than its header");
    d->len = ld32(enc);
    if (d->len > MF_CHUNK_SIZE) {
        d->len = 0;
        return fail(d, "the chunk length is more than a chunk");
    }
    size_t at = ENC_HEADER;
    for (int i = 0; i < N_STREAMS; i++) {
        size_t n = ld32(enc + 4 + 4 * i);
        if (n > enc_len - at)
            return fail(d, "a stream runs past the encoding");
        d->s[i].p = enc + at;
        d->s[i].end = enc + at + n;
        at += n;
    }
    return at == enc_len ? 0 : fail(d, "bytes after the streams");
}

/* After END or TAIL every stream must have been read to its end. */
static inline int check_consumed(decoder *d)
{
    for (int i = 0; i < N_STREAMS; i++)
        if (d->s[i].p != d->s[i].end)
            return fail(d, "bytes left in a stream after the last record");
    return 0;
}

static inline int decode_records(decoder *d, struct model *m)
{
    reader *ops = &d->s[S_OPS];
    for (;; d->record++) {
        if (MF_UNLIKELY(ops->p == ops->end))
            return fail(d, "the opcodes end before the chunk does");
        unsigned op = *ops->p++;
        int rc;
        if (op < OP_FREE)
            rc = decode_alloc(d, m, op);
        else if (op <= (OP_FREE | FREE_ADDR | FREE_FLAGS))
            rc = decode_free(d, m, op);
        else if (op == OP_TIME)
            rc = decode_time(d, m);
        else if (op >= OP_COLUMNS && op < OP_COLUMNS + COL_TYPES)
            rc = decode_columns(d, m, op - OP_COLUMNS);
        else if (op == OP_VERBATIM)
            rc = decode_verbatim(d);
        else if (op == OP_END) {
            memset(d->chunk + d->at, 0, d->len - d->at);
            d->at = d->len;
            return check_consumed(d);
        } else if (op == OP_TAIL) {
            if (get_bytes(d, d->chunk + d->at, d->len - d->at,
                          "raw bytes end inside the chunk's tail") < 0)
                return -1;
            d->at = d->len;
            return check_consumed(d);
        } else {
            rc = fail(d, "an unknown opcode");
        }
        if (rc < 0)
            return -1;
    }
}

long mf_codec_decode(mf_codec *c, const uint8_t *enc, size_t enc_len, uint8_t *chunk,
                     char *err, size_t errlen)
{
    decoder d = { .chunk = chunk };
    model_reset(&c->m);
    int rc = open_streams(&d, enc, enc_len);
    if (rc == 0 && d.len >= sizeof(mf_chunk_header)) {
        rc = get_bytes(&d, chunk, sizeof(mf_chunk_header), "raw bytes end inside the header");
        d.at = sizeof(mf_chunk_header);
    }
    if (rc == 0)
        rc = decode_records(&d, &c->m);
    if (rc < 0) {
        snprintf(err, errlen, "record %u at chunk offset %zu: %s", d.record, d.at, d.why);
        return -1;
    }
    memset(chunk + d.len, 0, MF_CHUNK_SIZE - d.len);
    return (long)d.len;
}
