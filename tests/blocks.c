/*
 * blocks.c - list the allocations of logs, for the Python tests: one line
 * "SCOPE REQUESTED" per allocation of at least MIN bytes, in time order,
 * read with the log reader (so live and compact logs alike).  With --names,
 * one line "NAME ROLE REQUESTED" per naming record (TRACE BLOCK_NAME: a
 * tensor's name and role), REQUESTED the size of the block live at its
 * address then (0: none), and "step OPTIMIZER N" per step mark.
 * Usage: blocks MIN LOG...  |  blocks --names LOG...  (exit 1 if a log cannot be read)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_in_memory.h"

#define LIVE_SLOTS (1u << 20)

typedef struct live {
    uint64_t key, requested;
} live;

static const char *const roles[] = { "unknown", "parameter", "gradient", "optimizer_state",
                                     "activation", "input", "temporary", "other" };

/* The slot of (device, addr) in an open-addressing table. */
static live *slot(live *t, uint16_t device, uint64_t addr)
{
    uint64_t key = addr ^ ((uint64_t)device << 56) ^ 1;
    size_t i = (size_t)((key >> 4) * 0x9e3779b97f4a7c15ull) & (LIVE_SLOTS - 1);
    while (t[i].key && t[i].key != key)
        i = (i + 1) & (LIVE_SLOTS - 1);
    t[i].key = key;
    return &t[i];
}

static void names(const mf_log *log, live *t)
{
    for (size_t j = 0; j < log->n_events; j++) {
        const mf_event *e = &log->events[j];
        if (e->type == MF_REC_ALLOC && !(e->alloc.flags & MF_FLAG_SUBBLOCK))
            slot(t, e->device, e->alloc.addr)->requested = e->alloc.requested;
        else if (e->type == MF_REC_FREE && !(e->free.flags & MF_FLAG_SUBBLOCK))
            slot(t, e->device, e->free.addr)->requested = 0;
        else if (e->type == MF_REC_TRACE && e->trace.kind == MF_TRACE_BLOCK_NAME) {
            unsigned role = e->trace.arg >> 16;
            printf("%s %s %llu\n", mf_log_string(log, e->trace.name),
                   role < 8 ? roles[role] : "?",
                   (unsigned long long)slot(t, (uint16_t)e->trace.arg, e->trace.value)->requested);
        } else if (e->type == MF_REC_TRACE && e->trace.kind == MF_TRACE_STEP) {
            printf("step %s %llu\n", mf_log_string(log, e->trace.name),
                   (unsigned long long)e->trace.value);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: blocks MIN LOG... | blocks --names LOG...\n");
        return 2;
    }
    int by_name = strcmp(argv[1], "--names") == 0;
    unsigned long long min = by_name ? 0 : strtoull(argv[1], NULL, 10);
    live *t = by_name ? calloc(LIVE_SLOTS, sizeof *t) : NULL;
    if (by_name && !t)
        return 1;
    for (int i = 2; i < argc; i++) {
        mf_log *log;
        char err[512];
        if (mf_log_read(argv[i], &log, err, sizeof err) < 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        if (by_name)
            names(log, t);
        for (size_t j = 0; !by_name && j < log->n_events; j++) {
            const mf_event *e = &log->events[j];
            if (e->type == MF_REC_ALLOC && e->alloc.requested >= min)
                printf("%s %llu\n", mf_log_string(log, e->alloc.scope),
                       (unsigned long long)e->alloc.requested);
        }
        mf_log_free(log);
    }
    free(t);
    return 0;
}
