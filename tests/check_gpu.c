/*
 * check_gpu.c - GPU capture proven without a GPU.
 *
 * Real CUPTI record structs from CUPTI's own headers (CUpti_ActivityMemory4,
 * CUpti_ActivityMemoryPool3, CUpti_ActivityKernel10, CUpti_ActivityMemcpy6,
 * CUpti_ActivityMemcpyPtoP4, CUpti_ActivityMemset4,
 * CUpti_ActivityExternalCorrelation) are packed into a buffer the way CUPTI
 * lays one out (back to back, each 8-byte aligned) and handed to
 * mf_gpu_process_buffer(), the function production's buffer-completed
 * callback calls, on a second thread as CUPTI would.  The scope correlation
 * is set up through mf_gpu_api_callback(), the function production
 * subscribes, called with synthetic CUpti_CallbackData.  The recorder writes
 * a real log into tests/out/check_gpu/; the log is read back with
 * mf_log_read and the events are checked field by field, and the MXNet GPU
 * memory CSV of the synthetic blocks is compared byte for byte.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"
#include "memflow.h"
#include "csv.h"
#include "gpu.h"
#include "gpu_test_log.h"
#include "log_in_memory.h"
#include "model.h"

/* ---- log set-up --------------------------------------------------------- */

static void start_log(const char *name, const char *sample_rate)
{
    gpu_test_start_log("check_gpu", name, sample_rate);
}

/* The i-th event of the given type (and device kind, -1 for any). */
static const mf_event *nth_event(const mf_log *log, unsigned type, int device_kind, size_t i)
{
    for (size_t k = 0; k < log->n_events; k++) {
        const mf_event *e = &log->events[k];
        if (e->type != type)
            continue;
        if (device_kind >= 0 && MF_DEVICE_KIND(e->device) != (unsigned)device_kind)
            continue;
        if (i-- == 0)
            return e;
    }
    return NULL;
}

static size_t count_events(const mf_log *log, unsigned type, int device_kind)
{
    size_t n = 0;
    for (size_t k = 0; k < log->n_events; k++) {
        const mf_event *e = &log->events[k];
        n += e->type == type &&
             (device_kind < 0 || MF_DEVICE_KIND(e->device) == (unsigned)device_kind);
    }
    return n;
}

/* ---- CUPTI-shaped buffers ----------------------------------------------- */

typedef struct record_buffer {
    uint8_t *bytes;
    size_t used;
    size_t size;
} record_buffer;

static record_buffer buffer_of(size_t size)
{
    record_buffer b = { aligned_alloc(8, size), 0, size };
    ck_assert_ptr_nonnull(b.bytes);
    memset(b.bytes, 0, b.size);
    return b;
}

static record_buffer buffer_new(void)
{
    return buffer_of(65536);
}

/* Append one record, 8-byte aligned as CUPTI stores them. */
static void buffer_add(record_buffer *b, const void *record, size_t size)
{
    size_t aligned = (size + 7) & ~(size_t)7;
    ck_assert_uint_le(b->used + aligned, b->size);
    memcpy(b->bytes + b->used, record, size);
    b->used += aligned;
}

static CUpti_ActivityMemory4 memory_record(unsigned op, unsigned memory_kind, unsigned pool_type,
                                           uint32_t device, uint32_t correlation,
                                           uint64_t address, uint64_t bytes, uint64_t timestamp,
                                           uint32_t is_async, uint32_t context_id)
{
    CUpti_ActivityMemory4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = op;
    m.memoryKind = memory_kind;
    m.correlationId = correlation;
    m.address = address;
    m.bytes = bytes;
    m.timestamp = timestamp;
    m.processId = (uint32_t)getpid();
    m.deviceId = device;
    m.contextId = context_id;
    m.streamId = is_async ? 13 : 0xffffffffu;
    m.isAsync = is_async;
    m.memoryPoolConfig.memoryPoolType = pool_type;
    return m;
}

static void add_memory(record_buffer *b, unsigned op, unsigned memory_kind, unsigned pool_type,
                       uint32_t device, uint32_t correlation, uint64_t address, uint64_t bytes,
                       uint64_t timestamp, uint32_t is_async, uint32_t context_id)
{
    CUpti_ActivityMemory4 m = memory_record(op, memory_kind, pool_type, device, correlation,
                                            address, bytes, timestamp, is_async, context_id);
    buffer_add(b, &m, sizeof m);
}

static void add_alloc(record_buffer *b, unsigned memory_kind, uint32_t device, uint32_t corr,
                      uint64_t address, uint64_t bytes, uint64_t timestamp)
{
    add_memory(b, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, memory_kind,
               CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID, device, corr, address, bytes, timestamp,
               0, 1);
}

static void add_release(record_buffer *b, unsigned memory_kind, uint32_t device,
                        uint64_t address, uint64_t bytes, uint64_t timestamp)
{
    add_memory(b, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, memory_kind,
               CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID, device, 0, address, bytes, timestamp,
               0, 1);
}

/* Hand the buffer to production's processing function on another thread. */
typedef struct process_job {
    record_buffer *buffer;
    size_t walked;
    uint32_t tid;
} process_job;

static void *process_thread(void *arg)
{
    process_job *job = arg;
    job->tid = (uint32_t)syscall(SYS_gettid);
    job->walked = mf_gpu_process_buffer(job->buffer->bytes, job->buffer->used);
    return NULL;
}

static process_job process_on_cupti_thread(record_buffer *b)
{
    process_job job = { b, 0, 0 };
    pthread_t thread;
    ck_assert_int_eq(pthread_create(&thread, NULL, process_thread, &job), 0);
    ck_assert_int_eq(pthread_join(thread, NULL), 0);
    return job;
}

/* ---- CUDA API calls as CUPTI reports them ------------------------------- */

#define RT CUPTI_CB_DOMAIN_RUNTIME_API
#define DRV CUPTI_CB_DOMAIN_DRIVER_API

/* One callback site of a CUDA function, on this thread: params is the
 * function's generated parameter struct, result its return value. */
static void api_site(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                     CUpti_ApiCallbackSite site, uint32_t correlation, const void *params,
                     int result)
{
    CUpti_CallbackData data;
    memset(&data, 0, sizeof data);
    data.callbackSite = site;
    data.functionName = "synthetic";
    data.functionParams = params;
    data.functionReturnValue = site == CUPTI_API_EXIT ? &result : NULL;
    data.correlationId = correlation;
    data.context = NULL; /* no driver here: CUPTI names no device (gpu/0) */
    mf_gpu_api_callback(NULL, domain, cbid, &data);
}

/* A whole call: ENTER, then EXIT with its result. */
static void api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, uint32_t correlation,
                     const void *params, int result)
{
    api_site(domain, cbid, CUPTI_API_ENTER, correlation, params, 0);
    api_site(domain, cbid, CUPTI_API_EXIT, correlation, params, result);
}

/* cudaMalloc returning addr, its driver call (cuMemAlloc_v2) nested inside,
 * as the runtime makes it: ENTER, driver ENTER/EXIT, EXIT. */
static void cuda_malloc(uint64_t addr, uint32_t correlation)
{
    void *out = (void *)(uintptr_t)addr;
    CUdeviceptr dptr = addr;
    cudaMalloc_v3020_params p = { &out, 4096 };
    cuMemAlloc_v2_params d = { &dptr, 4096 };
    api_site(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_API_ENTER, correlation, &p, 0);
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, correlation + 1, &d, CUDA_SUCCESS);
    api_site(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_API_EXIT, correlation, &p,
             cudaSuccess);
}

static void cuda_free(uint64_t addr, uint32_t correlation)
{
    cudaFree_v3020_params p = { (void *)(uintptr_t)addr };
    api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, correlation, &p, cudaSuccess);
}

static uint32_t my_tid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

static int count_lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

/* ---- tests -------------------------------------------------------------- */

#define GPU_FLAGS(kind, extra) ((uint16_t)(((kind) << MF_MEMKIND_SHIFT) | (extra)))

/*
 * Six allocations of every memory kind, two of them untagged, and two
 * releases: devices, addresses, sizes, kinds, async flag, scopes, threads.
 * Each call is made the way the runtime and driver report it (cudaMalloc
 * with its nested cuMemAlloc_v2, cudaMallocAsync, cuMemHostAlloc_v2,
 * cuMemAllocManaged); a failed call and a copy tag nothing.
 */
