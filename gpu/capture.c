/*
 * capture.c - turns CUPTI on and connects it to the recorder.
 *
 * memflow_gpu_start() registers, in this order: the timestamp callback (so
 * CUPTI stamps every record with mf_clock_now, the CPU events' clock), the
 * activity buffer callbacks, the activity kinds, and the runtime/driver API
 * callbacks of the allocation functions (scope correlation).  Buffers are
 * mmap'd, never malloc'd, so they never appear as the program's memory.
 * CUPTI returns filled buffers on its own thread (or on the thread that
 * calls cuptiActivityFlushAll); mf_gpu_buffer_completed() translates them
 * (translate.c), reports dropped records and unmaps them.  The recorder's
 * flush hook (memflow_dump() and exit) and an exit handler of our own
 * (which runs before CUPTI's) flush CUPTI so nothing is left in its buffers
 * when the log is closed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "config.h"
#include "cuda_seen.h"
#include "gpu.h"

static int start_done;
static int active;

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

/* The flush hook: make CUPTI hand back every buffer before the log closes. */
static void flush_activity(void)
{
    if (active)
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

/* ---- scope correlation -------------------------------------------------- */

static const CUpti_CallbackId runtime_alloc_apis[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3DArray_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocMipmappedArray_v5000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
};

static const CUpti_CallbackId driver_alloc_apis[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc,
    CUPTI_DRIVER_TRACE_CBID_cu64MemAlloc,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch,
    CUPTI_DRIVER_TRACE_CBID_cu64MemAllocPitch,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
    CUPTI_DRIVER_TRACE_CBID_cu64MemHostAlloc,
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int in_list(const CUpti_CallbackId *list, size_t n, CUpti_CallbackId cbid)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == cbid)
            return 1;
    return 0;
}

int mf_gpu_is_alloc_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        return in_list(runtime_alloc_apis, COUNT(runtime_alloc_apis), cbid);
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
        return in_list(driver_alloc_apis, COUNT(driver_alloc_apis), cbid);
    return 0;
}

void CUPTIAPI mf_gpu_api_callback(void *userdata, CUpti_CallbackDomain domain,
                                  CUpti_CallbackId cbid, const void *cbdata)
{
    (void)userdata;
    const CUpti_CallbackData *data = cbdata;
    if (!data || data->callbackSite != CUPTI_API_ENTER || !mf_gpu_is_alloc_api(domain, cbid))
        return;
    MF_INTERNAL_BEGIN();
    mf_gpu_origin origin = { mf_recorder_current_scope(), mf_recorder_thread_id() };
    mf_gpu_correlation_put(data->correlationId, origin);
    if (data->context)
        mf_gpu_context_put(data->contextUid, data->context);
    MF_INTERNAL_END();
}

/* ---- start -------------------------------------------------------------- */

/* Say once why GPU capture is off; CPU capture goes on. */
static int capture_off(const char *call, CUptiResult result)
{
    const char *text = "unknown CUPTI error";
    cuptiGetResultString(result, &text);
    fprintf(stderr, "memflow: GPU capture is off: %s (%s failed; no usable CUDA driver or GPU?)"
            "; CPU capture goes on\n", text, call);
    if (mf_recorder_log_open())
        mf_recorder_note(MF_NOTE_GPU_OFF, (uint64_t)result);
    return 0;
}

/* Enable a kind capture can do without; say so if CUPTI refuses. */
static void enable_extra_kind(CUpti_ActivityKind kind, const char *what)
{
    CUptiResult r = cuptiActivityEnable(kind);
    if (r == CUPTI_SUCCESS)
        return;
    const char *text = "unknown CUPTI error";
    cuptiGetResultString(r, &text);
    fprintf(stderr, "memflow: GPU %s records (activity kind %d) are off: %s\n", what,
            (int)kind, text);
}

/*
 * Enable the activity kinds.  MEMORY2 is the one capture cannot do without:
 * its failure turns capture off (returned).  The others (MEMORY_POOL, and
 * under profile_device the kernels, copies and sets) are extras: a failure
 * costs that kind only, with one stderr line.
 */
static CUptiResult enable_activity(const char **call)
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
    if (mf_config_get()->profile_device)
        for (size_t i = 0; i < sizeof device_kinds / sizeof device_kinds[0]; i++)
            enable_extra_kind(device_kinds[i], "kernel/copy/set");
    return CUPTI_SUCCESS;
}

static CUptiResult enable_list(CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain,
                               const CUpti_CallbackId *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        CUptiResult r = cuptiEnableCallback(1, subscriber, domain, list[i]);
        if (r != CUPTI_SUCCESS)
            return r;
    }
    return CUPTI_SUCCESS;
}

/*
 * Subscribe to the allocation API callbacks.  Failure (another tool already
 * subscribed) costs only the scopes: GPU blocks are still recorded, as
 * "<unk>:", and one stderr line says so.
 */
static void subscribe_alloc_apis(void)
{
    static CUpti_SubscriberHandle subscriber;
    CUptiResult r = cuptiSubscribe(&subscriber, mf_gpu_api_callback, NULL);
    if (r == CUPTI_SUCCESS)
        r = enable_list(subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_alloc_apis,
                        COUNT(runtime_alloc_apis));
    if (r == CUPTI_SUCCESS)
        r = enable_list(subscriber, CUPTI_CB_DOMAIN_DRIVER_API, driver_alloc_apis,
                        COUNT(driver_alloc_apis));
    if (r != CUPTI_SUCCESS) {
        const char *text = "unknown CUPTI error";
        cuptiGetResultString(r, &text);
        fprintf(stderr, "memflow: GPU scopes are off: %s (cuptiSubscribe/cuptiEnableCallback); "
                "GPU blocks are recorded as <unk>:\n", text);
    }
}

static int start_capture(void)
{
    const char *call = "cuptiActivityRegisterTimestampCallback";
    CUptiResult r = cuptiActivityRegisterTimestampCallback(mf_gpu_timestamp);
    if (r == CUPTI_SUCCESS) {
        call = "cuptiActivityRegisterCallbacks";
        r = cuptiActivityRegisterCallbacks(mf_gpu_buffer_requested, mf_gpu_buffer_completed);
    }
    if (r == CUPTI_SUCCESS)
        r = enable_activity(&call);
    if (r != CUPTI_SUCCESS)
        return capture_off(call, r);
    subscribe_alloc_apis();
    mf_recorder_set_sampler(MF_DEVICE_GPU, mf_gpu_sample);
    mf_recorder_add_flush_hook(flush_activity);
    /* CUPTI registered its own exit handlers while we enabled it; ours runs
     * before them (atexit is last-in first-out), while CUPTI still works. */
    atexit(flush_activity);
    active = 1;
    return 0;
}

MF_EXPORT int memflow_gpu_start(void)
{
    if (__atomic_exchange_n(&start_done, 1, __ATOMIC_SEQ_CST))
        return 0;
    MF_INTERNAL_BEGIN();
    mf_cuda_plugin_started();
    int rc = start_capture();
    MF_INTERNAL_END();
    return rc;
}

MF_EXPORT int memflow_gpu_active(void)
{
    return active;
}
