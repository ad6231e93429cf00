/*
 * fuzz_pickle.c - libFuzzer target: any bytes as a pickle through the
 * streaming reader (common/torch/pickle.c), as a PyTorch memory snapshot
 * through the walker (common/torch/torch_snapshot.c) and through the
 * conversion (common/torch/torch_convert.c).  Nothing may crash, leak,
 * overflow, hang or grow past the reader's budget, whatever the bytes.
 *
 * Each input is read four ways: (1) the walker, from memory, with the
 * default limits; (2) the reader alone from a file (memfd, pread through
 * the buffer window), keeping every container in full so GETs replay
 * them, and checking that begins and ends pair; (3) the walker with small
 * limits (a 16-byte look-ahead that guesses, a 64 KiB heap that evicts,
 * 40 levels of nesting) wanting the segments only, which stops early;
 * (4) the conversion into memflow records (common/torch/torch_convert.c),
 * twice as the live path's next snapshot, into a sink that checks every
 * string, frame and stack id, stack and flag it is handed.
 *
 * Build and run: configure finds clang with -fsanitize=fuzzer (FUZZ_CC);
 * `make check` runs tests/fuzz/fuzz_pickle.sh (seeds: the snapshots of
 * tests/torch_snapshots.py); for a longer campaign:
 *   tests/fuzz/fuzz_pickle -runs=1000000 CORPUS_DIR tests/out/fuzz_pickle/seeds
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pickle.h"
#include "log_format.h"
#include "torch_convert.h"
#include "torch_snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct depth {
    long open;
    uint64_t values;
} depth;

static int on_begin(void *ctx, const mf_pickle_value *key, mf_pickle_kind kind, uint64_t id,
                    int replay)
{
    depth *d = ctx;
    (void)key;
    (void)kind;
    (void)id;
    (void)replay;
    d->open++;
    return MF_PICKLE_KEEP;
}

static int on_value(void *ctx, const mf_pickle_value *key, const mf_pickle_value *v)
{
    depth *d = ctx;
    size_t n;
    if (mf_pickle_bytes(v, &n))
        d->values += n;
    if (mf_pickle_items(v, &n))
        d->values += n;
    if (key)
        d->values++;
    return 0;
}

static int on_end(void *ctx, mf_pickle_kind kind)
{
    depth *d = ctx;
    (void)kind;
    if (--d->open < 0)
        abort();                       /* an end without its begin */
    return 0;
}

static int on_entry(void *ctx, const mf_torch_entry *e)
{
    uint64_t *sum = ctx;
    for (uint32_t i = 0; i < e->nframes; i++)
        *sum += e->frames[i];
    return 0;
}

static int on_segment(void *ctx, const mf_torch_segment *s)
{
    uint64_t *sum = ctx;
    for (size_t i = 0; i < s->nblocks; i++)
        *sum += s->blocks[i].address;
    return 0;
}

/* The conversion (torch_convert.h) over the same bytes, into a sink that
 * checks what it is handed: ids it gave out, sizes of stacks, devices. */
typedef struct check_sink {
    uint32_t frames, stacks, strings;
    const uint8_t *data;
    size_t size;
} check_sink;

static uint32_t sink_intern(void *ctx, const char *text, size_t len)
{
    check_sink *c = ctx;
    if (len && !text)
        abort();
    return ++c->strings;
}

static uint32_t sink_frame(void *ctx, uint32_t function, uint32_t file, uint32_t line,
                           unsigned kind)
{
    check_sink *c = ctx;
    (void)line;
    if (!function || function > c->strings || file > c->strings ||
        (kind != MF_FRAME_PYTHON && kind != MF_FRAME_NATIVE))
        abort();
    return ++c->frames;
}

static uint32_t sink_stack(void *ctx, const uint64_t *entries, uint32_t depth)
{
    check_sink *c = ctx;
    if (!depth || depth > MF_STACK_MAX_DEPTH)
        abort();
    for (uint32_t i = 0; i < depth; i++)
        if (!mf_stack_entry_is_frame(entries[i]) || !mf_stack_entry_frame(entries[i]) ||
            mf_stack_entry_frame(entries[i]) > c->frames)
            abort();
    return ++c->stacks;
}

