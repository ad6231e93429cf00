/*
 * log_scan.c - the reader's first pass over a log: every chunk once (and,
 * for a log still being written, what each chunk gained since the last
 * look).  It checks every record (record.c), stops a chunk at its first
 * damage, collects what events refer to (strings, stacks, thread and
 * device names) and describes each run of accepted records as a segment
 * for the merge: its time range and whether its times ever go back.  It
 * decodes no event; it keeps no event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "reader_internal.h"

size_t mf_rlog_chunk_position(const mf_rlog *log, uint64_t index)
{
    size_t n;
    const mf_chunk_info *c = mf_chunk_source_chunks(log->src, &n);
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].index == index)
            return mid;
        if (c[mid].index < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SIZE_MAX;
}

/* The pool id of own id t (given now if it has none). */
static uint32_t publish(mf_rnames *n, uint32_t t)
{
    if (t <= MF_STRING_DEFAULT_SCOPE)
        return t;
    if (t < n->n_pub && n->pub[t])
        return n->pub[t];
    if (mf_grow_filled((void **)&n->pub, &n->n_pub, (size_t)t + 1, sizeof *n->pub, 0) < 0)
        return MF_STRINGS_FAILED;
    const char *text = mf_strings_get(n->texts, t);
    uint32_t g = mf_strings_intern(n->pool, text, strlen(text));
    if (g != MF_STRINGS_FAILED)
        n->pub[t] = g;
    return g;
}

static int placeholder(char *buf, size_t len, uint32_t id)
{
    return snprintf(buf, len, "?%u", id);
}

/* The own id of a log's string id (0, 1: the fixed ids), a placeholder's
 * made if the log has not written it; MF_STRINGS_FAILED when out of memory. */
static uint32_t own_id(mf_rlog *log, mf_rnames *names, uint32_t id)
{
    if (id == MF_STRING_UNKNOWN)
        return 0;
    uint32_t t = mf_idmap_get(&log->strings, id);
    if (!t && id == MF_STRING_DEFAULT_SCOPE)
        return 1;
    if (!t) {
        char text[16];
        int len = placeholder(text, sizeof text, id);
        t = mf_strings_intern(names->texts, text, (size_t)len);
        if (t == MF_STRINGS_FAILED || mf_idmap_set(&log->strings, id, t) < 0)
            return MF_STRINGS_FAILED;
    }
    return t;
}

uint32_t mf_rlog_string_map(mf_rlog *log, mf_rnames *names, uint32_t id)
{
    uint32_t t = own_id(log, names, id);
    uint32_t g = t == MF_STRINGS_FAILED ? t : publish(names, t);
    if (g != MF_STRINGS_FAILED) {   /* remembered until the scan reads a STRING record */
        log->memo_id = id;
        log->memo_pool = g;
    }
    return g;
}

const char *mf_rlog_text(mf_rlog *log, mf_rnames *names, uint32_t id)
{
    uint32_t t = own_id(log, names, id);
    return t == MF_STRINGS_FAILED ? NULL : mf_strings_get(names->texts, t);
}

uint32_t mf_rlog_stack(mf_rlog *log, uint32_t id)
{
    uint32_t k = mf_idmap_get(&log->stacks, id);
    if (k == MF_STACK_MISSED)
        return 0;
    if (!k)                  /* not written (yet): the event goes without it */
        return mf_idmap_set(&log->stacks, id, MF_STACK_MISSED) < 0 ? MF_STRINGS_FAILED : 0;
    return k;
}

/* A STRING record: the text gets an own id; a placeholder made before the
 * record was read (an event named the id first) gets the text, in the pool
 * too if it was handed out there (then counted late). */
static int on_string(mf_rlog *log, mf_rnames *names, const mf_record *r)
{
    log->memo_id = 0;        /* the id it names may map elsewhere now */
    mf_rec_string s;
    memcpy(&s, r->p, sizeof s);
    const char *text = (const char *)r->p + sizeof s;
    uint32_t old = mf_idmap_get(&log->strings, r->aux);
    if (old) {
        char ph[16];
        placeholder(ph, sizeof ph, r->aux);
        if (strcmp(mf_strings_get(names->texts, old), ph) != 0)
            return 0;        /* written twice (identically) */
        if (mf_strings_replace(names->texts, old, text, s.len) < 0)
            return -1;
        if (old < names->n_pub && names->pub[old]) {
            names->late++;
            return mf_strings_replace(names->pool, names->pub[old], text, s.len);
        }
        return 0;
    }
    uint32_t t = mf_strings_intern(names->texts, text, s.len);
    return t == MF_STRINGS_FAILED ? -1 : mf_idmap_set(&log->strings, r->aux, t);
}

