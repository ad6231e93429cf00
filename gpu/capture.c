/*
 * capture.c - turns CUPTI on and connects it to the recorder.
 *
 * memflow_gpu_start() first makes sure CUPTI is ours to use: the loaded
 * libcupti must be the major (and, for kernel and device records, minor)
 * version memflow was built with - PyTorch wheels bring their own - and the
 * one CUPTI subscriber a process may have before CUDA 13.2 must not already
 * be another tool (Nsight Systems, torch.profiler/Kineto).  Only then does
 * it register anything, so it never takes another tool's activity
 * callbacks: the API callbacks (api.c), the timestamp callback (every record
 * on mf_clock_now, the CPU events' clock), the activity buffers and kinds.
 * With the cupti key off it touches CUPTI not at all (one line), so the
 * program's own tools (torch.profiler's CUDA activities) can have it.
 *
 * Buffers are mmap'd, never malloc'd, so they never appear as the program's
 * memory.  CUPTI returns filled buffers on its own thread (or on the thread
 * that flushes); mf_gpu_buffer_completed() translates them (translate.c),
 * reports dropped records and unmaps them.  Mid-run flushes (memflow_dump,
 * memflow_dumps, continuous dumps) ask only for complete buffers; the forced
 * flush, which also hands back buffers with unfinished records (whose walk
 * stops at the first of them), is for exit only, from an exit handler that
 * runs before CUPTI's own.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "config.h"
#include "cuda_seen.h"
#include "gpu.h"

static int start_done;
static CUpti_SubscriberHandle subscriber;

/* ---- callbacks handed to CUPTI ----------------------------------------- */

uint64_t CUPTIAPI mf_gpu_timestamp(void)
{
    return mf_clock_now();
}

void CUPTIAPI mf_gpu_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    void *p = mmap(NULL, MF_GPU_BUFFER_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *buffer = p == MAP_FAILED ? NULL : p; /* NULL: CUPTI drops and counts */
    *size = p == MAP_FAILED ? 0 : MF_GPU_BUFFER_SIZE;
    *max_records = 0;
}

void mf_gpu_note_dropped(size_t n)
{
    if (n == 0)
        return;
    if (mf_recorder_log_open())
        mf_recorder_note(MF_NOTE_GPU_DROPPED, n);
    fprintf(stderr, "memflow: CUPTI dropped %zu GPU activity records (buffers full); "
            "GPU memory in the log is incomplete\n", n);
}

void CUPTIAPI mf_gpu_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t *buffer,
                                      size_t size, size_t valid_size)
{
    mf_gpu_process_buffer(buffer, valid_size);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS)
        mf_gpu_note_dropped(dropped);
    if (buffer)
        munmap(buffer, size);
}

void mf_gpu_flush(void)
{
    cuptiActivityFlushAll(0);
}

void mf_gpu_flush_at_exit(void)
{
    cuptiActivityFlushAll(0);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

/* ---- saying why capture is off ----------------------------------------- */

static const char *result_text(CUptiResult result)
{
    const char *text = "unknown CUPTI error";
    cuptiGetResultString(result, &text);
    return text;
}

/* Say once why GPU capture is off; CPU capture goes on. */
static int capture_off(const char *call, CUptiResult result)
{
    fprintf(stderr, "memflow: GPU capture is off: %s (%s failed; no usable CUDA driver or GPU?)"
            "; CPU capture goes on\n", result_text(result), call);
    if (mf_recorder_log_open())
        mf_recorder_note(MF_NOTE_GPU_OFF, (uint64_t)result);
    return 0;
}

/* Another tool holds CUPTI: leave it alone. */
static int capture_busy(CUptiResult result, const char *holder)
{
    fprintf(stderr, "memflow: GPU capture is off: another CUPTI client holds CUPTI (%s; "
            "Nsight Systems, torch.profiler/Kineto ... allow one before CUDA 13.2); memflow "
            "leaves its callbacks alone; CPU capture goes on\n",
            holder && *holder ? holder : "it did not give its name");
    if (mf_recorder_log_open())
        mf_recorder_note(MF_NOTE_GPU_CUPTI_BUSY, (uint64_t)result);
    return 0;
}

/* cupti=0: the plugin was loaded (CUDA_INJECTION64_PATH set by hand), but
 * CUPTI is left to the program's own tools. */
static int capture_left(void)
{
    fprintf(stderr, "memflow: GPU capture through CUPTI is off (cupti=0): CUPTI is left to "
            "other tools; CPU capture goes on\n");
    return 0;
}

/* ---- the loaded libcupti ------------------------------------------------ */

unsigned mf_gpu_version_policy(uint32_t loaded, uint32_t built)
{
    if (loaded < 130000 || built < 130000 || loaded / 10000 != built / 10000)
        return MF_GPU_NONE;
    return loaded / 100 == built / 100 ? MF_GPU_ALL : MF_GPU_MEMORY_ONLY;
}

static const char *cupti_path(void)
{
    Dl_info info;
    if (dladdr((void *)cuptiGetVersion, &info) && info.dli_fname)
        return info.dli_fname;
    return "libcupti";
}

/* What the loaded libcupti allows; one line and a note when it is not the
 * version memflow was built with. */
static unsigned check_version(void)
{
    uint32_t loaded = 0;
    CUptiResult r = cuptiGetVersion(&loaded);
    if (r != CUPTI_SUCCESS) {
        capture_off("cuptiGetVersion", r);
        return MF_GPU_NONE;
    }
    if (loaded == CUPTI_API_VERSION)
        return MF_GPU_ALL;
    unsigned policy = mf_gpu_version_policy(loaded, CUPTI_API_VERSION);
    static const char *const consequence[] = {
        [MF_GPU_NONE] = "GPU capture is off (its record layouts differ); CPU capture goes on",
        [MF_GPU_MEMORY_ONLY] = "GPU memory is recorded; kernel, copy, set and device records "
                               "are off (their layouts change between minor versions)",
        [MF_GPU_ALL] = "same major and minor version: everything is recorded",
    };
    fprintf(stderr, "memflow: %s has CUPTI API version %u, memflow was built with %u: %s\n",
            cupti_path(), loaded, (unsigned)CUPTI_API_VERSION, consequence[policy]);
    if (mf_recorder_log_open())
        mf_recorder_note(MF_NOTE_GPU_CUPTI_VERSION,
                         (uint64_t)loaded << 32 | (uint64_t)CUPTI_API_VERSION);
    return policy;
}

/* ---- activity kinds ----------------------------------------------------- */

/* Enable a kind capture can do without; say so if CUPTI refuses. */
static void enable_extra_kind(CUpti_ActivityKind kind, const char *what)
{
    CUptiResult r = kind == CUPTI_ACTIVITY_KIND_DEVICE ? cuptiActivityEnableAndDump(kind)
                                                       : cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS)
        fprintf(stderr, "memflow: GPU %s records (activity kind %d) are off: %s\n", what,
                (int)kind, result_text(r));
}

