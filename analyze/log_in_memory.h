/*
 * log_in_memory.h - one whole log in memory: every event of it in an
 * array, in time order, and the model of such logs.  A convenience over the
 * streaming reader (reader.h) for tests and small tools that want to look
 * at each event; it costs memory in proportion to the log, so the outputs
 * never use it (they stream: model.h, mf_model_load).
 */
#ifndef MEMFLOW_LOG_IN_MEMORY_H
#define MEMFLOW_LOG_IN_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "device.h"
#include "event.h"
#include "log_format.h"
#include "model.h"
#include "string_pool.h"

typedef struct mf_log {
    char *path;
    mf_file_header header;     /* checked copy of the file header */
    int argc;
    char **argv;               /* program and arguments */
    mf_event *events;          /* in time order; string ids are pool ids */
    size_t n_events;
    mf_sample_values *samples; /* SAMPLE values, indexed by mf_event.sample.index */
    size_t n_samples;
    mf_strings *pool;          /* the texts of the events' string ids */
    uint32_t n_strings;        /* ids are 0 .. n_strings - 1 */
    mf_stack *stacks;          /* by the events' stack id (index 0: none) */
    uint32_t n_stacks;         /* entries in stacks (largest id + 1) */
    mf_module *modules;        /* MODULE records, in the order read */
    size_t n_modules;
    mf_symbolic_frame *frames; /* FRAME records: frame id - 1 (a stack entry with
                                  MF_STACK_FRAME_TAG holds the id) */
    uint32_t n_frames;
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
 * The text of string id: "unknown" for 0, "<unk>:" for 1, and "?N" for an
 * id N the log used but never wrote.  The text lives as long as the log.
 */
MF_EXPORT const char *mf_log_string(const mf_log *log, uint32_t id);

/* The call stack of an event's stack id, or NULL if the log has none
 * of that id. */
MF_EXPORT const mf_stack *mf_log_stack(const mf_log *log, uint32_t id);

/* The symbolic frame of a stack entry (MF_STACK_FRAME_TAG | id), or NULL
 * when the entry is a return address or names no frame the log wrote. */
MF_EXPORT const mf_symbolic_frame *mf_log_frame(const mf_log *log, uint64_t entry);

/* The name of the thread tid, or NULL if the log did not record one. */
MF_EXPORT const char *mf_log_thread_name(const mf_log *log, uint32_t tid);

/*
 * The model of logs already in memory, fed event by event: only events at
 * or before until_ns count (UINT64_MAX: all).  NULL with a message in err
 * when out of memory.
 */
MF_EXPORT mf_model *mf_model_build(mf_log *const *logs, size_t n, uint64_t until_ns,
                                   char *err, size_t errlen);

#endif /* MEMFLOW_LOG_IN_MEMORY_H */
