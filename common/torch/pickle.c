/*
 * pickle.c - the safe streaming pickle reader (pickle.h): a pickle
 * machine that never builds what it can report instead.
 *
 * The stack holds slots: a MARK, a pending value (a scalar, string or
 * tuple not yet placed), an open container (a list, dict or set whose
 * begin was reported) or a run of items already reported (DONE).  A value
 * is reported when its place is certain: when APPEND, SETITEM or a batch
 * (APPENDS, SETITEMS, ADDITEMS) consumes it, or when a container is pushed
 * above it (a pending value can then only be consumed by its MARK's
 * batch).  A container is reported when it is pushed, so its place must be
 * decided then: in the MARK frame of a list or dict batch it is the next
 * item; pushed straight on an open list (or on a dict and one pending key)
 * it is either that container's only element (APPEND or SETITEM follow it)
 * or its next sibling (the container below was complete, e.g. `[]` then
 * `[x]`).  Where both are valid the reader scans ahead (scan_consumer)
 * for the opcode that first consumes the new container.
 *
 * The memo (memo_*) maps indices to kept values: an open-addressing table
 * of what later GETs can reach, consecutive indices side by side.  Strings
 * and other values only the memo holds are dropped, least recently used
 * first (a clock), once the heap passes a sixteenth of its budget;
 * containers are kept only at the handler's request and never dropped.
 * Small objects freed go to spare lists, not to free(): a snapshot's memo
 * makes and drops one or more strings per trace entry.
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pickle.h"

/* ---- opcodes (CPython's Lib/pickletools.py) ---- */

enum arg {
    A_NONE, A_U1, A_U2, A_I4, A_U4, A_U8, A_F8,
    A_LEN1, A_LEN4, A_LEN4S, A_LEN8, A_TEXT
};

enum op_class {
    K_UNKNOWN,       /* no such opcode */
    K_REFUSED,       /* names, calls or asks for an object */
    K_TEXT,          /* a protocol 0 text opcode */
    K_STACKOP,       /* POP, POP_MARK, DUP */
    K_BUFFER,        /* protocol 5 out-of-band buffers */
    K_PUSH,          /* pushes one value */
    K_NOOP,          /* PROTO, FRAME, memo stores */
    K_MARK,
    K_BATCH,         /* APPENDS, SETITEMS, ADDITEMS: pop to MARK, target stays */
    K_BUILD,         /* TUPLE, FROZENSET, LIST, DICT: pop to MARK, push one */
    K_APPEND,
    K_SETITEM,
    K_TUPLEN,        /* TUPLE1..3: pop n, push one */
    K_STOP
};

typedef struct opinfo {
    const char *name;
    uint8_t arg;
    uint8_t cls;
    uint8_t n;       /* TUPLEn */
    const char *why; /* K_REFUSED */
} opinfo;

#define NAMES "it names a Python object"
#define CALLS "it calls Python code"
#define PERSIST "it asks for a persistent object"

static const opinfo ops[256] = {
    ['('] = { "MARK", A_NONE, K_MARK, 0, NULL },
    ['.'] = { "STOP", A_NONE, K_STOP, 0, NULL },
    ['0'] = { "POP", A_NONE, K_STACKOP, 0, NULL },
    ['1'] = { "POP_MARK", A_NONE, K_STACKOP, 0, NULL },
    ['2'] = { "DUP", A_NONE, K_STACKOP, 0, NULL },
    ['F'] = { "FLOAT", A_TEXT, K_TEXT, 0, NULL },
    ['I'] = { "INT", A_TEXT, K_TEXT, 0, NULL },
    ['J'] = { "BININT", A_I4, K_PUSH, 0, NULL },
    ['K'] = { "BININT1", A_U1, K_PUSH, 0, NULL },
    ['L'] = { "LONG", A_TEXT, K_TEXT, 0, NULL },
    ['M'] = { "BININT2", A_U2, K_PUSH, 0, NULL },
    ['N'] = { "NONE", A_NONE, K_PUSH, 0, NULL },
    ['P'] = { "PERSID", A_TEXT, K_REFUSED, 0, PERSIST },
    ['Q'] = { "BINPERSID", A_NONE, K_REFUSED, 0, PERSIST },
    ['R'] = { "REDUCE", A_NONE, K_REFUSED, 0, CALLS },
    ['S'] = { "STRING", A_TEXT, K_TEXT, 0, NULL },
    ['T'] = { "BINSTRING", A_LEN4S, K_PUSH, 0, NULL },
    ['U'] = { "SHORT_BINSTRING", A_LEN1, K_PUSH, 0, NULL },
    ['V'] = { "UNICODE", A_TEXT, K_TEXT, 0, NULL },
    ['X'] = { "BINUNICODE", A_LEN4, K_PUSH, 0, NULL },
    ['a'] = { "APPEND", A_NONE, K_APPEND, 0, NULL },
    ['b'] = { "BUILD", A_NONE, K_REFUSED, 0, CALLS },
    ['c'] = { "GLOBAL", A_TEXT, K_REFUSED, 0, NAMES },
    ['d'] = { "DICT", A_NONE, K_BUILD, 0, NULL },
    ['}'] = { "EMPTY_DICT", A_NONE, K_PUSH, 0, NULL },
    ['e'] = { "APPENDS", A_NONE, K_BATCH, 0, NULL },
    ['g'] = { "GET", A_TEXT, K_TEXT, 0, NULL },
    ['h'] = { "BINGET", A_U1, K_PUSH, 0, NULL },
    ['i'] = { "INST", A_TEXT, K_REFUSED, 0, NAMES },
    ['j'] = { "LONG_BINGET", A_U4, K_PUSH, 0, NULL },
    ['l'] = { "LIST", A_NONE, K_BUILD, 0, NULL },
    [']'] = { "EMPTY_LIST", A_NONE, K_PUSH, 0, NULL },
    ['o'] = { "OBJ", A_NONE, K_REFUSED, 0, CALLS },
    ['p'] = { "PUT", A_TEXT, K_TEXT, 0, NULL },
    ['q'] = { "BINPUT", A_U1, K_NOOP, 0, NULL },
    ['r'] = { "LONG_BINPUT", A_U4, K_NOOP, 0, NULL },
    ['s'] = { "SETITEM", A_NONE, K_SETITEM, 0, NULL },
    ['t'] = { "TUPLE", A_NONE, K_BUILD, 0, NULL },
    [')'] = { "EMPTY_TUPLE", A_NONE, K_PUSH, 0, NULL },
    ['u'] = { "SETITEMS", A_NONE, K_BATCH, 0, NULL },
    ['G'] = { "BINFLOAT", A_F8, K_PUSH, 0, NULL },
    ['B'] = { "BINBYTES", A_LEN4, K_PUSH, 0, NULL },
    ['C'] = { "SHORT_BINBYTES", A_LEN1, K_PUSH, 0, NULL },
    [0x80] = { "PROTO", A_U1, K_NOOP, 0, NULL },
    [0x81] = { "NEWOBJ", A_NONE, K_REFUSED, 0, CALLS },
    [0x82] = { "EXT1", A_U1, K_REFUSED, 0, NAMES },
    [0x83] = { "EXT2", A_U2, K_REFUSED, 0, NAMES },
    [0x84] = { "EXT4", A_I4, K_REFUSED, 0, NAMES },
    [0x85] = { "TUPLE1", A_NONE, K_TUPLEN, 1, NULL },
    [0x86] = { "TUPLE2", A_NONE, K_TUPLEN, 2, NULL },
    [0x87] = { "TUPLE3", A_NONE, K_TUPLEN, 3, NULL },
    [0x88] = { "NEWTRUE", A_NONE, K_PUSH, 0, NULL },
    [0x89] = { "NEWFALSE", A_NONE, K_PUSH, 0, NULL },
    [0x8a] = { "LONG1", A_LEN1, K_PUSH, 0, NULL },
    [0x8b] = { "LONG4", A_LEN4S, K_PUSH, 0, NULL },
    [0x8c] = { "SHORT_BINUNICODE", A_LEN1, K_PUSH, 0, NULL },
    [0x8d] = { "BINUNICODE8", A_LEN8, K_PUSH, 0, NULL },
    [0x8e] = { "BINBYTES8", A_LEN8, K_PUSH, 0, NULL },
    [0x8f] = { "EMPTY_SET", A_NONE, K_PUSH, 0, NULL },
    [0x90] = { "ADDITEMS", A_NONE, K_BATCH, 0, NULL },
    [0x91] = { "FROZENSET", A_NONE, K_BUILD, 0, NULL },
    [0x92] = { "NEWOBJ_EX", A_NONE, K_REFUSED, 0, CALLS },
    [0x93] = { "STACK_GLOBAL", A_NONE, K_REFUSED, 0, NAMES },
    [0x94] = { "MEMOIZE", A_NONE, K_NOOP, 0, NULL },
    [0x95] = { "FRAME", A_U8, K_NOOP, 0, NULL },
    [0x96] = { "BYTEARRAY8", A_LEN8, K_PUSH, 0, NULL },
    [0x97] = { "NEXT_BUFFER", A_NONE, K_BUFFER, 0, NULL },
    [0x98] = { "READONLY_BUFFER", A_NONE, K_BUFFER, 0, NULL },
};

#define OP_PROTO 0x80
#define OP_MEMOIZE 0x94

/* ---- objects ---- */

#define OBJ_ID_ONLY 1

/* Small objects are allocated in size classes and kept when freed, up to
 * a sixteenth of the memory budget in all (what one memo sweep frees): a
 * snapshot's memo churns through millions of them, and malloc and free of
 * each cost more than the rest of its life. */
#define SPARE_CLASSES 3
static const size_t spare_size[SPARE_CLASSES] = { 64, 96, 160 };

struct mf_pickle_obj {
    uint32_t refs;
    uint8_t kind;
    uint8_t flags;
    uint16_t depth;          /* nesting of tuples and kept containers */
    uint64_t id;
    size_t len;              /* bytes, or items */
    size_t cost;             /* bytes charged to the reader's budget */
    mf_pickle_value items[]; /* items, or the bytes (NUL-terminated) */
};

static int is_container(uint32_t kind)
{
    return kind == MF_PICKLE_LIST || kind == MF_PICKLE_DICT || kind == MF_PICKLE_SET;
}

