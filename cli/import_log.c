/*
 * import_log.c - a memflow log written by `memflow import` (see
 * import_log.h): one chunk assembled in memory and written with pwrite
 * when full, strings interned by content, frames and stacks numbered as
 * the conversion hands them out (it gives each distinct one once).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checksum.h"
#include "import_log.h"
#include "log_format.h"

typedef struct str_entry {
    uint64_t hash;
    uint32_t id;              /* 0: empty */
    uint32_t len;
    char *text;
} str_entry;

struct import_log {
    int fd;
    char *path;
    mf_file_header header;
    char *argv;               /* the argv bytes after the header */
    uint8_t *chunk;           /* the chunk being filled */
    uint32_t chunk_index;     /* its index in the file */
    size_t used;              /* bytes of it used */
    uint32_t tid;
    uint64_t records;
    int failed;               /* a write failed: errno in error */
    int error;
    str_entry *strs;
    size_t str_cap, n_strs;
    uint32_t next_frame, next_stack;
};

static uint64_t hash_text(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;   /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 1099511628211ULL;
    return h;
}

/* Write the chunk being filled (its unused tail is zeros) and start the next. */
static void flush_chunk(import_log *l)
{
    if (l->used <= sizeof(mf_chunk_header) || l->failed)
        return;
    off_t at = (off_t)l->chunk_index * MF_CHUNK_SIZE;
    if (pwrite(l->fd, l->chunk, MF_CHUNK_SIZE, at) != MF_CHUNK_SIZE) {
        l->failed = 1;
        l->error = errno ? errno : EIO;
        return;
    }
    l->chunk_index++;
    memset(l->chunk, 0, MF_CHUNK_SIZE);
    mf_chunk_header ch = { MF_CHUNK_MAGIC, l->chunk_index, l->tid, 0 };
    memcpy(l->chunk, &ch, sizeof ch);
    l->used = sizeof ch;
}

/* Room for a record of size bytes in the chunk: its place, or NULL. */
static uint8_t *reserve(import_log *l, size_t size)
{
    if (l->used + size > MF_CHUNK_SIZE)
        flush_chunk(l);
    if (l->failed)
        return NULL;
    uint8_t *p = l->chunk + l->used;
    l->used += size;
    l->records++;
    return p;
}

/* A fixed-size record: rec (its word zero) with its word set. */
static void put(import_log *l, void *rec, unsigned type, unsigned size, uint32_t aux)
{
    uint64_t word = MF_RECORD_WORD(type, size, aux);
    memcpy(rec, &word, sizeof word);
    uint8_t *p = reserve(l, size);
    if (p)
        memcpy(p, rec, size);
}

static int grow_strings(import_log *l)
{
    size_t cap = l->str_cap ? l->str_cap * 2 : 1024;
    str_entry *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < l->str_cap; i++)
        if (l->strs[i].id) {
            size_t j = l->strs[i].hash & (cap - 1);
            while (t[j].id)
                j = (j + 1) & (cap - 1);
            t[j] = l->strs[i];
        }
    free(l->strs);
    l->strs = t;
    l->str_cap = cap;
    return 0;
}

/* The id of text (its STRING record written the first time); 0 on failure. */
static uint32_t intern(void *ctx, const char *text, size_t len)
{
    import_log *l = ctx;
    if (len > MF_STRING_MAX_LEN)
        len = MF_STRING_MAX_LEN;
    if ((l->n_strs + 1) * 2 > l->str_cap && grow_strings(l) < 0)
        return 0;
    uint64_t h = hash_text(text, len);
    size_t i = h & (l->str_cap - 1);
    for (; l->strs[i].id; i = (i + 1) & (l->str_cap - 1))
        if (l->strs[i].hash == h && l->strs[i].len == len && !memcmp(l->strs[i].text, text, len))
            return l->strs[i].id;
    char *copy = malloc(len + 1);
    if (!copy)
        return 0;
    memcpy(copy, text, len);
    copy[len] = 0;
    uint32_t id = (uint32_t)l->n_strs + 1;   /* 1 is "<unk>:", interned first */
    l->strs[i] = (str_entry){ h, id, (uint32_t)len, copy };
    l->n_strs++;
    size_t size = (sizeof(mf_rec_string) + len + 7) & ~(size_t)7;
    uint8_t *p = reserve(l, size);
    if (!p)
        return 0;
    mf_rec_string s = { MF_RECORD_WORD(MF_REC_STRING, size, id), (uint32_t)len, 0 };
    memcpy(p, &s, sizeof s);
    memcpy(p + sizeof s, text, len);
    return id;
}

