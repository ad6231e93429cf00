/*
 * outfile.c - private file, then rename (see outfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

/* Split path into its folder (".": none) and its last name. */
static int split(const char *path, char *dir, size_t dirlen, char *name, size_t namelen)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base || strlen(base) >= namelen || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return -1;
    snprintf(name, namelen, "%s", base);
    if (!slash)
        snprintf(dir, dirlen, ".");
    else if (slash == path)
        snprintf(dir, dirlen, "/");
    else if ((size_t)(slash - path) < dirlen)
        snprintf(dir, dirlen, "%.*s", (int)(slash - path), path);
    else
        return -1;
    return 0;
}

/* Create ".NAME.XXXXXX" with random X in the folder; its fd, or -1. */
static int create_private(mf_outfile *o)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned char r[6];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            uint64_t x = (uint64_t)getpid() * 2654435761u ^ (uint64_t)attempt * 40503u;
            for (size_t i = 0; i < sizeof r; i++)
                r[i] = (unsigned char)(x >> (8 * i));
        }
        char suffix[7];
        for (size_t i = 0; i < 6; i++)
            suffix[i] = letters[r[i] % (sizeof letters - 1)];
        suffix[6] = 0;
        int n = snprintf(o->tmp, sizeof o->tmp, ".%.*s.%s", (int)(sizeof o->tmp - 9), o->name,
                         suffix);
        if (n < 0 || (size_t)n >= sizeof o->tmp)
            return -1;
        int fd = openat(o->dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

int mf_outfile_open(mf_outfile *o, const char *path, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    memset(o, 0, sizeof *o);
    o->fd = o->dirfd = -1;
    snprintf(o->path, sizeof o->path, "%s", path);
    if (split(path, dir, sizeof dir, o->name, sizeof o->name) < 0) {
        snprintf(err, errlen, "%s: cannot create: not a file name", path);
        return -1;
    }
    o->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o->dirfd < 0 || (o->fd = create_private(o)) < 0) {
        snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        if (o->dirfd >= 0)
            close(o->dirfd);
        o->dirfd = -1;
        return -1;
    }
    mf_sink_fd(&o->sink, o->fd);
    return 0;
}

void mf_outfile_abort(mf_outfile *o)
{
    mf_sink_free(&o->sink);
    if (o->fd >= 0) {
        close(o->fd);
        unlinkat(o->dirfd, o->tmp, 0);
    }
    if (o->dirfd >= 0)
        close(o->dirfd);
    o->fd = o->dirfd = -1;
}

int mf_outfile_commit(mf_outfile *o, char *err, size_t errlen)
{
    int error = 0;
    if (mf_sink_flush(&o->sink) < 0)
        error = o->sink.error;
    mf_sink_free(&o->sink);
    if (close(o->fd) != 0 && !error)
        error = errno;
    o->fd = -1;
    if (!error && renameat(o->dirfd, o->tmp, o->dirfd, o->name) != 0)
        error = errno;
    if (error) {
        snprintf(err, errlen, "%s: cannot write: %s", o->path, strerror(error));
        unlinkat(o->dirfd, o->tmp, 0);
    }
    close(o->dirfd);
    o->dirfd = -1;
    return error ? -1 : 0;
}

int mf_outfile_write_all(const char *path, const void *data, size_t len, char *err,
                         size_t errlen)
{
    mf_outfile o;
    if (mf_outfile_open(&o, path, err, errlen) < 0)
        return -1;
    mf_sink_write(&o.sink, data, len);
    return mf_outfile_commit(&o, err, errlen);
}
