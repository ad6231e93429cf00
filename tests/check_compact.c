/*
 * check_compact.c - the compact form of a log (analyze/compact/compact.h): the
 * dense codec round-trips every record type and every kind of damage byte
 * for byte and never faults on a bad encoding; mf_compact_log turns a live
 * log into a compact one that mf_chunk_source reads back exactly (header,
 * chunk list, every chunk's bytes and length, times in the index); it
 * refuses links, non-logs and logs still being written; it leaves no
 * temporary file behind and the live log untouched when it fails or is
 * stopped; damaged compact files are reported, not trusted.
 *
 * Logs are built byte by byte here (the format is the contract), so every
 * record type, hand-over and damage is exactly where the test puts it.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chunk_source.h"
#include "compact.h"
#include "compact_codec.h"
#include "compact_layout.h"
#include "damage.h"
#include "log_format.h"

#define CHUNK MF_CHUNK_SIZE

/* ---- building chunks ---------------------------------------------------- */

typedef struct builder {
    uint8_t *buf;             /* CHUNK bytes, zeroed */
    size_t at;
    uint64_t min_time, max_time;
    uint32_t records, timed;
    uint64_t base;            /* time base of compact records */
} builder;

static void begin(builder *b, uint8_t *buf, uint32_t index, uint32_t tid)
{
    memset(buf, 0, CHUNK);
    *b = (builder){ .buf = buf, .at = sizeof(mf_chunk_header), .min_time = UINT64_MAX };
    mf_chunk_header h = { MF_CHUNK_MAGIC, index, tid, 0 };
    memcpy(buf, &h, sizeof h);
}

static void timed(builder *b, uint64_t t)
{
    b->timed++;
    if (t < b->min_time)
        b->min_time = t;
    if (t > b->max_time)
        b->max_time = t;
}

/* Append a record: word (type, size, aux), then payload (size - 8 bytes). */
static void rec(builder *b, unsigned type, unsigned size, uint32_t aux, const void *payload)
{
    ck_assert_uint_le(b->at + size, CHUNK);
    uint64_t w = MF_RECORD_WORD(type, size, aux);
    memcpy(b->buf + b->at, &w, 8);
    memcpy(b->buf + b->at + 8, payload, size - 8);
    b->at += size;
    b->records++;
}

/* A record whose payload starts with its time. */
static void rec_t(builder *b, unsigned type, unsigned size, uint32_t aux, uint64_t t,
                  const void *rest)
{
    uint8_t payload[64] = { 0 };
    memcpy(payload, &t, 8);
    if (size > 16)
        memcpy(payload + 8, rest, size - 16);
    rec(b, type, size, aux, payload);
    timed(b, t);
}

static void string_rec(builder *b, uint32_t id, const char *text, uint32_t len)
{
    uint8_t payload[8 + MF_STRING_MAX_LEN + 8] = { 0 };
    memcpy(payload, &len, 4);
    memcpy(payload + 8, text, len);
    rec(b, MF_REC_STRING, (16 + len + 7) & ~7u, id, payload);
}

static void time_rec(builder *b, uint64_t t)
{
    rec_t(b, MF_REC_TIME, 16, 0, t, NULL);
    b->base = t;
}

static void cpu_alloc(builder *b, uint32_t delta, uint64_t addr, uint64_t req, uint32_t slack,
                      uint32_t scope, uint16_t flags, int stack, uint32_t stack_id)
{
    uint8_t p[32] = { 0 };
    uint64_t rf = req | (uint64_t)flags << MF_CPU_SIZE_BITS;
    memcpy(p, &addr, 8);
    memcpy(p + 8, &rf, 8);
    memcpy(p + 16, &slack, 4);
    memcpy(p + 20, &scope, 4);
    memcpy(p + 24, &stack_id, 4);
    if (stack == 2) /* reserved field not zero */
        memcpy(p + 28, "\x01\x00\x00\x00", 4);
    rec(b, stack ? MF_REC_CPU_ALLOC_STACK : MF_REC_CPU_ALLOC, stack ? 40 : 32, delta, p);
    b->base += delta;
    timed(b, b->base);
}

static void cpu_free(builder *b, uint32_t delta, uint64_t addr, uint8_t flags)
{
    uint64_t af = addr | (uint64_t)flags << MF_CPU_ADDR_BITS;
    rec(b, MF_REC_CPU_FREE, 16, delta, &af);
    b->base += delta;
    timed(b, b->base);
}

/* A chunk with every record type, odd string and stack lengths, an OWNER
 * hand-over, and compact records in every mode of the codec. */
