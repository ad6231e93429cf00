/*
 * gpu_inject_probe.c - helper of tests/gpu_injection.sh: a program that gets
 * the CUDA plugin the way the CUDA driver gives it at cuInit - dlopen of
 * CUDA_INJECTION64_PATH, then InitializeInjection() - and then makes CPU
 * allocations of a size the script can find in the log: 3 x malloc(12345),
 * two of them freed.
 *
 * It links neither libmemflow nor CUPTI: they come in with the plugin (or
 * with the preload library under `memflow run`), as in a program that never
 * heard of memflow.  That load needs libmemflow's initial-exec TLS to fit in
 * what glibc keeps for libraries loaded later (the script shrinks that to
 * what a big process such as Python + torch has left).
 *
 * Prints "InitializeInjection returned N", or why it could not, and exits 1.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (!path) {
        printf("CUDA_INJECTION64_PATH is not set\n");
        return 1;
    }
    void *plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!plugin) {
        printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    int (*initialize)(void) = (int (*)(void))dlsym(plugin, "InitializeInjection");
    if (!initialize) {
        printf("no InitializeInjection in %s\n", path);
        return 1;
    }
    int rc = initialize();
    void *volatile blocks[3];
    for (int i = 0; i < 3; i++)
        blocks[i] = malloc(12345);
    free(blocks[0]);
    free(blocks[2]);
    printf("InitializeInjection returned %d\n", rc);
    return 0;
}
