/*
 * pickle_dump.c - a test tool: read a pickle with memflow's reader
 * (common/torch/pickle.c) and print what it reports as one canonical JSON value,
 * so tests/pickle_roundtrip.py can compare it with what CPython's own
 * unpickler builds from the same bytes.
 *
 *   pickle_dump [--keep] [--fd] [--lookahead N] [--memory N] FILE
 *
 * Each value is an array: ["none"], ["bool", 0|1], ["int", "DECIMAL"],
 * ["bigint", "HEX"] (the bytes of LONG1/LONG4), ["float", "%a"],
 * ["str", "HEX"] (UTF-8), ["bytes", "HEX"], ["tuple", [...]],
 * ["frozenset", [...]], ["list", [...]], ["set", [...]] and
 * ["dict", [[K, V], ...]].  --keep asks the reader to keep every container
 * in full (so shared ones replay); without it shared containers are
 * refused.  On failure it prints "error STATUS: MESSAGE" to stderr and
 * exits with 10 + the status.  Then "stats ..." goes to stderr.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pickle.h"

typedef struct printer {
    int first[1100];     /* per depth: no item printed yet */
    int depth;
    int dict[1100];      /* per depth: the container is a dict */
    int keep;
} printer;

static void hex(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf("%02x", (unsigned char)p[i]);
}

static void sep(printer *pr)
{
    if (pr->depth > 0) {
        if (!pr->first[pr->depth])
            putchar(',');
        pr->first[pr->depth] = 0;
    }
}

static void value(const mf_pickle_value *v)
{
    size_t n;
    const char *b;
    const mf_pickle_value *items;
    switch ((mf_pickle_kind)v->kind) {
    case MF_PICKLE_NONE:
        printf("[\"none\"]");
        return;
    case MF_PICKLE_BOOL:
        printf("[\"bool\",%d]", (int)v->u.i);
        return;
    case MF_PICKLE_INT:
        printf("[\"int\",\"%lld\"]", (long long)v->u.i);
        return;
    case MF_PICKLE_FLOAT:
        printf("[\"float\",\"%a\"]", v->u.f);
        return;
    case MF_PICKLE_BIGINT:
    case MF_PICKLE_STR:
    case MF_PICKLE_BYTES:
        b = mf_pickle_bytes(v, &n);
        printf("[\"%s\",\"", v->kind == MF_PICKLE_BIGINT ? "bigint"
                            : v->kind == MF_PICKLE_STR ? "str" : "bytes");
        hex(b, n);
        printf("\"]");
        return;
    default:
        break;
    }
    static const char *const names[] = { [MF_PICKLE_TUPLE] = "tuple",
        [MF_PICKLE_FROZENSET] = "frozenset", [MF_PICKLE_LIST] = "list",
        [MF_PICKLE_DICT] = "dict", [MF_PICKLE_SET] = "set" };
    items = mf_pickle_items(v, &n);
    printf("[\"%s\",[", names[v->kind]);
    int dict = v->kind == MF_PICKLE_DICT;
    for (size_t i = 0; i < n; i += dict ? 2 : 1) {
        if (i)
            putchar(',');
        if (dict) {
            putchar('[');
            value(&items[i]);
            putchar(',');
            value(&items[i + 1]);
            putchar(']');
        } else {
            value(&items[i]);
        }
    }
    printf("]]");
}

static void key_open(printer *pr, const mf_pickle_value *key)
{
    sep(pr);
    if (key) {
        putchar('[');
        value(key);
        putchar(',');
    }
}

static int on_begin(void *ctx, const mf_pickle_value *key, mf_pickle_kind kind, uint64_t id,
                    int replay)
{
    printer *pr = ctx;
    (void)id;
    (void)replay;
    key_open(pr, key);
    printf("[\"%s\",[", kind == MF_PICKLE_LIST ? "list" : kind == MF_PICKLE_DICT ? "dict" : "set");
    pr->depth++;
    pr->first[pr->depth] = 1;
    pr->dict[pr->depth] = key != NULL;
    return pr->keep ? MF_PICKLE_KEEP : 0;
}

static int on_value(void *ctx, const mf_pickle_value *key, const mf_pickle_value *v)
{
    printer *pr = ctx;
    key_open(pr, key);
    value(v);
    if (key)
        putchar(']');
    return 0;
}

static int on_end(void *ctx, mf_pickle_kind kind)
{
    printer *pr = ctx;
    (void)kind;
    printf("]]");
    if (pr->dict[pr->depth])
        putchar(']');
    pr->depth--;
    return 0;
}

int main(int argc, char **argv)
{
    printer pr = { .depth = 0 };
    mf_pickle_limits lim = { 0 };
    int use_fd = 0, i = 1;
    for (; i < argc - 1; i++) {
        if (!strcmp(argv[i], "--keep"))
            pr.keep = 1;
        else if (!strcmp(argv[i], "--fd"))
            use_fd = 1;
        else if (!strcmp(argv[i], "--lookahead") && i + 2 < argc)
            lim.lookahead = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--memory") && i + 2 < argc)
            lim.memory = strtoull(argv[++i], NULL, 0);
        else
            break;
    }
    if (i != argc - 1) {
        fprintf(stderr, "usage: pickle_dump [--keep] [--fd] [--lookahead N] [--memory N] FILE\n");
        return 2;
    }
    int fd = open(argv[i], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        perror(argv[i]);
        return 2;
    }
    char err[256];
    void *map = NULL;
    mf_pickle_reader *r;
    if (use_fd) {
        r = mf_pickle_reader_fd(fd, err, sizeof err);
    } else {
        map = st.st_size ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
        r = mf_pickle_reader_mem(map, (size_t)st.st_size);
    }
    if (!r) {
        fprintf(stderr, "%s\n", use_fd ? err : "out of memory");
        return 2;
    }
    mf_pickle_set_limits(r, &lim);
    mf_pickle_handler h = { on_begin, on_value, on_end };
    mf_pickle_status s = mf_pickle_read(r, &h, &pr);
    putchar('\n');
    fflush(stdout);
    mf_pickle_stats stats;
    mf_pickle_stats_get(r, &stats);
    if (s != MF_PICKLE_OK)
        fprintf(stderr, "error %d: %s\n", (int)s, mf_pickle_error(r));
    fprintf(stderr, "stats bytes=%llu opcodes=%llu memo_kept=%llu evicted=%llu lookaheads=%llu "
            "lookahead_bytes=%llu guesses=%llu peak=%zu\n",
            (unsigned long long)stats.bytes, (unsigned long long)stats.opcodes,
            (unsigned long long)stats.memo_kept, (unsigned long long)stats.memo_evicted,
            (unsigned long long)stats.lookaheads, (unsigned long long)stats.lookahead_bytes,
            (unsigned long long)stats.guesses, stats.memory_peak);
    mf_pickle_reader_free(r);
    if (map)
        munmap(map, (size_t)st.st_size);
    close(fd);
    return s == MF_PICKLE_OK ? 0 : 10 + (int)s;
}
