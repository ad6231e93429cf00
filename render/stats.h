/*
 * stats.h - the statistics of a model, as an MXNet-style text table or as
 * JSON with the same content.  Used by `memflow stats`, memflow_dumps()
 * and the stats.txt / stats.json outputs.  docs/OUTPUTS.md describes every
 * section, column and key.
 */
#ifndef MEMFLOW_STATS_H
#define MEMFLOW_STATS_H

#include <stddef.h>
#include <stdio.h>

#include "model.h"

/* What rows are sorted by, as MXNet's dumps(sort_by=...). */
typedef enum mf_stats_sort {
    MF_SORT_TOTAL = 0,   /* total requested bytes */
    MF_SORT_AVG = 1,     /* mean requested size */
    MF_SORT_MIN = 2,     /* smallest requested size */
    MF_SORT_MAX = 3,     /* largest requested size */
    MF_SORT_COUNT = 4    /* number of allocations */
} mf_stats_sort;

typedef struct mf_stats_options {
    int json;            /* 0: text table, 1: JSON */
    mf_stats_sort sort_by;
    int ascending;       /* small first (default: large first) */
    size_t max_leaks;    /* leaks listed; 0 means the default, 20 */
} mf_stats_options;

/* The accepted spellings, for messages. */
#define MF_STATS_FORMATS "table, json"
#define MF_STATS_SORTS "total, avg, min, max, count"

/* The name of a memory kind (enum mf_memory_kind): "heap", "device",
 * "pinned", "managed", "pool", "other". */
MF_EXPORT const char *mf_memory_kind_name(unsigned kind);

/* Parse "table"/"json" into *json; 0, or -1 if text is neither. */
MF_EXPORT int mf_stats_parse_format(const char *text, int *json);

/* Parse "total", "avg", "min", "max", "count"; 0, or -1 otherwise. */
MF_EXPORT int mf_stats_parse_sort(const char *text, mf_stats_sort *sort);

/*
 * The statistics as a malloc'd NUL-terminated string (the caller frees it),
 * or NULL when out of memory.
 */
MF_EXPORT char *mf_stats_string(const mf_model *model, const mf_stats_options *opt);

/* Write the statistics to out.  Returns 0, or -1 on out of memory or a
 * write error. */
MF_EXPORT int mf_stats_write(const mf_model *model, FILE *out, const mf_stats_options *opt);

#endif /* MEMFLOW_STATS_H */