static int has_obj(uint32_t kind)
{
    return kind >= MF_PICKLE_BIGINT && kind != MF_PICKLE_FLOAT;
}

static const char *obj_bytes(const mf_pickle_obj *o)
{
    return (const char *)o->items;
}

/* ---- the reader ---- */

enum slot_type { S_MARK, S_VAL, S_CONT, S_DONE };
enum frame_kind { F_TUPLE, F_LIST, F_DICT, F_SET };
enum place { P_ITEM, P_APPEND, P_SETITEM };

typedef struct slot {
    uint8_t type;            /* slot_type */
    uint8_t frame;           /* S_MARK: frame_kind */
    uint8_t place;           /* S_CONT, S_DONE: how it was placed */
    uint32_t prev_mark;      /* S_MARK: the enclosing mark's index + 1, or 0 */
    uint64_t n;              /* S_MARK: items above it; S_DONE: items in the run;
                                S_CONT: its index in conts */
    uint64_t offset;         /* where it was pushed */
    mf_pickle_value v;       /* S_VAL */
} slot;

/* An open container: begun, not yet ended. */
typedef struct cont {
    uint8_t kind;
    uint8_t flags;           /* what begin answered */
    uint8_t reported;        /* begin was reported (so end will be) */
    uint8_t keep_ok;         /* a full copy is still possible */
    uint8_t has_memo;
    uint32_t memo_idx;
    uint64_t id;
    uint64_t offset;
    mf_pickle_value *copy;   /* MF_PICKLE_KEEP: the items so far */
    size_t ncopy, capcopy;
} cont;

typedef struct memo_entry {
    uint32_t idx;
    uint8_t used;
    uint8_t touched;
    uint8_t kind;            /* the value: kind and u as in mf_pickle_value */
    union {
        int64_t i;
        double f;
        mf_pickle_obj *obj;
    } u;
} memo_entry;

struct mf_pickle_reader {
    /* the bytes */
    int fd;
    const uint8_t *mem;
    uint64_t size;
    uint8_t *buf;
    size_t cap;
    int io_errno;
    const uint8_t *win;      /* the window: see set_fast */
    uint64_t win_off;
    size_t win_len;
    uint64_t fast_end;
    uint64_t pos;            /* next byte to read */
    uint64_t op_off;         /* the opcode being handled */
    uint64_t frame_end;      /* the current FRAME ends here (0: none) */
    mf_pickle_limits lim;
    /* the handler */
    const mf_pickle_handler *h;
    void *ctx;
    /* the machine */
    slot *st;
    size_t nst, capst;
    uint32_t top_mark;       /* innermost mark's index + 1, or 0 */
    uint64_t bottom_n;       /* items below every mark */
    uint32_t depth;          /* marks + open containers */
    cont *cs;
    size_t ncs, capcs;
    uint64_t *scan_marks;
    /* the memo */
    memo_entry *memo;
    size_t memo_cap, memo_used;
    unsigned memo_shift;     /* 64 - log2(memo_cap) */
    uint64_t memo_len;       /* MEMOIZE's next index */
    uint64_t memo_hwm;       /* 1 + the highest index stored */
    int memo_mode;           /* 0, 'p' (BINPUT) or 'm' (MEMOIZE) */
    /* small objects freed, kept for the next ones (most strings, ints and
     * tuples of a snapshot): by size class, linked through their first word */
    void *spare[SPARE_CLASSES];
    size_t spare_bytes;
    /* accounting */
    size_t mem_used;
    size_t sweep_at;
    int exhausted;           /* sweeping past the budget freed too little */
    uint64_t next_id;
    uint64_t scanned;
    mf_pickle_stats stats;
    int used;
    mf_pickle_status status;
    char msg[320];
};

/* ---- failure ---- */

