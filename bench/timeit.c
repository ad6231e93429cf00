/*
 * timeit.c - the benchmark's stopwatch: run one command, measure it.
 *
 * bench/run.sh runs every timed command through this helper instead of
 * `date` around a command (each `date` is a fork + exec, which costs
 * milliseconds on a busy 2-core machine) or GNU time (10 ms CPU resolution).
 * It forks, execs the command, waits, and appends one line to OUTFILE:
 *
 *     wall_ns max_rss_kib cpu_ns
 *
 * wall_ns: CLOCK_MONOTONIC from just before fork to just after the wait;
 * cpu_ns: user + system time of the command and every descendant it waited
 * for (getrusage RUSAGE_CHILDREN, so a profiler's helper processes count);
 * max_rss_kib: the largest resident set among them.
 *
 * With -e, a fourth number: end_ns, CLOCK_MONOTONIC just after the wait
 * (bench/wait.sh: the time from the program's exit to the command's).
 *
 * Usage: timeit [-e] OUTFILE CMD [ARGS...]
 * Exit status: the command's (128+N when killed by signal N); 127 when it
 * cannot be started, 2 on bad usage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(const struct rusage *ru)
{
    return ((uint64_t)ru->ru_utime.tv_sec + (uint64_t)ru->ru_stime.tv_sec) * 1000000000u +
           ((uint64_t)ru->ru_utime.tv_usec + (uint64_t)ru->ru_stime.tv_usec) * 1000u;
}

/* Run argv; on success fill the measurements and return the wait status. */
static int run_measured(char **argv, uint64_t *wall, uint64_t *cpu, long *rss_kib,
                        uint64_t *end)
{
    struct rusage before, after;
    getrusage(RUSAGE_CHILDREN, &before);
    uint64_t start = now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "timeit: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "timeit: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "timeit: waitpid: %s\n", strerror(errno));
            return -1;
        }
    *end = now_ns();
    *wall = *end - start;
    getrusage(RUSAGE_CHILDREN, &after);
    *cpu = cpu_ns(&after) - cpu_ns(&before);
    *rss_kib = after.ru_maxrss;
    return status;
}

int main(int argc, char **argv)
{
    int with_end = argc > 1 && strcmp(argv[1], "-e") == 0;
    argv += with_end;
    argc -= with_end;
    if (argc < 3) {
        fprintf(stderr, "usage: timeit [-e] OUTFILE CMD [ARGS...]\n");
        return 2;
    }
    uint64_t wall = 0, cpu = 0, end = 0;
    long rss = 0;
    int status = run_measured(argv + 2, &wall, &cpu, &rss, &end);
    if (status < 0)
        return 127;
    FILE *out = fopen(argv[1], "a");
    int n = out ? fprintf(out, "%llu %ld %llu", (unsigned long long)wall, rss,
                          (unsigned long long)cpu) : -1;
    if (n >= 0)
        n = with_end ? fprintf(out, " %llu\n", (unsigned long long)end) : fprintf(out, "\n");
    if (!out || n < 0 || fclose(out) != 0) {
        fprintf(stderr, "timeit: cannot append to %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
