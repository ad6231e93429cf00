/*
 * import_log.h - a memflow log written by the memflow program itself, for
 * `memflow import`: the live format of docs/FORMAT.md (chunk 0 the header
 * and argv, then 1 MiB chunks of records of one thread), written with
 * pwrite as records come, with its strings, frames and stacks given ids
 * here.  It offers itself as the sink of the snapshot conversion
 * (common/torch/torch_convert.h): the other sink is the recorder, in the
 * profiled program.
 *
 * The header says what a snapshot is: no host (it ran elsewhere or
 * earlier), the pid given, the snapshot's path as argv, end_how
 * MF_END_SNAPSHOT (the process went on: what is live at the end is live,
 * not leaked), FINISHED once closed.  Memory: the strings met and one
 * chunk.
 */
#ifndef MEMFLOW_IMPORT_LOG_H
#define MEMFLOW_IMPORT_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "run_id.h"
#include "torch_convert.h"

typedef struct import_log import_log;

/*
 * Create the log at path (O_EXCL, mode 0644: a file there is an error)
 * for process pid of run run_id, its argv the single argument `source`.
 * NULL with a message in err.
 */
import_log *import_log_create(const char *path, const uint8_t run_id[MF_RUN_ID_BYTES],
                              uint32_t pid, const char *source, char *err, size_t errlen);

/* The conversion's sink writing into l. */
mf_torch_sink import_log_sink(import_log *l);

/*
 * Write what is pending and the header: its start (start_mono_ns, the
 * first event, and start_real_ns, its wall-clock time: 0 when unknown),
 * its end (end_ns: the last event), FINISHED and the magic; close it and
 * free l.  0, or -1 with a message (the file is then removed).  With
 * keep == 0 the file is removed anyway (a failed conversion).
 */
int import_log_close(import_log *l, uint64_t start_mono_ns, uint64_t start_real_ns,
                     uint64_t end_ns, int keep, char *err, size_t errlen);

/* Records written so far. */
uint64_t import_log_records(const import_log *l);

#endif /* MEMFLOW_IMPORT_LOG_H */