static int fail(mf_pickle_reader *r, mf_pickle_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(mf_pickle_reader *r, mf_pickle_status status, const char *fmt, ...)
{
    if (r->status != MF_PICKLE_OK)
        return -1;
    r->status = status;
    int n = snprintf(r->msg, sizeof r->msg, "offset %llu: ", (unsigned long long)r->op_off);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg + n, sizeof r->msg - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *op_name(uint8_t op)
{
    return ops[op].name ? ops[op].name : "an unknown opcode";
}

/* ---- memory ---- */

static void memo_sweep(mf_pickle_reader *r);

static void account(mf_pickle_reader *r, size_t add, size_t sub)
{
    r->mem_used = r->mem_used + add - sub;
    if (r->mem_used > r->stats.memory_peak)
        r->stats.memory_peak = r->mem_used;
}

/*
 * Charge n bytes that must be had: 0, or -1 (MF_PICKLE_MEMORY) past the
 * budget.  The memo is swept from a sixteenth of the budget on, every
 * sixteenth of it (what only the memo holds and nobody asked for since the
 * last sweep goes; PyTorch refers back only to its constants, frames and
 * frames lists, so the fresh strings of each entry go and the memo stays
 * small); past the budget, two sweeps in a row drop every value only the
 * memo holds, unless the last time that freed too little to go on.
 */
static int charge(mf_pickle_reader *r, size_t n)
{
    account(r, n, 0);
    if (r->mem_used > r->sweep_at)
        memo_sweep(r);
    if (r->mem_used > r->lim.memory && !r->exhausted) {
        size_t before = r->mem_used;
        memo_sweep(r);
        memo_sweep(r);
        r->exhausted = before - r->mem_used < r->lim.memory / 32;
    }
    if (r->mem_used > r->lim.memory)
        return fail(r, MF_PICKLE_MEMORY, "over the memory limit of %zu MiB (%zu memo entries)",
                    r->lim.memory >> 20, r->memo_used);
    return 0;
}

/* Whether n more bytes fit the budget (for what may be left out). */
static int affordable(mf_pickle_reader *r, size_t n)
{
    if (r->mem_used + n > r->sweep_at)
        memo_sweep(r);
    return r->mem_used + n <= r->lim.memory;
}

/* Grow *array to hold need elements of size elem, charging the growth. */
static int grow(mf_pickle_reader *r, void **array, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    if (charge(r, (n - *cap) * elem) < 0)
        return -1;
    void *p = realloc(*array, n * elem);
    if (!p)
        return fail(r, MF_PICKLE_MEMORY, "out of memory");
    *array = p;
    *cap = n;
    return 0;
}

/* The spare class of an object of cost bytes, or -1 (too big to keep). */
static int spare_class(size_t cost)
{
    for (int c = 0; c < SPARE_CLASSES; c++)
        if (cost <= spare_size[c])
            return c;
    return -1;
}

static mf_pickle_obj *obj_new(mf_pickle_reader *r, uint32_t kind, size_t len, size_t payload)
{
    size_t cost = sizeof(mf_pickle_obj) + payload;
    int c = spare_class(cost);
    if (c >= 0)
        cost = spare_size[c];
    if (charge(r, cost) < 0)
        return NULL;
    mf_pickle_obj *o;
    if (c >= 0 && r->spare[c]) {
        o = r->spare[c];
        memcpy(&r->spare[c], o, sizeof(void *));
        r->spare_bytes -= cost;
        if (r->spare[c])                          /* freed a sweep ago: cold */
            __builtin_prefetch(r->spare[c], 1);
    } else {
        o = malloc(cost);
    }
    if (!o) {
        account(r, 0, cost);
        fail(r, MF_PICKLE_MEMORY, "out of memory");
        return NULL;
    }
    o->refs = 1;
    o->kind = (uint8_t)kind;
    o->flags = 0;
    o->depth = 0;
    o->id = ++r->next_id;
    o->len = len;
    o->cost = cost;
    return o;
}

static inline void val_unref(mf_pickle_reader *r, mf_pickle_value *v);

static void obj_unref(mf_pickle_reader *r, mf_pickle_obj *o)
{
    if (--o->refs)
        return;
    if (o->kind >= MF_PICKLE_TUPLE)
        for (size_t i = 0; i < o->len; i++)
            val_unref(r, &o->items[i]);
    account(r, 0, o->cost);
    int c = spare_class(o->cost);
    if (c >= 0 && spare_size[c] == o->cost && r->spare_bytes + o->cost <= r->lim.memory / 16) {
        memcpy(o, &r->spare[c], sizeof(void *));
        r->spare[c] = o;
        r->spare_bytes += o->cost;
        return;
    }
    free(o);
}

static inline void val_unref(mf_pickle_reader *r, mf_pickle_value *v)
{
    if (has_obj(v->kind) && v->u.obj)
        obj_unref(r, v->u.obj);
    v->kind = MF_PICKLE_NONE;
    v->u.obj = NULL;
}

static mf_pickle_value val_ref(const mf_pickle_value *v)
{
    if (has_obj(v->kind))
        v->u.obj->refs++;
    return *v;
}

/* A tuple, frozenset, list or dict of the n values at items (their references move). */
static int obj_items(mf_pickle_reader *r, uint32_t kind, const mf_pickle_value *items, size_t n,
                     mf_pickle_value *out)
{
    uint32_t depth = 1;                /* a tuple of scalars: one level */
    for (size_t i = 0; i < n; i++)
        if (has_obj(items[i].kind) && items[i].u.obj->depth + 1u > depth)
            depth = items[i].u.obj->depth + 1u;
    if (depth > r->lim.max_depth)
        return fail(r, MF_PICKLE_UNSUPPORTED, "values nested deeper than %u",
                    (unsigned)r->lim.max_depth);
    mf_pickle_obj *o = obj_new(r, kind, n, n * sizeof(mf_pickle_value));
    if (!o)
        return -1;
    if (n)
        memcpy(o->items, items, n * sizeof *items);
    o->depth = (uint16_t)depth;
    out->kind = kind;
    out->u.obj = o;
    return 0;
}

/* ---- the bytes ---- */

/*
 * The window: bytes [win_off, win_off + win_len) are at win (all of them
 * for a reader of memory; the buffer for a file).  take's fast path reads
 * up to fast_end: the window's end, or the current FRAME's if sooner.
 */
static void set_fast(mf_pickle_reader *r)
{
    uint64_t end = r->win_off + r->win_len;
    if (r->frame_end > r->pos && r->frame_end < end)
        end = r->frame_end;
    r->fast_end = r->pos >= r->win_off && r->pos <= end ? end : r->pos;
}

/* Are bytes [pos, pos + n) in the window?  (pos may lie past its end: a
 * look-ahead steps over a string's body without reading it.) */
static inline int in_window(const mf_pickle_reader *r, uint64_t pos, size_t n)
{
    return pos >= r->win_off && pos - r->win_off <= r->win_len &&
           n <= r->win_len - (pos - r->win_off);
}

/* Bytes [pos, pos + n) in memory, or NULL (the data ends; io_errno when unreadable). */
static const uint8_t *fill(mf_pickle_reader *r, uint64_t pos, size_t n)
{
    if (pos > r->size || n > r->size - pos)
        return NULL;
    if (in_window(r, pos, n))
        return r->win + (pos - r->win_off);
    if (n > r->cap) {
        size_t cap = r->cap;
        while (cap < n)
            cap *= 2;
        if (charge(r, cap - r->cap) < 0)
            return NULL;
        uint8_t *b = realloc(r->buf, cap);
        if (!b) {
            fail(r, MF_PICKLE_MEMORY, "out of memory");
            return NULL;
        }
        r->buf = b;
        r->cap = cap;
    }
    size_t want = r->size - pos < r->cap ? (size_t)(r->size - pos) : r->cap;
    size_t got = 0;
    while (got < want) {
        ssize_t k = pread(r->fd, r->buf + got, want - got, (off_t)(pos + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            r->io_errno = errno;
            break;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    r->win = r->buf;
    r->win_off = pos;
    r->win_len = got;
    set_fast(r);
    return got >= n ? r->buf : NULL;
}

/* Bytes [pos, pos + n) for a look at them (no frame checks). */
static inline const uint8_t *peek(mf_pickle_reader *r, uint64_t pos, size_t n)
{
    if (MF_LIKELY(in_window(r, pos, n) && pos <= r->size))
        return r->win + (pos - r->win_off);
    return fill(r, pos, n);
}

static const uint8_t *take_slow(mf_pickle_reader *r, size_t n, const char *what)
{
    if (r->frame_end > r->pos && n > r->frame_end - r->pos) {
        fail(r, MF_PICKLE_MALFORMED, "its FRAME ends inside %s (at offset %llu)", what,
             (unsigned long long)r->frame_end);
        return NULL;
    }
    const uint8_t *p = fill(r, r->pos, n);
    if (!p) {
        if (r->status != MF_PICKLE_OK)
            return NULL;
        if (r->io_errno)
            fail(r, MF_PICKLE_IO, "cannot read: %s", strerror(r->io_errno));
        else
            fail(r, MF_PICKLE_TRUNCATED, "the data ends inside %s (%zu bytes needed, %llu left)",
                 what, n, (unsigned long long)(r->size > r->pos ? r->size - r->pos : 0));
        return NULL;
    }
    r->pos += n;
    set_fast(r);
    return p;
}

/* Take n bytes of what (an opcode's name) at the read position. */
static inline const uint8_t *take(mf_pickle_reader *r, size_t n, const char *what)
{
    if (MF_LIKELY(n <= r->fast_end - r->pos)) {
        const uint8_t *p = r->win + (r->pos - r->win_off);
        r->pos += n;
        return p;
    }
    return take_slow(r, n, what);
}

/* n bytes at p, little-endian (n a constant in the hot callers: one load each). */
static inline uint64_t le(const uint8_t *p, int n)
{
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;
    switch (n) {
    case 1:
        return p[0];
    case 2:
        memcpy(&v16, p, 2);
        return le16toh(v16);
    case 4:
        memcpy(&v32, p, 4);
        return le32toh(v32);
    case 8:
        memcpy(&v64, p, 8);
        return le64toh(v64);
    }
    v64 = 0;
    for (int i = n - 1; i >= 0; i--)
        v64 = v64 << 8 | p[i];
    return v64;
}

/* An argument of n bytes (1, 2, 4 or 8) read little-endian; -1 when cut. */
static inline int arg_le(mf_pickle_reader *r, int n, const char *what, uint64_t *out)
{
    const uint8_t *p = take(r, (size_t)n, what);
    if (!p)
        return -1;
    *out = le(p, n);
    return 0;
}

/* ---- the memo ---- */

/* A memo entry's value (16 bytes an entry: the table is what a big pickle's memo costs). */
static mf_pickle_value memo_value(const memo_entry *e)
{
    mf_pickle_value v = { .kind = e->kind };
    memcpy(&v.u, &e->u, sizeof v.u);
    return v;
}

/*
 * Where idx lives first.  Indices come in runs (MEMOIZE counts up), so a
 * run of MEMO_RUN of them lies side by side (a store touches the cache
 * lines the last one did) from a base that Fibonacci hashing (the high bits
 * of a multiply) scatters, so that runs do not pile up on each other.
 */
#define MEMO_RUN 16u

static inline size_t memo_home(const mf_pickle_reader *r, uint32_t idx)
{
    uint64_t base = ((uint64_t)(idx / MEMO_RUN) * 0x9e3779b97f4a7c15ull) >> r->memo_shift;
    return (size_t)(base + idx % MEMO_RUN) & (r->memo_cap - 1);
}

static memo_entry *memo_find(mf_pickle_reader *r, uint32_t idx)
{
    if (!r->memo_cap)
        return NULL;
    for (size_t i = memo_home(r, idx);; i = (i + 1) & (r->memo_cap - 1)) {
        memo_entry *e = &r->memo[i];
        if (!e->used)
            return NULL;
        if (e->idx == idx)
            return e;
    }
}

/* Remove the entry at slot i (linear probing: shift the cluster back). */
static void memo_delete_at(mf_pickle_reader *r, size_t i)
{
    size_t mask = r->memo_cap - 1;
    mf_pickle_value v = memo_value(&r->memo[i]);
    val_unref(r, &v);
    r->memo[i].used = 0;
    r->memo_used--;
    for (size_t j = (i + 1) & mask; r->memo[j].used; j = (j + 1) & mask) {
        size_t home = memo_home(r, r->memo[j].idx);
        /* the entry at j stays unless its home lies outside (i, j] */
        int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays)
            continue;
        r->memo[i] = r->memo[j];
        r->memo[j].used = 0;
        i = j;
    }
}

static void memo_remove(mf_pickle_reader *r, uint32_t idx)
{
    memo_entry *e = memo_find(r, idx);
    if (e)
        memo_delete_at(r, (size_t)(e - r->memo));
}

/* Move the memo to a table of cap slots (a power of two, more than twice its entries). */
static int memo_resize(mf_pickle_reader *r, size_t cap)
{
    if (charge(r, cap * sizeof(memo_entry)) < 0)
        return -1;
    memo_entry *m = calloc(cap, sizeof *m);
    if (!m) {
        account(r, 0, cap * sizeof(memo_entry));
        return fail(r, MF_PICKLE_MEMORY, "out of memory");
    }
    memo_entry *old = r->memo;
    size_t old_cap = r->memo_cap;
    r->memo = m;
    r->memo_cap = cap;
    r->memo_shift = 64;
    for (size_t c = cap; c > 1; c >>= 1)
        r->memo_shift--;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].used)
            continue;
        size_t j = memo_home(r, old[i].idx);
        while (m[j].used)
            j = (j + 1) & (cap - 1);
        m[j] = old[i];
    }
    free(old);
    account(r, 0, old_cap * sizeof(memo_entry));
    return 0;
}

/*
 * Room for one more entry.  Once the reader sweeps at all, a table half
 * full is swept before it grows, and grows only if that freed too little.
 */
static int memo_room(mf_pickle_reader *r)
{
    if ((r->memo_used + 1) * 2 <= r->memo_cap)
        return 0;
    if (r->memo_cap && r->mem_used > r->lim.memory / 16)
        memo_sweep(r);
    if ((r->memo_used + 1) * 8 <= r->memo_cap * 3)
        return 0;
    return memo_resize(r, r->memo_cap ? r->memo_cap * 2 : 64);
}

/* Store a new reference to v at idx, replacing what was there. */
static int memo_store(mf_pickle_reader *r, uint32_t idx, const mf_pickle_value *v)
{
    if (memo_room(r) < 0)
        return -1;
    size_t i = memo_home(r, idx);
    while (r->memo[i].used && r->memo[i].idx != idx)
        i = (i + 1) & (r->memo_cap - 1);
    memo_entry *e = &r->memo[i];
    if (e->used) {
        mf_pickle_value old = memo_value(e);
        val_unref(r, &old);
    } else {
        r->memo_used++;
    }
    mf_pickle_value nv = val_ref(v);
    e->used = 1;
    e->idx = idx;
    e->touched = 1;
    e->kind = (uint8_t)nv.kind;
    memcpy(&e->u, &nv.u, sizeof e->u);
    return 0;
}

/* An entry only the memo holds, and not a container a handler asked to keep. */
static int memo_evictable(const memo_entry *e)
{
    if (is_container(e->kind))
        return 0;
    return !has_obj(e->kind) || e->u.obj->refs == 1;
}

/*
 * After entries were dropped in place (holes in the probe runs), move every
 * entry left to the first free slot from its home.  Starting after a slot
 * that was free before the drops (no probe run crosses it), entries only
 * move back along their own runs, so one pass leaves every run whole.
 */
static void memo_close_holes(mf_pickle_reader *r, size_t start)
{
    size_t mask = r->memo_cap - 1;
    for (size_t k = 1; k <= r->memo_cap; k++) {
        size_t j = (start + k) & mask;
        if (!r->memo[j].used)
            continue;
        memo_entry e = r->memo[j];
        r->memo[j].used = 0;
        size_t i = memo_home(r, e.idx);
        while (r->memo[i].used)
            i = (i + 1) & mask;
        r->memo[i] = e;
    }
}

/*
 * The clock: drop the entries not used since the last sweep that only the
 * memo holds (most of a snapshot's memo: dropped in place, then the holes
 * closed in one pass); then, if the table is mostly empty, a smaller one.
 */
static void memo_sweep(mf_pickle_reader *r)
{
    size_t start = SIZE_MAX;           /* a slot free before the sweep */
    uint64_t dropped = 0;
    for (size_t i = 0; i < r->memo_cap; i++) {
        memo_entry *e = &r->memo[i];
        if (!e->used) {
            if (start == SIZE_MAX)
                start = i;
        } else if (memo_evictable(e)) {
            if (e->touched) {
                e->touched = 0;
            } else {
                mf_pickle_value v = memo_value(e);
                val_unref(r, &v);
                e->used = 0;
                dropped++;
            }
        }
    }
    r->memo_used -= dropped;
    r->stats.memo_evicted += dropped;
    if (dropped)
        memo_close_holes(r, start);    /* the table is at most half full: start is set */
    size_t cap = r->memo_cap;
    while (cap > 1024 && r->memo_used * 8 < cap)
        cap /= 2;
    if (cap != r->memo_cap && r->status == MF_PICKLE_OK) {
        size_t keep = r->sweep_at;
        r->sweep_at = SIZE_MAX;            /* no sweep inside the move */
        memo_resize(r, cap);
        r->sweep_at = keep;
    }
    r->sweep_at = r->mem_used + r->lim.memory / 16;
}

/* ---- the stack ---- */

static uint64_t *frame_count(mf_pickle_reader *r)
{
    return r->top_mark ? &r->st[r->top_mark - 1].n : &r->bottom_n;
}

static slot *top(mf_pickle_reader *r)
{
    return r->nst ? &r->st[r->nst - 1] : NULL;
}

static int push_slot(mf_pickle_reader *r, const slot *s, int item)
{
    if (grow(r, (void **)&r->st, &r->capst, r->nst + 1, sizeof(slot)) < 0)
        return -1;
    r->st[r->nst++] = *s;
    if (item)
        (*frame_count(r))++;
    return 0;
}

/* Push v (the slot takes the reference).  The hottest path: fields set in place. */
static inline int push_val(mf_pickle_reader *r, mf_pickle_value v)
{
    if (MF_UNLIKELY(r->nst == r->capst) &&
        grow(r, (void **)&r->st, &r->capst, r->nst + 1, sizeof(slot)) < 0) {
        val_unref(r, &v);
        return -1;
    }
    slot *s = &r->st[r->nst++];
    s->type = S_VAL;
    s->offset = r->op_off;
    s->v.kind = v.kind;
    s->v.u = v.u;
    if (r->top_mark)
        r->st[r->top_mark - 1].n++;
    else
        r->bottom_n++;
    return 0;
}

/* Pop k slots, dropping their values (frame counts are the caller's). */
static void pop_slots(mf_pickle_reader *r, size_t k)
{
    while (k--) {
        slot *s = &r->st[--r->nst];
        if (s->type == S_VAL)
            val_unref(r, &s->v);
    }
}

/* Items in slots [from, top) (a DONE run counts all of its items). */
static uint64_t items_from(const mf_pickle_reader *r, size_t from)
{
    uint64_t n = 0;
    for (size_t i = from; i < r->nst; i++)
        n += r->st[i].type == S_DONE ? r->st[i].n : 1;
    return n;
}

/* Slots [from, top) become one DONE run, merged with the DONE runs just below. */
static void commit_slots(mf_pickle_reader *r, size_t from)
{
    if (from < r->nst) {
        uint64_t n = items_from(r, from);
        uint64_t offset = r->st[from].offset;
        pop_slots(r, r->nst - from);
        r->st[r->nst++] = (slot){ .type = S_DONE, .place = P_ITEM, .n = n, .offset = offset };
    }
    while (r->nst >= 2) {
        slot *a = &r->st[r->nst - 2], *b = &r->st[r->nst - 1];
        if (a->type != S_DONE || b->type != S_DONE || a->place != P_ITEM || b->place != P_ITEM)
            break;
        a->n += b->n;
        r->nst--;
    }
}

/* ---- reporting ---- */

static int stopped(mf_pickle_reader *r, int rc)
{
    if (rc >= 0)
        return 0;
    return fail(r, MF_PICKLE_STOPPED, "stopped by its reader (%d)", rc);
}

static int report(mf_pickle_reader *r, const mf_pickle_value *key, const mf_pickle_value *v);

/* A kept container referred to again: begin, its items, end. */
static int replay(mf_pickle_reader *r, const mf_pickle_value *key, const mf_pickle_value *v)
{
    const mf_pickle_obj *o = v->u.obj;
    int flags = r->h->begin ? r->h->begin(r->ctx, key, (mf_pickle_kind)v->kind, o->id, 1) : 0;
    if (stopped(r, flags) < 0)
        return -1;
    if (!(flags & MF_PICKLE_SKIP)) {
        if (o->flags & OBJ_ID_ONLY)
            return fail(r, MF_PICKLE_UNSUPPORTED,
                        "its reader did not skip a %s it kept by identity (id %llu)",
                        mf_pickle_kind_name((mf_pickle_kind)o->kind), (unsigned long long)o->id);
        size_t step = o->kind == MF_PICKLE_DICT ? 2 : 1;
        for (size_t i = 0; i + step <= o->len; i += step)
            if (report(r, step == 2 ? &o->items[i] : NULL, &o->items[i + step - 1]) < 0)
                return -1;
    }
    return stopped(r, r->h->end ? r->h->end(r->ctx, (mf_pickle_kind)v->kind) : 0);
}

/* A value that is not a container goes to the handler's value. */
static inline int report_value(mf_pickle_reader *r, const mf_pickle_value *key,
                               const mf_pickle_value *v)
{
    return stopped(r, r->h->value ? r->h->value(r->ctx, key, v) : 0);
}

static int report(mf_pickle_reader *r, const mf_pickle_value *key, const mf_pickle_value *v)
{
    if (is_container(v->kind))
        return replay(r, key, v);
    return report_value(r, key, v);
}

static int copy_item(mf_pickle_reader *r, cont *c, const mf_pickle_value *v)
{
    if (grow(r, (void **)&c->copy, &c->capcopy, c->ncopy + 1, sizeof(mf_pickle_value)) < 0)
        return -1;
    c->copy[c->ncopy++] = val_ref(v);
    return 0;
}

static int keeps_copy(const cont *c)
{
    return c && (c->flags & MF_PICKLE_KEEP) && c->keep_ok;
}

/* v (with its key inside a dict) is the next item of the innermost open container. */
static int emit(mf_pickle_reader *r, const mf_pickle_value *key, const mf_pickle_value *v)
{
    cont *c = r->ncs ? &r->cs[r->ncs - 1] : NULL;
    if (keeps_copy(c) && ((key && copy_item(r, c, key) < 0) || copy_item(r, c, v) < 0))
        return -1;
    if (c && (!c->reported || (c->flags & MF_PICKLE_SKIP)))
        return 0;
    if (MF_LIKELY(!is_container(v->kind)))     /* report's common case, without the call */
        return report_value(r, key, v);
    return report(r, key, v);
}

/* A container of kind begins as the next item of the innermost open one. */
static int begin_cont(mf_pickle_reader *r, const mf_pickle_value *key, uint32_t kind,
                      uint8_t place)
{
    if (r->depth >= r->lim.max_depth)
        return fail(r, MF_PICKLE_UNSUPPORTED, "containers nested deeper than %u",
                    (unsigned)r->lim.max_depth);
    cont *p = r->ncs ? &r->cs[r->ncs - 1] : NULL;
    if (keeps_copy(p) && key && copy_item(r, p, key) < 0)
        return -1;
    if (grow(r, (void **)&r->cs, &r->capcs, r->ncs + 1, sizeof(cont)) < 0)
        return -1;
    p = r->ncs ? &r->cs[r->ncs - 1] : NULL;
    cont c = { .kind = (uint8_t)kind, .keep_ok = 1, .id = ++r->next_id, .offset = r->op_off };
    if (p && (!p->reported || (p->flags & MF_PICKLE_SKIP))) {
        c.flags = MF_PICKLE_SKIP;
    } else {
        int flags = r->h->begin ? r->h->begin(r->ctx, key, (mf_pickle_kind)kind, c.id, 0) : 0;
        if (stopped(r, flags) < 0)
            return -1;
        c.flags = (uint8_t)flags;
        c.reported = 1;
    }
    r->cs[r->ncs++] = c;
    r->depth++;
    slot s = { .type = S_CONT, .place = place, .n = r->ncs - 1, .offset = r->op_off };
    return push_slot(r, &s, 1);
}

/* What to keep of c: a full copy, its identity, or nothing (kind NONE). */
static int kept_value(mf_pickle_reader *r, cont *c, mf_pickle_value *out)
{
    out->kind = MF_PICKLE_NONE;
    out->u.obj = NULL;
    int full = keeps_copy(c);
    if (!full && !(c->flags & MF_PICKLE_KEEP_ID))
        return 0;
    size_t n = full ? c->ncopy : 0;
    if (!affordable(r, sizeof(mf_pickle_obj) + n * sizeof(mf_pickle_value))) {
        r->stats.keeps_refused++;
        return 0;
    }
    if (obj_items(r, c->kind, c->copy, n, out) < 0)
        return -1;
    if (full)
        c->ncopy = 0;                  /* the copy's references moved */
    out->u.obj->id = c->id;
    if (!full)
        out->u.obj->flags |= OBJ_ID_ONLY;
    return 0;
}

/* The innermost open container ends; its slot becomes a DONE item. */
static int close_cont(mf_pickle_reader *r)
{
    cont *c = &r->cs[r->ncs - 1];
    if (c->reported && stopped(r, r->h->end ? r->h->end(r->ctx, (mf_pickle_kind)c->kind) : 0) < 0)
        return -1;
    mf_pickle_value kept;
    int rc = kept_value(r, c, &kept);
    if (rc == 0 && kept.u.obj && c->has_memo)
        rc = memo_store(r, c->memo_idx, &kept);
    c = &r->cs[r->ncs - 1];
    cont *p = r->ncs > 1 ? c - 1 : NULL;
    if (rc == 0 && keeps_copy(p)) {
        if (kept.u.obj)
            rc = copy_item(r, p, &kept);
        else
            p->keep_ok = 0;
    }
    val_unref(r, &kept);
    for (size_t i = 0; i < c->ncopy; i++)
        val_unref(r, &c->copy[i]);
    account(r, 0, c->capcopy * sizeof(mf_pickle_value));
    free(c->copy);
    r->ncs--;
    r->depth--;
    for (size_t i = r->nst; i-- > 0;) {
        if (r->st[i].type == S_CONT) {
            r->st[i].type = S_DONE;
            r->st[i].place = P_ITEM;
            r->st[i].n = 1;
            break;
        }
    }
    return rc;
}

/* ---- values ---- */

static int tuple_hashable(const mf_pickle_obj *t);

/* Whether v can be a dict key or set item (a string key: one compare). */
static inline int hashable(const mf_pickle_value *v)
{
    if (MF_LIKELY(v->kind == MF_PICKLE_STR))
        return 1;
    if (is_container(v->kind))
        return 0;
    return v->kind != MF_PICKLE_TUPLE || tuple_hashable(v->u.obj);
}

static int tuple_hashable(const mf_pickle_obj *t)
{
    for (size_t i = 0; i < t->len; i++)
        if (!hashable(&t->items[i]))
            return 0;
    return 1;
}

static int unhashable(mf_pickle_reader *r, const char *what, const mf_pickle_value *v)
{
    return fail(r, MF_PICKLE_MALFORMED, "an unhashable %s (a %s)", what,
                mf_pickle_kind_name((mf_pickle_kind)v->kind));
}

/* The index of the first byte of s that is not UTF-8 (surrogates allowed, as
 * Python's surrogatepass), or -1. */
static long utf8_bad(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint8_t lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            if (c == 0xe0)
                lo = 0xa0;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            if (c == 0xf0)
                lo = 0x90;
            if (c == 0xf4)
                hi = 0x8f;
        } else {
            return (long)i;
        }
        if (need > n - i - 1)
            return (long)i;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return (long)(i + 1);
        for (size_t k = 2; k <= need; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xbf)
                return (long)(i + k);
        i += need + 1;
    }
    return -1;
}

