/*
 * outputs_table.h - the one list of memflow's outputs.  Each row names an
 * output as the `formats` key and `--formats` take it, the writer that
 * makes it (render/outputs.c defines write_<writer>), when it is written
 * without being named, and what of the model it needs.
 *
 * Everything that knows the outputs expands this list: the config check
 * (config.c, for the names), the dispatcher (render/outputs.c, for the
 * writers, the defaults and the model parts a render must build), and the
 * messages that list the accepted names (MF_OUTPUT_NAMES), which
 * tests/docs.sh reads to check that every output is documented.  A new
 * output is one row here and its writer in render/outputs.c.
 *
 * Shared by libmemflow and the memflow program: names and numbers only, no
 * code (the runtime never links the writers).
 */
#ifndef MEMFLOW_OUTPUTS_TABLE_H
#define MEMFLOW_OUTPUTS_TABLE_H

/* When an output is written besides when the formats list names it. */
#define MF_OUTPUT_ASKED 0    /* only when named */
#define MF_OUTPUT_GPU 1      /* also by default when the model has GPU blocks */
#define MF_OUTPUT_STACKS 2   /* also by default when the logs have call stacks */

/* What an output needs of the model besides its counts (a render builds
 * only what the outputs it writes need). */
#define MF_NEEDS_COUNTS 0u
#define MF_NEEDS_PICTURE 1u  /* the blocks kept whole and the tiles */
#define MF_NEEDS_TRACE 2u    /* spans, GPU activities, trace objects */

/* X(name, writer, when, needs), in the order the messages list them. */
#define MF_OUTPUTS(X)                                                                        \
    X("memory_flow.svg", svg, MF_OUTPUT_ASKED, MF_NEEDS_PICTURE)                            \
    X("memory_flow.png", svg, MF_OUTPUT_ASKED, MF_NEEDS_PICTURE)                            \
    X("memory_flow.pdf", svg, MF_OUTPUT_ASKED, MF_NEEDS_PICTURE)                            \
    /* the Chrome trace, under config `filename`; it names the picture's blocks */         \
    X("profile.json", profile, MF_OUTPUT_ASKED, MF_NEEDS_TRACE | MF_NEEDS_PICTURE)          \
    X("chrome_timeline.json", chrome_trace, MF_OUTPUT_ASKED, MF_NEEDS_TRACE | MF_NEEDS_PICTURE) \
    X("stats.txt", stats_table, MF_OUTPUT_ASKED, MF_NEEDS_COUNTS)                           \
    X("stats.json", stats_json, MF_OUTPUT_ASKED, MF_NEEDS_COUNTS)                           \
    /* <prefix>-pid_<pid>.csv per process with GPU memory */                                \
    X("gpu_memory_profile.csv", csv, MF_OUTPUT_GPU, MF_NEEDS_COUNTS)                        \
    X("stacks.folded", folded, MF_OUTPUT_STACKS, MF_NEEDS_COUNTS)                           \
    X("flamegraph.svg", flame, MF_OUTPUT_STACKS, MF_NEEDS_COUNTS)

/* Every name, ", "-separated: "memory_flow.svg, ..., flamegraph.svg". */
#define MF_OUTPUT_NAME_(name, writer, when, needs) ", " name
#define MF_OUTPUT_NAMES (&MF_OUTPUTS(MF_OUTPUT_NAME_)[2])

/* The formats written when none are configured (config `formats`). */
#define MF_OUTPUTS_DEFAULT "memory_flow.svg,profile.json,stats.txt"

#endif /* MEMFLOW_OUTPUTS_TABLE_H */
