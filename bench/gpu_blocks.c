/*
 * gpu_blocks.c - the GPU side of memflow logs as JSON, for the checks of the
 * GPU-machine procedure (bench/gpu_check.py, run by bench/gpu-remote.sh).
 *
 * Usage: gpu_blocks LOG...
 * Prints one JSON object: {"logs": [{"path", "pid", "program",
 * "start_mono_ns", "start_real_ns", "allocs": [[device, kind, flags, addr,
 * size, time_ns, scope, name, tid], ...], "frees": [[device, kind, addr,
 * time_ns], ...], "notes": [[code, value], ...], "samples": [[device,
 * time_ns, used, total], ...], "damage": "..."}]}.  kind is the memory kind
 * (log_format.h enum mf_memory_kind), flags the rest of the block flags.
 * Only GPU devices' blocks and samples are listed.  Exit status 1 when a log
 * cannot be read.
 */
#include <inttypes.h>
#include <stdio.h>

#include "log_in_memory.h"

/* A JSON string: quotes, backslashes and control bytes escaped. */
static void json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static int is_gpu(const mf_event *e)
{
    return MF_DEVICE_KIND(e->device) == MF_DEVICE_GPU;
}

static void print_allocs(const mf_log *log)
{
    const char *sep = "";
    printf("\"allocs\":[");
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if (e->type != MF_REC_ALLOC || !is_gpu(e))
            continue;
        const mf_ev_alloc *a = &e->alloc;
        printf("%s[%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", sep,
               MF_DEVICE_INDEX(e->device), (a->flags & MF_MEMKIND_MASK) >> MF_MEMKIND_SHIFT,
               a->flags & ~MF_MEMKIND_MASK & 0xffffu, a->addr, a->requested, e->time_ns);
        json_string(mf_log_string(log, a->scope));
        putchar(',');
        json_string(mf_log_string(log, a->name));
        printf(",%u]", e->tid);
        sep = ",\n";
    }
    printf("],\n");
}

static void print_rest(const mf_log *log)
{
    const char *sep = "";
    printf("\"frees\":[");
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if (e->type == MF_REC_FREE && is_gpu(e)) {
            printf("%s[%u,%u,%" PRIu64 ",%" PRIu64 "]", sep, MF_DEVICE_INDEX(e->device),
                   (e->free.flags & MF_MEMKIND_MASK) >> MF_MEMKIND_SHIFT, e->free.addr,
                   e->time_ns);
            sep = ",\n";
        }
    }
    printf("],\n\"notes\":[");
    sep = "";
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if (e->type == MF_REC_NOTE) {
            printf("%s[%u,%" PRIu64 "]", sep, e->note.code, e->note.value);
            sep = ",";
        }
    }
    printf("],\n\"samples\":[");
    sep = "";
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if (e->type == MF_REC_SAMPLE && is_gpu(e)) {
            const mf_sample_values *v = &log->samples[e->sample.index];
            printf("%s[%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", sep,
                   MF_DEVICE_INDEX(e->device), e->time_ns, v->value[MF_SAMPLE_GPU_USED],
                   v->value[MF_SAMPLE_GPU_TOTAL]);
            sep = ",";
        }
    }
    printf("],\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gpu_blocks LOG...\n");
        return 2;
    }
    int status = 0;
    const char *sep = "";
    printf("{\"logs\":[\n");
    for (int i = 1; i < argc; i++) {
        mf_log *log = NULL;
        char err[512];
        if (mf_log_read(argv[i], &log, err, sizeof err) < 0) {
            fprintf(stderr, "gpu_blocks: %s\n", err);
            status = 1;
            continue;
        }
        printf("%s{\"path\":", sep);
        json_string(argv[i]);
        printf(",\"pid\":%" PRIu64 ",\"program\":", log->header.pid);
        json_string(log->argc > 0 ? log->argv[0] : "");
        printf(",\"start_mono_ns\":%" PRIu64 ",\"start_real_ns\":%" PRIu64 ",\n",
               log->header.start_mono_ns, log->header.start_real_ns);
        print_allocs(log);
        print_rest(log);
        printf("\"damage\":");
        json_string(log->damaged ? log->damage : "");
        printf("}");
        sep = ",\n";
        mf_log_free(log);
    }
    printf("]}\n");
    return status;
}
