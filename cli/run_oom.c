/*
 * run_oom.c - was a process of the run killed by an OOM killer?  (see
 * run.h: run_oom_start, run_oom_killed)
 *
 * A process the kernel's or a cgroup's OOM killer ends dies of SIGKILL like
 * one anybody killed; what tells them apart is the kernel's own count of
 * OOM kills.  memflow run reads it before the program starts and again
 * when a process of the run dies of SIGKILL; when it grew, the kill is
 * taken for an OOM kill (and counted, so the next SIGKILL needs another).
 * The counts, where the kernel has them:
 *   - the cgroup memflow run is in (the program inherits it):
 *     cgroup v2 memory.events "oom_kill N", v1 memory.oom_control
 *     "oom_kill N" (hierarchical: its descendants' kills included);
 *   - the whole system's, /proc/vmstat "oom_kill N" (Linux >= 4.13).
 * Limits: a kill of another process in the same cgroup (or, outside one, on
 * the same machine) at the same moment is taken for the program's; a
 * program moved to another cgroup is judged by the one memflow run is in;
 * a kernel without the counts says nothing (the end stays "signal 9").
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

static char cgroup_file[PATH_MAX];   /* the count of the cgroup; "" none */
static uint64_t cgroup_seen, system_seen;
static int started;

/* The number after `key` at the start of a line of path, or -1. */
static int64_t read_count(const char *path, const char *key)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[256];
    int64_t value = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ' ') {
            value = strtoll(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return value;
}

/* The file holding this process's cgroup's OOM kill count, into
 * cgroup_file: cgroup v1's memory controller, else cgroup v2's. */
static void find_cgroup_file(void)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return;
    char line[PATH_MAX], v2[PATH_MAX] = "";
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        const char *path = strrchr(line, ':');
        const char *rel = path && strcmp(path + 1, "/") ? path + 1 : "";
        if (path && strncmp(line, "0::", 3) == 0)
            snprintf(v2, sizeof v2, "/sys/fs/cgroup%s/memory.events", rel);
        else if (path && strstr(line, ":memory:"))
            snprintf(cgroup_file, sizeof cgroup_file,
                     "/sys/fs/cgroup/memory%s/memory.oom_control", rel);
    }
    fclose(f);
    if (!cgroup_file[0] || read_count(cgroup_file, "oom_kill") < 0)
        snprintf(cgroup_file, sizeof cgroup_file, "%s", v2);
    if (cgroup_file[0] && read_count(cgroup_file, "oom_kill") < 0)
        cgroup_file[0] = 0;
}

void run_oom_start(void)
{
    find_cgroup_file();
    int64_t c = cgroup_file[0] ? read_count(cgroup_file, "oom_kill") : -1;
    int64_t s = read_count("/proc/vmstat", "oom_kill");
    cgroup_seen = c > 0 ? (uint64_t)c : 0;
    system_seen = s > 0 ? (uint64_t)s : 0;
    started = 1;
}

int run_oom_killed(void)
{
    if (!started)
        return 0;
    /* the cgroup's count when there is one (it counts the kills of its
     * processes by the global OOM killer too), else the system's */
    const char *file = cgroup_file[0] ? cgroup_file : "/proc/vmstat";
    uint64_t *seen = cgroup_file[0] ? &cgroup_seen : &system_seen;
    int64_t n = read_count(file, "oom_kill");
    if (n < 0 || (uint64_t)n <= *seen)
        return 0;
    (*seen)++;
    return 1;
}
