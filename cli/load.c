/*
 * load.c - read the logs named on the command line into one model, for
 * `memflow stats`, `memflow render` and `memflow run`'s rendering at exit;
 * and that rendering, which `memflow import` shares (cli_render_logs).
 * A damaged log still gives everything before the damage; the damage and
 * every other warning of the model are printed on stderr.  Logs of
 * different runs are refused unless the caller merges runs.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "config.h"
#include "escape.h"
#include "model.h"
#include "outputs.h"
#include "progress.h"
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

void cli_print_warnings(const struct mf_model *m)
{
    for (size_t i = 0; i < m->n_warnings; i++)
        cli_say("memflow: warning: ", m->warnings[i]);
}

struct mf_model *cli_load(int n, char **paths, const cli_load_options *opt, int *exit_code)
{
    char err[2048];
    int rc;
    cli_progress progress;
    mf_load_options lo = {
        .until_rel_ns = opt->until_ns == (unsigned long long)-1 ? UINT64_MAX : opt->until_ns,
        .from_rel_ns = opt->from_ns,
        .merge_runs = opt->merge_runs,
        .model = { .no_picture = opt->no_picture, .no_trace = opt->no_trace,
                   .tiles_by = opt->tiles_by, .from_step = opt->from_step,
                   .to_step = opt->to_step },
        .progress = cli_progress_events, .progress_ctx = &progress,
    };
    cli_recover_staged(n, paths);
    cli_progress_begin(&progress, isatty(2));
    mf_model *m = mf_model_load_opts((const char *const *)paths, n > 0 ? (size_t)n : 0, &lo, &rc,
                                     err, sizeof err);
    cli_progress_events_end(&progress);
    if (!m) {
        fprintf(stderr, "memflow: %s\n", err);
        *exit_code = rc == MF_READER_OTHER_RUNS ? CLI_EXIT_OTHER_RUNS : 1;
        return NULL;
    }
    cli_print_warnings(m);
    if (m->window_missing) {
        if (opt->from_step)
            fprintf(stderr, "memflow: --from step:%llu: the logs have no step %llu (no "
                    "optimizer step marked it: see docs/PYTHON.md)\n", opt->from_step,
                    opt->from_step);
        else
            fprintf(stderr, "memflow: --from: the logs end before the window begins\n");
        mf_model_free(m);
        *exit_code = 1;
        return NULL;
    }
    *exit_code = 0;
    return m;
}

struct mf_model *cli_load_model(int n, char **paths, unsigned long long until_ns)
{
    cli_load_options opt = { .until_ns = until_ns };
    int code;
    return cli_load(n, paths, &opt, &code);
}

int cli_render_logs(const char *who, const char *dir, int n, char **paths, mf_model *model)
{
    if (!model && !(model = cli_load_model(n, paths, UINT64_MAX)))
        return -1;
    const mf_config *c = mf_config_get();
    char formats[1200];
    mf_outputs_formats_for(model, c->formats, formats, sizeof formats);
    mf_sink written = { 0 }, failed = { 0 };
    mf_output_options out = {
        .formats = formats,
        .trace_name = c->filename,
        .csv_prefix = c->gpu_memory_profile_filename_prefix,
        .svg = { .color_by = MF_COLOR_BY_SCOPE, .only_device = -1, .title = NULL },
        .progress = isatty(2),
        .report = &written,
        .failures = &failed,
    };
    char err[1024], prefix[64];
    int rc = mf_outputs_write(model, dir, &out, err, sizeof err);
    char *list = mf_sink_take(&written), *why = mf_sink_take(&failed);
    snprintf(prefix, sizeof prefix, "%s: ", who);
    cli_say_lines(prefix, why);
    if (list && *list)
        cli_sayf("memflow: ", "%d log%s rendered into %s (%s)", n, n == 1 ? "" : "s", dir, list);
    free(list);
    free(why);
    mf_model_free(model);
    return rc;
}
