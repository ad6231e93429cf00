/*
 * record.c - checking and decoding the records of a chunk (see record.h).
 * The sizes and checks here are docs/FORMAT.md's "Records" table.
 */
#include <stdio.h>
#include <string.h>

#include "reader.h"
#include "record.h"

/* The checks of the variable-size and id-carrying records. */
static int check_payload(const uint8_t *p, unsigned type, unsigned size, uint32_t aux,
                         const mf_record_limits *lim, char *why, size_t whylen)
{
    if (type == MF_REC_STRING) {
        mf_rec_string s;
        memcpy(&s, p, sizeof s);
        if (aux == 0 || aux > lim->max_id || s.len > MF_STRING_MAX_LEN ||
            ((16 + s.len + 7) & ~7u) != size) {
            snprintf(why, whylen, "bad string record (id %u, length %u, size %u)", aux, s.len,
                     size);
            return -1;
        }
    } else if (type == MF_REC_STACK) {
        mf_rec_stack s;
        memcpy(&s, p, sizeof s);
        if (aux == 0 || aux > lim->max_id || s.depth > MF_STACK_MAX_DEPTH ||
            16 + 8 * s.depth != size) {
            snprintf(why, whylen, "bad stack record (id %u, depth %u, size %u)", aux, s.depth,
                     size);
            return -1;
        }
    } else if (type == MF_REC_STACK_NODE) {
        mf_rec_stack_node s;
        memcpy(&s, p, sizeof s);
        if (aux == 0 || aux > lim->max_id || s.caller >= aux || s.depth == 0 ||
            s.depth > MF_STACK_MAX_DEPTH || (s.caller == 0) != (s.depth == 1)) {
            snprintf(why, whylen, "bad stack node record (id %u, caller %u, depth %u)", aux,
                     s.caller, s.depth);
            return -1;
        }
    } else if (type == MF_REC_FRAME) {
        mf_rec_frame f;
        memcpy(&f, p, sizeof f);
        if (aux == 0 || aux > lim->max_id || f.function == 0) {
            snprintf(why, whylen, "bad frame record (id %u, function %u)", aux, f.function);
            return -1;
        }
    } else if (type == MF_REC_MODULE) {
        mf_rec_module m;
        memcpy(&m, p, sizeof m);
        if (m.build_id_len > sizeof m.build_id || m.end < m.start) {
            snprintf(why, whylen, "bad module record (build id length %u, %#llx..%#llx)",
                     m.build_id_len, (unsigned long long)m.start, (unsigned long long)m.end);
            return -1;
        }
    }
    return 0;
}

int mf_record_next(const uint8_t *p, size_t avail, size_t room, mf_chunk_state *st,
                   const mf_record_limits *lim, mf_record *r, char *why, size_t whylen)
{
    uint64_t word;
    if (avail < 8) {
        if (room >= 8 && avail > 0) {
            snprintf(why, whylen, "file truncated inside a record word");
            return -1;
        }
        return 0;              /* the chunk (or the file) ends here */
    }
    memcpy(&word, p, 8);
    if (word == 0)
        return 0;
    unsigned type = MF_WORD_TYPE(word), size = MF_WORD_SIZE(word);
    uint32_t aux = MF_WORD_AUX(word);
    if (type < 1 || type > MF_REC_TYPE_MAX) {
        snprintf(why, whylen, "unknown record type %u", type);
        return -1;
    }
    unsigned want = mf_record_fixed_size(type);
    if (!want && type != MF_REC_STRING && type != MF_REC_STACK) {
        snprintf(why, whylen, "unknown record type %u", type);   /* a number kept for later */
        return -1;
    }
    if (size < 16 || size % 8 || (want && size != want)) {
        snprintf(why, whylen, "record type %u has size %u (expected %u)", type, size,
                 want ? want : 16);
        return -1;
    }
    if (size > avail) {
        snprintf(why, whylen, size > room ? "record type %u runs past its chunk"
                                          : "file truncated inside a record of type %u", type);
        return -1;
    }
    if (check_payload(p, type, size, aux, lim, why, whylen) < 0)
        return -1;
    if (mf_record_is_compact(type) && !st->base_valid) {
        snprintf(why, whylen, "compact record type %u before any TIME record in its chunk", type);
        return -1;
    }
    return mf_record_step(p, avail, st, r);
}

static void decode_alloc(const uint8_t *p, mf_event *e, uint32_t aux)
{
    mf_rec_alloc a;
    memcpy(&a, p, sizeof a);
    e->device = (uint16_t)aux;
    e->alloc = (mf_ev_alloc){ .addr = a.addr, .requested = a.requested, .actual = a.actual,
                              .scope = a.scope, .name = a.name, .stack = a.stack,
                              .flags = (uint16_t)(aux >> 16) };
    if (a.tid)
        e->tid = a.tid;
}

static void decode_cpu_alloc(const uint8_t *p, unsigned type, mf_event *e)
{
    mf_rec_cpu_alloc_stack a = { 0 };
    memcpy(&a, p, type == MF_REC_CPU_ALLOC_STACK ? sizeof(mf_rec_cpu_alloc_stack)
                                                 : sizeof(mf_rec_cpu_alloc));
    e->type = MF_REC_ALLOC;
    e->alloc.addr = a.addr;
    e->alloc.requested = a.requested_flags & ((UINT64_C(1) << MF_CPU_SIZE_BITS) - 1);
    e->alloc.flags = (uint16_t)(a.requested_flags >> MF_CPU_SIZE_BITS);
    e->alloc.actual = e->alloc.requested + a.slack;
    e->alloc.scope = a.scope;
    e->alloc.stack = a.stack;
}

