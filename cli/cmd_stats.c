/*
 * cmd_stats.c - `memflow stats LOG... [--format table|json]
 * [--sort-by total|avg|min|max|count] [--ascending] [--from WHEN] [--to WHEN]
 * [--merge-runs]`: the
 * statistics of one or more logs on stdout (render/stats.c writes them).
 * Exit: 0 ok, 1 a log cannot be read, 2 bad usage, 3 statistics written
 * from a damaged log (everything before the damage; message on stderr),
 * 4 logs of different runs (not merged without --merge-runs).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "options.h"
#include "model.h"
#include "stats.h"

static void usage(FILE *out)
{
    fputs("usage: memflow stats LOG... [--format table|json] [--sort-by KEY] [--ascending]\n"
          "                     [--from WHEN] [--to WHEN] [--summary-below PERCENT]\n"
          "                     [--merge-runs]\n"
          "\n"
          "Print the statistics of memflow logs (several logs merge): MXNet's\n"
          "\"Device Storage\" table, then per scope, who held memory at each device's\n"
          "peak, and the largest blocks still live at the end (leaks).\n"
          "\n"
          "  --format table|json   text table (default) or JSON with the same content\n"
          "  --sort-by KEY         total (default), avg, min, max or count\n"
          "  --ascending           small first (default: large first)\n"
          "  --from WHEN           count only from WHEN: a time after the log start (ns,\n"
          "                        or with a unit: 250ms, 1.5s, 20us) or a step (step:3,\n"
          "                        the third optimizer step's mark), with the blocks live\n"
          "                        then held from there\n"
          "  --to WHEN             ... until WHEN: a time, or a step (step:5: until the\n"
          "                        sixth step's mark)\n"
          "  --summary-below PERCENT\n"
          "                        processes whose peak is under PERCENT of the largest\n"
          "                        process's (default 1; 0: none) share one line of the\n"
          "                        table (JSON lists every one)\n"
          "  --merge-runs          merge logs of different runs (refused otherwise)\n"
          "\n"
          "exit status: 0 ok, 1 a log cannot be read, 2 bad usage,\n"
          "             3 written from a damaged log (everything before the damage),\n"
          "             4 logs of different runs (see --merge-runs)\n",
          out);
}

static int parse(int argc, char **argv, mf_stats_options *opt, char **logs, int *n_logs,
                 cli_load_options *lo)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int window = cli_window_options(argc, argv, &i, lo, "stats");
        if (window < 0)
            return -1;
        if (window)
            continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (cli_is_option(a, "--format")) {
            if (!(v = cli_option_value(argc, argv, &i, "--format")) ||
                mf_stats_parse_format(v, &opt->json) < 0) {
                fprintf(stderr, "memflow stats: --format needs one of: %s\n", MF_STATS_FORMATS);
                return -1;
            }
        } else if (cli_is_option(a, "--sort-by")) {
            if (!(v = cli_option_value(argc, argv, &i, "--sort-by")) ||
                mf_stats_parse_sort(v, &opt->sort_by) < 0) {
                fprintf(stderr, "memflow stats: --sort-by needs one of: %s\n", MF_STATS_SORTS);
                return -1;
            }
        } else if (cli_is_option(a, "--summary-below")) {
            if (!(v = cli_option_value(argc, argv, &i, "--summary-below")) ||
                cli_parse_percent(v, &opt->summary_below) < 0) {
                fprintf(stderr, "memflow stats: %s\n", CLI_SUMMARY_HELP);
                return -1;
            }
        } else if (!strcmp(a, "--ascending")) {
            opt->ascending = 1;
        } else if (!strcmp(a, "--merge-runs")) {
            lo->merge_runs = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "memflow stats: unknown option '%s' (see 'memflow stats --help')\n",
                    a);
            return -1;
        } else {
            logs[(*n_logs)++] = argv[i];
        }
    }
    if (*n_logs == 0) {
        fputs("memflow stats: no log given (see 'memflow stats --help')\n", stderr);
        return -1;
    }
    return cli_window_check(lo, "stats");
}

int cmd_stats(int argc, char **argv)
{
    mf_stats_options opt = { 0 };
    char **logs = calloc((size_t)argc + 1, sizeof *logs);
    int n_logs = 0;
    if (!logs) {
        fputs("memflow stats: out of memory\n", stderr);
        return 1;
    }
    int code;
    cli_load_options lo = { .until_ns = (unsigned long long)-1, .no_picture = 1, .no_trace = 1 };
    if (parse(argc, argv, &opt, logs, &n_logs, &lo) < 0) {
        free(logs);
        return 2;
    }
    mf_model *m = cli_load(n_logs, logs, &lo, &code);
    free(logs);
    if (!m)
        return code;
    mf_sink out;
    mf_sink_fd(&out, 1);
    int rc = mf_stats_write_sink(m, &out, &opt) < 0 || mf_sink_flush(&out) < 0;
    mf_sink_free(&out);
    if (rc)
        fputs("memflow stats: cannot write the statistics to stdout\n", stderr);
    int damaged = m->damaged;
    mf_model_free(m);
    return rc ? 1 : damaged ? CLI_EXIT_DAMAGED : 0;
}
