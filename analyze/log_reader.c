/*
 * log_reader.c - validate and decode a memflow log.
 *
 * The file is mapped read-only and walked chunk by chunk (a compact log,
 * analyze/compact.h, is read chunk by chunk through its chunk source
 * instead).  Every record is
 * checked (known type, the size its type demands, inside its chunk) before
 * it is decoded.  Damage in a chunk ends that chunk only: every record
 * before it, and every other chunk, is kept, and the first damage is
 * reported as "FILE: offset N: what".  The decoded events are then sorted
 * by time (stable), unless they already are.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chunk_source.h"
#include "grow.h"
#include "log_reader.h"

#define MAX_STRING_ID (1u << 26)

typedef struct reader {
    mf_log *log;
    const char *base;
    uint64_t file_size;
    size_t cap_events;
    size_t cap_samples;
    size_t cap_modules;
    uint32_t *thread_tids;   /* THREAD records: tid -> name id */
    uint32_t *thread_names;
    size_t n_threads, cap_threads;
} reader;

/* mf_log keeps the thread table behind the public struct. */
typedef struct log_private {
    mf_log pub;
    uint32_t *thread_tids;
    uint32_t *thread_names;
    size_t n_threads;
    char missing[32];
} log_private;

static void damage(reader *r, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void damage(reader *r, uint64_t offset, const char *fmt, ...)
{
    if (r->log->damaged)
        return;
    r->log->damaged = 1;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(r->log->damage, sizeof r->log->damage, "%s: offset %llu: %s", r->log->path,
             (unsigned long long)offset, what);
}

int mf_grow(void **array, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(*array, n * elem);
    if (!p)
        return -1;
    *array = p;
    *cap = n;
    return 0;
}

static mf_event *new_event(reader *r, unsigned type, uint32_t tid)
{
    mf_log *log = r->log;
    if (mf_grow((void **)&log->events, &r->cap_events, log->n_events + 1, sizeof(mf_event)) < 0)
        return NULL;
    mf_event *e = &log->events[log->n_events++];
    memset(e, 0, sizeof *e);
    e->type = (uint16_t)type;
    e->tid = tid;
    return e;
}

static int set_string(reader *r, uint32_t id, const char *text, uint32_t len)
{
    mf_log *log = r->log;
    if (id >= log->n_strings) {
        uint32_t n = log->n_strings ? log->n_strings : 64;
        while (n <= id)
            n *= 2;
        char **s = realloc(log->strings, n * sizeof *s);
        if (!s)
            return -1;
        memset(s + log->n_strings, 0, (n - log->n_strings) * sizeof *s);
        log->strings = s;
        log->n_strings = n;
    }
    if (log->strings[id])
        return 0; /* a string may be written twice (log open vs. intern) */
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, text, len);
    copy[len] = 0;
    log->strings[id] = copy;
    return 0;
}

static int add_thread(reader *r, uint32_t tid, uint32_t name)
{
    size_t cap = r->cap_threads;
    if (mf_grow((void **)&r->thread_tids, &cap, r->n_threads + 1, sizeof(uint32_t)) < 0)
        return -1;
    cap = r->cap_threads;
    if (mf_grow((void **)&r->thread_names, &cap, r->n_threads + 1, sizeof(uint32_t)) < 0)
        return -1;
    r->cap_threads = cap;
    r->thread_tids[r->n_threads] = tid;
    r->thread_names[r->n_threads++] = name;
    return 0;
}

/* ---- call stacks and trace objects ----------------------------------------
 * STACK, CPU_ALLOC_STACK and MODULE (memflow run --stacks), and TRACE (trace
 * objects, NVTX ranges), decoded here in one place: stacks and modules go to
 * tables of the log, like strings; an allocation carries its stack id in
 * mf_event.extra; a TRACE record becomes an event of type MF_REC_TRACE. */

#define MAX_STACK_ID (1u << 26)

/* Whether a STACK record's depth agrees with its size and its id is sane. */
static int stack_record_ok(const char *p, unsigned size, uint32_t id)
{
    const mf_rec_stack *st = (const void *)p;
    return id != 0 && id < MAX_STACK_ID && st->depth >= 1 &&
           st->depth <= MF_STACK_MAX_DEPTH && size == sizeof *st + 8u * st->depth;
}

