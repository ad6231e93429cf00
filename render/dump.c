/*
 * dump.c - memflow_dump() and memflow_dumps() of memflow.h: the in-process
 * way to the outputs.  Both flush what capture holds (CUPTI buffers) into
 * the log, read the process's own log back with the same reader and model
 * as `memflow render`, and write outputs or return statistics text.  All
 * of it runs inside MF_INTERNAL_BEGIN/END so that memflow's own mallocs are
 * not recorded as the program's.
 *
 * continuous_dump (MXNet's key): while recording, a background thread calls
 * memflow_dump(0) every dump_period seconds, so the outputs of a long run
 * are fresh while it runs.  The thread starts when recording starts (the
 * recorder's start hook) and never records its own allocations.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memflow.h"
#include "config.h"
#include "recorder.h"
#include "outputs.h"
#include "stats.h"

static pthread_mutex_t dumps_lock = PTHREAD_MUTEX_INITIALIZER;
static char *dumps_text;          /* memflow_dumps()'s last answer */
static uint64_t dumps_since_ns;   /* reset moment: later dumps start here */

/* A copy of the open log's path, or NULL (error set) if none is open. */
static char *own_log_path(const char *fn)
{
    const char *path = mf_recorder_log_path();
    if (!path || !*path) {
        mf_set_error("%s: no log is open; call memflow_set_state(MEMFLOW_RUN) first", fn);
        return NULL;
    }
    char *copy = strdup(path);
    if (!copy)
        mf_set_error("%s: out of memory", fn);
    return copy;
}

static int dump_outputs(void)
{
    char err[2048], formats[1200];
    char *path = own_log_path("memflow_dump");
    if (!path)
        return -1;
    const char *paths[1] = { path };
    mf_model *m = mf_model_load(paths, 1, UINT64_MAX, err, sizeof err);
    free(path);
    if (!m) {
        mf_set_error("memflow_dump: %s", err);
        return -1;
    }
    const mf_config *c = mf_config_get();
    mf_outputs_formats_for(m, c->formats, formats, sizeof formats);
    mf_output_options out = {
        .formats = formats, .trace_name = c->filename,
        .csv_prefix = c->gpu_memory_profile_filename_prefix,
        .svg = { .color_by = MF_COLOR_BY_SCOPE, .only_device = -1, .title = NULL },
        .progress = 0,
    };
    int rc = mf_outputs_write(m, c->path, &out, err, sizeof err);
    if (rc < 0)
        mf_set_error("memflow_dump: %s", err);
    mf_model_free(m);
    return rc;
}

MF_EXPORT int memflow_dump(int finished)
{
    MF_INTERNAL_BEGIN();
    if (finished)
        mf_recorder_finish(); /* runs the flush hooks, stops, marks the log */
    else
        mf_recorder_run_flush_hooks();
    int rc = dump_outputs();
    MF_INTERNAL_END();
    return rc;
}

static int dumps_args(const char *format, const char *sort_by, int ascending,
                      mf_stats_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->ascending = ascending != 0;
    if (format && mf_stats_parse_format(format, &opt->json) < 0) {
        mf_set_error("memflow_dumps: bad format '%s'; accepted: %s", format, MF_STATS_FORMATS);
        return -1;
    }
    if (sort_by && mf_stats_parse_sort(sort_by, &opt->sort_by) < 0) {
        mf_set_error("memflow_dumps: bad sort_by '%s'; accepted: %s", sort_by, MF_STATS_SORTS);
        return -1;
    }
    return 0;
}

/* The statistics text of the own log since the last reset (malloc'd). */
static char *own_stats(const mf_stats_options *opt)
{
    char err[1024];
    char *path = own_log_path("memflow_dumps");
    if (!path)
        return NULL;
    mf_load_options lo = { .until_rel_ns = UINT64_MAX, .merge_runs = 1,
                           .model = { .no_picture = 1, .no_trace = 1,
                                      .since_ns = dumps_since_ns } };
    int rc;
    const char *paths[1] = { path };
    mf_model *m = mf_model_load_opts(paths, 1, &lo, &rc, err, sizeof err);
    free(path);
    if (!m) {
        mf_set_error("memflow_dumps: %s", err);
        return NULL;
    }
    char *text = mf_stats_string(m, opt);
    mf_model_free(m);
    if (!text)
        mf_set_error("memflow_dumps: out of memory");
    return text;
}

MF_EXPORT const char *memflow_dumps(int reset, const char *format, const char *sort_by,
                                    int ascending)
{
    mf_stats_options opt;
    if (dumps_args(format, sort_by, ascending, &opt) < 0)
        return NULL;
    MF_INTERNAL_BEGIN();
    pthread_mutex_lock(&dumps_lock);
    mf_recorder_run_flush_hooks();
    char *text = own_stats(&opt);
    if (text) {
        free(dumps_text);
        dumps_text = text;
        if (reset)
            dumps_since_ns = mf_clock_now();
    }
    pthread_mutex_unlock(&dumps_lock);
    MF_INTERNAL_END();
    return text;
}

/* The continuous-dump thread: memflow's own, so nothing it does is recorded. */
static void *continuous_dump_loop(void *arg)
{
    (void)arg;
    MF_INTERNAL_BEGIN();
    for (;;) {
        double period = mf_config_get()->dump_period;
        struct timespec ts = { (time_t)period, (long)((period - (double)(time_t)period) * 1e9) };
        while (nanosleep(&ts, &ts) < 0)
            ;
        if (mf_recording && mf_config_get()->continuous_dump && memflow_dump(0) < 0)
            fprintf(stderr, "memflow: continuous dump: %s\n", memflow_last_error());
    }
    return NULL;
}

static void continuous_dump_start(void)
{
    static int started;
    if (started || !mf_config_get()->continuous_dump)
        return;
    started = 1;
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attr, continuous_dump_loop, NULL) != 0)
        fprintf(stderr, "memflow: continuous dump: cannot start its thread\n");
    pthread_attr_destroy(&attr);
}

__attribute__((constructor)) static void dump_init(void)
{
    mf_recorder_set_start_hook(continuous_dump_start);
}
