/*
 * process_start.c - a process's start time from /proc/PID/stat (see
 * process_start.h).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "process_start.h"

uint64_t mf_process_start_ns(uint64_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%llu/stat", (unsigned long long)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* field 22, starttime in clock ticks after boot; the command name
     * (field 2) may hold spaces and parentheses: start after its last ')' */
    const char *p = strrchr(buf, ')');
    unsigned long long ticks = 0;
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (!p || sscanf(p + 1, "%llu", &ticks) != 1)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? ticks * (1000000000ull / (unsigned long long)hz) : 0;
}
