/*
 * render_gen.c - write a real memflow log with known content for the
 * render tests (tests/render_*.sh), through the public API and the real
 * recorder.  Prints the log's path.
 *
 * Usage: render_gen DIR MODE [N]
 *   basic   cpu/0: the story of check_model.c (peak 1150, end 1050, one
 *           unknown free); gpu/0: "layer1:" 4096 then "layer2:" 8192 (named
 *           "w"), then the first freed; one cpu/0 snapshot; a kernel
 *           "sgemm<float>" (2.5 us, stream 7) and a 64 KiB copy "HtoD"
 *           (1 us, stream 13) on gpu/0; a note of 5 dropped CUPTI records
 *   escape  scopes, names and the thread name full of < " & newline and
 *           invalid UTF-8
 *   kinds   gpu/0: device 1000, pinned 200, managed 30 (freed) bytes as
 *           CUPTI reports them; a pool created (2 MiB) and trimmed (1 MiB)
 *   big N [scoped]  N allocations on cpu/0, each freed 1000 allocations
 *           later, and one 10 MB block at N/2 (the peak), freed right after;
 *           scoped: each allocation in its own push/pop of scope "layer"
 *   trace   trace objects at t0 + k us (t0: the first event): task "load"
 *           (id 7) 1..5, frame "frame" (id 1) 2..6, event "step" 2..3 on the
 *           main thread, NVTX range "nvtx" (id 99) begun 1.5 on the main
 *           thread and ended 4.5 on a second one, counter "loss" 10 at 2.5
 *           and -3 at 3.5, markers "epoch" at 4 (global, thread, process);
 *           all in domain "train"; gpu/0 named by a DEVICE record (NVIDIA
 *           H100 80GB HBM3, uuid 1a2b3c4d..., MIG 1/0, 80 GB) with one block
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "memflow.h"
#include "recorder.h"

#define P(x) ((const void *)(uintptr_t)(x))

static void basic(void)
{
    uint64_t values[6] = { 11, 22, 33, 44, 55, 0 };
    memflow_scope_push("net_dense0", 0);
    memflow_record_alloc("cpu/0", P(0x1000), 100, 128, "w", 0);
    memflow_record_alloc("cpu/0", P(0x2000), 300, 320, NULL, 0);
    memflow_scope_pop();
    memflow_scope_push("relu", 0);
    memflow_record_alloc("cpu/0", P(0x3000), 50, 64, NULL, 0);
    memflow_record_free("cpu/0", P(0x2000));
    memflow_record_free("cpu/0", P(0x9999));
    memflow_record_alloc("cpu/0", P(0x4000), 1000, 1024, "big", 0);
    mf_recorder_sample(MF_DEVICE(MF_DEVICE_CPU, 0), mf_clock_now(), values);
    memflow_record_free("cpu/0", P(0x1000));
    memflow_scope_pop();
    memflow_scope_push("layer1", 0);
    memflow_record_alloc("gpu/0", P(0x7f0000000000), 4096, 4096, NULL, 0);
    memflow_scope_pop();
    memflow_scope_push("layer2", 0);
    memflow_record_alloc("gpu/0", P(0x7f0000100000), 8192, 8192, "w", MEMFLOW_ALLOC_REUSED);
    memflow_scope_pop();
    memflow_record_free("gpu/0", P(0x7f0000000000));
    uint64_t t = mf_clock_now();
    mf_recorder_activity(MF_DEVICE(MF_DEVICE_GPU, 0), MF_ACT_KERNEL, t, t + 2500, 0, 7,
                         mf_recorder_intern("sgemm<float>", 12), 42);
    mf_recorder_activity(MF_DEVICE(MF_DEVICE_GPU, 0), MF_ACT_MEMCPY, t + 3000, t + 4000, 65536,
                         13, mf_recorder_intern("HtoD", 4), 43);
    mf_recorder_note(MF_NOTE_GPU_DROPPED, 5);
}

/* GPU blocks of three memory kinds as CUPTI reports them, and a pool. */
static void kinds(void)
{
    const uint16_t gpu0 = MF_DEVICE(MF_DEVICE_GPU, 0);
    mf_recorder_pool(gpu0, MF_POOL_CREATED, 0, 0x7e0000000000, 1 << 21, 1 << 20);
    mf_recorder_alloc_with_stack(gpu0, MF_MEM_DEVICE << MF_MEMKIND_SHIFT, 0, 0x7f0000000000, 1000,
                                 1024, 0, 0, 0, 0);
    mf_recorder_alloc_with_stack(gpu0, MF_MEM_PINNED << MF_MEMKIND_SHIFT, 0, 0x7f1000000000, 200,
                                 256, 0, 0, 0, 0);
    mf_recorder_alloc_with_stack(gpu0, MF_MEM_MANAGED << MF_MEMKIND_SHIFT, 0, 0x7f2000000000, 30,
                                 32, 0, 0, 0, 0);
    mf_recorder_free_event(gpu0, 0, 0, 0x7f2000000000);
    mf_recorder_pool(gpu0, MF_POOL_TRIMMED, 0, 0x7e0000000000, 1 << 20, 1 << 20);
}