static int set_stack(reader *r, const char *p, uint32_t id)
{
    mf_log *log = r->log;
    const mf_rec_stack *st = (const void *)p;
    if (id >= log->n_stacks) {
        uint32_t n = log->n_stacks ? log->n_stacks : 64;
        while (n <= id)
            n *= 2;
        mf_stack *grown = realloc(log->stacks, n * sizeof *grown);
        if (!grown)
            return -1;
        memset(grown + log->n_stacks, 0, (n - log->n_stacks) * sizeof *grown);
        log->stacks = grown;
        log->n_stacks = n;
    }
    if (log->stacks[id].depth)
        return 0; /* written again after a fork: the same stack */
    uint64_t *ip = malloc(st->depth * sizeof *ip);
    if (!ip)
        return -1;
    memcpy(ip, st + 1, st->depth * sizeof *ip);
    log->stacks[id] = (mf_stack){ st->depth, ip };
    return 0;
}

static int add_module(reader *r, const char *p, uint32_t path)
{
    mf_log *log = r->log;
    const mf_rec_module *m = (const void *)p;
    if (mf_grow((void **)&log->modules, &r->cap_modules, log->n_modules + 1,
                sizeof(mf_module)) < 0)
        return -1;
    mf_module *out = &log->modules[log->n_modules++];
    out->path = path;
    out->build_id_len = m->build_id_len <= sizeof out->build_id ? m->build_id_len
                                                               : sizeof out->build_id;
    out->bias = m->bias;
    out->start = m->start;
    out->end = m->end;
    memcpy(out->build_id, m->build_id, sizeof out->build_id);
    return 0;
}

static void decode_trace(mf_event *e, const char *p, uint32_t kind)
{
    const mf_rec_trace *t = (const void *)p;
    e->time_ns = t->time_ns;
    e->addr = t->value;
    e->scope = t->domain;
    e->name = t->name;
    e->tid = t->tid;
    e->actual = t->arg;
    e->extra = kind;
}

/* ---- the other records ------------------------------------------------- */

/* Decode one validated record.  Returns -1 on out of memory. */
static int decode(reader *r, const char *p, unsigned type, uint32_t aux, uint32_t tid)
{
    mf_event *e;
    if (type == MF_REC_STRING) {
        const mf_rec_string *s = (const void *)p;
        return set_string(r, aux, (const char *)(s + 1), s->len);
    }
    if (type == MF_REC_THREAD) {
        const mf_rec_thread *t = (const void *)p;
        return add_thread(r, t->tid, aux);
    }
    if (type == MF_REC_STACK)
        return set_stack(r, p, aux);
    if (type == MF_REC_MODULE)
        return add_module(r, p, aux);
    if (type == MF_REC_DEVICE)
        return 0; /* what a GPU is, not an event in time: no time 0 on the axis */
    if (!(e = new_event(r, type, tid)))
        return -1;
    switch (type) {
    case MF_REC_ALLOC: {
        const mf_rec_alloc *a = (const void *)p;
        e->time_ns = a->time_ns;
        e->addr = a->addr;
        e->size = a->requested;
        e->actual = a->actual;
        e->scope = a->scope;
        e->name = a->name;
        e->tid = a->tid ? a->tid : tid;
        e->extra = a->stack;
        e->device = (uint16_t)aux;
        e->flags = (uint16_t)(aux >> 16);
        break;
    }
    case MF_REC_TRACE:
        decode_trace(e, p, aux);
        break;
    case MF_REC_FREE: {
        const mf_rec_free *f = (const void *)p;
        e->time_ns = f->time_ns;
        e->addr = f->addr;
        e->device = (uint16_t)aux;
        e->flags = (uint16_t)(aux >> 16);
        break;
    }
    case MF_REC_SCOPE: {
        const mf_rec_scope *s = (const void *)p;
        e->time_ns = s->time_ns;
        e->scope = aux;
        e->extra = s->op | (s->depth << 8);
        break;
    }
    case MF_REC_SAMPLE: {
        const mf_rec_sample *s = (const void *)p;
        mf_log *log = r->log;
        if (mf_grow((void **)&log->samples, &r->cap_samples, log->n_samples + 1,
                 sizeof(mf_sample_values)) < 0)
            return -1;
        memcpy(log->samples[log->n_samples].value, s->value, sizeof s->value);
        e->time_ns = s->time_ns;
        e->device = (uint16_t)aux;
        e->extra = (uint32_t)log->n_samples++;
        break;
    }
    case MF_REC_ACTIVITY: {
        const mf_rec_activity *a = (const void *)p;
        e->time_ns = a->start_ns;
        e->actual = a->end_ns;
        e->size = a->bytes;
        e->name = a->name;
        e->extra = a->stream;
        e->addr = a->correlation;
        e->device = (uint16_t)aux;
        e->flags = (uint16_t)(aux >> 16);
        break;
    }
    case MF_REC_STATE: {
        const mf_rec_state *s = (const void *)p;
        e->time_ns = s->time_ns;
        e->extra = aux;
        break;
    }
    case MF_REC_NOTE: {
        const mf_rec_note *n = (const void *)p;
        e->time_ns = n->time_ns;
        e->size = n->value;
        e->extra = aux;
        break;
    }
    case MF_REC_POOL: {
        const mf_rec_pool *pl = (const void *)p;
        e->time_ns = pl->time_ns;
        e->addr = pl->addr;
        e->size = pl->size;
        e->actual = pl->threshold;
        e->device = (uint16_t)aux;
        e->extra = aux >> 16;
        break;
    }
    }
    return 0;
}

