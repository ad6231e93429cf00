/*
 * fuzz_reader.c - libFuzzer targets: any bytes as a memflow log, through the
 * whole analysis half: the streaming reader (header checks and repairs,
 * scan, holes, merge), the model, and every text and picture output; then
 * the same bytes as a log that grows under a reader that looks again (what
 * `memflow serve` does).  Nothing may crash, leak, overflow or hang.
 *
 * Two targets are built from this file:
 *
 * fuzz_reader - input: a live log's chunks cut to their first 4096 bytes,
 * one after another: bytes [4096 k, 4096 (k + 1)) of the input are the
 * start of chunk k (chunk 0: the file header and argv), each placed at k *
 * MF_CHUNK_SIZE in a sparse in-memory file (the rest of each chunk is a
 * hole, read as zeros; the file ends where the input does, so the last
 * chunk may be cut short, as a log whose writer was killed).  A few KiB
 * thus describe a log of several 1 MiB chunks.  An input whose header says
 * COMPACT (flags bit 2) is a compact log: the file is the input, whole.
 *
 * fuzz_compact (FUZZ_WHOLE_FILE) - input: the file itself, whole, whatever
 * its header says: compact logs of realistic size (every frame, the index,
 * the trailer), every event read through the reader (and every call
 * stack), then every chunk through mf_chunk_source (decoding on read-ahead
 * threads too).  It leaves the model and the outputs, which fuzz_reader
 * covers, to spend its time on the compact form's decoding.
 *
 * tests/fuzz/seeds.py turns real logs into inputs of both.  Build and run:
 * configure finds clang with -fsanitize=fuzzer (FUZZ_CC); `make check` runs
 * tests/fuzz/fuzz.sh (a bounded number of runs of each from the seeds); for
 * a longer campaign (docs/RELIABILITY.md records one):
 *   tests/fuzz/fuzz_reader -runs=1000000 CORPUS_DIR tests/out/fuzz/seeds
 *   tests/fuzz/fuzz_compact -max_len=1048576 -runs=1000000 CORPUS_DIR tests/out/fuzz/compact
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "chunk_source.h"
#include "log_format.h"
#include "model.h"
#include "outputs.h"
#include "reader.h"
#include "stats.h"

#define PIECE 4096
#define BATCH 512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char out_dir[4096];

/* Whether the input's header says compact: then it is the file, whole. */
static int whole_file(const uint8_t *data, size_t size)
{
#ifdef FUZZ_WHOLE_FILE
    (void)data, (void)size;
    return 1;
#else
    return size >= sizeof(mf_file_header) &&
           (data[offsetof(mf_file_header, flags)] & MF_HEADER_COMPACT);
#endif
}

/* The input's pieces [0, pieces) as a sparse file (or, whole_file, the
 * input as it is); its path in path. */