static void decode_other(const uint8_t *p, unsigned type, uint32_t aux, mf_event *e)
{
    switch (type) {
    case MF_REC_FREE: {
        mf_rec_free f;
        memcpy(&f, p, sizeof f);
        e->device = (uint16_t)aux;
        e->free = (mf_ev_free){ .addr = f.addr, .flags = (uint16_t)(aux >> 16) };
        break;
    }
    case MF_REC_SCOPE: {
        mf_rec_scope s;
        memcpy(&s, p, sizeof s);
        e->scope = (mf_ev_scope){ .scope = aux, .op = s.op & 0xff, .depth = s.depth & 0xffffff };
        break;
    }
    case MF_REC_SAMPLE:
        e->device = (uint16_t)aux;
        break;
    case MF_REC_ACTIVITY: {
        mf_rec_activity a;
        memcpy(&a, p, sizeof a);
        e->device = (uint16_t)aux;
        e->activity = (mf_ev_activity){ .end_ns = a.end_ns, .bytes = a.bytes,
                                        .correlation = a.correlation, .name = a.name,
                                        .stream = a.stream, .kind = (uint16_t)(aux >> 16) };
        break;
    }
    case MF_REC_STATE:
        e->state.op = aux;
        break;
    case MF_REC_NOTE: {
        mf_rec_note n;
        memcpy(&n, p, sizeof n);
        e->note = (mf_ev_note){ .value = n.value, .code = aux };
        break;
    }
    case MF_REC_POOL: {
        mf_rec_pool pl;
        memcpy(&pl, p, sizeof pl);
        e->device = (uint16_t)aux;
        e->pool = (mf_ev_pool){ .addr = pl.addr, .size = pl.size, .threshold = pl.threshold,
                                .op = aux >> 16 };
        break;
    }
    case MF_REC_TRACE: {
        mf_rec_trace t;
        memcpy(&t, p, sizeof t);
        e->trace = (mf_ev_trace){ .value = t.value, .domain = t.domain, .name = t.name,
                                  .arg = t.arg, .kind = (uint16_t)aux };
        if (t.tid)
            e->tid = t.tid;
        break;
    }
    case MF_REC_OOM: {
        mf_rec_oom o;
        memcpy(&o, p, sizeof o);
        e->device = (uint16_t)aux;
        e->oom = (mf_ev_oom){ .requested = o.requested, .device_free = o.device_free,
                              .device_limit = o.device_limit, .scope = o.scope,
                              .stack = o.stack, .route = (uint16_t)(aux >> 16) };
        break;
    }
    case MF_REC_SEGMENT: {
        mf_rec_segment sg;
        memcpy(&sg, p, sizeof sg);
        e->device = (uint16_t)aux;
        e->segment = (mf_ev_segment){ .addr = sg.addr, .size = sg.size,
                                      .op = (uint16_t)(aux >> 16) };
        break;
    }
    }
}

void mf_record_decode(const mf_record *r, const mf_chunk_state *st, mf_event *e)
{
    memset(e, 0, sizeof *e);
    e->time_ns = r->time_ns;
    e->tid = st->tid;
    e->type = (uint16_t)r->type;
    if (r->type == MF_REC_CPU_FREE) {
        mf_rec_cpu_free f;
        memcpy(&f, r->p, sizeof f);
        e->type = MF_REC_FREE;
        e->free.addr = f.addr_flags & ((UINT64_C(1) << MF_CPU_ADDR_BITS) - 1);
        e->free.flags = (uint16_t)(f.addr_flags >> MF_CPU_ADDR_BITS);
    } else if (r->type == MF_REC_CPU_ALLOC || r->type == MF_REC_CPU_ALLOC_STACK) {
        decode_cpu_alloc(r->p, r->type, e);
    } else if (r->type == MF_REC_ALLOC) {
        decode_alloc(r->p, e, r->aux);
    } else {
        decode_other(r->p, r->type, r->aux, e);
    }
}

void mf_record_sample_values(const mf_record *r, mf_sample_values *out)
{
    memcpy(out->value, r->p + offsetof(mf_rec_sample, value), sizeof out->value);
}

int mf_chunk_first_event(const uint8_t *chunk, size_t len, uint64_t *time_ns)
{
    mf_chunk_header ch;
    if (len < sizeof ch)
        return 0;
    memcpy(&ch, chunk, sizeof ch);
    if (ch.magic != MF_CHUNK_MAGIC)
        return 0;
    mf_chunk_state st = { 0, ch.tid, 0 };
    mf_record_limits lim = { UINT32_MAX - 2 };
    char why[128];
    for (size_t at = sizeof ch; at < len;) {
        mf_record r;
        if (mf_record_next(chunk + at, len - at, len - at, &st, &lim, &r, why, sizeof why) <= 0)
            return 0;
        if (r.cls == MF_CLASS_EVENT) {
            *time_ns = r.time_ns;
            return 1;
        }
        at += r.size;
    }
    return 0;
}
