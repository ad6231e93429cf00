/*
 * start.c - the CPU occupancy sampler of the preload library.
 *
 * Starting to record is not done here: under `memflow run`
 * (MEMFLOW_AUTOSTART=1) the recorder decides at the process's first malloc,
 * which may come before any constructor, or at libmemflow's own constructor,
 * whichever is first (runtime/recorder.c, autostart_decide), like MXNet's
 * MXNET_PROFILER_AUTOSTART.  This constructor only gives the recorder
 * jemalloc's own view (stats.allocated/active/resident/mapped) and the
 * process RSS for every sample_rate snapshot of cpu/0.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "memflow.h"
#include "recorder.h"

int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

static uint64_t jemalloc_stat(const char *name)
{
    size_t value = 0, len = sizeof value;
    return mallctl(name, &value, &len, NULL, 0) == 0 ? value : 0;
}

static uint64_t process_rss(void)
{
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    unsigned long long size = 0, resident = 0;
    if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
        return 0;
    return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void cpu_sampler(uint16_t device, uint64_t value[MF_SAMPLE_VALUES])
{
    (void)device;
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, sizeof epoch);
    value[MF_SAMPLE_ALLOCATED] = jemalloc_stat("stats.allocated");
    value[MF_SAMPLE_ACTIVE] = jemalloc_stat("stats.active");
    value[MF_SAMPLE_RESIDENT] = jemalloc_stat("stats.resident");
    value[MF_SAMPLE_MAPPED] = jemalloc_stat("stats.mapped");
    value[MF_SAMPLE_RSS] = process_rss();
}

__attribute__((constructor)) static void preload_start(void)
{
    mf_recorder_set_sampler(MF_DEVICE_CPU, cpu_sampler);
}
