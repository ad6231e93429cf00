/*
 * log_in_memory.c - a whole log in memory (see log_in_memory.h): the
 * streaming reader's events collected into arrays; and the model of such
 * logs, fed event by event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "idmap.h"
#include "log_in_memory.h"
#include "reader.h"

#define BATCH 4096

/* mf_log keeps its thread names behind the public struct. */
typedef struct log_private {
    mf_log pub;
    uint32_t *thread_tids, *thread_names;
    size_t n_threads, cap_threads;
    size_t cap_events, cap_samples;
} log_private;

static int add_thread(log_private *lp, uint32_t tid, uint32_t name)
{
    size_t cap = lp->cap_threads;
    if (mf_grow((void **)&lp->thread_tids, &cap, lp->n_threads + 1, sizeof(uint32_t)) < 0)
        return -1;
    cap = lp->cap_threads;
    if (mf_grow((void **)&lp->thread_names, &cap, lp->n_threads + 1, sizeof(uint32_t)) < 0)
        return -1;
    lp->cap_threads = cap;
    lp->thread_tids[lp->n_threads] = tid;
    lp->thread_names[lp->n_threads++] = name;
    return 0;
}

/* Keep one event (and its sample values); -1 when out of memory. */
static int keep(log_private *lp, const mf_event *e, const mf_sample_values *samples)
{
    mf_log *log = &lp->pub;
    if (e->type == MF_REC_THREAD)
        return add_thread(lp, e->tid, e->thread.name);
    if (e->type == MF_REC_DEVICE || e->type == MF_EV_PROCESS_END)
        return 0;
    if (mf_grow((void **)&log->events, &lp->cap_events, log->n_events + 1, sizeof *e) < 0)
        return -1;
    mf_event *copy = &log->events[log->n_events++];
    *copy = *e;
    if (e->type == MF_REC_SAMPLE) {
        if (mf_grow((void **)&log->samples, &lp->cap_samples, log->n_samples + 1,
                    sizeof *log->samples) < 0)
            return -1;
        log->samples[log->n_samples] = samples[e->sample.index];
        copy->sample.index = (uint32_t)log->n_samples++;
    }
    return 0;
}

static int read_events(log_private *lp, mf_reader *r, char *err, size_t errlen)
{
    mf_event *batch = malloc(BATCH * sizeof *batch);
    mf_sample_values *samples = malloc(BATCH * sizeof *samples);
    long n = -1;
    if (batch && samples) {
        while ((n = mf_reader_next(r, batch, samples, BATCH, UINT64_MAX, err, errlen)) > 0)
            for (long i = 0; i < n; i++)
                if (keep(lp, &batch[i], samples) < 0) {
                    snprintf(err, errlen, "%s: out of memory while reading the log",
                             lp->pub.path);
                    n = -1;
                    break;
                }
    } else {
        snprintf(err, errlen, "%s: out of memory while reading the log", lp->pub.path);
    }
    free(batch);
    free(samples);
    return n < 0 ? -1 : 0;
}

