/*
 * config.h - the profiler's configuration: MXNet/MegEngine keys, parsed and
 * validated in one place for memflow_set_config(), MEMFLOW_<KEY> environment
 * variables and `memflow run --set KEY=VALUE`.
 */
#ifndef MEMFLOW_CONFIG_H
#define MEMFLOW_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

#define MF_PATH_MAX 4096
/* The longest name of an output file: it is written as ".NAME.XXXXXX" first
 * (render/outfile.c), and a file name holds at most 255 bytes (NAME_MAX). */
#define MF_OUTPUT_NAME_MAX (255 - 8)
/* The longest CSV prefix: the CSV is PREFIX-pid_N.csv, N up to 4294967295. */
#define MF_CSV_PREFIX_MAX (MF_OUTPUT_NAME_MAX - 19)

typedef struct mf_config {
    char filename[MF_PATH_MAX];     /* trace file name, default "profile.json" */
    char path[MF_PATH_MAX];         /* output directory, default "." */
    char formats[1024];             /* comma-separated output names */
    char gpu_memory_profile_filename_prefix[MF_PATH_MAX];
    int profile_all;
    int profile_memory;
    int profile_api;
    int profile_device;
    int continuous_dump;
    double dump_period;             /* seconds */
    int aggregate_stats;
    uint64_t sample_rate;           /* 0 = off */
    unsigned stacks;                /* call-stack depth per allocation; 0 = off */
    int torch_scopes;               /* PyTorch module scopes under memflow run */
    uint64_t python_stacks;         /* the Python stack of every allocation, under
                                       memflow run: 0 off, 1 where it is cheap (the
                                       frame walker: CPython 3.11), 2 everywhere (a
                                       profile function elsewhere) */
    uint64_t torch_history;         /* PyTorch's allocator history: its ring's entries
                                       (default 100000); 0 = off */
    int cupti;                      /* GPU memory through CUPTI (the CUDA plugin), default
                                       1; 0 leaves CUPTI to another tool (torch.profiler's
                                       CUDA activities, Nsight Systems) */
} mf_config;

/*
 * The live configuration (defaults until changed).  The pointer is for a
 * program that configures memflow from one thread (the `memflow` command);
 * where memflow_set_config may run on another thread, read a copy made
 * with mf_config_snapshot instead.
 */
MF_EXPORT const mf_config *mf_config_get(void);

/* Copy the live configuration into *out, whole (under the config lock). */
MF_EXPORT void mf_config_snapshot(mf_config *out);

/*
 * Validate and apply n key/value pairs, all or none.  On error returns -1
 * and writes a message naming the key (and value) and what is accepted into
 * err.  `origin` prefixes messages ("MEMFLOW_SAMPLE_RATE", "--set", ...);
 * NULL for the API.  Ranges: sample_rate 0..1e9, dump_period 0.001..86400
 * seconds; filename and gpu_memory_profile_filename_prefix are file names
 * (no '/', not "." or "..").  Thread-safe.
 */
MF_EXPORT int mf_config_apply(int n, const char *const *keys, const char *const *vals,
                              const char *origin, char *err, size_t errlen);

/*
 * Apply every MEMFLOW_<KEY> environment variable (upper-case key).  A
 * MEMFLOW_ variable that is neither a key's nor one of memflow's own
 * (MEMFLOW_AUTOSTART, MEMFLOW_RUN_ID, MEMFLOW_LIBDIR, MEMFLOW_CLOCK...: the
 * list in config.c) is an error naming it, as is a bad value (the message
 * then begins with the variable's name).  Returns 0 or -1.
 */
MF_EXPORT int mf_config_apply_env(char *err, size_t errlen);

/* The list of accepted keys, comma-separated, for messages: the names of
 * config.c's key table, in its order. */
MF_EXPORT const char *mf_config_keys(void);

/* The environment variable of a key: MEMFLOW_ and the key in upper case,
 * into var (len bytes, cut short if it is too small). */
void mf_config_variable(const char *key, char *var, size_t len);


#endif /* MEMFLOW_CONFIG_H */