/* The length argument of opcode op, checked against the data and the limit. */
static int read_len(mf_pickle_reader *r, uint8_t op, uint64_t *len)
{
    const char *name = ops[op].name;
    uint8_t a = ops[op].arg;
    uint64_t v;
    if (arg_le(r, a == A_LEN1 ? 1 : a == A_LEN8 ? 8 : 4, name, &v) < 0)
        return -1;
    if (a == A_LEN4S && (int32_t)(uint32_t)v < 0)
        return fail(r, MF_PICKLE_MALFORMED, "%s length %d is negative", name,
                    (int)(int32_t)(uint32_t)v);
    if (v > (uint64_t)INT64_MAX)
        return fail(r, MF_PICKLE_MALFORMED, "%s length %llu is over the largest size", name,
                    (unsigned long long)v);
    if (v > r->size - r->pos)
        return fail(r, MF_PICKLE_TRUNCATED, "the data ends inside %s (%llu bytes needed, %llu left)",
                    name, (unsigned long long)v, (unsigned long long)(r->size - r->pos));
    if (v > r->lim.max_string)
        return fail(r, MF_PICKLE_MEMORY, "%s of %llu bytes is over the limit of %zu bytes", name,
                    (unsigned long long)v, r->lim.max_string);
    *len = v;
    return 0;
}