/* A THREAD or DEVICE record waits (its name unresolved) to be handed out
 * after the events (reader.c). */
static int add_meta(mf_scan_sink *sink, const mf_event *e, uint32_t name, uint64_t chunk,
                    uint32_t offset)
{
    if (mf_grow((void **)&sink->meta, &sink->cap_meta, sink->n_meta + 1, sizeof *sink->meta) < 0)
        return -1;
    sink->meta[sink->n_meta++] = (mf_meta_ref){ *e, name, offset, chunk };
    return 0;
}

static int on_thread(uint32_t li, mf_scan_sink *sink, const mf_record *r, uint64_t chunk,
                     uint32_t offset)
{
    mf_rec_thread t;
    memcpy(&t, r->p, sizeof t);
    mf_event e = { .type = MF_REC_THREAD, .tid = t.tid, .log = (uint16_t)li };
    return add_meta(sink, &e, r->aux, chunk, offset);
}

/* The reader's next stack, for the log's stack id `id` (nothing when the
 * log wrote it twice); one an event or a node named before its record was
 * read counts as late. */
static int add_stack(mf_rlog *log, mf_scan_sink *sink, uint32_t id, const mf_stack_ref *ref)
{
    uint32_t k = mf_idmap_get(&log->stacks, id);
    if (k && k != MF_STACK_MISSED)
        return 0;
    if (k == MF_STACK_MISSED)
        sink->late_stacks++;
    if (mf_grow((void **)&sink->stacks, &sink->cap_stacks, sink->n_stacks + 1,
                sizeof *sink->stacks) < 0)
        return -1;
    sink->stacks[sink->n_stacks++] = *ref;
    return mf_idmap_set(&log->stacks, id, (uint32_t)sink->n_stacks);
}

static int on_stack(mf_rlog *log, uint32_t li, mf_scan_sink *sink, const mf_record *r,
                    uint64_t chunk, uint32_t offset)
{
    mf_rec_stack s;
    memcpy(&s, r->p, sizeof s);
    mf_stack_ref ref = { li, s.depth, chunk, offset, 0, 0 };
    return add_stack(log, sink, r->aux, &ref);
}

/* A STACK_NODE record: the reader's next stack id, its frame and its
 * caller's id in its log (found when the stack is first read: the caller
 * may sit in a chunk scanned later; one not read by then cuts the stack
 * there, and counts as late when it comes: mf_reader_stack). */
static int on_stack_node(mf_rlog *log, uint32_t li, mf_scan_sink *sink, const mf_record *r)
{
    mf_rec_stack_node s;
    memcpy(&s, r->p, sizeof s);
    mf_stack_ref ref = { li, s.depth, MF_STACK_NODE_REF, s.caller, 0, s.entry };
    return add_stack(log, sink, r->aux, &ref);
}

/* A FRAME record: the reader's next frame id; its texts stay the log's
 * string ids until it is asked for (mf_reader_frame).  One a stack named
 * before it was read (handed out unknown) counts as late. */
static int on_frame(mf_rlog *log, uint32_t li, mf_scan_sink *sink, const mf_record *r)
{
    uint32_t k = mf_idmap_get(&log->frames, r->aux);
    if (k && k != MF_STACK_MISSED)
        return 0;            /* written twice (identically) */
    if (k == MF_STACK_MISSED)
        sink->late_stacks++;
    mf_rec_frame f;
    memcpy(&f, r->p, sizeof f);
    if (mf_grow((void **)&sink->frames, &sink->cap_frames, sink->n_frames + 1,
                sizeof *sink->frames) < 0)
        return -1;
    sink->frames[sink->n_frames++] =
        (mf_frame_ref){ li, f.function, f.file, 0, { 0, 0, f.line, f.kind } };
    return mf_idmap_set(&log->frames, r->aux, (uint32_t)sink->n_frames);
}

