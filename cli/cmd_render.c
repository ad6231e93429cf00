/*
 * cmd_render.c - `memflow render LOG... [-o DIR] [--formats LIST]
 * [--color-by scope|lifetime|size] [--device cpu/0|gpu/N] [--at TIME]
 * [--merge-runs]`: read logs into one model (cli/load.c) and write its
 * outputs (render/outputs.c).  Exit: 0 ok, 1 a log cannot be read or an
 * output cannot be written, 2 bad usage, 3 outputs written from a damaged
 * log, 4 logs of different runs (not merged without --merge-runs).
 */
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "options.h"
#include "config.h"
#include "outputs.h"

#define DEFAULT_FORMATS MF_OUTPUTS_DEFAULT   /* outputs_table.h */

typedef struct render_args {
    char **logs;
    int n_logs;
    const char *dir;
    const char *formats;
    mf_color_by color_by;
    int only_device;
    cli_load_options window; /* --from, --to, --at (until_ns: ULLONG_MAX, the end) */
    double summary_below;    /* mf_svg_options.summary_below */
    int merge_runs;
} render_args;

static void usage(FILE *out)
{
    fputs("usage: memflow render LOG... [-o DIR] [--formats LIST] [--color-by MODE]\n"
          "                      [--device DEV] [--from WHEN] [--to WHEN] [--at TIME]\n"
          "                      [--summary-below PERCENT] [--merge-runs]\n"
          "\n"
          "Render memflow logs (several logs merge into one picture per device and one\n"
          "trace).\n"
          "\n"
          "  -o DIR            output folder (default: the folder of the first log)\n"
          "  --formats LIST    comma-separated outputs: memory_flow.svg, memory_flow.png,\n"
          "                    memory_flow.pdf, profile.json, chrome_timeline.json,\n"
          "                    stats.txt, stats.json, gpu_memory_profile.csv,\n"
          "                    stacks.folded, flamegraph.svg (default:\n"
          "                    memory_flow.svg,profile.json,stats.txt, plus\n"
          "                    gpu_memory_profile.csv when there are GPU blocks, plus\n"
          "                    stacks.folded,flamegraph.svg when the logs have stacks)\n"
          "  --color-by MODE   scope (default), lifetime, size, site (the allocating\n"
          "                    line or function; logs with call stacks), or role (what\n"
          "                    a tensor is: parameter, gradient, optimizer state, ...)\n"
          "  --device DEV      draw only cpu/0 or gpu/N (the flame graph and folded\n"
          "                    stacks: that device's peak; default the first device)\n"
          "  --from WHEN       draw and count only from WHEN: a time after the log\n"
          "                    start (a number of ns, or with a unit: 250ms, 1.5s, 20us,\n"
          "                    100ns) or a step (step:3, the mark of the third optimizer\n"
          "                    step), with the blocks live then held from there\n"
          "  --to WHEN         ... until WHEN: a time, or a step (step:5: the end of the\n"
          "                    fifth step, at the sixth step's mark)\n"
          "  --at TIME         the same as --to TIME (the CSV lists what was live then)\n"
          "  --summary-below PERCENT\n"
          "                    processes whose peak is under PERCENT of the largest\n"
          "                    process's (default 1; 0: none) share one summary panel;\n"
          "                    the largest and the Python processes lead\n"
          "  --merge-runs      merge logs of different runs (their header run ids differ;\n"
          "                    refused otherwise: their processes did not run together)\n"
          "\n"
          "exit status: 0 ok, 1 a log cannot be read or an output written, 2 bad usage,\n"
          "             3 outputs written from a damaged log (everything before the damage),\n"
          "             4 logs of different runs (see --merge-runs)\n",
          out);
}

static int parse_color(const char *v, mf_color_by *c)
{
    if (!strcmp(v, "scope"))
        *c = MF_COLOR_BY_SCOPE;
    else if (!strcmp(v, "lifetime"))
        *c = MF_COLOR_BY_LIFETIME;
    else if (!strcmp(v, "size"))
        *c = MF_COLOR_BY_SIZE;
    else if (!strcmp(v, "site"))
        *c = MF_COLOR_BY_SITE;
    else if (!strcmp(v, "role"))
        *c = MF_COLOR_BY_ROLE;
    else
        return -1;
    return 0;
}

