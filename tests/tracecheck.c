/*
 * tracecheck.c - print the TRACE and SCOPE records of a live log, for the
 * tests of the trace-object API and the Python binding.
 *
 * It reads the records straight from the chunks (the log reader of
 * analyze/ does not return TRACE records to its users), so it checks what
 * the recorder wrote without any analysis code in between.  One line per
 * record, in time order:
 *
 *   trace KIND DOMAIN NAME VALUE [SCOPE]     KIND task_begin ... marker;
 *                                            SCOPE thread/process/global
 *   push SCOPE DEPTH tN | pop SCOPE DEPTH tN  (with -s; tN numbers threads
 *                                            in the order their chunks come)
 *
 * DOMAIN is "-" for none.  VALUE is the counter value (signed) for
 * counters, the object id for spans and 0 for markers.
 * Usage: tracecheck [-s] LOG   (exit 1: cannot read; 2: usage or compact log)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log_format.h"

typedef struct line {
    uint64_t time_ns;
    uint64_t order;               /* file order, to keep sorting stable */
    char text[600];
} line;

static char **strings;            /* by id */
static uint32_t n_strings;
static line *lines;
static size_t n_lines, cap_lines;
static uint32_t threads[4096];
static unsigned n_threads;

static void die(int code, const char *what, const char *path)
{
    fprintf(stderr, "tracecheck: %s: %s\n", path, what);
    exit(code);
}

static const char *string_of(uint32_t id)
{
    if (id == 0)
        return "-";
    return id < n_strings && strings[id] ? strings[id] : "?";
}

static unsigned thread_number(uint32_t tid)
{
    for (unsigned i = 0; i < n_threads; i++)
        if (threads[i] == tid)
            return i;
    if (n_threads < sizeof threads / sizeof threads[0])
        threads[n_threads++] = tid;
    return n_threads - 1;
}

static line *add_line(uint64_t time_ns)
{
    if (n_lines == cap_lines) {
        cap_lines = cap_lines ? cap_lines * 2 : 256;
        lines = realloc(lines, cap_lines * sizeof *lines);
        if (!lines)
            die(1, "out of memory", "");
    }
    line *l = &lines[n_lines];
    l->time_ns = time_ns;
    l->order = n_lines++;
    return l;
}

static void keep_string(const uint8_t *rec, uint32_t id)
{
    const mf_rec_string *s = (const void *)rec;
    if (id >= n_strings) {
        uint32_t n = id + 1024;
        strings = realloc(strings, n * sizeof *strings);
        memset(strings + n_strings, 0, (n - n_strings) * sizeof *strings);
        n_strings = n;
    }
    strings[id] = strndup((const char *)(s + 1), s->len);
}

static const char *trace_kind_name(unsigned kind)
{
    static const char *const names[] = { "?", "task_begin", "task_end", "frame_begin",
                                         "frame_end", "event_begin", "event_end", "counter",
                                         "marker", "range_begin", "range_end" };
    return kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

static void trace_line(const uint8_t *rec, uint32_t kind)
{
    static const char *const marker_scopes[] = { "thread", "process", "global" };
    const mf_rec_trace *r = (const void *)rec;
    line *l = add_line(r->time_ns);
    int n = snprintf(l->text, sizeof l->text, "trace %s %s %s ", trace_kind_name(kind),
                     string_of(r->domain), string_of(r->name));
    if (kind == MF_TRACE_COUNTER)
        snprintf(l->text + n, sizeof l->text - n, "%lld", (long long)(int64_t)r->value);
    else if (kind == MF_TRACE_MARKER)
        snprintf(l->text + n, sizeof l->text - n, "%llu %s", (unsigned long long)r->value,
                 r->arg < 3 ? marker_scopes[r->arg] : "?");
    else
        snprintf(l->text + n, sizeof l->text - n, "%llu", (unsigned long long)r->value);
}

static void scope_line(const uint8_t *rec, uint32_t scope, uint32_t tid)
{
    const mf_rec_scope *r = (const void *)rec;
    line *l = add_line(r->time_ns);
    snprintf(l->text, sizeof l->text, "%s %s %u t%u", r->op == MF_SCOPE_PUSH ? "push" : "pop",
             string_of(scope), r->depth, thread_number(tid));
}

/* One pass over every record of every chunk: strings first, then lines. */
static void walk(const uint8_t *file, size_t size, int pass, int scopes)
{
    for (size_t at = MF_CHUNK_SIZE; at + sizeof(mf_chunk_header) <= size; at += MF_CHUNK_SIZE) {
        const mf_chunk_header *ch = (const void *)(file + at);
        if (ch->magic != MF_CHUNK_MAGIC)
            continue;
        size_t end = at + MF_CHUNK_SIZE < size ? at + MF_CHUNK_SIZE : size;
        uint32_t tid = ch->tid;
        for (size_t p = at + sizeof *ch; p + 8 <= end;) {
            uint64_t word;
            memcpy(&word, file + p, 8);
            unsigned type = MF_WORD_TYPE(word), rsize = MF_WORD_SIZE(word);
            if (word == 0 || rsize < 8 || p + rsize > end)
                break;
            uint32_t aux = MF_WORD_AUX(word);
            if (type == MF_REC_OWNER)
                tid = aux;
            else if (pass == 0 && type == MF_REC_STRING)
                keep_string(file + p, aux);
            else if (pass == 1 && type == MF_REC_TRACE)
                trace_line(file + p, aux);
            else if (pass == 1 && scopes && type == MF_REC_SCOPE)
                scope_line(file + p, aux, tid);
            p += rsize;
        }
    }
}

static int by_time(const void *a, const void *b)
{
    const line *x = a, *y = b;
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

int main(int argc, char **argv)
{
    int scopes = argc == 3 && strcmp(argv[1], "-s") == 0;
    if (argc != 2 + scopes) {
        fprintf(stderr, "usage: tracecheck [-s] LOG\n");
        return 2;
    }
    const char *path = argv[argc - 1];
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        die(1, "cannot open", path);
    uint8_t *file = malloc((size_t)st.st_size + 1);
    if (!file || read(fd, file, (size_t)st.st_size) != st.st_size)
        die(1, "cannot read", path);
    close(fd);
    const mf_file_header *h = (const void *)file;
    if ((size_t)st.st_size < sizeof *h || memcmp(h->magic, MF_LOG_MAGIC, 8) != 0)
        die(1, "not a memflow log", path);
    if (h->flags & MF_HEADER_COMPACT)
        die(2, "a compact log; this test reader reads live logs only", path);
    walk(file, (size_t)st.st_size, 0, scopes);
    walk(file, (size_t)st.st_size, 1, scopes);
    if (n_lines > 1)
        qsort(lines, n_lines, sizeof *lines, by_time);
    for (size_t i = 0; i < n_lines; i++)
        puts(lines[i].text);
    free(lines);
    free(file);
    return 0;
}
