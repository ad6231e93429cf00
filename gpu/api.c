/*
 * api.c - the CUDA API callbacks: who asked for GPU memory, learned on the
 * calling thread at the API's exit.
 *
 * CUPTI calls mf_gpu_api_callback on the thread that called the CUDA
 * function, at its ENTER and EXIT.  A runtime call that reaches a traced
 * driver call (cudaMalloc -> cuMemAlloc_v2) nests; only the outermost call
 * counts.  At its exit the call has succeeded or not, and its out-parameter
 * holds the address it returned: that address is the key under which the
 * origin (scope, thread, call window, snapshot) waits in origins.c for the
 * MEMORY2 record, whenever CUPTI delivers it.  No correlation id is needed
 * for plain allocations, so runtime and driver ids cannot collide, and no
 * table slot can be lost.  Virtual memory management and host registration
 * have no CUPTI memory record with an address; vmm.c records them here.
 *
 * The parameters are read through the structs CUPTI generates for each API
 * (generated_cuda_runtime_api_meta.h, generated_cuda_meta.h, via cupti.h).
 */
#include <string.h>

#include "gpu.h" /* cupti.h brings the generated parameter structs */

#define RT CUPTI_CB_DOMAIN_RUNTIME_API
#define DRV CUPTI_CB_DOMAIN_DRIVER_API
#define RT_ID(name) CUPTI_RUNTIME_TRACE_CBID_##name
#define DRV_ID(name) CUPTI_DRIVER_TRACE_CBID_##name

typedef struct api_entry {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
    unsigned role;
} api_entry;