/* A MODULE record, in its place among the log's modules by where it
 * stands in the file (chunk, offset: a reader of the finished log has them
 * in that order, whatever order chunks are found in); its path (the log's
 * string id, in module_paths) gets its text when the modules are asked for
 * (mf_reader_modules). */
static int on_module(mf_rlog *log, const mf_record *r, uint64_t chunk, uint32_t offset)
{
    mf_rec_module m;
    memcpy(&m, r->p, sizeof m);
    size_t cap = log->cap_modules, cap2 = log->cap_modules;
    if (mf_grow((void **)&log->modules, &log->cap_modules, log->n_modules + 1,
                sizeof *log->modules) < 0 ||
        mf_grow((void **)&log->module_paths, &cap, log->n_modules + 1,
                sizeof *log->module_paths) < 0 ||
        mf_grow((void **)&log->module_at, &cap2, log->n_modules + 1, sizeof *log->module_at) < 0)
        return -1;
    uint64_t at = chunk << 21 | offset;
    size_t i = log->n_modules++;
    for (; i > 0 && log->module_at[i - 1] > at; i--) {
        log->modules[i] = log->modules[i - 1];
        log->module_paths[i] = log->module_paths[i - 1];
        log->module_at[i] = log->module_at[i - 1];
    }
    if (i < log->modules_named)
        log->modules_named = i;      /* named again from here on */
    log->module_paths[i] = r->aux;
    log->module_at[i] = at;
    mf_module *out = &log->modules[i];
    *out = (mf_module){ .path = NULL, .bias = m.bias, .start = m.start, .end = m.end };
    out->build_id_len = m.build_id_len < sizeof out->build_id ? m.build_id_len
                                                              : sizeof out->build_id;
    memcpy(out->build_id, m.build_id, sizeof out->build_id);
    return 0;
}

static int on_device(uint32_t li, mf_scan_sink *sink, const mf_record *r, uint64_t chunk,
                     uint32_t offset)
{
    mf_rec_device d;
    memcpy(&d, r->p, sizeof d);
    mf_event e = { .type = MF_REC_DEVICE, .device = (uint16_t)r->aux, .log = (uint16_t)li,
                   .gpu = { .total_bytes = d.total_bytes, .mig = d.mig, .pci_bus = d.pci_bus } };
    memcpy(e.gpu.uuid, d.uuid, sizeof e.gpu.uuid);
    return add_meta(sink, &e, d.name, chunk, offset);
}

static int on_meta(mf_rlog *log, uint32_t li, mf_scan_sink *sink, const mf_record *r,
                   uint64_t chunk, uint32_t offset)
{
    switch (r->type) {
    case MF_REC_STRING: return on_string(log, &sink->names, r);
    case MF_REC_THREAD: return on_thread(li, sink, r, chunk, offset);
    case MF_REC_STACK: return on_stack(log, li, sink, r, chunk, offset);
    case MF_REC_DEVICE: return on_device(li, sink, r, chunk, offset);
    case MF_REC_MODULE: return on_module(log, r, chunk, offset);
    case MF_REC_FRAME: return on_frame(log, li, sink, r);
    case MF_REC_STACK_NODE: return on_stack_node(log, li, sink, r);
    }
    return 0;
}

/* The chunk header, on the first look at a chunk.  0 if good. */
static int check_chunk_header(mf_rlog *log, const uint8_t *buf, const mf_chunk_info *info)
{
    mf_chunk_header ch;
    memcpy(&ch, buf, sizeof ch);
    if (ch.magic == 0) {       /* listed only when it holds data (mf_chunk_source_settle) */
        mf_damage_add(&log->damage, log->path, info->file_offset,
                      "the chunk's header is zeros (a hole: a torn write, a bad sector), but "
                      "the chunk holds data: its records are lost");
        return -1;
    }
    if (ch.magic != MF_CHUNK_MAGIC) {
        mf_damage_add(&log->damage, log->path, info->file_offset,
                      "bad chunk magic 0x%08x (expected 0x%08x)", ch.magic, MF_CHUNK_MAGIC);
        return -1;
    }
    if (ch.index != info->index) {
        mf_damage_add(&log->damage, log->path, info->file_offset + 4,
                      "chunk says it is chunk %u, but stands at chunk %llu", ch.index,
                      (unsigned long long)info->index);
        return -1;
    }
    return 0;
}