static void every_record_chunk(builder *b, uint8_t *buf)
{
    begin(b, buf, 1, 100);
    static const char text[MF_STRING_MAX_LEN] = "net_dense0:";
    string_rec(b, 2, "", 0);
    string_rec(b, 3, "a", 1);
    string_rec(b, 4, "abc", 3);
    string_rec(b, 5, "seven77", 7);
    string_rec(b, 6, "eight888", 8);
    string_rec(b, 7, "nine99999", 9);
    string_rec(b, 8, text, MF_STRING_MAX_LEN);
    uint32_t thread[2] = { 100, 0 };
    rec(b, MF_REC_THREAD, 16, 3, thread);
    rec_t(b, MF_REC_STATE, 16, MF_STATE_RUN, 1000, NULL);
    uint32_t scope[2] = { MF_SCOPE_PUSH, 1 };
    rec_t(b, MF_REC_SCOPE, 24, 8, 1100, scope);
    uint64_t ips[3] = { 0x401000, 0x402000, 0x7f0000001234 };
    uint8_t stack[8 + sizeof ips] = { 3 };
    memcpy(stack + 8, ips, sizeof ips);
    rec(b, MF_REC_STACK, 16 + sizeof ips, 1, stack);
    rec(b, MF_REC_STACK, 16, 2, (uint8_t[8]){ 0 });
    uint8_t module[56] = { 0 };
    uint64_t mod[3] = { 0x400000, 0x400000, 0x500000 };
    memcpy(module, mod, sizeof mod);
    module[24] = 20;
    memset(module + 32, 0xab, 20);
    rec(b, MF_REC_MODULE, 64, 4, module);
    time_rec(b, 2000);
    /* allocations: explicit slack, then predicted; cached reuse, slab next, delta */
    cpu_alloc(b, 10, 0x10000, 24, 8, 8, 0, 0, 0);         /* class 32 */
    cpu_alloc(b, 12, 0x10020, 20, 12, 8, 0, 0, 0);        /* slab next, predicted slack */
    cpu_alloc(b, 7, 0x20000, 100, 12, 8, 0, 0, 0);        /* class 112 */
    cpu_free(b, 30, 0x10000, 0);                          /* live: place 0 */
    cpu_alloc(b, 5, 0x10000, 30, 2, 8, 0, 0, 0);          /* the cache: same block again */
    cpu_free(b, 9, 0xdead0, 0);                           /* unknown block */
    cpu_alloc(b, 4, 0x30000, 1000, 24, 1, MF_FLAG_REALLOC, 0, 0); /* flags, scope change */
    cpu_free(b, 3, 0x20000, MF_FLAG_REALLOC);              /* flags */
    cpu_alloc(b, 8, 0x40000, 64, 0, 1, 0, 1, 1);          /* with a stack */
    cpu_alloc(b, 8, 0x40040, 64, 0, 1, 0, 2, 1);          /* stack, reserved set */
    cpu_alloc(b, 0xffffffffu, 0xffffffffffffffffull, (1ull << 48) - 1, 0xffffffffu, 7,
              0xffff, 0, 0);                              /* every field at its maximum */
    cpu_free(b, 2, (1ull << 56) - 1, 0xff);
    /* full-size records (GPU, explicit) */
    uint8_t alloc[48] = { 0 };
    uint64_t a[4] = { 0x7f0000100000, 8192, 8192, 0 };
    memcpy(alloc + 8, a, 24);
    alloc[32] = 5;
    alloc[40] = 100;
    rec_t(b, MF_REC_ALLOC, 56, MF_DEVICE(MF_DEVICE_GPU, 0) | (MF_MEM_DEVICE << 8) << 16,
          900000, alloc + 8);
    uint64_t faddr = 0x7f0000100000;
    rec_t(b, MF_REC_FREE, 24, MF_DEVICE(MF_DEVICE_GPU, 0), 900100, &faddr);
    uint64_t values[6] = { 1, 2, 3, 4, 5, 0 };
    rec_t(b, MF_REC_SAMPLE, 64, 0, 900200, values);
    uint8_t act[32] = { 0 };
    uint64_t act_end = 900900, bytes = 65536;
    memcpy(act, &act_end, 8);
    memcpy(act + 8, &bytes, 8);
    act[16] = 7;
    rec_t(b, MF_REC_ACTIVITY, 48, MF_DEVICE(MF_DEVICE_GPU, 0) | MF_ACT_MEMCPY << 16, 900300, act);
    uint64_t note = 5;
    rec_t(b, MF_REC_NOTE, 24, MF_NOTE_GPU_DROPPED, 900400, &note);
    uint64_t pool[3] = { 0x7f0000200000, 2u << 20, 0 };
    rec_t(b, MF_REC_POOL, 40, MF_DEVICE(MF_DEVICE_GPU, 0) | MF_POOL_CREATED << 16, 900500, pool);
    uint8_t trace[32] = { 0 };
    uint64_t id = 42;
    memcpy(trace, &id, 8);
    trace[12] = 3;
    rec_t(b, MF_REC_TRACE, 40, MF_TRACE_TASK_BEGIN, 900600, trace);
    uint8_t device[40] = { 0 };
    uint64_t total = 80ull << 30;
    memcpy(device, &total, 8);
    device[8] = 2;
    memset(device + 16, 0x5a, 16);
    rec(b, MF_REC_DEVICE, 48, MF_DEVICE(MF_DEVICE_GPU, 0), device);
    rec_t(b, MF_REC_TIME, 16, 77, 950000, NULL);           /* TIME with aux set */
    b->base = 950000;
    /* the thread exits; the next one takes the rest of the chunk */
    rec_t(b, MF_REC_OWNER, 16, 200, 960000, NULL);
    uint32_t thread2[2] = { 200, 0 };
    rec(b, MF_REC_THREAD, 16, 4, thread2);
    time_rec(b, 970000);
    cpu_alloc(b, 1, 0x10000, 32, 0, 1, 0, 0, 0);          /* a block the old owner freed */
    cpu_free(b, 1, 0x10000, 0);
    rec_t(b, MF_REC_STATE, 16, MF_STATE_STOP, 980000, NULL);
}

/* A churn like bench/churn's: random slots, sizes of jemalloc's classes, a
 * LIFO cache per class, slabs handed out in order.  Returns the records. */
static uint32_t churn_chunk(builder *b, uint8_t *buf, uint32_t seed)
{
    static const uint64_t classes[] = { 16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256,
                                        320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536,
                                        1792, 2048, 2560, 3072, 3584, 4096 };
    enum { N_CLASSES = sizeof classes / sizeof classes[0], SLOTS = 512 };
    uint64_t next[N_CLASSES], cache[N_CLASSES][64], slot_addr[SLOTS] = { 0 };
    unsigned n_cache[N_CLASSES] = { 0 }, slot_class[SLOTS];
    for (unsigned c = 0; c < N_CLASSES; c++)
        next[c] = 0x7f0000000000ull + ((uint64_t)c << 24);
    begin(b, buf, 2, 300);
    time_rec(b, 5000000);
    uint32_t x = seed;
    while (b->at + 64 < CHUNK) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        unsigned slot = x % SLOTS;
        if (slot_addr[slot]) {
            unsigned c = slot_class[slot];
            cpu_free(b, 20 + (x >> 24) % 40, slot_addr[slot], 0);
            if (n_cache[c] < 64)
                cache[c][n_cache[c]++] = slot_addr[slot];
            slot_addr[slot] = 0;
        }
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        uint64_t req = 1 + x % 4096;
        unsigned c = 0;
        while (classes[c] < req)
            c++;
        uint64_t addr = n_cache[c] ? cache[c][--n_cache[c]] : (next[c] += classes[c]);
        cpu_alloc(b, 20 + (x >> 20) % 60, addr, req, (uint32_t)(classes[c] - req), 1, 0, 0, 0);
        slot_addr[slot] = addr;
        slot_class[slot] = c;
    }
    return b->records;
}

