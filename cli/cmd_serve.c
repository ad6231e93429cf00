/*
 * cmd_serve.c - `memflow serve LOG`: answer requests about a log that is
 * still being written, each time reading only what it gained since the last
 * answer.  The profiled program starts it once (runtime/dump.c: memflow_dump()
 * and memflow_dumps() talk to it) and keeps it; EOF on stdin ends it.  So
 * that the program never has a child of ours to reap (or a SIGCHLD to wonder
 * about), the server detaches once the log is open: the process started
 * exits at once (1 if the log cannot be read) and a grandchild serves.
 *
 * Protocol: one request per line on stdin, fields separated by a TAB:
 *   stats<TAB>FORMAT<TAB>SORT_BY<TAB>ASCENDING<TAB>RESET
 *       FORMAT table|json, SORT_BY total|avg|min|max|count, ASCENDING 0|1,
 *       RESET 0|1: later statistics count only what happens after this
 *       answer (MXNet's dumps(reset=True));
 *   render<TAB>DIR<TAB>FORMATS<TAB>TRACE_FILENAME<TAB>CSV_PREFIX
 *       write the outputs (FORMATS as the formats key; empty: the default)
 *       into DIR;
 *   status
 *       what the statistics' reader read so far: "records_scanned N\n"
 *       "events_decoded N\nevents_fed N\n" (for tests of the incremental
 *       cost), and "staged 0|1\n": whether the log is read as one a stage
 *       copies into (below).
 * Each answer is one line "ok<TAB>N" or "error<TAB>N", then exactly N bytes:
 * the statistics text, nothing for render, the status, or the error message.
 *
 * Data flow: a reader (refreshed before each request: new chunks, grown
 * chunks, end marks) -> the model of the statistics since the last reset
 * (counts only: no picture, no trace).  The outputs need the whole log with
 * its picture and trace: that model is built at the first render request,
 * by a second reader from the log's start, and from then on both readers
 * and models take the new events at each request.  A program that only asks
 * for statistics (MXNet's dumps) never pays for a picture.
 *
 * A program run by memflow run hands its chunks to memflow run through a
 * stage (runtime/stage.h), and memflow run copies them into the log with
 * pwrite while the server reads: past a chunk's seal a record may be half
 * there.  The program says so when it starts the server
 * (MEMFLOW_SERVE_STAGED=1, runtime/dump.c), and both readers then read a
 * sealed chunk only up to its seal (mf_reader_options.staged); what the
 * program flushed before asking is sealed (mf_stage_flush).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "model.h"
#include "outputs.h"
#include "reader.h"
#include "stats.h"

#define BATCH 4096
#define DEFAULT_FORMATS MF_OUTPUTS_DEFAULT   /* outputs_table.h */

typedef struct server {
    const char *path;
    mf_reader *reader;       /* feeds since */
    mf_strings *pool;        /* its strings */
    mf_model *since;         /* the statistics since the last reset */
    mf_reader *whole_reader; /* feeds whole (its strings are whole's); NULL until */
    mf_model *whole;         /* everything: the outputs; built at the first render */
    uint64_t fed;            /* events fed to since */
    uint64_t last_ns;        /* the latest event time fed */
    int staged;              /* the log's chunks are copied from a stage (see above) */
    size_t *told_whole;      /* per log: damage lines already warned about, */
    size_t *told_since;      /* in each model */
    mf_event *batch;
    mf_sample_values *samples;
} server;

static void usage(FILE *out)
{
    fputs("usage: memflow serve LOG\n"
          "\n"
          "Answer requests about LOG while it is written, reading only what it gained\n"
          "since the last answer.  One request per line on stdin, fields separated by TAB:\n"
          "  stats<TAB>FORMAT<TAB>SORT_BY<TAB>ASCENDING<TAB>RESET\n"
          "  render<TAB>DIR<TAB>FORMATS<TAB>TRACE_FILENAME<TAB>CSV_PREFIX\n"
          "  status\n"
          "Each answer: a line 'ok<TAB>N' or 'error<TAB>N', then N bytes.  EOF ends it.\n",
          out);
}

/* ---- answers ------------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int answer(const char *status, const char *body, size_t len)
{
    char head[64];
    int n = snprintf(head, sizeof head, "%s\t%zu\n", status, len);
    return write_all(1, head, (size_t)n) < 0 || write_all(1, body, len) < 0 ? -1 : 0;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return answer("error", msg, strlen(msg));
}

/* ---- keeping up with the log ------------------------------------------------------ */

static mf_model *new_since_model(uint64_t since_ns)
{
    char err[256];
    mf_model_options opt = { .no_picture = 1, .no_trace = 1, .since_ns = since_ns };
    return mf_model_new(&opt, err, sizeof err);
}

/* The since-reset model has its own string pool: it gets the texts of the
 * reader's ids. */