START_TEST(memory2_records_become_alloc_and_free_events)
{
    start_log("memory2", NULL);
    uint64_t t0 = mf_clock_now();
    memflow_scope_push("net_dense0", 0);
    cuda_malloc(0x7f0000000000ull, 101);
    memflow_scope_pop();
    memflow_scope_push("net_dense1", 0);
    void *async_out = (void *)0x7f1000000000ull;
    cudaMallocAsync_v11020_params async = { &async_out, 8192, NULL };
    api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, 103, &async, cudaSuccess);
    memflow_scope_push("pinned<\"&>", 1);
    void *host_out = (void *)0x7f2000000000ull;
    cuMemHostAlloc_params host = { &host_out, 4096, 0 };
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2, 104, &host, CUDA_SUCCESS);
    memflow_scope_pop();
    CUdeviceptr managed_out = 0x7f3000000000ull;
    cuMemAllocManaged_params managed = { &managed_out, 1 << 20, 1 };
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, 105, &managed, CUDA_SUCCESS);
    /* a call that failed, and a copy: neither tags a block */
    void *failed_out = (void *)0x7f4000000000ull;
    cudaMalloc_v3020_params failed = { &failed_out, 256 };
    api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 106, &failed,
             cudaErrorMemoryAllocation);
    cudaMemcpy_v3020_params copy = { (void *)0x7f5000000000ull, NULL, 512, cudaMemcpyHostToDevice };
    api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 107, &copy, cudaSuccess);
    memflow_scope_pop();
    ck_assert_uint_eq(mf_gpu_origins_pending(), 4);

    record_buffer b = buffer_new();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 101, 0x7f0000000000ull, 5120, t0 + 1000);
    add_memory(&b, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
               CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL, 1, 103,
               0x7f1000000000ull, 8192, t0 + 2000, 1, 1);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 0, 104, 0x7f2000000000ull, 4096, t0 + 3000);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, 0, 105, 0x7f3000000000ull, 1 << 20,
              t0 + 4000);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 2, 106, 0x7f4000000000ull, 256, t0 + 5000);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 107, 0x7f5000000000ull, 512, t0 + 6000);
    add_release(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0x7f0000000000ull, 5120, t0 + 7000);
    add_memory(&b, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
               CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL, 1, 0,
               0x7f1000000000ull, 8192, t0 + 8000, 1, 1);
    process_job job = process_on_cupti_thread(&b);
    ck_assert_uint_eq(job.walked, 8);
    ck_assert_uint_eq(mf_gpu_origins_pending(), 0);
    mf_log *log = gpu_test_finish_and_read();

    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_GPU), 6);
    ck_assert_uint_eq(count_events(log, MF_REC_FREE, MF_DEVICE_GPU), 2);
    ck_assert_uint_eq(count_events(log, MF_REC_OOM, -1), 1);   /* the failed cudaMalloc */
    ck_assert_uint_eq(nth_event(log, MF_REC_OOM, -1, 0)->oom.requested, 256);
    struct {
        uint16_t device;
        uint16_t flags;
        uint64_t addr, size, time;
        const char *scope;
        uint32_t tid;
    } want[] = {
        { MF_DEVICE(1, 0), GPU_FLAGS(MF_MEM_DEVICE, 0), 0x7f0000000000ull, 5120, t0 + 1000,
          "net_dense0:", my_tid() },
        { MF_DEVICE(1, 1), GPU_FLAGS(MF_MEM_POOL, MF_FLAG_ASYNC), 0x7f1000000000ull, 8192,
          t0 + 2000, "net_dense1:", my_tid() },
        { MF_DEVICE(1, 0), GPU_FLAGS(MF_MEM_PINNED, 0), 0x7f2000000000ull, 4096, t0 + 3000,
          "net_dense1:pinned<\"&>:", my_tid() },
        { MF_DEVICE(1, 0), GPU_FLAGS(MF_MEM_MANAGED, 0), 0x7f3000000000ull, 1 << 20, t0 + 4000,
          "net_dense1:", my_tid() },
        { MF_DEVICE(1, 2), GPU_FLAGS(MF_MEM_DEVICE, 0), 0x7f4000000000ull, 256, t0 + 5000,
          "<unk>:", job.tid },
        { MF_DEVICE(1, 0), GPU_FLAGS(MF_MEM_DEVICE, 0), 0x7f5000000000ull, 512, t0 + 6000,
          "<unk>:", job.tid },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const mf_event *e = nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, i);
        ck_assert_ptr_nonnull(e);
        ck_assert_uint_eq(e->device, want[i].device);
        ck_assert_uint_eq(e->alloc.flags, want[i].flags);
        ck_assert_uint_eq(e->alloc.addr, want[i].addr);
        ck_assert_uint_eq(e->alloc.requested, want[i].size);
        ck_assert_uint_eq(e->alloc.actual, want[i].size);
        ck_assert_uint_eq(e->time_ns, want[i].time);
        ck_assert_str_eq(mf_log_string(log, e->alloc.scope), want[i].scope);
        ck_assert_uint_eq(e->alloc.name, MF_STRING_UNKNOWN);
        ck_assert_uint_eq(e->tid, want[i].tid);
    }
    const mf_event *f0 = nth_event(log, MF_REC_FREE, MF_DEVICE_GPU, 0);
    ck_assert_uint_eq(f0->device, MF_DEVICE(1, 0));
    ck_assert_uint_eq(f0->free.addr, 0x7f0000000000ull);
    ck_assert_uint_eq(f0->time_ns, t0 + 7000);
    ck_assert_uint_eq(f0->free.flags, GPU_FLAGS(MF_MEM_DEVICE, 0));
    const mf_event *f1 = nth_event(log, MF_REC_FREE, MF_DEVICE_GPU, 1);
    ck_assert_uint_eq(f1->device, MF_DEVICE(1, 1));
    ck_assert_uint_eq(f1->free.addr, 0x7f1000000000ull);
    ck_assert_uint_eq(f1->time_ns, t0 + 8000);
    ck_assert_uint_eq(f1->free.flags, GPU_FLAGS(MF_MEM_POOL, MF_FLAG_ASYNC));
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

/* MEMORY_POOL created / trimmed / destroyed -> POOL events. */
static int query_oom(uint64_t *used, uint64_t *total)
{
    *used = 70ull << 30;
    *total = 80ull << 30;
    return 0;
}

/*
 * The CUDA API route of the OOM post-mortem: an allocation call that fails
 * for want of memory is an OOM record (what it asked for, what the device
 * had, the caller's scope), once for a runtime call and its nested driver
 * call; a cuMemCreate that fails is one on the device it was for; other
 * failures are none.
 */
START_TEST(failed_allocations_are_out_of_memory_records)
{
    start_log("oom", NULL);
    mf_gpu_sampler_set_query(query_oom);
    memflow_scope_push("net_dense0", 0);
    void *out = NULL;
    CUdeviceptr dptr = 0;
    cudaMalloc_v3020_params p = { &out, 256u << 20 };
    cuMemAlloc_v2_params d = { &dptr, 256u << 20 };
    uint64_t before = mf_clock_now();
    api_site(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_API_ENTER, 301, &p, 0);
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 302, &d, CUDA_ERROR_OUT_OF_MEMORY);
    api_site(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_API_EXIT, 301, &p,
             cudaErrorMemoryAllocation);
    uint64_t after = mf_clock_now();
    memflow_scope_pop();
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 1;
    CUmemGenericAllocationHandle h = 0;
    cuMemCreate_params c = { &h, 2u << 20, &prop, 0 };
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, 303, &c, CUDA_ERROR_OUT_OF_MEMORY);
    cudaMalloc_v3020_params bad = { &out, 64 };
    api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 304, &bad, cudaErrorInvalidValue);
    mf_gpu_sampler_set_query(NULL);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_OOM, -1), 2);
    const mf_event *o = nth_event(log, MF_REC_OOM, -1, 0);
    ck_assert_uint_eq(o->device, MF_DEVICE(MF_DEVICE_GPU, 0));
    ck_assert_uint_eq(o->oom.route, MF_OOM_CUDA_API);
    ck_assert_uint_eq(o->oom.requested, 256u << 20);
    ck_assert_uint_eq(o->oom.device_free, 10ull << 30);
    ck_assert_uint_eq(o->oom.device_limit, 80ull << 30);
    ck_assert_str_eq(mf_log_string(log, o->oom.scope), "net_dense0:");
    ck_assert_uint_eq(o->oom.stack, 0);
    ck_assert(o->time_ns >= before && o->time_ns <= after);
    o = nth_event(log, MF_REC_OOM, -1, 1);
    ck_assert_uint_eq(o->device, MF_DEVICE(MF_DEVICE_GPU, 1));
    ck_assert_uint_eq(o->oom.requested, 2u << 20);
    ck_assert_str_eq(mf_log_string(log, o->oom.scope), "<unk>:");
    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, -1), 0);
    mf_log_free(log);
}
END_TEST

START_TEST(memory_pool_records_become_pool_events)
{
    start_log("pool", NULL);
    uint64_t t0 = mf_clock_now();
    static const unsigned ops[] = { CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED,
                                    CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED,
                                    CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED };
    static const unsigned want_ops[] = { MF_POOL_CREATED, MF_POOL_TRIMMED, MF_POOL_DESTROYED };
    record_buffer b = buffer_new();
    for (unsigned i = 0; i < 3; i++) {
        CUpti_ActivityMemoryPool3 p;
        memset(&p, 0, sizeof p);
        p.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
        p.memoryPoolOperationType = ops[i];
        p.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
        p.correlationId = 200 + i;
        p.deviceId = 3;
        p.address = 0x7e0000000000ull;
        p.size = (uint64_t)(32 - 8 * i) << 20;
        p.releaseThreshold = 1 << 20;
        p.timestamp = t0 + 100 * (i + 1);
        buffer_add(&b, &p, sizeof p);
    }
    ck_assert_uint_eq(process_on_cupti_thread(&b).walked, 3);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_POOL, -1), 3);
    for (unsigned i = 0; i < 3; i++) {
        const mf_event *e = nth_event(log, MF_REC_POOL, -1, i);
        ck_assert_uint_eq(e->device, MF_DEVICE(MF_DEVICE_GPU, 3));
        ck_assert_uint_eq(e->pool.op, want_ops[i]);
        ck_assert_uint_eq(e->pool.addr, 0x7e0000000000ull);
        ck_assert_uint_eq(e->pool.size, (uint64_t)(32 - 8 * i) << 20);
        ck_assert_uint_eq(e->pool.threshold, 1 << 20);
        ck_assert_uint_eq(e->time_ns, t0 + 100 * (i + 1));
    }
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

/*
 * Kernels (one named with odd bytes, one mangled C++ symbol that comes out
 * demangled), copies and sets -> ACTIVITY events with names and streams.
 */
