/*
 * caching_allocator.cu - a small caching allocator over cudaMalloc that
 * reports its blocks to memflow, the way PyTorch's or MXNet's pools would.
 *
 * CUPTI sees only the big segments (2 MiB cudaMalloc's); the allocator
 * carves blocks out of them and reports each block with
 * memflow_record_alloc("gpu/N", ...) - requested size, rounded (actual)
 * size, a name, and MEMFLOW_ALLOC_REUSED when the block came from the cache -
 * and memflow_record_free when the program gives it back.  In memory_flow.svg
 * the segments and the blocks inside them show together; the GPU CSV's
 * Reuse? column comes from the flag.
 *
 * Three training-like steps allocate the same tensors in scopes; the first
 * step carves fresh blocks, the next two are served from the cache.
 *
 * Run: memflow run -o out -- samples/cuda/caching_allocator   (needs a GPU)
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "memflow.h"

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "caching_allocator: %s:%d: %s: %s\n", __FILE__, __LINE__, \
                    #call, cudaGetErrorString(err_));                                 \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

enum { SEGMENT_BYTES = 2 << 20, ROUND = 512, MAX_SEGMENTS = 16, MAX_CACHED = 256 };

typedef struct cached_block {
    char *addr;
    size_t size; /* rounded size */
} cached_block;

typedef struct caching_allocator {
    char device_name[16];
    char *segments[MAX_SEGMENTS];
    int n_segments;
    size_t segment_used; /* bytes carved from the newest segment */
    cached_block cache[MAX_CACHED];
    int n_cached;
    size_t hits, misses;
} caching_allocator;

static size_t round_up(size_t bytes)
{
    return (bytes + ROUND - 1) / ROUND * ROUND;
}

/* A cached block of exactly this rounded size, or NULL. */
static char *take_cached(caching_allocator *a, size_t size)
{
    for (int i = 0; i < a->n_cached; i++) {
        if (a->cache[i].size != size)
            continue;
        char *addr = a->cache[i].addr;
        a->cache[i] = a->cache[--a->n_cached];
        return addr;
    }
    return NULL;
}

/* Carve size bytes from the newest segment, cudaMalloc'ing one if needed. */
static char *carve(caching_allocator *a, size_t size)
{
    if (size > SEGMENT_BYTES)
        return NULL;
    if (a->n_segments == 0 || a->segment_used + size > SEGMENT_BYTES) {
        if (a->n_segments == MAX_SEGMENTS)
            return NULL;
        MEMFLOW_SCOPE("allocator_segment") {
            CHECK(cudaMalloc((void **)&a->segments[a->n_segments], SEGMENT_BYTES));
        }
        a->n_segments++;
        a->segment_used = 0;
    }
    char *addr = a->segments[a->n_segments - 1] + a->segment_used;
    a->segment_used += size;
    return addr;
}

static void *allocator_alloc(caching_allocator *a, size_t bytes, const char *name)
{
    size_t size = round_up(bytes);
    char *addr = take_cached(a, size);
    unsigned flags = 0;
    if (addr) {
        a->hits++;
        flags = MEMFLOW_ALLOC_REUSED;
    } else {
        a->misses++;
        addr = carve(a, size);
        if (!addr) {
            fprintf(stderr, "caching_allocator: out of segments for %zu bytes\n", bytes);
            exit(1);
        }
    }
    memflow_record_alloc(a->device_name, addr, bytes, size, name, flags);
    return addr;
}

static void allocator_free(caching_allocator *a, void *addr, size_t bytes)
{
    memflow_record_free(a->device_name, addr);
    if (a->n_cached < MAX_CACHED)
        a->cache[a->n_cached++] = (cached_block){ (char *)addr, round_up(bytes) };
}

static void allocator_release(caching_allocator *a)
{
    for (int i = 0; i < a->n_segments; i++)
        CHECK(cudaFree(a->segments[i]));
    a->n_segments = 0;
    a->n_cached = 0;
}

__global__ void scale(float *x, int n, float factor)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n)
        x[k] = x[k] * factor + 1.0f;
}

static const struct {
    const char *scope, *name;
    size_t bytes;
} tensors[] = {
    { "net_dense0", "weight", 5120 },   { "net_dense0", "bias", 512 },
    { "net_dense0", "output", 8192 },   { "net_dense1", "weight", 32768 },
    { "net_dense1", "bias", 256 },      { "net_dense1", "output", 4096 },
    { "net_dense2", "weight", 8192 },   { "net_dense2", "output", 2048 },
};
enum { N_TENSORS = sizeof tensors / sizeof tensors[0] };

static float step(caching_allocator *a, int iteration)
{
    void *blocks[N_TENSORS];
    for (int i = 0; i < N_TENSORS; i++)
        MEMFLOW_SCOPE(tensors[i].scope) {
            blocks[i] = allocator_alloc(a, tensors[i].bytes, tensors[i].name);
            int n = (int)(tensors[i].bytes / sizeof(float));
            CHECK(cudaMemset(blocks[i], 0, tensors[i].bytes));
            scale<<<(n + 127) / 128, 128>>>((float *)blocks[i], n, 0.5f * (float)iteration);
        }
    float first = 0.0f;
    CHECK(cudaMemcpy(&first, blocks[0], sizeof first, cudaMemcpyDeviceToHost));
    for (int i = N_TENSORS - 1; i >= 0; i--)
        allocator_free(a, blocks[i], tensors[i].bytes);
    return first;
}

int main(void)
{
    int device = 0;
    CHECK(cudaGetDevice(&device));
    caching_allocator a = {};
    snprintf(a.device_name, sizeof a.device_name, "gpu/%d", device);
    float sum = 0.0f;
    for (int iteration = 0; iteration < 3; iteration++) {
        char scope[32];
        snprintf(scope, sizeof scope, "step%d", iteration);
        MEMFLOW_SCOPE(scope) {
            sum += step(&a, iteration);
        }
    }
    CHECK(cudaDeviceSynchronize());
    printf("caching_allocator: %d segment(s), %zu cache hits, %zu misses, checksum %.1f\n",
           a.n_segments, a.hits, a.misses, sum);
    allocator_release(&a);
    return 0;
}
