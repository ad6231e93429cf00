/*
 * gpu_inject_probe.c - helper of tests/gpu_injection.sh.
 *
 * `gpu_inject_probe` (run under `memflow run`) does what the CUDA driver
 * does at cuInit: it loads the library named by CUDA_INJECTION64_PATH and
 * calls its InitializeInjection().  On this GPU-less machine the plugin must
 * say once that GPU capture is off and let CPU capture go on, so the probe
 * then makes CPU allocations of a size the script can find in the log:
 * 3 x malloc(12345), two of them freed.
 *
 * `gpu_inject_probe --summary LOG` reads a log with memflow's reader and
 * prints what the script checks: CPU allocations of 12345 bytes, frees of
 * them, GPU events, GPU-off notes and the name of the CUPTI result the
 * note carries.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "log_reader.h"

static int inject(void)
{
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (!path) {
        fprintf(stderr, "gpu_inject_probe: CUDA_INJECTION64_PATH is not set\n");
        return 1;
    }
    void *plugin = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!plugin) {
        fprintf(stderr, "gpu_inject_probe: %s\n", dlerror());
        return 1;
    }
    int (*initialize)(void) = (int (*)(void))dlsym(plugin, "InitializeInjection");
    if (!initialize) {
        fprintf(stderr, "gpu_inject_probe: no InitializeInjection in %s\n", path);
        return 1;
    }
    int rc = initialize();
    void *volatile blocks[3];
    for (int i = 0; i < 3; i++)
        blocks[i] = malloc(12345);
    free(blocks[0]);
    free(blocks[2]);
    printf("InitializeInjection returned %d\n", rc);
    return 0;
}

static int summary(const char *path)
{
    mf_log *log = NULL;
    char err[512];
    if (mf_log_read(path, &log, err, sizeof err) < 0) {
        fprintf(stderr, "gpu_inject_probe: %s\n", err);
        return 1;
    }
    unsigned long allocs = 0, frees = 0, notes = 0, gpu_events = 0;
    unsigned long long note_value = 0;
    uint64_t addr[16];
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if (e->type == MF_REC_ALLOC && e->device == 0 && e->size == 12345 && allocs < 16)
            addr[allocs++] = e->addr;
        if (e->type == MF_REC_FREE && e->device == 0)
            for (unsigned long k = 0; k < allocs; k++)
                frees += e->addr == addr[k];
        if ((e->type == MF_REC_ALLOC || e->type == MF_REC_FREE) &&
            MF_DEVICE_KIND(e->device) == MF_DEVICE_GPU)
            gpu_events++;
        if (e->type == MF_REC_NOTE && e->extra == MF_NOTE_GPU_OFF) {
            notes++;
            note_value = e->size;
        }
    }
    const char *result = "none";
    if (notes)
        cuptiGetResultString((CUptiResult)note_value, &result);
    printf("cpu_allocs_12345=%lu frees_of_them=%lu gpu_events=%lu gpu_off_notes=%lu "
           "gpu_off_result=%s\n", allocs, frees, gpu_events, notes, result);
    mf_log_free(log);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--summary") == 0)
        return summary(argv[2]);
    return inject();
}
