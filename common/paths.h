/*
 * paths.h - the folder handling every layer shares: the recorder creates
 * the log's folder, the outputs and `memflow run` create theirs.
 */
#ifndef MEMFLOW_PATHS_H
#define MEMFLOW_PATHS_H

#include <stddef.h>

#include "compiler.h"

/*
 * mkdir -p: create dir and every missing folder above it.  Returns 0 when
 * dir exists as a folder afterwards, or -1 with a message naming the folder
 * that failed and why in err ("PATH: cannot create directory: why",
 * "PATH: not a directory", "PATH...: path too long").  Calls no malloc, so
 * the recorder may use it inside allocator hooks.
 */
MF_EXPORT int mf_make_dirs(const char *dir, char *err, size_t errlen);

#endif
