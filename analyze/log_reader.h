/*
 * log_reader.h - validate and decode a memflow log (.mfl) into memory.
 *
 * The reader is the only code that parses log bytes.  It checks every chunk
 * and record as it goes; on a truncated or damaged file it keeps everything
 * before the damage (in each chunk) and reports the file, the byte offset and
 * what was wrong.  Events come back sorted by time, so the model (render/)
 * can replay them in order.
 */
#ifndef MEMFLOW_LOG_READER_H
#define MEMFLOW_LOG_READER_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "log_format.h"
#include "compiler.h"

/* One decoded record.  Which fields mean what depends on type: */
typedef struct mf_event {
    uint64_t time_ns;   /* CLOCK_MONOTONIC ns; ACTIVITY: start */
    uint64_t addr;      /* ALLOC/FREE/POOL: address */
    uint64_t size;      /* ALLOC: requested; ACTIVITY: bytes; POOL: size; NOTE: value */
    uint64_t actual;    /* ALLOC: actual size; ACTIVITY: end ns; POOL: threshold */
    uint32_t tid;       /* the thread (ALLOC: the one that asked) */
    uint32_t scope;     /* ALLOC: scope id; SCOPE: scope id; THREAD: name id */
    uint32_t name;      /* ALLOC: name id; ACTIVITY: name id */
    uint32_t extra;     /* SCOPE: op | depth << 8; ACTIVITY: stream; SAMPLE: index
                           into mf_log.samples; STATE: op; NOTE: code; POOL: op;
                           ACTIVITY: correlation in `addr`; ALLOC: stack id
                           (0 = none); TRACE: kind (value in `addr`, domain
                           id in `scope`, arg in `actual`) */
    uint16_t type;      /* enum mf_record_type */
    uint16_t device;    /* MF_DEVICE(kind, index) */
    uint16_t flags;     /* ALLOC/FREE: MF_FLAG_* | memkind; ACTIVITY: kind */
    uint16_t log;       /* which log it came from, when several are merged */
} mf_event;

/* A call stack (STACK record): ip[0] innermost; every ip a return address. */
typedef struct mf_stack {
    uint32_t depth;            /* 0 where the log has no stack of that id */
    uint64_t *ip;
} mf_stack;

/* An ELF module of the process (MODULE record), for symbolisation. */
typedef struct mf_module {
    uint32_t path;             /* string id of its path (mf_log_string) */
    uint32_t build_id_len;     /* 0: none recorded */
    uint64_t bias;             /* load bias: file address = ip - bias */
    uint64_t start, end;       /* addresses its PT_LOAD segments cover */
    uint8_t build_id[24];
} mf_module;

typedef struct mf_sample_values {
    uint64_t value[MF_SAMPLE_VALUES];
} mf_sample_values;

typedef struct mf_log {
    char *path;
    mf_file_header header;     /* copy of the file header */
    int argc;
    char **argv;               /* program and arguments */
    mf_event *events;          /* sorted by time_ns (stable) */
    size_t n_events;
    mf_sample_values *samples; /* SAMPLE payloads, indexed by mf_event.extra */
    size_t n_samples;
    char **strings;            /* by id; NULL where the log has no such id */
    uint32_t n_strings;
    mf_stack *stacks;          /* by stack id (STACK records) */
    uint32_t n_stacks;         /* entries in stacks (largest id + 1) */
    mf_module *modules;        /* MODULE records, in the order read */
    size_t n_modules;
    int damaged;               /* 1 if any damage was found */
    char damage[512];          /* "FILE: offset N: what" of the first damage */
} mf_log;

/*
 * Read the log at path.  On success *out owns everything and the return is
 * 0; if damage was found the log still holds everything before it, the
 * return is 1 and (*out)->damage says where and what.  If nothing can be
 * read (missing file, not a memflow log, unsupported version) the return
 * is -1, *out is NULL and err (errlen bytes) says why, naming the file.
 */
MF_EXPORT int mf_log_read(const char *path, mf_log **out, char *err, size_t errlen);

/* Free a log returned by mf_log_read (NULL is fine). */
MF_EXPORT void mf_log_free(mf_log *log);

/*
 * The string with the given id: "unknown" for id 0, "<unk>:" for 1, and
 * "?<id>" (stable storage) if the log lacks that id.  Never NULL.
 */
MF_EXPORT const char *mf_log_string(const mf_log *log, uint32_t id);

/* The stack with the given id, or NULL if the log has none (id 0 included). */
MF_EXPORT const mf_stack *mf_log_stack(const mf_log *log, uint32_t id);

/* The name of the thread tid, or NULL if the log did not record one. */
MF_EXPORT const char *mf_log_thread_name(const mf_log *log, uint32_t tid);

#endif /* MEMFLOW_LOG_READER_H */