/* The chunk's running time base for compact records. */
typedef struct time_base {
    uint64_t time_ns;
    int valid;
} time_base;

/* Decode TIME, CPU_ALLOC and CPU_FREE.  Returns -1 on out of memory. */
static int decode_compact(reader *r, const char *p, unsigned type, uint32_t aux, uint32_t tid,
                          time_base *base)
{
    if (type == MF_REC_TIME) {
        base->time_ns = ((const mf_rec_time *)(const void *)p)->time_ns;
        base->valid = 1;
        return 0;
    }
    base->time_ns += aux;
    mf_event *e = new_event(r, type == MF_REC_CPU_FREE ? MF_REC_FREE : MF_REC_ALLOC, tid);
    if (!e)
        return -1;
    e->time_ns = base->time_ns;
    e->device = MF_DEVICE(MF_DEVICE_CPU, 0);
    if (type != MF_REC_CPU_FREE) {
        /* CPU_ALLOC_STACK is CPU_ALLOC with a stack id after the same fields */
        const mf_rec_cpu_alloc *a = (const void *)p;
        e->addr = a->addr;
        e->size = a->requested_flags & (((uint64_t)1 << MF_CPU_SIZE_BITS) - 1);
        e->flags = (uint16_t)(a->requested_flags >> MF_CPU_SIZE_BITS);
        e->actual = e->size + a->slack;
        e->scope = a->scope;
        if (type == MF_REC_CPU_ALLOC_STACK)
            e->extra = ((const mf_rec_cpu_alloc_stack *)(const void *)p)->stack;
    } else {
        const mf_rec_cpu_free *f = (const void *)p;
        e->addr = f->addr_flags & (((uint64_t)1 << MF_CPU_ADDR_BITS) - 1);
        e->flags = (uint16_t)(f->addr_flags >> MF_CPU_ADDR_BITS);
    }
    return 0;
}

static int is_compact(unsigned type)
{
    return type == MF_REC_TIME || type == MF_REC_CPU_ALLOC || type == MF_REC_CPU_FREE ||
           type == MF_REC_CPU_ALLOC_STACK;
}

/*
 * Walk one chunk's records: avail bytes at bytes (fewer than a chunk when
 * the file ends inside it), which stood at offset start of the live log.
 * Returns -1 on out of memory.
 */