static int make_log(const uint8_t *data, size_t size, size_t pieces, char *path, size_t len)
{
    int fd = memfd_create("fuzz.mfl", 0);
    if (fd < 0)
        return -1;
    snprintf(path, len, "/proc/self/fd/%d", fd);
    if (whole_file(data, size)) {
        if (size && pwrite(fd, data, size, 0) != (ssize_t)size) {
            close(fd);
            return -1;
        }
        return fd;
    }
    for (size_t k = 0; k < pieces && k * PIECE < size; k++) {
        size_t n = size - k * PIECE < PIECE ? size - k * PIECE : PIECE;
        if (pwrite(fd, data + k * PIECE, n, (off_t)(k * (size_t)MF_CHUNK_SIZE)) != (ssize_t)n) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* Grow the file of fd by the pieces [from, to). */
static void add_pieces(int fd, const uint8_t *data, size_t size, size_t from, size_t to)
{
    for (size_t k = from; k < to && k * PIECE < size; k++) {
        size_t n = size - k * PIECE < PIECE ? size - k * PIECE : PIECE;
        if (pwrite(fd, data + k * PIECE, n, (off_t)(k * (size_t)MF_CHUNK_SIZE)) != (ssize_t)n)
            abort();
    }
}

/* Every chunk of the log through the chunk source, in index order (read
 * ahead on other threads) and then backwards. */
static void every_chunk(const char *path)
{
    mf_chunk_source *s;
    char err[1024];
    uint8_t *buf = malloc(MF_CHUNK_SIZE);
    if (buf && mf_chunk_source_open(path, &s, err, sizeof err) == 0) {
        size_t n;
        mf_chunk_source_chunks(s, &n);
        for (size_t i = 0; i < n; i++)
            mf_chunk_source_read(s, i, buf, err, sizeof err);
        for (size_t i = n; i-- > 0;)
            mf_chunk_source_read_at(s, i, 16, buf, 64, err, sizeof err);
        mf_chunk_source_close(s);
    }
    free(buf);
}

/* Every event of the log through the reader, with every call stack (what
 * fuzz_compact reads instead of the model: the compact form is the
 * reader's). */
static void drain(const char *path)
{
    char err[1024];
    mf_strings *pool = mf_strings_new();
    mf_event *batch = malloc(BATCH * sizeof *batch);
    mf_sample_values *samples = malloc(BATCH * sizeof *samples);
    mf_reader *r = NULL;
    mf_reader_options ro = { .merge_runs = 1 };
    if (pool && batch && samples &&
        mf_reader_open(&r, &path, 1, pool, &ro, err, sizeof err) == 0) {
        while (mf_reader_next(r, batch, samples, BATCH, UINT64_MAX, err, sizeof err) > 0)
            ;
        uint64_t ip[MF_STACK_MAX_DEPTH];
        for (uint32_t id = 1; id <= mf_reader_n_stacks(r); id++)
            mf_reader_stack(r, id, NULL, ip, MF_STACK_MAX_DEPTH);
    }
    mf_reader_close(r);
    mf_strings_free(pool);
    free(batch);
    free(samples);
}

/* The whole log at once, every output written. */
static void whole(const char *path)
{
    char err[2048];
    int rc;
    mf_load_options lo = { .until_rel_ns = UINT64_MAX };
    mf_model *m = mf_model_load_opts(&path, 1, &lo, &rc, err, sizeof err);
    if (!m)
        return;
    char formats[512];
    mf_outputs_formats_for(m, "memory_flow.svg,profile.json,stats.txt,stats.json", formats,
                           sizeof formats);
    mf_sink report = { 0 }, failures = { 0 };
    mf_output_options out = {
        .formats = formats, .trace_name = "profile.json", .csv_prefix = "gpu_memory_profile",
        .svg = { .color_by = MF_COLOR_BY_SCOPE, .only_device = -1 }, .report = &report,
        .failures = &failures,
    };
    mf_outputs_write(m, out_dir, &out, err, sizeof err);
    mf_sink_free(&report);
    mf_sink_free(&failures);
    mf_model_free(m);
}

/* Drain the reader into the model. */
static int feed(mf_reader *r, mf_model *m, mf_event *batch, mf_sample_values *samples)
{
    char err[1024];
    long n;
    while ((n = mf_reader_next(r, batch, samples, BATCH, UINT64_MAX, err, sizeof err)) > 0)
        if (mf_model_feed(m, batch, (size_t)n, samples) < 0)
            return -1;
    return n < 0 ? -1 : 0;
}

/* The log growing in two steps under one reader, statistics after each. */
static void growing(const uint8_t *data, size_t size)
{
    size_t pieces = (size + PIECE - 1) / PIECE, first = (pieces + 1) / 2;
    char path[64], err[1024];
    int fd = make_log(data, size, first, path, sizeof path);
    if (fd < 0)
        return;
    mf_model *m = mf_model_new(NULL, err, sizeof err);
    mf_reader *r = NULL;
    mf_event *batch = malloc(BATCH * sizeof *batch);
    mf_sample_values *samples = malloc(BATCH * sizeof *samples);
    const char *p = path;
    mf_reader_options ro = { .merge_runs = 1 };
    if (!m || !batch || !samples || mf_reader_open(&r, &p, 1, m->strings, &ro, err, sizeof err))
        goto out;
    for (int step = 0; step < 2; step++) {
        if (step == 1) {
            add_pieces(fd, data, size, first, pieces);
            if (mf_reader_refresh(r, err, sizeof err) < 0)
                break;
        }
        if (mf_model_set_process(m, 0, mf_reader_log(r, 0)) < 0 || feed(r, m, batch, samples) < 0 ||
            mf_model_settle(m) < 0)
            break;
        mf_stats_options so = { .json = step };
        free(mf_stats_string(m, &so));
    }
out:
    mf_reader_close(r);
    mf_model_free(m);
    free(batch);
    free(samples);
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!out_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        int n = snprintf(out_dir, sizeof out_dir, "%s/memflow-fuzz-XXXXXX",
                         tmp && *tmp ? tmp : "/tmp");
        if (n < 0 || (size_t)n >= sizeof out_dir || !mkdtemp(out_dir))
            abort();           /* never a cut path: it would land elsewhere */
    }
    char path[64];
    int fd = make_log(data, size, SIZE_MAX, path, sizeof path);
    if (fd < 0)
        return 0;
#ifdef FUZZ_WHOLE_FILE
    drain(path);
    every_chunk(path);
#else
    whole(path);
#endif
    close(fd);
    if (!whole_file(data, size)) /* a compact log does not grow */
        growing(data, size);
    return 0;
}
