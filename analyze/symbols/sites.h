/*
 * sites.h - allocation sites: the reader's stack ids turned into the
 * functions that allocated, at analysis time.
 *
 * Data flow: reader (stack ids on ALLOC events, STACK and MODULE records)
 * -> mf_sites (here: one mf_symbols per log, opened from its MODULE records
 * on its first stack) -> the model (per-site and per-stack counters) ->
 * the outputs (statistics, folded stacks, flame graph, memory_flow, trace).
 *
 * A site is the first frame of a stack outside allocator wrappers
 * (mf_symbols_site), or, for a stack with Python frames (symbolic frames,
 * FRAME records), its first Python frame in the program's own code
 * (mf_sites_library_file), else its first C/C++ frame known by name outside
 * PyTorch's and the interpreter's internals (mf_sites_library_function);
 * named "function (file.c:LINE)" (the innermost inlined
 * function and its line when the call was inlined), "function" without
 * line information, or "module.so+0xOFFSET" when no symbol names the code.
 * Stacks with the same name share a site.  Each stack is symbolised once,
 * when first asked for (addresses are cached by mf_symbols besides), so
 * the cost follows the distinct stacks, not the events.
 *
 * Bounded: the first MF_SITES_MAX distinct sites met get ids of their own
 * (a site is at least one stack, and a process records at most 2^20 of
 * them, so only the logs of many processes together can reach it); stacks
 * whose site comes later share MF_SITE_OTHER, "(other sites)".
 * MF_SITE_NONE, "(no stack)", is the site of blocks without a stack.
 * Not thread-safe.
 */
#ifndef MEMFLOW_SITES_H
#define MEMFLOW_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "reader.h"
#include "string_pool.h"

#define MF_SITE_NONE 0u           /* "(no stack)" */
#define MF_SITE_OTHER 1u          /* "(other sites)": met after MF_SITES_MAX others */
#define MF_SITES_MAX 1048576u     /* sites with an id of their own, the two above included:
                                     as many as the stacks one process may record */

/* One logical frame: a function (an inlined one counts as its own frame). */
typedef struct mf_site_frame {
    const char *function;     /* demangled; "module.so+0xOFFSET" or "0xADDRESS" when unknown */
    const char *file;         /* NULL: unknown */
    unsigned line;            /* 0: unknown */
    const char *module;       /* path of the module; NULL: none covers the address */
} mf_site_frame;

/* What a site's frame is (mf_site.kind). */
enum mf_site_kind {
    MF_SITE_NATIVE = 0,       /* a native frame, or a pseudo site */
    MF_SITE_PYTHON_LIBRARY = 1,   /* a Python frame of a library (mf_sites_library_file) */
    MF_SITE_PYTHON_OWN = 2    /* a Python frame of the program's own code */
};

typedef struct mf_site {
    const char *name;         /* "make_node (tree.c:42)", "(no stack)", ... */
    mf_site_frame frame;      /* the site's frame (function NULL for the two pseudo sites) */
    uint32_t stack;           /* the first stack met with this site (0: none) */
    uint8_t kind;             /* enum mf_site_kind */
} mf_site;

typedef struct mf_sites mf_sites;

/*
 * Sites of the stacks reader r holds; texts made here go into pool (the
 * pool r interns into).  When own_reader, mf_sites_close closes r;
 * otherwise r must outlive the sites.  NULL when out of memory.
 */
MF_EXPORT mf_sites *mf_sites_open(mf_reader *r, mf_strings *pool, int own_reader);

MF_EXPORT void mf_sites_close(mf_sites *s);

/*
 * The site of stack id `stack` (0: MF_SITE_NONE).  A stack the reader
 * cannot read is MF_SITE_NONE too.  Symbolises the stack the first time;
 * after, one array load.  On out of memory, MF_SITE_OTHER.
 */
MF_EXPORT uint32_t mf_sites_of_stack(mf_sites *s, uint32_t stack);

/*
 * Whether the innermost Python frame of stack `stack` is the program's own
 * code (mf_sites_library_file): the program itself made the allocation (a
 * bytearray, a tensor), rather than a library it called (torch's import).
 * 0 for a stack without Python frames.
 */
MF_EXPORT int mf_sites_stack_own(mf_sites *s, uint32_t stack);

/* Site ids are 0 .. mf_sites_count(s) - 1. */
MF_EXPORT uint32_t mf_sites_count(const mf_sites *s);

/* Site `site` (an id below mf_sites_count; others give "(other sites)"). */
MF_EXPORT const mf_site *mf_sites_get(const mf_sites *s, uint32_t site);

/*
 * The logical frames of stack `stack` from its site's frame outward (the
 * allocator's wrappers left out), innermost first, at most max into out.
 * Returns how many (0 for stack 0 or one that cannot be read).  Strings
 * live as long as s.
 */
MF_EXPORT size_t mf_sites_frames(mf_sites *s, uint32_t stack, mf_site_frame *out, size_t max);

/*
 * Whether a Python source file is a library's rather than the program's
 * own code: unknown, the interpreter's (`<frozen ...>`, `<built-in>`, the
 * standard library under .../lib/pythonX.Y/ or lib64/), an installed
 * package's (a path with /site-packages/ or /dist-packages/), or torch's
 * (a path with a /torch/ folder, a source checkout included).  The site of
 * a stack with Python frames is its first frame whose file is not a
 * library's (the innermost Python frame when all are).
 */
MF_EXPORT int mf_sites_library_file(const char *file);

/*
 * Whether a C/C++ frame known by name (a symbolic native frame: PyTorch's
 * snapshots name them) is a library's internals rather than the program's
 * own code: PyTorch's (c10::, at::, torch::, caffe2::, THP..., a file under
 * /c10/, /aten/ or /torch/), the interpreter's (_Py..., Py..., its
 * Objects/ and Python/ folders), pybind11, the C++ library (std::,
 * __gnu_cxx::), the start of a thread or program, or a frame with no name.
 * After a stack's own Python code, its site is its first native frame that
 * is not (before the innermost Python frame of a library's).
 */
MF_EXPORT int mf_sites_library_function(const char *function, const char *file);

/* The i-th message about a module that could not be read ("PATH: what"),
 * all logs together, or NULL past the last. */
MF_EXPORT const char *mf_sites_warning(const mf_sites *s, size_t i);

/*
 * How many times a log's symboliser was replaced by one that knows more
 * modules (a log read while it is written) after it had resolved an
 * address no module it knew covered, or had a warning: what it resolved may
 * differ from what a reader of the finished log gets.  0 otherwise.
 */
MF_EXPORT uint64_t mf_sites_late(const mf_sites *s);

#endif /* MEMFLOW_SITES_H */