static int read_chunk_bytes(reader *r, uint64_t index, const char *bytes, uint64_t avail,
                            uint64_t start)
{
    uint64_t end = start + (avail < MF_CHUNK_SIZE ? avail : MF_CHUNK_SIZE);
    int truncated = avail < MF_CHUNK_SIZE;
    if (end - start < sizeof(mf_chunk_header)) {
        damage(r, start, "chunk %llu truncated inside its header", (unsigned long long)index);
        return 0;
    }
    const mf_chunk_header *ch = (const void *)bytes;
    if (ch->magic == 0)
        return 0; /* claimed, never written */
    if (ch->magic != MF_CHUNK_MAGIC) {
        damage(r, start, "bad chunk magic 0x%08x (expected 0x%08x)", ch->magic,
               MF_CHUNK_MAGIC);
        return 0;
    }
    if (ch->index != index) {
        damage(r, start + 4, "chunk says it is chunk %u, but stands at chunk %llu",
               ch->index, (unsigned long long)index);
        return 0;
    }
    uint64_t at = start + sizeof *ch;
    time_base base = { 0, 0 };
    uint32_t owner = ch->tid;
    while (at + 8 <= end) {
        uint64_t word;
        memcpy(&word, bytes + (at - start), 8);
        if (word == 0)
            return 0;
        unsigned type = MF_WORD_TYPE(word), size = MF_WORD_SIZE(word);
        uint32_t aux = MF_WORD_AUX(word);
        if (type < 1 || type > MF_REC_TYPE_MAX) {
            damage(r, at, "unknown record type %u", type);
            return 0;
        }
        unsigned want = mf_record_fixed_size(type);
        if (size < 16 || size % 8 || (want && size != want)) {
            damage(r, at, "record type %u has size %u (expected %u)", type, size,
                   want ? want : 16);
            return 0;
        }
        if (at + size > end) {
            damage(r, at, truncated ? "file truncated inside a record of type %u"
                                    : "record type %u runs past its chunk", type);
            return 0;
        }
        if (type == MF_REC_STRING) {
            const mf_rec_string *s = (const void *)(bytes + (at - start));
            if (aux == 0 || aux >= MAX_STRING_ID || s->len > MF_STRING_MAX_LEN ||
                ((16 + s->len + 7) & ~7u) != size) {
                damage(r, at, "bad string record (id %u, length %u, size %u)", aux, s->len,
                       size);
                return 0;
            }
        }
        if (type == MF_REC_STACK && !stack_record_ok(bytes + (at - start), size, aux)) {
            damage(r, at, "bad stack record (id %u, size %u)", aux, size);
            return 0;
        }
        if (is_compact(type) && type != MF_REC_TIME && !base.valid) {
            damage(r, at, "compact record type %u before any TIME record in its chunk", type);
            return 0;
        }
        if (type == MF_REC_OWNER) {
            owner = aux;
            base.valid = 0;
            at += size;
            continue;
        }
        const char *p = bytes + (at - start);
        int rc = is_compact(type) ? decode_compact(r, p, type, aux, owner, &base)
                                  : decode(r, p, type, aux, owner);
        if (rc < 0)
            return -1;
        at += size;
    }
    if (truncated && at < end)
        damage(r, at, "file truncated inside a record word");
    return 0;
}

/* Walk chunk index of the mapped file. */
static int read_chunk(reader *r, uint64_t index)
{
    uint64_t start = index * MF_CHUNK_SIZE;
    return read_chunk_bytes(r, index, r->base + start, r->file_size - start, start);
}

static int event_before(const mf_event *a, const mf_event *b)
{
    return a->time_ns < b->time_ns;
}

/* Stable sort by time: merge sort into a scratch array. */
static int sort_events(mf_log *log)
{
    size_t n = log->n_events, i;
    for (i = 1; i < n; i++)
        if (event_before(&log->events[i], &log->events[i - 1]))
            break;
    if (i >= n)
        return 0;
    mf_event *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return -1;
    mf_event *src = log->events, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi)
                dst[k++] = event_before(&src[b], &src[a]) ? src[b++] : src[a++];
            while (a < mid)
                dst[k++] = src[a++];
            while (b < hi)
                dst[k++] = src[b++];
        }
        mf_event *swap = src;
        src = dst;
        dst = swap;
    }
    if (src != log->events)
        memcpy(log->events, src, n * sizeof *src);
    free(tmp);
    return 0;
}

