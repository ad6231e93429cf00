/*
 * check_pickle.c - the safe streaming pickle reader (common/torch/pickle.c) and
 * the PyTorch memory snapshot walker over it (common/torch/torch_snapshot.c).
 *
 * The reader: exact events for plain data, memo references kept (in full,
 * by identity) or refused, the places where `[[], [x]]` and `[[[x]], y]`
 * start alike, every opcode that names, calls or asks for an object refused
 * with its name and offset, unsupported and malformed pickles (bad lengths,
 * frames, UTF-8, stack misuse), the memory budget (memo values dropped,
 * GETs of them refused), nesting limits, and file descriptors.
 *
 * The walker: snapshots of every format written by tests/torch_snapshots.py
 * with Python's own pickle (protocols 2, 4, 5 and the pure-Python
 * pickler) give exactly the callbacks that script's model says; spot
 * checks of counts, addresses, sizes, frames and strings; two passes
 * (segments first, then the trace); a snapshot cut at many offsets, and
 * hostile ones (os.system through GLOBAL or STACK_GLOBAL and REDUCE, a
 * persistent id), refused with the exact message and nothing run.
 */
#include <check.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pickle.h"
#include "torch_snapshot.h"

#define P(s) (s), sizeof(s) - 1

static char fixtures[4096];

/* ---- a transcript of the reader's events ---------------------------------- */

typedef struct tx {
    char *buf;
    size_t len;
    FILE *f;
    int keep;                 /* what begin answers */
    int skip_replays;
    uint64_t ids[64];         /* ids of begins, in order */
    int nids;
} tx;

static void tx_value(FILE *f, const mf_pickle_value *v);

static void tx_items(FILE *f, const char *open, const mf_pickle_value *v)
{
    size_t n;
    const mf_pickle_value *it = mf_pickle_items(v, &n);
    fputs(open, f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        tx_value(f, &it[i]);
    }
    fputc(')', f);
}

static void tx_value(FILE *f, const mf_pickle_value *v)
{
    size_t n;
    const char *b;
    switch ((mf_pickle_kind)v->kind) {
    case MF_PICKLE_NONE:
        fputs("n", f);
        break;
    case MF_PICKLE_BOOL:
        fprintf(f, "b%d", (int)v->u.i);
        break;
    case MF_PICKLE_INT:
        fprintf(f, "i:%lld", (long long)v->u.i);
        break;
    case MF_PICKLE_FLOAT:
        fprintf(f, "f:%g", v->u.f);
        break;
    case MF_PICKLE_STR:
        b = mf_pickle_bytes(v, &n);
        fprintf(f, "s:%.*s", (int)n, b);
        break;
    case MF_PICKLE_BYTES:
    case MF_PICKLE_BIGINT:
        b = mf_pickle_bytes(v, &n);
        fputs(v->kind == MF_PICKLE_BYTES ? "y:" : "L:", f);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%02x", (unsigned char)b[i]);
        break;
    case MF_PICKLE_TUPLE:
        tx_items(f, "t(", v);
        break;
    case MF_PICKLE_FROZENSET:
        tx_items(f, "F(", v);
        break;
    case MF_PICKLE_LIST:
        tx_items(f, "l(", v);
        break;
    case MF_PICKLE_DICT:
        tx_items(f, "d(", v);
        break;
    case MF_PICKLE_SET:
        tx_items(f, "S(", v);
        break;
    }
}

static const char *kind_name(mf_pickle_kind k)
{
    return mf_pickle_kind_name(k);
}

static int tx_begin(void *ctx, const mf_pickle_value *key, mf_pickle_kind kind, uint64_t id,
                    int replay)
{
    tx *t = ctx;
    fprintf(t->f, "B%s", kind_name(kind));
    if (key) {
        fputs(" k=", t->f);
        tx_value(t->f, key);
    }
    if (replay)
        fputs(" R", t->f);
    fputc(';', t->f);
    if (t->nids < 64)
        t->ids[t->nids++] = id;
    return replay && t->skip_replays ? MF_PICKLE_SKIP : t->keep;
}

static int tx_val(void *ctx, const mf_pickle_value *key, const mf_pickle_value *v)
{
    tx *t = ctx;
    fputc('V', t->f);
    tx_value(t->f, v);
    if (key) {
        fputs(" k=", t->f);
        tx_value(t->f, key);
    }
    fputc(';', t->f);
    return 0;
}

static int tx_end(void *ctx, mf_pickle_kind kind)
{
    tx *t = ctx;
    fprintf(t->f, "E%s;", kind_name(kind));
    return 0;
}

static const mf_pickle_handler tx_handler = { tx_begin, tx_val, tx_end };

/* Read data with a fresh reader; *out: the transcript (freed by the caller). */
static mf_pickle_status read_tx(const void *data, size_t n, tx *t, const mf_pickle_limits *lim,
                                char *msg, size_t msglen, char **out)
{
    t->f = open_memstream(&t->buf, &t->len);
    ck_assert_ptr_nonnull(t->f);
    mf_pickle_reader *r = mf_pickle_reader_mem(data, n);
    ck_assert_ptr_nonnull(r);
    if (lim)
        mf_pickle_set_limits(r, lim);
    mf_pickle_status s = mf_pickle_read(r, &tx_handler, t);
    snprintf(msg, msglen, "%s", mf_pickle_error(r));
    mf_pickle_reader_free(r);
    fclose(t->f);
    *out = t->buf;
    return s;
}

static void expect_events(const void *data, size_t n, int keep, const char *want)
{
    tx t = { .keep = keep };
    char msg[400], *got;
    mf_pickle_status s = read_tx(data, n, &t, NULL, msg, sizeof msg, &got);
    ck_assert_msg(s == MF_PICKLE_OK, "failed: %s", msg);
    ck_assert_str_eq(got, want);
    free(got);
}

static void expect_error(const void *data, size_t n, const mf_pickle_limits *lim,
                         mf_pickle_status want, const char *want_msg)
{
    tx t = { 0 };
    char msg[400], *got;
    mf_pickle_status s = read_tx(data, n, &t, lim, msg, sizeof msg, &got);
    free(got);
    ck_assert_msg(s == want, "status %d, not %d: %s", (int)s, (int)want, msg);
    ck_assert_str_eq(msg, want_msg);
}

/* ---- the reader ----------------------------------------------------------- */