START_TEST(kernel_memcpy_memset_records_become_activities)
{
    start_log("activity", NULL);
    uint64_t t0 = mf_clock_now();
    record_buffer b = buffer_new();
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = t0 + 10;
    k.end = t0 + 510;
    k.deviceId = 0;
    k.streamId = 7;
    k.correlationId = 301;
    k.name = "gemm<\"&>\n\xff";
    buffer_add(&b, &k, sizeof k);
    k.name = "_Z13dense_forwardPKfS0_S0_Pfii";
    k.start = t0 + 520;
    k.end = t0 + 590;
    k.correlationId = 305;
    buffer_add(&b, &k, sizeof k);
    CUpti_ActivityMemcpy6 c;
    memset(&c, 0, sizeof c);
    c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    c.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    c.bytes = 4096;
    c.start = t0 + 600;
    c.end = t0 + 700;
    c.deviceId = 1;
    c.streamId = 8;
    c.correlationId = 302;
    buffer_add(&b, &c, sizeof c);
    CUpti_ActivityMemcpyPtoP4 p;
    memset(&p, 0, sizeof p);
    p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    p.bytes = 1 << 16;
    p.start = t0 + 800;
    p.end = t0 + 900;
    p.deviceId = 0;
    p.streamId = 9;
    p.correlationId = 303;
    buffer_add(&b, &p, sizeof p);
    CUpti_ActivityMemset4 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.bytes = 256;
    s.start = t0 + 1000;
    s.end = t0 + 1050;
    s.deviceId = 1;
    s.streamId = 10;
    s.correlationId = 304;
    buffer_add(&b, &s, sizeof s);
    ck_assert_uint_eq(process_on_cupti_thread(&b).walked, 5);
    mf_log *log = gpu_test_finish_and_read();

    ck_assert_uint_eq(count_events(log, MF_REC_ACTIVITY, -1), 5);
    struct {
        uint16_t device, kind;
        uint64_t start, end, bytes;
        uint32_t stream;
        const char *name;
        uint64_t correlation;
    } want[] = {
        { MF_DEVICE(1, 0), MF_ACT_KERNEL, t0 + 10, t0 + 510, 0, 7, "gemm<\"&>\n\xff", 301 },
        { MF_DEVICE(1, 0), MF_ACT_KERNEL, t0 + 520, t0 + 590, 0, 7,
          "dense_forward(float const*, float const*, float const*, float*, int, int)", 305 },
        { MF_DEVICE(1, 1), MF_ACT_MEMCPY, t0 + 600, t0 + 700, 4096, 8, "HtoD", 302 },
        { MF_DEVICE(1, 0), MF_ACT_MEMCPY, t0 + 800, t0 + 900, 1 << 16, 9, "PtoP", 303 },
        { MF_DEVICE(1, 1), MF_ACT_MEMSET, t0 + 1000, t0 + 1050, 256, 10, "memset", 304 },
    };
    for (size_t i = 0; i < 5; i++) {
        const mf_event *e = nth_event(log, MF_REC_ACTIVITY, -1, i);
        ck_assert_uint_eq(e->device, want[i].device);
        ck_assert_uint_eq(e->activity.kind, want[i].kind);
        ck_assert_uint_eq(e->time_ns, want[i].start);
        ck_assert_uint_eq(e->activity.end_ns, want[i].end);
        ck_assert_uint_eq(e->activity.bytes, want[i].bytes);
        ck_assert_uint_eq(e->activity.stream, want[i].stream);
        ck_assert_str_eq(mf_log_string(log, e->activity.name), want[i].name);
        ck_assert_uint_eq(e->activity.correlation, want[i].correlation);
    }
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

/* An EXTERNAL_CORRELATION record is walked over, the records around it kept. */
START_TEST(external_correlation_record_is_skipped)
{
    start_log("external", NULL);
    uint64_t t0 = mf_clock_now();
    record_buffer b = buffer_new();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0, 0x1000, 64, t0 + 1);
    CUpti_ActivityExternalCorrelation x;
    memset(&x, 0, sizeof x);
    x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    x.externalId = 0xfeedull;
    x.correlationId = 400;
    buffer_add(&b, &x, sizeof x);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 400, 0x2000, 128, t0 + 2);
    ck_assert_uint_eq(process_on_cupti_thread(&b).walked, 3);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_GPU), 2);
    ck_assert_uint_eq(nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, 0)->alloc.addr, 0x1000);
    ck_assert_uint_eq(nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, 1)->alloc.addr, 0x2000);
    ck_assert_uint_eq(nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, 1)->alloc.requested, 128);
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

static void sleep_a_little(void)
{
    struct timespec ts = { 0, 20000 };
    nanosleep(&ts, NULL);
}

/*
 * One clock: a GPU record stamped by the timestamp callback that production
 * registers with CUPTI lands between the CPU events recorded before and
 * after it, with its timestamp unchanged.
 */
START_TEST(gpu_timestamp_orders_with_cpu_events)
{
    start_log("clock", NULL);
    static char before[16], after[16];
    ck_assert_int_eq(memflow_record_alloc("cpu/0", before, 16, 16, "before", 0), 0);
    sleep_a_little();
    uint64_t gpu_time = mf_gpu_timestamp();
    sleep_a_little();
    ck_assert_int_eq(memflow_record_alloc("cpu/0", after, 16, 16, "after", 0), 0);
    record_buffer b = buffer_new();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0, 0xd000, 1000, gpu_time);
    process_on_cupti_thread(&b);
    mf_log *log = gpu_test_finish_and_read();

    const mf_event *seen[3];
    int n = 0;
    for (size_t k = 0; k < log->n_events && n < 3; k++)
        if (log->events[k].type == MF_REC_ALLOC)
            seen[n++] = &log->events[k];
    ck_assert_int_eq(n, 3);
    ck_assert_uint_eq(seen[0]->alloc.addr, (uintptr_t)before);
    ck_assert_uint_eq(seen[1]->alloc.addr, 0xd000);
    ck_assert_uint_eq(seen[1]->device, MF_DEVICE(MF_DEVICE_GPU, 0));
    ck_assert_uint_eq(seen[1]->time_ns, gpu_time);
    ck_assert_uint_eq(seen[2]->alloc.addr, (uintptr_t)after);
    ck_assert_uint_lt(seen[0]->time_ns, gpu_time);
    ck_assert_uint_gt(seen[2]->time_ns, gpu_time);
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

static void note_dropped_17(void *arg)
{
    (void)arg;
    mf_gpu_note_dropped(0);
    mf_gpu_note_dropped(17);
}

/* Dropped records: one NOTE with the count, one stderr line; 0 is silent. */
START_TEST(dropped_records_are_noted)
{
    start_log("dropped", NULL);
    const char *err = gpu_test_capture_stderr(note_dropped_17, NULL);
    ck_assert_str_eq(err, "memflow: CUPTI dropped 17 GPU activity records (buffers full); "
                          "GPU memory in the log is incomplete\n");
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_NOTE, -1), 1);
    const mf_event *e = nth_event(log, MF_REC_NOTE, -1, 0);
    ck_assert_uint_eq(e->note.code, MF_NOTE_GPU_DROPPED);
    ck_assert_uint_eq(e->note.value, 17);
    mf_log_free(log);
}
END_TEST

/* What the driver would answer: distinct numbers, and on which thread it
 * was asked.  This machine has no driver; the real query is cuMemGetInfo in
 * the calling thread's current context. */
static uint32_t query_tids[8];
static int queries;

static int query_on_this_thread(uint64_t *used, uint64_t *total)
{
    if (queries < 8)
        query_tids[queries] = my_tid();
    queries++;
    *used = 1000u * (uint64_t)queries;
    *total = 80ull << 30;
    return 0;
}

static void start_gpu_quietly(void *arg)
{
    (void)arg;
    memflow_gpu_start(); /* says once that CUPTI is off here; sets sampling at the source */
}

typedef struct program_thread {
    uint32_t tid;
    uint64_t exit_after[4]; /* mf_clock_now after each call returned */
} program_thread;

/* The program: two cudaMalloc, two cudaFree, in a thread of its own. */
static void *malloc_and_free_thread(void *arg)
{
    program_thread *p = arg;
    p->tid = my_tid();
    memflow_scope_push("step", 0);
    cuda_malloc(0xa0000, 11);
    p->exit_after[0] = mf_clock_now();
    cuda_malloc(0xb0000, 13);
    p->exit_after[1] = mf_clock_now();
    cuda_free(0xa0000, 15);
    p->exit_after[2] = mf_clock_now();
    cuda_free(0xb0000, 16);
    p->exit_after[3] = mf_clock_now();
    memflow_scope_pop();
    return NULL;
}

/*
 * sample_rate 2 on the GPU: every 2nd CUDA allocation or free takes a
 * snapshot at the API's exit, on the program's thread (where its context is
 * current), and the SAMPLE carries the time of the event's own record -
 * not the moment CUPTI delivered it, on its own thread without a context.
 */
START_TEST(gpu_snapshot_at_api_exit_stamped_with_the_event)
{
    start_log("sample", "2");
    gpu_test_capture_stderr(start_gpu_quietly, NULL);
    mf_gpu_sampler_set_query(query_on_this_thread);
    program_thread program = { 0, { 0 } };
    pthread_t thread;
    ck_assert_int_eq(pthread_create(&thread, NULL, malloc_and_free_thread, &program), 0);
    ck_assert_int_eq(pthread_join(thread, NULL), 0);
    ck_assert_int_eq(queries, 2);
    ck_assert_uint_eq(query_tids[0], program.tid);
    ck_assert_uint_eq(query_tids[1], program.tid);
    /* the records, stamped inside their calls, come back later */
    uint64_t t_b = program.exit_after[1] - 1, t_free_b = program.exit_after[3] - 1;
    record_buffer b = buffer_new();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 11, 0xa0000, 100,
              program.exit_after[0] - 1);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 13, 0xb0000, 200, t_b);
    add_release(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0xa0000, 100,
                program.exit_after[2] - 1);
    add_release(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0xb0000, 200, t_free_b);
    sleep_a_little();
    process_job job = process_on_cupti_thread(&b);
    ck_assert_uint_eq(job.walked, 4);
    ck_assert_int_eq(queries, 2);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_SAMPLE, -1), 2);
    const mf_event *s0 = nth_event(log, MF_REC_SAMPLE, -1, 0);
    const mf_event *s1 = nth_event(log, MF_REC_SAMPLE, -1, 1);
    ck_assert_uint_eq(s0->device, MF_DEVICE(MF_DEVICE_GPU, 0));
    ck_assert_uint_eq(s0->time_ns, t_b);
    ck_assert_uint_eq(log->samples[s0->sample.index].value[MF_SAMPLE_GPU_USED], 1000);
    ck_assert_uint_eq(log->samples[s0->sample.index].value[MF_SAMPLE_GPU_TOTAL], 80ull << 30);
    ck_assert_uint_eq(s1->device, MF_DEVICE(MF_DEVICE_GPU, 0));
    ck_assert_uint_eq(s1->time_ns, t_free_b);
    ck_assert_uint_eq(log->samples[s1->sample.index].value[MF_SAMPLE_GPU_USED], 2000);
    ck_assert_str_eq(
        mf_log_string(log, nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, 1)->alloc.scope), "step:");
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

/* A record cut short at the end of the valid bytes is not translated. */
START_TEST(truncated_last_record_is_not_translated)
{
    start_log("truncated", NULL);
    uint64_t t0 = mf_clock_now();
    record_buffer b = buffer_new();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0, 0x1000, 64, t0 + 1);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0, 0x2000, 64, t0 + 2);
    b.used -= 64; /* half of the second record */
    ck_assert_uint_eq(process_on_cupti_thread(&b).walked, 1);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_GPU), 1);
    ck_assert_uint_eq(nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, 0)->alloc.addr, 0x1000);
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

#define CALLER_THREADS 4
#define CALLS_PER_THREAD 5000

typedef struct caller {
    int index;
    uint32_t tid;
} caller;