static int read_argv(mf_log *log, const char *bytes, uint32_t len)
{
    int argc = 0;
    for (uint32_t i = 0; i < len; i++)
        if (bytes[i] == 0)
            argc++;
    if (len && bytes[len - 1] != 0)
        argc++;
    log->argv = calloc((size_t)argc + 1, sizeof *log->argv);
    if (!log->argv)
        return -1;
    uint32_t at = 0;
    for (int i = 0; i < argc; i++) {
        uint32_t n = 0;
        while (at + n < len && bytes[at + n])
            n++;
        log->argv[i] = strndup(bytes + at, n);
        if (!log->argv[i])
            return -1;
        at += n + 1;
    }
    log->argc = argc;
    return 0;
}

static int check_header(const char *path, const char *base, uint64_t size, char *err,
                        size_t errlen)
{
    const mf_file_header *h = (const void *)base;
    if (size < sizeof *h || memcmp(h->magic, MF_LOG_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not a memflow log (no MEMFLOW magic at offset 0)", path);
        return -1;
    }
    if (h->version != MF_LOG_VERSION) {
        snprintf(err, errlen, "%s: offset 8: log version %u, this memflow reads version %u",
                 path, h->version, MF_LOG_VERSION);
        return -1;
    }
    if (h->chunk_size != MF_CHUNK_SIZE || h->header_size != sizeof *h ||
        h->argv_len > MF_CHUNK_SIZE - sizeof *h) {
        snprintf(err, errlen, "%s: offset 12: bad header (size %u, chunk size %u, argv %u)",
                 path, h->header_size, h->chunk_size, h->argv_len);
        return -1;
    }
    return 0;
}

/* The file header and argv: the first size bytes of the file at bytes. */
static int read_head(reader *r, const char *bytes, uint64_t size, char *err, size_t errlen)
{
    mf_log *log = r->log;
    if (check_header(log->path, bytes, size, err, errlen) < 0)
        return -1;
    memcpy(&log->header, bytes, sizeof log->header);
    uint64_t argv_end = sizeof(mf_file_header) + log->header.argv_len;
    if (argv_end > size) {
        damage(r, size, "file truncated inside the program arguments");
        argv_end = size;
    }
    if (read_argv(log, bytes + sizeof(mf_file_header),
                  (uint32_t)(argv_end - sizeof(mf_file_header))) < 0) {
        snprintf(err, errlen, "%s: out of memory while reading the log", log->path);
        return -1;
    }
    return 0;
}

/* After the chunks: the header's DROPPED flag, then events in time order. */
static int finish_read(reader *r, char *err, size_t errlen)
{
    mf_log *log = r->log;
    if (log->header.flags & MF_HEADER_DROPPED)
        damage(r, 20, "the recorder could not grow the log (disk full or file size limit): "
               "events were dropped");
    if (sort_events(log) < 0) {
        snprintf(err, errlen, "%s: out of memory while reading the log", log->path);
        return -1;
    }
    return 0;
}

static int read_mapped(reader *r, char *err, size_t errlen)
{
    if (read_head(r, r->base, r->file_size, err, errlen) < 0)
        return -1;
    uint64_t chunks = (r->file_size + MF_CHUNK_SIZE - 1) / MF_CHUNK_SIZE;
    for (uint64_t i = 1; i < chunks; i++)
        if (read_chunk(r, i) < 0) {
            snprintf(err, errlen, "%s: out of memory while reading the log", r->log->path);
            return -1;
        }
    return finish_read(r, err, errlen);
}

/*
 * A compact log (MF_HEADER_COMPACT, analyze/compact.h) is read through
 * its chunk source, which gives back every chunk as the live log had it:
 * the same events, the same damage at the same offsets.
 */
static int read_compact(reader *r, char *err, size_t errlen)
{
    mf_chunk_source *src;
    if (mf_chunk_source_open(r->log->path, &src, err, errlen) < 0)
        return -1;
    size_t len, n;
    const uint8_t *head = mf_chunk_source_header(src, &len);
    const mf_chunk_info *chunks = mf_chunk_source_chunks(src, &n);
    char *buf = malloc(MF_CHUNK_SIZE);
    int rc = buf ? read_head(r, (const char *)head, len, err, errlen) : -1;
    if (!buf)
        snprintf(err, errlen, "%s: out of memory", r->log->path);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char why[512];
        long got = mf_chunk_source_read(src, i, (uint8_t *)buf, why, sizeof why);
        if (got < 0 && !r->log->damaged) {
            r->log->damaged = 1;
            snprintf(r->log->damage, sizeof r->log->damage, "%s", why);
        }
        if (got >= 0 && read_chunk_bytes(r, chunks[i].index, buf, (uint64_t)got,
                                         chunks[i].file_offset) < 0) {
            snprintf(err, errlen, "%s: out of memory while reading the log", r->log->path);
            rc = -1;
        }
    }
    free(buf);
    mf_chunk_source_close(src);
    return rc < 0 ? rc : finish_read(r, err, errlen);
}

