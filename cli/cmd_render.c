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
    uint64_t at_ns;          /* UINT64_MAX: the end */
    int merge_runs;
} render_args;

static void usage(FILE *out)
{
    fputs("usage: memflow render LOG... [-o DIR] [--formats LIST] [--color-by MODE]\n"
          "                      [--device DEV] [--at TIME] [--merge-runs]\n"
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
          "  --color-by MODE   scope (default), lifetime, size, or site (the allocating\n"
          "                    function; logs recorded with --stacks)\n"
          "  --device DEV      draw only cpu/0 or gpu/N (the flame graph and folded\n"
          "                    stacks: that device's peak; default the first device)\n"
          "  --at TIME         stop at TIME after the log start: a number of ns, or with\n"
          "                    a unit: 250ms, 1.5s, 20us, 100ns (the CSV lists what was\n"
          "                    live then)\n"
          "  --merge-runs      merge logs of different runs (their header run ids differ;\n"
          "                    refused otherwise: their processes did not run together)\n"
          "\n"
          "exit status: 0 ok, 1 a log cannot be read or an output written, 2 bad usage,\n"
          "             3 outputs written from a damaged log (everything before the damage),\n"
          "             4 logs of different runs (see --merge-runs)\n",
          out);
}

/* "123", "1.5ms", "20us", "2s", "100ns" -> ns.  0, or -1 if malformed. */
static int parse_time(const char *text, uint64_t *ns)
{
    static const struct { const char *unit; uint64_t scale; } units[] = {
        { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 }, { "", 1 },
    };
    const char *p = text;
    uint64_t whole = 0, frac = 0, frac_scale = 1;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (whole > (UINT64_MAX - 9) / 10)
            return -1;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (frac_scale < 1000000000) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                frac_scale *= 10;
            }
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(p, units[i].unit) != 0)
            continue;
        if (whole > UINT64_MAX / units[i].scale)
            return -1;
        *ns = whole * units[i].scale + frac * units[i].scale / frac_scale;
        return 0;
    }
    return -1;
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
                   ? 0 : bad("--color-by needs one of: scope, lifetime, size, site");
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
    if (cli_is_option(arg, "--at"))
        return (v = cli_option_value(argc, argv, i, "--at")) && parse_time(v, &a->at_ns) == 0
                   ? 0 : bad("--at needs a time: ns, or a number with ns, us, ms or s");
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
    return 0;
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
        .svg = { .color_by = a->color_by, .only_device = a->only_device, .title = NULL },
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
    render_args a = { .only_device = -1, .at_ns = UINT64_MAX, .color_by = MF_COLOR_BY_SCOPE };
    a.logs = calloc((size_t)argc + 1, sizeof *a.logs);
    if (!a.logs) {
        fputs("memflow render: out of memory\n", stderr);
        return 1;
    }
    int rc = 2;
    if (parse(argc, argv, &a) == 0) {
        cli_load_options lo = { .until_ns = a.at_ns, .merge_runs = a.merge_runs,
                                .tiles_by_site = a.color_by == MF_COLOR_BY_SITE };
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