static uint32_t frame(void *ctx, uint32_t function, uint32_t file, uint32_t line, unsigned kind)
{
    import_log *l = ctx;
    mf_rec_frame f = { 0, function, file, line, kind };
    put(l, &f, MF_REC_FRAME, sizeof f, ++l->next_frame);
    return l->failed ? 0 : l->next_frame;
}

static uint32_t stack(void *ctx, const uint64_t *entries, uint32_t depth)
{
    import_log *l = ctx;
    if (depth > MF_STACK_MAX_DEPTH)
        depth = MF_STACK_MAX_DEPTH;
    size_t size = sizeof(mf_rec_stack) + 8 * (size_t)depth;
    uint8_t *p = reserve(l, size);
    if (!p)
        return 0;
    mf_rec_stack s = { MF_RECORD_WORD(MF_REC_STACK, size, ++l->next_stack), depth, 0 };
    memcpy(p, &s, sizeof s);
    memcpy(p + sizeof s, entries, 8 * (size_t)depth);
    return l->next_stack;
}

static void alloc(void *ctx, uint16_t device, unsigned flags, uint64_t time_ns, uint64_t addr,
                  uint64_t requested, uint64_t actual, uint32_t scope, uint32_t stack_id)
{
    import_log *l = ctx;
    mf_rec_alloc a = { 0, time_ns, addr, requested, actual, scope, 0, 0, stack_id };
    put(l, &a, MF_REC_ALLOC, sizeof a, device | (uint32_t)flags << 16);
}

static void free_(void *ctx, uint16_t device, unsigned flags, uint64_t time_ns, uint64_t addr)
{
    import_log *l = ctx;
    mf_rec_free f = { 0, time_ns, addr };
    put(l, &f, MF_REC_FREE, sizeof f, device | (uint32_t)flags << 16);
}

static void trace(void *ctx, unsigned kind, uint64_t time_ns, uint64_t value, uint32_t arg)
{
    import_log *l = ctx;
    mf_rec_trace t = { 0, time_ns, value, 0, 0, 0, arg };
    put(l, &t, MF_REC_TRACE, sizeof t, kind);
}

static void segment(void *ctx, uint16_t device, unsigned op, uint64_t time_ns, uint64_t addr,
                    uint64_t size)
{
    import_log *l = ctx;
    mf_rec_segment s = { 0, time_ns, addr, size };
    put(l, &s, MF_REC_SEGMENT, sizeof s, device | (uint32_t)op << 16);
}

static void oom(void *ctx, uint16_t device, unsigned route, uint64_t time_ns, uint64_t requested,
                uint64_t device_free, uint32_t scope, uint32_t stack_id)
{
    import_log *l = ctx;
    mf_rec_oom o = { 0, time_ns, requested, device_free, 0, scope, stack_id };
    put(l, &o, MF_REC_OOM, sizeof o, device | (uint32_t)route << 16);
}

static void note(void *ctx, unsigned code, uint64_t time_ns, uint64_t value)
{
    import_log *l = ctx;
    mf_rec_note n = { 0, time_ns, value };
    put(l, &n, MF_REC_NOTE, sizeof n, code);
}

mf_torch_sink import_log_sink(import_log *l)
{
    return (mf_torch_sink){ .ctx = l, .intern = intern, .frame = frame, .stack = stack,
                            .alloc = alloc, .free = free_, .trace = trace, .segment = segment,
                            .oom = oom, .note = note };
}

