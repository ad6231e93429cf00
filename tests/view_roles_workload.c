/*
 * view_roles_workload.c - one training step's tensors and an out-of-memory
 * error for `memflow view`'s roles and OOM test (view_oom.sh), with no GPU
 * and no torch: under `memflow run` it records a GPU sub-allocator's
 * blocks on gpu/0 (memflow_record_alloc) and names them as memflow's
 * PyTorch hooks do (naming records with a role, step marks: the recorder's
 * entry points the Python binding calls), then records a failed
 * allocation as CUPTI would.  gpu/0, from 0x7f0000000000 (B):
 *
 *   B+0       1 MiB  net:fc:  named net:fc:weight, parameter (20 ms after
 *                              its allocation: training begins)
 *   step mark 1
 *   B+2 MiB 256 KiB  net:     input net:input.0
 *   B+3 MiB 512 KiB  net:     activation net:activation
 *   B+4 MiB   4 KiB  net:     CHURN blocks cycling through 64 places, each
 *                              freed at once: temporaries (freed in the step
 *                              they were made in, no role of their own)
 *   B+1 MiB   1 MiB  net:fc:  gradient net:fc:weight.grad
 *   B+5 MiB   3 MiB  adam:    optimizer state adam:net:fc:weight.exp_avg
 *   B+9 MiB 128 KiB  net:     never named: other
 *   step mark 2; the input and the activation are freed
 *   OOM on gpu/0 in net:fc:: 64 MiB asked, 3 MiB free of 16 MiB
 *
 * Pauses of 20 ms part the phases.  The parameter, gradient, optimizer
 * state and the other block are never freed.  Built with -fno-builtin.
 *
 * Usage: view_roles_workload [CHURN]   (default 1000)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log_format.h"
#include "memflow.h"
#include "recorder.h"

#define B 0x7f0000000000ull
#define MiB (1ull << 20)
#define GPU0 0x100u

static void pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static uint32_t intern(const char *text)
{
    return mf_recorder_intern(text, strlen(text));
}

/* A block of scope (pushed for it) at B + off. */
static void alloc_in(const char *scope, uint64_t off, uint64_t bytes)
{
    memflow_scope_push(scope, 0);
    memflow_record_alloc("gpu/0", (void *)(uintptr_t)(B + off), bytes, bytes, NULL, 0);
    memflow_scope_pop();
}

/* The block at B + off is called name, of role. */
static void name(uint64_t off, const char *text, unsigned role)
{
    mf_recorder_trace(MF_TRACE_BLOCK_NAME, 0, B + off, 0, intern(text), GPU0 | role << 16);
}

static void step(uint64_t number)
{
    mf_recorder_trace(MF_TRACE_STEP, 0, number, 0, intern("sgd"), MF_MARKER_PROCESS);
}

int main(int argc, char **argv)
{
    long churn = argc > 1 ? atol(argv[1]) : 1000;
    alloc_in("net:fc", 0, MiB);
    pause_ms(20);
    name(0, "net:fc:weight", MF_ROLE_PARAMETER);
    step(1);
    alloc_in("net", 2 * MiB, 256 << 10);
    name(2 * MiB, "net:input.0", MF_ROLE_INPUT);
    alloc_in("net", 3 * MiB, 512 << 10);
    name(3 * MiB, "net:activation", MF_ROLE_ACTIVATION);
    pause_ms(20);
    memflow_scope_push("net", 0);
    for (long i = 0; i < churn; i++) {
        void *p = (void *)(uintptr_t)(B + 4 * MiB + (uint64_t)(i % 64) * 4096);
        memflow_record_alloc("gpu/0", p, 4096, 4096, NULL, 0);
        memflow_record_free("gpu/0", p);
    }
    memflow_scope_pop();
    pause_ms(20);
    alloc_in("net:fc", MiB, MiB);
    name(MiB, "net:fc:weight.grad", MF_ROLE_GRADIENT);
    alloc_in("adam", 5 * MiB, 3 * MiB);
    name(5 * MiB, "adam:net:fc:weight.exp_avg", MF_ROLE_OPTIMIZER_STATE);
    alloc_in("net", 9 * MiB, 128 << 10);
    pause_ms(20);
    step(2);
    memflow_record_free("gpu/0", (void *)(uintptr_t)(B + 2 * MiB));
    memflow_record_free("gpu/0", (void *)(uintptr_t)(B + 3 * MiB));
    pause_ms(20);
    memflow_scope_push("net:fc", 0);
    mf_recorder_oom(GPU0, MF_OOM_CUDA_API, 0, 64 * MiB, 3 * MiB, 16 * MiB, 0, 0);
    memflow_scope_pop();
    pause_ms(20);
    return 0;
}