/* Encode len bytes of buf, decode them, compare; the encoding's size. */
static size_t round_trip(mf_codec *c, const uint8_t *buf, size_t len, mf_chunk_summary *sum)
{
    const uint8_t *enc;
    size_t n = mf_codec_encode(c, buf, len, &enc, sum);
    uint8_t *copy = malloc(n), *out = malloc(CHUNK);
    ck_assert_ptr_nonnull(copy);
    ck_assert_ptr_nonnull(out);
    memcpy(copy, enc, n);
    memset(out, 0xee, CHUNK);
    char err[256] = "";
    long got = mf_codec_decode(c, copy, n, out, err, sizeof err);
    ck_assert_msg(got == (long)len, "decode gave %ld of %zu bytes: %s", got, len, err);
    ck_assert_msg(memcmp(out, buf, len) == 0, "decoded bytes differ");
    size_t nonzero = len;
    while (nonzero < CHUNK && out[nonzero] == 0)
        nonzero++;
    ck_assert_msg(nonzero == CHUNK, "byte %zu after the chunk's end not zeroed", nonzero);
    free(copy);
    free(out);
    return n;
}

/* ---- the codec ---------------------------------------------------------- */

START_TEST(every_record_type_round_trips)
{
    mf_codec *c = mf_codec_new();
    uint8_t *buf = malloc(CHUNK);
    builder b;
    every_record_chunk(&b, buf);
    mf_chunk_summary sum;
    size_t n = round_trip(c, buf, CHUNK, &sum);
    ck_assert_uint_eq(sum.records, b.records);
    ck_assert_uint_eq(sum.timed, b.timed);
    ck_assert_uint_eq(sum.min_time_ns, 1000);                /* STATE RUN */
    ck_assert_uint_eq(sum.max_time_ns, 2096 + 0xffffffffull + 2); /* the largest delta */
    ck_assert_uint_eq(sum.min_time_ns, b.min_time);
    ck_assert_uint_eq(sum.max_time_ns, b.max_time);
    ck_assert_uint_lt(n, b.at); /* smaller than its records already */
    /* the same bytes cut anywhere (a file cut short) come back as cut */
    for (size_t len = 0; len < b.at + 24; len += 5)
        round_trip(c, buf, len, &sum);
    mf_codec_free(c);
    free(buf);
}
END_TEST

START_TEST(churn_is_dense)
{
    mf_codec *c = mf_codec_new();
    uint8_t *buf = malloc(CHUNK);
    builder b;
    uint32_t records = churn_chunk(&b, buf, 2463534242u);
    mf_chunk_summary sum;
    size_t n = round_trip(c, buf, CHUNK, &sum);
    ck_assert_uint_eq(sum.records, records);
    ck_assert_uint_eq(sum.min_time_ns, 5000000);
    ck_assert_uint_eq(sum.max_time_ns, b.base);
    /* 24 bytes per record live; well under 5 dense, before zstd */
    ck_assert_msg(n < 5 * (size_t)records, "%zu bytes for %u records", n, records);
    mf_codec_free(c);
    free(buf);
}
END_TEST

/* Damage the reader would report stays exactly as it was. */
START_TEST(damaged_chunks_round_trip)
{
    mf_codec *c = mf_codec_new();
    uint8_t *buf = malloc(CHUNK);
    builder b;
    mf_chunk_summary sum;
    size_t at;
    static const uint64_t damage[] = {
        MF_RECORD_WORD(99, 24, 1),                        /* unknown type, sane size */
        MF_RECORD_WORD(MF_REC_CPU_FREE, 20, 1),           /* size not a multiple of 8 */
        MF_RECORD_WORD(MF_REC_CPU_FREE, 4, 1),            /* size below a word */
        MF_RECORD_WORD(MF_REC_STRING, 0xfff8, 1),         /* runs past the chunk */
        0xffffffffffffffffull,
        MF_RECORD_WORD(MF_REC_ALLOC, 24, 1),              /* a type with the wrong size */
    };
    for (size_t k = 0; k < sizeof damage / sizeof damage[0]; k++) {
        churn_chunk(&b, buf, 7 + (uint32_t)k);
        at = 16 + 16; /* the second record */
        for (unsigned i = 0; i < 100 + 37 * k; i++)
            at += MF_WORD_SIZE(*(uint64_t *)(void *)(buf + at));
        memcpy(buf + at, &damage[k], 8);
        round_trip(c, buf, CHUNK, &sum);
        ck_assert_uint_ge(sum.records, 100 + 37 * k + 1);
    }
    /* a record written but its word not yet stored: payload after the end */
    churn_chunk(&b, buf, 99);
    at = 16 + 16 + 32 * 3;
    memset(buf + at, 0, CHUNK - at);
    memset(buf + at + 8, 0x5c, 24);
    round_trip(c, buf, CHUNK, &sum);
    ck_assert_uint_eq(sum.records, 1 + 3);
    /* compact records before any TIME record (the reader stops there) */
    begin(&b, buf, 3, 1);
    cpu_alloc(&b, 5, 0x1000, 16, 0, 1, 0, 0, 0);
    time_rec(&b, 100);
    cpu_free(&b, 5, 0x1000, 0);
    round_trip(c, buf, CHUNK, &sum);
    ck_assert_uint_eq(sum.timed, 2); /* TIME and the free after it */
    ck_assert_uint_eq(sum.min_time_ns, 100);
    ck_assert_uint_eq(sum.max_time_ns, 105);
    /* noise, and a chunk cut inside its header */
    uint32_t x = 1;
    for (size_t i = 0; i < CHUNK; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        buf[i] = (uint8_t)x;
    }
    round_trip(c, buf, CHUNK, &sum);
    round_trip(c, buf, 9, &sum);
    round_trip(c, buf, 0, &sum);
    mf_codec_free(c);
    free(buf);
}
END_TEST