/* One program thread: its own scope, 5000 cudaMalloc calls. */
static void *caller_thread(void *arg)
{
    caller *c = arg;
    c->tid = my_tid();
    char scope[32];
    snprintf(scope, sizeof scope, "worker%d", c->index);
    memflow_scope_push(scope, 0);
    for (uint32_t i = 0; i < CALLS_PER_THREAD; i++) {
        uint32_t id = (uint32_t)c->index * CALLS_PER_THREAD + i + 1;
        cuda_malloc(0x100000000ull + 4096ull * id, 2 * id);
    }
    memflow_scope_pop();
    return NULL;
}

/*
 * Four program threads allocate at once, each in its own scope; 20000
 * MEMORY2 records (2.5 MB of buffer, more than one log chunk of events) come
 * back in one buffer: every block carries its own thread's scope and id.
 */
START_TEST(many_threads_keep_their_scopes)
{
    start_log("threads", NULL);
    caller callers[CALLER_THREADS];
    pthread_t threads[CALLER_THREADS];
    for (int k = 0; k < CALLER_THREADS; k++) {
        callers[k] = (caller){ k, 0 };
        ck_assert_int_eq(pthread_create(&threads[k], NULL, caller_thread, &callers[k]), 0);
    }
    for (int k = 0; k < CALLER_THREADS; k++)
        ck_assert_int_eq(pthread_join(threads[k], NULL), 0);
    const uint32_t total = CALLER_THREADS * CALLS_PER_THREAD;
    record_buffer b = buffer_of((size_t)total * sizeof(CUpti_ActivityMemory4));
    uint64_t t0 = mf_clock_now();
    for (uint32_t id = 1; id <= total; id++)
        add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, id, 0x100000000ull + 4096ull * id,
                  4096, t0 + id);
    ck_assert_uint_eq(process_on_cupti_thread(&b).walked, total);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_GPU), total);
    size_t seen = 0;
    for (size_t k = 0; k < log->n_events; k++) {
        const mf_event *e = &log->events[k];
        if (e->type != MF_REC_ALLOC || MF_DEVICE_KIND(e->device) != MF_DEVICE_GPU)
            continue;
        uint32_t id = (uint32_t)((e->alloc.addr - 0x100000000ull) / 4096);
        int who = (int)((id - 1) / CALLS_PER_THREAD);
        char want[32];
        snprintf(want, sizeof want, "worker%d:", who);
        ck_assert_uint_eq(e->time_ns, t0 + id);
        ck_assert_str_eq(mf_log_string(log, e->alloc.scope), want);
        ck_assert_uint_eq(e->tid, callers[who].tid);
        seen++;
    }
    ck_assert_uint_eq(seen, total);
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

/*
 * 100,000 tensor-sized allocations (PYTORCH_NO_CUDA_MEMORY_CACHING=1) are
 * made in 100 scopes, half through the runtime (cudaMalloc with its nested
 * driver call) and half straight through the driver, so correlation ids
 * run far past any table size; all their MEMORY2 records come back in one
 * buffer.  Every block keeps its scope and thread, and nothing is left
 * waiting.
 */
#define MANY_ALLOCATIONS 100000u

START_TEST(hundred_thousand_allocations_in_one_buffer_keep_their_scopes)
{
    start_log("many", NULL);
    uint32_t correlation = 1;
    for (uint32_t i = 0; i < MANY_ALLOCATIONS; i++) {
        char scope[16];
        snprintf(scope, sizeof scope, "layer%02u", i % 100);
        memflow_scope_push(scope, 0);
        uint64_t addr = 0x200000000ull + 512ull * i;
        if (i % 2 == 0) {
            cuda_malloc(addr, correlation);
            correlation += 2;
        } else {
            CUdeviceptr out = addr;
            cuMemAlloc_v2_params d = { &out, 512 };
            api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, correlation++, &d,
                     CUDA_SUCCESS);
        }
        memflow_scope_pop();
    }
    ck_assert_uint_gt(correlation, 2 * 65536);
    ck_assert_uint_eq(mf_gpu_origins_pending(), MANY_ALLOCATIONS);
    record_buffer b = buffer_of((size_t)MANY_ALLOCATIONS * sizeof(CUpti_ActivityMemory4));
    uint64_t t0 = mf_clock_now();
    for (uint32_t i = 0; i < MANY_ALLOCATIONS; i++)
        add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, i + 1, 0x200000000ull + 512ull * i,
                  512, t0 + i);
    ck_assert_uint_eq(process_on_cupti_thread(&b).walked, MANY_ALLOCATIONS);
    ck_assert_uint_eq(mf_gpu_origins_pending(), 0);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_GPU), MANY_ALLOCATIONS);
    size_t checked = 0;
    for (size_t k = 0; k < log->n_events; k++) {
        const mf_event *e = &log->events[k];
        if (e->type != MF_REC_ALLOC || MF_DEVICE_KIND(e->device) != MF_DEVICE_GPU)
            continue;
        uint32_t i = (uint32_t)((e->alloc.addr - 0x200000000ull) / 512);
        char want[16];
        snprintf(want, sizeof want, "layer%02u:", i % 100);
        ck_assert_str_eq(mf_log_string(log, e->alloc.scope), want);
        ck_assert_uint_eq(e->tid, my_tid());
        ck_assert_uint_eq(e->time_ns, t0 + i);
        checked++;
    }
    ck_assert_uint_eq(checked, MANY_ALLOCATIONS);
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

/*
 * The same address, freed and allocated again by another scope before
 * CUPTI delivered anything: each record finds the call whose window holds
 * its timestamp.
 */
START_TEST(reused_address_keeps_each_calls_scope)
{
    start_log("reused", NULL);
    memflow_scope_push("first", 0);
    uint64_t before1 = mf_clock_now();
    cuda_malloc(0xf000, 1);
    uint64_t after1 = mf_clock_now();
    memflow_scope_pop();
    cuda_free(0xf000, 3);
    memflow_scope_push("second", 0);
    uint64_t before2 = mf_clock_now();
    cuda_malloc(0xf000, 4);
    uint64_t after2 = mf_clock_now();
    memflow_scope_pop();
    ck_assert_uint_lt(after1, before2);
    record_buffer b = buffer_new();
    /* delivered newest first, stamped inside their calls */
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 4, 0xf000, 64, (before2 + after2) / 2);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 1, 0xf000, 64, (before1 + after1) / 2);
    process_on_cupti_thread(&b);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_GPU), 2);
    const mf_event *a0 = nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, 0); /* sorted by time */
    const mf_event *a1 = nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, 1);
    ck_assert_str_eq(mf_log_string(log, a0->alloc.scope), "first:");
    ck_assert_str_eq(mf_log_string(log, a1->alloc.scope), "second:");
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

/* Two CUDA allocations from this one function (two call sites). */
static __attribute__((noinline)) void allocate_on_gpu_here(void)
{
    cuda_malloc(0xa000, 40);
    CUdeviceptr dptr = 0xb000;
    cuMemAlloc_v2_params d = { &dptr, 128 };
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 42, &d, CUDA_SUCCESS);
    __asm__ volatile("" ::: "memory"); /* keep the calls above from being tail calls */
}

/*
 * With stacks on, a GPU block carries the call stack of the CUDA call that
 * made it, taken on the calling thread at the API entry (the record itself
 * arrives later on CUPTI's thread); with stacks off, none.
 */
START_TEST(gpu_allocations_carry_the_api_calls_stack)
{
    const char *keys[] = { "stacks" }, *on[] = { "32" }, *off[] = { "0" };
    ck_assert_msg(memflow_set_config(1, keys, on) == 0, "%s", memflow_last_error());
    start_log("stacks", NULL);
    allocate_on_gpu_here();
    record_buffer b = buffer_new();
    uint64_t t = mf_clock_now();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 40, 0xa000, 4096, t);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 42, 0xb000, 128, t + 1);
    process_on_cupti_thread(&b);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_GPU), 2);
    const mf_event *a = nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, 0);
    const mf_event *c = nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, 1);
    ck_assert_uint_ne(a->alloc.stack, 0);          /* the stack ids: two call sites */
    ck_assert_uint_ne(c->alloc.stack, 0);
    ck_assert_uint_ne(a->alloc.stack, c->alloc.stack);
    for (int k = 0; k < 2; k++) {
        const mf_stack *stack = mf_log_stack(log, (k ? c : a)->alloc.stack);
        ck_assert_ptr_nonnull(stack);
        int in_caller = 0;
        for (uint32_t i = 0; i < stack->depth; i++) {
            uint64_t ip = stack->ip[i], fn = (uintptr_t)allocate_on_gpu_here;
            in_caller |= ip > fn && ip < fn + 512;
        }
        ck_assert_msg(in_caller, "no frame of allocate_on_gpu_here in GPU block %d's stack", k);
    }
    mf_log_free(log);
    free(b.bytes);
    ck_assert_int_eq(memflow_set_config(1, keys, off), 0);
}
END_TEST

/*
 * Virtual memory management (PyTorch's expandable segments) and registered
 * host memory, as the driver reports them through the API callbacks: each
 * cuMemMap is a VMM block at its address on the device of its physical
 * allocation, with the calling thread's scope; one cuMemUnmap frees every
 * page it covers; cudaHostRegister is pinned memory flagged REGISTERED.
 * A MEMORY2 record CUPTI may give for those calls is not counted twice;
 * a failed map records nothing.
 */
