/*
 * record.h - the records of a log chunk, one at a time: the one place that
 * knows each record type's size, checks and layout.  The scan
 * (log_scan.c) walks a chunk with mf_record_next, which checks every record
 * and stops at damage; the merge (merge.c) walks the part the scan accepted
 * again with mf_record_step, which checks nothing, and decodes each event
 * with mf_record_decode.  Both keep an mf_chunk_state: the time base of
 * compact records and the thread that owns the chunk from here on.
 */
#ifndef MEMFLOW_RECORD_H
#define MEMFLOW_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"

/* What decoding carries from one record of a chunk to the next. */
typedef struct mf_chunk_state {
    uint64_t base_ns;        /* time base of compact records */
    uint32_t tid;            /* the chunk's owner (chunk header, then OWNER) */
    uint32_t base_valid;     /* a TIME record set base_ns since the last OWNER */
} mf_chunk_state;

/* What a record is to the reader. */
enum mf_record_class {
    MF_CLASS_EVENT = 1,      /* has a time, becomes an mf_event */
    MF_CLASS_META = 2,       /* STRING, THREAD, STACK, MODULE, DEVICE, FRAME: no time */
    MF_CLASS_STATE = 3       /* TIME, OWNER: change the chunk state only */
};

typedef struct mf_record {
    const uint8_t *p;        /* the record (its word first) */
    unsigned type, size;
    uint32_t aux;
    unsigned cls;            /* enum mf_record_class */
    uint64_t time_ns;        /* MF_CLASS_EVENT: its time */
} mf_record;

/* Bounds the scan puts on ids: a log of N bytes holds at most N / 16 of them. */
typedef struct mf_record_limits {
    uint32_t max_id;
} mf_record_limits;

/*
 * Check the record at p and step over it.  avail: bytes at p that came from
 * the file; room: bytes to the end of the chunk (>= avail).  Returns 1 (r
 * filled, *st advanced), 0 at a zero word (the end of what was written), or
 * -1 when the record is damaged: why (whylen bytes) says what, as the log's
 * damage messages do ("unknown record type 77", "file truncated inside a
 * record of type 1").
 */
int mf_record_next(const uint8_t *p, size_t avail, size_t room, mf_chunk_state *st,
                   const mf_record_limits *lim, mf_record *r, char *why, size_t whylen);

/*
 * Step over a record the scan already accepted (no checks): fills r and
 * advances *st.  Returns 1, or 0 when fewer than r->size bytes are at p
 * (avail), so a windowed reader must read further first (*st unchanged).
 */
static inline int mf_record_step(const uint8_t *p, size_t avail, mf_chunk_state *st,
                                 mf_record *r);

/*
 * Decode an MF_CLASS_EVENT record into e (string and stack ids are the
 * log's own; the reader maps them).  SAMPLE values are left in the record
 * (mf_record_sample_values).
 */
void mf_record_decode(const mf_record *r, const mf_chunk_state *st, mf_event *e);

/* The SAMPLE record's values. */
void mf_record_sample_values(const mf_record *r, mf_sample_values *out);

/* ---- inline part ---- */

static inline unsigned mf_record_class_of(unsigned type)
{
    switch (type) {
    case MF_REC_STRING: case MF_REC_THREAD: case MF_REC_STACK: case MF_REC_MODULE:
    case MF_REC_DEVICE: case MF_REC_FRAME:
        return MF_CLASS_META;
    case MF_REC_TIME: case MF_REC_OWNER:
        return MF_CLASS_STATE;
    }
    return MF_CLASS_EVENT;
}

static inline int mf_record_is_compact(unsigned type)
{
    return type == MF_REC_CPU_ALLOC || type == MF_REC_CPU_FREE ||
           type == MF_REC_CPU_ALLOC_STACK;
}

/* The time of an event record, advancing the compact time base. */
static inline uint64_t mf_record_event_time(const uint8_t *p, unsigned type, uint32_t aux,
                                            mf_chunk_state *st)
{
    if (mf_record_is_compact(type))
        return st->base_ns += aux;
    uint64_t t;
    __builtin_memcpy(&t, p + 8, 8);   /* time_ns / start_ns follows the word */
    return t;
}

static inline void mf_record_apply_state(const uint8_t *p, unsigned type, uint32_t aux,
                                         mf_chunk_state *st)
{
    if (type == MF_REC_TIME) {
        __builtin_memcpy(&st->base_ns, p + 8, 8);
        st->base_valid = 1;
    } else {                        /* OWNER */
        st->tid = aux;
        st->base_valid = 0;
    }
}

static inline int mf_record_step(const uint8_t *p, size_t avail, mf_chunk_state *st,
                                 mf_record *r)
{
    uint64_t word;
    if (avail < 8)
        return 0;
    __builtin_memcpy(&word, p, 8);
    unsigned size = MF_WORD_SIZE(word);
    if (size > avail || size < 8)
        return 0;
    r->p = p;
    r->type = MF_WORD_TYPE(word);
    r->size = size;
    r->aux = MF_WORD_AUX(word);
    r->cls = mf_record_class_of(r->type);
    if (r->cls == MF_CLASS_EVENT)
        r->time_ns = mf_record_event_time(p, r->type, r->aux, st);
    else if (r->cls == MF_CLASS_STATE)
        mf_record_apply_state(p, r->type, r->aux, st);
    return 1;
}

#endif /* MEMFLOW_RECORD_H */
