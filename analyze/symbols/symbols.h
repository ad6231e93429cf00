/*
 * symbols.h - symbolisation of recorded call stacks, at analysis time.
 *
 * The recorder stores raw return addresses (STACK records) and the ELF
 * modules they fall in (MODULE records: path, load bias, address range,
 * build id).  This library turns an address into what a person reads:
 * the function (C++ names demangled), source file and line, the functions
 * inlined at that address, the module and the offset in it.  It reads the
 * binaries on disk through elfutils libdwfl (separate debug files found by
 * build id or .gnu_debuglink are used when installed), and never runs in
 * the profiled process.  A module whose file is missing, or whose build id
 * differs from the one recorded (the binary was rebuilt since the run),
 * is not read: its frames are shown as module+offset, and the reason is
 * listed by mf_symbols_warning().  Results are cached per address.
 *
 * The outputs call mf_symbols_frame() for each address of a stack and
 * mf_symbols_site() for the frame that names an allocation.  Addresses
 * belong to one process: open one mf_symbols per log (its MODULE records);
 * the cache is then per (module, address).  Not thread-safe: one thread
 * per mf_symbols.
 */
#ifndef MEMFLOW_SYMBOLS_H
#define MEMFLOW_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* One module as recorded (the fields of a MODULE record). */
typedef struct mf_symbols_module {
    const char *path;
    uint64_t bias;              /* load bias: file address = address - bias */
    uint64_t start, end;        /* addresses its loadable segments covered */
    const uint8_t *build_id;    /* NULL or build_id_len bytes */
    uint32_t build_id_len;
} mf_symbols_module;

/* A function inlined at an address: its name and where in it the address is. */
typedef struct mf_inline_frame {
    const char *function;       /* demangled */
    const char *file;           /* NULL: unknown */
    unsigned line;              /* 0: unknown */
} mf_inline_frame;

/* What an address is.  Strings live as long as the mf_symbols. */
typedef struct mf_frame {
    uint64_t ip;                /* the address as recorded (a return address) */
    const char *function;       /* the (out-of-line) function; NULL: no symbol */
    const char *file;           /* source file of `line`; NULL: no line info */
    unsigned line;              /* line in `function` (the call site of the
                                   outermost inlined function, if any); 0: unknown */
    const char *module;         /* path of the module; NULL: no module covers ip */
    uint64_t offset;            /* ip - bias: the address in the module's file */
    unsigned n_inlined;         /* functions inlined at ip, innermost first: */
    const mf_inline_frame *inlined;  /* the logical frames before `function` */
    int module_read;            /* 1 if the module's file was read */
} mf_frame;

typedef struct mf_symbols mf_symbols;

/*
 * Prepare to symbolise addresses of the given modules (copied).  Files are
 * opened lazily, on the first address in them.  Returns NULL only when out
 * of memory.
 */
MF_EXPORT mf_symbols *mf_symbols_open(const mf_symbols_module *modules, size_t n);

/*
 * More modules of the same process (recorded after the first ones: a log
 * read while it is written); they come after the others, as if given to
 * open.  What was looked up before is kept (an address none of the earlier
 * modules covered stays without one).  0, or -1 when out of memory.
 */
MF_EXPORT int mf_symbols_add(mf_symbols *s, const mf_symbols_module *modules, size_t n);

/* Free everything (NULL is fine). */
MF_EXPORT void mf_symbols_close(mf_symbols *s);

/*
 * What the recorded return address ip is (looked up at ip - 1, inside the
 * call).  Never NULL; fields are NULL/0 where unknown.  Cached.
 */
MF_EXPORT const mf_frame *mf_symbols_frame(mf_symbols *s, uint64_t ip);

/*
 * The name of a frame for one line of output: the innermost inlined
 * function if any, else the function, else "MODULE+0xOFFSET" (module's
 * base name), else "0xADDRESS".  Stable storage.
 */
MF_EXPORT const char *mf_symbols_name(mf_symbols *s, const mf_frame *f);

/*
 * The site of an allocation whose stack is ip[0..depth) (innermost first):
 * the index of its first frame outside allocator wrappers -- memflow's own
 * libraries, jemalloc, libc and the dynamic loader (which allocate only on
 * their caller's behalf), operator new/delete and the malloc family by name
 * wherever they are, and the CUDA runtime, driver and CUPTI (cudaMalloc*,
 * cuMem*, cudart::*).  0 when every frame is a wrapper; -1 for an empty
 * stack.
 */
MF_EXPORT int mf_symbols_site(mf_symbols *s, const uint64_t *ip, uint32_t depth);

/* Whether the frame at return address ip is an allocator wrapper (the rule
 * of mf_symbols_site, for one frame). */
MF_EXPORT int mf_symbols_wrapper(mf_symbols *s, uint64_t ip);

/* Whether a function name is an allocation entry point (malloc family,
 * operator new/delete, cudaMalloc*, cuMem*, cudart::*, nvtxMem*), for frames
 * known only by name. */
MF_EXPORT int mf_symbols_allocator_name(const char *function);

/*
 * How many of the functions inlined at ip, innermost first, are allocation
 * entry points by name (a header's inline wrapper: cudaMalloc<T>, the NVTX
 * memory API's nvtxMem*): the site is the logical frame after them, in the
 * caller they were inlined into.  Use it on the frame mf_symbols_site chose.
 */
MF_EXPORT unsigned mf_symbols_site_inlined(mf_symbols *s, uint64_t ip);

/*
 * The i-th message about a module that could not be read (missing file,
 * build id mismatch, not an ELF file), "PATH: what", or NULL past the last.
 * Messages appear as modules are first used.
 */
MF_EXPORT const char *mf_symbols_warning(const mf_symbols *s, size_t i);

#endif /* MEMFLOW_SYMBOLS_H */