START_TEST(vmm_mappings_and_registered_host_memory_become_blocks)
{
    start_log("vmm", NULL);
    const uint64_t va = 0x7e0000000000ull, page = 2u << 20;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 1;
    CUmemGenericAllocationHandle h1 = 0x51, h2 = 0x52;
    cuMemCreate_params c1 = { &h1, page, &prop, 0 }, c2 = { &h2, page, &prop, 0 };
    memflow_scope_push("expandable", 0);
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, 900, &c1, CUDA_SUCCESS);
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, 901, &c2, CUDA_SUCCESS);
    cuMemMap_params m1 = { va, page, 0, h1, 0 }, m2 = { va + page, page, 0, h2, 0 };
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemMap, 902, &m1, CUDA_SUCCESS);
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemMap, 903, &m2, CUDA_SUCCESS);
    cuMemMap_params failed = { va + 2 * page, page, 0, h2, 0 };
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemMap, 904, &failed, CUDA_ERROR_OUT_OF_MEMORY);
    memflow_scope_pop();
    /* an imported handle (unknown here): the calling context's device */
    cuMemMap_params m3 = { va + 8 * page, page, 0, 0x99, 0 };
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemMap, 905, &m3, CUDA_SUCCESS);
    cuMemUnmap_params u1 = { va, 2 * page }, u3 = { va + 8 * page, page };
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, 906, &u1, CUDA_SUCCESS);
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, 907, &u3, CUDA_SUCCESS);
    cuMemRelease_params r1 = { h1 };
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemRelease, 908, &r1, CUDA_SUCCESS);
    static char host[65536];
    memflow_scope_push("pinned_io", 0);
    cudaHostRegister_v4000_params reg = { host, sizeof host, 0 };
    cuMemHostRegister_v2_params reg_drv = { host, sizeof host, 0 };
    api_site(RT, CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, CUPTI_API_ENTER, 909, &reg, 0);
    api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2, 910, &reg_drv, CUDA_SUCCESS);
    api_site(RT, CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, CUPTI_API_EXIT, 909, &reg,
             cudaSuccess);
    memflow_scope_pop();
    cudaHostUnregister_v4000_params unreg = { host };
    api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000, 911, &unreg, cudaSuccess);

    record_buffer b = buffer_new();
    uint64_t t0 = mf_clock_now();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1, 900, 0, page, t0);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 0, 910, (uintptr_t)host, sizeof host, t0);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 77, 0x5000, 64, t0);
    ck_assert_uint_eq(process_on_cupti_thread(&b).walked, 3);
    mf_log *log = gpu_test_finish_and_read();

    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_GPU), 5);
    ck_assert_uint_eq(count_events(log, MF_REC_FREE, MF_DEVICE_GPU), 4);
    struct {
        uint16_t device, flags;
        uint64_t addr, size;
        const char *scope;
    } want[] = {
        { MF_DEVICE(1, 1), GPU_FLAGS(MF_MEM_VMM, 0), va, page, "expandable:" },
        { MF_DEVICE(1, 1), GPU_FLAGS(MF_MEM_VMM, 0), va + page, page, "expandable:" },
        { MF_DEVICE(1, 0), GPU_FLAGS(MF_MEM_VMM, 0), va + 8 * page, page, "<unk>:" },
        { MF_DEVICE(1, 0), GPU_FLAGS(MF_MEM_PINNED, MF_FLAG_REGISTERED), (uintptr_t)host,
          sizeof host, "pinned_io:" },
        { MF_DEVICE(1, 0), GPU_FLAGS(MF_MEM_DEVICE, 0), 0x5000, 64, "<unk>:" },
    };
    for (size_t i = 0; i < 5; i++) {
        const mf_event *e = nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, i);
        ck_assert_uint_eq(e->device, want[i].device);
        ck_assert_uint_eq(e->alloc.flags, want[i].flags);
        ck_assert_uint_eq(e->alloc.addr, want[i].addr);
        ck_assert_uint_eq(e->alloc.requested, want[i].size);
        ck_assert_str_eq(mf_log_string(log, e->alloc.scope), want[i].scope);
        if (i < 4)
            ck_assert_uint_eq(e->tid, my_tid());
    }
    uint64_t freed[] = { va, va + page, va + 8 * page, (uintptr_t)host };
    for (size_t i = 0; i < 4; i++) {
        const mf_event *f = nth_event(log, MF_REC_FREE, MF_DEVICE_GPU, i);
        ck_assert_uint_eq(f->free.addr, freed[i]);
        ck_assert_uint_eq(f->device, i < 2 ? MF_DEVICE(1, 1) : MF_DEVICE(1, 0));
    }
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

/*
 * Records without a usable timestamp (CUPTI leaves 0 where it could not
 * time something; a forced flush hands back unfinished ones) never move the
 * time axis to 0: a memory record takes its call's exit time, or the
 * latest good GPU time; a kernel or copy that cannot be placed is left out;
 * one note counts them.
 */
START_TEST(zero_and_reversed_timestamps_keep_the_time_axis)
{
    start_log("times", NULL);
    uint64_t t0 = mf_clock_now();
    memflow_scope_push("known", 0);
    uint64_t before = mf_clock_now();
    cuda_malloc(0xc000, 31);
    uint64_t after = mf_clock_now();
    memflow_scope_pop();
    record_buffer b = buffer_new();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 1, 0xd000, 64, t0 + 100);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 31, 0xc000, 64, 0);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 2, 0xe000, 64, 0);
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.name = "untimed";
    buffer_add(&b, &k, sizeof k);
    CUpti_ActivityMemcpy6 c;
    memset(&c, 0, sizeof c);
    c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    c.start = t0 + 200;
    c.end = t0 + 150;
    buffer_add(&b, &c, sizeof c);
    k.name = "timed";
    k.start = t0 + 250;
    k.end = t0 + 300;
    buffer_add(&b, &k, sizeof k);
    CUpti_ActivityMemoryPool3 p;
    memset(&p, 0, sizeof p);
    p.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
    p.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
    p.address = 0x7e0000000000ull;
    buffer_add(&b, &p, sizeof p);
    add_release(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0xd000, 64, 0);
    ck_assert_uint_eq(process_on_cupti_thread(&b).walked, 8);
    mf_log *log = gpu_test_finish_and_read();
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if (MF_DEVICE_KIND(e->device) == MF_DEVICE_GPU)
            ck_assert_uint_ge(e->time_ns, t0);
    }
    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_GPU), 3);
    const mf_event *known = NULL, *untagged = NULL;
    for (size_t i = 0; i < 3; i++) {
        const mf_event *e = nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, i);
        if (e->alloc.addr == 0xc000)
            known = e;
        if (e->alloc.addr == 0xe000)
            untagged = e;
    }
    ck_assert_ptr_nonnull(known);
    ck_assert_uint_ge(known->time_ns, before);
    ck_assert_uint_le(known->time_ns, after);
    ck_assert_str_eq(mf_log_string(log, known->alloc.scope), "known:");
    ck_assert_uint_eq(untagged->time_ns, t0 + 100);
    ck_assert_uint_eq(count_events(log, MF_REC_ACTIVITY, -1), 1);
    ck_assert_str_eq(mf_log_string(log, nth_event(log, MF_REC_ACTIVITY, -1, 0)->activity.name),
                     "timed");
    ck_assert_uint_eq(nth_event(log, MF_REC_POOL, -1, 0)->time_ns, t0 + 300);
    ck_assert_uint_eq(nth_event(log, MF_REC_FREE, MF_DEVICE_GPU, 0)->time_ns, t0 + 300);
    uint64_t bad = 0;
    ck_assert_uint_eq(gpu_test_notes(log, MF_NOTE_GPU_BAD_TIME, &bad), 1);
    ck_assert_uint_eq(bad, 6);
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

/* Every DEVICE record of a finished log, read straight from its chunks. */
/* Call fn(record, its word, ctx) for every record of the log file at path,
 * chunk by chunk in file order. */
static void each_record(const char *path, void (*fn)(const uint8_t *rec, uint64_t word, void *ctx),
                        void *ctx)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static uint8_t chunk[MF_CHUNK_SIZE];
    for (long index = 1; fseek(f, index * (long)MF_CHUNK_SIZE, SEEK_SET) == 0; index++) {
        size_t got = fread(chunk, 1, sizeof chunk, f);
        if (got < sizeof(mf_chunk_header))
            break;
        memset(chunk + got, 0, sizeof chunk - got);
        for (size_t at = sizeof(mf_chunk_header); at + 8 <= sizeof chunk;) {
            uint64_t word;
            memcpy(&word, chunk + at, 8);
            if (word == 0)
                break;
            fn(chunk + at, word, ctx);
            at += MF_WORD_SIZE(word);
        }
    }
    fclose(f);
}

typedef struct devices_found {
    mf_rec_device *out;
    uint16_t *devices;
    size_t n, max;
} devices_found;

static void keep_device(const uint8_t *rec, uint64_t word, void *ctx)
{
    devices_found *d = ctx;
    if (MF_WORD_TYPE(word) == MF_REC_DEVICE && d->n < d->max) {
        memcpy(&d->out[d->n], rec, sizeof d->out[d->n]);
        d->devices[d->n++] = (uint16_t)MF_WORD_AUX(word);
    }
}

static size_t device_records(const char *path, mf_rec_device *out, uint16_t *devices,
                             size_t max)
{
    devices_found d = { out, devices, 0, max };
    each_record(path, keep_device, &d);
    return d.n;
}

typedef struct string_wanted {
    uint32_t id;
    char text[1024];
} string_wanted;

static void keep_string(const uint8_t *rec, uint64_t word, void *ctx)
{
    string_wanted *w = ctx;
    if (MF_WORD_TYPE(word) == MF_REC_STRING && MF_WORD_AUX(word) == w->id) {
        mf_rec_string r;
        memcpy(&r, rec, sizeof r);
        snprintf(w->text, sizeof w->text, "%.*s", (int)r.len, rec + sizeof r);
    }
}

/* The text of the log's STRING record id (read from the file: the reader
 * gives its own ids to the texts, in the order events name them). */
static const char *raw_string(const char *path, uint32_t id)
{
    static string_wanted w;
    w.id = id;
    w.text[0] = 0;
    each_record(path, keep_string, &w);
    return w.text;
}

static void add_device(record_buffer *b, uint32_t id, const char *name, int visible, int mig)
{
    CUpti_ActivityDevice5 d;
    memset(&d, 0, sizeof d);
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.id = id;
    d.name = name;
    d.globalMemorySize = (80ull << 30) + id;
    for (int i = 0; i < 16; i++)
        d.uuid.bytes[i] = (char)(16 * id + i);
    d.isCudaVisible = (uint8_t)visible;
    d.isMigEnabled = (uint8_t)mig;
    d.gpuInstanceId = mig ? 3 : UINT32_MAX;
    d.computeInstanceId = mig ? 1 : UINT32_MAX;
    buffer_add(b, &d, sizeof d);
}

/*
 * Who is behind GPU memory: DEVICE records name each visible device once
 * (model, UUID, MIG instance, memory); a block names its variable (module
 * globals) or, when no scope claims it, the library that asked for it.
 */
