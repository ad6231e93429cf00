/*
 * memory_kinds.cu - one or two blocks of every kind of GPU memory memflow
 * records, each kind in a scope of its own ("kinds_device:", ...), so a log
 * can be checked kind by kind against what was made (bench/gpu_check.py):
 *
 *   device      cudaMalloc, cudaMallocPitch, cudaMalloc3D          3 blocks
 *   array       cudaMallocArray (memory kind DEVICE in the log)    1
 *   pinned      cudaMallocHost, cudaHostAlloc                      2
 *   registered  cudaHostRegister of malloc'd memory (PINNED|REGISTERED) 1
 *   managed     cudaMallocManaged                                  1
 *   pool        cudaMallocAsync, cudaMallocFromPoolAsync (own pool) 2
 *   vmm         cuMemCreate + cuMemMap of two granules             2
 *   statics     a __device__ and a __managed__ global (named by CUPTI)
 *
 * Prints "made KIND COUNT BYTES" per kind and "static NAME BYTES", then frees
 * everything and prints "freed all".  The driver's VMM functions come
 * through cudaGetDriverEntryPointByVersion, so the program links only the
 * runtime (it starts, and fails at its first call, where there is no driver).
 *
 * Run: memflow run -o out -- samples/cuda/memory_kinds   (needs a GPU)
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "memflow.h"

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "memory_kinds: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                    cudaGetErrorString(err_));                                        \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define CHECK_CU(call)                                                                \
    do {                                                                              \
        CUresult err_ = (call);                                                       \
        if (err_ != CUDA_SUCCESS) {                                                   \
            fprintf(stderr, "memory_kinds: %s:%d: %s: CUresult %d\n", __FILE__, __LINE__, \
                    #call, (int)err_);                                                \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

__device__ float device_static[1024];
__managed__ float managed_static[1024];

__global__ void touch_statics(void)
{
    device_static[threadIdx.x] = 1.0f;
    managed_static[threadIdx.x] = 2.0f;
}

typedef CUresult (*mem_create_fn)(CUmemGenericAllocationHandle *, size_t,
                                  const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*granularity_fn)(size_t *, const CUmemAllocationProp *,
                                   CUmemAllocationGranularity_flags);
typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                           unsigned long long);
typedef CUresult (*access_fn)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*address_free_fn)(CUdeviceptr, size_t);

static void *driver(const char *name)
{
    void *fn = NULL;
    cudaDriverEntryPointQueryResult found;
    CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !fn) {
        fprintf(stderr, "memory_kinds: the driver has no %s\n", name);
        exit(1);
    }
    return fn;
}

static void made(const char *kind, int count, size_t bytes)
{
    printf("made %s %d %zu\n", kind, count, bytes);
}

int main(void)
{
    CHECK(cudaSetDevice(0));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));

    memflow_scope_push("kinds_device", 0);
    void *dev = NULL, *pitched = NULL;
    size_t pitch = 0;
    cudaPitchedPtr cube;
    CHECK(cudaMalloc(&dev, 1 << 20));
    CHECK(cudaMallocPitch(&pitched, &pitch, 1000, 100));
    CHECK(cudaMalloc3D(&cube, make_cudaExtent(256, 64, 4)));
    made("device", 3, (1 << 20) + pitch * 100 + cube.pitch * 64 * 4);
    memflow_scope_pop();

    memflow_scope_push("kinds_array", 0);
    cudaArray_t array;
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
    CHECK(cudaMallocArray(&array, &desc, 256, 256));
    made("array", 1, 256 * 256 * sizeof(float));
    memflow_scope_pop();

    memflow_scope_push("kinds_pinned", 0);
    void *host1 = NULL, *host2 = NULL;
    CHECK(cudaMallocHost(&host1, 65536));
    CHECK(cudaHostAlloc(&host2, 65536, cudaHostAllocDefault));
    made("pinned", 2, 2 * 65536);
    memflow_scope_pop();

    memflow_scope_push("kinds_registered", 0);
    size_t registered_bytes = 1 << 20;
    void *plain = aligned_alloc(4096, registered_bytes);
    CHECK(cudaHostRegister(plain, registered_bytes, cudaHostRegisterDefault));
    made("registered", 1, registered_bytes);
    memflow_scope_pop();

    memflow_scope_push("kinds_managed", 0);
    void *managed = NULL;
    CHECK(cudaMallocManaged(&managed, 1 << 20));
    made("managed", 1, 1 << 20);
    memflow_scope_pop();

    memflow_scope_push("kinds_pool", 0);
    void *async1 = NULL, *async2 = NULL;
    cudaMemPool_t pool;
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CHECK(cudaMemPoolCreate(&pool, &props));
    CHECK(cudaMallocAsync(&async1, 1 << 20, stream));
    CHECK(cudaMallocFromPoolAsync(&async2, 1 << 20, pool, stream));
    CHECK(cudaStreamSynchronize(stream));
    made("pool", 2, 2 << 20);
    memflow_scope_pop();

    memflow_scope_push("kinds_vmm", 0);
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t granule = 0;
    CHECK_CU(((granularity_fn)driver("cuMemGetAllocationGranularity"))(
        &granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle handles[2];
    CUdeviceptr va = 0;
    CHECK_CU(((reserve_fn)driver("cuMemAddressReserve"))(&va, 2 * granule, 0, 0, 0));
    for (int i = 0; i < 2; i++) {
        CHECK_CU(((mem_create_fn)driver("cuMemCreate"))(&handles[i], granule, &prop, 0));
        CHECK_CU(((map_fn)driver("cuMemMap"))(va + i * granule, granule, 0, handles[i], 0));
    }
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(((access_fn)driver("cuMemSetAccess"))(va, 2 * granule, &access, 1));
    made("vmm", 2, 2 * granule);
    memflow_scope_pop();

    touch_statics<<<1, 1024>>>();
    CHECK(cudaDeviceSynchronize());
    printf("static device_static %zu\nstatic managed_static %zu\n", sizeof device_static,
           sizeof managed_static);

    CHECK_CU(((unmap_fn)driver("cuMemUnmap"))(va, 2 * granule));
    for (int i = 0; i < 2; i++)
        CHECK_CU(((release_fn)driver("cuMemRelease"))(handles[i]));
    CHECK_CU(((address_free_fn)driver("cuMemAddressFree"))(va, 2 * granule));
    CHECK(cudaFreeAsync(async1, stream));
    CHECK(cudaFreeAsync(async2, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemPoolDestroy(pool));
    CHECK(cudaFree(managed));
    CHECK(cudaHostUnregister(plain));
    free(plain);
    CHECK(cudaFreeHost(host1));
    CHECK(cudaFreeHost(host2));
    CHECK(cudaFreeArray(array));
    CHECK(cudaFree(cube.ptr));
    CHECK(cudaFree(pitched));
    CHECK(cudaFree(dev));
    CHECK(cudaStreamDestroy(stream));
    printf("freed all\n");
    return 0;
}
