/*
 * model.h - what the outputs read: a log (or several) turned into blocks,
 * occupancy series, samples, scope spans and GPU activity, per device.
 *
 * Data flow: log_reader (core) -> mf_model_build (here) -> outputs
 * (svg.c, trace.c, stats.c, csv.c).  Outputs only read the model.
 * All "bytes" are requested sizes unless the field says actual.
 * Times are CLOCK_MONOTONIC ns as in the log; t0_ns is the earliest event.
 */
#ifndef MEMFLOW_MODEL_H
#define MEMFLOW_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"
#include "compiler.h"

#define MF_LIVE_AT_END UINT64_MAX   /* mf_block.free_ns of a block never freed */

/* One allocation's life. */
typedef struct mf_block {
    uint64_t addr;
    uint64_t requested;
    uint64_t actual;
    uint64_t alloc_ns;
    uint64_t free_ns;         /* MF_LIVE_AT_END if live when the log ends */
    uint32_t scope;           /* model string id */
    uint32_t name;            /* model string id (0 = "unknown") */
    uint32_t tid;
    uint32_t pid;             /* process (log header pid) */
    uint16_t device;
    uint16_t flags;           /* MF_FLAG_* | memory kind */
} mf_block;

/* Live bytes right after an event. */
typedef struct mf_point {
    uint64_t time_ns;
    uint64_t live_bytes;      /* requested bytes live */
    uint64_t live_actual;     /* actual bytes live */
} mf_point;

/* A sample_rate snapshot (allocator / driver view). */
typedef struct mf_snapshot {
    uint64_t time_ns;
    uint64_t events_live;     /* live bytes by the events at that moment */
    uint64_t value[MF_SAMPLE_VALUES];
} mf_snapshot;

/* What one scope did on one device (all bytes requested sizes). */
typedef struct mf_scope_stat {
    uint32_t scope;           /* model string id */
    uint64_t alloc_count, free_count;
    uint64_t alloc_bytes;     /* sum of requested */
    uint64_t min_size, max_size;
    uint64_t peak_live_bytes; /* the most this scope held at once */
    uint64_t peak_live_time_ns;
    uint64_t live_bytes_end, live_count_end;
    uint64_t at_peak_bytes;   /* held at the device's peak moment */
    uint64_t at_peak_count;
} mf_scope_stat;

/* What one memory kind (enum mf_memory_kind) did on one device. */
#define MF_MODEL_KINDS 8
typedef struct mf_kind_stat {
    uint64_t alloc_count;
    uint64_t alloc_bytes;     /* sum of requested */
    uint64_t live_bytes_end;
} mf_kind_stat;

typedef struct mf_device_model {
    uint16_t device;
    mf_block *blocks;         /* sorted by alloc_ns */
    size_t n_blocks;
    mf_point *occupancy;      /* one point per alloc/free, time order */
    size_t n_occupancy;
    mf_snapshot *snapshots;
    size_t n_snapshots;
    uint64_t alloc_count, free_count;
    uint64_t alloc_bytes;     /* sum of requested */
    uint64_t peak_bytes, peak_time_ns;
    uint64_t live_bytes_end, live_count_end;
    uint64_t unknown_frees;   /* frees of addresses never seen allocated */
    uint64_t min_size, max_size; /* of requested sizes */
    uint64_t min_addr, max_addr; /* lowest address, highest end address */
    uint64_t replaced_blocks; /* ALLOCs at a still-live address: old block ended */
    uint64_t alloc_actual_bytes; /* sum of actual */
    mf_scope_stat *scopes;    /* every scope that allocated here, by scope id */
    size_t n_scopes;
    mf_kind_stat kinds[MF_MODEL_KINDS]; /* by memory kind (heap, device, pinned...) */
} mf_device_model;

/* A GPU memory pool created, trimmed or destroyed (CUPTI MEMORY_POOL). */
typedef struct mf_pool_event {
    uint64_t time_ns, addr, size, threshold;
    uint32_t pid;
    uint16_t device, op;      /* enum mf_pool_op */
} mf_pool_event;