START_TEST(devices_and_the_names_behind_blocks)
{
    start_log("devices", NULL);
    memflow_scope_push("mine", 0);
    cuda_malloc(0x3000, 41);
    memflow_scope_pop();
    record_buffer b = buffer_new();
    add_device(&b, 0, "NVIDIA H100 80GB HBM3", 1, 0);
    add_device(&b, 0, "NVIDIA H100 80GB HBM3", 1, 0);
    add_device(&b, 1, "NVIDIA H100 80GB HBM3 MIG 3g.40gb", 1, 1);
    add_device(&b, 2, "hidden by CUDA_VISIBLE_DEVICES", 0, 0);
    uint64_t t0 = mf_clock_now();
    CUpti_ActivityMemory4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = 4096;
    m.timestamp = t0 + 1;
    m.address = 0x1000;
    m.source = "/opt/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublasLt.so.13";
    buffer_add(&b, &m, sizeof m);
    m.address = 0x2000;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC;
    m.name = "weights";
    m.source = "/work/prog";
    buffer_add(&b, &m, sizeof m);
    m.address = 0x3000;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.name = NULL;
    buffer_add(&b, &m, sizeof m);
    ck_assert_uint_eq(process_on_cupti_thread(&b).walked, 7);
    char path[4096];
    snprintf(path, sizeof path, "%s", mf_recorder_log_path());
    mf_log *log = gpu_test_finish_and_read();
    const char *names[] = { "libcublasLt.so.13", "weights", "unknown" };
    const char *scopes[] = { "<unk>:", "<unk>:", "mine:" };
    for (size_t i = 0; i < 3; i++) {
        const mf_event *e = nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, i);
        ck_assert_str_eq(mf_log_string(log, e->alloc.name), names[i]);
        ck_assert_str_eq(mf_log_string(log, e->alloc.scope), scopes[i]);
    }
    /* what a GPU is has no time: the time axis still starts at the run */
    char err[512];
    mf_model *model = mf_model_build(&log, 1, UINT64_MAX, err, sizeof err);
    ck_assert_msg(model != NULL, "%s", err);
    ck_assert_uint_ge(model->t0_ns, log->header.start_mono_ns);
    mf_model_free(model);
    mf_rec_device d[8];
    uint16_t dev[8];
    ck_assert_uint_eq(device_records(path, d, dev, 8), 2);
    ck_assert_uint_eq(dev[0], MF_DEVICE(MF_DEVICE_GPU, 0));
    ck_assert_str_eq(raw_string(path, d[0].name), "NVIDIA H100 80GB HBM3");
    ck_assert_uint_eq(d[0].total_bytes, 80ull << 30);
    ck_assert_uint_eq(d[0].mig, UINT32_MAX);
    ck_assert_uint_eq(d[0].uuid[15], 15);
    ck_assert_uint_eq(d[0].pci_bus, 0); /* no driver here to ask */
    ck_assert_uint_eq(dev[1], MF_DEVICE(MF_DEVICE_GPU, 1));
    ck_assert_str_eq(raw_string(path, d[1].name), "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
    ck_assert_uint_eq(d[1].total_bytes, (80ull << 30) + 1);
    ck_assert_uint_eq(d[1].mig, 3u << 16 | 1u);
    ck_assert_uint_eq(d[1].uuid[0], 16);
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

/* A named (or unnamed) MEMORY2 allocation with no API call behind it. */
static void add_driver_alloc(record_buffer *b, unsigned memory_kind, const char *name,
                             uint64_t address, uint64_t bytes, uint64_t timestamp)
{
    CUpti_ActivityMemory4 m = memory_record(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                                            memory_kind, CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID,
                                            0, 0, address, bytes, timestamp, 0, 1);
    m.name = name;
    buffer_add(b, &m, sizeof m);
}

/*
 * Seen on an H100: a module's __managed__ variable came twice at one
 * address - the driver's unnamed managed region, then the named variable -
 * and the render warned of an allocation at a live address.  The variables
 * are sub-blocks of their region; a named static outside every region (a
 * __device__ one, or after the region's release) stays a block.
 */
START_TEST(managed_statics_are_subblocks_of_their_region)
{
    start_log("managed_statics", NULL);
    uint64_t t0 = mf_clock_now();
    record_buffer b = buffer_new();
    add_driver_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, NULL, 0x70000, 8192, t0 + 1);
    add_driver_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, "managed_a", 0x70000, 4096,
                     t0 + 2);
    add_driver_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, "managed_b", 0x71000, 4096,
                     t0 + 3);
    add_driver_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, "too_big", 0x71000, 8192,
                     t0 + 4);
    add_driver_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, "device_static", 0x90000,
                     4096, t0 + 5);
    add_release(&b, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, 0, 0x70000, 8192, t0 + 6);
    add_driver_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, "after", 0x70000, 4096,
                     t0 + 7);
    ck_assert_uint_eq(process_on_cupti_thread(&b).walked, 7);
    mf_log *log = gpu_test_finish_and_read();
    const struct {
        const char *name;
        unsigned flags;
    } want[] = {
        { "unknown", MF_MEM_MANAGED << MF_MEMKIND_SHIFT },
        { "managed_a", MF_MEM_MANAGED << MF_MEMKIND_SHIFT | MF_FLAG_SUBBLOCK },
        { "managed_b", MF_MEM_MANAGED << MF_MEMKIND_SHIFT | MF_FLAG_SUBBLOCK },
        { "too_big", MF_MEM_MANAGED << MF_MEMKIND_SHIFT },
        { "device_static", MF_MEM_DEVICE << MF_MEMKIND_SHIFT },
        { "after", MF_MEM_MANAGED << MF_MEMKIND_SHIFT },
    };
    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_GPU), 6);
    for (size_t i = 0; i < 6; i++) {
        const mf_event *e = nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, i);
        ck_assert_str_eq(mf_log_string(log, e->alloc.name), want[i].name);
        ck_assert_uint_eq(e->alloc.flags, want[i].flags);
    }
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

static uint64_t monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct moment {
    uint64_t mono_before, mono_after; /* CLOCK_MONOTONIC around the events */
    uint64_t gpu;                     /* what CUPTI's timestamp callback said */
    char *cpu_block;
} moment;

/* A CPU allocation and a GPU timestamp, bracketed by CLOCK_MONOTONIC. */
static moment take_moment(char *block)
{
    moment m;
    m.cpu_block = block;
    m.mono_before = monotonic_now();
    ck_assert_int_eq(memflow_record_alloc("cpu/0", block, 16, 16, NULL, 0), 0);
    m.gpu = mf_gpu_timestamp();
    m.mono_after = monotonic_now();
    return m;
}

typedef struct clock_watch {
    volatile int stop;
    size_t reads, backwards;
} clock_watch;

/* Another thread reads the clock through its switch to the TSC and its
 * re-anchoring: it must never go back. */
static void *watch_clock(void *arg)
{
    clock_watch *w = arg;
    uint64_t last = mf_clock_now();
    while (!w->stop) {
        for (int i = 0; i < 100; i++) {
            uint64_t now = mf_clock_now();
            w->backwards += now < last;
            last = now;
            w->reads++;
        }
        struct timespec ts = { 0, 50000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

#define PPM_LIMIT 10.0

/*
 * One clock within 10 ppm: a CPU allocation and a GPU timestamp (CUPTI's
 * timestamp callback) made 2.5 s apart by a fresh process sit inside their
 * CLOCK_MONOTONIC brackets, and their distance agrees with
 * CLOCK_MONOTONIC's to 10 parts per million.  Meanwhile a thread reading the
 * clock never sees it go back.
 */
START_TEST(one_clock_within_ten_ppm_of_monotonic)
{
    start_log("clock_ppm", NULL);
    clock_watch watch = { 0, 0, 0 };
    pthread_t watcher;
    ck_assert_int_eq(pthread_create(&watcher, NULL, watch_clock, &watch), 0);
    static char block_a[16], block_b[16];
    struct timespec pause = { 0, 100000000 };
    nanosleep(&pause, NULL);
    moment a = take_moment(block_a);
    pause = (struct timespec){ 2, 500000000 };
    nanosleep(&pause, NULL);
    moment b = take_moment(block_b);
    watch.stop = 1;
    ck_assert_int_eq(pthread_join(watcher, NULL), 0);
    record_buffer buf = buffer_new();
    add_alloc(&buf, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0, 0xa000, 64, a.gpu);
    add_alloc(&buf, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0, 0xb000, 64, b.gpu);
    process_on_cupti_thread(&buf);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(watch.backwards, 0);
    ck_assert_uint_gt(watch.reads, 10000);
    const mf_event *cpu[2] = { NULL, NULL };
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if (e->type == MF_REC_ALLOC && e->alloc.addr == (uintptr_t)block_a)
            cpu[0] = e;
        if (e->type == MF_REC_ALLOC && e->alloc.addr == (uintptr_t)block_b)
            cpu[1] = e;
    }
    ck_assert_ptr_nonnull(cpu[0]);
    ck_assert_ptr_nonnull(cpu[1]);
    const moment *m[2] = { &a, &b };
    uint64_t since = log->header.start_mono_ns;
    for (int i = 0; i < 2; i++) {
        /* inside the bracket, give or take 10 ppm of the time since the start */
        double slack = PPM_LIMIT * 1e-6 * (double)(m[i]->mono_after - since) + 1000.0;
        uint64_t gpu_time = nth_event(log, MF_REC_ALLOC, MF_DEVICE_GPU, i)->time_ns;
        ck_assert_uint_eq(gpu_time, m[i]->gpu);
        uint64_t times[2] = { cpu[i]->time_ns, gpu_time };
        for (int k = 0; k < 2; k++) {
            ck_assert_msg((double)times[k] >= (double)m[i]->mono_before - slack &&
                          (double)times[k] <= (double)m[i]->mono_after + slack,
                          "moment %d: event at %llu, CLOCK_MONOTONIC bracket [%llu, %llu], "
                          "slack %.0f ns", i, (unsigned long long)times[k],
                          (unsigned long long)m[i]->mono_before,
                          (unsigned long long)m[i]->mono_after, slack);
        }
    }
    double mono = (double)(b.mono_before + b.mono_after) / 2 -
                  (double)(a.mono_before + a.mono_after) / 2;
    double brackets = (double)(b.mono_after - b.mono_before + a.mono_after - a.mono_before);
    double recorded = (double)cpu[1]->time_ns - (double)cpu[0]->time_ns;
    double ppm = (recorded - mono) / mono * 1e6;
    ck_assert_msg(fabs(recorded - mono) <= PPM_LIMIT * 1e-6 * mono + brackets,
                  "2.5 s apart: recorded %.0f ns, CLOCK_MONOTONIC %.0f ns: %.1f ppm", recorded,
                  mono, ppm);
    mf_log_free(log);
    free(buf.bytes);
}
END_TEST

typedef struct completed_job {
    uint8_t *buffer;
    size_t size, valid;
} completed_job;

static void *completed_thread(void *arg)
{
    completed_job *job = arg;
    mf_gpu_buffer_completed(NULL, 0, job->buffer, job->size, job->valid);
    return NULL;
}

/*
 * The buffer callbacks production registers with CUPTI: a 4 MiB aligned
 * buffer is handed out, filled as CUPTI fills it, handed back on another
 * thread: its records are recorded (no drops without a driver: no note)
 * and the buffer is unmapped.
 */
START_TEST(buffer_callbacks_hand_out_translate_and_unmap)
{
    start_log("callbacks", NULL);
    uint8_t *buffer = NULL;
    size_t size = 0, max_records = 99;
    mf_gpu_buffer_requested(&buffer, &size, &max_records);
    ck_assert_ptr_nonnull(buffer);
    ck_assert_uint_eq(size, 4u << 20);
    ck_assert_uint_eq(max_records, 0);
    ck_assert_uint_eq((uintptr_t)buffer % 8, 0);
    record_buffer b = { buffer, 0, size };
    uint64_t t0 = mf_clock_now();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0, 0xa000, 4096, t0 + 1);
    add_release(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0xa000, 4096, t0 + 2);
    completed_job job = { buffer, size, b.used };
    pthread_t thread;
    ck_assert_int_eq(pthread_create(&thread, NULL, completed_thread, &job), 0);
    ck_assert_int_eq(pthread_join(thread, NULL), 0);
    ck_assert_int_eq(msync(buffer, 4096, MS_ASYNC), -1); /* unmapped */
    ck_assert_int_eq(errno, ENOMEM);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_GPU), 1);
    ck_assert_uint_eq(count_events(log, MF_REC_FREE, MF_DEVICE_GPU), 1);
    ck_assert_uint_eq(nth_event(log, MF_REC_FREE, MF_DEVICE_GPU, 0)->free.addr, 0xa000);
    ck_assert_uint_eq(count_events(log, MF_REC_NOTE, -1), 0);
    mf_log_free(log);
}
END_TEST

