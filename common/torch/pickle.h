/*
 * pickle.h - a safe, streaming reader of Python pickles (protocols 2 to 5)
 * as plain data: dicts, lists, tuples, sets, strings, bytes, numbers,
 * booleans and None.  It is how memflow reads PyTorch memory snapshots
 * (common/torch/torch_snapshot.h walks one over this reader) without running
 * Python: every opcode that names or calls an object (GLOBAL, STACK_GLOBAL,
 * REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4) or asks for one
 * (PERSID, BINPERSID) is refused with its name and byte offset, and so is
 * an unknown opcode, a cut file or a bad length.
 *
 * Streaming, SAX-like: the reader reports the structure as it reads it
 * (a list, dict or set begins; a value, with its key inside a dict; the
 * container ends), so a multi-gigabyte pickle is never held in memory.
 * Memory follows what a later reference (GET) can reach, not the file:
 *   - strings, bytes, big integers and tuples the pickle memoizes are kept
 *     in the memo; once the reader's heap passes a sixteenth of its budget,
 *     those only the memo holds are dropped, least recently used first
 *     (PyTorch refers back only to its constants, frame dicts and frames
 *     lists, so a fresh string in every trace entry does not pile up);
 *   - a list, dict or set is kept only when the handler asks for it at its
 *     begin (MF_PICKLE_KEEP: a full copy, or MF_PICKLE_KEEP_ID: only its
 *     identity, the handler remembering what it held), e.g. the frame dicts
 *     and frame lists a snapshot shares between its entries.
 * A GET of something not kept is refused with its memo index and offset.
 * A later reference to a kept list/dict/set is reported again as begin
 * (replay = 1, the same id), its items and end, unless begin says
 * MF_PICKLE_SKIP.
 *
 * Pickle is postfix: `[[], [x]]` and `[[[x]], ...]` start alike, and which
 * one it is shows only where the inner list is consumed (APPEND or
 * APPENDS).  Where that matters the reader looks ahead in the file (a
 * bounded scan of the opcodes, no values built), so the source must be
 * seekable: a regular file or bytes in memory.  Past the look-ahead bound
 * it assumes what CPython's pickler writes and refuses the file should the
 * guess prove wrong later (never a wrong report).  Tuples holding a list,
 * dict or set, and the stack opcodes POP, POP_MARK and DUP (recursive
 * structures) are refused as unsupported.
 *
 * Depends on libc only (and compiler.h), so both the memflow program and
 * the Python extension compile it.  Not thread-safe per reader; readers are
 * independent.
 */
#ifndef MEMFLOW_PICKLE_H
#define MEMFLOW_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* What a value is. */
typedef enum mf_pickle_kind {
    MF_PICKLE_NONE,
    MF_PICKLE_BOOL,       /* u.i: 0 or 1 */
    MF_PICKLE_INT,        /* u.i: fits in int64 */
    MF_PICKLE_BIGINT,     /* mf_pickle_bytes: two's complement, little-endian */
    MF_PICKLE_FLOAT,      /* u.f */
    MF_PICKLE_STR,        /* mf_pickle_bytes: UTF-8 (surrogates allowed, as Python) */
    MF_PICKLE_BYTES,      /* mf_pickle_bytes (bytes and bytearray) */
    MF_PICKLE_TUPLE,      /* mf_pickle_items */
    MF_PICKLE_FROZENSET,  /* mf_pickle_items */
    MF_PICKLE_LIST,       /* streamed: begin .. end; inside a tuple: mf_pickle_items */
    MF_PICKLE_DICT,       /* streamed; items are key, value, key, value ... */
    MF_PICKLE_SET         /* streamed */
} mf_pickle_kind;

typedef struct mf_pickle_obj mf_pickle_obj;   /* the reader's own, refcounted */

/* A value as the handler sees it: valid during the callback only. */
typedef struct mf_pickle_value {
    uint32_t kind;                     /* mf_pickle_kind */
    union {
        int64_t i;
        double f;
        mf_pickle_obj *obj;            /* strings, bytes, big ints, tuples, kept containers */
    } u;
} mf_pickle_value;

/* What a handler's begin may return (or a negative number: stop reading). */
#define MF_PICKLE_DESCEND 0     /* report its items */
#define MF_PICKLE_KEEP    1     /* keep a full copy for later GETs (if memoized) */
#define MF_PICKLE_KEEP_ID 2     /* keep only its identity: later GETs replay begin, and
                                   the handler must answer MF_PICKLE_SKIP then */
#define MF_PICKLE_SKIP    4     /* do not report its items (end is still reported) */

/*
 * The callbacks, any of them NULL.  key is the item's key when the
 * container it goes into is a dict, else NULL; at the top level both are
 * NULL.  Return 0 to go on, or a negative number to stop the reader (which
 * then returns MF_PICKLE_STOPPED).
 */
