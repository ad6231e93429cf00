/*
 * clock_probe.cu - where GPU records land on memflow's clock, against
 * CLOCK_MONOTONIC: four cudaMalloc of 1 MiB, 2 s apart, each bracketed by
 * clock_gettime(CLOCK_MONOTONIC) just before and after the call.  Prints
 * "bracket K ADDRESS BEFORE_NS AFTER_NS" per call; bench/gpu_check.py finds
 * each block in the log and reports how far its time is from its bracket
 * and the rate error between the first and the last (ppm).
 *
 * Run: memflow run -o out -- samples/cuda/clock_probe   (needs a GPU)
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static unsigned long long monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(void)
{
    void *blocks[4];
    if (cudaFree(0) != cudaSuccess) { /* the context, outside the brackets */
        fprintf(stderr, "clock_probe: no CUDA device\n");
        return 1;
    }
    for (int k = 0; k < 4; k++) {
        unsigned long long before = monotonic_ns();
        cudaError_t err = cudaMalloc(&blocks[k], 1 << 20);
        unsigned long long after = monotonic_ns();
        if (err != cudaSuccess) {
            fprintf(stderr, "clock_probe: cudaMalloc: %s\n", cudaGetErrorString(err));
            return 1;
        }
        printf("bracket %d %p %llu %llu\n", k, blocks[k], before, after);
        fflush(stdout);
        if (k < 3)
            sleep(2);
    }
    for (int k = 0; k < 4; k++)
        cudaFree(blocks[k]);
    return 0;
}