/* The chunk header's seal into sc->sealed; one that cannot be is damage
 * (and no seal). */
static void check_seal(mf_rlog *log, mf_scan_chunk *sc, const uint8_t *header,
                       const mf_chunk_info *info)
{
    mf_chunk_header ch;
    memcpy(&ch, header, sizeof ch);
    sc->sealed = ch.sealed;
    if (ch.sealed == 0 || (ch.sealed >= sizeof ch && ch.sealed <= MF_CHUNK_SIZE &&
                           ch.sealed % 8 == 0))
        return;
    mf_damage_add(&log->damage, log->path, info->file_offset + 12,
                  "bad chunk seal %u (a chunk's records end inside its %u bytes, at a "
                  "multiple of 8)", ch.sealed, MF_CHUNK_SIZE);
    sc->sealed = 0;
}

/* A chunk looked at again: its seal as it stands now (it may have been
 * sealed since the last look, when it filled or its thread ended, or a
 * staged copy of it reached further). */
static int reread_seal(mf_rlog *log, size_t p, mf_scan_chunk *sc, const mf_chunk_info *info,
                       char *err, size_t errlen)
{
    uint8_t header[sizeof(mf_chunk_header)];
    long n = mf_chunk_source_read_at(log->src, p, 0, header, sizeof header, err, errlen);
    if (n < 0)
        return -1;
    mf_chunk_header ch;
    memcpy(&ch, header, sizeof ch);
    if (ch.sealed != sc->sealed && (size_t)n == sizeof header)
        check_seal(log, sc, header, info);
    return 0;
}

/* Records a resumed walk must check before a run of them is believed: a
 * word inside a record that happens to look like a record word passes its
 * checks about once in 2^28 words; four in a row, or a run that ends where
 * records end, do not happen by chance. */
#define RESUME_CHECKED 4

/* Whether records run from p (avail bytes from the file, room to the end of
 * the chunk): RESUME_CHECKED of them pass every check, or at least one does
 * and the run then ends (a zero word, the end of the bytes). */
static int records_run(const mf_rlog *log, const uint8_t *p, size_t avail, size_t room,
                       mf_chunk_state st)
{
    char why[256];
    size_t at = 0;
    st.base_valid = 1; /* the time base before the hole stands in for the lost one */
    for (int n = 0; n < RESUME_CHECKED; n++) {
        mf_record r;
        int rc = mf_record_next(p + at, avail > at ? avail - at : 0, room - at, &st,
                                &log->limits, &r, why, sizeof why);
        if (rc <= 0)
            return rc == 0 && n > 0;
        at += r.size;
    }
    return 1;
}

/*
 * The walk of a chunk met a zero record word at buf offset `at` (chunk
 * offset stop + at; buf holds n bytes from the file): the end of what was
 * written, or a hole (a zeroed page: a torn write, a bad sector, a sparse
 * hole after a crash)?  A hole when records start again after the zeros:
 * returns their buf offset.  0 otherwise: the end - unless the chunk's seal
 * says its records reach further, which *lost says.
 */
static size_t find_resume(const mf_rlog *log, const uint8_t *buf, size_t n, size_t at,
                          uint32_t stop, uint32_t sealed, const mf_chunk_state *st, int *lost)
{
    *lost = sealed > stop + at;
    for (size_t z = at + 8; z + 8 <= n; z += 8) {
        uint64_t word;
        memcpy(&word, buf + z, 8);
        if (word && records_run(log, buf + z, n - z, MF_CHUNK_SIZE - (stop + z), *st)) {
            *lost = 0;
            return z;
        }
    }
    return 0;
}

/* A segment of chunk sc's records starting at chunk offset begin. */
static mf_segment segment_at(uint32_t li, const mf_scan_chunk *sc, uint32_t begin,
                             mf_chunk_state st)
{
    return (mf_segment){ .log = li, .chunk = sc->index, .begin = begin, .min_ns = UINT64_MAX,
                         .state = st, .sorted = 1 };
}