/* A string or bytes value: BINUNICODE and kin, BINBYTES and kin. */
static int push_bytes(mf_pickle_reader *r, uint8_t op, uint32_t kind)
{
    uint64_t n;
    if (read_len(r, op, &n) < 0)
        return -1;
    const uint8_t *p = take(r, (size_t)n, ops[op].name);
    if (!p)
        return -1;
    if (kind == MF_PICKLE_STR) {
        int ascii = op == 'T' || op == 'U';    /* Python 2 str, read as ASCII as Python 3 does */
        long bad = -1;
        if (ascii) {
            for (size_t i = 0; i < n && bad < 0; i++)
                if (p[i] >= 0x80)
                    bad = (long)i;
        } else {
            bad = utf8_bad(p, (size_t)n);
        }
        if (bad >= 0)
            return fail(r, MF_PICKLE_MALFORMED, "%s is not %s (byte 0x%02x at offset %llu)",
                        ops[op].name, ascii ? "ASCII" : "UTF-8", p[bad],
                        (unsigned long long)(r->pos - n + (uint64_t)bad));
    }
    mf_pickle_obj *o = obj_new(r, kind, (size_t)n, (size_t)n + 1);
    if (!o)
        return -1;
    memcpy(o->items, p, (size_t)n);
    ((char *)o->items)[n] = 0;
    return push_val(r, (mf_pickle_value){ .kind = kind, .u.obj = o });
}

/* LONG1 / LONG4: n bytes of two's complement, little-endian. */
static int push_long(mf_pickle_reader *r, uint8_t op)
{
    uint64_t n;
    if (read_len(r, op, &n) < 0)
        return -1;
    const uint8_t *p = take(r, (size_t)n, ops[op].name);
    if (!p)
        return -1;
    int neg = n && (p[n - 1] & 0x80);
    size_t sig = (size_t)n;       /* bytes that are not sign extension */
    while (sig > 0 && p[sig - 1] == (neg ? 0xff : 0x00))
        sig--;
    /* it fits in int64 when the bytes past the 8th extend the 8th's sign */
    int fits = sig < 8 || (sig == 8 && ((p[7] & 0x80) != 0) == neg);
    if (fits) {
        /* the low bytes (at most 8), then the sign over the rest of the word */
        size_t k = n < 8 ? (size_t)n : 8;
        uint8_t b[8];
        memset(b, neg ? 0xff : 0x00, sizeof b);
        memcpy(b, p, k);
        uint64_t v = le(b, 8);
        return push_val(r, (mf_pickle_value){ .kind = MF_PICKLE_INT, .u.i = (int64_t)v });
    }
    mf_pickle_obj *o = obj_new(r, MF_PICKLE_BIGINT, (size_t)n, (size_t)n + 1);
    if (!o)
        return -1;
    memcpy(o->items, p, (size_t)n);
    ((char *)o->items)[n] = 0;
    return push_val(r, (mf_pickle_value){ .kind = MF_PICKLE_BIGINT, .u.obj = o });
}

/* ---- looking ahead ---- */

enum { SCAN_OTHER, SCAN_APPEND, SCAN_SETITEM, SCAN_UNKNOWN };

/* The bytes of opcode oi's argument at pos (a length-prefixed one included), or -1. */
static int64_t arg_size(mf_pickle_reader *r, const opinfo *oi, uint64_t pos)
{
    static const uint8_t fixed[] = { [A_NONE] = 0, [A_U1] = 1, [A_U2] = 2, [A_I4] = 4,
                                     [A_U4] = 4, [A_U8] = 8, [A_F8] = 8 };
    if (oi->arg <= A_F8)
        return fixed[oi->arg];
    if (oi->arg == A_TEXT)
        return -1;
    int w = oi->arg == A_LEN1 ? 1 : oi->arg == A_LEN8 ? 8 : 4;
    const uint8_t *q = peek(r, pos, (size_t)w);
    if (!q)
        return -1;
    uint64_t len = le(q, w);
    if ((oi->arg == A_LEN4S && (int32_t)(uint32_t)len < 0) || len > r->size - pos - (uint64_t)w)
        return -1;
    return (int64_t)(len + (uint64_t)w);
}

/*
 * How the container just pushed is first consumed, read ahead from the read
 * position without building anything: by APPEND or SETITEM straight on it
 * (it is then the element of the container below), by anything else
 * (SCAN_OTHER), or SCAN_UNKNOWN when the look-ahead ends first (its limit,
 * the data's end, or an opcode the reader will refuse when it gets there).
 * All scans of a read together read at most twice what the reader read
 * plus one look-ahead limit.
 */
static int scan_consumer(mf_pickle_reader *r)
{
    uint64_t start = r->pos, pos = r->pos;
    uint64_t total = r->lim.lookahead + 2 * r->pos;
    if (r->scanned >= total)
        return SCAN_UNKNOWN;
    uint64_t budget = total - r->scanned < r->lim.lookahead ? total - r->scanned : r->lim.lookahead;
    uint64_t d = 1;        /* objects from the new container up */
    uint32_t nm = 0;
    int result = SCAN_UNKNOWN;
    r->stats.lookaheads++;
    while (pos - start <= budget) {
        const uint8_t *p = peek(r, pos, 1);
        if (!p)
            break;
        const opinfo *oi = &ops[*p];
        int64_t size = arg_size(r, oi, pos + 1);
        if (size < 0)
            break;
        pos += 1 + (uint64_t)size;
        if (oi->cls == K_PUSH) {
            d++;
        } else if (oi->cls == K_NOOP) {
            continue;
        } else if (oi->cls == K_MARK) {
            if (nm >= r->lim.max_depth)
                break;
            r->scan_marks[nm++] = d;
        } else if (oi->cls == K_BATCH || oi->cls == K_BUILD) {
            if (nm == 0) {
                result = SCAN_OTHER;       /* a batch or tuple below takes it */
                break;
            }
            d = r->scan_marks[--nm] + (oi->cls == K_BUILD);
        } else if (oi->cls == K_APPEND || oi->cls == K_SETITEM || oi->cls == K_TUPLEN) {
            uint64_t pops = oi->cls == K_APPEND ? 1 : oi->cls == K_SETITEM ? 2 : oi->n;
            if (d == 1 && oi->cls != K_TUPLEN) {
                result = oi->cls == K_APPEND ? SCAN_APPEND : SCAN_SETITEM;
                break;
            }
            if (pops >= d) {
                result = SCAN_OTHER;
                break;
            }
            d = d - pops + (oi->cls == K_TUPLEN);
        } else if (oi->cls == K_STOP) {
            result = SCAN_OTHER;
            break;
        } else {
            break;
        }
    }
    r->scanned += pos - start;
    r->stats.lookahead_bytes += pos - start;
    set_fast(r);
    return result;
}

/* ---- placing a new container ---- */

/*
 * Could a container pushed now be the next item of the innermost frame, the
 * open container below it (at slot below) being complete?  Not when that
 * one itself still waits for the APPEND or SETITEM that places it.
 */
static int fits_as_item(mf_pickle_reader *r, const slot *below)
{
    if (below->place != P_ITEM || !r->top_mark)
        return 0;                            /* a second top-level object */
    slot *m = &r->st[r->top_mark - 1];
    if (m->frame == F_LIST)
        return 1;
    if (m->frame == F_DICT)
        return m->n % 2 == 1;                /* a value, not a key */
    return 0;
}

/* Is the container just pushed the element of the one below it (want: how)? */
static int element_of_below(mf_pickle_reader *r, const slot *below, int want)
{
    if (!fits_as_item(r, below))
        return 1;
    int seen = scan_consumer(r);
    if (seen == SCAN_UNKNOWN) {
        r->stats.guesses++;
        return 0;                            /* what CPython's pickler writes more often */
    }
    return seen == want;
}

