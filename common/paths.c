/*
 * paths.c - mkdir -p, shared by the log writer (core), the outputs
 * (render) and `memflow run` (cli).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "paths.h"

int mf_make_dirs(const char *dir, char *err, size_t errlen)
{
    char path[4096];
    size_t len = strlen(dir);
    if (len >= sizeof path) {
        snprintf(err, errlen, "%.200s...: path too long", dir);
        return -1;
    }
    memcpy(path, dir, len + 1);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p)
            continue;
        char saved = *p;
        *p = 0;
        if (mkdir(path, 0777) < 0 && errno != EEXIST) {
            snprintf(err, errlen, "%s: cannot create directory: %s", path, strerror(errno));
            return -1;
        }
        *p = saved;
        if (!saved)
            break;
    }
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a directory", dir);
        return -1;
    }
    return 0;
}
