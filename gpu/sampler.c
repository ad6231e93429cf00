/*
 * sampler.c - the GPU side of sample_rate: what the driver says is used.
 *
 * After every sample_rate GPU alloc/free events the recorder calls
 * mf_gpu_sample() on the thread that records the event - CUPTI's buffer
 * thread, which has no CUDA context of its own.  So translate.c tells us the
 * context of the record being translated (kept from the API callback by
 * contextUid); we make it current, ask cuMemGetInfo, and restore whatever
 * was current before.  The driver is looked up with dlopen(RTLD_NOLOAD): the
 * plugin never loads libcuda itself, and without a driver in the process the
 * sample's values stay 0.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>

#include "gpu.h"

typedef CUresult (*mem_get_info_fn)(size_t *free_bytes, size_t *total_bytes);
typedef CUresult (*ctx_get_current_fn)(CUcontext *context);
typedef CUresult (*ctx_set_current_fn)(CUcontext context);

static mem_get_info_fn mem_get_info;
static ctx_get_current_fn ctx_get_current;
static ctx_set_current_fn ctx_set_current;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static __thread void *sample_context;

static void find_driver(void)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!cuda)
        return;
    ctx_get_current = (ctx_get_current_fn)dlsym(cuda, "cuCtxGetCurrent");
    ctx_set_current = (ctx_set_current_fn)dlsym(cuda, "cuCtxSetCurrent");
    mem_get_info = (mem_get_info_fn)dlsym(cuda, "cuMemGetInfo_v2");
    if (!ctx_get_current || !ctx_set_current || !mem_get_info)
        mem_get_info = NULL;
}

void mf_gpu_sampler_set_context(void *context)
{
    sample_context = context;
}

void mf_gpu_sample(uint16_t device, uint64_t value[MF_SAMPLE_VALUES])
{
    (void)device; /* the context of the record names the device */
    pthread_once(&driver_once, find_driver);
    if (!mem_get_info || !sample_context)
        return;
    CUcontext previous = NULL;
    if (ctx_get_current(&previous) != CUDA_SUCCESS)
        return;
    if (previous != sample_context && ctx_set_current(sample_context) != CUDA_SUCCESS)
        return;
    size_t free_bytes = 0, total_bytes = 0;
    if (mem_get_info(&free_bytes, &total_bytes) == CUDA_SUCCESS) {
        value[MF_SAMPLE_GPU_USED] = total_bytes - free_bytes;
        value[MF_SAMPLE_GPU_TOTAL] = total_bytes;
    }
    if (previous != sample_context)
        ctx_set_current(previous);
}