static const api_entry apis[] = {
    { RT, RT_ID(cudaMalloc_v3020), MF_GPU_API_ALLOC },
    { RT, RT_ID(cudaMallocPitch_v3020), MF_GPU_API_ALLOC },
    { RT, RT_ID(cudaMallocHost_v3020), MF_GPU_API_ALLOC },
    { RT, RT_ID(cudaHostAlloc_v3020), MF_GPU_API_ALLOC },
    { RT, RT_ID(cudaMalloc3D_v3020), MF_GPU_API_ALLOC },
    { RT, RT_ID(cudaMallocManaged_v6000), MF_GPU_API_ALLOC },
    { RT, RT_ID(cudaMallocAsync_v11020), MF_GPU_API_ALLOC },
    { RT, RT_ID(cudaMallocAsync_ptsz_v11020), MF_GPU_API_ALLOC },
    { RT, RT_ID(cudaMallocFromPoolAsync_v11020), MF_GPU_API_ALLOC },
    { RT, RT_ID(cudaMallocFromPoolAsync_ptsz_v11020), MF_GPU_API_ALLOC },
    { RT, RT_ID(cudaMallocArray_v3020), MF_GPU_API_ALLOC_ARRAY },
    { RT, RT_ID(cudaMalloc3DArray_v3020), MF_GPU_API_ALLOC_ARRAY },
    { RT, RT_ID(cudaMallocMipmappedArray_v5000), MF_GPU_API_ALLOC_ARRAY },
    { RT, RT_ID(cudaFree_v3020), MF_GPU_API_FREE },
    { RT, RT_ID(cudaFreeHost_v3020), MF_GPU_API_FREE },
    { RT, RT_ID(cudaFreeAsync_v11020), MF_GPU_API_FREE },
    { RT, RT_ID(cudaFreeAsync_ptsz_v11020), MF_GPU_API_FREE },
    { RT, RT_ID(cudaHostRegister_v4000), MF_GPU_API_REGISTER },
    { RT, RT_ID(cudaHostUnregister_v4000), MF_GPU_API_UNREGISTER },
    { DRV, DRV_ID(cuMemAlloc_v2), MF_GPU_API_ALLOC },
    { DRV, DRV_ID(cuMemAllocPitch_v2), MF_GPU_API_ALLOC },
    { DRV, DRV_ID(cuMemAllocHost_v2), MF_GPU_API_ALLOC },
    { DRV, DRV_ID(cuMemHostAlloc), MF_GPU_API_ALLOC },
    { DRV, DRV_ID(cuMemHostAlloc_v2), MF_GPU_API_ALLOC },
    { DRV, DRV_ID(cuMemAllocManaged), MF_GPU_API_ALLOC },
    { DRV, DRV_ID(cuMemAllocAsync), MF_GPU_API_ALLOC },
    { DRV, DRV_ID(cuMemAllocAsync_ptsz), MF_GPU_API_ALLOC },
    { DRV, DRV_ID(cuMemAllocFromPoolAsync), MF_GPU_API_ALLOC },
    { DRV, DRV_ID(cuMemAllocFromPoolAsync_ptsz), MF_GPU_API_ALLOC },
    { DRV, DRV_ID(cuMemFree_v2), MF_GPU_API_FREE },
    { DRV, DRV_ID(cuMemFreeHost), MF_GPU_API_FREE },
    { DRV, DRV_ID(cuMemFreeAsync), MF_GPU_API_FREE },
    { DRV, DRV_ID(cuMemFreeAsync_ptsz), MF_GPU_API_FREE },
    { DRV, DRV_ID(cuMemCreate), MF_GPU_API_VMM_CREATE },
    { DRV, DRV_ID(cuMemImportFromShareableHandle), MF_GPU_API_VMM_IMPORT },
    { DRV, DRV_ID(cuMemRelease), MF_GPU_API_VMM_RELEASE },
    { DRV, DRV_ID(cuMemMap), MF_GPU_API_VMM_MAP },
    { DRV, DRV_ID(cuMemUnmap), MF_GPU_API_VMM_UNMAP },
    { DRV, DRV_ID(cuMemHostRegister), MF_GPU_API_REGISTER },
    { DRV, DRV_ID(cuMemHostRegister_v2), MF_GPU_API_REGISTER },
    { DRV, DRV_ID(cuMemHostUnregister), MF_GPU_API_UNREGISTER },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

unsigned mf_gpu_api_role(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    for (size_t i = 0; i < COUNT(apis); i++)
        if (apis[i].domain == domain && apis[i].cbid == cbid)
            return apis[i].role;
    return MF_GPU_API_NONE;
}

CUptiResult mf_gpu_api_enable(CUpti_SubscriberHandle subscriber)
{
    CUptiResult first = CUPTI_SUCCESS;
    for (size_t i = 0; i < COUNT(apis); i++) {
        CUptiResult r = cuptiEnableCallback(1, subscriber, apis[i].domain, apis[i].cbid);
        if (r != CUPTI_SUCCESS && first == CUPTI_SUCCESS)
            first = r;
    }
    return first;
}

/* ---- calls whose memory vmm.c records ------------------------------------ */

#define RECORDED_SLOTS 16384u
static uint32_t recorded_ids[RECORDED_SLOTS];

static int recorded_here(unsigned role)
{
    return role >= MF_GPU_API_VMM_CREATE;
}

int mf_gpu_api_recorded(uint32_t correlation_id)
{
    return correlation_id &&
           __atomic_load_n(&recorded_ids[correlation_id % RECORDED_SLOTS], __ATOMIC_ACQUIRE) ==
               correlation_id;
}

/* ---- parameters ---------------------------------------------------------- */

#define P(type) ((const type##_params *)params)

/* The address an allocation call returned (its out-parameter), 0 if none. */
static uint64_t returned_address(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *params)
{
#define OUT(type, field) (P(type)->field ? (uint64_t)(uintptr_t)*P(type)->field : 0)
    if (domain == RT) {
        switch (cbid) {
        case RT_ID(cudaMalloc_v3020): return OUT(cudaMalloc_v3020, devPtr);
        case RT_ID(cudaMallocPitch_v3020): return OUT(cudaMallocPitch_v3020, devPtr);
        case RT_ID(cudaMallocHost_v3020): return OUT(cudaMallocHost_v3020, ptr);
        case RT_ID(cudaHostAlloc_v3020): return OUT(cudaHostAlloc_v3020, pHost);
        case RT_ID(cudaMallocManaged_v6000): return OUT(cudaMallocManaged_v6000, devPtr);
        case RT_ID(cudaMallocAsync_v11020): return OUT(cudaMallocAsync_v11020, devPtr);
        case RT_ID(cudaMallocAsync_ptsz_v11020): return OUT(cudaMallocAsync_ptsz_v11020, devPtr);
        case RT_ID(cudaMallocFromPoolAsync_v11020):
            return OUT(cudaMallocFromPoolAsync_v11020, ptr);
        case RT_ID(cudaMallocFromPoolAsync_ptsz_v11020):
            return OUT(cudaMallocFromPoolAsync_ptsz_v11020, ptr);
        case RT_ID(cudaMalloc3D_v3020):
            return P(cudaMalloc3D_v3020)->pitchedDevPtr
                       ? (uint64_t)(uintptr_t)P(cudaMalloc3D_v3020)->pitchedDevPtr->ptr : 0;
        default: return 0;
        }
    }
    switch (cbid) {
    case DRV_ID(cuMemAlloc_v2): return OUT(cuMemAlloc_v2, dptr);
    case DRV_ID(cuMemAllocPitch_v2): return OUT(cuMemAllocPitch_v2, dptr);
    case DRV_ID(cuMemAllocHost_v2): return OUT(cuMemAllocHost_v2, pp);
    case DRV_ID(cuMemHostAlloc):
    case DRV_ID(cuMemHostAlloc_v2): return OUT(cuMemHostAlloc, pp);
    case DRV_ID(cuMemAllocManaged): return OUT(cuMemAllocManaged, dptr);
    case DRV_ID(cuMemAllocAsync): return OUT(cuMemAllocAsync, dptr);
    case DRV_ID(cuMemAllocAsync_ptsz): return OUT(cuMemAllocAsync_ptsz, dptr);
    case DRV_ID(cuMemAllocFromPoolAsync): return OUT(cuMemAllocFromPoolAsync, dptr);
    case DRV_ID(cuMemAllocFromPoolAsync_ptsz): return OUT(cuMemAllocFromPoolAsync_ptsz, dptr);
    default: return 0;
    }
#undef OUT
}

/* The address a free or unregister call names. */
static uint64_t named_address(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void *params)
{
#define ARG(type, field) (uint64_t)(uintptr_t)P(type)->field
    if (domain == RT) {
        switch (cbid) {
        case RT_ID(cudaFree_v3020): return ARG(cudaFree_v3020, devPtr);
        case RT_ID(cudaFreeHost_v3020): return ARG(cudaFreeHost_v3020, ptr);
        case RT_ID(cudaFreeAsync_v11020): return ARG(cudaFreeAsync_v11020, devPtr);
        case RT_ID(cudaFreeAsync_ptsz_v11020): return ARG(cudaFreeAsync_ptsz_v11020, devPtr);
        case RT_ID(cudaHostUnregister_v4000): return ARG(cudaHostUnregister_v4000, ptr);
        default: return 0;
        }
    }
    switch (cbid) {
    case DRV_ID(cuMemFree_v2): return ARG(cuMemFree_v2, dptr);
    case DRV_ID(cuMemFreeHost): return ARG(cuMemFreeHost, p);
    case DRV_ID(cuMemFreeAsync): return ARG(cuMemFreeAsync, dptr);
    case DRV_ID(cuMemFreeAsync_ptsz): return ARG(cuMemFreeAsync_ptsz, dptr);
    case DRV_ID(cuMemHostUnregister): return ARG(cuMemHostUnregister, p);
    default: return 0;
    }
#undef ARG
}

/* The bytes an allocation call asked for (0 when it does not say). */
static uint64_t requested_size(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                               const void *params)
{
    if (domain == RT) {
        switch (cbid) {
        case RT_ID(cudaMalloc_v3020): return P(cudaMalloc_v3020)->size;
        case RT_ID(cudaMallocPitch_v3020):
            return (uint64_t)P(cudaMallocPitch_v3020)->width * P(cudaMallocPitch_v3020)->height;
        case RT_ID(cudaMallocHost_v3020): return P(cudaMallocHost_v3020)->size;
        case RT_ID(cudaHostAlloc_v3020): return P(cudaHostAlloc_v3020)->size;
        case RT_ID(cudaMallocManaged_v6000): return P(cudaMallocManaged_v6000)->size;
        case RT_ID(cudaMallocAsync_v11020): return P(cudaMallocAsync_v11020)->size;
        case RT_ID(cudaMallocAsync_ptsz_v11020): return P(cudaMallocAsync_ptsz_v11020)->size;
        case RT_ID(cudaMallocFromPoolAsync_v11020):
            return P(cudaMallocFromPoolAsync_v11020)->size;
        case RT_ID(cudaMallocFromPoolAsync_ptsz_v11020):
            return P(cudaMallocFromPoolAsync_ptsz_v11020)->size;
        default: return 0;
        }
    }
    switch (cbid) {
    case DRV_ID(cuMemAlloc_v2): return P(cuMemAlloc_v2)->bytesize;
    case DRV_ID(cuMemAllocPitch_v2):
        return (uint64_t)P(cuMemAllocPitch_v2)->WidthInBytes * P(cuMemAllocPitch_v2)->Height;
    case DRV_ID(cuMemAllocHost_v2): return P(cuMemAllocHost_v2)->bytesize;
    case DRV_ID(cuMemHostAlloc):
    case DRV_ID(cuMemHostAlloc_v2): return P(cuMemHostAlloc)->bytesize;
    case DRV_ID(cuMemAllocManaged): return P(cuMemAllocManaged)->bytesize;
    case DRV_ID(cuMemAllocAsync): return P(cuMemAllocAsync)->bytesize;
    case DRV_ID(cuMemAllocAsync_ptsz): return P(cuMemAllocAsync_ptsz)->bytesize;
    case DRV_ID(cuMemAllocFromPoolAsync): return P(cuMemAllocFromPoolAsync)->bytesize;
    case DRV_ID(cuMemAllocFromPoolAsync_ptsz): return P(cuMemAllocFromPoolAsync_ptsz)->bytesize;
    case DRV_ID(cuMemCreate): return P(cuMemCreate)->size;
    default: return 0;
    }
}

/* Whether a call failed for want of memory. */
static int out_of_memory(CUpti_CallbackDomain domain, const CUpti_CallbackData *data)
{
    if (!data->functionReturnValue)
        return 0;
    if (domain == RT)
        return *(const cudaError_t *)data->functionReturnValue == cudaErrorMemoryAllocation;
    return *(const CUresult *)data->functionReturnValue == CUDA_ERROR_OUT_OF_MEMORY;
}

static int call_succeeded(CUpti_CallbackDomain domain, const CUpti_CallbackData *data)
{
    if (!data->functionReturnValue)
        return 0;
    if (domain == RT)
        return *(const cudaError_t *)data->functionReturnValue == cudaSuccess;
    return *(const CUresult *)data->functionReturnValue == CUDA_SUCCESS;
}

/* The device of the calling context (0 if CUPTI cannot tell). */
static unsigned context_device(const CUpti_CallbackData *data)
{
    uint32_t id = 0;
    if (!data->context || cuptiGetDeviceId(data->context, &id) != CUPTI_SUCCESS)
        return 0;
    return id;
}

/* ---- the outermost call of each thread ----------------------------------- */

typedef struct api_frame {
    uint32_t depth;
    uint32_t scope;
    uint32_t stack;           /* the call stack of the outermost call (stacks on) */
    uint64_t enter_ns;
} api_frame;

static __thread api_frame frame;

static void on_enter(void)
{
    if (frame.depth++ == 0) {
        frame.enter_ns = mf_clock_now();
        frame.scope = mf_recorder_current_scope();
        frame.stack = mf_recorder_stack(0); /* 0 unless stacks are on */
    }
}

/* 1 when this EXIT ends the outermost call (an EXIT without an ENTER, when
 * CUPTI subscribed mid-call, counts as one that began now). */
static int on_exit_outermost(uint64_t now)
{
    if (frame.depth == 0) {
        frame.enter_ns = now;
        frame.scope = mf_recorder_current_scope();
        frame.stack = mf_recorder_stack(0);
        return 1;
    }
    return --frame.depth == 0;
}

static mf_gpu_origin origin_now(unsigned device, uint64_t now)
{
    mf_gpu_origin o;
    memset(&o, 0, sizeof o);
    o.scope = frame.scope;
    o.tid = mf_recorder_thread_id();
    o.stack = frame.stack;
    o.device = MF_DEVICE(MF_DEVICE_GPU, device);
    o.enter_ns = frame.enter_ns;
    o.exit_ns = now;
    o.has_sample = (uint16_t)mf_gpu_sample_if_due(device, o.sample);
    return o;
}

/* A snapshot for an event vmm.c recorded now on gpu/<device>. */
static void sample_recorded(int device, uint64_t now)
{
    uint64_t value[MF_SAMPLE_VALUES] = { 0 };
    if (device >= 0 && mf_gpu_sample_if_due((unsigned)device, value))
        mf_recorder_sample(MF_DEVICE(MF_DEVICE_GPU, (unsigned)device), now, value);
}

static unsigned created_device(const cuMemCreate_params *p, unsigned fallback)
{
    if (p->prop && p->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        return (unsigned)p->prop->location.id;
    return fallback;
}

/* What the outermost call did, now that it returned successfully. */
static void act(unsigned role, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                const CUpti_CallbackData *data, uint64_t now)
{
    const void *params = data->functionParams;
    unsigned device = context_device(data);
    mf_gpu_origin o;
    uint64_t addr;
    switch (role) {
    case MF_GPU_API_ALLOC:
        if ((addr = returned_address(domain, cbid, params)) != 0) {
            o = origin_now(device, now);
            mf_gpu_origin_put(MF_GPU_KEY_ALLOC, addr, &o);
        }
        break;
    case MF_GPU_API_ALLOC_ARRAY:
        o = origin_now(device, now);
        mf_gpu_origin_put(MF_GPU_KEY_CORRELATION, data->correlationId, &o);
        break;
    case MF_GPU_API_FREE:
        if ((addr = named_address(domain, cbid, params)) != 0) {
            o = origin_now(device, now);
            if (o.has_sample) /* a free needs no origin but its snapshot */
                mf_gpu_origin_put(MF_GPU_KEY_FREE, addr, &o);
        }
        break;
    case MF_GPU_API_VMM_CREATE:
        mf_gpu_vmm_created(*P(cuMemCreate)->handle, P(cuMemCreate)->size,
                           created_device(P(cuMemCreate), device));
        break;
    case MF_GPU_API_VMM_IMPORT:
        mf_gpu_vmm_created(*P(cuMemImportFromShareableHandle)->handle, 0, device);
        break;
    case MF_GPU_API_VMM_RELEASE:
        mf_gpu_vmm_released(P(cuMemRelease)->handle);
        break;
    case MF_GPU_API_VMM_MAP:
        sample_recorded(mf_gpu_vmm_mapped(P(cuMemMap)->ptr, P(cuMemMap)->size,
                                          P(cuMemMap)->handle, device, frame.scope, now), now);
        break;
    case MF_GPU_API_VMM_UNMAP:
        sample_recorded(mf_gpu_vmm_unmapped(P(cuMemUnmap)->ptr, P(cuMemUnmap)->size, now), now);
        break;
    case MF_GPU_API_REGISTER:
        if (domain == RT)
            sample_recorded(mf_gpu_host_registered((uintptr_t)P(cudaHostRegister_v4000)->ptr,
                                                   P(cudaHostRegister_v4000)->size, device,
                                                   frame.scope, now), now);
        else
            sample_recorded(mf_gpu_host_registered((uintptr_t)P(cuMemHostRegister_v2)->p,
                                                   P(cuMemHostRegister_v2)->bytesize, device,
                                                   frame.scope, now), now);
        break;
    case MF_GPU_API_UNREGISTER:
        sample_recorded(mf_gpu_host_unregistered(named_address(domain, cbid, params), now), now);
        break;
    }
}

/* The outermost allocation call failed for want of device memory: an OOM
 * record with what it asked for and what the device had (cuMemGetInfo now,
 * in the calling thread's context), in the scope and stack of the call.  A
 * caching allocator may recover (PyTorch frees its cache and tries again);
 * the record says only that this call failed. */
static void failed(unsigned role, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                   const CUpti_CallbackData *data, uint64_t now)
{
    const void *params = data->functionParams;
    if ((role != MF_GPU_API_ALLOC && role != MF_GPU_API_VMM_CREATE) || !params ||
        !out_of_memory(domain, data))
        return;
    uint64_t used = 0, total = 0, free_bytes = UINT64_MAX;
    if (mf_gpu_memory_now(&used, &total) == 0)
        free_bytes = total - used;
    unsigned device = context_device(data);
    if (role == MF_GPU_API_VMM_CREATE)
        device = created_device(P(cuMemCreate), device);
    mf_recorder_oom(MF_DEVICE(MF_DEVICE_GPU, device), MF_OOM_CUDA_API, now,
                    requested_size(domain, cbid, params), free_bytes, total,
                    frame.scope, frame.stack);
}

void CUPTIAPI mf_gpu_api_callback(void *userdata, CUpti_CallbackDomain domain,
                                  CUpti_CallbackId cbid, const void *cbdata)
{
    (void)userdata;
    const CUpti_CallbackData *data = cbdata;
    unsigned role = data ? mf_gpu_api_role(domain, cbid) : MF_GPU_API_NONE;
    if (role == MF_GPU_API_NONE)
        return;
    MF_INTERNAL_BEGIN();
    if (data->callbackSite == CUPTI_API_ENTER) {
        if (recorded_here(role) && data->correlationId)
            __atomic_store_n(&recorded_ids[data->correlationId % RECORDED_SLOTS],
                             data->correlationId, __ATOMIC_RELEASE);
        on_enter();
    } else {
        uint64_t now = mf_clock_now();
        if (on_exit_outermost(now) && data->functionParams && mf_recorder_log_open()) {
            if (call_succeeded(domain, data))
                act(role, domain, cbid, data, now);
            else
                failed(role, domain, cbid, data, now);
        }
    }
    MF_INTERNAL_END();
}