START_TEST(plain_data)
{
    /* pickle.dumps({'a': [1, 2.5, None, True], 'b': (1, 'x'), 'c': {}}, protocol=2) */
    expect_events(P("\x80\x02}q\x00(X\x01\x00\x00\x00" "aq\x01]q\x02(K\x01G@\x04\x00\x00\x00\x00"
                    "\x00\x00N\x88" "eX\x01\x00\x00\x00" "bq\x03K\x01X\x01\x00\x00\x00xq\x04\x86q\x05X"
                    "\x01\x00\x00\x00" "cq\x06}q\x07u."), 0,
                  "Bdict;Blist k=s:a;Vi:1;Vf:2.5;Vn;Vb1;Elist;Vt(i:1,s:x) k=s:b;Bdict k=s:c;"
                  "Edict;Edict;");
    /* protocol 4 with FRAME and MEMOIZE: [b'\x00\xff', 2**64, -1, {1}, frozenset(), 'caf\xe9'] */
    expect_events(P("\x80\x04\x95+\x00\x00\x00\x00\x00\x00\x00]\x94(C\x02\x00\xff\x94\x8a\x09\x00"
                    "\x00\x00\x00\x00\x00\x00\x00\x01J\xff\xff\xff\xff\x8f\x94(K\x01\x90(\x91\x94"
                    "\x8c\x05" "caf\xc3\xa9\x94" "e."), 0,
                  "Blist;Vy:00ff;VL:000000000000000001;Vi:-1;Bset;Vi:1;Eset;VF();Vs:caf\xc3\xa9;"
                  "Elist;");
}
END_TEST

START_TEST(single_items)
{
    /* [[{'a': 1}]]: one element each, written with APPEND and SETITEM */
    expect_events(P("\x80\x02]q\x00]q\x01}q\x02X\x01\x00\x00\x00" "aq\x03K\x01saa."), 0,
                  "Blist;Blist;Bdict;Vi:1 k=s:a;Edict;Elist;Elist;");
    /* {'k': {'a': [1]}} against {'k': {}, 'a': [1]}: the same start */
    expect_events(P("\x80\x02}q\x00X\x01\x00\x00\x00kq\x01}q\x02X\x01\x00\x00\x00" "aq\x03]q\x04"
                    "K\x01" "ass."), 0,
                  "Bdict;Bdict k=s:k;Blist k=s:a;Vi:1;Elist;Edict;Edict;");
    expect_events(P("\x80\x02}q\x00(X\x01\x00\x00\x00kq\x01}q\x02X\x01\x00\x00\x00" "aq\x03]q\x04"
                    "K\x01" "au."), 0,
                  "Bdict;Bdict k=s:k;Edict;Blist k=s:a;Vi:1;Elist;Edict;");
}
END_TEST

START_TEST(lists_that_start_alike)
{
    /* [[], [{'a': 1}], 'x'] and [[[{'a': 1}]], 'x'] */
    static const char a[] = "\x80\x02]q\x00(]q\x01]q\x02}q\x03X\x01\x00\x00\x00" "aq\x04K\x01sa"
                            "X\x01\x00\x00\x00xq\x05" "e.";
    static const char b[] = "\x80\x02]q\x00(]q\x01]q\x02}q\x03X\x01\x00\x00\x00" "aq\x04K\x01sa"
                            "aX\x01\x00\x00\x00xq\x05" "e.";
    expect_events(a, sizeof a - 1, 0,
                  "Blist;Blist;Elist;Blist;Bdict;Vi:1 k=s:a;Edict;Elist;Vs:x;Elist;");
    expect_events(b, sizeof b - 1, 0,
                  "Blist;Blist;Blist;Bdict;Vi:1 k=s:a;Edict;Elist;Elist;Vs:x;Elist;");
    /*
     * A look-ahead of 15 bytes tells where the dict goes (its APPEND is 14
     * bytes on) but not where the second list goes: the reader guesses it
     * follows the empty one, right for the first pickle; the second is
     * refused where the guess proves wrong, never reported otherwise.
     */
    mf_pickle_limits lim = { .lookahead = 15 };
    tx t = { 0 };
    char msg[400], *got;
    ck_assert_int_eq(read_tx(a, sizeof a - 1, &t, &lim, msg, sizeof msg, &got), MF_PICKLE_OK);
    ck_assert_str_eq(got, "Blist;Blist;Elist;Blist;Bdict;Vi:1 k=s:a;Edict;Elist;Vs:x;Elist;");
    free(got);
    expect_error(b, sizeof b - 1, &lim, MF_PICKLE_UNSUPPORTED,
                 "offset 27: APPEND adds to a container memflow took to be complete (it could "
                 "not look ahead far enough: raise the look-ahead limit of 15 bytes)");
}
END_TEST

/* [d, d, 'end'] with d = {'x': (1, 2)} shared: the second is a BINGET */
static const char shared[] = "\x80\x02]q\x00(}q\x01X\x01\x00\x00\x00xq\x02K\x01K\x02\x86q\x03"
                             "sh\x01X\x03\x00\x00\x00" "endq\x04" "e.";

