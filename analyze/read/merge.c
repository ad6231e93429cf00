/*
 * merge.c - all logs' events in time order (see merge.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "merge.h"

#define WINDOW (64u << 10)

/* An event of an unsorted segment: where it is and when. */
typedef struct ref {
    uint64_t time;
    uint32_t offset;         /* of the record in its chunk */
    uint32_t tid;            /* the owner at that record */
} ref;

typedef struct cursor {
    mf_segment seg;
    int pseudo;              /* one event of the reader's own, in ev */
    mf_event ev;
    size_t position;         /* the chunk's position in its source's list, when last
                                looked up (chunk_position) */
    uint8_t *buf;            /* window (sorted) or the whole segment (unsorted) */
    uint32_t buf_begin, buf_len;
    uint32_t pos;            /* sorted: chunk offset of the next record */
    mf_chunk_state st;
    mf_record rec;           /* the current event's record */
    ref *refs;               /* unsorted: its events by time */
    uint32_t n_refs, next_ref;
    uint64_t time;           /* the current event: time and offset */
    uint32_t offset;
    int has;                 /* there is a current event */
} cursor;

/* Where an event stands in the order events come out in: time, then (at
 * equal times) the events of logs before the reader's own (process ends),
 * then log, chunk and offset.  The same for a reader of finished logs and
 * for one that follows them as they grow. */
typedef struct place {
    uint64_t time;
    uint32_t own;            /* 1: an event of the reader's own */
    uint32_t log;
    uint64_t chunk;
    uint32_t offset;
} place;

struct mf_merge {
    mf_rlog **const *logs;
    mf_scan_sink *sink;
    mf_segment *pending;     /* sorted by (min_ns, order) from head on */
    size_t head, n_pending, cap_pending;
    mf_event *extra;         /* events of the reader's own, sorted by time */
    size_t extra_head, n_extra, cap_extra;
    cursor **heap;
    size_t n_heap, cap_heap;
    uint64_t decoded;
    place last;              /* of the last event handed out */
    int any;                 /* an event was handed out */
    uint64_t late;           /* events added that sort before it */
    uint64_t late_ns;        /* the most they sorted before it */
};

mf_merge *mf_merge_new(mf_rlog **const *logs, mf_scan_sink *sink)
{
    mf_merge *m = calloc(1, sizeof *m);
    if (m) {
        m->logs = logs;
        m->sink = sink;
    }
    return m;
}

static void cursor_free(cursor *c)
{
    if (!c)
        return;
    free(c->buf);
    free(c->refs);
    free(c);
}

void mf_merge_free(mf_merge *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_heap; i++)
        cursor_free(m->heap[i]);
    free(m->heap);
    free(m->pending);
    free(m->extra);
    free(m);
}

uint64_t mf_merge_decoded(const mf_merge *m)
{
    return m->decoded;
}

/* ---- ordering -------------------------------------------------------------- */

static int place_before(const place *a, const place *b)
{
    if (a->time != b->time)
        return a->time < b->time;
    if (a->own != b->own)
        return a->own < b->own;
    if (a->log != b->log)
        return a->log < b->log;
    if (a->chunk != b->chunk)
        return a->chunk < b->chunk;
    return a->offset < b->offset;
}

/* The place of a segment's first event by time (at most). */
static place segment_place(const mf_segment *s)
{
    return (place){ s->min_ns, 0, s->log, s->chunk, s->begin };
}

static int segment_before(const mf_segment *a, const mf_segment *b)
{
    place x = segment_place(a), y = segment_place(b);
    return place_before(&x, &y);
}

/* Something that sorts before an event already handed out was added: the
 * events handed out are not those a reader of the finished logs gives. */
static void check_late(mf_merge *m, const place *p)
{
    if (m->any && place_before(p, &m->last)) {
        m->late++;
        uint64_t by = m->last.time - p->time;
        m->late_ns = by > m->late_ns ? by : m->late_ns;
    }
}

uint64_t mf_merge_late(const mf_merge *m, uint64_t *by_ns)
{
    if (by_ns)
        *by_ns = m->late_ns;
    return m->late;
}

static int compare_segments(const void *pa, const void *pb)
{
    const mf_segment *a = pa, *b = pb;
    return segment_before(a, b) ? -1 : segment_before(b, a);
}

/* The place of a cursor's current event. */
static place cursor_place(const cursor *c)
{
    return (place){ c->time, 0, c->seg.log, c->seg.chunk, c->offset };
}

