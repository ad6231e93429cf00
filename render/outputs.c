/*
 * outputs.c - write the outputs named in a formats list into a directory:
 * the last step of the data flow for `memflow run`, `memflow render` and
 * memflow_dump().  The outputs are the rows of common/outputs_table.h;
 * each row's writer is one write_<writer> function here:
 *   svg            memory_flow.svg/.png/.pdf: mf_svg_write (svg.c)
 *   profile        the Chrome trace (chrome_trace.c) named opt->trace_name
 *   chrome_trace   the same trace under its own name
 *   stats_table    stats.txt, stats_json stats.json: mf_stats_string
 *   csv            MXNet's CSV per process: mf_csv_write_all (csv.c)
 *   folded, flame  the peak's stacks (flamegraph.c), with call stacks
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "chrome_trace.h"
#include "csv.h"
#include "flamegraph.h"
#include "outfile.h"
#include "outputs.h"
#include "outputs_table.h"
#include "paths.h"
#include "stats.h"

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

/* dir/name, or name itself when it is an absolute path. */
static void join_path(char *buf, size_t len, const char *dir, const char *name)
{
    if (name[0] == '/')
        snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "%s/%s", dir, name);
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

/* ---- the writers: one per `writer` of outputs_table.h --------------------------- */

/* Each writes the output called name into dir (0), or says why it failed in
 * err (-1); what it wrote, or why it wrote nothing, goes to the report. */
typedef int (*output_writer)(const mf_model *m, const char *dir, const char *name,
                             const mf_output_options *opt, char *err, size_t errlen);

static int write_svg(const mf_model *m, const char *dir, const char *name,
                     const mf_output_options *opt, char *err, size_t errlen)
{
    char path[8192];
    join_path(path, sizeof path, dir, name);
    int rc = mf_svg_write(m, path, &opt->svg, err, errlen);
    if (rc == 0)
        report(opt, name);
    return rc;
}

static int write_chrome_trace(const mf_model *m, const char *dir, const char *name,
                              const mf_output_options *opt, char *err, size_t errlen)
{
    char path[8192];
    join_path(path, sizeof path, dir, name);
    int rc = mf_chrome_trace_write_file(m, path, err, errlen);
    if (rc == 0)
        report(opt, name);
    return rc;
}

/* profile.json: the Chrome trace under the configured name (`filename`). */
static int write_profile(const mf_model *m, const char *dir, const char *name,
                         const mf_output_options *opt, char *err, size_t errlen)
{
    const char *file = opt->trace_name && *opt->trace_name ? opt->trace_name : name;
    return write_chrome_trace(m, dir, file, opt, err, errlen);
}

static int write_stats(const mf_model *m, const char *dir, const char *name, int json,
                       const mf_output_options *opt, char *err, size_t errlen)
{
    char path[8192];
    join_path(path, sizeof path, dir, name);
    mf_stats_options so = { .json = json };
    char *text = mf_stats_string(m, &so);
    if (!text) {
        snprintf(err, errlen, "%s: cannot write the statistics: out of memory", path);
        return -1;
    }
    int rc = mf_outfile_write_all(path, text, strlen(text), err, errlen);
    free(text);
    if (rc == 0)
        report(opt, name);
    return rc;
}

static int write_stats_table(const mf_model *m, const char *dir, const char *name,
                             const mf_output_options *opt, char *err, size_t errlen)
{
    return write_stats(m, dir, name, 0, opt, err, errlen);
}

static int write_stats_json(const mf_model *m, const char *dir, const char *name,
                            const mf_output_options *opt, char *err, size_t errlen)
{
    return write_stats(m, dir, name, 1, opt, err, errlen);
}

/* The MXNet CSV of every process that had GPU memory, or a note that there
 * was none (then nothing is written: no file is claimed that is not there). */
static int write_csv(const mf_model *m, const char *dir, const char *name,
                     const mf_output_options *opt, char *err, size_t errlen)
{
    (void)name;
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
        char file[512];
        snprintf(file, sizeof file, "%s-pid_%u.csv", prefix, pid);
        report(opt, file);
    }
    return 0;
}

/* stacks.folded or flamegraph.svg (folded or not) of the device opt names
 * (or the first with stacks), or a note that the log has no stacks to show. */
