/*
 * sampler.c - the GPU side of sample_rate, taken where the event happens,
 * and the few CUDA driver calls the plugin makes itself.
 *
 * After every sample_rate GPU allocations and frees on a device, a snapshot
 * of what the driver says is used: at the API's exit (api.c), on the thread
 * that called it, whose current context is the one the call just used, so
 * cuMemGetInfo answers for the right device.  The snapshot travels with the
 * block's origin and is written with the event's own timestamp when the
 * record is translated (or at once for blocks vmm.c records).  CUPTI's
 * buffer thread has no context and the delivery time is not the event's:
 * that is why the snapshot is not taken there.
 *
 * The driver is looked up with dlopen(RTLD_NOLOAD): the plugin never loads
 * libcuda itself, and without one in the process the values stay 0.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>

#include "gpu.h"

typedef CUresult (*mem_get_info_fn)(size_t *free_bytes, size_t *total_bytes);
typedef CUresult (*device_get_fn)(CUdevice *device, int ordinal);
typedef CUresult (*device_attribute_fn)(int *value, CUdevice_attribute attribute,
                                        CUdevice device);

static mem_get_info_fn mem_get_info;
static device_get_fn device_get;
static device_attribute_fn device_attribute;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static mf_gpu_memory_query query_override;

static void find_driver(void)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!cuda)
        return;
    mem_get_info = (mem_get_info_fn)dlsym(cuda, "cuMemGetInfo_v2");
    device_get = (device_get_fn)dlsym(cuda, "cuDeviceGet");
    device_attribute = (device_attribute_fn)dlsym(cuda, "cuDeviceGetAttribute");
}

/* cuMemGetInfo in the calling thread's current context. */
static int driver_memory(uint64_t *used, uint64_t *total)
{
    pthread_once(&driver_once, find_driver);
    size_t free_bytes = 0, total_bytes = 0;
    if (!mem_get_info || mem_get_info(&free_bytes, &total_bytes) != CUDA_SUCCESS)
        return -1;
    *used = total_bytes - free_bytes;
    *total = total_bytes;
    return 0;
}

void mf_gpu_sampler_set_query(mf_gpu_memory_query query)
{
    __atomic_store_n(&query_override, query, __ATOMIC_RELEASE);
}

int mf_gpu_memory_now(uint64_t *used, uint64_t *total)
{
    mf_gpu_memory_query query = __atomic_load_n(&query_override, __ATOMIC_ACQUIRE);
    return (query ? query : driver_memory)(used, total);
}

int mf_gpu_sample_if_due(unsigned device, uint64_t value[2])
{
    if (!mf_recorder_sample_due(MF_DEVICE(MF_DEVICE_GPU, device)))
        return 0;
    uint64_t used = 0, total = 0;
    if (mf_gpu_memory_now(&used, &total) == 0) {
        value[MF_SAMPLE_GPU_USED] = used;
        value[MF_SAMPLE_GPU_TOTAL] = total;
    }
    return 1;
}

uint32_t mf_gpu_pci_bus(unsigned device)
{
    pthread_once(&driver_once, find_driver);
    CUdevice handle;
    int domain = 0, bus = 0, slot = 0;
    if (!device_get || !device_attribute || device_get(&handle, (int)device) != CUDA_SUCCESS ||
        device_attribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, handle) != CUDA_SUCCESS ||
        device_attribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, handle) != CUDA_SUCCESS ||
        device_attribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, handle) != CUDA_SUCCESS)
        return 0;
    return (uint32_t)domain << 16 | (uint32_t)(bus & 0xff) << 8 | (uint32_t)(slot & 0xff);
}
