/*
 * model_load.c - logs to a settled model: the streaming reader's events fed
 * to the model in batches (a few thousand at a time), so memory is what the
 * reader and the model keep, not the log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "reader.h"
#include "statistics.h"

#define BATCH 4096

/* Every damage line of every log becomes a warning. */
static void damage_warnings(mf_model *m, const mf_log_info *info)
{
    const mf_damage *d = info->damage;
    for (size_t i = 0; i < d->n; i++)
        mf_model_warn(m, "%s", d->lines[i]);
    if (d->more)
        mf_model_warn(m, "%s: %llu more places are damaged", info->path,
                      (unsigned long long)d->more);
    if (d->n || d->more)
        m->damaged = 1;
}

static int feed_all(mf_model *m, mf_reader *r, uint64_t until, char *err, size_t errlen)
{
    mf_event *batch = malloc(BATCH * sizeof *batch);
    mf_sample_values *samples = malloc(BATCH * sizeof *samples);
    long n = -1;
    if (!batch || !samples) {
        snprintf(err, errlen, "out of memory building the model");
    } else {
        while ((n = mf_reader_next(r, batch, samples, BATCH, until, err, errlen)) > 0) {
            if (mf_model_feed(m, batch, (size_t)n, samples) < 0) {
                snprintf(err, errlen, "out of memory building the model");
                n = -1;
                break;
            }
        }
    }
    free(batch);
    free(samples);
    return n < 0 ? -1 : 0;
}

mf_model *mf_model_load_opts(const char *const *paths, size_t n, const mf_load_options *opt,
                             int *rc, char *err, size_t errlen)
{
    mf_model *m = mf_model_new(&opt->model, err, errlen);
    *rc = -1;
    if (!m)
        return NULL;
    mf_reader *r;
    mf_reader_options ro = { .merge_runs = opt->merge_runs };
    int open_rc = mf_reader_open(&r, paths, n, m->strings, &ro, err, errlen);
    if (open_rc != 0) {
        *rc = open_rc;
        mf_model_free(m);
        return NULL;
    }
    uint64_t t0 = mf_reader_t0(r), until = UINT64_MAX;
    if (opt->until_rel_ns != UINT64_MAX && t0 != UINT64_MAX)
        until = opt->until_rel_ns > UINT64_MAX - t0 ? UINT64_MAX : t0 + opt->until_rel_ns;
    m->until_ns = until;
    m->origin_ns = t0 == UINT64_MAX ? 0 : t0;
    if (opt->from_rel_ns && t0 != UINT64_MAX)
        mf_model_window_from(m, opt->from_rel_ns > UINT64_MAX - t0 ? UINT64_MAX
                                                                   : t0 + opt->from_rel_ns);
    int ok = 1;
    for (size_t i = 0; i < mf_reader_n_logs(r) && ok; i++) {
        const mf_log_info *info = mf_reader_log(r, i);
        ok = mf_model_set_process(m, (uint32_t)i, info) == 0;
        damage_warnings(m, info);
        if (ok && info->abnormal) {
            char how[128];
            mf_model_warn(m, "pid %u (%s): not finished: %s", (unsigned)info->header.pid,
                          info->program, mf_stats_process_end(&m->processes[i], how, sizeof how));
        }
    }
    if (!ok)
        snprintf(err, errlen, "out of memory building the model");
    /* With stacks, the sites symbolise them as they are met and keep the
     * reader (it reads a stack's addresses when an output asks). */
    mf_reader *owned = r;
    if (ok && mf_reader_n_stacks(r) > 0) {
        mf_sites *sites = mf_sites_open(r, m->strings, 1);
        if (sites) {
            mf_model_set_sites(m, sites);
            owned = NULL;
        } else {
            snprintf(err, errlen, "out of memory building the model");
            ok = 0;
        }
    }
    if (ok && feed_all(m, r, until, err, errlen) < 0)
        ok = 0;
    if (ok && mf_model_settle(m) < 0) {
        snprintf(err, errlen, "out of memory building the model");
        ok = 0;
    }
    mf_reader_close(owned);
    if (!ok) {
        mf_model_free(m);
        return NULL;
    }
    *rc = 0;
    return m;
}

mf_model *mf_model_load(const char *const *paths, size_t n, uint64_t until_rel_ns, char *err,
                        size_t errlen)
{
    mf_load_options opt = { .until_rel_ns = until_rel_ns };
    int rc;
    return mf_model_load_opts(paths, n, &opt, &rc, err, errlen);
}
