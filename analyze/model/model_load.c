/*
 * model_load.c - logs to a settled model: the streaming reader's events fed
 * to the model in batches (a few thousand at a time), so memory is what the
 * reader and the model keep, not the log.
 *
 * Two ways, one code: mf_model_load_opts reads finished logs at once; an
 * mf_follow (model.h) follows logs while they are written (memflow run
 * during the run), feeding the model only up to a time its caller knows no
 * record can still come before, and says at the end whether its model is
 * exactly the one a load of the finished logs builds (the reader counts
 * whatever came too late: mf_reader_late).  Both describe the logs to the
 * model, attach the allocation sites and feed it with the functions below,
 * so a follow that saw nothing late is that load, step for step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model.h"
#include "reader.h"
#include "statistics.h"

#define BATCH 4096

struct mf_follow {
    mf_model *m;
    mf_reader *r;            /* closed by the sites once they hold it */
    mf_event *batch;
    mf_sample_values *samples;
    int *forked;             /* by log: described as a forked child */
    size_t n_forked;
    uint64_t fed;            /* events fed */
    uint64_t late;           /* the model's own: see mf_follow_late */
    int stacks_expected;
    mf_load_progress progress;
    void *progress_ctx;
};

/* Every damage line of a log, and how it ended when not cleanly, become
 * warnings about the logs. */
static void log_warnings(mf_model *m, size_t i, const mf_log_info *info)
{
    const mf_damage *d = info->damage;
    for (size_t k = 0; k < d->n; k++)
        mf_model_warn_log(m, "%s", d->lines[k]);
    if (d->more)
        mf_model_warn_log(m, "%s: %llu more places are damaged", info->path,
                          (unsigned long long)d->more);
    if (d->n || d->more)
        m->damaged = 1;
    if (info->abnormal) {
        char how[128];
        mf_model_warn_log(m, "pid %u (%s): not finished: %s", (unsigned)info->header.pid,
                          info->program, mf_stats_process_end(&m->processes[i], how, sizeof how));
    }
}

/* Tell the model what the reader knows of every log; with final, the
 * warnings about them too.  A log described as a forked child after
 * events were fed changes how its frees count: late.  0, or -1 when out
 * of memory. */
static int describe(mf_follow *f, int final)
{
    size_t n = mf_reader_n_logs(f->r);
    if (mf_grow_filled((void **)&f->forked, &f->n_forked, n, sizeof *f->forked, -1) < 0)
        return -1;
    if (final)
        mf_model_forget_log_warnings(f->m);
    for (size_t i = 0; i < n; i++) {
        const mf_log_info *info = mf_reader_log(f->r, i);
        int forked = info->parent >= 0;
        if (f->forked[i] >= 0 && f->forked[i] != forked && f->fed)
            f->late++;
        f->forked[i] = forked;
        if (mf_model_set_process(f->m, (uint32_t)i, info) < 0)
            return -1;
        if (final)
            log_warnings(f->m, i, info);
    }
    return 0;
}

/* With stacks, the sites symbolise them as they are met and keep the
 * reader (it reads a stack's addresses when an output asks).  Sites
 * attached after events were fed missed those events' counts: late. */
static int attach_sites(mf_follow *f)
{
    if (f->m->sites || (!mf_reader_has_stacks(f->r) && !f->stacks_expected))
        return 0;
    mf_sites *sites = mf_sites_open(f->r, f->m->strings, 1);
    if (!sites)
        return -1;
    if (f->fed)
        f->late++;
    mf_model_set_sites(f->m, sites);
    return 0;
}

/* Feed the model every event up to until (about max of them at most).
 * 0, or -1 with err. */
static int feed(mf_follow *f, uint64_t until, uint64_t max, char *err, size_t errlen)
{
    long n = 0;
    for (uint64_t fed = 0; fed < max; fed += (uint64_t)n) {
        n = mf_reader_next(f->r, f->batch, f->samples, BATCH, until, err, errlen);
        if (n <= 0)
            break;
        if (mf_model_feed(f->m, f->batch, (size_t)n, f->samples) < 0) {
            snprintf(err, errlen, "out of memory building the model");
            return -1;
        }
        f->fed += (uint64_t)n;
        if (f->progress) {
            uint64_t decoded;
            mf_reader_counts(f->r, NULL, &decoded);
            f->progress(f->progress_ctx, decoded, mf_reader_events(f->r));
        }
    }
    return n < 0 ? -1 : 0;
}

/* The earliest event of all logs, what --from/--to times count from (and
 * the statistics' window line): known once every log is. */
static void set_origin(mf_follow *f)
{
    uint64_t t0 = mf_reader_t0(f->r);
    f->m->origin_ns = t0 == UINT64_MAX ? 0 : t0;
}

static void follow_free(mf_follow *f)
{
    if (!f)
        return;
    if (!f->m || !f->m->sites)
        mf_reader_close(f->r);
    mf_model_free(f->m);
    free(f->batch);
    free(f->samples);
    free(f->forked);
    free(f);
}

static mf_follow *follow_new(const mf_model_options *opt, char *err, size_t errlen)
{
    mf_follow *f = calloc(1, sizeof *f);
    if (!f || !(f->batch = malloc(BATCH * sizeof *f->batch)) ||
        !(f->samples = malloc(BATCH * sizeof *f->samples))) {
        snprintf(err, errlen, "out of memory building the model");
        follow_free(f);
        return NULL;
    }
    if (!(f->m = mf_model_new(opt, err, errlen))) {
        follow_free(f);
        return NULL;
    }
    return f;
}