static int write_stacks(const mf_model *m, const char *dir, const char *name, int folded,
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
    int rc = folded ? mf_folded_write(m, dev, path, err, errlen)
                    : mf_flame_write(m, dev, path, err, errlen);
    if (rc == 0)
        report(opt, name);
    return rc;
}

static int write_folded(const mf_model *m, const char *dir, const char *name,
                        const mf_output_options *opt, char *err, size_t errlen)
{
    return write_stacks(m, dir, name, 1, opt, err, errlen);
}

static int write_flame(const mf_model *m, const char *dir, const char *name,
                       const mf_output_options *opt, char *err, size_t errlen)
{
    return write_stacks(m, dir, name, 0, opt, err, errlen);
}

/* ---- the table ------------------------------------------------------------------ */

typedef struct output {
    const char *name;
    output_writer write;
    int when;                 /* MF_OUTPUT_* */
    unsigned needs;           /* MF_NEEDS_* */
} output;

#define OUTPUT_ROW(name, writer, when, needs) { name, write_##writer, when, needs },
static const output outputs[] = { MF_OUTPUTS(OUTPUT_ROW) };
#undef OUTPUT_ROW
#define N_OUTPUTS (sizeof outputs / sizeof outputs[0])

/* The row of the output called name (len bytes), or NULL. */
static const output *find_output(const char *name, size_t len)
{
    for (size_t i = 0; i < N_OUTPUTS; i++)
        if (strlen(outputs[i].name) == len && memcmp(outputs[i].name, name, len) == 0)
            return &outputs[i];
    return NULL;
}

/* Whether the comma-separated list names the output exactly. */
static int list_names(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && memcmp(p, name, n) == 0)
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* Whether a row written by default (when) applies to the model. */
static int applies(const mf_model *model, int when)
{
    return (when == MF_OUTPUT_GPU && has_gpu_blocks(model)) ||
           (when == MF_OUTPUT_STACKS && model->sites);
}

void mf_outputs_formats_for(const mf_model *model, const char *configured, char *buf,
                            size_t len)
{
    snprintf(buf, len, "%s", configured);
    for (size_t i = 0; i < N_OUTPUTS; i++)
        if (applies(model, outputs[i].when) && !list_names(configured, outputs[i].name))
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", *buf ? "," : "",
                     outputs[i].name);
}

unsigned mf_outputs_needs(const char *formats)
{
    unsigned needs = 0;
    for (const char *p = formats; *p;) {
        size_t len = strcspn(p, ",");
        const output *o = find_output(p, len);
        needs |= o ? o->needs : 0;
        p += len + (p[len] == ',');
    }
    return needs;
}

/* Write the one output called name. */
static int write_one(const mf_model *m, const char *dir, const char *name,
                     const mf_output_options *opt, char *err, size_t errlen)
{
    const output *o = find_output(name, strlen(name));
    if (o)
        return o->write(m, dir, name, opt, err, errlen);
    snprintf(err, errlen, "unknown output '%s'; accepted: %s", name, MF_OUTPUT_NAMES);
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
    const char *formats = opt->formats && *opt->formats ? opt->formats : MF_OUTPUTS_DEFAULT;
    size_t n = 1;
    for (const char *p = formats; *p; p++)
        n += *p == ',';
    uint64_t started = now_ns();
    int shown = 0, rc = 0;
    size_t i = 0;
    for (const char *p = formats; *p; i++) {
        size_t len = strcspn(p, ",");
        char name[256], why[2048];
        snprintf(name, sizeof name, "%.*s", (int)(len < 255 ? len : 255), p);
        p += len + (p[len] == ',');
        if (!*name)
            continue;
        progress(opt, started, i, n, name, &shown);
        if (write_one(model, dir, name, opt, why, sizeof why) == 0)
            continue;
        if (rc == 0)           /* the first failure; the next outputs are still tried */
            snprintf(err, errlen, "%s", why);
        rc = -1;
        if (opt->failures) {
            mf_sink_puts(opt->failures, why);
            mf_sink_putc(opt->failures, '\n');
        }
    }
    if (shown)
        fprintf(stderr, "\rmemflow: %zu outputs written in %.1f s%24s\n", i,
                (double)(now_ns() - started) / 1e9, "");
    return rc;
}
