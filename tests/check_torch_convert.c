/*
 * check_torch_convert.c - the conversion of a PyTorch allocator history
 * into memflow records (common/torch/torch_convert.c), through a sink that
 * writes a transcript: every record with its scope's and stack's text, so
 * each test compares what the sink was handed, exactly; and damaged or
 * contradictory entries, each reported with the offset of its dict.
 *
 * The sink numbers its strings from 1 and reserves none, as torch_convert.h
 * allows: a converter that used an id the sink never gave out (the log's 1
 * for "<unk>:") shows as a scope id past the sink's strings, or as another
 * string's text.  Snapshots are written here, opcode by opcode (a small
 * pickler of dicts, lists, strings and integers), and two are the inputs
 * the fuzz target found (tests/fuzz/pickle_regressions.txt).
 */
#include <check.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_format.h"
#include "pickle.h"
#include "torch_convert.h"

/* ---- a pickler of plain data ---- */

typedef struct pk {
    unsigned char b[8192];
    size_t n;
} pk;

static void op(pk *p, const char *bytes, size_t n)
{
    ck_assert_uint_le(p->n + n, sizeof p->b);
    memcpy(p->b + p->n, bytes, n);
    p->n += n;
}

static void pk_str(pk *p, const char *s)
{
    size_t n = strlen(s);
    ck_assert_uint_lt(n, 256);
    unsigned char h[2] = { 0x8c, (unsigned char)n };   /* SHORT_BINUNICODE */
    op(p, (const char *)h, 2);
    op(p, s, n);
}

static void pk_int(pk *p, uint64_t v)
{
    unsigned char h[10] = { 0x8a, 9 };   /* LONG1, 9 bytes: any uint64 stays positive */
    for (int i = 0; i < 8; i++)
        h[2 + i] = (unsigned char)(v >> (8 * i));
    op(p, (const char *)h, 10);
    op(p, "\0", 1);
}

#define OP(p, s) op((p), (s), sizeof(s) - 1)

/* A trace entry {action, addr?, size?, time_us?} (UINT64_MAX: absent). */
static void pk_entry(pk *p, const char *action, uint64_t addr, uint64_t size, uint64_t time_us)
{
    OP(p, "}(");   /* EMPTY_DICT MARK */
    pk_str(p, "action");
    pk_str(p, action);
    if (addr != UINT64_MAX) {
        pk_str(p, "addr");
        pk_int(p, addr);
    }
    if (size != UINT64_MAX) {
        pk_str(p, "size");
        pk_int(p, size);
    }
    if (time_us != UINT64_MAX) {
        pk_str(p, "time_us");
        pk_int(p, time_us);
    }
    OP(p, "u");    /* SETITEMS */
}

/* {"segments": [], "device_traces": [[ ... : the entries follow */
static void pk_begin(pk *p)
{
    p->n = 0;
    OP(p, "\x80\x04}(");
    pk_str(p, "segments");
    OP(p, "]");
    pk_str(p, "device_traces");
    OP(p, "](](");   /* EMPTY_LIST MARK EMPTY_LIST MARK */
}

static void pk_end(pk *p)
{
    OP(p, "eeu.");   /* APPENDS APPENDS SETITEMS STOP */
}

/* ---- the sink: a transcript ---- */

typedef struct sink_tx {
    char *strings[64];
    uint32_t n_strings, n_frames, n_stacks;
    char out[8192];
    size_t len;
} sink_tx;

static void say(sink_tx *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->out + t->len, sizeof t->out - t->len, fmt, ap);
    va_end(ap);
    ck_assert(n >= 0 && (size_t)n < sizeof t->out - t->len);
    t->len += (size_t)n;
}

/* The text of string id, "?N" for an id the sink never gave out. */
static const char *text_of(sink_tx *t, uint32_t id, char *buf, size_t len)
{
    if (id >= 1 && id <= t->n_strings)
        return t->strings[id - 1];
    snprintf(buf, len, "?%" PRIu32, id);
    return buf;
}