/* Records that arrive with no log open are not recorded anywhere. */
START_TEST(no_log_open_records_nothing)
{
    record_buffer b = buffer_new();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0, 0x1000, 64, 1);
    ck_assert_int_eq(mf_recorder_log_open(), 0);
    ck_assert_uint_eq(mf_gpu_process_buffer(b.bytes, b.used), 0);
    ck_assert_uint_eq(mf_gpu_process_buffer(NULL, 128), 0);
    free(b.bytes);
}
END_TEST

typedef struct bad_buffer_run {
    record_buffer *buffer;
    size_t walked;
} bad_buffer_run;

static void process_bad(void *arg)
{
    bad_buffer_run *run = arg;
    run->walked = mf_gpu_process_buffer(run->buffer->bytes, run->buffer->used);
}

/* A record of an unknown kind stops the walk with one clear line. */
START_TEST(damaged_buffer_keeps_records_before_the_damage)
{
    start_log("damaged", NULL);
    record_buffer b = buffer_new();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0, 0x1000, 64, mf_clock_now());
    uint32_t garbage[32];
    memset(garbage, 0xab, sizeof garbage);
    buffer_add(&b, garbage, sizeof garbage);
    bad_buffer_run run = { &b, 0 };
    const char *err = gpu_test_capture_stderr(process_bad, &run);
    ck_assert_uint_eq(run.walked, 1);
    ck_assert_int_eq(count_lines(err), 1);
    ck_assert_msg(strncmp(err, "memflow: CUPTI activity buffer: CUPTI_ERROR_", 44) == 0, "%s", err);
    ck_assert_msg(strstr(err, "after 1 records (byte offset 0)") != NULL, "%s", err);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_GPU), 1);
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

/* The whole file at path (static buffer). */
static const char *file_text(const char *path)
{
    static char text[8192];
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/*
 * MXNet's gpu_memory_profile CSV of GPU blocks that came through CUPTI and
 * through memflow_record_alloc (a caching allocator's blocks, one of them
 * reused), byte for byte: only GPU blocks live at the end, sorted by
 * attribute, every field quoted, quotes doubled.
 */
/* Close the log, read it back (*log) and build its model. */
static mf_model *finish_model(mf_log **log)
{
    *log = gpu_test_finish_and_read();
    char err[512];
    mf_model *model = mf_model_build(log, 1, UINT64_MAX, err, sizeof err);
    ck_assert_msg(model != NULL, "%s", err);
    return model;
}

/* MXNet's CSV of this process's GPU blocks in model (the caller frees it). */
static char *csv_of(const mf_model *model)
{
    char *csv = NULL;
    size_t csv_len = 0;
    FILE *out = open_memstream(&csv, &csv_len);
    ck_assert_int_eq(mf_csv_write(model, (uint32_t)getpid(), out), 0);
    fclose(out);
    return csv;
}

/*
 * A GPU tensor named with its role (memflow.torch's naming record, TRACE
 * BLOCK_NAME) is listed in MXNet's CSV by its qualified name alone, and
 * counts under its role at the device's peak.
 */
START_TEST(gpu_csv_names_tensors)
{
    start_log("csv_names", NULL);
    uint64_t t0 = mf_clock_now();
    record_buffer b = buffer_new();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0, 0x7f7000000000ull, 1 << 20, t0 + 1);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0, 0x7f7000100000ull, 4096, t0 + 2);
    ck_assert_uint_eq(process_on_cupti_thread(&b).walked, 2);
    const char *weight = "net:fc1:weight";
    mf_recorder_trace(MF_TRACE_BLOCK_NAME, 0, 0x7f7000000000ull, 0,
                      mf_recorder_intern(weight, strlen(weight)),
                      0x100u | (uint32_t)MF_ROLE_PARAMETER << 16);
    mf_log *log;
    mf_model *model = finish_model(&log);
    char *csv = csv_of(model);
    ck_assert_str_eq(csv, "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\","
                          "\"Reuse?\"\n"
                          "\"<unk>:unknown\",\"4096\",\"0\",\"4096\",\"0\"\n"
                          "\"net:fc1:weight\",\"1048576\",\"0\",\"1048576\",\"0\"\n");
    const mf_device_model *d = mf_model_device(model, 0x100);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(d->n_roles, 2);
    ck_assert_uint_eq(d->roles[0].scope, MF_ROLE_UNKNOWN);
    ck_assert_uint_eq(d->roles[0].at_peak_bytes, 4096);
    ck_assert_uint_eq(d->roles[1].scope, MF_ROLE_PARAMETER);
    ck_assert_uint_eq(d->roles[1].at_peak_bytes, 1 << 20);
    ck_assert_uint_eq(d->roles[1].at_peak_count, 1);
    ck_assert_uint_eq(d->roles[1].alloc_count, 1);
    free(csv);
    mf_model_free(model);
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

START_TEST(gpu_memory_profile_csv_of_synthetic_blocks)
{
    start_log("csv", NULL);
    uint64_t t0 = mf_clock_now();
    memflow_scope_push("net_dense1", 0);
    cuda_malloc(0x7f6000000000ull, 501);
    cuda_malloc(0x7f6000100000ull, 503);
    memflow_scope_pop();
    record_buffer b = buffer_new();
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1, 501, 0x7f6000000000ull, 1 << 20, t0 + 1);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1, 502, 0x7f6000100000ull, 4096, t0 + 2);
    add_alloc(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0, 0x7f7000000000ull, 2 << 20, t0 + 3);
    add_release(&b, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1, 0x7f6000100000ull, 4096, t0 + 4);
    ck_assert_uint_eq(process_on_cupti_thread(&b).walked, 4);
    /* a caching allocator's blocks inside the untagged 2 MiB segment */
    memflow_scope_push("hybridsequential", 0);
    memflow_scope_push("dense0", 1);
    ck_assert_int_eq(memflow_record_alloc("gpu/0", (void *)0x7f7000000000ull, 5120, 8192,
                                          "in_arg:weight", 0), 0);
    ck_assert_int_eq(memflow_record_alloc("gpu/0", (void *)0x7f7000002000ull, 100, 512,
                                          "out\"put,1", MEMFLOW_ALLOC_REUSED), 0);
    ck_assert_int_eq(memflow_record_alloc("gpu/0", (void *)0x7f7000004000ull, 64, 512,
                                          "freed", 0), 0);
    ck_assert_int_eq(memflow_record_free("gpu/0", (void *)0x7f7000004000ull), 0);
    memflow_scope_pop();
    memflow_scope_pop();
    static char cpu_block[64];
    ck_assert_int_eq(memflow_record_alloc("cpu/0", cpu_block, 64, 64, "cpu", 0), 0);
    mf_log *log;
    mf_model *model = finish_model(&log);
    char *csv = csv_of(model);
    char err[512];
    const char *want =
        "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"\n"
        "\"<unk>:unknown\",\"2097152\",\"0\",\"2097152\",\"0\"\n"
        "\"hybridsequential:dense0:in_arg:weight\",\"5120\",\"0\",\"8192\",\"0\"\n"
        "\"hybridsequential:dense0:out\"\"put,1\",\"100\",\"0\",\"512\",\"1\"\n"
        "\"net_dense1:unknown\",\"1048576\",\"1\",\"1048576\",\"0\"\n";
    ck_assert_str_eq(csv, want);

    int written = 0;
    ck_assert_msg(mf_csv_write_all(model, gpu_test_scratch, "gpu_memory_profile", &written, err,
                                   sizeof err) == 0, "%s", err);
    ck_assert_int_eq(written, 1);
    char path[4200];
    snprintf(path, sizeof path, "%s/gpu_memory_profile-pid_%d.csv", gpu_test_scratch,
             (int)getpid());
    ck_assert_str_eq(file_text(path), want);
    free(csv);
    mf_model_free(model);
    mf_log_free(log);
    free(b.bytes);
}
END_TEST

static void start_twice(void *arg)
{
    int *rc = arg;
    rc[0] = memflow_gpu_start();
    rc[1] = memflow_gpu_start();
}

/*
 * This machine has no GPU and no driver: starting GPU capture says so in one
 * line, notes it in the log, returns success, and CPU recording goes on.
 */
