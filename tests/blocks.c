/*
 * blocks.c - list the allocations of logs, for the Python tests: one line
 * "SCOPE REQUESTED" per allocation of at least MIN bytes, in time order,
 * read with the log reader (so live and compact logs alike).
 * Usage: blocks MIN LOG...   (exit 1 if a log cannot be read)
 */
#include <stdio.h>
#include <stdlib.h>

#include "log_in_memory.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: blocks MIN LOG...\n");
        return 2;
    }
    unsigned long long min = strtoull(argv[1], NULL, 10);
    for (int i = 2; i < argc; i++) {
        mf_log *log;
        char err[512];
        if (mf_log_read(argv[i], &log, err, sizeof err) < 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        for (size_t j = 0; j < log->n_events; j++) {
            const mf_event *e = &log->events[j];
            if (e->type == MF_REC_ALLOC && e->alloc.requested >= min)
                printf("%s %llu\n", mf_log_string(log, e->alloc.scope),
                       (unsigned long long)e->alloc.requested);
        }
        mf_log_free(log);
    }
    return 0;
}
