/*
 * stats.c - the statistics' entry points: compute them once
 * (analyze/stats/statistics.c) and walk them into a table or JSON emitter.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

int mf_stats_parse_format(const char *text, int *json)
{
    if (text && strcmp(text, "table") == 0)
        *json = 0;
    else if (text && strcmp(text, "json") == 0)
        *json = 1;
    else
        return -1;
    return 0;
}

int mf_stats_write_sink(const mf_model *model, mf_sink *out, const mf_stats_options *opt)
{
    static const mf_stats_options defaults = { 0, MF_SORT_TOTAL, 0, 0, 0 };
    mf_stats s;
    if (!opt)
        opt = &defaults;
    if (mf_stats_compute(model, opt->sort_by, opt->ascending, opt->max_leaks, &s) < 0) {
        out->error = out->error ? out->error : ENOMEM;
        return -1;
    }
    s.small_pct = opt->summary_below == 0 ? MF_SMALL_PROCESS_PCT
                  : opt->summary_below < 0 ? 0 : opt->summary_below;
    mf_emitter e;
    mf_emit_init(&e, opt->json ? MF_EMIT_JSON : MF_EMIT_TABLE, out);
    mf_stats_emit(&s, &e);
    mf_stats_free(&s);
    return out->error ? -1 : 0;
}

char *mf_stats_string(const mf_model *model, const mf_stats_options *opt)
{
    mf_sink s = { 0 };
    if (mf_stats_write_sink(model, &s, opt) < 0) {
        mf_sink_free(&s);
        return NULL;
    }
    return mf_sink_take(&s);
}

int mf_stats_write(const mf_model *model, FILE *out, const mf_stats_options *opt)
{
    char *text = mf_stats_string(model, opt);
    if (!text)
        return -1;
    size_t len = strlen(text);
    int rc = fwrite(text, 1, len, out) == len ? 0 : -1;
    free(text);
    return rc;
}