START_TEST(memo_keeps_what_is_asked)
{
    expect_events(shared, sizeof shared - 1, MF_PICKLE_KEEP,
                  "Blist;Bdict;Vt(i:1,i:2) k=s:x;Edict;Bdict R;Vt(i:1,i:2) k=s:x;Edict;Vs:end;"
                  "Elist;");
    /* the replay has the first one's id */
    tx t = { .keep = MF_PICKLE_KEEP_ID, .skip_replays = 1 };
    char msg[400], *got;
    ck_assert_int_eq(read_tx(shared, sizeof shared - 1, &t, NULL, msg, sizeof msg, &got),
                     MF_PICKLE_OK);
    ck_assert_str_eq(got, "Blist;Bdict;Vt(i:1,i:2) k=s:x;Edict;Bdict R;Edict;Vs:end;Elist;");
    free(got);
    ck_assert_int_eq(t.nids, 3);
    ck_assert_uint_eq(t.ids[1], t.ids[2]);
    ck_assert_uint_ne(t.ids[0], t.ids[1]);
    /* kept by identity only, and not skipped: refused */
    t = (tx){ .keep = MF_PICKLE_KEEP_ID };
    ck_assert_int_eq(read_tx(shared, sizeof shared - 1, &t, NULL, msg, sizeof msg, &got),
                     MF_PICKLE_UNSUPPORTED);
    free(got);
    ck_assert_str_eq(msg, "offset 37: its reader did not skip a dict it kept by identity (id 2)");
    /* not kept at all: the GET is refused with its index and offset */
    expect_error(shared, sizeof shared - 1, NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 25: BINGET of memo index 1: the object was not kept in memory (a list, "
                 "dict or set read through once, or a value dropped for the memory limit)");
}
END_TEST

START_TEST(memo_errors)
{
    expect_error(P("\x80\x02]q\x00h\x07" "a."), NULL, MF_PICKLE_MALFORMED,
                 "offset 5: BINGET of memo index 7, where nothing was stored");
    /* l = []; l.append(l): the GET finds the list complete, so not kept, or kept and
     * then complete when APPEND adds to it */
    expect_error(P("\x80\x02]q\x00h\x00" "a."), NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 5: BINGET of memo index 0: the object was not kept in memory (a list, "
                 "dict or set read through once, or a value dropped for the memory limit)");
    tx t = { .keep = MF_PICKLE_KEEP };
    char msg[400], *got;
    ck_assert_int_eq(read_tx(P("\x80\x02]q\x00h\x00" "a."), &t, NULL, msg, sizeof msg, &got),
                     MF_PICKLE_MALFORMED);
    free(got);
    ck_assert_str_eq(msg, "offset 7: APPEND of a list to a finished object");
    /* l = [[]]; l[0].append(l) : the outer list is still being read */
    expect_error(P("\x80\x02]q\x00]q\x01h\x00" "aa."), NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 8: BINGET of memo index 0: the list it names is still being read (a "
                 "recursive structure, not supported)");
    expect_error(P("\x80\x04]\x94q\x01."), NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 4: BINPUT in a pickle that also uses MEMOIZE (not supported)");
    expect_error(P("\x80\x02q\x00."), NULL, MF_PICKLE_MALFORMED,
                 "offset 2: BINPUT with an empty stack");
}
END_TEST

/* Each opcode that names, calls or asks for an object, right after PROTO 2. */
START_TEST(refused_opcodes)
{
    static const struct {
        const char *bytes;
        size_t len;
        const char *msg;
    } cases[] = {
        { P("\x80\x02" "cposix\x0asystem\x0aq\x00X\x05\x00\x00\x00touch\x85R."),
          "offset 2: opcode GLOBAL refused: it names a Python object (memflow reads plain data only)" },
        { P("\x80\x04\x8c\x05posix\x94\x8c\x06system\x94\x93\x94)R."),
          "offset 19: opcode STACK_GLOBAL refused: it names a Python object (memflow reads plain data only)" },
        { P("\x80\x02N)R."),
          "offset 4: opcode REDUCE refused: it calls Python code (memflow reads plain data only)" },
        { P("\x80\x02}N\x85" "b."),
          "offset 5: opcode BUILD refused: it calls Python code (memflow reads plain data only)" },
        { P("\x80\x02(iposix\x0asystem\x0a."),
          "offset 3: opcode INST refused: it names a Python object (memflow reads plain data only)" },
        { P("\x80\x02(No."),
          "offset 4: opcode OBJ refused: it calls Python code (memflow reads plain data only)" },
        { P("\x80\x02N)\x81."),
          "offset 4: opcode NEWOBJ refused: it calls Python code (memflow reads plain data only)" },
        { P("\x80\x04N))\x92."),
          "offset 5: opcode NEWOBJ_EX refused: it calls Python code (memflow reads plain data only)" },
        { P("\x80\x02\x82\x01."),
          "offset 2: opcode EXT1 refused: it names a Python object (memflow reads plain data only)" },
        { P("\x80\x02\x83\x01\x00."),
          "offset 2: opcode EXT2 refused: it names a Python object (memflow reads plain data only)" },
        { P("\x80\x02\x84\x01\x00\x00\x00."),
          "offset 2: opcode EXT4 refused: it names a Python object (memflow reads plain data only)" },
        { P("\x80\x02P0\x0a."),
          "offset 2: opcode PERSID refused: it asks for a persistent object (memflow reads plain data only)" },
        { P("\x80\x02K\x00Q."),
          "offset 4: opcode BINPERSID refused: it asks for a persistent object (memflow reads plain data only)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_error(cases[i].bytes, cases[i].len, NULL, MF_PICKLE_REFUSED, cases[i].msg);
}
END_TEST

START_TEST(unsupported_pickles)
{
    expect_error(P("]."), NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 0: not a pickle of protocol 2 or later (it starts with EMPTY_LIST, byte 0x5d)");
    expect_error(P("\x80\x01N."), NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 0: pickle protocol 1 is not supported (memflow reads protocols 2 to 5)");
    expect_error(P("\x80\x06N."), NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 0: unknown pickle protocol 6");
    expect_error(P("\x80\x02I01\x0a."), NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 2: opcode INT is not supported (a text opcode of protocol 0; memflow "
                 "reads protocols 2 to 5)");
    expect_error(P("\x80\x02N0N."), NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 3: opcode POP is not supported (stack manipulation, as for a recursive "
                 "structure)");
    expect_error(P("\x80\x05\x97."), NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 2: opcode NEXT_BUFFER is not supported (out-of-band buffers)");
    /* ([],): a tuple holding a list */
    expect_error(P("\x80\x02]q\x00\x85q\x01."), NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 5: a tuple holding a list (not supported)");
    expect_error(P("\x80\x02(]t."), NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 3: a tuple holding a list (not supported)");
}
END_TEST

START_TEST(malformed_pickles)
{
    expect_error(P("\x80\x02\xff."), NULL, MF_PICKLE_MALFORMED, "offset 2: unknown opcode 0xff");
    expect_error(P("\x80\x02\x8b\xff\xff\xff\xff."), NULL, MF_PICKLE_MALFORMED,
                 "offset 2: LONG4 length -1 is negative");
    expect_error(P("\x80\x02T\xfe\xff\xff\xff."), NULL, MF_PICKLE_MALFORMED,
                 "offset 2: BINSTRING length -2 is negative");
    expect_error(P("\x80\x04\x8d\x00\x00\x00\x00\x00\x00\x00\x80."), NULL, MF_PICKLE_MALFORMED,
                 "offset 2: BINUNICODE8 length 9223372036854775808 is over the largest size");
    expect_error(P("\x80\x02X\xe8\x03\x00\x00" "abc."), NULL, MF_PICKLE_TRUNCATED,
                 "offset 2: the data ends inside BINUNICODE (1000 bytes needed, 4 left)");
    /* a FRAME of 3 bytes, then a 6-byte string: it crosses the frame's end */
    expect_error(P("\x80\x04\x95\x03\x00\x00\x00\x00\x00\x00\x00\x8c\x04" "abcd."), NULL,
                 MF_PICKLE_MALFORMED, "offset 11: its FRAME ends inside SHORT_BINUNICODE (at offset 14)");
    expect_error(P("\x80\x04\x95\x04\x00\x00\x00\x00\x00\x00\x00\x95\x01\x00\x00\x00\x00\x00\x00"
                   "\x00N."), NULL, MF_PICKLE_MALFORMED,
                 "offset 11: its FRAME ends inside FRAME (at offset 15)");
    expect_error(P("\x80\x04\x95\x01\x00\x00\x00\x00\x00\x00\x00N\x95\xff\xff\xff\xff\xff\xff\xff"
                   "\xff."), NULL, MF_PICKLE_MALFORMED,
                 "offset 12: FRAME length 18446744073709551615 is over the largest size");
    expect_error(P("\x80\x02X\x02\x00\x00\x00\xc3("), NULL, MF_PICKLE_MALFORMED,
                 "offset 2: BINUNICODE is not UTF-8 (byte 0x28 at offset 8)");
    expect_error(P("\x80\x02X\x01\x00\x00\x00\xff."), NULL, MF_PICKLE_MALFORMED,
                 "offset 2: BINUNICODE is not UTF-8 (byte 0xff at offset 7)");
    expect_error(P("\x80\x02U\x02" "a\xe9."), NULL, MF_PICKLE_MALFORMED,
                 "offset 2: SHORT_BINSTRING is not ASCII (byte 0xe9 at offset 5)");
    expect_error(P("\x80\x02Na."), NULL, MF_PICKLE_MALFORMED,
                 "offset 3: APPEND with too few objects on the stack");
    expect_error(P("\x80\x02NN."), NULL, MF_PICKLE_MALFORMED,
                 "offset 4: STOP with 2 objects on the stack");
    expect_error(P("\x80\x02(N."), NULL, MF_PICKLE_MALFORMED, "offset 4: STOP inside a MARK");
    expect_error(P("\x80\x02}(K\x01u."), NULL, MF_PICKLE_MALFORMED,
                 "offset 6: SETITEMS with an odd number of items");
    expect_error(P("\x80\x02}(]K\x01u."), NULL, MF_PICKLE_MALFORMED,
                 "offset 4: an unhashable dict key (a list)");
    /* {'k': [], [], 'j': []}: the second list can only be the first's element,
     * and nothing may come beside it (found by fuzz_pickle) */
    expect_error(P("\x80\x02}(X\x01\x00\x00\x00k]]X\x01\x00\x00\x00j]u."), NULL,
                 MF_PICKLE_MALFORMED, "offset 18: a list beside a list that waits for its APPEND");
    expect_error(P("\x80\x02N(Ne."), NULL, MF_PICKLE_MALFORMED, "offset 5: APPENDS to a None");
    expect_error(P("\x80\x02NNK\x01\x87K\x01u."), NULL, MF_PICKLE_MALFORMED,
                 "offset 9: SETITEMS without a MARK");
    expect_error(P(""), NULL, MF_PICKLE_TRUNCATED, "offset 0: empty, not a pickle");
    expect_error(P("\x80\x02N"), NULL, MF_PICKLE_TRUNCATED, "offset 3: the data ends before STOP");
}
END_TEST

START_TEST(limits)
{
    mf_pickle_limits small_strings = { .max_string = 10 };
    expect_error(P("\x80\x02X\x14\x00\x00\x00" "01234567890123456789."), &small_strings,
                 MF_PICKLE_MEMORY, "offset 2: BINUNICODE of 20 bytes is over the limit of 10 bytes");
    /* 1001 nested lists; 1001 nested tuples */
    char deep[4096];
    size_t n = 0;
    deep[n++] = '\x80';
    deep[n++] = 2;
    for (int i = 0; i < 1001; i++)
        deep[n++] = ']';
    deep[n++] = '.';
    expect_error(deep, n, NULL, MF_PICKLE_UNSUPPORTED,
                 "offset 1002: containers nested deeper than 1000");
    n = 3;
    deep[2] = 'N';
    for (int i = 0; i < 1001; i++)
        deep[n++] = '\x85';
    deep[n++] = '.';
    expect_error(deep, n, NULL, MF_PICKLE_UNSUPPORTED, "offset 1003: values nested deeper than 1000");
}
END_TEST

/*
 * 64 strings memoized first ("const 0000" ..), then 60,000 fresh memoized
 * ones, each followed by LONG_BINGETs of the next 4 constants: under a 128
 * KiB budget the memo (a small table) sweeps hundreds of times, dropping
 * the fresh strings in place and closing the holes they leave in the probe
 * runs the constants share with them (without that, a GET of a constant
 * stops at a hole and is refused).  Every value comes back, in order.
 */
#define SWEEP_CONSTS 64u
#define SWEEP_FRESH 60000u
#define SWEEP_GETS 4u

static size_t sweep_put(char *p, size_t at, const char *text, uint32_t idx)
{
    size_t n = strlen(text);
    p[at++] = 'X';
    uint32_t len = (uint32_t)n;
    memcpy(p + at, &len, 4);
    memcpy(p + at + 4, text, n);
    at += 4 + n;
    p[at++] = 'r';
    memcpy(p + at, &idx, 4);
    return at + 4;
}

typedef struct sweep_check {
    unsigned next, fresh, gets, bad;
} sweep_check;

/* The string expected next: the constants, then each fresh string and the
 * next SWEEP_GETS constants in turn. */
static void sweep_expected(sweep_check *c, char *out, size_t size)
{
    if (c->next < SWEEP_CONSTS)
        snprintf(out, size, "const %04u", c->next);
    else if ((c->next - SWEEP_CONSTS) % (SWEEP_GETS + 1) == 0)
        snprintf(out, size, "fresh %08u", c->fresh++);
    else
        snprintf(out, size, "const %04u", c->gets++ % SWEEP_CONSTS);
    c->next++;
}

static int sweep_value(void *ctx, const mf_pickle_value *key, const mf_pickle_value *v)
{
    sweep_check *c = ctx;
    char want[32];
    (void)key;
    sweep_expected(c, want, sizeof want);
    if (!mf_pickle_is_str(v, want))
        c->bad++;
    return 0;
}

START_TEST(memo_sweep_keeps_runs)
{
    char *p = malloc(64 + (size_t)(SWEEP_CONSTS + SWEEP_FRESH * (SWEEP_GETS + 1)) * 24);
    size_t at = 0;
    memcpy(p, "\x80\x02]r\x00\x00\x00\x00(", 9);
    at = 9;
    char text[32];
    for (uint32_t i = 0; i < SWEEP_CONSTS; i++) {
        snprintf(text, sizeof text, "const %04u", i);
        at = sweep_put(p, at, text, i + 1);
    }
    uint32_t gets = 0;
    for (uint32_t i = 0; i < SWEEP_FRESH; i++) {
        if (i % 200 == 0) {                /* batches of 1000 items, as CPython writes them */
            memcpy(p + at, "e(", 2);
            at += 2;
        }
        snprintf(text, sizeof text, "fresh %08u", i);
        at = sweep_put(p, at, text, SWEEP_CONSTS + 1 + i);
        for (uint32_t k = 0; k < SWEEP_GETS; k++) {
            uint32_t idx = gets++ % SWEEP_CONSTS + 1;
            p[at++] = 'j';
            memcpy(p + at, &idx, 4);
            at += 4;
        }
    }
    memcpy(p + at, "e.", 2);
    at += 2;
    mf_pickle_reader *r = mf_pickle_reader_mem(p, at);
    mf_pickle_limits lim = { .memory = 128 << 10 };
    mf_pickle_set_limits(r, &lim);
    sweep_check c = { 0, 0, 0, 0 };
    mf_pickle_handler h = { NULL, sweep_value, NULL };
    ck_assert_int_eq(mf_pickle_read(r, &h, &c), MF_PICKLE_OK);
    ck_assert_uint_eq(c.bad, 0);
    ck_assert_uint_eq(c.next, SWEEP_CONSTS + SWEEP_FRESH * (SWEEP_GETS + 1));
    mf_pickle_stats st;
    mf_pickle_stats_get(r, &st);
    ck_assert_uint_gt(st.memo_evicted, 50000);
    ck_assert_uint_le(st.memory_peak, 128 << 10);
    mf_pickle_reader_free(r);
    free(p);
}
END_TEST

/*
 * A list of n fresh strings, each memoized, in batches of 1000 as CPython
 * writes them; then a LONG_BINGET of string number get.  Under a small
 * budget the memo drops old strings only it holds: the read goes through
 * when the GET names a recent string; the GET of the first one is refused.
 */
static char *many_strings(unsigned n, unsigned get, size_t *len)
{
    char *p = malloc(64 + (size_t)n * 40);
    size_t at = 0;
    memcpy(p, "\x80\x02]r\x00\x00\x00\x00", 8);
    at = 8;
    for (unsigned i = 0; i < n; i++) {
        if (i % 1000 == 0)
            p[at++] = '(';
        at += (size_t)sprintf(p + at, "X%c%c%c%cstring number %08u", 22, 0, 0, 0, i);
        p[at++] = 'r';
        uint32_t idx = i + 1;
        memcpy(p + at, &idx, 4);
        at += 4;
        if (i % 1000 == 999)
            p[at++] = 'e';
    }
    p[at++] = 'j';
    uint32_t idx = get + 1;
    memcpy(p + at, &idx, 4);
    at += 4;
    memcpy(p + at, "a.", 2);
    *len = at + 2;
    return p;
}

START_TEST(memo_budget)
{
    size_t len;
    char *p = many_strings(100000, 99999, &len);
    mf_pickle_reader *r = mf_pickle_reader_mem(p, len);
    mf_pickle_limits lim = { .memory = 2 << 20 };
    mf_pickle_set_limits(r, &lim);
    ck_assert_int_eq(mf_pickle_read(r, NULL, NULL), MF_PICKLE_OK);
    mf_pickle_stats st;
    mf_pickle_stats_get(r, &st);
    ck_assert_uint_gt(st.memo_evicted, 50000);
    ck_assert_uint_le(st.memory_peak, 2 << 20);
    ck_assert_uint_eq(st.bytes, len);
    mf_pickle_reader_free(r);
    free(p);

    p = many_strings(100000, 0, &len);
    char msg[256];
    snprintf(msg, sizeof msg, "offset %zu: LONG_BINGET of memo index 1: the object was not kept "
             "in memory (a list, dict or set read through once, or a value dropped for the "
             "memory limit)", len - 7);
    expect_error(p, len, &lim, MF_PICKLE_UNSUPPORTED, msg);
    r = mf_pickle_reader_mem(p, len);
    ck_assert_int_eq(mf_pickle_read(r, NULL, NULL), MF_PICKLE_OK);   /* 128 MiB: all kept */
    mf_pickle_stats_get(r, &st);
    ck_assert_uint_eq(st.memo_evicted, 0);
    ck_assert_uint_eq(st.memo_kept, 100000);
    mf_pickle_reader_free(r);
    free(p);
}
END_TEST

START_TEST(file_descriptors)
{
    int fds[2];
    char err[200];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_ptr_null(mf_pickle_reader_fd(fds[0], err, sizeof err));
    ck_assert_str_eq(err, "not a regular file (the reader looks ahead, so it needs a file it can "
                          "seek in)");
    close(fds[0]);
    close(fds[1]);
    /* a file read through a small buffer window: the same events as from memory */
    char path[4200];
    snprintf(path, sizeof path, "%s/shared.pickle", fixtures);
    FILE *f = fopen(path, "wb");
    fwrite(shared, 1, sizeof shared - 1, f);
    fclose(f);
    int fd = open(path, O_RDONLY);
    mf_pickle_reader *r = mf_pickle_reader_fd(fd, err, sizeof err);
    ck_assert_ptr_nonnull(r);
    tx t = { .keep = MF_PICKLE_KEEP };
    t.f = open_memstream(&t.buf, &t.len);
    ck_assert_int_eq(mf_pickle_read(r, &tx_handler, &t), MF_PICKLE_OK);
    fclose(t.f);
    ck_assert_str_eq(t.buf, "Blist;Bdict;Vt(i:1,i:2) k=s:x;Edict;Bdict R;Vt(i:1,i:2) k=s:x;Edict;"
                            "Vs:end;Elist;");
    free(t.buf);
    ck_assert_int_eq(mf_pickle_read(r, NULL, NULL), MF_PICKLE_MALFORMED);
    ck_assert_str_eq(mf_pickle_error(r), "offset 0: a reader reads once");
    mf_pickle_reader_free(r);
    close(fd);
}
END_TEST

/* ---- the walker ------------------------------------------------------------ */

typedef struct snap_tx {
    FILE *f;
    char *buf;
    size_t len;
    mf_torch_frame frame_copy[64];   /* names copied: the walker's live until it returns */
    char frame_text[64][2][96];
    int nframes;
    mf_torch_entry ent[32];
    uint32_t ent_frames[32][8];
    char ent_md[32][32];
    char ent_cc[32][32];
    int nent;
    mf_torch_segment seg[8];
    mf_torch_block blocks[8][4];
    int nseg;
    int stop_at_entry;        /* stop when this many entries came (0: never) */
} snap_tx;

static const char *id_or_dash(uint32_t id, char *buf)
{
    if (id == MF_TORCH_NO_STACK)
        return "-";
    sprintf(buf, "%u", id);
    return buf;
}

static int s_frame(void *ctx, const mf_torch_frame *fr)
{
    snap_tx *t = ctx;
    fprintf(t->f, "frame %u %s %lld %s\n", fr->id, fr->filename, (long long)fr->line, fr->name);
    if (t->nframes < 64) {
        snprintf(t->frame_text[t->nframes][0], 96, "%s", fr->filename);
        snprintf(t->frame_text[t->nframes][1], 96, "%s", fr->name);
        t->frame_copy[t->nframes] = *fr;
        t->frame_copy[t->nframes].filename = t->frame_text[t->nframes][0];
        t->frame_copy[t->nframes].name = t->frame_text[t->nframes][1];
        t->nframes++;
    }
    return 0;
}

static int s_stack(void *ctx, uint32_t id, const uint32_t *frames, uint32_t n)
{
    snap_tx *t = ctx;
    fprintf(t->f, "stack %u", id);
    for (uint32_t i = 0; i < n; i++)
        fprintf(t->f, " %u", frames[i]);
    fputc('\n', t->f);
    return 0;
}

static int s_segment(void *ctx, const mf_torch_segment *s)
{
    snap_tx *t = ctx;
    char a[16], pool[48], exp[8];
    if (s->flags & MF_TORCH_HAS_POOL)
        sprintf(pool, "%lld,%lld", (long long)s->pool_id[0], (long long)s->pool_id[1]);
    else
        strcpy(pool, "-");
    if (s->flags & MF_TORCH_HAS_EXPANDABLE)
        sprintf(exp, "%d", s->is_expandable);
    else
        strcpy(exp, "-");
    fprintf(t->f, "segment %llu dev=%lld addr=%llu total=%llu alloc=%llu active=%llu req=%llu "
            "stream=%lld large=%d pool=%s exp=%s stack=%s blocks=%zu\n",
            (unsigned long long)s->index, (long long)s->device, (unsigned long long)s->address,
            (unsigned long long)s->total_size, (unsigned long long)s->allocated_size,
            (unsigned long long)s->active_size, (unsigned long long)s->requested_size,
            (long long)s->stream, s->large, pool, exp, id_or_dash(s->stack, a), s->nblocks);
    for (size_t i = 0; i < s->nblocks; i++) {
        const mf_torch_block *b = &s->blocks[i];
        fprintf(t->f, "  block %llu %llu %llu %u %s\n", (unsigned long long)b->address,
                (unsigned long long)b->size, (unsigned long long)b->requested_size, b->state,
                id_or_dash(b->stack, a));
    }
    if (t->nseg < 8) {
        t->seg[t->nseg] = *s;
        for (size_t i = 0; i < s->nblocks && i < 4; i++)
            t->blocks[t->nseg][i] = s->blocks[i];
        t->nseg++;
    }
    return 0;
}

static int s_entry(void *ctx, const mf_torch_entry *e)
{
    snap_tx *t = ctx;
    char a[16], addr[24], freeb[24], time[24], pool[48];
    strcpy(addr, "-");
    strcpy(freeb, "-");
    strcpy(time, "-");
    strcpy(pool, "-");
    if (e->flags & MF_TORCH_HAS_ADDRESS)
        sprintf(addr, "%llu", (unsigned long long)e->addr);
    if (e->flags & MF_TORCH_HAS_DEVICE_FREE)
        sprintf(freeb, "%llu", (unsigned long long)e->device_free);
    if (e->flags & MF_TORCH_HAS_TIME)
        sprintf(time, "%lld", (long long)e->time_us);
    if (e->flags & MF_TORCH_HAS_POOL)
        sprintf(pool, "%lld,%lld", (long long)e->pool_id[0], (long long)e->pool_id[1]);
    fprintf(t->f, "entry %lld %llu %s addr=%s size=%llu free=%s stream=%lld time=%s pool=%s "
            "stack=%s cc=", (long long)e->device, (unsigned long long)e->index,
            mf_torch_action_name((mf_torch_action)e->action), addr, (unsigned long long)e->size,
            freeb, (long long)e->stream, time, pool, id_or_dash(e->stack, a));
    if (e->compile_context)
        fprintf(t->f, "'%s'", e->compile_context);
    else
        fputc('-', t->f);
    fputs(" md=", t->f);
    if (e->user_metadata)
        fprintf(t->f, "'%s'\n", e->user_metadata);
    else
        fputs("-\n", t->f);
    if (t->nent < 32) {
        t->ent[t->nent] = *e;
        for (uint32_t i = 0; i < e->nframes && i < 8; i++)
            t->ent_frames[t->nent][i] = e->frames[i];
        snprintf(t->ent_md[t->nent], 32, "%s", e->user_metadata ? e->user_metadata : "(none)");
        snprintf(t->ent_cc[t->nent], 32, "%s", e->compile_context ? e->compile_context : "(none)");
        t->nent++;
    }
    return t->stop_at_entry && t->nent == t->stop_at_entry ? -7 : 0;
}

static int s_section(void *ctx, mf_torch_section which, int begin, int64_t device, uint64_t off,
                     uint64_t count)
{
    snap_tx *t = ctx;
    (void)off;
    const char *name = which == MF_TORCH_SEGMENTS ? "segments" : which == MF_TORCH_TRACES
                     ? "traces" : "device";
    fprintf(t->f, "section %s", name);
    if (which == MF_TORCH_DEVICE)
        fprintf(t->f, " %lld", (long long)device);
    if (begin)
        fputs(" begin\n", t->f);
    else
        fprintf(t->f, " end %llu\n", (unsigned long long)count);
    return 0;
}

static int s_unknown(void *ctx, const char *name, int64_t device, uint64_t index)
{
    snap_tx *t = ctx;
    fprintf(t->f, "unknown %s %lld %llu\n", name, (long long)device, (unsigned long long)index);
    return 0;
}

static const mf_torch_handler snap_handler = { s_frame, s_stack, s_segment, s_entry, s_section,
                                               s_unknown };

static char *slurp(const char *name, const char *ext, size_t *len)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/%s%s", fixtures, name, ext);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "no fixture %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    p[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return p;
}

/* Walk data (the first len bytes); the transcript in t (t->buf, freed by the caller). */
static int walk(const char *data, size_t len, unsigned want, snap_tx *t, mf_torch_stats *st,
                char *err, size_t errlen)
{
    t->f = open_memstream(&t->buf, &t->len);
    mf_pickle_reader *r = mf_pickle_reader_mem(data, len);
    int rc = mf_torch_walk(r, want, &snap_handler, t, st, err, errlen);
    mf_pickle_reader_free(r);
    fclose(t->f);
    return rc;
}

static const char *const fixture_names[] = {
    "v1_13-2", "v1_13-4", "v1_13-py4", "v2_0-2", "v2_0-4", "v2_0-py4", "v2_1-2", "v2_1-4",
    "v2_1-py4", "current-2", "current-4", "current-5", "current-py4"
};

START_TEST(snapshots_as_the_model_says)
{
    const char *name = fixture_names[_i];
    size_t len, elen;
    char *data = slurp(name, ".pickle", &len);
    char *want = slurp(name, ".expect", &elen);
    snap_tx *t = calloc(1, sizeof *t);
    mf_torch_stats st;
    char err[400] = "";
    ck_assert_msg(walk(data, len, MF_TORCH_WANT_ALL, t, &st, err, sizeof err) == 0, "%s: %s",
                  name, err);
    ck_assert_str_eq(t->buf, want);
    ck_assert_uint_eq(st.pickle.bytes, len);
    free(t->buf);
    free(t);
    free(data);
    free(want);
}
END_TEST

#define SEG0 0x7F0000000000ull
#define SEG2 0x7F2000000000ull
#define MiB (1ull << 20)

START_TEST(current_snapshot_details)
{
    const char *name = fixture_names[9 + _i];     /* current-2, -4, -5, -py4 */
    size_t len;
    char *data = slurp(name, ".pickle", &len);
    snap_tx *t = calloc(1, sizeof *t);
    mf_torch_stats st;
    char err[400];
    ck_assert_int_eq(walk(data, len, MF_TORCH_WANT_ALL, t, &st, err, sizeof err), 0);
    ck_assert_int_eq(st.top_is_list, 0);
    ck_assert_uint_eq(st.segments, 2);
    ck_assert_uint_eq(st.blocks, 5);
    ck_assert_uint_eq(st.devices, 3);
    ck_assert_uint_eq(st.entries, 16);
    ck_assert_uint_eq(st.with_time, 16);
    ck_assert_uint_eq(st.by_action[MF_TORCH_ALLOC], 4);
    ck_assert_uint_eq(st.by_action[MF_TORCH_FREE_REQUESTED], 3);
    ck_assert_uint_eq(st.by_action[MF_TORCH_FREE_COMPLETED], 2);
    ck_assert_uint_eq(st.by_action[MF_TORCH_SEGMENT_ALLOC], 1);
    ck_assert_uint_eq(st.by_action[MF_TORCH_SEGMENT_FREE], 0);
    ck_assert_uint_eq(st.by_action[MF_TORCH_SEGMENT_MAP], 2);
    ck_assert_uint_eq(st.by_action[MF_TORCH_SEGMENT_UNMAP], 1);
    ck_assert_uint_eq(st.by_action[MF_TORCH_SNAPSHOT], 1);
    ck_assert_uint_eq(st.by_action[MF_TORCH_OOM], 1);
    ck_assert_uint_eq(st.by_action[MF_TORCH_ANNOTATE], 1);
    ck_assert_uint_eq(st.unknown_actions, 2);
    ck_assert_uint_eq(st.bad_entries, 1);
    ck_assert_uint_eq(st.bad_values, 0);
    ck_assert_uint_eq(st.frames, 4);
    ck_assert_uint_eq(st.stacks, 3);
    /* frames: interned by content (MODEL and MODEL_AGAIN are one frame) */
    ck_assert_int_eq(t->nframes, 4);
    ck_assert_str_eq(t->frame_copy[1].filename, "/home/user/model.py");
    ck_assert_str_eq(t->frame_copy[1].name, "forward");
    ck_assert_int_eq(t->frame_copy[1].line, 17);
    ck_assert_str_eq(t->frame_copy[3].name, "c10::cuda::CUDACachingAllocator::malloc");
    /* the expandable segment on device 2, its frames after its blocks */
    ck_assert_int_eq(t->nseg, 2);
    const mf_torch_segment *s = &t->seg[1];
    ck_assert_int_eq(s->device, 2);
    ck_assert_uint_eq(s->address, SEG2);
    ck_assert_uint_eq(s->total_size, 20 * MiB);
    ck_assert_int_eq(s->is_expandable, 1);
    ck_assert_int_eq(s->large, 1);
    ck_assert_int_eq(s->pool_id[0], 1);
    ck_assert_int_eq(s->pool_id[1], 2);
    ck_assert_int_eq(s->stream, 140245);
    ck_assert_uint_eq(s->stack, 0);
    ck_assert_uint_eq(t->blocks[1][0].state, MF_TORCH_ACTIVE_PENDING_FREE);
    ck_assert_uint_eq(t->blocks[1][1].address, SEG2 + 4 * MiB);
    ck_assert_uint_eq(t->blocks[0][2].stack, MF_TORCH_NO_STACK);
    /* entries */
    ck_assert_int_eq(t->nent, 16);
    const mf_torch_entry *e = &t->ent[1];            /* device 0, entry 1 */
    ck_assert_uint_eq(e->action, MF_TORCH_ALLOC);
    ck_assert_uint_eq(e->addr, SEG0);
    ck_assert_uint_eq(e->size, 512);
    ck_assert_int_eq(e->time_us, 1700000000000010ll);
    ck_assert_uint_eq(e->nframes, 3);
    ck_assert_uint_eq(t->ent_frames[1][0], 0);
    ck_assert_uint_eq(t->ent_frames[1][1], 1);
    ck_assert_uint_eq(t->ent_frames[1][2], 2);
    ck_assert_str_eq(t->ent_md[1], "net:dense0:");
    ck_assert_str_eq(t->ent_cc[1], "");
    ck_assert_str_eq(t->ent_cc[3], "torch/_dynamo: frame 0");
    e = &t->ent[8];                                   /* the oom */
    ck_assert_uint_eq(e->action, MF_TORCH_OOM);
    ck_assert_uint_eq(e->flags & MF_TORCH_HAS_ADDRESS, 0);
    ck_assert_uint_eq(e->device_free, 1 * MiB);
    ck_assert_uint_eq(e->size, 1ull << 30);
    ck_assert_str_eq(t->ent_md[8], "net:dense1:");
    ck_assert_uint_eq(t->ent[2].pool_id[1], 0);
    ck_assert_uint_ne(t->ent[2].flags & MF_TORCH_HAS_POOL, 0);
    e = &t->ent[11];                                  /* device 2's first */
    ck_assert_int_eq(e->device, 2);
    ck_assert_uint_eq(e->index, 0);
    ck_assert_uint_eq(e->action, MF_TORCH_SEGMENT_MAP);
    ck_assert_uint_eq(e->stack, 1);
    ck_assert_uint_eq(e->nframes, 4);
    /* GETs happened: frames and frames lists are shared in the pickle */
    ck_assert_uint_gt(st.pickle.memo_kept, 0);
    free(t->buf);
    free(t);
    free(data);
}
END_TEST

START_TEST(old_snapshot_details)
{
    size_t len;
    char *data = slurp("v1_13-2", ".pickle", &len);
    snap_tx *t = calloc(1, sizeof *t);
    mf_torch_stats st;
    char err[400];
    ck_assert_int_eq(walk(data, len, MF_TORCH_WANT_ALL, t, &st, err, sizeof err), 0);
    ck_assert_int_eq(st.top_is_list, 1);
    ck_assert_uint_eq(st.entries, 0);
    ck_assert_uint_eq(st.devices, 0);
    const mf_torch_block *b = &t->blocks[0][1];
    ck_assert_uint_eq(b->address, SEG0 + 512);        /* computed: the sizes before it */
    ck_assert_uint_eq(b->flags & MF_TORCH_HAS_ADDRESS, 0);
    ck_assert_uint_eq(b->requested_size, 1000);       /* history[0]['real_size'] */
    ck_assert_uint_eq(b->stack, 1);                   /* history[0]['frames'] */
    ck_assert_uint_eq(t->blocks[0][2].requested_size, 2 * MiB - 1536);
    free(t->buf);
    free(data);

    data = slurp("v2_0-4", ".pickle", &len);
    memset(t, 0, sizeof *t);
    ck_assert_int_eq(walk(data, len, MF_TORCH_WANT_ALL, t, &st, err, sizeof err), 0);
    ck_assert_uint_eq(st.entries, 12);
    ck_assert_uint_eq(st.with_time, 0);
    ck_assert_uint_eq(t->ent[0].flags & MF_TORCH_HAS_TIME, 0);
    ck_assert_ptr_null(t->ent[0].user_metadata);
    free(t->buf);
    free(t);
    free(data);
}
END_TEST

START_TEST(two_passes)
{
    size_t len;
    char *data = slurp("current-4", ".pickle", &len);
    snap_tx *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    mf_torch_stats st;
    char err[400];
    ck_assert_int_eq(walk(data, len, MF_TORCH_WANT_SEGMENTS, a, &st, err, sizeof err), 0);
    ck_assert_int_eq(st.stopped_early, 1);
    ck_assert_uint_eq(st.segments, 2);
    ck_assert_uint_eq(st.entries, 0);
    ck_assert_int_eq(a->nent, 0);
    ck_assert_uint_lt(st.pickle.bytes, len / 2);
    ck_assert_int_eq(walk(data, len, MF_TORCH_WANT_TRACES, b, &st, err, sizeof err), 0);
    ck_assert_int_eq(st.stopped_early, 0);
    ck_assert_int_eq(b->nseg, 0);
    ck_assert_int_eq(b->nent, 16);
    ck_assert_ptr_null(strstr(b->buf, "section segments"));
    /* the frames the first pass saw have the same ids in the second */
    ck_assert_int_eq(a->nframes, 4);
    for (int i = 0; i < a->nframes; i++) {
        ck_assert_uint_eq(a->frame_copy[i].id, b->frame_copy[i].id);
        ck_assert_int_eq(a->frame_copy[i].line, b->frame_copy[i].line);
    }
    free(a->buf);
    free(b->buf);
    free(a);
    free(b);
    free(data);
}
END_TEST

static void expect_walk_error(const char *data, size_t len, int want_rc, const char *want)
{
    snap_tx *t = calloc(1, sizeof *t);
    mf_torch_stats st;
    char err[400] = "";
    int rc = walk(data, len, MF_TORCH_WANT_ALL, t, &st, err, sizeof err);
    ck_assert_msg(rc == want_rc, "rc %d, not %d: %s", rc, want_rc, err);
    ck_assert_str_eq(err, want);
    free(t->buf);
    free(t);
}

START_TEST(cut_snapshots)
{
    size_t len, clen;
    char *data = slurp("current-4", ".pickle", &len);
    char *cuts = slurp("cuts", ".txt", &clen);
    int n = 0;
    for (char *line = strtok(cuts, "\n"); line; line = strtok(NULL, "\n")) {
        char *tab = strchr(line, '\t');
        ck_assert_ptr_nonnull(tab);
        size_t at = strtoull(line, NULL, 10);
        ck_assert_uint_lt(at, len);
        expect_walk_error(data, at, MF_PICKLE_TRUNCATED, tab + 1);
        n++;
    }
    ck_assert_int_gt(n, 40);
    free(cuts);
    free(data);
}
END_TEST

START_TEST(hostile_snapshots)
{
    size_t len, rlen;
    char *list = slurp("refused", ".txt", &rlen);
    int n = 0;
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
        char *tab = strchr(line, '\t');
        *tab = 0;
        char *data = slurp(line, ".pickle", &len);
        expect_walk_error(data, len, MF_PICKLE_REFUSED, tab + 1);
        free(data);
        n++;
    }
    ck_assert_int_eq(n, 3);
    /* the payload would `touch` this file: nothing ran */
    char marker[4200];
    snprintf(marker, sizeof marker, "%s/payload-ran", fixtures);
    ck_assert_int_ne(access(marker, F_OK), 0);
    free(list);
}
END_TEST

START_TEST(not_snapshots)
{
    expect_walk_error(P("\x80\x02X\x05\x00\x00\x00helloq\x00."), MF_TORCH_NOT_A_SNAPSHOT,
                      "offset 14: not a PyTorch memory snapshot (a str at the top)");
    expect_walk_error(P("\x80\x02}q\x00X\x01\x00\x00\x00" "aq\x01K\x01s."), MF_TORCH_NOT_A_SNAPSHOT,
                      "offset 16: not a PyTorch memory snapshot (a dict with neither 'segments' "
                      "nor 'device_traces')");
    expect_walk_error(P("\x80\x04\x8f\x94."), MF_TORCH_NOT_A_SNAPSHOT,
                      "offset 2: not a PyTorch memory snapshot (a set at the top)");
}
END_TEST

START_TEST(handler_stops)
{
    size_t len;
    char *data = slurp("current-5", ".pickle", &len);
    snap_tx *t = calloc(1, sizeof *t);
    t->stop_at_entry = 3;
    mf_torch_stats st;
    char err[400];
    ck_assert_int_eq(walk(data, len, MF_TORCH_WANT_ALL, t, &st, err, sizeof err),
                     MF_PICKLE_STOPPED);
    ck_assert_int_eq(t->nent, 3);
    ck_assert_ptr_nonnull(strstr(err, ": stopped by its reader (-1)"));
    free(t->buf);
    free(t);
    free(data);
}
END_TEST

/* ---- the suite -------------------------------------------------------------- */

static void make_fixtures(void)
{
    /* Debian's python3 (configure's PYTHON), whose pickle wrote PyTorch's snapshots */
    const char *py = getenv("PYTHON"), *src = getenv("top_srcdir"), *build = getenv("top_builddir");
    if (!py || !*py)
        py = getenv("PYTHON3");
    snprintf(fixtures, sizeof fixtures, "%s/tests/out/check_pickle", build ? build : ".");
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && '%s' '%s/tests/torch_snapshots.py' '%s'", fixtures,
             py && *py ? py : "python3", src ? src : ".", fixtures);
    if (system(cmd) != 0) {
        fprintf(stderr, "check_pickle: %s failed\n", cmd);
        exit(1);
    }
}

static Suite *pickle_suite(void)
{
    Suite *s = suite_create("pickle");
    TCase *tc = tcase_create("reader");
    tcase_add_test(tc, plain_data);
    tcase_add_test(tc, single_items);
    tcase_add_test(tc, lists_that_start_alike);
    tcase_add_test(tc, memo_keeps_what_is_asked);
    tcase_add_test(tc, memo_errors);
    tcase_add_test(tc, refused_opcodes);
    tcase_add_test(tc, unsupported_pickles);
    tcase_add_test(tc, malformed_pickles);
    tcase_add_test(tc, limits);
    tcase_add_test(tc, memo_budget);
    tcase_add_test(tc, memo_sweep_keeps_runs);
    tcase_add_test(tc, file_descriptors);
    suite_add_tcase(s, tc);
    tc = tcase_create("torch");
    tcase_add_loop_test(tc, snapshots_as_the_model_says, 0,
                        (int)(sizeof fixture_names / sizeof fixture_names[0]));
    tcase_add_loop_test(tc, current_snapshot_details, 0, 4);
    tcase_add_test(tc, old_snapshot_details);
    tcase_add_test(tc, two_passes);
    tcase_add_test(tc, cut_snapshots);
    tcase_add_test(tc, hostile_snapshots);
    tcase_add_test(tc, not_snapshots);
    tcase_add_test(tc, handler_stops);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    make_fixtures();
    SRunner *sr = srunner_create(pickle_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
