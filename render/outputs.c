/*
 * outputs.c - write the outputs named in a formats list into a directory:
 * the last step of the data flow for `memflow run`, `memflow render` and
 * memflow_dump().  Each name goes to its writer:
 *   memory_flow.svg/.png/.pdf  -> mf_svg_write (svg.c)
 *   profile.json               -> mf_chrome_trace_write_file, named opt->trace_name
 *   chrome_timeline.json       -> the same trace under that name
 *   stats.txt / stats.json     -> mf_stats_write (table / JSON)
 *   gpu_memory_profile.csv     -> mf_csv_write_all: <prefix>-pid_<pid>.csv
 *   stacks.folded              -> mf_folded_write (flamegraph.c), with stacks
 *   flamegraph.svg             -> mf_flame_write (flamegraph.c), with stacks
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "csv.h"
#include "flamegraph.h"
#include "outfile.h"
#include "outputs.h"
#include "paths.h"
#include "stats.h"
#include "chrome_trace.h"

#define PROGRESS_AFTER_NS 1000000000ull

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int has_gpu_blocks(const mf_model *m)
{
    for (size_t i = 0; i < m->n_devices; i++)
        if (MF_DEVICE_KIND(m->devices[i].device) == MF_DEVICE_GPU && m->devices[i].alloc_count)
            return 1;
    return 0;
}

void mf_outputs_formats_for(const mf_model *model, const char *configured, char *buf,
                            size_t len)
{
    snprintf(buf, len, "%s", configured);
    if (has_gpu_blocks(model) && !strstr(configured, "gpu_memory_profile.csv"))
        snprintf(buf + strlen(buf), len - strlen(buf), "%sgpu_memory_profile.csv",
                 *buf ? "," : "");
    static const char *const with_stacks[] = { "stacks.folded", "flamegraph.svg" };
    for (size_t i = 0; model->sites && i < 2; i++)
        if (!strstr(configured, with_stacks[i]))
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", *buf ? "," : "",
                     with_stacks[i]);
}

/* dir/name, or name itself when it is an absolute path. */
static void join_path(char *buf, size_t len, const char *dir, const char *name)
{
    if (name[0] == '/')
        snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "%s/%s", dir, name);
}

static int write_stats(const mf_model *m, const char *path, int json, char *err, size_t errlen)
{
    mf_stats_options so = { .json = json };
    char *text = mf_stats_string(m, &so);
    if (!text) {
        snprintf(err, errlen, "%s: cannot write the statistics: out of memory", path);
        return -1;
    }
    int rc = mf_outfile_write_all(path, text, strlen(text), err, errlen);
    free(text);
    return rc;
}

/* Add a line to the report ("NAME" written, or why not). */
static void report(const mf_output_options *opt, const char *what)
{
    if (!opt->report)
        return;
    if (opt->report->len)
        mf_sink_puts(opt->report, ", ");
    mf_sink_puts(opt->report, what);
}

/* The MXNet CSV of every process that had GPU memory, or a note that there
 * was none (then nothing is written: no file is claimed that is not there). */
static int write_csv(const mf_model *m, const char *dir, const mf_output_options *opt,
                     char *err, size_t errlen)
{
    int written = 0;
    if (mf_csv_write_all(m, dir, opt->csv_prefix, &written, err, errlen) < 0)
        return -1;
    const char *prefix = opt->csv_prefix && *opt->csv_prefix ? opt->csv_prefix
                                                              : "gpu_memory_profile";
    if (written == 0) {
        char note[512];
        snprintf(note, sizeof note, "no %s-pid_N.csv (no process had GPU memory)", prefix);
        report(opt, note);
        return 0;
    }
    for (size_t i = 0; i < m->n_processes; i++) {
        uint32_t pid = m->processes[i].pid;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = m->processes[j].pid == pid;
        if (seen || !mf_csv_process_has_gpu(m, pid))
            continue;
        char name[512];
        snprintf(name, sizeof name, "%s-pid_%u.csv", prefix, pid);
        report(opt, name);
    }
    return 0;
}

/* stacks.folded or flamegraph.svg of the device opt names (or the first
 * with stacks), or a note that the log has no stacks to show. */