/* Check a formats list with the config's own rules (same message). */
static int check_formats(const char *v)
{
    const char *key = "formats";
    char err[1024];
    if (mf_config_apply(1, &key, &v, "memflow render --formats", err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static int bad(const char *what)
{
    fprintf(stderr, "memflow render: %s (see 'memflow render --help')\n", what);
    return -1;
}

static int parse_one(int argc, char **argv, int *i, render_args *a)
{
    const char *arg = argv[*i], *v;
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
        usage(stdout);
        exit(0);
    }
    if (!strcmp(arg, "-o") || cli_is_option(arg, "--output")) {
        v = cli_option_value(argc, argv, i, arg[1] == 'o' ? "-o" : "--output");
        return v && *v ? (a->dir = v, 0) : bad("-o needs a folder");
    }
    if (cli_is_option(arg, "--formats")) {
        if (!(v = cli_option_value(argc, argv, i, "--formats")))
            return bad("--formats needs a comma-separated list");
        a->formats = v;
        return check_formats(v);
    }
    if (cli_is_option(arg, "--color-by"))
        return (v = cli_option_value(argc, argv, i, "--color-by")) && parse_color(v, &a->color_by) == 0
                   ? 0 : bad("--color-by needs one of: scope, lifetime, size, site, role");
    if (cli_is_option(arg, "--device")) {
        uint16_t d;
        if (!(v = cli_option_value(argc, argv, i, "--device")) || mf_model_device_parse(v, &d) < 0)
            return bad("--device needs cpu/0 or gpu/N (N < 256)");
        a->only_device = d;
        return 0;
    }
    if (!strcmp(arg, "--merge-runs")) {
        a->merge_runs = 1;
        return 0;
    }
    if (cli_is_option(arg, "--summary-below"))
        return (v = cli_option_value(argc, argv, i, "--summary-below")) &&
                       cli_parse_percent(v, &a->summary_below) == 0
                   ? 0 : bad(CLI_SUMMARY_HELP);
    if (cli_is_option(arg, "--at")) {
        uint64_t at;
        if (!(v = cli_option_value(argc, argv, i, "--at")) || cli_parse_time(v, &at) < 0)
            return bad("--at needs a time: ns, or a number with ns, us, ms or s");
        a->window.until_ns = at;
        return 0;
    }
    int window = cli_window_options(argc, argv, i, &a->window, "render");
    if (window)
        return window < 0 ? -1 : 0;
    if (arg[0] == '-' && arg[1]) {
        fprintf(stderr, "memflow render: unknown option '%s' (see 'memflow render --help')\n",
                arg);
        return -1;
    }
    a->logs[a->n_logs++] = argv[*i];
    return 0;
}

static int parse(int argc, char **argv, render_args *a)
{
    for (int i = 1; i < argc; i++)
        if (parse_one(argc, argv, &i, a) < 0)
            return -1;
    if (a->n_logs == 0)
        return bad("no log given");
    return cli_window_check(&a->window, "render");
}

static int render(const render_args *a, mf_model *m)
{
    char dir[PATH_MAX];
    if (a->dir)
        snprintf(dir, sizeof dir, "%s", a->dir);
    else
        cli_folder_of(a->logs[0], dir, sizeof dir);
    char formats[1200];
    if (a->formats)
        snprintf(formats, sizeof formats, "%s", a->formats);
    else
        mf_outputs_formats_for(m, DEFAULT_FORMATS, formats, sizeof formats);
    mf_sink written = { 0 }, failed = { 0 };
    mf_output_options out = {
        .formats = formats, .trace_name = "profile.json", .csv_prefix = "gpu_memory_profile",
        .svg = { .color_by = a->color_by, .only_device = a->only_device, .title = NULL,
                 .summary_below = a->summary_below },
        .progress = isatty(2), .report = &written, .failures = &failed,
    };
    char err[2048];
    int rc = mf_outputs_write(m, dir, &out, err, sizeof err);
    char *list = mf_sink_take(&written), *why = mf_sink_take(&failed);
    cli_say_lines("memflow render: ", why);
    if (list && *list)
        cli_sayf("memflow render: ", "into %s: %s", dir, list);
    free(list);
    free(why);
    return rc < 0 ? 1 : 0;
}

int cmd_render(int argc, char **argv)
{
    render_args a = { .only_device = -1, .window = { .until_ns = (unsigned long long)-1 },
                      .color_by = MF_COLOR_BY_SCOPE };
    a.logs = calloc((size_t)argc + 1, sizeof *a.logs);
    if (!a.logs) {
        fputs("memflow render: out of memory\n", stderr);
        return 1;
    }
    int rc = 2;
    if (parse(argc, argv, &a) == 0) {
        cli_load_options lo = a.window;
        lo.merge_runs = a.merge_runs;
        lo.tiles_by = a.color_by == MF_COLOR_BY_SITE   ? MF_TILES_BY_SITE
                      : a.color_by == MF_COLOR_BY_ROLE ? MF_TILES_BY_ROLE
                                                       : MF_TILES_BY_SCOPE;
        if (a.formats) {      /* build only what the outputs asked for need */
            unsigned needs = mf_outputs_needs(a.formats);
            lo.no_trace = !(needs & MF_NEEDS_TRACE);
            lo.no_picture = !(needs & MF_NEEDS_PICTURE);
        }
        mf_model *m = cli_load(a.n_logs, a.logs, &lo, &rc);
        if (m)
            rc = render(&a, m);
        if (m && rc == 0 && m->damaged)
            rc = CLI_EXIT_DAMAGED;
        mf_model_free(m);
    }
    free(a.logs);
    return rc;
}