/* Is slot t the innermost open container (the one items are reported into)? */
static int innermost_open(const mf_pickle_reader *r, const slot *t)
{
    return t->type == S_CONT && t->n + 1 == r->ncs;
}

/*
 * The new container (kind) is the next item of the innermost frame, after
 * the pending values in slots [from, top): report those, then begin it.
 */
static int begin_in_frame(mf_pickle_reader *r, uint32_t kind, size_t from)
{
    const char *what = mf_pickle_kind_name((mf_pickle_kind)kind);
    if (!r->top_mark) {
        if (r->bottom_n > 0)
            return fail(r, MF_PICKLE_UNSUPPORTED,
                        "a %s beside another object at the top level (a tuple holding a list, "
                        "dict or set is not supported)", what);
        return begin_cont(r, NULL, kind, P_ITEM);
    }
    slot *m = &r->st[r->top_mark - 1];
    if (m->frame == F_TUPLE)
        return fail(r, MF_PICKLE_UNSUPPORTED, "a tuple holding a %s (not supported)", what);
    if (m->frame == F_SET)
        return fail(r, MF_PICKLE_MALFORMED, "an unhashable set item (a %s)", what);
    if (!innermost_open(r, &r->st[r->top_mark - 2]))
        return fail(r, MF_PICKLE_MALFORMED, "a %s in the MARK of a container that is not the "
                    "last one open", what);
    const mf_pickle_value *key = NULL;
    if (m->frame == F_DICT) {
        if ((r->nst - from) % 2 == 0)
            return fail(r, MF_PICKLE_MALFORMED, "an unhashable dict key (a %s)", what);
        for (size_t i = from; i + 1 < r->nst; i += 2) {
            if (!hashable(&r->st[i].v))
                return unhashable(r, "dict key", &r->st[i].v);
            if (emit(r, &r->st[i].v, &r->st[i + 1].v) < 0)
                return -1;
        }
        key = &r->st[r->nst - 1].v;
        if (!hashable(key))
            return unhashable(r, "dict key", key);
    } else {
        for (size_t i = from; i < r->nst; i++)
            if (emit(r, NULL, &r->st[i].v) < 0)
                return -1;
    }
    mf_pickle_value k = key ? val_ref(key) : (mf_pickle_value){ 0 };
    commit_slots(r, from);
    int rc = begin_cont(r, key ? &k : NULL, kind, P_ITEM);
    val_unref(r, &k);
    return rc;
}

/*
 * The open container at slot c was complete, since kind comes after it as
 * its sibling: it ends.  Unless it waits for the APPEND or SETITEM that
 * places it: nothing else can come beside it.
 */
static int complete_before(mf_pickle_reader *r, const slot *c, uint32_t kind)
{
    if (c->place != P_ITEM)
        return fail(r, MF_PICKLE_MALFORMED, "a %s beside a %s that waits for its %s",
                    mf_pickle_kind_name((mf_pickle_kind)kind),
                    mf_pickle_kind_name((mf_pickle_kind)r->cs[c->n].kind),
                    c->place == P_APPEND ? "APPEND" : "SETITEM");
    return close_cont(r);
}

/* EMPTY_LIST, EMPTY_DICT, EMPTY_SET. */
static int op_new_cont(mf_pickle_reader *r, uint32_t kind)
{
    slot *t = top(r);
    if (!t || t->type == S_MARK || t->type == S_DONE)
        return begin_in_frame(r, kind, r->nst);
    if (t->type == S_CONT) {
        /* straight on an open container: its element, or that one was complete */
        if (r->cs[t->n].kind == MF_PICKLE_LIST && element_of_below(r, t, SCAN_APPEND))
            return begin_cont(r, NULL, kind, P_APPEND);
        if (complete_before(r, t, kind) < 0)
            return -1;
        return begin_in_frame(r, kind, r->nst);
    }
    size_t from = r->nst;
    while (from > 0 && r->st[from - 1].type == S_VAL)
        from--;
    if (from > 0 && r->st[from - 1].type == S_CONT) {
        cont *c = &r->cs[r->st[from - 1].n];
        if (c->kind == MF_PICKLE_DICT && r->nst - from == 1 &&
            element_of_below(r, &r->st[from - 1], SCAN_SETITEM)) {
            /* {key: new} written with SETITEM: the key is placed now */
            slot *k = &r->st[from];
            if (!hashable(&k->v))
                return unhashable(r, "dict key", &k->v);
            mf_pickle_value key = k->v;
            *k = (slot){ .type = S_DONE, .place = P_SETITEM, .n = 1, .offset = k->offset };
            int rc = begin_cont(r, &key, kind, P_SETITEM);
            val_unref(r, &key);
            return rc;
        }
        if (complete_before(r, &r->st[from - 1], kind) < 0)
            return -1;
    }
    return begin_in_frame(r, kind, from);
}

/* ---- consuming ---- */

static const char *slot_what(const mf_pickle_reader *r, const slot *s)
{
    if (s->type == S_VAL)
        return mf_pickle_kind_name((mf_pickle_kind)s->v.kind);
    if (s->type == S_CONT)
        return mf_pickle_kind_name((mf_pickle_kind)r->cs[s->n].kind);
    if (s->type == S_MARK)
        return "MARK";
    return "finished object";
}

/* The look-ahead guessed a container complete, and the pickle adds to it. */
static int guessed_wrong(const mf_pickle_reader *r, const slot *x, const slot *below)
{
    return r->stats.guesses > 0 && x->type == S_CONT && x->place == P_ITEM &&
           below->type == S_DONE;
}

static int guess_failed(mf_pickle_reader *r, const char *op)
{
    return fail(r, MF_PICKLE_UNSUPPORTED,
                "%s adds to a container memflow took to be complete (it could not look "
                "ahead far enough: raise the look-ahead limit of %llu bytes)",
                op, (unsigned long long)r->lim.lookahead);
}

static int underflow(mf_pickle_reader *r, const char *op)
{
    return fail(r, MF_PICKLE_MALFORMED, "%s with too few objects on the stack", op);
}

static int op_append(mf_pickle_reader *r)
{
    if (*frame_count(r) < 2)
        return underflow(r, "APPEND");
    slot *x = &r->st[r->nst - 1], *t = &r->st[r->nst - 2];
    if (x->type == S_CONT && x->place == P_APPEND) {
        if (close_cont(r) < 0)
            return -1;
    } else if (x->type == S_VAL && t->type == S_CONT && r->cs[t->n].kind == MF_PICKLE_LIST) {
        if (emit(r, NULL, &x->v) < 0)
            return -1;
    } else if (guessed_wrong(r, x, t)) {
        return guess_failed(r, "APPEND");
    } else {
        return fail(r, MF_PICKLE_MALFORMED, "APPEND of a %s to a %s", slot_what(r, x),
                    slot_what(r, t));
    }
    pop_slots(r, 1);
    (*frame_count(r))--;
    return 0;
}

static int op_setitem(mf_pickle_reader *r)
{
    if (*frame_count(r) < 3)
        return underflow(r, "SETITEM");
    slot *v = &r->st[r->nst - 1], *k = &r->st[r->nst - 2], *t = &r->st[r->nst - 3];
    if (v->type == S_CONT && v->place == P_SETITEM) {
        if (close_cont(r) < 0)
            return -1;
    } else if (v->type == S_VAL && k->type == S_VAL && t->type == S_CONT &&
               r->cs[t->n].kind == MF_PICKLE_DICT) {
        if (!hashable(&k->v))
            return unhashable(r, "dict key", &k->v);
        if (emit(r, &k->v, &v->v) < 0)
            return -1;
    } else if (guessed_wrong(r, v, k) || guessed_wrong(r, v, t)) {
        return guess_failed(r, "SETITEM");
    } else {
        return fail(r, MF_PICKLE_MALFORMED, "SETITEM into a %s", slot_what(r, t));
    }
    pop_slots(r, 2);
    *frame_count(r) -= 2;
    return 0;
}

/* Remove the innermost MARK and everything above it. */
static void pop_mark(mf_pickle_reader *r)
{
    size_t mi = r->top_mark - 1;
    pop_slots(r, r->nst - mi - 1);
    r->top_mark = r->st[mi].prev_mark;
    r->nst = mi;
    r->depth--;
}

/* APPENDS, SETITEMS, ADDITEMS: the items above the MARK go into the container below it. */
static int op_batch(mf_pickle_reader *r, uint8_t op)
{
    const char *name = ops[op].name;
    uint32_t want = op == 'e' ? MF_PICKLE_LIST : op == 'u' ? MF_PICKLE_DICT : MF_PICKLE_SET;
    if (!r->top_mark)
        return fail(r, MF_PICKLE_MALFORMED, "%s without a MARK", name);
    size_t mi = r->top_mark - 1;
    if (mi == 0)
        return fail(r, MF_PICKLE_MALFORMED, "%s with nothing below its MARK", name);
    slot *t = &r->st[mi - 1];
    if (t->type != S_CONT || r->cs[t->n].kind != want)
        return fail(r, MF_PICKLE_MALFORMED, "%s to a %s", name, slot_what(r, t));
    /* the one open container above the MARK ends first; the pending values follow it */
    for (size_t i = mi + 1; i < r->nst; i++)
        if (r->st[i].type == S_CONT && r->st[i].place != P_ITEM)
            return fail(r, MF_PICKLE_MALFORMED, "%s while a %s waits for its %s", name,
                        slot_what(r, &r->st[i]),
                        r->st[i].place == P_APPEND ? "APPEND" : "SETITEM");
    size_t from = mi + 1;
    for (size_t i = mi + 1; i < r->nst; i++) {
        if (r->st[i].type == S_CONT && close_cont(r) < 0)
            return -1;
        if (r->st[i].type != S_VAL)
            from = i + 1;
    }
    if (!innermost_open(r, &r->st[mi - 1]))
        return fail(r, MF_PICKLE_MALFORMED, "%s to a %s that is not the last one open", name,
                    slot_what(r, &r->st[mi - 1]));
    int dict = want == MF_PICKLE_DICT;
    if (dict && (r->nst - from) % 2)
        return fail(r, MF_PICKLE_MALFORMED, "SETITEMS with an odd number of items");
    for (size_t i = from; i < r->nst; i += dict ? 2 : 1) {
        const mf_pickle_value *v = &r->st[i].v;
        if (want != MF_PICKLE_LIST && !hashable(v))
            return unhashable(r, dict ? "dict key" : "set item", v);
        if ((dict ? emit(r, v, &r->st[i + 1].v) : emit(r, NULL, v)) < 0)
            return -1;
    }
    pop_mark(r);
    return 0;
}