static uint32_t tx_intern(void *ctx, const char *text, size_t len)
{
    sink_tx *t = ctx;
    ck_assert_uint_lt(t->n_strings, 64);
    t->strings[t->n_strings] = strndup(text, len);
    return ++t->n_strings;
}

static uint32_t tx_frame(void *ctx, uint32_t function, uint32_t file, uint32_t line,
                         unsigned kind)
{
    sink_tx *t = ctx;
    (void)function, (void)file, (void)line, (void)kind;
    return ++t->n_frames;
}

static uint32_t tx_stack(void *ctx, const uint64_t *entries, uint32_t depth)
{
    sink_tx *t = ctx;
    (void)entries, (void)depth;
    return ++t->n_stacks;
}

static void tx_alloc(void *ctx, uint16_t device, unsigned flags, uint64_t time_ns, uint64_t addr,
                     uint64_t requested, uint64_t actual, uint32_t scope, uint32_t stack)
{
    sink_tx *t = ctx;
    char b[16];
    say(t, "alloc %x %#x %" PRIu64 " %#" PRIx64 " %" PRIu64 " %" PRIu64 " %s %" PRIu32 "\n",
        device, flags, time_ns, addr, requested, actual, text_of(t, scope, b, sizeof b), stack);
}

static void tx_free(void *ctx, uint16_t device, unsigned flags, uint64_t time_ns, uint64_t addr)
{
    say(ctx, "free %x %#x %" PRIu64 " %#" PRIx64 "\n", device, flags, time_ns, addr);
}

static void tx_note(void *ctx, unsigned code, uint64_t time_ns, uint64_t value)
{
    say(ctx, "note %u %" PRIu64 " %" PRIu64 "\n", code, time_ns, value);
}

static void tx_free_strings(sink_tx *t)
{
    for (uint32_t i = 0; i < t->n_strings; i++)
        free(t->strings[i]);
}

typedef struct bytes {
    const unsigned char *p;
    size_t n;
} bytes;

static mf_pickle_reader *open_bytes(void *arg, char *err, size_t errlen)
{
    bytes *b = arg;
    (void)err, (void)errlen;
    return mf_pickle_reader_mem(b->p, b->n);
}

/* Convert data runs times (incremental after the first) into t; the last run's result. */
static mf_torch_result convert(sink_tx *t, const void *data, size_t n, int runs)
{
    mf_torch_sink sink = { .ctx = t, .intern = tx_intern, .frame = tx_frame, .stack = tx_stack,
                           .alloc = tx_alloc, .free = tx_free, .note = tx_note };
    mf_torch_options opt = { .order_origin_ns = 1000000000ull, .incremental = runs > 1 };
    mf_torch_convert *c = mf_torch_convert_new(&sink, &opt);
    ck_assert_ptr_nonnull(c);
    bytes b = { data, n };
    mf_torch_result r;
    char err[400];
    for (int i = 0; i < runs; i++) {
        int rc = mf_torch_convert_run(c, open_bytes, &b, &r, err, sizeof err);
        ck_assert_msg(rc == 0, "run %d: %d %s", i, rc, err);
        say(t, "-- run %d\n", i);
    }
    mf_torch_convert_free(c);
    return r;
}

/* ---- the tests ---- */

/* fuzz finding 1 (tests/fuzz/pickle_regressions.txt): an alloc with no
 * frames or user_metadata before any string was interned. */
static const unsigned char finding1[] =
    "\x80\x04\x95\xcc\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x08\x73\x65"
    "\x67\x6d\x65\x6e\x74\x73\x94\x5d\x94\x8c\x0d\x64\x65\x76\x69\x63\x65\x5f"
    "\x74\x72\x61\x63\x65\x73\x94\x5d\x94\x5d\x94\x7d\x94\x28\x8c\x06\x61\x63"
    "\x74\x69\x6f\x6e\x94\x8c\x05\x61\x6c\x6c\x6f\x63\x94\x8c\x04\x61\x64\x64"
    "\x72\x94\x4b\x01\x75\x61\x61\x75\x2e";