mf_model *mf_model_load_opts(const char *const *paths, size_t n, const mf_load_options *opt,
                             int *rc, char *err, size_t errlen)
{
    *rc = -1;
    mf_follow *f = follow_new(&opt->model, err, errlen);
    if (!f)
        return NULL;
    mf_reader_options ro = { .merge_runs = opt->merge_runs };
    f->progress = opt->progress;
    f->progress_ctx = opt->progress_ctx;
    int open_rc = mf_reader_open(&f->r, paths, n, f->m->strings, &ro, err, errlen);
    if (open_rc != 0) {
        *rc = open_rc;
        follow_free(f);
        return NULL;
    }
    uint64_t t0 = mf_reader_t0(f->r), until = UINT64_MAX;
    if (opt->until_rel_ns != UINT64_MAX && t0 != UINT64_MAX)
        until = opt->until_rel_ns > UINT64_MAX - t0 ? UINT64_MAX : t0 + opt->until_rel_ns;
    f->m->until_ns = until;
    set_origin(f);
    if (opt->from_rel_ns && t0 != UINT64_MAX)
        mf_model_window_from(f->m, opt->from_rel_ns > UINT64_MAX - t0 ? UINT64_MAX
                                                                      : t0 + opt->from_rel_ns);
    if (describe(f, 1) < 0 || attach_sites(f) < 0) {
        snprintf(err, errlen, "out of memory building the model");
        follow_free(f);
        return NULL;
    }
    mf_model_use_threads(f->m);
    if (feed(f, until, UINT64_MAX, err, errlen) < 0) {
        follow_free(f);
        return NULL;
    }
    if (mf_model_settle(f->m) < 0) {
        snprintf(err, errlen, "out of memory building the model");
        follow_free(f);
        return NULL;
    }
    return mf_follow_take(f, rc);
}

mf_model *mf_model_load(const char *const *paths, size_t n, uint64_t until_rel_ns, char *err,
                        size_t errlen)
{
    mf_load_options opt = { .until_rel_ns = until_rel_ns };
    int rc;
    return mf_model_load_opts(paths, n, &opt, &rc, err, errlen);
}

/* ---- following logs while they are written -------------------------------------- */

mf_follow *mf_follow_new(const mf_model_options *opt, int stacks_expected, char *err,
                         size_t errlen)
{
    mf_follow *f = follow_new(opt, err, errlen);
    if (!f)
        return NULL;
    mf_reader_options ro = { .follow = 1 };
    if (mf_reader_open(&f->r, NULL, 0, f->m->strings, &ro, err, errlen) != 0) {
        follow_free(f);
        return NULL;
    }
    f->stacks_expected = stacks_expected;
    return f;
}

int mf_follow_add_log(mf_follow *f, const char *path, int staged, char *err, size_t errlen)
{
    return mf_reader_add_log(f->r, path, staged, err, errlen);
}

int mf_follow_step(mf_follow *f, uint64_t until, uint64_t max, char *err, size_t errlen)
{
    uint64_t before = f->fed;
    if (mf_reader_refresh(f->r, err, errlen) < 0)
        return -1;
    if (describe(f, 0) < 0 || attach_sites(f) < 0) {
        snprintf(err, errlen, "out of memory building the model");
        return -1;
    }
    if (feed(f, until, max, err, errlen) < 0)
        return -1;
    return f->fed > before;
}

int mf_follow_finish(mf_follow *f, char *err, size_t errlen)
{
    if (mf_reader_finish(f->r, err, errlen) < 0)
        return -1;
    set_origin(f);
    if (describe(f, 1) < 0 || attach_sites(f) < 0) {
        snprintf(err, errlen, "out of memory building the model");
        return -1;
    }
    if (f->m->sites && !mf_reader_has_stacks(f->r))
        f->late++;             /* sites expected, no stack came: a load has none */
    mf_model_use_threads(f->m);   /* the user waits for the rest */
    if (feed(f, UINT64_MAX, UINT64_MAX, err, errlen) < 0)
        return -1;
    if (mf_model_settle(f->m) < 0) {
        snprintf(err, errlen, "out of memory building the model");
        return -1;
    }
    return 0;
}

uint64_t mf_follow_late(const mf_follow *f, uint64_t *by_ns)
{
    uint64_t late = mf_reader_late(f->r, by_ns) + f->late;
    return f->m->sites ? late + mf_sites_late(f->m->sites) : late;
}

uint64_t mf_follow_fed(const mf_follow *f)
{
    return f->fed;
}

void mf_follow_set_progress(mf_follow *f, mf_load_progress fn, void *ctx)
{
    f->progress = fn;
    f->progress_ctx = ctx;
}

mf_model *mf_follow_take(mf_follow *f, int *rc)
{
    mf_model *m = f->m;
    if (!m->sites)
        mf_reader_close(f->r);
    f->r = NULL;
    f->m = NULL;
    follow_free(f);
    *rc = 0;
    return m;
}

void mf_follow_free(mf_follow *f)
{
    follow_free(f);
}
