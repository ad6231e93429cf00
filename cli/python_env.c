/*
 * python_env.c - `memflow run`'s part of the Python front: the start-up
 * folder (sitecustomize.py) on PYTHONPATH and the package's folder in
 * MEMFLOW_PYTHONPATH.  Only the start-up folder goes on PYTHONPATH: the
 * package's folder (a site-packages) holds other packages built for one
 * interpreter, which must not shadow another interpreter's own.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python_env.h"

/* dir/name into out; 0 if it does not fit. */
static int join(char *out, size_t len, const char *dir, const char *name)
{
    int n = snprintf(out, len, "%s/%s", dir, name);
    return n > 0 && (size_t)n < len;
}

/* Whether dir/name exists. */
static int has_file(const char *dir, const char *name)
{
    char path[PATH_MAX];
    return join(path, sizeof path, dir, name) && access(path, R_OK) == 0;
}

/* The folders of a build tree holding this memflow executable, if any
 * (libtool runs it from the tree's .libs). */
static int build_tree_folders(char *startup, char *package, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return 0;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return 0;
    *slash = 0;
    slash = strrchr(exe, '/');
    if (slash && strcmp(slash, "/.libs") == 0)
        *slash = 0;
    return has_file(exe, "python/startup/sitecustomize.py") &&
           has_file(exe, "python/memflow/__init__.py") &&
           join(startup, len, exe, "python/startup") && join(package, len, exe, "python");
}

void cli_python_environment(void)
{
    char startup[PATH_MAX], package[PATH_MAX];
    if (!build_tree_folders(startup, package, sizeof startup)) {
        snprintf(startup, sizeof startup, "%s/python", MEMFLOW_PKGLIBDIR);
        snprintf(package, sizeof package, "%s", MEMFLOW_PYTHONDIR);
        if (!*package || !has_file(startup, "sitecustomize.py"))
            return;
    }
    const char *old = getenv("PYTHONPATH");
    if (old && *old) {
        char joined[PATH_MAX * 2 + 2];
        snprintf(joined, sizeof joined, "%s:%s", startup, old);
        setenv("PYTHONPATH", joined, 1);
    } else {
        setenv("PYTHONPATH", startup, 1);
    }
    setenv("MEMFLOW_PYTHONPATH", package, 1);
}
