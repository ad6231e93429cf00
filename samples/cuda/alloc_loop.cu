/*
 * alloc_loop.cu - cudaMalloc/cudaFree in a loop, timed: the workload of the
 * GPU capture-overhead measurement in bench/gpu-remote.sh (run it plainly
 * and under `memflow run`, compare the per-pair times).
 *
 * Usage: alloc_loop [PAIRS [BYTES]]   (default 20000 pairs of 1 MiB)
 * Prints: alloc_loop: PAIRS pairs of BYTES bytes in MS ms, NS ns per pair
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "alloc_loop: %s: %s\n", #call, cudaGetErrorString(err_)); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    long bytes = argc > 2 ? strtol(argv[2], NULL, 10) : 1 << 20;
    if (pairs <= 0 || bytes <= 0) {
        fprintf(stderr, "usage: alloc_loop [PAIRS [BYTES]] (both > 0)\n");
        return 2;
    }
    CHECK(cudaFree(0)); /* create the context outside the timed loop */
    double start = now_ns();
    for (long i = 0; i < pairs; i++) {
        void *p = NULL;
        CHECK(cudaMalloc(&p, (size_t)bytes));
        CHECK(cudaFree(p));
    }
    double elapsed = now_ns() - start;
    printf("alloc_loop: %ld pairs of %ld bytes in %.1f ms, %.0f ns per pair\n", pairs, bytes,
           elapsed / 1e6, elapsed / (double)pairs);
    return 0;
}