/* Hand the merge a segment that ends at chunk offset end (none if empty). */
static int add_segment(mf_rlog *log, mf_scan_sink *sink, mf_segment *seg, uint32_t end)
{
    seg->end = end;
    if (seg->events == 0)
        return 0;
    log->events += seg->events;
    log->first_ns = seg->min_ns < log->first_ns ? seg->min_ns : log->first_ns;
    log->last_ns = seg->max_ns > log->last_ns ? seg->max_ns : log->last_ns;
    seg->order = sink->next_order++;
    if (mf_grow((void **)&sink->segments, &sink->cap_segments, sink->n_segments + 1,
                sizeof *sink->segments) < 0)
        return -1;
    sink->segments[sink->n_segments++] = *seg;
    return 0;
}

/*
 * A zero word at buf offset at: 0 at the end of what was written; 1 after
 * a hole (reported; the records resume at *at, with *st's time base
 * standing in for the one lost in the hole).
 */
static int judge_zero_word(mf_rlog *log, mf_scan_chunk *sc, const mf_chunk_info *info,
                           const uint8_t *buf, size_t n, size_t *at, mf_chunk_state *st)
{
    if (log->writing)
        return 0;
    int lost;
    size_t z = find_resume(log, buf, n, *at, sc->stop, sc->sealed, st, &lost);
    uint64_t from = info->file_offset + sc->stop + *at;
    if (lost) {
        mf_damage_add(&log->damage, log->path, from,
                      "the chunk's records stop at a zero word, but its seal says they reach "
                      "offset %llu: the %llu bytes between are zeros (a hole: a torn write, a "
                      "bad sector) and their records are lost",
                      (unsigned long long)(info->file_offset + sc->sealed),
                      (unsigned long long)(sc->sealed - (sc->stop + *at)));
        sc->done = 1;
    }
    if (!z)
        return 0;
    mf_damage_add(&log->damage, log->path, from,
                  "a hole: %llu bytes of zeros inside the chunk's records%s; the records in "
                  "it are lost, reading resumes at offset %llu",
                  (unsigned long long)(z - *at), sc->sealed > sc->stop + *at
                      ? " (its seal says they reach further)" : "",
                  (unsigned long long)(info->file_offset + sc->stop + z));
    *at = z;
    st->base_valid = 1;
    return 1;
}

/* Walk buf (n bytes from the file, the chunk's bytes from sc->stop on). */
static int walk(mf_rlog *log, uint32_t li, mf_scan_sink *sink, mf_scan_chunk *sc,
                const mf_chunk_info *info, const uint8_t *buf, size_t n)
{
    mf_segment seg = segment_at(li, sc, sc->stop, sc->state);
    mf_chunk_state st = sc->state;
    uint64_t last = 0;
    size_t at = 0;
    char why[256];
    for (;;) {
        mf_record r;
        size_t room = MF_CHUNK_SIZE - (sc->stop + at);
        int rc = mf_record_next(buf + at, n > at ? n - at : 0, room, &st, &log->limits, &r, why,
                                sizeof why);
        if (rc < 0) {
            mf_damage_add(&log->damage, log->path, info->file_offset + sc->stop + at, "%s", why);
            sc->done = 1;
        }
        if (rc == 0 && at + 8 <= n && judge_zero_word(log, sc, info, buf, n, &at, &st)) {
            if (add_segment(log, sink, &seg, sc->stop + (uint32_t)(seg.end = 0, at)) < 0)
                return -1;
            seg = segment_at(li, sc, sc->stop + (uint32_t)at, st);
            last = 0;
            continue;
        }
        if (rc <= 0)
            break;
        log->records++;
        sink->scanned++;
        if (r.cls == MF_CLASS_EVENT) {
            uint64_t t = r.time_ns;
            seg.events++;
            seg.sorted &= t >= last;
            last = t;
            seg.min_ns = t < seg.min_ns ? t : seg.min_ns;
            seg.max_ns = t > seg.max_ns ? t : seg.max_ns;
        } else if (r.cls == MF_CLASS_META &&
                   on_meta(log, li, sink, &r, sc->index, (uint32_t)(sc->stop + at)) < 0) {
            return -1;
        }
        at += r.size;
    }
    sc->stop += (uint32_t)at;
    sc->state = st;
    if (sc->stop + 8 > MF_CHUNK_SIZE)
        sc->done = 1;
    return add_segment(log, sink, &seg, sc->stop);
}