/* The stacks and modules the reader found, copied into the log. */
static int copy_stacks(mf_log *log, mf_reader *r)
{
    uint32_t n = mf_reader_n_stacks(r);
    size_t n_modules;
    const mf_module *modules = mf_reader_modules(r, 0, &n_modules);
    if (!modules || (n && !(log->stacks = calloc((size_t)n + 1, sizeof *log->stacks))) ||
        (n_modules && !(log->modules = malloc(n_modules * sizeof *modules))))
        return -1;
    log->n_stacks = n ? n + 1 : 0;
    for (size_t i = 0; i < n_modules; i++) {   /* their paths outlive the reader */
        uint32_t path = mf_strings_intern(log->pool, modules[i].path, strlen(modules[i].path));
        if (path == MF_STRINGS_FAILED)
            return -1;
        log->modules[i] = modules[i];
        log->modules[i].path = mf_strings_get(log->pool, path);
    }
    log->n_modules = n_modules;
    uint32_t n_frames = mf_reader_n_frames(r);
    if (n_frames && !(log->frames = malloc(n_frames * sizeof *log->frames)))
        return -1;
    for (uint32_t id = 1; id <= n_frames; id++) {
        const mf_symbolic_frame *f = mf_reader_frame(r, id);
        if (!f)
            return -1;
        log->frames[id - 1] = *f;
    }
    log->n_frames = n_frames;
    uint64_t ip[MF_STACK_MAX_DEPTH];
    for (uint32_t id = 1; id <= n; id++) {
        int depth = mf_reader_stack(r, id, NULL, ip, MF_STACK_MAX_DEPTH);
        if (depth <= 0)
            continue;          /* unreadable: no stack of that id */
        if (!(log->stacks[id].ip = malloc(8 * (size_t)depth)))
            return -1;
        memcpy(log->stacks[id].ip, ip, 8 * (size_t)depth);
        log->stacks[id].depth = (uint32_t)depth;
    }
    return 0;
}

static int copy_header(mf_log *log, const mf_log_info *info)
{
    log->header = info->header;
    log->argv = calloc((size_t)info->argc + 1, sizeof *log->argv);
    if (!log->argv)
        return -1;
    for (int i = 0; i < info->argc; i++)
        if (!(log->argv[i] = strdup(info->argv[i])))
            return -1;
    log->argc = info->argc;
    if (info->damage->n || info->damage->more) {
        log->damaged = 1;
        snprintf(log->damage, sizeof log->damage, "%s", mf_damage_first(info->damage));
    }
    return 0;
}

int mf_log_read(const char *path, mf_log **out, char *err, size_t errlen)
{
    *out = NULL;
    log_private *lp = calloc(1, sizeof *lp);
    mf_log *log = lp ? &lp->pub : NULL;
    if (!lp || !(log->path = strdup(path)) || !(log->pool = mf_strings_new())) {
        snprintf(err, errlen, "%s: out of memory", path);
        mf_log_free(log);
        return -1;
    }
    mf_reader *r;
    mf_reader_options opt = { .merge_runs = 1 };
    if (mf_reader_open(&r, &path, 1, log->pool, &opt, err, errlen) != 0) {
        mf_log_free(log);
        return -1;
    }
    int rc = read_events(lp, r, err, errlen);
    if (rc == 0 && (copy_header(log, mf_reader_log(r, 0)) < 0 || copy_stacks(log, r) < 0)) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -1;
    }
    mf_reader_close(r);
    if (rc < 0) {
        mf_log_free(log);
        return -1;
    }
    log->n_strings = mf_strings_count(log->pool);
    *out = log;
    return log->damaged ? 1 : 0;
}

void mf_log_free(mf_log *log)
{
    if (!log)
        return;
    log_private *lp = (log_private *)log;
    for (int i = 0; log->argv && i < log->argc; i++)
        free(log->argv[i]);
    free(log->argv);
    free(log->events);
    free(log->samples);
    for (uint32_t i = 0; i < log->n_stacks; i++)
        free(log->stacks[i].ip);
    free(log->stacks);
    free(log->modules);
    free(log->frames);
    free(log->path);
    mf_strings_free(log->pool);
    free(lp->thread_tids);
    free(lp->thread_names);
    free(lp);
}

const char *mf_log_string(const mf_log *log, uint32_t id)
{
    return mf_strings_get(log->pool, id);
}

const mf_stack *mf_log_stack(const mf_log *log, uint32_t id)
{
    return id && id < log->n_stacks && log->stacks[id].depth ? &log->stacks[id] : NULL;
}

const mf_symbolic_frame *mf_log_frame(const mf_log *log, uint64_t entry)
{
    uint32_t id = mf_stack_entry_frame(entry);
    if (!mf_stack_entry_is_frame(entry) || id == 0 || id > log->n_frames)
        return NULL;
    return &log->frames[id - 1];
}