/* fuzz finding 2: a final segment (live before the history) and no trace. */
static const unsigned char finding2[] =
    "\x80\x04\x95\x0e\x03\x00\x00\x00\x00\x00\x00\x5d\x94\x28\x7d\x94\x28\x8c"
    "\x06\x64\x65\x76\x69\x63\x65\x94\x4b\x00\x8c\x07\x61\x64\x64\x72\x65\x73"
    "\x73\x94\x8a\x06\x00\x00\x00\x00\x00\x7f\x8c\x0a\x74\x6f\x74\x61\x6c\x5f"
    "\x73\x69\x7a\x65\x94\x4a\x00\x00\x20\x00\x8c\x0e\x61\x6c\x6c\x6f\x63\x61"
    "\x55\x74\x65\x64\x73\x5f\x44\x41\x43\x61\x63\x68\x69\x6e\x67\x01\x04\x41"
    "\x6c\x6c\x6f\x63\x61\x74\x6f\x72\x3a\x3a\x6d\x61\x6c\x6c\x6f\x63\x94\x68"
    "\x1a\x8c\x02\x3f\xf8\x3f\x94\x68\x1c\x4b\x68\x14\x4a\x00\x00\x40\x00\x68"
    "\x15\x5d\x94\x28\x7d\x94\x28\x68\x18\x68\x19\x68\x1a\x68\x94\x28\x68\x13"
    "\x8a\x06\x00\x00\x00\x00\x20\x28\x7d\x94\x28\x68\x18\x68\x19\x68\x1a\x68"
    "\x1e\x68\x1c\x4b\x11\x24\x75\x00\x00\x00\x01\x68\x0e\x68\x2c\x75\x65\x75"
    "\x65\x2e";

START_TEST(default_scope_is_the_sinks)
{
    /* finding 1's alloc has no size: a damaged entry, skipped (before
     * that was checked, it was a tensor of 0 bytes in scope "?1") */
    sink_tx t = { 0 };
    mf_torch_result r = convert(&t, finding1, sizeof finding1 - 1, 2);
    ck_assert_str_eq(t.out, "-- run 0\n-- run 1\n");
    ck_assert_uint_eq(r.damaged, 1);
    ck_assert_uint_eq(r.entries, 0);
    tx_free_strings(&t);

    /* finding 2: "<unk>:" is the sink's string 1 because the converter asked for it */
    sink_tx u = { 0 };
    convert(&u, finding2, sizeof finding2 - 1, 2);
    ck_assert_str_eq(u.out, "note 40 1000000000 18446744073709551615\n"
                            "alloc 100 0x140 1000000000 0x7f0000000000 2097152 2097152 <unk>: 0\n"
                            "-- run 0\n"
                            "-- run 1\n");
    tx_free_strings(&u);
}
END_TEST

START_TEST(default_scope_after_other_strings)
{
    /* an entry with a frame interns its texts first: the default scope is
     * the sink's string 3, not its string 1 (the frame's function) */
    pk p;
    pk_begin(&p);
    OP(&p, "}(");
    pk_str(&p, "action");
    pk_str(&p, "alloc");
    pk_str(&p, "addr");
    pk_int(&p, 0x1000);
    pk_str(&p, "size");
    pk_int(&p, 512);
    pk_str(&p, "frames");
    OP(&p, "]}(");
    pk_str(&p, "filename");
    pk_str(&p, "model.py");
    pk_str(&p, "line");
    pk_int(&p, 17);
    pk_str(&p, "name");
    pk_str(&p, "forward");
    OP(&p, "uau");   /* the frame, the frames list, the entry */
    pk_entry(&p, "free_completed", 0x1000, 512, UINT64_MAX);
    pk_end(&p);
    sink_tx t = { 0 };
    mf_torch_result r = convert(&t, p.b, p.n, 1);
    ck_assert_str_eq(t.out, "note 40 1000000000 0\n"
                            "alloc 100 0x121 1000000000 0x1000 512 512 <unk>: 1\n"
                            "free 100 0x120 1000001000 0x1000\n"
                            "-- run 0\n");
    ck_assert_uint_eq(t.n_strings, 3);
    ck_assert_str_eq(t.strings[0], "forward");
    ck_assert_str_eq(t.strings[1], "model.py");
    ck_assert_str_eq(t.strings[2], "<unk>:");
    ck_assert_uint_eq(r.tensors, 1);
    ck_assert_uint_eq(r.tensor_frees, 1);
    tx_free_strings(&t);
}
END_TEST

