/*
 * process_end.c - how a profiled process ends, for its log header.
 *
 * exit() and a return from main are seen by the recorder's on_exit handler.
 * What bypasses it is interposed here, in the preloaded library: _exit and
 * _Exit record MF_END_EXIT_NOW and the status, then end the process as libc
 * would (exit_group); quick_exit records the same before libc's runs its
 * at_quick_exit handlers; the exec family records MF_END_EXEC just before the
 * image is replaced (the new image starts a log of its own) and takes it
 * back if the exec fails.  posix_spawn and system() start other processes
 * and do not come here.  A vfork child shares its parent's memory: the
 * recorder ignores its calls, so the parent's header stays the parent's.
 * (dlopen and dlclose are interposed in loader.c.)
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "recorder.h"

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
typedef void (*quick_exit_fn)(int);

/* libc's own functions, looked up once at load (never later: a vfork
 * child must not take the loader's lock). */
static struct {
    execve_fn execve, execvpe;
    execv_fn execv, execvp;
    fexecve_fn fexecve;
    execveat_fn execveat;
    quick_exit_fn quick_exit;
} libc_exec;

__attribute__((constructor)) static void find_libc_exec(void)
{
    libc_exec.execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
    libc_exec.execvpe = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
    libc_exec.execv = (execv_fn)dlsym(RTLD_NEXT, "execv");
    libc_exec.execvp = (execv_fn)dlsym(RTLD_NEXT, "execvp");
    libc_exec.fexecve = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
    libc_exec.execveat = (execveat_fn)dlsym(RTLD_NEXT, "execveat");
    libc_exec.quick_exit = (quick_exit_fn)dlsym(RTLD_NEXT, "quick_exit");
}

static _Noreturn void end_now(int status)
{
    mf_recorder_end(MF_END_EXIT_NOW, status);
    for (;;)
        syscall(SYS_exit_group, status);
}

MF_EXPORT void _exit(int status)
{
    end_now(status);
}

MF_EXPORT void _Exit(int status)
{
    end_now(status);
}

/* quick_exit ends through libc's own _exit, which is not interposed. */
MF_EXPORT void quick_exit(int status)
{
    mf_recorder_end(MF_END_EXIT_NOW, status);
    if (libc_exec.quick_exit)
        libc_exec.quick_exit(status);
    end_now(status);
}

/* Before an exec: say so; NULL fn (not found in libc) fails with ENOSYS. */
static int before_exec(const void *fn)
{
    if (!fn) {
        errno = ENOSYS;
        return -1;
    }
    mf_recorder_end(MF_END_EXEC, 0);
    return 0;
}

/* The exec returned, so it failed: the process goes on. */
static int exec_failed(void)
{
    int saved = errno;
    mf_recorder_end_cancel();
    errno = saved;
    return -1;
}

MF_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    if (before_exec((const void *)libc_exec.execve) < 0)
        return -1;
    libc_exec.execve(path, argv, envp);
    return exec_failed();
}

MF_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    if (before_exec((const void *)libc_exec.execvpe) < 0)
        return -1;
    libc_exec.execvpe(file, argv, envp);
    return exec_failed();
}

MF_EXPORT int execv(const char *path, char *const argv[])
{
    if (before_exec((const void *)libc_exec.execv) < 0)
        return -1;
    libc_exec.execv(path, argv);
    return exec_failed();
}

MF_EXPORT int execvp(const char *file, char *const argv[])
{
    if (before_exec((const void *)libc_exec.execvp) < 0)
        return -1;
    libc_exec.execvp(file, argv);
    return exec_failed();
}

MF_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    if (before_exec((const void *)libc_exec.fexecve) < 0)
        return -1;
    libc_exec.fexecve(fd, argv, envp);
    return exec_failed();
}

MF_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                       int flags)
{
    if (before_exec((const void *)libc_exec.execveat) < 0)
        return -1;
    libc_exec.execveat(dirfd, path, argv, envp, flags);
    return exec_failed();
}

/*
 * The execl forms: the arguments up to the NULL into an array on the stack
 * (as libc does), then the execv form above.  count_args counts them with
 * the NULL; fill_args stores them and leaves *ap after the NULL (execle's
 * envp comes next).
 */
static size_t count_args(const char *first, va_list *ap)
{
    size_t n = 1;
    for (const char *a = first; a; a = va_arg(*ap, const char *))
        n++;
    return n;
}

static void fill_args(char **argv, const char *first, va_list *ap)
{
    size_t i = 0;
    for (const char *a = first; a; a = va_arg(*ap, const char *))
        argv[i++] = (char *)a;
    argv[i] = NULL;
}

/* Declares char *argv[] holding first and the arguments after it, up to the
 * NULL; leaves ap open after the NULL (the caller ends it). */
#define ARGS_ON_STACK(argv, first, ap)                                             \
    va_start(ap, first);                                                           \
    size_t n_##argv = count_args(first, &ap);                                      \
    va_end(ap);                                                                    \
    char *argv[n_##argv];                                                          \
    va_start(ap, first);                                                           \
    fill_args(argv, first, &ap)

MF_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    ARGS_ON_STACK(argv, arg, ap);
    va_end(ap);
    return execv(path, argv);
}

MF_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    ARGS_ON_STACK(argv, arg, ap);
    va_end(ap);
    return execvp(file, argv);
}

MF_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    ARGS_ON_STACK(argv, arg, ap);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}