static void escape(void)
{
    memflow_scope_push("a<b\"c&d\ne\xff\xfe", 0);
    memflow_record_alloc("cpu/0", P(0x1000), 10, 16, "n<&\"\n\xff", 0);
    memflow_record_alloc("gpu/0", P(0x2000), 20, 32, "n<&\"\n\xff", 0);
    memflow_scope_pop();
}

static uint64_t trace_t0;

static void *end_range(void *arg)
{
    (void)arg;
    mf_recorder_trace(MF_TRACE_RANGE_END, trace_t0 + 4500, 99, mf_recorder_intern("train", 5),
                      mf_recorder_intern("nvtx", 4), 0);
    return NULL;
}

static void trace(void)
{
    uint32_t train = mf_recorder_intern("train", 5);
    const uint16_t gpu0 = MF_DEVICE(MF_DEVICE_GPU, 0);
    uint8_t uuid[16] = { 0x1a, 0x2b, 0x3c, 0x4d, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    mf_recorder_device_info(gpu0, mf_recorder_intern("NVIDIA H100 80GB HBM3", 21), uuid,
                            80000000000ull, 1u << 16, 0x1a00);
    trace_t0 = mf_clock_now();
    mf_recorder_alloc_with_stack(gpu0, MF_MEM_DEVICE << MF_MEMKIND_SHIFT, trace_t0, 0x7f0000000000,
                                 1 << 20, 1 << 20, 0, 0, 0, 0);
#define AT(us) (trace_t0 + (uint64_t)((us) * 1000))
    mf_recorder_trace(MF_TRACE_TASK_BEGIN, AT(1), 7, train, mf_recorder_intern("load", 4), 0);
    mf_recorder_trace(MF_TRACE_RANGE_BEGIN, AT(1.5), 99, train, mf_recorder_intern("nvtx", 4), 0);
    mf_recorder_trace(MF_TRACE_FRAME_BEGIN, AT(2), 1, train, mf_recorder_intern("frame", 5), 0);
    mf_recorder_trace(MF_TRACE_EVENT_BEGIN, AT(2), 0, train, mf_recorder_intern("step", 4), 0);
    mf_recorder_trace(MF_TRACE_COUNTER, AT(2.5), 10, train, mf_recorder_intern("loss", 4), 0);
    mf_recorder_trace(MF_TRACE_EVENT_END, AT(3), 0, train, mf_recorder_intern("step", 4), 0);
    mf_recorder_trace(MF_TRACE_COUNTER, AT(3.5), (uint64_t)-3, train,
                      mf_recorder_intern("loss", 4), 0);
    uint32_t epoch = mf_recorder_intern("epoch", 5);
    mf_recorder_trace(MF_TRACE_MARKER, AT(4), 0, train, epoch, MF_MARKER_GLOBAL);
    mf_recorder_trace(MF_TRACE_MARKER, AT(4), 0, train, epoch, MF_MARKER_THREAD);
    mf_recorder_trace(MF_TRACE_MARKER, AT(4), 0, train, epoch, MF_MARKER_PROCESS);
    mf_recorder_trace(MF_TRACE_TASK_END, AT(5), 7, train, mf_recorder_intern("load", 4), 0);
    mf_recorder_trace(MF_TRACE_FRAME_END, AT(6), 1, train, mf_recorder_intern("frame", 5), 0);
#undef AT
    pthread_t other;
    pthread_create(&other, NULL, end_range, NULL);
    pthread_join(other, NULL);
}

static void big(long n, int scoped)
{
    const uint64_t base = 0x10000000;
    for (long i = 0; i < n; i++) {
        if (scoped)
            memflow_scope_push("layer", 0);
        memflow_record_alloc("cpu/0", P(base + (uint64_t)i * 64), 1 + (uint64_t)(i * 7919) % 4096,
                             4096, NULL, 0);
        if (i >= 1000)
            memflow_record_free("cpu/0", P(base + (uint64_t)(i - 1000) * 64));
        if (i == n / 2)
            memflow_record_alloc("cpu/0", P(0x4000000000), 10u << 20, 10u << 20, NULL, 0);
        if (i == n / 2 + 1)
            memflow_record_free("cpu/0", P(0x4000000000));
        if (scoped)
            memflow_scope_pop();
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: render_gen DIR basic|escape|kinds|trace|big [N [scoped]]\n");
        return 2;
    }
    const char *key = "path";
    const char *dir = argv[1];
    if (strcmp(argv[2], "escape") == 0)
        prctl(PR_SET_NAME, "w<&\"\xff", 0, 0, 0);
    if (memflow_set_config(1, &key, &dir) < 0 || memflow_set_state(MEMFLOW_RUN) < 0) {
        fprintf(stderr, "render_gen: %s\n", memflow_last_error());
        return 1;
    }
    if (strcmp(argv[2], "basic") == 0)
        basic();
    else if (strcmp(argv[2], "escape") == 0)
        escape();
    else if (strcmp(argv[2], "kinds") == 0)
        kinds();
    else if (strcmp(argv[2], "trace") == 0)
        trace();
    else if (strcmp(argv[2], "big") == 0)
        big(argc > 3 ? atol(argv[3]) : 1000000, argc > 4 && strcmp(argv[4], "scoped") == 0);
    else
        return 2;
    printf("%s\n", mf_recorder_log_path());
    mf_recorder_finish();
    return 0;
}
