/*
 * run_child.c - start the profiled program, pass it the signals memflow
 * gets, reap it and the orphans it leaves.
 *
 * The signals memflow forwards are blocked from before the fork until the
 * handlers are in place, so none is lost or acted on by the wrong process.
 * The child reports a failed exec through a close-on-exec pipe: the parent
 * knows "not found" (127) from "cannot run" (126) without guessing.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "log_format.h"
#include "run.h"

static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
#define N_FORWARDED (sizeof forwarded / sizeof forwarded[0])

static volatile sig_atomic_t forward_to; /* the child's pid; 0 = none */
static struct sigaction before[N_FORWARDED]; /* memflow's own, restored after */

/*
 * Pass a signal on to the program.  One the terminal sent (SI_KERNEL: the
 * Ctrl-C, Ctrl-\ or hangup of the whole foreground process group) reached
 * the program too, so it is not sent twice.
 */
static void forward_signal(int sig, siginfo_t *info, void *context)
{
    (void)context;
    int saved = errno;
    if (forward_to > 0 && (!info || info->si_code != SI_KERNEL))
        kill((pid_t)forward_to, sig);
    errno = saved;
}

static void forwarded_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaddset(set, forwarded[i]);
}

static void forward_to_child(pid_t pid)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: waitpid returns EINTR, loops */
    sigemptyset(&sa.sa_mask);
    forward_to = pid;
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded[i], &sa, &before[i]);
}

/* After the program: the signals act on memflow itself again, as they did. */
static void stop_forwarding(void)
{
    forward_to = 0;
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded[i], &before[i], NULL);
}

void run_child_adopt_orphans(void)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

static void exec_in_child(char **command, int report_fd, const sigset_t *mask)
{
    run_stage_child();
    cli_restore_inherited_signals(); /* SIGXFSZ: the program's own, not memflow's */
    sigprocmask(SIG_SETMASK, mask, NULL);
    execvp(command[0], command);
    int e = errno;
    if (write(report_fd, &e, sizeof e) != (ssize_t)sizeof e)
        e = 0;
    _exit(RUN_EXIT_NOT_FOUND);
}

/* The errno the child sent if its exec failed; 0 if the exec succeeded. */
static int read_exec_errno(int fd)
{
    int e = 0;
    ssize_t n;
    while ((n = read(fd, &e, sizeof e)) < 0 && errno == EINTR)
        ;
    return n == (ssize_t)sizeof e ? e : 0;
}

pid_t run_child_start(char **command, int *exec_errno)
{
    int report[2];
    sigset_t block, old;
    *exec_errno = 0;
    if (pipe2(report, O_CLOEXEC) < 0) {
        fprintf(stderr, "memflow run: pipe: %s\n", strerror(errno));
        return -2;
    }
    forwarded_set(&block);
    run_oom_start();
    sigprocmask(SIG_BLOCK, &block, &old);
    pid_t pid = fork();
    if (pid == 0)
        exec_in_child(command, report[1], &old);
    if (pid < 0)
        fprintf(stderr, "memflow run: fork: %s\n", strerror(errno));
    close(report[1]);
    if (pid > 0) {
        forward_to_child(pid);
        *exec_errno = read_exec_errno(report[0]);
    }
    close(report[0]);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (pid < 0)
        return -2;
    if (*exec_errno) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        stop_forwarding();
        return -1;
    }
    return pid;
}

/* A process of the run ended: a signal's end goes into its log, an OOM
 * killer's (a SIGKILL while the kernel's count of OOM kills grew) as such,
 * said on stderr. */
static void reaped(const run_ident *run, pid_t pid, int status)
{
    if (!WIFSIGNALED(status))
        return;
    int oom = WTERMSIG(status) == SIGKILL && run_oom_killed();
    if (oom)
        fprintf(stderr, "memflow run: process %d was killed by the OOM killer (SIGKILL while "
                "the kernel's count of OOM kills grew)\n", (int)pid);
    run_logs_mark_signal(run, pid, WTERMSIG(status), oom ? MF_END_OOM_KILLED : MF_END_SIGNAL);
}

int run_child_wait(pid_t pid, const run_ident *run)
{
    int status = 0;
    for (;;) {
        int st;
        pid_t got = waitpid(-1, &st, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            fprintf(stderr, "memflow run: waitpid: %s\n", strerror(errno));
            stop_forwarding();
            return RUN_EXIT_OWN_ERROR;
        }
        reaped(run, got, st);
        if (got == pid) {
            status = st;
            break;
        }
    }
    /* Orphans that already ended; those still running are not waited for. */
    int st;
    pid_t got;
    while ((got = waitpid(-1, &st, WNOHANG)) > 0)
        reaped(run, got, st);
    stop_forwarding();
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
