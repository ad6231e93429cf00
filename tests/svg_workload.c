/*
 * svg_workload.c - a real program for the memory_flow end-to-end test
 * (svg_e2e.sh): under `memflow run` it makes three allocations of sizes
 * found nowhere else, in known scopes (one with a hostile name), frees two
 * and leaks one, so the test can find each in the picture's hover layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memflow.h"

#define HOSTILE_SCOPE "e2e<w>&\"q\"\n\xff"

static void *volatile sink;

int main(void)
{
    memflow_scope_push(HOSTILE_SCOPE, 0);
    char *leak = malloc(123457);
    char *held = malloc(54321);
    memflow_scope_pop();
    memflow_scope_push("e2e_temp", 0);
    char *temp = malloc(99991);
    if (!leak || !held || !temp) {
        fprintf(stderr, "svg_workload: out of memory\n");
        return 1;
    }
    memset(temp, 1, 99991);
    free(temp);
    memflow_scope_pop();
    memset(held, 2, 54321);
    free(held);
    sink = leak;
    return 0;
}