/*
 * Of the n bytes read from chunk offset sc->stop on, how many the walk may
 * believe.  While a staged log may still be copied into (mf_reader_add_log),
 * a sealed chunk's records only up to its seal: a staged chunk reaches the log by
 * pwrite, which copies a record's word (its first bytes) before the rest,
 * and its seal is written after the records it covers (stage_slots.c), so
 * past the seal a record may be half there.  An unsealed chunk (one the
 * program maps and fills itself, storing each record's word last) up to
 * its first zero word; so is any chunk of a log the process writes itself
 * (a thread may write on past a seal there), and of any log once nothing
 * writes it any more.
 */
static size_t readable(const mf_rlog *log, const mf_scan_chunk *sc, size_t n)
{
    if (!log->staged || !log->writing || !sc->sealed)
        return n;
    size_t sealed = sc->sealed > sc->stop ? sc->sealed - sc->stop : 0;
    return n < sealed ? n : sealed;
}

/* Scan chunk source position p whose state is sc (new: stop 0). */
static int scan_chunk(mf_rlog *log, uint32_t li, mf_scan_sink *sink, size_t p,
                      mf_scan_chunk *sc, uint8_t *buf, char *err, size_t errlen)
{
    size_t n_chunks;
    const mf_chunk_info *info = &mf_chunk_source_chunks(log->src, &n_chunks)[p];
    long n = mf_chunk_source_read_at(log->src, p, sc->stop, buf, MF_CHUNK_SIZE - sc->stop, err,
                                     errlen);
    if (n == MF_CHUNK_DAMAGED) { /* a compact frame that fails its checks: the chunk is lost */
        mf_damage_add_line(&log->damage, err);
        sc->done = 1;
        return 0;
    }
    if (n < 0)
        return -1;
    if (sc->stop == 0) {
        if ((size_t)n < sizeof(mf_chunk_header))
            return 0;        /* the header is not all there yet */
        if (check_chunk_header(log, buf, info) < 0) {
            sc->done = 1;
            return 0;
        }
        check_seal(log, sc, buf, info);
        sc->stop = sizeof(mf_chunk_header);
        sc->state = (mf_chunk_state){ 0, info->tid, 0 };
        buf += sizeof(mf_chunk_header);
        n -= (long)sizeof(mf_chunk_header);
    } else if (reread_seal(log, p, sc, info, err, errlen) < 0) {
        return -1;
    }
    if (walk(log, li, sink, sc, info, buf, readable(log, sc, (size_t)n)) < 0) {
        snprintf(err, errlen, "%s: out of memory while reading the log", log->path);
        return -1;
    }
    return 0;
}

/* Make log->chunks hold a state for every chunk of the source, in index order. */
static int sync_chunks(mf_rlog *log)
{
    size_t n;
    const mf_chunk_info *c = mf_chunk_source_chunks(log->src, &n);
    if (n == log->n_chunks)
        return 0;
    mf_scan_chunk *all = calloc(n ? n : 1, sizeof *all);
    if (!all)
        return -1;
    size_t old = 0;
    for (size_t i = 0; i < n; i++) {
        while (old < log->n_chunks && log->chunks[old].index < c[i].index)
            old++;
        if (old < log->n_chunks && log->chunks[old].index == c[i].index)
            all[i] = log->chunks[old];
        else
            all[i] = (mf_scan_chunk){ .index = c[i].index };
    }
    free(log->chunks);
    log->chunks = all;
    log->n_chunks = log->cap_chunks = n;
    return 0;
}

int mf_scan_log(mf_rlog *log, uint32_t li, mf_scan_sink *sink, char *err, size_t errlen)
{
    if (sync_chunks(log) < 0) {
        snprintf(err, errlen, "%s: out of memory while reading the log", log->path);
        return -1;
    }
    /* ids are dense from 1: the log cannot hold more than one per 16 bytes */
    log->limits.max_id = (uint32_t)((log->n_chunks + 1) * (MF_CHUNK_SIZE / 16) > UINT32_MAX - 2
                                        ? UINT32_MAX - 2
                                        : (log->n_chunks + 1) * (MF_CHUNK_SIZE / 16));
    uint8_t *buf = malloc(MF_CHUNK_SIZE);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory while reading the log", log->path);
        return -1;
    }
    int rc = 0;
    for (size_t p = 0; p < log->n_chunks && rc == 0; p++)
        if (!log->chunks[p].done)
            rc = scan_chunk(log, li, sink, p, &log->chunks[p], buf, err, errlen);
    free(buf);
    return rc;
}
