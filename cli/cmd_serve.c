/*
 * cmd_serve.c - `memflow serve LOG`: the analysis behind memflow_dump() and
 * memflow_dumps() of a running program.  The runtime (runtime/dump.c)
 * starts it once and keeps it; it answers requests on stdin, one line each,
 * fields separated by a TAB:
 *
 *   stats  FORMAT SORT_BY ASCENDING(0|1) RESET(0|1)   -> the statistics text
 *   render DIR FORMATS TRACE_FILENAME CSV_PREFIX       -> outputs written
 *
 * with one line "ok<TAB>N" or "error<TAB>N" followed by exactly N bytes
 * (the text, nothing, or the message).  RESET makes later statistics start
 * after this moment, as MXNet's dumps(reset=True).  EOF on stdin ends it.
 *
 * So that the program never has a child of ours to reap (or a SIGCHLD to
 * wonder about), the server detaches: the process the runtime started exits
 * at once and a grandchild serves.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "model.h"
#include "outputs.h"
#include "stats.h"

#define MAX_FIELDS 6

typedef struct server {
    const char *log;
    uint64_t since_ns;        /* statistics start here (after a reset) */
} server;

static void answer(int ok, const char *text, size_t len)
{
    printf("%s\t%zu\n", ok ? "ok" : "error", len);
    fwrite(text, 1, len, stdout);
    fflush(stdout);
}

static void answer_error(const char *message)
{
    answer(0, message, strlen(message));
}

static int split(char *line, char **field)
{
    int n = 0;
    for (char *p = line; n < MAX_FIELDS;) {
        field[n++] = p;
        p = strchr(p, '\t');
        if (!p)
            break;
        *p++ = 0;
    }
    return n;
}

/* stats FORMAT SORT_BY ASCENDING RESET */
static void serve_stats(server *s, char **f, int n)
{
    mf_stats_options opt = { 0 };
    char err[1024];
    if (n != 5) {
        answer_error("bad stats request: FORMAT SORT_BY ASCENDING RESET expected");
        return;
    }
    if (mf_stats_parse_format(f[1], &opt.json) < 0) {
        snprintf(err, sizeof err, "bad format '%s'; accepted: %s", f[1], MF_STATS_FORMATS);
        answer_error(err);
        return;
    }
    if (mf_stats_parse_sort(f[2], &opt.sort_by) < 0) {
        snprintf(err, sizeof err, "bad sort_by '%s'; accepted: %s", f[2], MF_STATS_SORTS);
        answer_error(err);
        return;
    }
    opt.ascending = f[3][0] == '1';
    mf_log *log = NULL;
    if (mf_log_read(s->log, &log, err, sizeof err) < 0) {
        answer_error(err);
        return;
    }
    mf_model *m = mf_model_build_window(&log, 1, s->since_ns, UINT64_MAX, err, sizeof err);
    mf_log_free(log);
    char *text = m ? mf_stats_string(m, &opt) : NULL;
    if (!text) {
        answer_error(m ? "out of memory" : err);
    } else {
        answer(1, text, strlen(text));
        /* Later statistics start after the last event seen now: the log's
         * own clock, so no event of the program's is split off by a
         * difference between clocks. */
        if (f[4][0] == '1')
            s->since_ns = m->t1_ns + 1;
    }
    free(text);
    mf_model_free(m);
}

/* render DIR FORMATS TRACE_FILENAME CSV_PREFIX */
static void serve_render(server *s, char **f, int n)
{
    char err[1024], formats[1200];
    if (n != 5) {
        answer_error("bad render request: DIR FORMATS TRACE_FILENAME CSV_PREFIX expected");
        return;
    }
    const char *paths[1] = { s->log };
    mf_model *m = mf_model_load(paths, 1, UINT64_MAX, err, sizeof err);
    if (!m) {
        answer_error(err);
        return;
    }
    mf_outputs_formats_for(m, f[2], formats, sizeof formats);
    mf_output_options out = {
        .formats = formats, .trace_name = f[3], .csv_prefix = f[4],
        .svg = { .color_by = MF_COLOR_BY_SCOPE, .only_device = -1, .title = NULL },
        .progress = 0,
    };
    if (mf_outputs_write(m, f[1], &out, err, sizeof err) < 0)
        answer_error(err);
    else
        answer(1, "", 0);
    mf_model_free(m);
}

int cmd_serve(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: memflow serve LOG  (started by memflow_dump()/memflow_dumps(); "
              "requests on stdin)\n", stderr);
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("memflow serve: fork");
        return 1;
    }
    if (pid > 0)
        return 0; /* detach: the grandchild serves */
    server s = { .log = argv[1], .since_ns = 0 };
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        if (line[len - 1] == '\n')
            line[len - 1] = 0;
        char *field[MAX_FIELDS];
        int n = split(line, field);
        if (!strcmp(field[0], "stats"))
            serve_stats(&s, field, n);
        else if (!strcmp(field[0], "render"))
            serve_render(&s, field, n);
        else
            answer_error("unknown request (stats or render expected)");
    }
    free(line);
    return 0;
}
