/*
 * statistics.h - the statistics of a model, computed once, in the order
 * they are shown: MXNet's "Device Storage" rows, the per-scope rows, the
 * allocation sites (with stacks), who held memory at each device's peak
 * (by scope and by site), the largest blocks never freed (leaks: what
 * grew from step to step, or never freed by the program's own code) and
 * those processes still running hold (live now), what interpreters held at
 * exit (not leaks), and the processes that ended abnormally.  The table and JSON (render/stats_sections.c) only
 * print what is here.
 */
#ifndef MEMFLOW_STATISTICS_H
#define MEMFLOW_STATISTICS_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "model.h"

/* What rows are sorted by, as MXNet's dumps(sort_by=...). */
typedef enum mf_stats_sort {
    MF_SORT_TOTAL = 0,   /* total requested bytes */
    MF_SORT_AVG = 1,     /* mean requested size */
    MF_SORT_MIN = 2,     /* smallest requested size */
    MF_SORT_MAX = 3,     /* largest requested size */
    MF_SORT_COUNT = 4    /* number of allocations */
} mf_stats_sort;

#define MF_STATS_SORTS "total, avg, min, max, count"
#define MF_STATS_DEFAULT_LEAKS 20

/* Parse "total", "avg", "min", "max", "count"; 0, or -1 otherwise. */
MF_EXPORT int mf_stats_parse_sort(const char *text, mf_stats_sort *sort);

/* The name of a sort key ("total", ...). */
MF_EXPORT const char *mf_stats_sort_name(mf_stats_sort sort);

/* The name of a memory kind (enum mf_memory_kind): "heap", "device",
 * "pinned", "managed", "pool", "other", "vmm". */
MF_EXPORT const char *mf_memory_kind_name(unsigned kind);

/*
 * One row of the Device Storage table, or of the scope (site) table.  A
 * device row is MXNet's aggregate of the device's usage counter: count is
 * its updates (allocations and frees), min/max/avg its smallest, largest
 * (the peak) and mean value; total the requested bytes allocated.  A
 * scope row counts allocations: count, total requested, min/max/avg size
 * (avg: total / count).
 */
typedef struct mf_stats_row {
    const mf_device_model *dev;
    const mf_scope_stat *scope;   /* NULL for a device row */
    const char *name;             /* "Memory: cpu/0", or the scope */
    uint64_t count, total, min, max;
    double avg;
} mf_stats_row;

/* A scope (or a site) holding memory at a device's peak. */
typedef struct mf_stats_holder {
    const mf_scope_stat *scope;   /* a site's mf_site_stat in by_site */
    const char *name;             /* the scope's or site's name */
    uint64_t bytes, blocks;
    const mf_device_model *dev;   /* its device */
} mf_stats_holder;

typedef struct mf_stats_peak {
    const mf_device_model *dev;
    mf_stats_holder *holders;     /* by scope, most bytes first */
    size_t n_holders;
    mf_stats_holder *by_site;     /* by allocation site, most bytes first (none
                                     without stacks) */
    size_t n_by_site;
    mf_stats_holder *by_role;     /* by role (mf_block.role), most bytes first */
    size_t n_by_role;
    mf_stats_holder *by_name;     /* by tensor name ("(no name)": blocks without one),
                                     most bytes first */
    size_t n_by_name;
    /* The device's tensors (sub-blocks within its segments: PyTorch's), at
     * their own peak (dev->sub.peak_bytes), apart from its blocks; none
     * when it has no sub-blocks: */
    mf_stats_holder *tensor_by_role, *tensor_by_name;
    size_t n_tensor_by_role, n_tensor_by_name;
} mf_stats_peak;

/* A site (or, without stacks, a scope) that held more at the last step
 * mark than at its first: memory that grows step after step.  A device's
 * blocks and its tensors (sub-blocks within segments) are counted apart:
 * a tensor's growth is not its segment's. */
typedef struct mf_stats_growth {
    const mf_device_model *dev;
    const mf_scope_stat *key;     /* its site's (or scope's) statistics: held_*_mark,
                                     marks, marks_grew */
    const char *name;
    double bytes_per_step;        /* (held at the last mark - at the first) / (marks - 1) */
    int tensors;                  /* the device's tensors (sub-blocks) of that site */
} mf_stats_growth;

typedef struct mf_stats {
    const mf_model *model;
    mf_stats_sort sort_by;
    int ascending;
    mf_stats_row *devices;        /* sorted */
    size_t n_devices;
    mf_stats_row *scopes;         /* sorted; every (scope, device) */
    size_t n_scopes;
    int has_sites;                /* the logs have stacks: sites and by_site are filled */
    mf_stats_row *sites;          /* sorted; every (allocation site, device); `scope`
                                     is the site's mf_site_stat */
    size_t n_sites;
    mf_stats_peak *peaks;         /* one per device, in device order */
    size_t n_peaks;
    mf_block *leaks;              /* the largest blocks never freed, of processes that
                                     ended (or live at --at) */
    size_t n_leaks;
    mf_block *live_now;           /* the largest blocks of processes not ended yet: live
                                     now, not leaks (a dump in mid-run) */
    size_t n_live_now;
    size_t max_leaks;             /* of each */
    int running;                  /* a process had not ended (then live_now is shown) */
    double small_pct;             /* processes under this percent of the largest peak
                                     share one line (mf_model_small_process); 0: none */
    int growth_by_site;           /* growth is by site (the logs have stacks), else scope */
    mf_stats_growth *growth;      /* most bytes per step first */
    size_t n_growth;
    size_t n_growing;             /* growth[0..n) that grew at more than half the step
                                     marks (at least two), holding more blocks or 4 KiB
                                     more a step: leaks (listed with them) */
    mf_stats_holder *held_at_exit;    /* what interpreters held at exit, not allocated by
                                     the program's own code, by site (scope without
                                     stacks; `scope` the device's mf_scope_stat), most
                                     bytes first: not leaks */
    size_t n_held_at_exit;
    uint64_t unknown_frees, inherited_frees;
    char (*device_names)[32];     /* storage of devices[].name */
} mf_stats;

/*
 * Compute the statistics of a settled model, rows sorted by sort_by
 * (ascending or large first; ties by name, then device), at most max_leaks
 * leaks (0: MF_STATS_DEFAULT_LEAKS).  0, or -1 when out of memory.
 */
MF_EXPORT int mf_stats_compute(const mf_model *m, mf_stats_sort sort_by, int ascending,
                               size_t max_leaks, mf_stats *out);

MF_EXPORT void mf_stats_free(mf_stats *s);

/* How process p ended, for people: "exited with status 0", "killed by
 * signal 9", "exec'd", "ended with no end mark (killed or crashed)",
 * "still running", ... into buf. */
MF_EXPORT const char *mf_stats_process_end(const mf_process_info *p, char *buf, size_t len);

#endif /* MEMFLOW_STATISTICS_H */