/* A scope pushed on a thread: [begin, end), end = t1 if never popped. */
typedef struct mf_span {
    uint64_t begin_ns, end_ns;
    uint32_t scope;
    uint32_t tid;
    uint32_t pid;
    uint32_t depth;
} mf_span;

/* A GPU kernel, copy or set. */
typedef struct mf_activity {
    uint64_t start_ns, end_ns, bytes;
    uint32_t name, stream, correlation, pid;
    uint16_t device, kind;    /* enum mf_activity_kind */
} mf_activity;

typedef struct mf_thread_info {
    uint32_t tid, pid;
    uint32_t name;            /* model string id */
} mf_thread_info;

typedef struct mf_process_info {
    uint32_t pid, ppid;
    char *program;            /* argv joined with spaces */
    char *log_path;
    int finished;             /* the log was closed cleanly */
} mf_process_info;

typedef struct mf_model {
    uint64_t t0_ns, t1_ns;
    char **strings;           /* model string table; 0 = "unknown", 1 = "<unk>:" */
    uint32_t n_strings;
    mf_device_model *devices; /* sorted: cpu/0 first, then gpu/0, gpu/1... */
    size_t n_devices;
    mf_span *spans;
    size_t n_spans;
    mf_activity *activities;
    size_t n_activities;
    mf_pool_event *pools;
    size_t n_pools;
    mf_thread_info *threads;
    size_t n_threads;
    mf_process_info *processes;
    size_t n_processes;
    uint64_t gpu_dropped;     /* CUPTI records dropped (NOTE records) */
    char **warnings;          /* damage and notes, one line each */
    size_t n_warnings;
    int damaged;              /* some log was damaged (its damage is a warning) */
    uint64_t since_ns;        /* events before this were left out (0: none) */
    uint64_t until_ns;        /* events after this were left out (UINT64_MAX: none) */
} mf_model;

/*
 * Build the model of n logs (several processes merge; string ids are
 * re-interned into one table).  Only events at or before until_ns count
 * (UINT64_MAX: all).  Returns NULL with a message in err on out of memory.
 */
MF_EXPORT mf_model *mf_model_build(mf_log *const *logs, size_t n, uint64_t until_ns,
                                   char *err, size_t errlen);

/*
 * The same over a window: events before since_ns are left out too (their
 * blocks do not exist; a later free of one counts as an unknown free).
 */
MF_EXPORT mf_model *mf_model_build_window(mf_log *const *logs, size_t n, uint64_t since_ns,
                                          uint64_t until_ns, char *err, size_t errlen);

/*
 * Read the logs at paths[0..n) and build their model, leaving out events
 * more than until_rel_ns after the earliest event of all logs (UINT64_MAX:
 * nothing left out).  A damaged log still contributes everything before its
 * damage: the model's `damaged` is set and the damage message ("FILE:
 * offset N: what") is among its warnings.  Returns NULL with a message in
 * err (naming the file) if a log cannot be read at all, or out of memory.
 */
MF_EXPORT mf_model *mf_model_load(const char *const *paths, size_t n, uint64_t until_rel_ns,
                                  char *err, size_t errlen);

MF_EXPORT void mf_model_free(mf_model *model);

/* String of a model id; "unknown" for 0. */
MF_EXPORT const char *mf_model_string(const mf_model *model, uint32_t id);

/* The device model of device, or NULL. */
MF_EXPORT const mf_device_model *mf_model_device(const mf_model *model, uint16_t device);

/* The scope statistics of scope on dev, or NULL if it never allocated there. */
MF_EXPORT const mf_scope_stat *mf_model_scope(const mf_device_model *dev, uint32_t scope);

/* "cpu/0" / "gpu/N" of a device into buf (16 bytes); returns buf. */
MF_EXPORT const char *mf_model_device_name(uint16_t device, char *buf, size_t len);

/* Parse "cpu/0" / "gpu/N" (N < 256); 0, or -1 if text is not a device. */
MF_EXPORT int mf_model_device_parse(const char *text, uint16_t *device);

#endif /* MEMFLOW_MODEL_H */
