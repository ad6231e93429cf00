/*
 * load.c - read the logs named on the command line into one model, for
 * `memflow stats`, `memflow render` and `memflow run`'s rendering at exit.
 * A damaged log still gives everything before the damage; the damage and
 * every other warning of the model are printed on stderr.  Logs of
 * different runs are refused unless the caller merges runs.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "escape.h"
#include "model.h"
#include "reader.h"

void cli_say(const char *prefix, const char *text)
{
    mf_sink err;
    mf_sink_fd(&err, 2);
    mf_sink_puts(&err, prefix);
    mf_escape_text(&err, text, MF_ESCAPE_WHOLE);
    mf_sink_putc(&err, '\n');
    mf_sink_flush(&err);
    mf_sink_free(&err);
}

void cli_sayf(const char *prefix, const char *fmt, ...)
{
    char *text;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    cli_say(prefix, text);
    free(text);
}

void cli_say_lines(const char *prefix, const char *lines)
{
    while (lines && *lines) {
        size_t len = strcspn(lines, "\n");
        char *line = strndup(lines, len);
        if (line)
            cli_say(prefix, line);
        free(line);
        lines += len + (lines[len] == '\n');
    }
}

/* The model's warnings on stderr, escaped for a terminal. */
static void print_warnings(const mf_model *m)
{
    for (size_t i = 0; i < m->n_warnings; i++)
        cli_say("memflow: warning: ", m->warnings[i]);
}

struct mf_model *cli_load(int n, char **paths, const cli_load_options *opt, int *exit_code)
{
    char err[2048];
    int rc;
    mf_load_options lo = {
        .until_rel_ns = opt->until_ns == (unsigned long long)-1 ? UINT64_MAX : opt->until_ns,
        .merge_runs = opt->merge_runs,
        .model = { .no_picture = opt->no_picture, .no_trace = opt->no_trace,
                   .tiles_by_site = opt->tiles_by_site },
    };
    cli_recover_staged(n, paths);
    mf_model *m = mf_model_load_opts((const char *const *)paths, n > 0 ? (size_t)n : 0, &lo, &rc,
                                     err, sizeof err);
    if (!m) {
        fprintf(stderr, "memflow: %s\n", err);
        *exit_code = rc == MF_READER_OTHER_RUNS ? CLI_EXIT_OTHER_RUNS : 1;
        return NULL;
    }
    print_warnings(m);
    *exit_code = 0;
    return m;
}

struct mf_model *cli_load_model(int n, char **paths, unsigned long long until_ns)
{
    cli_load_options opt = { .until_ns = until_ns };
    int code;
    return cli_load(n, paths, &opt, &code);
}