static void sink_alloc(void *ctx, uint16_t device, unsigned flags, uint64_t time_ns,
                       uint64_t addr, uint64_t requested, uint64_t actual, uint32_t scope,
                       uint32_t stack)
{
    check_sink *c = ctx;
    (void)time_ns, (void)addr, (void)requested, (void)actual;
    /* every id is one this sink gave out (torch_convert.h): its strings are
     * numbered from 1 with none reserved, so a converter that assumed the
     * log's 1 for "<unk>:" would hand over an id never given or another
     * string's */
    if (MF_DEVICE_KIND(device) != MF_DEVICE_GPU || !scope || scope > c->strings ||
        stack > c->stacks ||
        (flags & ~(MF_FLAG_SUBBLOCK | MF_FLAG_REUSED | MF_FLAG_BEFORE | MF_FLAG_REALLOC |
                   MF_MEMKIND_MASK)))
        abort();
}

static void sink_free(void *ctx, uint16_t device, unsigned flags, uint64_t time_ns,
                      uint64_t addr)
{
    (void)ctx, (void)time_ns, (void)addr;
    if (MF_DEVICE_KIND(device) != MF_DEVICE_GPU ||
        (flags & ~(MF_FLAG_SUBBLOCK | MF_MEMKIND_MASK)))
        abort();
}

static void sink_oom(void *ctx, uint16_t device, unsigned route, uint64_t time_ns,
                     uint64_t requested, uint64_t device_free, uint32_t scope, uint32_t stack)
{
    check_sink *c = ctx;
    (void)time_ns, (void)requested, (void)device_free;
    if (MF_DEVICE_KIND(device) != MF_DEVICE_GPU || route != MF_OOM_TORCH_TRACE || !scope ||
        scope > c->strings || stack > c->stacks)
        abort();
}

static mf_pickle_reader *open_data(void *arg, char *err, size_t errlen)
{
    check_sink *c = arg;
    (void)err, (void)errlen;
    return mf_pickle_reader_mem(c->data, c->size);
}

static void convert(const uint8_t *data, size_t size)
{
    check_sink c = { 0, 0, 0, data, size };
    mf_torch_sink sink = { .ctx = &c, .intern = sink_intern, .frame = sink_frame,
                           .stack = sink_stack, .alloc = sink_alloc, .free = sink_free,
                           .oom = sink_oom };
    mf_torch_options opt = { .order_origin_ns = 1000000000ull, .incremental = 1 };
    mf_torch_convert *conv = mf_torch_convert_new(&sink, &opt);
    if (!conv)
        return;
    char err[400];
    mf_torch_result r;
    /* twice: the second run is the live path's next snapshot of the same ring */
    for (int i = 0; i < 2; i++)
        if (mf_torch_convert_run(conv, open_data, &c, &r, err, sizeof err) == 0 &&
            i == 1 && r.entries != 0 && r.walk.with_time == r.walk.entries)
            abort();   /* every timed entry was converted by the first run */
    mf_torch_convert_free(conv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[400];
    uint64_t sum = 0;
    mf_torch_handler th = { .entry = on_entry, .segment = on_segment };

    mf_pickle_reader *r = mf_pickle_reader_mem(data, size);
    if (r) {
        mf_torch_walk(r, MF_TORCH_WANT_ALL, &th, &sum, NULL, err, sizeof err);
        mf_pickle_reader_free(r);
    }

    int fd = memfd_create("fuzz.pickle", 0);
    if (fd >= 0) {
        if (write(fd, data, size) == (ssize_t)size) {
            r = mf_pickle_reader_fd(fd, err, sizeof err);
            if (r) {
                depth d = { 0, 0 };
                mf_pickle_handler h = { on_begin, on_value, on_end };
                mf_pickle_status s = mf_pickle_read(r, &h, &d);
                if (s == MF_PICKLE_OK && d.open != 0)
                    abort();               /* a begin without its end */
                mf_pickle_reader_free(r);
            }
        }
        close(fd);
    }

    r = mf_pickle_reader_mem(data, size);
    if (r) {
        mf_pickle_limits lim = { .memory = 64 << 10, .lookahead = 16, .max_depth = 40 };
        mf_pickle_set_limits(r, &lim);
        mf_torch_stats st;
        mf_torch_walk(r, MF_TORCH_WANT_SEGMENTS, &th, &sum, &st, err, sizeof err);
        /* past the budget by more than the one allocation refused */
        if (st.pickle.memory_peak > 3 * (64 << 10) + size)
            abort();
        mf_pickle_reader_free(r);
    }
    convert(data, size);
    return sum == 42 ? 0 : 0;
}
