/*
 * gpu_log_summary.c - helper of tests/gpu_injection.sh and gpu_no_driver.sh:
 * `gpu_log_summary LOG` reads a log with memflow's reader and prints, on one
 * line, what the scripts check: CPU allocations of 12345 bytes (what
 * gpu_inject_probe makes), frees of them, GPU events, GPU-off notes and the
 * name of the CUPTI result the note carries, and the notes that say CUDA
 * was used without a driver, or with a driver that never started the
 * plugin.
 */
#include <stdio.h>

#include <cupti.h>

#include "log_in_memory.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gpu_log_summary LOG\n");
        return 2;
    }
    mf_log *log = NULL;
    char err[512];
    if (mf_log_read(argv[1], &log, err, sizeof err) < 0) {
        fprintf(stderr, "gpu_log_summary: %s\n", err);
        return 1;
    }
    unsigned long allocs = 0, frees = 0, notes = 0, gpu_events = 0, no_driver = 0;
    unsigned long not_injected = 0;
    unsigned long long note_value = 0;
    uint64_t addr[16];
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if (e->type == MF_REC_ALLOC && e->device == 0 && e->alloc.requested == 12345 &&
            allocs < 16)
            addr[allocs++] = e->alloc.addr;
        if (e->type == MF_REC_FREE && e->device == 0)
            for (unsigned long k = 0; k < allocs; k++)
                frees += e->free.addr == addr[k];
        if ((e->type == MF_REC_ALLOC || e->type == MF_REC_FREE) &&
            MF_DEVICE_KIND(e->device) == MF_DEVICE_GPU)
            gpu_events++;
        if (e->type == MF_REC_NOTE && e->note.code == MF_NOTE_GPU_OFF) {
            notes++;
            note_value = e->note.value;
        }
        no_driver += e->type == MF_REC_NOTE && e->note.code == MF_NOTE_GPU_NO_DRIVER;
        not_injected += e->type == MF_REC_NOTE && e->note.code == MF_NOTE_GPU_NOT_INJECTED;
    }
    const char *result = "none";
    if (notes)
        cuptiGetResultString((CUptiResult)note_value, &result);
    printf("cpu_allocs_12345=%lu frees_of_them=%lu gpu_events=%lu gpu_off_notes=%lu "
           "gpu_off_result=%s no_driver_notes=%lu not_injected_notes=%lu\n", allocs, frees,
           gpu_events, notes, result, no_driver, not_injected);
    mf_log_free(log);
    return 0;
}