import_log *import_log_create(const char *path, const uint8_t run_id[MF_RUN_ID_BYTES],
                              uint32_t pid, const char *source, char *err, size_t errlen)
{
    import_log *l = calloc(1, sizeof *l);
    if (!l || !(l->chunk = calloc(1, MF_CHUNK_SIZE)) || !(l->path = strdup(path))) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    l->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (l->fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        goto fail;
    }
    mf_file_header *h = &l->header;   /* its magic is written at close: until then the
                                          file is no log */
    h->version = MF_LOG_VERSION;
    h->header_size = sizeof *h;
    h->chunk_size = MF_CHUNK_SIZE;
    h->chunks_claimed = 1;
    h->pid = pid;
    h->clock_id = CLOCK_MONOTONIC;
    memcpy(h->run_id, run_id, MF_RUN_ID_BYTES);
    size_t argv_len = strlen(source) + 1;
    if (argv_len > 4096)
        argv_len = 4096;
    h->argv_len = (uint32_t)argv_len;
    if (!(l->argv = malloc(argv_len))) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail_file;
    }
    memcpy(l->argv, source, argv_len - 1);
    l->argv[argv_len - 1] = 0;
    /* chunk 0 (the header, written again at close) and chunk 1 begun */
    memcpy(l->chunk, h, sizeof *h);
    memcpy(l->chunk + sizeof *h, l->argv, argv_len);
    if (pwrite(l->fd, l->chunk, MF_CHUNK_SIZE, 0) != MF_CHUNK_SIZE) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        goto fail_file;
    }
    l->tid = pid;
    l->chunk_index = 1;
    memset(l->chunk, 0, MF_CHUNK_SIZE);
    mf_chunk_header ch = { MF_CHUNK_MAGIC, 1, l->tid, 0 };
    memcpy(l->chunk, &ch, sizeof ch);
    l->used = sizeof ch;
    if (intern(l, "<unk>:", 6) != MF_STRING_DEFAULT_SCOPE) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail_file;
    }
    return l;
fail_file:
    close(l->fd);
    unlink(path);
fail:
    if (l) {
        free(l->argv);
        free(l->chunk);
        free(l->path);
        free(l);
    }
    return NULL;
}

uint64_t import_log_records(const import_log *l)
{
    return l->records;
}

static void free_log(import_log *l)
{
    for (size_t i = 0; i < l->str_cap; i++)
        free(l->strs[i].text);
    free(l->strs);
    free(l->argv);
    free(l->chunk);
    free(l->path);
    free(l);
}

int import_log_close(import_log *l, uint64_t start_mono_ns, uint64_t start_real_ns,
                     uint64_t end_ns, int keep, char *err, size_t errlen)
{
    flush_chunk(l);
    mf_file_header *h = &l->header;
    h->start_mono_ns = start_mono_ns;
    h->start_real_ns = start_real_ns;
    h->chunks_claimed = l->chunk_index;   /* chunk 0 and every chunk written */
    h->flags = MF_HEADER_FINISHED;
    h->end_how = MF_END_SNAPSHOT;
    h->end_ns = end_ns;
    int rc = 0;
    if (keep && !l->failed) {
        memcpy(h->magic, MF_LOG_MAGIC, sizeof h->magic);
        h->static_check = mf_header_static_check(h, l->argv, h->argv_len);
        if (pwrite(l->fd, h, sizeof *h, 0) != sizeof *h || fsync(l->fd) < 0) {
            l->failed = 1;
            l->error = errno;
        }
    }
    if (keep && l->failed) {
        snprintf(err, errlen, "cannot write %s: %s", l->path, strerror(l->error));
        rc = -1;
    }
    if (close(l->fd) < 0 && keep && rc == 0) {
        snprintf(err, errlen, "cannot write %s: %s", l->path, strerror(errno));
        rc = -1;
    }
    if (!keep || rc < 0)
        unlink(l->path);
    free_log(l);
    return rc;
}