START_TEST(start_without_driver_says_so_once)
{
    start_log("nodriver", NULL);
    int rc[2] = { -1, -1 };
    const char *err = gpu_test_capture_stderr(start_twice, rc);
    ck_assert_int_eq(rc[0], 0);
    ck_assert_int_eq(rc[1], 0);
    ck_assert_int_eq(memflow_gpu_active(), 0);
    static char cpu_block[32];
    ck_assert_int_eq(memflow_record_alloc("cpu/0", cpu_block, 32, 32, NULL, 0), 0);
    mf_log *log = gpu_test_finish_and_read();
    ck_assert_uint_eq(count_events(log, MF_REC_NOTE, -1), 1);
    const mf_event *note = nth_event(log, MF_REC_NOTE, -1, 0);
    ck_assert_uint_eq(note->note.code, MF_NOTE_GPU_OFF);
    const char *result = "?";
    ck_assert_int_eq(cuptiGetResultString((CUptiResult)note->note.value, &result), CUPTI_SUCCESS);
    char want[512];
    snprintf(want, sizeof want, "memflow: GPU capture is off: %s "
             "(cuptiSubscribe_v2 failed; no usable CUDA driver or GPU?)"
             "; CPU capture goes on\n", result);
    ck_assert_str_eq(err, want);
    ck_assert_uint_eq(count_events(log, MF_REC_ALLOC, MF_DEVICE_CPU), 1);
    ck_assert_uint_eq(nth_event(log, MF_REC_ALLOC, MF_DEVICE_CPU, 0)->alloc.addr,
                      (uintptr_t)cpu_block);
    mf_log_free(log);
}
END_TEST

/* memoryKind x memoryPoolType -> memflow memory kind, all of them. */
START_TEST(memory_kinds_map_exactly)
{
    const unsigned none = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID;
    ck_assert_uint_eq(mf_gpu_memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, none), MF_MEM_OTHER);
    ck_assert_uint_eq(mf_gpu_memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, none), MF_MEM_OTHER);
    ck_assert_uint_eq(mf_gpu_memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_PINNED, none), MF_MEM_PINNED);
    ck_assert_uint_eq(mf_gpu_memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, none), MF_MEM_DEVICE);
    ck_assert_uint_eq(mf_gpu_memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, none), MF_MEM_DEVICE);
    ck_assert_uint_eq(mf_gpu_memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, none),
                      MF_MEM_MANAGED);
    ck_assert_uint_eq(mf_gpu_memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, none),
                      MF_MEM_DEVICE);
    ck_assert_uint_eq(mf_gpu_memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, none),
                      MF_MEM_MANAGED);
    ck_assert_uint_eq(mf_gpu_memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                         CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL), MF_MEM_POOL);
    ck_assert_uint_eq(mf_gpu_memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                         CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED), MF_MEM_POOL);
    ck_assert_str_eq(mf_gpu_memcpy_kind_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), "DtoH");
    ck_assert_str_eq(mf_gpu_memcpy_kind_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), "DtoD");
    ck_assert_str_eq(mf_gpu_memcpy_kind_name(CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN), "memcpy");
    ck_assert_str_eq(mf_gpu_memcpy_kind_name(99), "memcpy");
}
END_TEST

/* What each subscribed API does with memory; others are nothing. */
START_TEST(api_roles_are_recognised)
{
    ck_assert_uint_eq(mf_gpu_api_role(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020),
                      MF_GPU_API_ALLOC);
    ck_assert_uint_eq(mf_gpu_api_role(RT, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020),
                      MF_GPU_API_ALLOC);
    ck_assert_uint_eq(mf_gpu_api_role(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000),
                      MF_GPU_API_ALLOC);
    ck_assert_uint_eq(mf_gpu_api_role(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020),
                      MF_GPU_API_ALLOC_ARRAY);
    ck_assert_uint_eq(mf_gpu_api_role(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2),
                      MF_GPU_API_ALLOC);
    ck_assert_uint_eq(mf_gpu_api_role(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync),
                      MF_GPU_API_ALLOC);
    ck_assert_uint_eq(mf_gpu_api_role(RT, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020),
                      MF_GPU_API_FREE);
    ck_assert_uint_eq(mf_gpu_api_role(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2),
                      MF_GPU_API_FREE);
    ck_assert_uint_eq(mf_gpu_api_role(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemCreate),
                      MF_GPU_API_VMM_CREATE);
    ck_assert_uint_eq(mf_gpu_api_role(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemMap),
                      MF_GPU_API_VMM_MAP);
    ck_assert_uint_eq(mf_gpu_api_role(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap),
                      MF_GPU_API_VMM_UNMAP);
    ck_assert_uint_eq(mf_gpu_api_role(RT, CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000),
                      MF_GPU_API_REGISTER);
    ck_assert_uint_eq(mf_gpu_api_role(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020),
                      MF_GPU_API_NONE);
    /* cudaMalloc's runtime id in the driver domain is something else */
    ck_assert_uint_eq(mf_gpu_api_role(DRV, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020),
                      MF_GPU_API_NONE);
    ck_assert_uint_eq(mf_gpu_api_role(CUPTI_CB_DOMAIN_RESOURCE,
                                      CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020),
                      MF_GPU_API_NONE);
}
END_TEST

/* The origins table: hit, miss, kinds apart, the same address twice (by call
 * window, else the oldest), growth far past its first size. */
START_TEST(origins_table_keeps_every_entry)
{
    mf_gpu_origin o, got;
    memset(&o, 0, sizeof o);
    o.scope = 11, o.tid = 12, o.enter_ns = 100, o.exit_ns = 200;
    ck_assert_int_eq(mf_gpu_origin_put(MF_GPU_KEY_ALLOC, 0x1000, &o), 0);
    ck_assert_int_eq(mf_gpu_origin_take(MF_GPU_KEY_FREE, 0x1000, 150, &got), 0);
    ck_assert_int_eq(mf_gpu_origin_take(MF_GPU_KEY_ALLOC, 0x2000, 150, &got), 0);
    ck_assert_int_eq(mf_gpu_origin_take(MF_GPU_KEY_ALLOC, 0x1000, 150, &got), 1);
    ck_assert_uint_eq(got.scope, 11);
    ck_assert_uint_eq(got.tid, 12);
    ck_assert_int_eq(mf_gpu_origin_take(MF_GPU_KEY_ALLOC, 0x1000, 150, &got), 0);
    /* the same address from two calls */
    o.scope = 21, o.enter_ns = 300, o.exit_ns = 400;
    mf_gpu_origin_put(MF_GPU_KEY_ALLOC, 0x3000, &o);
    o.scope = 22, o.enter_ns = 500, o.exit_ns = 600;
    mf_gpu_origin_put(MF_GPU_KEY_ALLOC, 0x3000, &o);
    ck_assert_int_eq(mf_gpu_origin_take(MF_GPU_KEY_ALLOC, 0x3000, 550, &got), 1);
    ck_assert_uint_eq(got.scope, 22);
    mf_gpu_origin_put(MF_GPU_KEY_ALLOC, 0x3000, &o);
    ck_assert_int_eq(mf_gpu_origin_take(MF_GPU_KEY_ALLOC, 0x3000, 0, &got), 1);
    ck_assert_uint_eq(got.scope, 21); /* no time: the oldest */
    ck_assert_int_eq(mf_gpu_origin_take(MF_GPU_KEY_ALLOC, 0x3000, 0, &got), 1);
    ck_assert_uint_eq(got.scope, 22);
    /* 200,000 at once, taken back in another order */
    for (uint32_t i = 0; i < 200000; i++) {
        o.scope = i;
        ck_assert_int_eq(mf_gpu_origin_put(MF_GPU_KEY_ALLOC, 0x10000ull * (i + 1), &o), 0);
    }
    ck_assert_uint_eq(mf_gpu_origins_pending(), 200000);
    for (uint32_t i = 200000; i-- > 0;) {
        ck_assert_int_eq(mf_gpu_origin_take(MF_GPU_KEY_ALLOC, 0x10000ull * (i + 1), 0, &got), 1);
        ck_assert_uint_eq(got.scope, i);
    }
    ck_assert_uint_eq(mf_gpu_origins_pending(), 0);
}
END_TEST

static Suite *gpu_suite(void)
{
    Suite *s = suite_create("gpu");
    TCase *tc = tcase_create("cupti");
    tcase_add_test(tc, memory2_records_become_alloc_and_free_events);
    tcase_add_test(tc, failed_allocations_are_out_of_memory_records);
    tcase_add_test(tc, memory_pool_records_become_pool_events);
    tcase_add_test(tc, kernel_memcpy_memset_records_become_activities);
    tcase_add_test(tc, external_correlation_record_is_skipped);
    tcase_add_test(tc, gpu_timestamp_orders_with_cpu_events);
    tcase_add_test(tc, dropped_records_are_noted);
    tcase_add_test(tc, gpu_snapshot_at_api_exit_stamped_with_the_event);
    tcase_add_test(tc, buffer_callbacks_hand_out_translate_and_unmap);
    tcase_add_test(tc, no_log_open_records_nothing);
    tcase_add_test(tc, damaged_buffer_keeps_records_before_the_damage);
    tcase_add_test(tc, truncated_last_record_is_not_translated);
    tcase_add_test(tc, many_threads_keep_their_scopes);
    tcase_add_test(tc, hundred_thousand_allocations_in_one_buffer_keep_their_scopes);
    tcase_add_test(tc, reused_address_keeps_each_calls_scope);
    tcase_add_test(tc, gpu_allocations_carry_the_api_calls_stack);
    tcase_add_test(tc, vmm_mappings_and_registered_host_memory_become_blocks);
    tcase_add_test(tc, zero_and_reversed_timestamps_keep_the_time_axis);
    tcase_add_test(tc, managed_statics_are_subblocks_of_their_region);
    tcase_add_test(tc, devices_and_the_names_behind_blocks);
    tcase_add_test(tc, one_clock_within_ten_ppm_of_monotonic);
    tcase_add_test(tc, gpu_memory_profile_csv_of_synthetic_blocks);
    tcase_add_test(tc, gpu_csv_names_tensors);
    tcase_add_test(tc, start_without_driver_says_so_once);
    tcase_add_test(tc, memory_kinds_map_exactly);
    tcase_add_test(tc, api_roles_are_recognised);
    tcase_add_test(tc, origins_table_keeps_every_entry);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *runner = srunner_create(gpu_suite());
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