/* Whether the file at fd says it is in the compact form. */
static int is_compact_file(int fd)
{
    mf_file_header h;
    return pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
           memcmp(h.magic, MF_LOG_MAGIC, 8) == 0 && (h.flags & MF_HEADER_COMPACT);
}

int mf_log_read(const char *path, mf_log **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    if (st.st_size == 0) {
        snprintf(err, errlen, "%s: empty file, not a memflow log", path);
        close(fd);
        return -1;
    }
    int compact = is_compact_file(fd);
    const char *base = compact ? NULL
                               : mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
        return -1;
    }
    log_private *lp = calloc(1, sizeof *lp);
    reader r = { .log = &lp->pub, .base = base, .file_size = (uint64_t)st.st_size };
    int rc = -1;
    if (lp && (lp->pub.path = strdup(path)))
        rc = compact ? read_compact(&r, err, errlen) : read_mapped(&r, err, errlen);
    else
        snprintf(err, errlen, "%s: out of memory", path);
    if (base)
        munmap((void *)base, (size_t)st.st_size);
    if (lp) {
        lp->thread_tids = r.thread_tids;
        lp->thread_names = r.thread_names;
        lp->n_threads = r.n_threads;
    }
    if (rc < 0) {
        mf_log_free(lp ? &lp->pub : NULL);
        return -1;
    }
    *out = &lp->pub;
    return lp->pub.damaged ? 1 : 0;
}

void mf_log_free(mf_log *log)
{
    if (!log)
        return;
    log_private *lp = (log_private *)log;
    for (uint32_t i = 0; i < log->n_strings; i++)
        free(log->strings[i]);
    free(log->strings);
    for (int i = 0; i < log->argc; i++)
        free(log->argv[i]);
    free(log->argv);
    free(log->events);
    free(log->samples);
    for (uint32_t i = 0; i < log->n_stacks; i++)
        free(log->stacks[i].ip);
    free(log->stacks);
    free(log->modules);
    free(log->path);
    free(lp->thread_tids);
    free(lp->thread_names);
    free(lp);
}

const char *mf_log_string(const mf_log *log, uint32_t id)
{
    if (id == MF_STRING_UNKNOWN)
        return "unknown";
    if (id < log->n_strings && log->strings[id])
        return log->strings[id];
    if (id == MF_STRING_DEFAULT_SCOPE)
        return "<unk>:";
    log_private *lp = (log_private *)log;
    snprintf(lp->missing, sizeof lp->missing, "?%u", id);
    return lp->missing;
}

const mf_stack *mf_log_stack(const mf_log *log, uint32_t id)
{
    return id < log->n_stacks && log->stacks[id].depth ? &log->stacks[id] : NULL;
}

const char *mf_log_thread_name(const mf_log *log, uint32_t tid)
{
    const log_private *lp = (const log_private *)log;
    for (size_t i = lp->n_threads; i-- > 0;)
        if (lp->thread_tids[i] == tid)
            return mf_log_string(log, lp->thread_names[i]);
    return NULL;
}
