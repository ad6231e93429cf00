/*
 * csv.h - MXNet's GPU memory profile CSV of a model, byte for byte:
 * `<prefix>-pid_<pid>.csv`, one file per profiled process, header
 * "Attribute Name","Requested Size","Device","Actual Size","Reuse?", every
 * field double-quoted, one row per GPU block the process held at the end of
 * the model (the end of the log, `--at TIME`, or the process's own end),
 * sorted by attribute name.
 */
#ifndef MEMFLOW_CSV_H
#define MEMFLOW_CSV_H

#include <stddef.h>
#include <stdio.h>

#include "model.h"
#include "sink.h"

#define MF_CSV_HEADER "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"\n"

/*
 * Write the CSV of process pid to out: the header, then every GPU block
 * that process held at the model's end, sorted by attribute (scope + name,
 * strcmp order; equal attributes by allocation time, then address).
 * Returns 0, or -1 on out of memory or a write error.
 */
MF_EXPORT int mf_csv_write_sink(const mf_model *model, uint32_t pid, mf_sink *out);

/* The same into a FILE (for tests and tools). */
MF_EXPORT int mf_csv_write(const mf_model *model, uint32_t pid, FILE *out);

/* Whether process pid had any GPU block (live or freed) in the model. */
MF_EXPORT int mf_csv_process_has_gpu(const mf_model *model, uint32_t pid);

/*
 * Write `<dir>/<prefix>-pid_<pid>.csv` for every process that had GPU
 * blocks (a process whose GPU blocks were all freed gets a header-only
 * file; a process that never touched a GPU gets none).  *written (may be
 * NULL) counts the files.  Returns 0, or -1 with a message naming the file
 * in err.
 */
MF_EXPORT int mf_csv_write_all(const mf_model *model, const char *dir, const char *prefix,
                               int *written, char *err, size_t errlen);

#endif /* MEMFLOW_CSV_H */
