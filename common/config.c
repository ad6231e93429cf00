/*
 * config.c - parse and validate the profiler's configuration keys.
 *
 * One table lists every key with its type and range; memflow_set_config(),
 * the MEMFLOW_<KEY> environment variables and `memflow run --set` all go
 * through mf_config_apply(), which checks every pair before applying any,
 * so a bad call changes nothing.  Messages name the key, the value and what
 * the key accepts.  File-name keys take a name, never a path (no '/', not
 * "." or ".."): outputs stay in the output folder.  Every MEMFLOW_ variable
 * is either a key or one of memflow's own (internal_variables below);
 * anything else is reported.  The live configuration is guarded by a lock:
 * set_config on one thread and set_state on another see whole values.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log_format.h"
#include "outputs_table.h"

typedef enum {
    KEY_BOOL, KEY_UINT, KEY_DEPTH, KEY_SECONDS, KEY_PATH, KEY_FILENAME, KEY_FORMATS
} key_type;

typedef struct key_spec {
    const char *name;
    key_type type;
    size_t offset;
    size_t size;        /* for strings */
    double min, max;    /* for numbers */
} key_spec;

#define FIELD(name, type) \
    { #name, type, offsetof(mf_config, name), sizeof(((mf_config *)0)->name), 0, 0 }
#define NUMBER(name, type, min, max) \
    { #name, type, offsetof(mf_config, name), sizeof(((mf_config *)0)->name), min, max }

#define MAX_SAMPLE_RATE 1000000000.0 /* a snapshot every billion events at most */
#define MAX_TORCH_HISTORY 100000000.0 /* allocator history entries (~1 KB each) */
#define MIN_DUMP_PERIOD 0.001        /* seconds */
#define MAX_DUMP_PERIOD 86400.0

/* A file name key: at most `longest` bytes (an output's name must fit). */
#define NAME(name, longest) \
    { #name, KEY_FILENAME, offsetof(mf_config, name), sizeof(((mf_config *)0)->name), 0, longest }

static const key_spec key_table[] = {
    NAME(filename, MF_OUTPUT_NAME_MAX),
    FIELD(path, KEY_PATH),
    { "format", KEY_FORMATS, offsetof(mf_config, formats), sizeof(((mf_config *)0)->formats),
      0, 0 },
    FIELD(formats, KEY_FORMATS),
    FIELD(profile_all, KEY_BOOL),
    FIELD(profile_memory, KEY_BOOL),
    FIELD(profile_api, KEY_BOOL),
    FIELD(profile_device, KEY_BOOL),
    FIELD(continuous_dump, KEY_BOOL),
    NUMBER(dump_period, KEY_SECONDS, MIN_DUMP_PERIOD, MAX_DUMP_PERIOD),
    FIELD(aggregate_stats, KEY_BOOL),
    NAME(gpu_memory_profile_filename_prefix, MF_CSV_PREFIX_MAX),
    NUMBER(sample_rate, KEY_UINT, 0, MAX_SAMPLE_RATE),
    FIELD(stacks, KEY_DEPTH),
    FIELD(torch_scopes, KEY_BOOL),
    NUMBER(python_stacks, KEY_UINT, 0, 2),
    NUMBER(torch_history, KEY_UINT, 0, MAX_TORCH_HISTORY),
    FIELD(cupti, KEY_BOOL),
};
#define N_KEYS (sizeof key_table / sizeof key_table[0])

/*
 * memflow's own MEMFLOW_ variables: set by `memflow run` for the program,
 * or knobs of its own.  Not configuration keys, never reported as unknown.
 * Every part of memflow that reads a MEMFLOW_ variable lists it here.
 */
static const char *const internal_variables[] = {
    "MEMFLOW_AUTOSTART",   /* memflow run: record from before main() */
    "MEMFLOW_RUN_ID",      /* memflow run: the run id of every log header */
    "MEMFLOW_STAGE",       /* memflow run: 0 = no staging file (default 1); its area */
    "MEMFLOW_LIBDIR",      /* where memflow run finds its preload and CUDA libraries */
    "MEMFLOW_CLOCK",       /* monotonic: clock_gettime instead of the TSC */
    "MEMFLOW_PYTHONPATH",  /* the Python package's folder, for the startup hook */
    "MEMFLOW_BIN",         /* the memflow program that answers memflow_dump()/dumps() */
    "MEMFLOW_SERVE_STAGED", /* memflow serve: 1 = its log's chunks come through a stage */
    "MEMFLOW_TEST_COMPACT_KILL_AT", /* fault injection in the compaction tests */
    "MEMFLOW_READ_THREADS", /* the analysis: threads decoding compact logs ahead */
    "MEMFLOW_MODEL_THREAD", /* the analysis: 0 = the picture on the model's thread */
    "MEMFLOW_RUN_REPORT",  /* memflow run: 1 = say what the analysis during the run did */
    "MEMFLOW_RUN_ANALYSIS", /* memflow run: idle (default), normal or 0: its priority */
    "MEMFLOW_RUN_COMPACT", /* memflow run: idle (default), normal or 0: compaction during the run */
    "MEMFLOW_RUN_DROP_AFTER", /* memflow run: seconds before a compacted chunk leaves the cache */
    "MEMFLOW_PROGRESS_AFTER", /* the memflow program: seconds before progress shows */
};
#define N_INTERNAL (sizeof internal_variables / sizeof internal_variables[0])

/* The output names `formats` accepts: the names of outputs_table.h. */
#define FORMAT_NAME(name, writer, when, needs) name,
static const char *const known_formats[] = { MF_OUTPUTS(FORMAT_NAME) };
#undef FORMAT_NAME
#define N_FORMATS (sizeof known_formats / sizeof known_formats[0])

static mf_config live_config = {
    .filename = "profile.json",
    .path = ".",
    .formats = MF_OUTPUTS_DEFAULT,
    .gpu_memory_profile_filename_prefix = "gpu_memory_profile",
    .profile_memory = 1,
    .profile_device = 1,
    .dump_period = 1.0,
    .torch_scopes = 1,
    .python_stacks = 1,
    .torch_history = 100000,
    .cupti = 1,
};
static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;

const mf_config *mf_config_get(void)
{
    return &live_config;
}

void mf_config_snapshot(mf_config *out)
{
    pthread_mutex_lock(&config_lock);
    *out = live_config;
    pthread_mutex_unlock(&config_lock);
}

/* key_table's names, comma-separated (built once: mf_config_keys). */
static char key_names[512];

static void list_key_names(void)
{
    size_t at = 0;
    for (size_t i = 0; i < N_KEYS && at < sizeof key_names; i++)
        at += (size_t)snprintf(key_names + at, sizeof key_names - at, "%s%s", i ? ", " : "",
                               key_table[i].name);
}

const char *mf_config_keys(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, list_key_names);
    return key_names;
}

static const key_spec *find_key(const char *name)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(key_table[i].name, name) == 0)
            return &key_table[i];
    return NULL;
}