static void tx_problem(void *arg, uint64_t offset, const char *what)
{
    say(arg, "problem at %" PRIu64 ": %s\n", offset, what);
}

START_TEST(damaged_and_contradictory_entries)
{
    /* skipped: an alloc without size, a free_requested without addr;
     * contradictory: an alloc where a tensor is live (it ends there); each
     * named with the offset of its dict, the rest converted */
    pk p;
    uint64_t at[5];   /* where each entry's dict begins */
    pk_begin(&p);
    at[0] = p.n;
    pk_entry(&p, "alloc", 0x1000, 512, UINT64_MAX);
    at[1] = p.n;
    pk_entry(&p, "alloc", 0x2000, UINT64_MAX, UINT64_MAX);
    at[2] = p.n;
    pk_entry(&p, "alloc", 0x1000, 256, UINT64_MAX);
    at[3] = p.n;
    pk_entry(&p, "free_requested", UINT64_MAX, 256, UINT64_MAX);
    at[4] = p.n;
    pk_entry(&p, "free_completed", 0x1000, 256, UINT64_MAX);
    pk_end(&p);
    sink_tx t = { 0 };
    mf_torch_sink sink = { .ctx = &t, .intern = tx_intern, .alloc = tx_alloc, .free = tx_free,
                           .note = tx_note };
    mf_torch_options opt = { .order_origin_ns = 1000000000ull, .problem = tx_problem,
                             .problem_arg = &t };
    mf_torch_convert *c = mf_torch_convert_new(&sink, &opt);
    ck_assert_ptr_nonnull(c);
    bytes b = { p.b, p.n };
    mf_torch_result r;
    char err[400], want[2048];
    ck_assert_int_eq(mf_torch_convert_run(c, open_bytes, &b, &r, err, sizeof err), 0);
    mf_torch_convert_free(c);
    snprintf(want, sizeof want,
             "note 40 1000000000 0\n"
             "alloc 100 0x121 1000000000 0x1000 512 512 <unk>: 0\n"
             "problem at %" PRIu64 ": device 0, entry 1: an alloc without an integer size: "
             "skipped\n"
             "problem at %" PRIu64 ": device 0, entry 2: an alloc at 0x1000, where a tensor is "
             "live: that tensor ends here\n"
             "free 100 0x120 1000002000 0x1000\n"
             "alloc 100 0x121 1000002000 0x1000 256 256 <unk>: 0\n"
             "problem at %" PRIu64 ": device 0, entry 3: a free_requested without an integer "
             "addr: skipped\n"
             "free 100 0x120 1000004000 0x1000\n"
             "note 44 1000004000 1\n",
             at[1], at[2], at[3]);
    ck_assert_str_eq(t.out, want);
    ck_assert_uint_eq(r.entries, 3);
    ck_assert_uint_eq(r.damaged, 2);
    ck_assert_uint_eq(r.inconsistent, 1);
    ck_assert_uint_eq(r.tensors, 2);
    ck_assert_uint_eq(r.tensor_frees, 1);
    tx_free_strings(&t);
}
END_TEST

static Suite *convert_suite(void)
{
    Suite *s = suite_create("torch_convert");
    TCase *tc = tcase_create("convert");
    tcase_add_test(tc, default_scope_is_the_sinks);
    tcase_add_test(tc, default_scope_after_other_strings);
    tcase_add_test(tc, damaged_and_contradictory_entries);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(convert_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