/* Pages that fault when touched, around the buffers the decoder gets. */
static uint8_t *guarded(size_t len, uint8_t **map, size_t *map_len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = (len + page - 1) / page * page;
    *map_len = body + 2 * page;
    *map = mmap(NULL, *map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(*map, MAP_FAILED);
    ck_assert_int_eq(mprotect(*map + page, body, PROT_READ | PROT_WRITE), 0);
    return *map + page + body - len; /* ends right at the guard page */
}

START_TEST(bad_encodings_never_fault)
{
    mf_codec *c = mf_codec_new();
    uint8_t *buf = malloc(CHUNK), *out_map, *in_map;
    size_t out_len, in_len;
    uint8_t *out = guarded(CHUNK, &out_map, &out_len);
    builder b;
    mf_chunk_summary sum;
    int failed = 0;
    for (int kind = 0; kind < 2; kind++) {
        if (kind == 0)
            every_record_chunk(&b, buf);
        else
            churn_chunk(&b, buf, 3);
        const uint8_t *enc;
        size_t n = mf_codec_encode(c, buf, CHUNK, &enc, &sum);
        uint8_t *good = malloc(n), *bad = malloc(n);
        memcpy(good, enc, n);
        uint8_t *in = guarded(n, &in_map, &in_len); /* ends at a guard page */
        uint32_t x = 12345;
        char err[256];
        for (int round = 0; round < 3000; round++) {
            memcpy(bad, good, n);
            size_t len = n;
            for (int k = 0; k < 1 + round % 4; k++) {
                x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                bad[x % n] ^= (uint8_t)(1u << (x >> 29));
            }
            if (round % 5 == 0)
                len = x % n; /* cut short */
            memcpy(in + (n - len), bad, len);
            long got = mf_codec_decode(c, in + (n - len), len, out, err, sizeof err);
            failed += got < 0;
            ck_assert(got < 0 || got <= (long)CHUNK);
        }
        munmap(in_map, in_len);
        free(good);
        free(bad);
    }
    ck_assert_int_gt(failed, 3000); /* most changes are caught, none faults */
    munmap(out_map, out_len);
    mf_codec_free(c);
    free(buf);
}
END_TEST

/* ---- whole logs ---------------------------------------------------------- */

static char dir[1024];

static void fresh_dir(const char *test)
{
    const char *top = getenv("top_builddir");
    char cmd[2400];
    snprintf(dir, sizeof dir, "%s/tests/out/check_compact/%s", top ? top : ".", test);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void path_of(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

static void put_at(int fd, const void *p, size_t n, uint64_t offset)
{
    ck_assert_int_eq(pwrite(fd, p, n, (off_t)offset), (ssize_t)n);
}

/*
 * A live log as the recorder leaves it: header (pid = this process, this
 * host, flags), argv; chunk 1 every record type; chunk 2 a churn; chunk 3
 * claimed and never written; chunk 4 a hole; chunk 5 damaged (an unknown
 * record in the middle); chunk 6 cut short 5000 bytes in.
 */
static void write_log(const char *path, uint32_t flags, const char *host)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0640);
    ck_assert_int_ge(fd, 0);
    uint8_t *buf = malloc(CHUNK);
    memset(buf, 0, CHUNK);
    mf_file_header *h = (mf_file_header *)(void *)buf;
    memcpy(h->magic, MF_LOG_MAGIC, 8);
    h->version = MF_LOG_VERSION;
    h->header_size = sizeof *h;
    h->chunk_size = CHUNK;
    h->flags = flags;
    h->chunks_claimed = 7;
    h->pid = (uint64_t)getpid();
    h->ppid = 1;
    h->start_mono_ns = 1;
    h->start_real_ns = 1700000000000000000ull;
    h->clock_id = 1;
    static const char argv[] = "./prog\0--flag\0x y";
    h->argv_len = sizeof argv;
    if (host)
        snprintf(h->host, sizeof h->host, "%s", host);
    else
        gethostname(h->host, sizeof h->host - 1);
    memset(h->run_id, 0x11, sizeof h->run_id);
    h->end_how = MF_END_EXIT;
    memcpy(buf + sizeof *h, argv, sizeof argv);
    put_at(fd, buf, CHUNK, 0);
    builder b;
    every_record_chunk(&b, buf);
    put_at(fd, buf, CHUNK, 1ull * CHUNK);
    churn_chunk(&b, buf, 5);
    put_at(fd, buf, CHUNK, 2ull * CHUNK);
    memset(buf, 0, CHUNK);
    put_at(fd, buf, CHUNK, 3ull * CHUNK);
    churn_chunk(&b, buf, 6);
    ((mf_chunk_header *)(void *)buf)->index = 5;
    uint64_t bad = MF_RECORD_WORD(77, 16, 0);
    memcpy(buf + 16 + 16 + 32, &bad, 8);
    put_at(fd, buf, CHUNK, 5ull * CHUNK);
    churn_chunk(&b, buf, 8);
    ((mf_chunk_header *)(void *)buf)->index = 6;
    put_at(fd, buf, 5000, 6ull * CHUNK);
    close(fd);
    free(buf);
}

static void copy_file(const char *from, const char *to)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "cp --sparse=always '%s' '%s'", from, to);
    ck_assert_int_eq(system(cmd), 0);
}

#define PATH_LEN 1200

/* A fresh folder for test with the log memflow-1.mfl and its copy orig.mfl. */
static void start_log(const char *test, char *live, char *orig, uint32_t flags)
{
    fresh_dir(test);
    path_of(live, PATH_LEN, "memflow-1.mfl");
    path_of(orig, PATH_LEN, "orig.mfl");
    write_log(live, flags, NULL);
    copy_file(live, orig);
}

static int same_file_bytes(const char *a, const char *b)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

