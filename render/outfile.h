/*
 * outfile.h - every output file is written the same safe way: into a new
 * private file in the output's folder (created with O_CREAT | O_EXCL |
 * O_NOFOLLOW, so nothing planted there is opened or followed; its mode is
 * 0666 less the umask), and renamed over the output's name only when
 * complete.  A symlink planted at the name is replaced, not followed; a
 * file that was there (of any mode or owner's choosing) is replaced by a new
 * one; a failed write leaves the old file, or none, and no partial file.
 */
#ifndef MEMFLOW_OUTFILE_H
#define MEMFLOW_OUTFILE_H

#include <limits.h>
#include <stddef.h>

#include "compiler.h"
#include "sink.h"

typedef struct mf_outfile {
    int dirfd;               /* the folder the file goes into */
    int fd;                  /* the private file, -1 when closed */
    char tmp[NAME_MAX + 1];  /* its name in the folder */
    char name[NAME_MAX + 1]; /* the output's name in the folder */
    char path[PATH_MAX];     /* the output's path, for messages */
    mf_sink sink;            /* write the content here */
} mf_outfile;

/*
 * Start the output file at path (its folder must exist).  Returns 0, or -1
 * with "PATH: cannot create: why" in err.
 */
MF_EXPORT int mf_outfile_open(mf_outfile *o, const char *path, char *err, size_t errlen);

/*
 * Write what is buffered, close and rename the file into place.  Returns 0;
 * or -1 with "PATH: cannot write: why" in err, the private file removed and
 * whatever was at path left as it was.
 */
MF_EXPORT int mf_outfile_commit(mf_outfile *o, char *err, size_t errlen);

/* Give up: remove the private file; path is left as it was. */
MF_EXPORT void mf_outfile_abort(mf_outfile *o);

/*
 * Write len bytes at data to path the safe way (open, write, commit).
 * 0, or -1 with a message in err.
 */
MF_EXPORT int mf_outfile_write_all(const char *path, const void *data, size_t len, char *err,
                                   size_t errlen);

#endif /* MEMFLOW_OUTFILE_H */
