/*
 * trace.c - sample: MXNet's profiler tutorial "trace" example in plain C.
 *
 * The trace of a 3x3 matrix computed the way a tensor library does it: an
 * operator `diag` that returns the diagonal as a new vector, then `sum` that
 * reduces it to a new scalar.  The computation runs twice, each run inside
 * its own scope (trace0:, trace1:) with the operators pushed in append mode
 * (trace0:diag:, trace0:sum:, ...).
 *
 * Like a real engine, the first operator call sets the engine up lazily: an
 * operator table and a 64 KiB workspace cache that every later operator call
 * reuses.  So in the memory flow the first run carries a one-time set-up
 * (in scope trace0:diag:) that the second run does not: the classic "the
 * first iteration is slower and bigger" picture.
 *
 * What it allocates (malloc, in this order):
 *   <unk>:          matrix 3x3 floats (36 B)
 *   trace0:diag:    engine state (256 B), workspace (65536 B)  <- first run only
 *   trace0:diag:    diagonal (12 B)
 *   trace0:sum:     result (4 B)
 *   trace1:diag:    diagonal (12 B)
 *   trace1:sum:     result (4 B)
 * 7 allocations, 65,860 bytes requested; all freed by the end (the engine at
 * shutdown, in scope <unk>:).  stdio's buffer for the output comes on top.
 * Uses only memflow's scope API; `memflow run -- samples/trace` records it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memflow.h"

enum { N = 3, ENGINE_STATE_BYTES = 256, WORKSPACE_BYTES = 64 * 1024 };

/* The lazily created engine: an operator table and a reusable workspace. */
typedef struct engine {
    char *state;     /* operator registry, made on first use */
    float *workspace; /* scratch every operator uses, kept between calls */
    int calls;
} engine;

static engine the_engine;

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "trace: out of memory allocating %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

/* The engine, set up on the first call (in the caller's scope). */
static engine *engine_get(void)
{
    if (!the_engine.state) {
        the_engine.state = xmalloc(ENGINE_STATE_BYTES);
        memset(the_engine.state, 0, ENGINE_STATE_BYTES);
        the_engine.workspace = xmalloc(WORKSPACE_BYTES);
    }
    the_engine.calls++;
    return &the_engine;
}

static void engine_shutdown(void)
{
    free(the_engine.state);
    free(the_engine.workspace);
    memset(&the_engine, 0, sizeof the_engine);
}

/* diag(m): a new vector of the n diagonal elements of the n x n matrix m. */
static float *op_diag(const float *m, int n)
{
    float *d = NULL;
    MEMFLOW_SCOPE_APPEND("diag") {
        engine *e = engine_get();
        d = xmalloc((size_t)n * sizeof *d);
        for (int i = 0; i < n; i++) {
            e->workspace[i] = m[i * n + i]; /* gathered through the workspace */
            d[i] = e->workspace[i];
        }
    }
    return d;
}

/* sum(v): a new scalar holding the sum of the n elements of v. */
static float *op_sum(const float *v, int n)
{
    float *s = NULL;
    MEMFLOW_SCOPE_APPEND("sum") {
        engine *e = engine_get();
        e->workspace[0] = 0;
        for (int i = 0; i < n; i++)
            e->workspace[0] += v[i];
        s = xmalloc(sizeof *s);
        *s = e->workspace[0];
    }
    return s;
}

/* One run: trace(m) = sum(diag(m)) inside scope trace<run>:. */
static float run_trace(const float *m, int run)
{
    char scope[32];
    snprintf(scope, sizeof scope, "trace%d", run);
    float result = 0;
    MEMFLOW_SCOPE(scope) {
        float *d = op_diag(m, N);
        float *s = op_sum(d, N);
        free(d);
        result = *s;
        free(s);
    }
    return result;
}

int main(void)
{
    float *m = xmalloc(N * N * sizeof *m);
    for (int i = 0; i < N * N; i++)
        m[i] = (float)(i + 1); /* [[1,2,3],[4,5,6],[7,8,9]]: trace 15 */
    float t0 = run_trace(m, 0);
    float t1 = run_trace(m, 1);
    printf("trace: run 0 = %g, run 1 = %g (%d operator calls, engine set up once)\n", t0, t1,
           the_engine.calls);
    engine_shutdown();
    free(m);
    return t0 == 15.0f && t1 == 15.0f ? 0 : 1;
}