static int write_stacks(const mf_model *m, const char *dir, const char *name,
                        const mf_output_options *opt, char *err, size_t errlen)
{
    const mf_device_model *dev = mf_flame_device(m, opt->svg.only_device);
    if (!dev) {
        char note[512];
        snprintf(note, sizeof note, "no %s (%s)", name,
                 m->sites ? "no device held memory with a stack at its peak"
                          : "the log has no call stacks: record with memflow run --stacks");
        report(opt, note);
        return 0;
    }
    char path[8192];
    join_path(path, sizeof path, dir, name);
    int rc = name[0] == 's' ? mf_folded_write(m, dev, path, err, errlen)
                            : mf_flame_write(m, dev, path, err, errlen);
    if (rc == 0)
        report(opt, name);
    return rc;
}

/* Write the one output called name (len bytes of the formats list). */
static int write_one(const mf_model *m, const char *dir, const char *name,
                     const mf_output_options *opt, char *err, size_t errlen)
{
    char path[8192];
    int rc;
    if (strncmp(name, "memory_flow.", 12) == 0 &&
        (!strcmp(name + 12, "svg") || !strcmp(name + 12, "png") || !strcmp(name + 12, "pdf"))) {
        join_path(path, sizeof path, dir, name);
        rc = mf_svg_write(m, path, &opt->svg, err, errlen);
        if (rc == 0)
            report(opt, name);
        return rc;
    }
    if (!strcmp(name, "profile.json") || !strcmp(name, "chrome_timeline.json")) {
        const char *file = name;
        if (!strcmp(name, "profile.json") && opt->trace_name && *opt->trace_name)
            file = opt->trace_name;
        join_path(path, sizeof path, dir, file);
        rc = mf_chrome_trace_write_file(m, path, err, errlen);
        if (rc == 0)
            report(opt, file);
        return rc;
    }
    if (!strcmp(name, "stats.txt") || !strcmp(name, "stats.json")) {
        join_path(path, sizeof path, dir, name);
        rc = write_stats(m, path, name[6] == 'j', err, errlen);
        if (rc == 0)
            report(opt, name);
        return rc;
    }
    if (!strcmp(name, "gpu_memory_profile.csv"))
        return write_csv(m, dir, opt, err, errlen);
    if (!strcmp(name, "stacks.folded") || !strcmp(name, "flamegraph.svg"))
        return write_stacks(m, dir, name, opt, err, errlen);
    snprintf(err, errlen, "unknown output '%s'; accepted: memory_flow.svg, memory_flow.png, "
             "memory_flow.pdf, profile.json, chrome_timeline.json, stats.txt, stats.json, "
             "gpu_memory_profile.csv, stacks.folded, flamegraph.svg", name);
    return -1;
}

static void progress(const mf_output_options *opt, uint64_t started, size_t i, size_t n,
                     const char *name, int *shown)
{
    if (!opt->progress || now_ns() - started < PROGRESS_AFTER_NS)
        return;
    fprintf(stderr, "\rmemflow: writing output %zu of %zu: %-24s", i + 1, n, name);
    fflush(stderr);
    *shown = 1;
}

MF_EXPORT int mf_outputs_write(const mf_model *model, const char *dir,
                               const mf_output_options *opt, char *err, size_t errlen)
{
    if (mf_make_dirs(dir, err, errlen) < 0)
        return -1;
    const char *formats = opt->formats && *opt->formats ? opt->formats
                                                        : "memory_flow.svg,profile.json,stats.txt";
    size_t n = 1;
    for (const char *p = formats; *p; p++)
        n += *p == ',';
    uint64_t started = now_ns();
    int shown = 0, rc = 0;
    size_t i = 0;
    for (const char *p = formats; *p && rc == 0; i++) {
        size_t len = strcspn(p, ",");
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(len < 255 ? len : 255), p);
        p += len + (p[len] == ',');
        if (!*name)
            continue;
        progress(opt, started, i, n, name, &shown);
        rc = write_one(model, dir, name, opt, err, errlen);
    }
    if (shown)
        fprintf(stderr, "\rmemflow: %zu outputs written in %.1f s%24s\n", i,
                (double)(now_ns() - started) / 1e9, "");
    return rc;
}