static void copy_ids(server *s, mf_event *e)
{
    mf_strings *to = s->since->strings;
    uint32_t *ids[2];
    unsigned n = mf_event_strings(e, ids);
    for (unsigned i = 0; i < n; i++) {
        if (*ids[i] > MF_STRING_DEFAULT_SCOPE) {
            const char *text = mf_strings_get(s->pool, *ids[i]);
            *ids[i] = mf_strings_intern(to, text, strlen(text));
        }
    }
}

/* The damage lines of a log model m has not been told yet become warnings. */
static void tell_damage(mf_model *m, const mf_log_info *info, size_t *told)
{
    for (; *told < info->damage->n; (*told)++) {
        mf_model_warn(m, "%s", info->damage->lines[*told]);
        m->damaged = 1;
    }
}

/* Describe every log of r to model m (damage lines not told yet become
 * warnings). */
static int describe_logs(mf_reader *r, mf_model *m, size_t *told)
{
    size_t n = mf_reader_n_logs(r);
    for (size_t i = 0; i < n; i++) {
        const mf_log_info *info = mf_reader_log(r, i);
        if (mf_model_set_process(m, (uint32_t)i, info) < 0)
            return -1;
        tell_damage(m, info, &told[i]);
    }
    return 0;
}

/* Once the log has call stacks, m counts by allocation site (sites.h)
 * through reader r, whose texts are in pool; out of memory: no sites. */
static void attach_sites(mf_reader *r, mf_strings *pool, mf_model *m)
{
    if (m->sites || !mf_reader_has_stacks(r))
        return;
    mf_sites *sites = mf_sites_open(r, pool, 0);
    if (sites)
        mf_model_set_sites(m, sites);
}

/* Look again at the log with reader r and feed what it gained to m; the
 * since model's events get its own string ids (copy) and move last_ns. */
