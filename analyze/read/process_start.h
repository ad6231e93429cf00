/*
 * process_start.h - when a process on this host started, read from
 * /proc/PID/stat: the analysis asks it to tell a log's writer, still
 * running, from a later process that reuses its pid (the reader's
 * "still running", compaction's "still being written").
 */
#ifndef MEMFLOW_PROCESS_START_H
#define MEMFLOW_PROCESS_START_H

#include <stdint.h>

/*
 * The start of process pid in ns since boot (/proc/PID/stat's starttime,
 * in clock ticks, converted); 0 when it cannot be read (no such process,
 * no /proc, an unexpected format).
 */
uint64_t mf_process_start_ns(uint64_t pid);

#endif /* MEMFLOW_PROCESS_START_H */
