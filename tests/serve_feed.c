/*
 * serve_feed.c - a real program that records while `memflow serve` reads
 * its log (tests/serve.sh).  It opens its log in DIR, prints the log's
 * path, then follows commands, one per line on stdin, answering "done":
 *   alloc N   N blocks of 100 bytes (memflow_record_alloc: one ALLOC record
 *             each, nothing else)
 *   free N    the N oldest blocks it holds (one FREE record each)
 *   quit      stop
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memflow.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: serve_feed DIR\n");
        return 2;
    }
    const char *key = "path", *dir = argv[1];
    if (memflow_set_config(1, &key, &dir) < 0 || memflow_set_state(MEMFLOW_RUN) < 0) {
        fprintf(stderr, "serve_feed: %s\n", memflow_last_error());
        return 1;
    }
    extern const char *mf_recorder_log_path(void);
    printf("%s\n", mf_recorder_log_path());
    fflush(stdout);
    uintptr_t next = 0x100000, oldest = 0x100000;
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        unsigned long n = 0;
        if (sscanf(line, "alloc %lu", &n) == 1) {
            for (unsigned long i = 0; i < n; i++, next += 128)
                memflow_record_alloc("cpu/0", (void *)next, 100, 100, NULL, 0);
        } else if (sscanf(line, "free %lu", &n) == 1) {
            for (unsigned long i = 0; i < n && oldest < next; i++, oldest += 128)
                memflow_record_free("cpu/0", (void *)oldest);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
        printf("done\n");
        fflush(stdout);
    }
    return 0;
}