static int feed(server *s, mf_reader *r, mf_model *m, size_t *told, int since, char *err,
                size_t errlen)
{
    if (mf_reader_refresh(r, err, errlen) < 0)
        return -1;
    if (describe_logs(r, m, told) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    attach_sites(r, since ? s->pool : m->strings, m);
    long n;
    while ((n = mf_reader_next(r, s->batch, s->samples, BATCH, UINT64_MAX, err, errlen)) > 0) {
        for (long i = 0; since && i < n; i++) {
            mf_event *e = &s->batch[i];
            if (e->type != MF_REC_THREAD && e->type != MF_REC_DEVICE && e->time_ns > s->last_ns)
                s->last_ns = e->time_ns;
            copy_ids(s, e);
        }
        if (mf_model_feed(m, s->batch, (size_t)n, s->samples) < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (since)
            s->fed += (uint64_t)n;
    }
    return n < 0 ? -1 : 0;
}

/* Bring the models up to the log as it stands now. */
static int catch_up(server *s, char *err, size_t errlen)
{
    if (feed(s, s->reader, s->since, s->told_since, 1, err, errlen) < 0)
        return -1;
    return s->whole ? feed(s, s->whole_reader, s->whole, s->told_whole, 0, err, errlen) : 0;
}

/* The whole model, built from the log's start at the first render. */
static int build_whole(server *s, char *err, size_t errlen)
{
    if (s->whole)
        return 0;
    mf_reader_options ro = { .merge_runs = 1, .staged = s->staged };
    s->whole = mf_model_new(NULL, err, errlen);
    if (s->whole &&
        mf_reader_open(&s->whole_reader, &s->path, 1, s->whole->strings, &ro, err, errlen) == 0) {
        s->told_whole = calloc(mf_reader_n_logs(s->whole_reader) + 1, sizeof *s->told_whole);
        if (!s->told_whole)
            snprintf(err, errlen, "out of memory");
        else if (feed(s, s->whole_reader, s->whole, s->told_whole, 0, err, errlen) == 0)
            return 0;
    }
    mf_reader_close(s->whole_reader);     /* try again at the next render */
    s->whole_reader = NULL;
    mf_model_free(s->whole);
    s->whole = NULL;
    free(s->told_whole);
    s->told_whole = NULL;
    return -1;
}

/* ---- requests -------------------------------------------------------------------- */

/* Split line at TABs into at most max fields; returns the count. */
static size_t split(char *line, char **fields, size_t max)
{
    size_t n = 0;
    for (char *p = line; n < max;) {
        fields[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab)
            break;
        *tab = 0;
        p = tab + 1;
    }
    return n;
}

static int do_stats(server *s, char **f, size_t n)
{
    mf_stats_options opt = { 0 };
    if (n != 5)
        return fail("stats needs 4 fields after it: FORMAT SORT_BY ASCENDING RESET (got %zu)",
                    n - 1);
    if (mf_stats_parse_format(f[1], &opt.json) < 0)
        return fail("bad format '%s'; accepted: %s", f[1], MF_STATS_FORMATS);
    if (mf_stats_parse_sort(f[2], &opt.sort_by) < 0)
        return fail("bad sort_by '%s'; accepted: %s", f[2], MF_STATS_SORTS);
    if ((strcmp(f[3], "0") && strcmp(f[3], "1")) || (strcmp(f[4], "0") && strcmp(f[4], "1")))
        return fail("stats: ASCENDING and RESET are 0 or 1 (got '%s', '%s')", f[3], f[4]);
    opt.ascending = f[3][0] == '1';
    if (mf_model_settle(s->since) < 0)
        return fail("stats: out of memory");
    char *text = mf_stats_string(s->since, &opt);
    if (!text)
        return fail("stats: out of memory");
    int rc = answer("ok", text, strlen(text));
    free(text);
    if (f[4][0] == '1') {       /* what follows this answer counts from now */
        mf_model *fresh = new_since_model(s->last_ns + 1);
        if (!fresh)
            return -1;
        mf_model_free(s->since);
        s->since = fresh;
        memset(s->told_since, 0, mf_reader_n_logs(s->reader) * sizeof *s->told_since);
        if (describe_logs(s->reader, s->since, s->told_since) < 0)
            return -1;
    }
    return rc;
}

static int do_render(server *s, char **f, size_t n)
{
    if (n != 5)
        return fail("render needs 4 fields after it: DIR FORMATS TRACE_FILENAME CSV_PREFIX "
                    "(got %zu)", n - 1);
    if (!*f[1])
        return fail("render: no output folder");
    char err[4096];
    if (build_whole(s, err, sizeof err) < 0)
        return fail("render: %s", err);
    if (mf_model_settle(s->whole) < 0)
        return fail("render: out of memory");
    char formats[4096];
    mf_outputs_formats_for(s->whole, *f[2] ? f[2] : DEFAULT_FORMATS, formats, sizeof formats);
    mf_output_options out = {
        .formats = formats, .trace_name = *f[3] ? f[3] : "profile.json",
        .csv_prefix = *f[4] ? f[4] : "gpu_memory_profile",
        .svg = { .color_by = MF_COLOR_BY_SCOPE, .only_device = -1, .title = NULL },
    };
    if (mf_outputs_write(s->whole, f[1], &out, err, sizeof err) < 0)
        return fail("%s", err);
    return answer("ok", "", 0);
}

static int do_status(server *s)
{
    uint64_t scanned, decoded;
    char text[256];
    mf_reader_counts(s->reader, &scanned, &decoded);
    int n = snprintf(text, sizeof text, "records_scanned %llu\nevents_decoded %llu\n"
                     "events_fed %llu\nstaged %d\n", (unsigned long long)scanned,
                     (unsigned long long)decoded, (unsigned long long)s->fed, s->staged);
    return answer("ok", text, (size_t)n);
}

static int serve_one(server *s, char *line)
{
    char err[2048];
    char *f[8];
    size_t n = split(line, f, 8);
    if (catch_up(s, err, sizeof err) < 0)
        return fail("%s", err);
    if (!strcmp(f[0], "stats"))
        return do_stats(s, f, n);
    if (!strcmp(f[0], "render"))
        return do_render(s, f, n);
    if (!strcmp(f[0], "status") && n == 1)
        return do_status(s);
    return fail("unknown request '%s'; requests: stats, render, status", f[0]);
}

static int open_server(server *s, const char *path)
{
    char err[2048];
    memset(s, 0, sizeof *s);
    s->path = path;
    s->pool = mf_strings_new();
    s->since = new_since_model(0);
    s->batch = malloc(BATCH * sizeof *s->batch);
    s->samples = malloc(BATCH * sizeof *s->samples);
    if (!s->pool || !s->since || !s->batch || !s->samples) {
        fprintf(stderr, "memflow serve: out of memory\n");
        return -1;
    }
    const char *staged = getenv("MEMFLOW_SERVE_STAGED");
    s->staged = staged && !strcmp(staged, "1");
    mf_reader_options ro = { .merge_runs = 1, .staged = s->staged };
    if (mf_reader_open(&s->reader, &path, 1, s->pool, &ro, err, sizeof err) != 0) {
        fprintf(stderr, "memflow serve: %s\n", err);
        return -1;
    }
    s->told_since = calloc(mf_reader_n_logs(s->reader) + 1, sizeof *s->told_since);
    return s->told_since ? 0 : -1;
}

static void close_server(server *s)
{
    mf_reader_close(s->reader);
    mf_reader_close(s->whole_reader);
    mf_model_free(s->whole);
    mf_model_free(s->since);
    mf_strings_free(s->pool);
    free(s->told_whole);
    free(s->told_since);
    free(s->batch);
    free(s->samples);
}

int cmd_serve(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc != 2 || argv[1][0] == '-') {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);   /* the program went away: its EOF ends us */
    server s;
    cli_recover_staged(1, &argv[1]);
    if (open_server(&s, argv[1]) < 0) {
        close_server(&s);
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("memflow serve: fork");
        close_server(&s);
        return 1;
    }
    if (pid > 0) {
        close_server(&s);      /* the child has its own copies */
        return 0;              /* detached: the grandchild serves */
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = 0;
        if (serve_one(&s, line) < 0) {
            rc = 1;            /* cannot answer: the other end is gone */
            break;
        }
    }
    free(line);
    close_server(&s);
    return rc;
}