/* TUPLE, FROZENSET, LIST, DICT: a value built from the items above the MARK. */
static int op_build(mf_pickle_reader *r, uint8_t op)
{
    const char *name = ops[op].name;
    if (!r->top_mark)
        return fail(r, MF_PICKLE_MALFORMED, "%s without a MARK", name);
    size_t mi = r->top_mark - 1, n = r->nst - mi - 1;
    uint32_t kind = op == 't' ? MF_PICKLE_TUPLE : op == 0x91 ? MF_PICKLE_FROZENSET
                  : op == 'l' ? MF_PICKLE_LIST : MF_PICKLE_DICT;
    for (size_t i = mi + 1; i < r->nst; i++)
        if (r->st[i].type != S_VAL)
            return fail(r, MF_PICKLE_UNSUPPORTED, "%s of items holding a list, dict or set "
                        "(not supported)", name);
    if (kind == MF_PICKLE_DICT && n % 2)
        return fail(r, MF_PICKLE_MALFORMED, "DICT with an odd number of items");
    for (size_t i = 0; i < n; i++) {
        const mf_pickle_value *v = &r->st[mi + 1 + i].v;
        if (kind == MF_PICKLE_FROZENSET && !hashable(v))
            return unhashable(r, "set item", v);
        if (kind == MF_PICKLE_DICT && i % 2 == 0 && !hashable(v))
            return unhashable(r, "dict key", v);
    }
    mf_pickle_value *items = malloc((n ? n : 1) * sizeof *items);
    if (!items)
        return fail(r, MF_PICKLE_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++)
        items[i] = r->st[mi + 1 + i].v;
    mf_pickle_value v;
    int rc = obj_items(r, kind, items, n, &v);
    free(items);
    if (rc < 0)
        return -1;
    r->nst = mi + 1;                   /* the references moved into v */
    pop_mark(r);
    return push_val(r, v);
}

static int op_tuple_n(mf_pickle_reader *r, uint8_t op)
{
    size_t n = ops[op].n;
    if (*frame_count(r) < n)
        return underflow(r, ops[op].name);
    mf_pickle_value items[3], v;
    for (size_t i = 0; i < n; i++) {
        const slot *s = &r->st[r->nst - n + i];
        if (s->type != S_VAL)
            return fail(r, MF_PICKLE_UNSUPPORTED, "a tuple holding a %s (not supported)",
                        slot_what(r, s));
        items[i] = s->v;
    }
    if (obj_items(r, MF_PICKLE_TUPLE, items, n, &v) < 0)
        return -1;
    r->nst -= n;
    *frame_count(r) -= n;
    return push_val(r, v);
}

static int op_mark(mf_pickle_reader *r)
{
    if (r->depth >= r->lim.max_depth)
        return fail(r, MF_PICKLE_UNSUPPORTED, "containers nested deeper than %u",
                    (unsigned)r->lim.max_depth);
    slot *t = top(r);
    uint8_t frame = F_TUPLE;
    if (t && t->type == S_CONT) {
        uint8_t k = r->cs[t->n].kind;
        frame = k == MF_PICKLE_LIST ? F_LIST : k == MF_PICKLE_DICT ? F_DICT : F_SET;
    }
    slot s = { .type = S_MARK, .frame = frame, .prev_mark = r->top_mark, .offset = r->op_off };
    if (push_slot(r, &s, 0) < 0)
        return -1;
    r->top_mark = (uint32_t)r->nst;
    r->depth++;
    return 0;
}

static int op_memo_put(mf_pickle_reader *r, uint8_t op, uint64_t idx)
{
    int mode = op == OP_MEMOIZE ? 'm' : 'p';
    if (r->memo_mode && r->memo_mode != mode)
        return fail(r, MF_PICKLE_UNSUPPORTED, "%s in a pickle that also uses %s (not supported)",
                    ops[op].name, mode == 'm' ? "BINPUT" : "MEMOIZE");
    r->memo_mode = mode;
    if (*frame_count(r) == 0)
        return fail(r, MF_PICKLE_MALFORMED, "%s with an empty stack", ops[op].name);
    int fresh = idx >= r->memo_hwm;     /* nothing stored there yet */
    if (fresh)
        r->memo_hwm = idx + 1;
    if (idx > UINT32_MAX)
        return 0;                      /* no GET can name it */
    slot *t = top(r);
    if (t->type == S_VAL)
        return memo_store(r, (uint32_t)idx, &t->v);
    if (!fresh)
        memo_remove(r, (uint32_t)idx);
    if (t->type == S_CONT) {
        cont *c = &r->cs[t->n];
        c->has_memo = 1;
        c->memo_idx = (uint32_t)idx;
    }
    return 0;
}

/*
 * A GET names the innermost open container, with nothing but pending values
 * above it: it is complete (else the pickle is recursive, which the next
 * opcodes refuse), so it ends now and the memo gets it if kept.
 */
static int completed_by_get(mf_pickle_reader *r, uint32_t idx)
{
    if (!r->ncs || !r->cs[r->ncs - 1].has_memo || r->cs[r->ncs - 1].memo_idx != idx)
        return 0;
    for (size_t i = r->nst; i-- > 0;) {
        if (r->st[i].type == S_CONT)
            return close_cont(r) < 0 ? -1 : 1;
        if (r->st[i].type != S_VAL)
            return 0;
    }
    return 0;
}

static int op_get(mf_pickle_reader *r, uint8_t op, uint32_t idx)
{
    memo_entry *e = memo_find(r, idx);
    if (!e) {
        int rc = completed_by_get(r, idx);
        if (rc < 0)
            return -1;
        if (rc > 0)
            e = memo_find(r, idx);
    }
    if (e) {
        e->touched = 1;
        mf_pickle_value v = memo_value(e);
        return push_val(r, val_ref(&v));
    }
    for (size_t i = 0; i < r->ncs; i++)
        if (r->cs[i].has_memo && r->cs[i].memo_idx == idx)
            return fail(r, MF_PICKLE_UNSUPPORTED, "%s of memo index %u: the %s it names is still "
                        "being read (a recursive structure, not supported)", ops[op].name,
                        (unsigned)idx, mf_pickle_kind_name((mf_pickle_kind)r->cs[i].kind));
    if (idx >= r->memo_hwm)
        return fail(r, MF_PICKLE_MALFORMED, "%s of memo index %u, where nothing was stored",
                    ops[op].name, (unsigned)idx);
    return fail(r, MF_PICKLE_UNSUPPORTED, "%s of memo index %u: the object was not kept in "
                "memory (a list, dict or set read through once, or a value dropped for the "
                "memory limit)", ops[op].name, (unsigned)idx);
}

static int op_stop(mf_pickle_reader *r)
{
    if (r->top_mark)
        return fail(r, MF_PICKLE_MALFORMED, "STOP inside a MARK");
    if (r->bottom_n != 1)
        return fail(r, MF_PICKLE_MALFORMED, "STOP with %llu objects on the stack",
                    (unsigned long long)r->bottom_n);
    slot *t = top(r);
    if (t->type == S_CONT)
        return close_cont(r);
    if (t->type != S_VAL)
        return fail(r, MF_PICKLE_MALFORMED, "STOP with no object to return");
    return report(r, NULL, &t->v);
}

static int op_frame(mf_pickle_reader *r)
{
    uint64_t n;
    if (arg_le(r, 8, "FRAME", &n) < 0)
        return -1;
    if (n > (uint64_t)INT64_MAX)
        return fail(r, MF_PICKLE_MALFORMED, "FRAME length %llu is over the largest size",
                    (unsigned long long)n);
    if (r->frame_end > r->pos)
        return fail(r, MF_PICKLE_MALFORMED, "FRAME before the end of the current frame "
                    "(at offset %llu)", (unsigned long long)r->frame_end);
    r->frame_end = r->pos + n;
    set_fast(r);
    return 0;
}

static int op_proto(mf_pickle_reader *r)
{
    uint64_t v;
    if (arg_le(r, 1, "PROTO", &v) < 0)
        return -1;
    if (v < 2)
        return fail(r, MF_PICKLE_UNSUPPORTED, "pickle protocol %u is not supported (memflow "
                    "reads protocols 2 to 5)", (unsigned)v);
    if (v > 5)
        return fail(r, MF_PICKLE_UNSUPPORTED, "unknown pickle protocol %u", (unsigned)v);
    return 0;
}

static int push_float(mf_pickle_reader *r)
{
    const uint8_t *p = take(r, 8, "BINFLOAT");
    if (!p)
        return -1;
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++)
        bits = bits << 8 | p[i];       /* big-endian */
    double d;
    memcpy(&d, &bits, sizeof d);
    return push_val(r, (mf_pickle_value){ .kind = MF_PICKLE_FLOAT, .u.f = d });
}

/* BINGET, LONG_BINGET. */
static inline int op_binget(mf_pickle_reader *r, uint8_t op)
{
    uint64_t v;
    if (arg_le(r, op == 'h' ? 1 : 4, ops[op].name, &v) < 0)
        return -1;
    return op_get(r, op, (uint32_t)v);
}

/* The opcodes that push one value. */
static int op_push(mf_pickle_reader *r, uint8_t op)
{
    uint64_t v;
    mf_pickle_value t;
    switch (op) {
    case 'N':
        return push_val(r, (mf_pickle_value){ .kind = MF_PICKLE_NONE });
    case 0x88:
    case 0x89:
        return push_val(r, (mf_pickle_value){ .kind = MF_PICKLE_BOOL, .u.i = op == 0x88 });
    case 'K':
    case 'M':
    case 'J':
        if (arg_le(r, op == 'K' ? 1 : op == 'M' ? 2 : 4, ops[op].name, &v) < 0)
            return -1;
        return push_val(r, (mf_pickle_value){ .kind = MF_PICKLE_INT,
                               .u.i = op == 'J' ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v });
    case 'G':
        return push_float(r);
    case 0x8a:
    case 0x8b:
        return push_long(r, op);
    case 'X':
    case 0x8c:
    case 0x8d:
    case 'T':
    case 'U':
        return push_bytes(r, op, MF_PICKLE_STR);
    case 'B':
    case 'C':
    case 0x8e:
    case 0x96:
        return push_bytes(r, op, MF_PICKLE_BYTES);
    case ')':
        if (obj_items(r, MF_PICKLE_TUPLE, NULL, 0, &t) < 0)
            return -1;
        return push_val(r, t);
    case ']':
        return op_new_cont(r, MF_PICKLE_LIST);
    case '}':
        return op_new_cont(r, MF_PICKLE_DICT);
    case 0x8f:
        return op_new_cont(r, MF_PICKLE_SET);
    case 'h':
    case 'j':
        return op_binget(r, op);
    }
    return fail(r, MF_PICKLE_MALFORMED, "unknown opcode 0x%02x", op);
}

