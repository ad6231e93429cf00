/*
 * merge.h - the reader's second pass: the events of every segment the scan
 * found (log_scan.c), of all logs, in one time order, in bounded memory.
 *
 * Segments wait sorted by their first time; one is opened when the merge
 * time reaches it, and a heap of open segments gives the next event.  A
 * segment whose times never go back (a thread's own records: the common
 * case) is read through a 64 KiB window; one whose times do (a thread that
 * writes records stamped earlier, as CUPTI's buffer thread does) is read
 * whole and its events sorted first.  So memory is 64 KiB per segment whose
 * time range spans the merge time, plus whole unsorted segments while they
 * are open, whatever the log's size.  Equal times go by log, then chunk,
 * then offset, whatever order the segments were found in (a reader that
 * follows growing logs gives the order of one that reads them finished); a
 * process's end comes after the events of its time.  docs/FORMAT.md
 * "Order" explains why this is the order.
 */
#ifndef MEMFLOW_MERGE_H
#define MEMFLOW_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "reader_internal.h"

typedef struct mf_merge mf_merge;

/* A merge over logs[] (owned by the caller, which may grow the array: the
 * merge looks logs up through *logs each time); sink: the scan's tables
 * (names and stacks get their ids as events name them). */
mf_merge *mf_merge_new(mf_rlog **const *logs, mf_scan_sink *sink);

void mf_merge_free(mf_merge *m);

/* Add segments to read.  0, or -1 when out of memory. */
int mf_merge_add(mf_merge *m, const mf_segment *segments, size_t n);

/* Add one event of the reader's own (a process end) at e->time_ns. */
int mf_merge_add_event(mf_merge *m, const mf_event *e);

/* Put e in the place of old, an event of the reader's own added before (a
 * process end that moved); if old was handed out already, it counts as
 * late.  0, or -1 when out of memory. */
int mf_merge_replace_event(mf_merge *m, const mf_event *old, const mf_event *e);

/* How many things were added that sort before an event already handed out
 * (segments of a log that grew, process ends): 0 when the events handed
 * out are exactly those a reader of the finished logs gives, in its order.
 * *by_ns: the most one of them sorted before (how late it came). */
uint64_t mf_merge_late(const mf_merge *m, uint64_t *by_ns);

/*
 * The next events, at most max, with time <= until, into out; SAMPLE values
 * into samples[e->extra].  Returns how many (0: none left for now), or -1
 * with "PATH: offset N: ..." in err on a read error or out of memory.
 */
long mf_merge_next(mf_merge *m, mf_event *out, mf_sample_values *samples, size_t max,
                   uint64_t until, char *err, size_t errlen);

/* Events decoded so far (serve reports it). */
uint64_t mf_merge_decoded(const mf_merge *m);

#endif /* MEMFLOW_MERGE_H */