/* (time, log, chunk, offset): the order events come out in. */
static int cursor_before(const cursor *a, const cursor *b)
{
    if (a->time != b->time)
        return a->time < b->time;
    if (a->seg.log != b->seg.log)
        return a->seg.log < b->seg.log;
    if (a->seg.chunk != b->seg.chunk)
        return a->seg.chunk < b->seg.chunk;
    return a->offset < b->offset;
}

static void sift_down(mf_merge *m, size_t i)
{
    cursor **h = m->heap;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < m->n_heap && cursor_before(h[l], h[best]))
            best = l;
        if (r < m->n_heap && cursor_before(h[r], h[best]))
            best = r;
        if (best == i)
            return;
        cursor *t = h[i];
        h[i] = h[best];
        h[best] = t;
        i = best;
    }
}

static int push(mf_merge *m, cursor *c)
{
    if (mf_grow((void **)&m->heap, &m->cap_heap, m->n_heap + 1, sizeof *m->heap) < 0)
        return -1;
    size_t i = m->n_heap++;
    m->heap[i] = c;
    while (i > 0 && cursor_before(m->heap[i], m->heap[(i - 1) / 2])) {
        cursor *t = m->heap[i];
        m->heap[i] = m->heap[(i - 1) / 2];
        m->heap[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
    return 0;
}

static void pop(mf_merge *m)
{
    cursor_free(m->heap[0]);
    m->heap[0] = m->heap[--m->n_heap];
    if (m->n_heap)
        sift_down(m, 0);
}

/* ---- adding --------------------------------------------------------------- */

int mf_merge_add(mf_merge *m, const mf_segment *segments, size_t n)
{
    if (n == 0)
        return 0;
    if (m->head > 4096 && m->head > m->n_pending / 2) {
        memmove(m->pending, m->pending + m->head, (m->n_pending - m->head) * sizeof *m->pending);
        m->n_pending -= m->head;
        m->head = 0;
    }
    if (mf_grow((void **)&m->pending, &m->cap_pending, m->n_pending + n, sizeof *m->pending) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        place p = segment_place(&segments[i]);
        check_late(m, &p);
    }
    memcpy(m->pending + m->n_pending, segments, n * sizeof *segments);
    m->n_pending += n;
    qsort(m->pending + m->head, m->n_pending - m->head, sizeof *m->pending, compare_segments);
    return 0;
}

static place extra_place(const mf_event *e)
{
    return (place){ e->time_ns, 1, e->log, 0, 0 };
}

int mf_merge_add_event(mf_merge *m, const mf_event *e)
{
    if (mf_grow((void **)&m->extra, &m->cap_extra, m->n_extra + 1, sizeof *m->extra) < 0)
        return -1;
    place p = extra_place(e);
    check_late(m, &p);
    size_t i = m->n_extra++;
    while (i > m->extra_head) {
        place q = extra_place(&m->extra[i - 1]);
        if (!place_before(&p, &q))
            break;
        m->extra[i] = m->extra[i - 1];
        i--;
    }
    m->extra[i] = *e;
    return 0;
}

int mf_merge_replace_event(mf_merge *m, const mf_event *old, const mf_event *e)
{
    for (size_t i = m->extra_head; i < m->n_extra; i++) {
        if (m->extra[i].log != old->log || m->extra[i].type != old->type ||
            m->extra[i].time_ns != old->time_ns)
            continue;
        memmove(&m->extra[i], &m->extra[i + 1], (m->n_extra - i - 1) * sizeof *m->extra);
        m->n_extra--;
        return mf_merge_add_event(m, e);
    }
    m->late++;               /* handed out already */
    return 0;
}

/* ---- reading a segment ------------------------------------------------------ */

/*
 * Where the cursor's chunk stands in its source's list now.  A log that is
 * followed while it grows can list a chunk after chunks of higher index (a
 * thread's chunk still staged while the next one was already in the file):
 * it goes in its place, and every chunk after it moves up one.  The
 * position found when the segment was opened is only a hint, checked
 * before every read, so that a window is never read from another chunk.
 */
static size_t chunk_position(const mf_rlog *log, cursor *c)
{
    size_t n;
    const mf_chunk_info *chunks = mf_chunk_source_chunks(log->src, &n);
    if (c->position >= n || chunks[c->position].index != c->seg.chunk)
        c->position = mf_rlog_chunk_position(log, c->seg.chunk);
    return c->position;
}

static int read_bytes(mf_merge *m, cursor *c, uint32_t from, uint32_t len, char *err,
                      size_t errlen)
{
    mf_rlog *log = (*m->logs)[c->seg.log];
    size_t position = chunk_position(log, c);
    if (position == SIZE_MAX) {  /* chunks are never unlisted: not expected */
        snprintf(err, errlen, "%s: chunk %llu is no longer listed", log->path,
                 (unsigned long long)c->seg.chunk);
        return -1;
    }
    long n = mf_chunk_source_read_at(log->src, position, from, c->buf, len, err, errlen);
    if (n < 0)
        return -1;
    c->buf_begin = from;
    c->buf_len = (uint32_t)n;
    return 0;
}

/* Move a sorted cursor to its next event (has = 0 at the segment's end). */
static int peek_sorted(mf_merge *m, cursor *c, char *err, size_t errlen)
{
    for (;;) {
        if (c->pos >= c->seg.end) {
            c->has = 0;
            return 0;
        }
        uint32_t off = c->pos - c->buf_begin;
        if (c->pos < c->buf_begin || off >= c->buf_len ||
            !mf_record_step(c->buf + off, c->buf_len - off, &c->st, &c->rec)) {
            uint32_t len = c->seg.end - c->pos < WINDOW ? c->seg.end - c->pos : WINDOW;
            if (c->buf_begin == c->pos && c->buf_len == len) {
                c->has = 0;  /* the bytes the scan accepted are gone */
                return 0;
            }
            if (read_bytes(m, c, c->pos, len, err, errlen) < 0)
                return -1;
            continue;
        }
        c->pos += c->rec.size;
        if (c->rec.cls == MF_CLASS_EVENT) {
            c->time = c->rec.time_ns;
            c->offset = c->pos - c->rec.size;
            c->has = 1;
            return 0;
        }
    }
}

static void peek_unsorted(cursor *c)
{
    if (c->next_ref >= c->n_refs) {
        c->has = 0;
        return;
    }
    const ref *r = &c->refs[c->next_ref];
    const uint8_t *p = c->buf + (r->offset - c->buf_begin);
    uint64_t word;
    memcpy(&word, p, 8);
    c->rec = (mf_record){ p, MF_WORD_TYPE(word), MF_WORD_SIZE(word), MF_WORD_AUX(word),
                          MF_CLASS_EVENT, r->time };
    c->st.tid = r->tid;
    c->time = r->time;
    c->offset = r->offset;
    c->has = 1;
}

static int compare_refs(const void *pa, const void *pb)
{
    const ref *a = pa, *b = pb;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* An unsorted segment: read whole, its events sorted by time. */
static int open_unsorted(mf_merge *m, cursor *c, char *err, size_t errlen)
{
    uint32_t len = c->seg.end - c->seg.begin;
    c->buf = malloc(len ? len : 1);
    c->refs = malloc((c->seg.events ? c->seg.events : 1) * sizeof *c->refs);
    if (!c->buf || !c->refs) {
        snprintf(err, errlen, "%s: out of memory while merging", (*m->logs)[c->seg.log]->path);
        return -1;
    }
    if (read_bytes(m, c, c->seg.begin, len, err, errlen) < 0)
        return -1;
    mf_chunk_state st = c->seg.state;
    mf_record r;
    for (uint32_t at = 0; at < c->buf_len && c->n_refs < c->seg.events; at += r.size) {
        if (!mf_record_step(c->buf + at, c->buf_len - at, &st, &r))
            break;
        if (r.cls == MF_CLASS_EVENT)
            c->refs[c->n_refs++] = (ref){ r.time_ns, c->seg.begin + at, st.tid };
    }
    qsort(c->refs, c->n_refs, sizeof *c->refs, compare_refs);
    peek_unsorted(c);
    return 0;
}

static int open_segment(mf_merge *m, const mf_segment *s, char *err, size_t errlen)
{
    mf_rlog *log = (*m->logs)[s->log];
    cursor *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "%s: out of memory while merging", log->path);
        return -1;
    }
    c->seg = *s;
    c->st = s->state;
    c->position = SIZE_MAX;
    int rc = 0;
    if (chunk_position(log, c) == SIZE_MAX) {
        c->has = 0;
    } else if (s->sorted) {
        c->pos = s->begin;
        c->buf_begin = s->begin;
        if (!(c->buf = malloc(WINDOW))) {
            snprintf(err, errlen, "%s: out of memory while merging", log->path);
            rc = -1;
        } else {
            rc = peek_sorted(m, c, err, errlen);
        }
    } else {
        rc = open_unsorted(m, c, err, errlen);
    }
    if (rc == 0 && c->has)
        rc = push(m, c);
    else
        cursor_free(c);
    return rc;
}

/* ---- emitting ------------------------------------------------------------------ */

/* Decode the cursor's current event into e with pool ids (a log's ids it
 * never wrote get placeholders, in this order: mf_event_strings's ids, an
 * ALLOC's name before its scope). */
static int decode(mf_merge *m, cursor *c, mf_event *e, mf_sample_values *samples, size_t slot)
{
    mf_rlog *log = (*m->logs)[c->seg.log];
    mf_rnames *names = &m->sink->names;
    uint32_t a = 0, b = 0, k = 0;
    mf_record_decode(&c->rec, &c->st, e);
    e->log = (uint16_t)c->seg.log;
    m->decoded++;
    switch (e->type) {
    case MF_REC_ALLOC:
        a = e->alloc.name = mf_rlog_string(log, names, e->alloc.name);
        k = e->alloc.stack = e->alloc.stack ? mf_rlog_stack(log, e->alloc.stack) : 0;
        b = e->alloc.scope = mf_rlog_string(log, names, e->alloc.scope);
        break;
    case MF_REC_SCOPE:
        a = e->scope.scope = mf_rlog_string(log, names, e->scope.scope);
        break;
    case MF_REC_TRACE:
        a = e->trace.domain = mf_rlog_string(log, names, e->trace.domain);
        b = e->trace.name = mf_rlog_string(log, names, e->trace.name);
        break;
    case MF_REC_ACTIVITY:
        a = e->activity.name = mf_rlog_string(log, names, e->activity.name);
        break;
    case MF_REC_OOM:
        a = e->oom.scope = mf_rlog_string(log, names, e->oom.scope);
        k = e->oom.stack = e->oom.stack ? mf_rlog_stack(log, e->oom.stack) : 0;
        break;
    case MF_REC_SAMPLE:
        mf_record_sample_values(&c->rec, &samples[slot]);
        e->sample.index = (uint32_t)slot;
        break;
    }
    return a == MF_STRINGS_FAILED || b == MF_STRINGS_FAILED || k == MF_STRINGS_FAILED ? -1 : 0;
}

static int advance(mf_merge *m, cursor *c, char *err, size_t errlen)
{
    if (c->seg.sorted)
        return peek_sorted(m, c, err, errlen);
    c->next_ref++;
    peek_unsorted(c);
    return 0;
}

/* Open every waiting segment that may hold an event before the heap's top. */
static int open_due(mf_merge *m, char *err, size_t errlen)
{
    while (m->head < m->n_pending) {
        const mf_segment *s = &m->pending[m->head];
        if (m->n_heap) {
            place top = cursor_place(m->heap[0]), first = segment_place(s);
            if (place_before(&top, &first))
                return 0;
        }
        m->head++;
        if (open_segment(m, s, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* The earliest time at which anything but the heap's top may come next:
 * the top's children (the other open segments), the next waiting segment,
 * the next event of the reader's own.  Events of the top before it come
 * out one after another with no heap work (a log of one thread: all). */
static uint64_t rivals_time(const mf_merge *m)
{
    uint64_t t = UINT64_MAX;
    for (size_t i = 1; i < 3 && i < m->n_heap; i++)
        t = m->heap[i]->time < t ? m->heap[i]->time : t;
    if (m->head < m->n_pending && m->pending[m->head].min_ns < t)
        t = m->pending[m->head].min_ns;
    if (m->extra_head < m->n_extra && m->extra[m->extra_head].time_ns < t)
        t = m->extra[m->extra_head].time_ns;
    return t;
}

long mf_merge_next(mf_merge *m, mf_event *out, mf_sample_values *samples, size_t max,
                   uint64_t until, char *err, size_t errlen)
{
    size_t n = 0;
    while (n < max) {
        if (open_due(m, err, errlen) < 0)
            return -1;
        uint64_t t = m->n_heap ? m->heap[0]->time : UINT64_MAX;
        /* open_due left the heap empty only when nothing waits: t is then the end */
        if (m->extra_head < m->n_extra && m->extra[m->extra_head].time_ns < t &&
            m->extra[m->extra_head].time_ns <= until) {
            m->last = extra_place(&m->extra[m->extra_head]);
            m->any = 1;
            out[n++] = m->extra[m->extra_head++];
            continue;
        }
        if (!m->n_heap || t > until)
            break;
        cursor *c = m->heap[0];
        uint64_t rivals = rivals_time(m);
        do {
            if (decode(m, c, &out[n], samples, n) < 0) {
                snprintf(err, errlen, "%s: out of memory while merging",
                         (*m->logs)[c->seg.log]->path);
                return -1;
            }
            m->last = cursor_place(c);
            m->any = 1;
            n++;
            if (advance(m, c, err, errlen) < 0)
                return -1;
        } while (n < max && c->has && c->time < rivals && c->time <= until);
        if (c->has)
            sift_down(m, 0);
        else
            pop(m);
    }
    return (long)n;
}