static int op_noop(mf_pickle_reader *r, uint8_t op)
{
    uint64_t v;
    if (op == OP_PROTO)
        return op_proto(r);
    if (op == 0x95)
        return op_frame(r);
    if (op == OP_MEMOIZE)
        return op_memo_put(r, op, r->memo_len++);
    if (arg_le(r, op == 'q' ? 1 : 4, ops[op].name, &v) < 0)
        return -1;
    return op_memo_put(r, op, v);
}

/* Handle one opcode: 0, 1 after STOP, -1 on failure. */
static int step(mf_pickle_reader *r, uint8_t op)
{
    const opinfo *oi = &ops[op];
    r->stats.opcodes++;
    switch (oi->cls) {
    case K_PUSH:
        return op_push(r, op);
    case K_NOOP:
        return op_noop(r, op);
    case K_MARK:
        return op_mark(r);
    case K_BATCH:
        return op_batch(r, op);
    case K_BUILD:
        return op_build(r, op);
    case K_APPEND:
        return op_append(r);
    case K_SETITEM:
        return op_setitem(r);
    case K_TUPLEN:
        return op_tuple_n(r, op);
    case K_STOP:
        return op_stop(r) < 0 ? -1 : 1;
    case K_REFUSED:
        return fail(r, MF_PICKLE_REFUSED, "opcode %s refused: %s (memflow reads plain data only)",
                    oi->name, oi->why);
    case K_TEXT:
        return fail(r, MF_PICKLE_UNSUPPORTED, "opcode %s is not supported (a text opcode of "
                    "protocol 0; memflow reads protocols 2 to 5)", oi->name);
    case K_STACKOP:
        return fail(r, MF_PICKLE_UNSUPPORTED, "opcode %s is not supported (stack manipulation, "
                    "as for a recursive structure)", oi->name);
    case K_BUFFER:
        return fail(r, MF_PICKLE_UNSUPPORTED, "opcode %s is not supported (out-of-band buffers)",
                    oi->name);
    }
    return fail(r, MF_PICKLE_MALFORMED, "unknown opcode 0x%02x", op);
}

/* ---- the public side ---- */

static mf_pickle_reader *reader_new(void)
{
    mf_pickle_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->fd = -1;
    r->lim = (mf_pickle_limits){ .memory = (size_t)128 << 20, .max_string = (size_t)64 << 20,
                                 .max_depth = 1000, .lookahead = (uint64_t)8 << 20 };
    return r;
}

mf_pickle_reader *mf_pickle_reader_mem(const void *data, size_t len)
{
    mf_pickle_reader *r = reader_new();
    if (!r)
        return NULL;
    r->mem = data ? data : (const uint8_t *)"";
    r->size = data ? len : 0;
    r->win = r->mem;
    r->win_len = (size_t)r->size;
    return r;
}

mf_pickle_reader *mf_pickle_reader_fd(int fd, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot read: %s", strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "not a regular file (the reader looks ahead, so it needs a file "
                 "it can seek in)");
        return NULL;
    }
    mf_pickle_reader *r = reader_new();
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->fd = fd;
    r->size = (uint64_t)st.st_size;
    return r;
}

void mf_pickle_set_limits(mf_pickle_reader *r, const mf_pickle_limits *l)
{
    if (l->memory)
        r->lim.memory = l->memory;
    if (l->max_string)
        r->lim.max_string = l->max_string;
    if (l->max_depth)
        r->lim.max_depth = l->max_depth < 60000 ? l->max_depth : 60000;
    if (l->lookahead)
        r->lim.lookahead = l->lookahead;
}

/* Drop everything a read holds (the stack, open containers, the memo). */
static void release(mf_pickle_reader *r)
{
    pop_slots(r, r->nst);
    while (r->ncs) {
        cont *c = &r->cs[--r->ncs];
        for (size_t i = 0; i < c->ncopy; i++)
            val_unref(r, &c->copy[i]);
        free(c->copy);
    }
    for (size_t i = 0; i < r->memo_cap; i++) {
        if (r->memo[i].used) {
            mf_pickle_value v = memo_value(&r->memo[i]);
            val_unref(r, &v);
        }
    }
    free(r->memo);
    free(r->st);
    free(r->cs);
    free(r->scan_marks);
    free(r->buf);
    for (int c = 0; c < SPARE_CLASSES; c++) {
        while (r->spare[c]) {
            void *o = r->spare[c];
            memcpy(&r->spare[c], o, sizeof(void *));
            free(o);
        }
    }
    r->spare_bytes = 0;
    r->memo = NULL;
    r->st = NULL;
    r->cs = NULL;
    r->scan_marks = NULL;
    r->buf = NULL;
    r->memo_cap = r->memo_used = r->nst = r->capst = r->capcs = r->cap = r->win_len = 0;
    r->win = NULL;
    r->fast_end = r->pos;
}

static int first_opcode(mf_pickle_reader *r)
{
    const uint8_t *p = fill(r, 0, 1);
    if (!p) {
        if (r->io_errno)
            return fail(r, MF_PICKLE_IO, "cannot read: %s", strerror(r->io_errno));
        return fail(r, MF_PICKLE_TRUNCATED, "empty, not a pickle");
    }
    if (*p != OP_PROTO)
        return fail(r, MF_PICKLE_UNSUPPORTED, "not a pickle of protocol 2 or later (it starts "
                    "with %s, byte 0x%02x)", op_name(*p), *p);
    return 0;
}

mf_pickle_status mf_pickle_read(mf_pickle_reader *r, const mf_pickle_handler *h, void *ctx)
{
    static const mf_pickle_handler none = { 0 };
    if (r->used) {
        r->op_off = 0;
        r->status = MF_PICKLE_OK;
        fail(r, MF_PICKLE_MALFORMED, "a reader reads once");
        return r->status;
    }
    r->used = 1;
    r->h = h ? h : &none;
    r->ctx = ctx;
    r->sweep_at = r->lim.memory / 16;
    r->scan_marks = malloc(r->lim.max_depth * sizeof *r->scan_marks);
    if (!r->mem) {
        r->cap = 256 << 10;
        r->buf = malloc(r->cap);
        account(r, r->cap, 0);
    }
    if (!r->scan_marks || (!r->mem && !r->buf))
        fail(r, MF_PICKLE_MEMORY, "out of memory");
    else if (first_opcode(r) == 0) {
        for (;;) {
            r->op_off = r->pos;
            if (r->pos >= r->size) {
                fail(r, MF_PICKLE_TRUNCATED, "the data ends before STOP");
                break;
            }
            const uint8_t *p = take(r, 1, "an opcode");
            int rc = p ? step(r, *p) : -1;
            if (rc != 0)
                break;
        }
    }
    r->stats.bytes = r->status == MF_PICKLE_OK ? r->pos : r->op_off;
    r->stats.memo_kept = r->memo_used;
    release(r);
    return r->status;
}

const char *mf_pickle_error(const mf_pickle_reader *r)
{
    return r->msg;
}

uint64_t mf_pickle_offset(const mf_pickle_reader *r)
{
    return r->op_off;
}

void mf_pickle_stats_get(const mf_pickle_reader *r, mf_pickle_stats *out)
{
    *out = r->stats;
}

void mf_pickle_reader_free(mf_pickle_reader *r)
{
    if (!r)
        return;
    release(r);
    free(r);
}

const char *mf_pickle_bytes(const mf_pickle_value *v, size_t *len)
{
    if (v->kind != MF_PICKLE_STR && v->kind != MF_PICKLE_BYTES && v->kind != MF_PICKLE_BIGINT) {
        *len = 0;
        return NULL;
    }
    *len = v->u.obj->len;
    return obj_bytes(v->u.obj);
}

const mf_pickle_value *mf_pickle_items(const mf_pickle_value *v, size_t *n)
{
    if (v->kind < MF_PICKLE_TUPLE || (v->u.obj->flags & OBJ_ID_ONLY)) {
        *n = 0;
        return NULL;
    }
    *n = v->u.obj->len;
    return v->u.obj->items;
}

int mf_pickle_i64(const mf_pickle_value *v, int64_t *out)
{
    if (v->kind != MF_PICKLE_INT && v->kind != MF_PICKLE_BOOL)
        return -1;       /* a BIGINT never fits: the LONGs that fit became INT */
    *out = v->u.i;
    return 0;
}

int mf_pickle_u64(const mf_pickle_value *v, uint64_t *out)
{
    if ((v->kind == MF_PICKLE_INT || v->kind == MF_PICKLE_BOOL) && v->u.i >= 0) {
        *out = (uint64_t)v->u.i;
        return 0;
    }
    if (v->kind != MF_PICKLE_BIGINT)
        return -1;
    const mf_pickle_obj *o = v->u.obj;
    const uint8_t *b = (const uint8_t *)obj_bytes(o);
    if (o->len < 8 || (b[o->len - 1] & 0x80))
        return -1;
    for (size_t i = 8; i < o->len; i++)
        if (b[i])
            return -1;
    *out = le(b, 8);
    return 0;
}

int mf_pickle_is_str(const mf_pickle_value *v, const char *s)
{
    if (v->kind != MF_PICKLE_STR)
        return 0;
    size_t n = strlen(s);
    return v->u.obj->len == n && memcmp(obj_bytes(v->u.obj), s, n) == 0;
}

uint64_t mf_pickle_id(const mf_pickle_value *v)
{
    return has_obj(v->kind) ? v->u.obj->id : 0;
}

const char *mf_pickle_kind_name(mf_pickle_kind kind)
{
    static const char *const names[] = { "None", "bool", "int", "int", "float", "str", "bytes",
                                         "tuple", "frozenset", "list", "dict", "set" };
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "object";
}
