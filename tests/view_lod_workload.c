/*
 * view_lod_workload.c - millions of small blocks for `memflow view`'s
 * level-of-detail test (view_lod.sh), run under `memflow run`: in scope
 * lod_keep it allocates KEEP blocks of 24..40 bytes one after another and
 * keeps them; in scope lod_churn it then makes CHURN blocks of 16..63 bytes,
 * each freed at once; then it frees the kept blocks in the order they were
 * made.  Zoomed out on the whole run, the kept blocks are a dense band of
 * the heap from the last one's allocation to the first one's free: held
 * everywhere in it.  It prints the first and last kept block's address
 * (the test asks the viewer for their times).  Built with -fno-builtin.
 *
 * Usage: view_lod_workload [KEEP [CHURN]]   (default 1000000 1000000)
 */
#include <stdio.h>
#include <stdlib.h>

#include "memflow.h"

static void *volatile sink;

int main(int argc, char **argv)
{
    long keep = argc > 1 ? atol(argv[1]) : 1000000, churn = argc > 2 ? atol(argv[2]) : 1000000;
    char **kept = malloc((size_t)keep * sizeof *kept);
    if (!kept || keep < 2)
        return 1;
    memflow_scope_push("lod_keep", 0);
    for (long i = 0; i < keep; i++)
        if (!(kept[i] = malloc(24 + (size_t)(i % 17))))
            return 1;
    memflow_scope_pop();
    memflow_scope_push("lod_churn", 0);
    for (long i = 0; i < churn; i++) {
        char *p = malloc(16 + (size_t)(i % 48));
        sink = p;
        free(p);
    }
    memflow_scope_pop();
    printf("%p %p %zu\n", (void *)kept[0], (void *)kept[keep - 1], (size_t)(24 + (keep - 1) % 17));
    fflush(stdout);
    memflow_scope_push("lod_keep", 0);
    for (long i = 0; i < keep; i++)
        free(kept[i]);
    memflow_scope_pop();
    free(kept);
    return 0;
}
