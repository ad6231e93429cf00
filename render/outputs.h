/*
 * outputs.h - write the configured outputs of a model into a directory:
 * memory_flow.svg/.png/.pdf, the Chrome trace, statistics, GPU memory CSV,
 * and with call stacks the folded stacks and flame graph of the peak (the
 * rows of outputs_table.h).  Used by `memflow run`, `memflow render` and
 * memflow_dump().
 */
#ifndef MEMFLOW_OUTPUTS_H
#define MEMFLOW_OUTPUTS_H

#include <stddef.h>

#include "model.h"
#include "outputs_table.h"
#include "sink.h"
#include "svg.h"

typedef struct mf_output_options {
    const char *formats;      /* comma-separated names, as the formats key */
    const char *trace_name;   /* file name of the trace (config filename) */
    const char *csv_prefix;   /* gpu_memory_profile_filename_prefix */
    mf_svg_options svg;
    int progress;             /* print progress to stderr (a terminal) */
    mf_sink *report;          /* when set: the files written, ", "-separated, and
                                 what was not written and why */
    mf_sink *failures;        /* when set: each output that could not be written,
                                 a line "PATH: cannot write: why" */
} mf_output_options;

/*
 * Write every output named in opt->formats into dir (created if missing),
 * each safely (outfile.h): one that cannot be written (a full disk, a file
 * size limit) leaves no file, neither temporary nor partial, and the
 * others are still written where they fit.  Returns 0, or -1 when any
 * failed, with the first failure's message (naming the file) in err and
 * every one in opt->failures.  gpu_memory_profile.csv names one file per
 * process that had GPU memory; with none, no file is written and
 * opt->report says so.
 */
int mf_outputs_write(const mf_model *model, const char *dir, const mf_output_options *opt,
                     char *err, size_t errlen);

/*
 * The formats to write by default: `configured` (a formats list), plus
 * gpu_memory_profile.csv when the model has GPU blocks and the list lacks
 * it, so that every GPU run leaves MXNet's CSV, plus stacks.folded and
 * flamegraph.svg when the logs have call stacks.  Writes into buf (len
 * bytes).
 */
MF_EXPORT void mf_outputs_formats_for(const mf_model *model, const char *configured, char *buf,
                                      size_t len);

/*
 * What the outputs named in formats (a formats list) need of the model
 * besides its counts: MF_NEEDS_PICTURE and MF_NEEDS_TRACE or'ed; unknown
 * names need nothing.
 */
MF_EXPORT unsigned mf_outputs_needs(const char *formats);

#endif
