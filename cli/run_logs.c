/*
 * run_logs.c - the logs of one `memflow run`: found by the run id in their
 * headers (never by time or name alone: a forged or foreign memflow-N.mfl,
 * or a concurrent run into the same folder, is not this run's), told how a
 * process ended when a signal killed it, and explained when there are none.
 *
 * Files are opened with O_NOFOLLOW | O_NONBLOCK and must be regular files:
 * a planted symlink or FIFO is skipped, never followed or waited on.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log_format.h"
#include "monotonic.h"
#include "run.h"

static int is_log_name(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "memflow-", 8) == 0 && n > 12 && strcmp(name + n - 4, ".mfl") == 0;
}

/* Open path as a regular file, not following a symlink; -1 otherwise. */
static int open_regular(const char *path, int flags)
{
    int fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* The header of the log at fd, if it is a log of this run. */
static int header_of_run(int fd, const run_ident *run, mf_file_header *h)
{
    return pread(fd, h, sizeof *h, 0) == (ssize_t)sizeof *h &&
           memcmp(h->magic, MF_LOG_MAGIC, 8) == 0 && h->version == MF_LOG_VERSION &&
           memcmp(h->run_id, run->id, sizeof h->run_id) == 0;
}

int run_logs_open(const run_ident *run, const char *name, int flags, mf_file_header *h)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", run->dir, name);
    if (!is_log_name(name) || n < 0 || (size_t)n >= sizeof path)
        return -1;
    int fd = open_regular(path, flags);
    if (fd >= 0 && !header_of_run(fd, run, h)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Call fn(path, header, arg) for every log of this run in run->dir. */
static void each_log(const run_ident *run,
                     void (*fn)(const char *path, const mf_file_header *h, void *arg),
                     void *arg)
{
    DIR *d = opendir(run->dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[PATH_MAX];
        mf_file_header h;
        int fd = run_logs_open(run, e->d_name, O_RDONLY, &h);
        if (fd < 0)
            continue;
        close(fd);
        snprintf(path, sizeof path, "%s/%s", run->dir, e->d_name);
        fn(path, &h, arg);
    }
    closedir(d);
}

typedef struct path_list {
    char **paths;
    int count;
} path_list;

static void collect(const char *path, const mf_file_header *h, void *arg)
{
    (void)h;
    path_list *list = arg;
    char **grown = realloc(list->paths, (size_t)(list->count + 1) * sizeof *grown);
    char *copy = strdup(path);
    if (!grown || !copy) {
        free(copy);
        if (grown)
            list->paths = grown;
        return;
    }
    list->paths = grown;
    list->paths[list->count++] = copy;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **run_logs_find(const run_ident *run, int *count)
{
    path_list list = { NULL, 0 };
    each_log(run, collect, &list);
    if (list.count > 1)
        qsort(list.paths, (size_t)list.count, sizeof *list.paths, by_name);
    *count = list.count;
    return list.paths;
}

/* The newest log of a process that its last image wrote (not ended by exec). */
typedef struct newest_log {
    uint64_t pid;
    uint64_t start_ns;
    char path[PATH_MAX];
} newest_log;

static void keep_newest(const char *path, const mf_file_header *h, void *arg)
{
    newest_log *want = arg;
    if (h->pid != want->pid || h->end_how == MF_END_EXEC ||
        (want->path[0] && h->start_mono_ns < want->start_ns))
        return;
    want->start_ns = h->start_mono_ns;
    snprintf(want->path, sizeof want->path, "%s", path);
}

void run_logs_mark_signal(const run_ident *run, pid_t pid, int sig, unsigned how)
{
    newest_log want = { .pid = (uint64_t)pid };
    each_log(run, keep_newest, &want);
    if (!want.path[0])
        return;
    int fd = open_regular(want.path, O_WRONLY);
    if (fd < 0)
        return;
    uint64_t end_ns = mf_monotonic_ns();
    int64_t status = sig;
    /* end_how last, as the recorder stores it */
    if (pwrite(fd, &end_ns, sizeof end_ns, offsetof(mf_file_header, end_ns)) != sizeof end_ns ||
        pwrite(fd, &status, sizeof status, offsetof(mf_file_header, end_status)) !=
            sizeof status ||
        pwrite(fd, &how, sizeof how, offsetof(mf_file_header, end_how)) != sizeof how)
        fprintf(stderr, "memflow run: %s: cannot record that signal %d ended process %d: %s\n",
                want.path, sig, (int)pid, strerror(errno));
    close(fd);
}

/* The executable execvp would run for command (searching PATH). */
static int find_executable(const char *command, char *out, size_t len)
{
    if (strchr(command, '/'))
        return snprintf(out, len, "%s", command) < (int)len ? 0 : -1;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        int w = n ? snprintf(out, len, "%.*s/%s", (int)n, path, command)
                  : snprintf(out, len, "./%s", command); /* empty entry: the current folder */
        if (w > 0 && (size_t)w < len && access(out, X_OK) == 0)
            return 0;
        path += n + (path[n] == ':');
    }
    return -1;
}

/* 1 if path is an ELF executable without PT_INTERP (statically linked),
 * 0 if it has one, -1 if it is not a 64-bit ELF file this can read. */
static int is_static_elf(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf64_Ehdr eh;
    int result = -1;
    if (fd < 0)
        return -1;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
        memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
        eh.e_phentsize == sizeof(Elf64_Phdr)) {
        result = 1;
        for (unsigned i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != sizeof ph) {
                result = -1;
                break;
            }
            if (ph.p_type == PT_INTERP) {
                result = 0;
                break;
            }
        }
    }
    close(fd);
    return result;
}

void run_logs_explain_none(const char *command, const char *dir)
{
    char exe[PATH_MAX];
    struct stat st;
    const char *why = "it may have cleared LD_PRELOAD, or ended before memflow could start";
    if (find_executable(command, exe, sizeof exe) == 0 && stat(exe, &st) == 0) {
        if (is_static_elf(exe) == 1)
            why = "it is statically linked: memflow records a program through LD_PRELOAD, "
                  "which needs a dynamically linked one";
        else if (st.st_mode & (S_ISUID | S_ISGID))
            why = "it is set-user-ID or set-group-ID: the dynamic loader ignores LD_PRELOAD "
                  "for it";
    }
    fprintf(stderr, "memflow run: '%s' wrote no log into %s (%s)\n", command, dir, why);
}
