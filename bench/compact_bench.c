/*
 * compact_bench.c - the numbers of docs/PERFORMANCE.md's "Log size at
 * rest" (bench/compact.sh runs it).
 *
 *   compact_bench sizes LIVE_LOG
 *       bytes per record of the log's chunks in each candidate form: zstd
 *       alone (per chunk, levels 1, 3, 9, 19), the dense encoding alone,
 *       dense + zstd (same levels).  One markdown table row per form.
 *   compact_bench read [--cold] ROUNDS LOG...
 *       reads every chunk of each LOG with mf_chunk_source_read, ROUNDS
 *       times, and prints chunks/s, records/s and MB/s of chunk bytes
 *       (median round).  --cold drops the file from the page cache
 *       (posix_fadvise DONTNEED after fdatasync) before every round, so
 *       the bytes come from the disk.
 *
 * Timings are CLOCK_MONOTONIC around the reads only (records are counted
 * in a pass that is not timed).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "chunk_source.h"
#include "compact_codec.h"
#include "log_format.h"

#define MAX_ROUNDS 64

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static mf_chunk_source *open_log(const char *path)
{
    mf_chunk_source *s;
    char err[1024];
    if (mf_chunk_source_open(path, &s, err, sizeof err) < 0) {
        fprintf(stderr, "compact_bench: %s\n", err);
        exit(1);
    }
    return s;
}

static long read_chunk(mf_chunk_source *s, size_t i, uint8_t *buf)
{
    char err[1024];
    long n = mf_chunk_source_read(s, i, buf, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "compact_bench: %s\n", err);
        exit(1);
    }
    return n;
}

/* Records in a chunk, walked as the reader walks them. */
static uint64_t count_records(const uint8_t *chunk, long len)
{
    uint64_t n = 0;
    for (long at = 16; at + 8 <= len;) {
        uint64_t word;
        memcpy(&word, chunk + at, 8);
        unsigned size = MF_WORD_SIZE(word);
        if (word == 0 || size < 8 || size % 8 || at + size > len)
            break;
        n++;
        at += size;
    }
    return n;
}

static int sizes(const char *path)
{
    static const int levels[] = { 1, 3, 9, 19 };
    enum { N_LEVELS = sizeof levels / sizeof levels[0] };
    mf_chunk_source *s = open_log(path);
    mf_codec *codec = mf_codec_new();
    size_t n, cap = ZSTD_compressBound(3 * MF_CHUNK_SIZE);
    const mf_chunk_info *chunks = mf_chunk_source_chunks(s, &n);
    uint8_t *buf = malloc(MF_CHUNK_SIZE), *z = malloc(cap);
    uint64_t records = 0, live = 0, dense = 0, zraw[N_LEVELS] = { 0 }, zdense[N_LEVELS] = { 0 };
    double t_raw[N_LEVELS] = { 0 }, t_dense[N_LEVELS] = { 0 }, t_enc = 0;
    (void)chunks;
    for (size_t i = 0; i < n; i++) {
        long len = read_chunk(s, i, buf);
        const uint8_t *enc;
        mf_chunk_summary sum;
        double t = now();
        size_t enc_len = mf_codec_encode(codec, buf, (size_t)len, &enc, &sum);
        t_enc += now() - t;
        records += sum.records;
        live += MF_CHUNK_SIZE;
        dense += enc_len;
        for (int l = 0; l < N_LEVELS; l++) {
            double t0 = now();
            zraw[l] += ZSTD_compress(z, cap, buf, (size_t)len, levels[l]);
            double t1 = now();
            zdense[l] += ZSTD_compress(z, cap, enc, enc_len, levels[l]);
            t_dense[l] += now() - t1;
            t_raw[l] += t1 - t0;
        }
    }
    printf("| form | bytes | bytes per record | compress MB/s of live bytes |\n"
           "|---|---|---|---|\n");
    printf("| live chunks | %llu | %.2f | |\n", (unsigned long long)live,
           (double)live / (double)records);
    printf("| dense alone | %llu | %.2f | %.0f |\n", (unsigned long long)dense,
           (double)dense / (double)records, (double)live / 1e6 / t_enc);
    for (int l = 0; l < N_LEVELS; l++)
        printf("| zstd -%d alone | %llu | %.2f | %.0f |\n", levels[l],
               (unsigned long long)zraw[l], (double)zraw[l] / (double)records,
               (double)live / 1e6 / t_raw[l]);
    for (int l = 0; l < N_LEVELS; l++)
        printf("| dense + zstd -%d | %llu | %.2f | %.0f |\n", levels[l],
               (unsigned long long)zdense[l], (double)zdense[l] / (double)records,
               (double)live / 1e6 / (t_enc + t_dense[l]));
    printf("\n%llu records in %zu chunks of %s\n", (unsigned long long)records, n, path);
    free(buf);
    free(z);
    mf_codec_free(codec);
    mf_chunk_source_close(s);
    return 0;
}

static void drop_cache(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void read_one(const char *path, int rounds, int cold, uint8_t *buf)
{
    mf_chunk_source *s = open_log(path);
    size_t n;
    mf_chunk_source_chunks(s, &n);
    uint64_t records = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        long len = read_chunk(s, i, buf);
        records += count_records(buf, len);
        bytes += (uint64_t)len;
    }
    mf_chunk_source_close(s);
    double t[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        if (cold)
            drop_cache(path);
        double t0 = now();
        s = open_log(path);
        for (size_t i = 0; i < n; i++)
            read_chunk(s, i, buf);
        mf_chunk_source_close(s);
        t[r] = now() - t0;
    }
    qsort(t, (size_t)rounds, sizeof t[0], compare_doubles);
    double m = t[rounds / 2];
    printf("| %s | %s | %zu | %llu | %.3f | %.0f | %.1f | %.0f |\n", path,
           cold ? "cold" : "warm", n, (unsigned long long)records, m, (double)n / m,
           (double)records / m / 1e6, (double)bytes / m / 1e6);
}

static int reads(int argc, char **argv)
{
    int cold = argc > 0 && !strcmp(argv[0], "--cold");
    argc -= cold, argv += cold;
    int rounds = argc > 0 ? atoi(argv[0]) : 0;
    if (rounds < 1 || rounds > MAX_ROUNDS || argc < 2) {
        fprintf(stderr, "usage: compact_bench read [--cold] ROUNDS(1..64) LOG...\n");
        return 2;
    }
    uint8_t *buf = malloc(MF_CHUNK_SIZE);
    printf("| log | cache | chunks | records | median s | chunks/s | M records/s | "
           "MB/s of chunks |\n|---|---|---|---|---|---|---|---|\n");
    for (int i = 1; i < argc; i++)
        read_one(argv[i], rounds, cold, buf);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "sizes"))
        return sizes(argv[2]);
    if (argc >= 2 && !strcmp(argv[1], "read"))
        return reads(argc - 2, argv + 2);
    fprintf(stderr, "usage: compact_bench sizes LIVE_LOG | read [--cold] ROUNDS LOG...\n");
    return 2;
}