/*
 * Enable the activity kinds.  MEMORY2 is the one capture cannot do without:
 * its failure turns capture off (returned).  The others are extras: a
 * failure costs that kind only, with one stderr line.  Allocation sources
 * name the library behind each block.  Kernel, copy, set and device records
 * only when the loaded libcupti has memflow's layouts (MF_GPU_ALL).
 */
static CUptiResult enable_activity(unsigned policy, const char **call)
{
    static const CUpti_ActivityKind device_kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
    };
    CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2);
    if (r != CUPTI_SUCCESS) {
        *call = "cuptiActivityEnable(MEMORY2)";
        return r;
    }
    enable_extra_kind(CUPTI_ACTIVITY_KIND_MEMORY_POOL, "MEMORY_POOL");
    r = cuptiActivityEnableAllocationSource(1);
    if (r != CUPTI_SUCCESS)
        fprintf(stderr, "memflow: GPU allocation sources are off: %s\n", result_text(r));
    if (policy != MF_GPU_ALL)
        return CUPTI_SUCCESS;
    enable_extra_kind(CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE");
    if (mf_config_get()->profile_device)
        for (size_t i = 0; i < sizeof device_kinds / sizeof device_kinds[0]; i++)
            enable_extra_kind(device_kinds[i], "kernel/copy/set");
    return CUPTI_SUCCESS;
}

/* ---- start -------------------------------------------------------------- */

/* The one subscriber; *holder names the tool that has it when another does. */
static CUptiResult subscribe(char *holder, size_t holder_len)
{
    CUpti_SubscriberParams params = { 0 };
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "memflow";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = holder_len;
    return cuptiSubscribe_v2(&subscriber, mf_gpu_api_callback, NULL, &params);
}

/* After subscribing: a failure hands CUPTI back to whoever wants it. */
static int give_up(const char *call, CUptiResult result)
{
    cuptiUnsubscribe(subscriber);
    return capture_off(call, result);
}

static int start_capture(void)
{
    unsigned policy = check_version();
    if (policy == MF_GPU_NONE)
        return 0;
    char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
    CUptiResult r = subscribe(holder, sizeof holder);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
        return capture_busy(r, holder);
    if (r != CUPTI_SUCCESS)
        return capture_off("cuptiSubscribe_v2", r);
    r = mf_gpu_api_enable(subscriber);
    if (r != CUPTI_SUCCESS)
        fprintf(stderr, "memflow: some GPU API callbacks are off: %s; blocks they make are "
                "recorded as <unk>:\n", result_text(r));
    r = cuptiActivityRegisterTimestampCallback(mf_gpu_timestamp);
    if (r != CUPTI_SUCCESS)
        return give_up("cuptiActivityRegisterTimestampCallback", r);
    r = cuptiActivityRegisterCallbacks(mf_gpu_buffer_requested, mf_gpu_buffer_completed);
    if (r != CUPTI_SUCCESS)
        return give_up("cuptiActivityRegisterCallbacks", r);
    const char *call = "";
    r = enable_activity(policy, &call);
    if (r != CUPTI_SUCCESS)
        return give_up(call, r);
    mf_recorder_add_flush_hook(mf_gpu_flush);
    /* CUPTI registered its own exit handlers while we enabled it; ours runs
     * before them (atexit is last-in first-out), while CUPTI still works. */
    atexit(mf_gpu_flush_at_exit);
    mf_cuda_plugin_started(1);
    return 0;
}

MF_EXPORT int memflow_gpu_start(void)
{
    if (__atomic_exchange_n(&start_done, 1, __ATOMIC_SEQ_CST))
        return 0;
    MF_INTERNAL_BEGIN();
    mf_cuda_plugin_started(0);
    /* GPU snapshots are taken at the API's exit (sampler.c), never by the
     * recorder on CUPTI's thread. */
    mf_recorder_sample_at_source(MF_DEVICE_GPU);
    int rc = mf_config_get()->cupti ? start_capture() : capture_left();
    MF_INTERNAL_END();
    return rc;
}

MF_EXPORT int memflow_gpu_active(void)
{
    return mf_cuda_capture_on();
}
