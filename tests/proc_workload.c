/*
 * proc_workload.c - real processes for the multi-process tests
 * (tests/render_processes.sh), run under `memflow run`:
 *
 *   hold N          malloc N bytes, touch them, exit without freeing them
 *   spawn K ARGS... run ARGS (a program) K times, one after another, each a
 *                   forked child that execs it; allocates nothing itself
 *   forkfree N      malloc N blocks of 1000 bytes, fork; the child frees
 *                   them all (memory it inherited) and exits; the parent
 *                   waits, then frees them too
 *   killed N        malloc N bytes, then kill itself with SIGKILL
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile keep;

static int hold(size_t n)
{
    char *p = malloc(n);
    if (!p)
        return 1;
    memset(p, 1, n);
    keep = p;
    return 0;
}

static int spawn(int k, char **argv)
{
    for (int i = 0; i < k; i++) {
        pid_t child = fork();
        if (child < 0)
            return 1;
        if (child == 0) {
            execv(argv[0], argv);
            _exit(127);
        }
        int status;
        if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
            return 1;
    }
    return 0;
}

static int forkfree(int n)
{
    char **blocks = calloc((size_t)n, sizeof *blocks);
    for (int i = 0; blocks && i < n; i++)
        blocks[i] = malloc(1000);
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0; i < n; i++)
            free(blocks[i]);
        exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    for (int i = 0; i < n; i++)
        free(blocks[i]);
    free(blocks);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "hold") == 0)
        return hold((size_t)atol(argv[2]));
    if (argc >= 4 && strcmp(argv[1], "spawn") == 0)
        return spawn(atoi(argv[2]), argv + 3);
    if (argc >= 3 && strcmp(argv[1], "forkfree") == 0)
        return forkfree(atoi(argv[2]));
    if (argc >= 3 && strcmp(argv[1], "killed") == 0) {
        hold((size_t)atol(argv[2]));
        kill(getpid(), SIGKILL);
        return 1;
    }
    fprintf(stderr, "usage: proc_workload hold N | spawn K PROG ARGS... | forkfree N | killed N\n");
    return 2;
}
