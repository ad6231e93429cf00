/*
 * stats.h - the statistics of a model as text: MXNet's "Device Storage"
 * table and the rest as a text table or as JSON with the same content, both
 * written by one walk of the sections (stats_sections.c) through an
 * emitter (emitter.h).  The numbers are computed once, in
 * analyze/stats/statistics.c; these only print them.  Used by `memflow stats`,
 * `memflow serve`, and the stats.txt / stats.json outputs.
 * docs/OUTPUTS.md describes every section, column and key.
 */
#ifndef MEMFLOW_STATS_H
#define MEMFLOW_STATS_H

#include <stddef.h>
#include <stdio.h>

#include "emitter.h"
#include "model.h"
#include "sink.h"
#include "statistics.h"

typedef struct mf_stats_options {
    int json;            /* 0: text table, 1: JSON */
    mf_stats_sort sort_by;
    int ascending;       /* small first (default: large first) */
    size_t max_leaks;    /* leaks listed; 0 means the default, 20 */
    double summary_below;    /* processes under this percent of the largest process peak
                                share one line of the table (mf_model_small_process;
                                0: MF_SMALL_PROCESS_PCT, < 0: none) */
} mf_stats_options;

/* The accepted spellings, for messages. */
#define MF_STATS_FORMATS "table, json"

/* Parse "table"/"json" into *json; 0, or -1 if text is neither. */
MF_EXPORT int mf_stats_parse_format(const char *text, int *json);

/* Write the statistics of a settled model into out.  0, or -1 on out of
 * memory or a write error (the sink's). */
MF_EXPORT int mf_stats_write_sink(const mf_model *model, mf_sink *out,
                                  const mf_stats_options *opt);

/* The same as a malloc'd NUL-terminated string (the caller frees it), or
 * NULL when out of memory. */
MF_EXPORT char *mf_stats_string(const mf_model *model, const mf_stats_options *opt);

/* The same into a FILE.  0, or -1. */
MF_EXPORT int mf_stats_write(const mf_model *model, FILE *out, const mf_stats_options *opt);

/* Walk every section of s into e, which writes the table or the JSON
 * (stats_sections.c). */
void mf_stats_emit(const mf_stats *s, mf_emitter *e);

/* The GPU sections (stats_gpu.c): the out-of-memory post-mortems, first of
 * all; GPU memory reserved against allocated, both peaks per device, scope
 * and site, and what PyTorch's allocator history said. */
void mf_stats_emit_ooms(const mf_stats *s, mf_emitter *e);
void mf_stats_emit_gpu_memory(const mf_stats *s, mf_emitter *e);

/* A model time as ns since its first event (0 before it). */
static inline uint64_t mf_stats_rel_ns(const mf_model *m, uint64_t t)
{
    return t >= m->t0_ns ? t - m->t0_ns : 0;
}

#endif /* MEMFLOW_STATS_H */