/* MXNet passes booleans as "True"/"False"; accept the usual spellings. */
static int parse_bool(const char *v, int *out)
{
    static const char *const yes[] = { "1", "true", "True", "TRUE", "yes", "on" };
    static const char *const no[] = { "0", "false", "False", "FALSE", "no", "off" };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcmp(v, yes[i]) == 0) { *out = 1; return 0; }
        if (strcmp(v, no[i]) == 0) { *out = 0; return 0; }
    }
    return -1;
}

static int parse_uint(const char *v, uint64_t *out)
{
    char *end;
    if (!isdigit((unsigned char)v[0]))
        return -1;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end)
        return -1;
    *out = n;
    return 0;
}

static int parse_seconds(const char *v, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || *end || end == v || !isfinite(d) || d < min || d > max)
        return -1;
    *out = d;
    return 0;
}

/* A file name: not empty, no '/', not "." or "..", at most longest bytes. */
static int check_filename(const char *v, size_t longest)
{
    return *v && !strchr(v, '/') && strcmp(v, ".") != 0 && strcmp(v, "..") != 0 &&
           strlen(v) <= longest ? 0 : -1;
}

/* Each comma-separated name must be a known output. */
static int check_formats(const char *v, char *bad, size_t badlen)
{
    const char *p = v;
    if (!*p)
        return -1;
    while (*p) {
        size_t n = strcspn(p, ",");
        int known = 0;
        for (size_t i = 0; i < N_FORMATS; i++)
            if (strlen(known_formats[i]) == n && strncmp(known_formats[i], p, n) == 0)
                known = 1;
        if (!known) {
            snprintf(bad, badlen, "%.*s", (int)n, p);
            return -1;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

/* Check one pair and, if apply, store it into c. */
static int apply_one(mf_config *c, const char *key, const char *val, const char *origin,
                     char *err, size_t errlen)
{
    const char *pre = origin ? origin : "memflow_set_config";
    const key_spec *k = key ? find_key(key) : NULL;
    if (!k) {
        snprintf(err, errlen, "%s: unknown key '%s'; accepted keys: %s", pre,
                 key ? key : "(null)", mf_config_keys());
        return -1;
    }
    if (!val) {
        snprintf(err, errlen, "%s: key '%s' has no value", pre, key);
        return -1;
    }
    char *field = (char *)c + k->offset;
    switch (k->type) {
    case KEY_BOOL:
        if (parse_bool(val, (int *)field) < 0) {
            snprintf(err, errlen, "%s: bad value '%s' for key '%s'; accepted: "
                     "1/0, true/false, True/False, yes/no, on/off", pre, val, key);
            return -1;
        }
        return 0;
    case KEY_UINT:
        if (parse_uint(val, (uint64_t *)field) < 0 || *(uint64_t *)field > k->max) {
            snprintf(err, errlen, "%s: bad value '%s' for key '%s'; accepted: a whole "
                     "number from 0 (off) to %.0f", pre, val, key, k->max);
            return -1;
        }
        return 0;
    case KEY_DEPTH: {
        uint64_t depth;
        if (parse_uint(val, &depth) < 0 || depth > MF_STACK_MAX_DEPTH) {
            snprintf(err, errlen, "%s: bad value '%s' for key '%s'; accepted: a call-stack "
                     "depth from 0 (off) to %u", pre, val, key, MF_STACK_MAX_DEPTH);
            return -1;
        }
        *(unsigned *)field = (unsigned)depth;
        return 0;
    }
    case KEY_SECONDS:
        if (parse_seconds(val, k->min, k->max, (double *)field) < 0) {
            snprintf(err, errlen, "%s: bad value '%s' for key '%s'; accepted: a number "
                     "of seconds from %g to %g", pre, val, key, k->min, k->max);
            return -1;
        }
        return 0;
    case KEY_FILENAME:
        if (check_filename(val, (size_t)k->max) < 0) {
            snprintf(err, errlen, "%s: bad value '%s' for key '%s'; accepted: a file name "
                     "(no '/', not '.' or '..') of at most %.0f bytes: the file goes into "
                     "the output folder (key 'path')", pre, val, key, k->max);
            return -1;
        }
        strcpy(field, val);
        return 0;
    case KEY_PATH:
        if (!*val || strlen(val) >= k->size) {
            snprintf(err, errlen, "%s: bad value for key '%s'; accepted: a non-empty "
                     "path shorter than %zu bytes", pre, key, k->size);
            return -1;
        }
        strcpy(field, val);
        return 0;
    case KEY_FORMATS: {
        char bad[256];
        if (strlen(val) >= k->size || check_formats(val, bad, sizeof bad) < 0) {
            snprintf(err, errlen, "%s: bad value '%s' for key '%s'; accepted: a "
                     "comma-separated list of %s", pre, val, key, MF_OUTPUT_NAMES);
            return -1;
        }
        strcpy(field, val);
        return 0;
    }
    }
    return -1;
}

/* The trial copy is big (paths): static, under config_lock, not on the
 * stack of a thread that may be small. */
static mf_config trial;

int mf_config_apply(int n, const char *const *keys, const char *const *vals,
                    const char *origin, char *err, size_t errlen)
{
    if (n < 0 || (n > 0 && (!keys || !vals))) {
        snprintf(err, errlen, "%s: bad arguments (n=%d, keys and vals must not be NULL)",
                 origin ? origin : "memflow_set_config", n);
        return -1;
    }
    int rc = 0;
    pthread_mutex_lock(&config_lock);
    trial = live_config;
    for (int i = 0; i < n && rc == 0; i++)
        rc = apply_one(&trial, keys[i], vals[i], origin, err, errlen);
    if (rc == 0)
        live_config = trial;
    pthread_mutex_unlock(&config_lock);
    return rc;
}

void mf_config_variable(const char *key, char *var, size_t len)
{
    size_t at = (size_t)snprintf(var, len, "MEMFLOW_");
    for (const char *p = key; *p && at + 1 < len; p++)
        var[at++] = (char)toupper((unsigned char)*p);
    var[at] = 0;
}

/* Whether NAME=... (an environ entry) is a key's variable or one of ours. */
static int known_variable(const char *entry)
{
    size_t n = strcspn(entry, "=");
    char var[128];
    for (size_t i = 0; i < N_KEYS; i++) {
        mf_config_variable(key_table[i].name, var, sizeof var);
        if (strlen(var) == n && strncmp(entry, var, n) == 0)
            return 1;
    }
    for (size_t i = 0; i < N_INTERNAL; i++)
        if (strlen(internal_variables[i]) == n && strncmp(entry, internal_variables[i], n) == 0)
            return 1;
    return 0;
}

extern char **environ;

/* An unknown MEMFLOW_ variable (a typo of a key) is an error naming it. */
static int check_unknown_variables(char *err, size_t errlen)
{
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "MEMFLOW_", 8) != 0 || known_variable(*e))
            continue;
        snprintf(err, errlen, "unknown variable %.*s; configuration variables are "
                 "MEMFLOW_<KEY> for the keys %s", (int)strcspn(*e, "="), *e, mf_config_keys());
        return -1;
    }
    return 0;
}

int mf_config_apply_env(char *err, size_t errlen)
{
    if (check_unknown_variables(err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < N_KEYS; i++) {
        char var[128];
        mf_config_variable(key_table[i].name, var, sizeof var);
        const char *val = getenv(var);
        if (!val)
            continue;
        const char *key = key_table[i].name;
        if (mf_config_apply(1, &key, &val, var, err, errlen) < 0)
            return -1;
    }
    return 0;
}
