/*
 * chrome_trace.h - the Chrome trace of a model (JSON object format) for
 * Perfetto and chrome://tracing: MXNet's "Memory: <device>" counters,
 * sample_rate snapshots as counters, scope spans per thread, GPU kernels and
 * copies per device and stream, the trace objects (Task, Frame, Event,
 * Counter, Marker, NVTX ranges), and each device's largest blocks named by
 * their allocating site (scope without call stacks).  Written as
 * profile.json (config `filename`) or chrome_timeline.json.
 * docs/OUTPUTS.md lists every event it writes.  (Not to be confused with
 * memflow.h's trace objects, which the runtime records, nor with the spans
 * the model keeps of them: this file only writes the JSON.)
 *
 * Bounded: whatever the log, the file stays under
 * MF_CHROME_TRACE_MAX_BYTES.  The model keeps spans, activities and
 * trace-object spans within byte budgets (the longest), the first pool
 * events and markers, and bounded series; here the memory counters are cut
 * to MF_CHROME_TRACE_COUNTER_POINTS in all (each bucket keeps its lowest and
 * highest point; the exact peak and the last point are always kept) and the
 * snapshots to MF_CHROME_TRACE_SNAPSHOT_POINTS.  What was left out is
 * counted in "otherData".
 */
#ifndef MEMFLOW_CHROME_TRACE_H
#define MEMFLOW_CHROME_TRACE_H

#include <stddef.h>

#include "model.h"
#include "sink.h"

#define MF_CHROME_TRACE_MAX_BYTES (64u << 20)
#define MF_CHROME_TRACE_COUNTER_POINTS 250000u   /* memory counter points, all devices */
#define MF_CHROME_TRACE_SNAPSHOT_POINTS 30000u   /* snapshot counter points, all devices */
#define MF_CHROME_TRACE_DEVICE_PID_BASE (1u << 24) /* trace pid of a device: base + device */
#define MF_CHROME_TRACE_BLOCKS 500u              /* largest blocks per device, as spans */

/* Write the trace to out.  Returns 0, or -1 on a write error or out of
 * memory. */
MF_EXPORT int mf_chrome_trace_write(const mf_model *model, mf_sink *out);

/* Write the trace into the file path.  Returns 0, or -1 with a message
 * naming path in err. */
MF_EXPORT int mf_chrome_trace_write_file(const mf_model *model, const char *path, char *err,
                                  size_t errlen);

#endif /* MEMFLOW_CHROME_TRACE_H */