/* Both logs read the same through mf_chunk_source: header, chunks, bytes. */
static void assert_same_chunks(const char *live, const char *compact)
{
    mf_chunk_source *a, *b;
    char err[1024];
    ck_assert_msg(mf_chunk_source_open(live, &a, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(mf_chunk_source_open(compact, &b, err, sizeof err) == 0, "%s", err);
    size_t la, lb, na, nb;
    const uint8_t *ha = mf_chunk_source_header(a, &la), *hb = mf_chunk_source_header(b, &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_msg(memcmp(ha, hb, la) == 0, "headers differ");
    const mf_chunk_info *ca = mf_chunk_source_chunks(a, &na), *cb = mf_chunk_source_chunks(b, &nb);
    ck_assert_uint_eq(na, nb);
    uint8_t *ba = malloc(CHUNK), *bb = malloc(CHUNK);
    for (size_t i = 0; i < na; i++) {
        ck_assert_uint_eq(ca[i].index, cb[i].index);
        ck_assert_uint_eq(ca[i].tid, cb[i].tid);
        ck_assert_uint_eq(ca[i].file_offset, cb[i].file_offset);
        long ra = mf_chunk_source_read(a, i, ba, err, sizeof err);
        long rb = mf_chunk_source_read(b, i, bb, err, sizeof err);
        ck_assert_msg(rb >= 0, "%s", err);
        ck_assert_int_eq(ra, rb);
        ck_assert_msg(memcmp(ba, bb, CHUNK) == 0, "chunk %llu differs",
                      (unsigned long long)ca[i].index);
    }
    free(ba);
    free(bb);
    mf_chunk_source_close(a);
    mf_chunk_source_close(b);
}

static uint32_t header_flags(const char *path)
{
    mf_file_header h;
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
    close(fd);
    return h.flags;
}

/* The names in dir other than those given (temporary files left behind). */
static int extra_files(int n_known, const char *const *known)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int extra = 0;
    while ((e = readdir(d))) {
        int is_known = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        for (int i = 0; i < n_known && !is_known; i++)
            is_known = !strcmp(e->d_name, known[i]);
        extra += !is_known;
    }
    closedir(d);
    return extra;
}

START_TEST(log_reads_back_exactly)
{
    char live[PATH_LEN], orig[PATH_LEN], err[1024];
    start_log("exact", live, orig, MF_HEADER_FINISHED);
    mf_compact_result r;
    ck_assert_msg(mf_compact_log(live, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(header_flags(live), MF_HEADER_FINISHED | MF_HEADER_COMPACT);
    ck_assert_uint_eq(header_flags(orig), MF_HEADER_FINISHED);
    ck_assert_uint_eq(r.chunks, 4); /* 1, 2, 5, 6: 3 was never written, 4 is a hole */
    ck_assert_uint_eq(r.raw_chunks, 0);
    struct stat st;
    ck_assert_int_eq(stat(live, &st), 0);
    ck_assert_uint_eq(r.bytes_after, (uint64_t)st.st_size);
    ck_assert_uint_eq(st.st_mode & 07777, 0640); /* the live log's mode */
    ck_assert_uint_lt(r.bytes_after * 10, r.bytes_before);
    assert_same_chunks(orig, live);
    /* the index knows each chunk's times */
    mf_chunk_source *s;
    ck_assert_msg(mf_chunk_source_open(live, &s, err, sizeof err) == 0, "%s", err);
    size_t n;
    const mf_chunk_info *c = mf_chunk_source_chunks(s, &n);
    ck_assert_uint_eq(c[0].index, 1);
    ck_assert_uint_eq(c[0].has_times, 1);
    ck_assert_uint_eq(c[0].min_time_ns, 1000);
    ck_assert_uint_eq(c[0].max_time_ns, 2096 + 0xffffffffull + 2);
    ck_assert_uint_eq(c[1].min_time_ns, 5000000);
    mf_chunk_source_close(s);
    /* compacting again changes nothing */
    copy_file(live, orig);
    ck_assert_int_eq(mf_compact_log(live, &r, err, sizeof err), 0);
    ck_assert_uint_eq(r.bytes_after + r.chunks, 0);
    ck_assert(same_file_bytes(live, orig));
    const char *known[] = { "memflow-1.mfl", "orig.mfl" };
    ck_assert_int_eq(extra_files(2, known), 0);
}
END_TEST

/* A log whose writer still has it open is refused until it closes it. */
START_TEST(refuses_a_log_being_written)
{
    char live[PATH_LEN], orig[PATH_LEN], err[1024];
    start_log("busy", live, orig, 0);
    int fd = open(live, O_RDWR); /* we are the header's pid */
    ck_assert_int_eq(mf_compact_log(live, NULL, err, sizeof err), MF_COMPACT_BUSY);
    ck_assert_msg(strstr(err, "still being written") && strstr(err, live), "%s", err);
    ck_assert(same_file_bytes(live, orig));
    close(fd);
    ck_assert_msg(mf_compact_log(live, NULL, err, sizeof err) == 0, "%s", err);
    assert_same_chunks(orig, live);
    /* another host's log: only when marked finished */
    write_log(live, 0, "elsewhere");
    ck_assert_int_eq(mf_compact_log(live, NULL, err, sizeof err), MF_COMPACT_BUSY);
    ck_assert_msg(strstr(err, "host 'elsewhere'"), "%s", err);
    write_log(live, MF_HEADER_FINISHED, "elsewhere");
    ck_assert_msg(mf_compact_log(live, NULL, err, sizeof err) == 0, "%s", err);
    const char *known[] = { "memflow-1.mfl", "orig.mfl" };
    ck_assert_int_eq(extra_files(2, known), 0);
}
END_TEST

START_TEST(refuses_links_and_non_logs)
{
    char live[PATH_LEN], orig[PATH_LEN], link[PATH_LEN], text[PATH_LEN], err[1024];
    start_log("refuse", live, orig, MF_HEADER_FINISHED);
    path_of(link, sizeof link, "link.mfl");
    path_of(text, sizeof text, "notes.txt");
    ck_assert_int_eq(symlink("memflow-1.mfl", link), 0);
    ck_assert_int_eq(mf_compact_log(link, NULL, err, sizeof err), MF_COMPACT_REFUSED);
    ck_assert_msg(strstr(err, "symbolic link"), "%s", err);
    struct stat st;
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert(same_file_bytes(live, orig));
    FILE *f = fopen(text, "w");
    fputs("not a log\n", f);
    fclose(f);
    ck_assert_int_eq(mf_compact_log(text, NULL, err, sizeof err), MF_COMPACT_REFUSED);
    ck_assert_msg(strstr(err, "not a memflow log"), "%s", err);
    ck_assert_int_eq(mf_compact_log(dir, NULL, err, sizeof err), MF_COMPACT_REFUSED);
    ck_assert_msg(strstr(err, "not a regular file"), "%s", err);
    ck_assert_int_eq(mf_compact_log("/nonexistent/x.mfl", NULL, err, sizeof err),
                     MF_COMPACT_FAILED);
    const char *known[] = { "memflow-1.mfl", "orig.mfl", "link.mfl", "notes.txt" };
    ck_assert_int_eq(extra_files(4, known), 0);
}
END_TEST

static int stop_at_frame(void *arg, enum mf_compact_step step, uint64_t n)
{
    int *calls = arg;
    ++*calls;
    return step == MF_COMPACT_STEP_FRAME && n == 2;
}

static int stop_when_synced(void *arg, enum mf_compact_step step, uint64_t n)
{
    (void)arg, (void)n;
    return step == MF_COMPACT_STEP_SYNCED;
}

START_TEST(stopping_leaves_the_live_log)
{
    char live[PATH_LEN], orig[PATH_LEN], stale[PATH_LEN], other[PATH_LEN], err[1024];
    start_log("stop", live, orig, MF_HEADER_FINISHED);
    int calls = 0;
    mf_compact_options opt = { .progress = stop_at_frame, .arg = &calls };
    ck_assert_int_eq(mf_compact_log_with(live, &opt, NULL, err, sizeof err), MF_COMPACT_FAILED);
    ck_assert_msg(strstr(err, "stopped"), "%s", err);
    ck_assert_int_eq(calls, 2);
    ck_assert(same_file_bytes(live, orig));
    opt = (mf_compact_options){ .progress = stop_when_synced };
    ck_assert_int_eq(mf_compact_log_with(live, &opt, NULL, err, sizeof err), MF_COMPACT_FAILED);
    ck_assert(same_file_bytes(live, orig));
    const char *known[] = { "memflow-1.mfl", "orig.mfl" };
    ck_assert_int_eq(extra_files(2, known), 0);
    /* a killed compaction's file goes when its process is gone, not before */
    path_of(stale, sizeof stale, ".memflow-1.mfl.compact-999999999-AbCdEf");
    snprintf(other, sizeof other, "%s/.memflow-1.mfl.compact-%d-AbCdEf", dir, (int)getpid());
    fclose(fopen(stale, "w"));
    fclose(fopen(other, "w"));
    ck_assert_msg(mf_compact_log(live, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_int_ne(access(stale, F_OK), 0);
    ck_assert_int_eq(access(other, F_OK), 0);
    unlink(other);
    ck_assert_int_eq(extra_files(2, known), 0);
    /* a different level gives the same chunks */
    write_log(live, MF_HEADER_FINISHED, NULL);
    opt = (mf_compact_options){ .level = 19 };
    ck_assert_msg(mf_compact_log_with(live, &opt, NULL, err, sizeof err) == 0, "%s", err);
    assert_same_chunks(orig, live);
}
END_TEST

/* Flip one byte at offset of path. */
static void flip(const char *path, uint64_t offset)
{
    int fd = open(path, O_RDWR);
    uint8_t byte;
    ck_assert_int_eq(pread(fd, &byte, 1, (off_t)offset), 1);
    byte ^= 0x40;
    put_at(fd, &byte, 1, offset);
    close(fd);
}

static mf_compact_trailer trailer_of(const char *path)
{
    mf_compact_trailer t;
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    int fd = open(path, O_RDONLY);
    ck_assert_int_eq(pread(fd, &t, sizeof t, st.st_size - (off_t)sizeof t), (ssize_t)sizeof t);
    close(fd);
    return t;
}

/* Open work and check its chunks are those of the log (1, 2, 5, 6) but the
 * one at position lost (SIZE_MAX: none), and its damage's first line. */
static void assert_chunks_but(const char *work, const char *orig, size_t lost,
                              const char *first)
{
    mf_chunk_source *s, *o;
    char err[1400];
    ck_assert_msg(mf_chunk_source_open(work, &s, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(mf_chunk_source_open(orig, &o, err, sizeof err) == 0, "%s", err);
    const mf_damage *d = mf_chunk_source_damage(s);
    ck_assert_uint_ge(d->n, 1);
    ck_assert_msg(strstr(d->lines[0], first), "%s", d->lines[0]);
    size_t n, n_orig;
    const mf_chunk_info *c = mf_chunk_source_chunks(s, &n);
    mf_chunk_source_chunks(o, &n_orig);
    ck_assert_uint_eq(n, (lost == SIZE_MAX ? n_orig : n_orig - 1));
    uint8_t *a = malloc(CHUNK), *b = malloc(CHUNK);
    for (size_t i = 0, k = 0; i < n_orig; i++) {
        if (i == lost)
            continue;
        long ra = mf_chunk_source_read(o, i, a, err, sizeof err);
        long rb = mf_chunk_source_read(s, k, b, err, sizeof err);
        ck_assert_uint_eq(c[k].index, mf_chunk_source_chunks(o, &n_orig)[i].index);
        ck_assert_int_eq(ra, rb);
        ck_assert(memcmp(a, b, CHUNK) == 0);
        k++;
    }
    free(a);
    free(b);
    mf_chunk_source_close(s);
    mf_chunk_source_close(o);
}

/* start_log's log (orig.mfl) compacted into live, work.mfl named: the
 * compact log's trailer, index header and 4 entries. */
static mf_compact_trailer compacted(const char *test, char *live, char *orig, char *work,
                                    mf_compact_index *ix, mf_compact_entry e[4])
{
    char err[1024];
    start_log(test, live, orig, MF_HEADER_FINISHED);
    path_of(work, PATH_LEN, "work.mfl");
    ck_assert_msg(mf_compact_log(live, NULL, err, sizeof err) == 0, "%s", err);
    mf_compact_trailer t = trailer_of(live);
    int fd = open(live, O_RDONLY);
    ck_assert_int_eq(pread(fd, ix, sizeof *ix, (off_t)t.index_offset), (ssize_t)sizeof *ix);
    ck_assert_uint_eq(ix->n_chunks, 4);
    ck_assert_int_eq(pread(fd, e, 4 * sizeof *e, (off_t)(t.index_offset + sizeof *ix)),
                     (ssize_t)(4 * sizeof *e));
    close(fd);
    return t;
}

START_TEST(damaged_compact_files_are_reported)
{
    char live[PATH_LEN], work[PATH_LEN], orig[PATH_LEN], err[1024];
    mf_compact_index ix;
    mf_compact_entry e[4];
    mf_compact_trailer t = compacted("damage", live, orig, work, &ix, e);
    int fd;
    /* a byte of chunk 2's frame: that chunk is damaged, the others read */
    copy_file(live, work);
    flip(work, e[1].frame_offset + e[1].frame_size / 2);
    mf_chunk_source *s;
    ck_assert_msg(mf_chunk_source_open(work, &s, err, sizeof err) == 0, "%s", err);
    uint8_t *buf = malloc(CHUNK);
    ck_assert_int_eq(mf_chunk_source_read(s, 0, buf, err, sizeof err), (long)CHUNK);
    ck_assert_int_eq(mf_chunk_source_read(s, 1, buf, err, sizeof err), MF_CHUNK_DAMAGED);
    char want[1400];
    snprintf(want, sizeof want, "%s: offset %llu: compact log: chunk 2: its frame fails its "
             "CRC-32C (damaged): its records are lost", work,
             (unsigned long long)e[1].frame_offset);
    ck_assert_str_eq(err, want);       /* read ahead on another thread */
    ck_assert_int_eq(mf_chunk_source_read(s, 1, buf, err, sizeof err), MF_CHUNK_DAMAGED);
    ck_assert_str_eq(err, want);       /* again, itself */
    ck_assert_int_eq(mf_chunk_source_read(s, 0, buf, err, sizeof err), (long)CHUNK);
    ck_assert_int_eq(mf_chunk_source_read(s, 3, buf, err, sizeof err), 5000);
    mf_chunk_source_close(s);
    /* its header: the same chunk lost, the header named */
    copy_file(live, work);
    flip(work, e[1].frame_offset + 9);
    ck_assert_msg(mf_chunk_source_open(work, &s, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(mf_chunk_source_read(s, 1, buf, err, sizeof err), MF_CHUNK_DAMAGED);
    ck_assert_msg(strstr(err, "compact log: chunk 2: its frame header is damaged"), "%s", err);
    mf_chunk_source_close(s);
    free(buf);
    /* the index, the trailer, or both lost: every frame found by walking them */
    copy_file(live, work);
    flip(work, t.index_offset + sizeof(mf_compact_index) + 9);
    assert_chunks_but(work, orig, SIZE_MAX, "compact log: index fails its CRC-32C; every intact "
                      "frame is read, found by walking the frames");
    copy_file(live, work);
    flip(work, t.index_offset + t.index_size + 8); /* the trailer's index_offset */
    assert_chunks_but(work, orig, SIZE_MAX, "trailer fails its CRC-32C");
    copy_file(live, work);
    ck_assert_int_eq(truncate(work, (off_t)t.index_offset + 100), 0);
    assert_chunks_but(work, orig, SIZE_MAX, "no MFCOMPCT trailer");
    /* cut inside the last frame (chunk 6's): it is lost, and the damage says so */
    copy_file(live, work);
    ck_assert_int_eq(truncate(work, (off_t)(e[3].frame_offset + e[3].frame_size - 1)), 0);
    assert_chunks_but(work, orig, 3, "no MFCOMPCT trailer");
    mf_chunk_source *cut;
    ck_assert_msg(mf_chunk_source_open(work, &cut, err, sizeof err) == 0, "%s", err);
    snprintf(want, sizeof want, "%s: offset %llu: compact log: the frame of chunk 6 is cut short "
             "(it needs %u bytes, the file ends after %u): its records are lost", work,
             (unsigned long long)e[3].frame_offset, e[3].frame_size, e[3].frame_size - 1);
    ck_assert_uint_eq(mf_chunk_source_damage(cut)->n, 2);
    ck_assert_str_eq(mf_chunk_source_damage(cut)->lines[1], want);
    mf_chunk_source_close(cut);
    /* no trailer, and chunk 2's frame header damaged: walked past */
    copy_file(live, work);
    ck_assert_int_eq(truncate(work, (off_t)t.index_offset), 0);
    flip(work, e[1].frame_offset + 20);
    assert_chunks_but(work, orig, 1, "no MFCOMPCT trailer");
    /* a layout this memflow does not know is refused by version */
    copy_file(live, work);
    mf_compact_trailer bad = t;
    bad.layout = 3;
    bad.trailer_check = mf_crc32c(0, &bad, offsetof(mf_compact_trailer, trailer_check));
    fd = open(work, O_WRONLY);
    put_at(fd, &bad, sizeof bad, t.index_offset + t.index_size);
    close(fd);
    ck_assert_int_eq(mf_chunk_source_open(work, &s, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "compact log: layout 3, this memflow reads layouts 1 and 2"), "%s",
                  err);
}
END_TEST

/* Frames in any order, without index or trailer (a compaction that
 * appends frames as chunks fill): found by walking them, each chunk read. */
START_TEST(frames_in_any_order)
{
    char live[PATH_LEN], orig[PATH_LEN], work[PATH_LEN];
    mf_compact_index ix;
    mf_compact_entry e[4];
    compacted("order_frames", live, orig, work, &ix, e);
    int in = open(live, O_RDONLY), out = open(work, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    uint8_t *buf = malloc(CHUNK);
    /* the file header and chunk 0's frame, then chunks 6, 2, 5, 1 */
    uint64_t at = ix.head_offset + ix.head_size;
    ck_assert_int_eq(pread(in, buf, at, 0), (ssize_t)at);
    put_at(out, buf, at, 0);
    static const int order[] = { 3, 1, 2, 0 };
    for (int k = 0; k < 4; k++) {
        const mf_compact_entry *f = &e[order[k]];
        ck_assert_int_eq(pread(in, buf, f->frame_size, (off_t)f->frame_offset),
                         (ssize_t)f->frame_size);
        put_at(out, buf, f->frame_size, at);
        at += f->frame_size;
    }
    close(in);
    close(out);
    free(buf);
    assert_chunks_but(work, orig, SIZE_MAX, "no MFCOMPCT trailer");
}
END_TEST

/* A log with no chunk but its header, whole or cut inside argv. */
START_TEST(header_only_logs)
{
    char live[PATH_LEN], orig[PATH_LEN], err[1024];
    fresh_dir("header");
    path_of(live, sizeof live, "memflow-1.mfl");
    path_of(orig, sizeof orig, "orig.mfl");
    static const uint64_t sizes[] = { CHUNK, 190, sizeof(mf_file_header) };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        write_log(live, MF_HEADER_FINISHED, NULL);
        ck_assert_int_eq(truncate(live, (off_t)sizes[k]), 0);
        copy_file(live, orig);
        mf_compact_result r;
        ck_assert_msg(mf_compact_log(live, &r, err, sizeof err) == 0, "%s", err);
        ck_assert_uint_eq(r.chunks, 0);
        ck_assert_uint_eq(header_flags(live), MF_HEADER_FINISHED | MF_HEADER_COMPACT);
        assert_same_chunks(orig, live);
    }
}
END_TEST

/* Read chunk i of both sources and compare (the compact one may have had
 * it decoded ahead on another thread). */
static void same_chunk(mf_chunk_source *live, mf_chunk_source *compact, size_t i, uint8_t *a,
                       uint8_t *b)
{
    char err[1024];
    long ra = mf_chunk_source_read(live, i, a, err, sizeof err);
    long rb = mf_chunk_source_read(compact, i, b, err, sizeof err);
    ck_assert_msg(rb == ra, "chunk %zu: %ld bytes, expected %ld (%s)", i, rb, ra, err);
    ck_assert_msg(memcmp(a, b, CHUNK) == 0, "chunk %zu differs", i);
}

START_TEST(reads_in_any_order)
{
    char live[PATH_LEN], orig[PATH_LEN], err[1024];
    start_log("order", live, orig, MF_HEADER_FINISHED);
    ck_assert_msg(mf_compact_log(live, NULL, err, sizeof err) == 0, "%s", err);
    mf_chunk_source *a, *b;
    ck_assert_msg(mf_chunk_source_open(orig, &a, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(mf_chunk_source_open(live, &b, err, sizeof err) == 0, "%s", err);
    size_t n;
    mf_chunk_source_chunks(b, &n);
    ck_assert_uint_eq(n, 4);
    uint8_t *x = malloc(CHUNK), *y = malloc(CHUNK);
    static const size_t order[] = { 3, 2, 1, 0, 0, 2, 3, 1, 1, 0, 3 };
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        if (k % 3 == 0)
            mf_chunk_source_prefetch(b, order[(k + 1) % 11]);
        same_chunk(a, b, order[k], x, y);
    }
    for (int round = 0; round < 3; round++) /* in order: read ahead */
        for (size_t i = 0; i < n; i++)
            same_chunk(a, b, i, x, y);
    mf_chunk_source_prefetch(b, 0);
    mf_chunk_source_prefetch(b, 99); /* past the end: ignored */
    mf_chunk_source_close(a);
    mf_chunk_source_close(b); /* with decoding still under way */
    free(x);
    free(y);
}
END_TEST

/* Threads of this process (/proc/self/task). */
static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Read-ahead threads: as many as asked, for at most two logs at once. */
START_TEST(read_ahead_is_bounded)
{
    char live[PATH_LEN], orig[PATH_LEN], err[1024];
    start_log("bounded", live, orig, MF_HEADER_FINISHED);
    ck_assert_msg(mf_compact_log(live, NULL, err, sizeof err) == 0, "%s", err);
    uint8_t *buf = malloc(CHUNK);
    mf_chunk_source *s[4];
    setenv("MEMFLOW_READ_THREADS", "1", 1);
    for (int i = 0; i < 4; i++) {
        ck_assert_msg(mf_chunk_source_open(live, &s[i], err, sizeof err) == 0, "%s", err);
        ck_assert_int_eq(mf_chunk_source_read(s[i], 0, buf, err, sizeof err), (long)CHUNK);
    }
    ck_assert_int_eq(threads_now(), 1 + 2); /* two logs read ahead, one thread each */
    mf_chunk_source_close(s[0]);
    ck_assert_int_eq(threads_now(), 1 + 1);
    ck_assert_int_eq(mf_chunk_source_read(s[3], 1, buf, err, sizeof err), (long)CHUNK);
    ck_assert_int_eq(threads_now(), 1 + 2); /* the freed place went to another log */
    for (int i = 1; i < 4; i++)
        mf_chunk_source_close(s[i]);
    ck_assert_int_eq(threads_now(), 1);
    setenv("MEMFLOW_READ_THREADS", "0", 1);
    ck_assert_msg(mf_chunk_source_open(live, &s[0], err, sizeof err) == 0, "%s", err);
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_ge(mf_chunk_source_read(s[0], i, buf, err, sizeof err), 0);
    ck_assert_int_eq(threads_now(), 1);
    mf_chunk_source_close(s[0]);
    free(buf);
}
END_TEST

static Suite *compact_suite(void)
{
    Suite *s = suite_create("compact");
    TCase *codec = tcase_create("codec");
    tcase_add_test(codec, every_record_type_round_trips);
    tcase_add_test(codec, churn_is_dense);
    tcase_add_test(codec, damaged_chunks_round_trip);
    tcase_add_test(codec, bad_encodings_never_fault);
    suite_add_tcase(s, codec);
    TCase *file = tcase_create("file");
    tcase_add_test(file, log_reads_back_exactly);
    tcase_add_test(file, refuses_a_log_being_written);
    tcase_add_test(file, refuses_links_and_non_logs);
    tcase_add_test(file, stopping_leaves_the_live_log);
    tcase_add_test(file, damaged_compact_files_are_reported);
    tcase_add_test(file, frames_in_any_order);
    tcase_add_test(file, header_only_logs);
    tcase_add_test(file, reads_in_any_order);
    tcase_add_test(file, read_ahead_is_bounded);
    suite_add_tcase(s, file);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(compact_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