const char *mf_log_thread_name(const mf_log *log, uint32_t tid)
{
    const log_private *lp = (const log_private *)log;
    for (size_t i = lp->n_threads; i-- > 0;)
        if (lp->thread_tids[i] == tid)
            return mf_log_string(log, lp->thread_names[i]);
    return NULL;
}

/* ---- the model of logs in memory ------------------------------------------------ */

/* The model's id of log li's string id (interned on first use). */
static uint32_t remap(mf_model *m, const mf_log *log, mf_idmap *map, uint32_t id)
{
    if (id <= MF_STRING_DEFAULT_SCOPE)
        return id;
    uint32_t got = mf_idmap_get(map, id);
    if (got)
        return got;
    const char *text = mf_log_string(log, id);
    got = mf_strings_intern(m->strings, text, strlen(text));
    if (got != MF_STRINGS_FAILED)
        mf_idmap_set(map, id, got);
    return got;
}

static void remap_event(mf_model *m, const mf_log *log, mf_idmap *map, mf_event *e)
{
    uint32_t *ids[2];
    unsigned n = mf_event_strings(e, ids);
    for (unsigned i = 0; i < n; i++)
        *ids[i] = remap(m, log, map, *ids[i]);
}

static void describe(mf_log_info *info, const mf_log *log, char *program, size_t len)
{
    memset(info, 0, sizeof *info);
    info->path = log->path;
    info->header = log->header;
    info->argc = log->argc;
    info->argv = log->argv;
    size_t used = 0;
    program[0] = 0;
    for (int i = 0; i < log->argc && used + 1 < len; i++)
        used += (size_t)snprintf(program + used, len - used, "%s%s", i ? " " : "", log->argv[i]);
    info->program = program;
    info->parent = info->prev_image = info->next_image = -1;
}

mf_model *mf_model_build(mf_log *const *logs, size_t n, uint64_t until_ns, char *err,
                         size_t errlen)
{
    mf_model *m = mf_model_new(NULL, err, errlen);
    size_t *at = calloc(n ? n : 1, sizeof *at);
    mf_idmap *maps = calloc(n ? n : 1, sizeof *maps);
    int ok = m && at && maps;
    char program[4096];
    for (size_t i = 0; ok && i < n; i++) {
        mf_log_info info;
        describe(&info, logs[i], program, sizeof program);
        ok = mf_model_set_process(m, (uint32_t)i, &info) == 0;
        if (logs[i]->damaged) {
            mf_model_warn(m, "%s", logs[i]->damage);
            m->damaged = 1;
        }
    }
    while (ok) {                       /* merge the logs' sorted events */
        size_t best = n;
        for (size_t i = 0; i < n; i++)
            if (at[i] < logs[i]->n_events && logs[i]->events[at[i]].time_ns <= until_ns &&
                (best == n || logs[i]->events[at[i]].time_ns <
                                  logs[best]->events[at[best]].time_ns))
                best = i;
        if (best == n)
            break;
        const mf_log *log = logs[best];
        mf_event e = log->events[at[best]++];
        e.log = (uint16_t)best;
        remap_event(m, log, &maps[best], &e);
        const mf_sample_values *values =
            e.type == MF_REC_SAMPLE ? &log->samples[e.sample.index] : NULL;
        if (values)
            e.sample.index = 0;
        ok = mf_model_feed(m, &e, 1, values) == 0;
    }
    if (ok) {
        m->until_ns = until_ns;
        ok = mf_model_settle(m) == 0;
    }
    for (size_t i = 0; maps && i < n; i++)
        mf_idmap_free(&maps[i]);
    free(maps);
    free(at);
    if (!ok) {
        mf_model_free(m);
        snprintf(err, errlen, "out of memory building the model");
        return NULL;
    }
    return m;
}