typedef struct mf_pickle_handler {
    /* A list, dict or set begins.  id is its identity, unique in this read
     * and the same when a GET refers to it again (replay = 1). */
    int (*begin)(void *ctx, const mf_pickle_value *key, mf_pickle_kind kind, uint64_t id,
                 int replay);
    /* A value that is not a list, dict or set (scalars, strings, tuples). */
    int (*value)(void *ctx, const mf_pickle_value *key, const mf_pickle_value *v);
    /* The container begun last ends. */
    int (*end)(void *ctx, mf_pickle_kind kind);
} mf_pickle_handler;

/* How reading ended; each has its own exit code in the programs that read. */
typedef enum mf_pickle_status {
    MF_PICKLE_OK = 0,
    MF_PICKLE_REFUSED,      /* an opcode that names, calls or asks for an object */
    MF_PICKLE_UNSUPPORTED,  /* valid pickle memflow does not read (protocol < 2, text
                               opcodes, POP/DUP, a tuple holding a list, a layout) */
    MF_PICKLE_TRUNCATED,    /* the data ends before STOP */
    MF_PICKLE_MALFORMED,    /* bad length, unknown opcode, invalid UTF-8, misused stack */
    MF_PICKLE_MEMORY,       /* over the memory budget, or out of memory */
    MF_PICKLE_IO,           /* the file could not be read */
    MF_PICKLE_STOPPED       /* a callback returned a negative number */
} mf_pickle_status;

/* Limits; mf_pickle_reader_* start with the defaults shown. */
typedef struct mf_pickle_limits {
    size_t memory;          /* the reader's heap: memo, stack, copies (128 MiB) */
    size_t max_string;      /* longest string or bytes value (64 MiB) */
    uint32_t max_depth;     /* nested containers and marks (1000) */
    uint64_t lookahead;     /* bytes one look-ahead may scan (8 MiB; all of them
                               together: that, plus twice what was read) */
} mf_pickle_limits;

/* What a read did (for reports and tests). */
typedef struct mf_pickle_stats {
    uint64_t bytes;          /* bytes read up to STOP */
    uint64_t opcodes;
    uint64_t memo_kept;      /* memo entries at the end */
    uint64_t memo_evicted;   /* memo entries dropped for the budget */
    uint64_t keeps_refused;  /* containers not kept for the budget */
    uint64_t lookaheads;     /* look-ahead scans */
    uint64_t lookahead_bytes;
    uint64_t guesses;        /* places decided without a full look-ahead */
    size_t memory_peak;      /* the most heap the reader held at once */
} mf_pickle_stats;

typedef struct mf_pickle_reader mf_pickle_reader;

/*
 * A reader of the len bytes at data (not copied: they must outlive the
 * reader).  NULL when out of memory.
 */
mf_pickle_reader *mf_pickle_reader_mem(const void *data, size_t len);

/*
 * A reader of the regular file open at fd, from its start (read with
 * pread; the descriptor stays the caller's).  NULL with the reason in err
 * ("not a regular file", out of memory).
 */
mf_pickle_reader *mf_pickle_reader_fd(int fd, char *err, size_t errlen);

/* Change the limits (before mf_pickle_read); a zero field keeps its value. */
void mf_pickle_set_limits(mf_pickle_reader *r, const mf_pickle_limits *limits);

/*
 * Read the pickle once, from its first byte to STOP, calling h.  Returns
 * MF_PICKLE_OK, or the status with a message (mf_pickle_error) that
 * starts with the byte offset: "offset 17: opcode GLOBAL refused: it names
 * a Python object (memflow reads plain data only)".  A reader reads once;
 * read again with a new reader (ids and memo start afresh).
 */
mf_pickle_status mf_pickle_read(mf_pickle_reader *r, const mf_pickle_handler *h,
                                void *ctx);

/* The message of the last failure ("" after success). */
const char *mf_pickle_error(const mf_pickle_reader *r);

/* The byte offset of the opcode being handled (valid in callbacks). */
uint64_t mf_pickle_offset(const mf_pickle_reader *r);

void mf_pickle_stats_get(const mf_pickle_reader *r, mf_pickle_stats *out);

void mf_pickle_reader_free(mf_pickle_reader *r);

/* The bytes of a STR, BYTES or BIGINT value (NUL-terminated), *len set; else NULL. */
const char *mf_pickle_bytes(const mf_pickle_value *v, size_t *len);

/*
 * The items of a TUPLE or FROZENSET value, or of a LIST, DICT or SET kept
 * in full (a dict's items alternate key and value); *n set.  NULL with
 * *n = 0 for other values and containers kept by identity.
 */
const mf_pickle_value *mf_pickle_items(const mf_pickle_value *v, size_t *n);

/* An INT, BOOL or BIGINT that fits: 0 and *out set, else -1. */
int mf_pickle_i64(const mf_pickle_value *v, int64_t *out);
int mf_pickle_u64(const mf_pickle_value *v, uint64_t *out);

/* 1 when v is the string s (all of it), else 0. */
int mf_pickle_is_str(const mf_pickle_value *v, const char *s);

/* The identity of an object value (strings, tuples, kept containers); 0 for scalars. */
uint64_t mf_pickle_id(const mf_pickle_value *v);

/* "str", "dict", ... for messages. */
const char *mf_pickle_kind_name(mf_pickle_kind kind);

#endif /* MEMFLOW_PICKLE_H */
