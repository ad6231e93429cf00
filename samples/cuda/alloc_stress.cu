/*
 * alloc_stress.cu - what PyTorch with PYTORCH_NO_CUDA_MEMORY_CACHING=1 does
 * to GPU capture, made countable: 100,000 cudaMalloc of 512 bytes in 100
 * scopes ("layer00:" ... "layer99:", 1,000 blocks each), all live at once,
 * then freed.  Five times along the way memflow_dumps() flushes CUPTI while a
 * kernel is still running (a flush must never cut records).
 *
 * Prints "allocated 100000 x 512 in 100 scopes", "dumps 5 with a kernel in
 * flight", "freed 100000"; bench/gpu_check.py compares them with the log.
 *
 * Run: memflow run -o out -- samples/cuda/alloc_stress   (needs a GPU)
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "memflow.h"

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "alloc_stress: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                    cudaGetErrorString(err_));                                        \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

enum { BLOCKS = 100000, SCOPES = 100, BYTES = 512 };

/* Keeps the GPU busy for about `cycles` clock ticks. */
__global__ void spin(long long cycles, int *out)
{
    long long start = clock64();
    while (clock64() - start < cycles)
        ;
    *out = 1;
}

int main(void)
{
    static void *blocks[BLOCKS];
    int *flag = NULL;
    CHECK(cudaMalloc(&flag, sizeof *flag));
    int dumps = 0;
    for (int i = 0; i < BLOCKS; i++) {
        char scope[16];
        snprintf(scope, sizeof scope, "layer%02d", i % SCOPES);
        memflow_scope_push(scope, 0);
        CHECK(cudaMalloc(&blocks[i], BYTES));
        memflow_scope_pop();
        if (i % 20000 == 10000) {
            spin<<<1, 1>>>(200000000LL, flag); /* ~0.1 s: still running at the flush */
            CHECK(cudaGetLastError());
            if (memflow_dumps(0, "table", "total", 0))
                dumps++;
        }
    }
    printf("allocated %d x %d in %d scopes\n", BLOCKS, BYTES, SCOPES);
    printf("dumps %d with a kernel in flight\n", dumps);
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < BLOCKS; i++)
        CHECK(cudaFree(blocks[i]));
    CHECK(cudaFree(flag));
    printf("freed %d\n", BLOCKS);
    return 0;
}
