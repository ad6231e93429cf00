/*
 * loader.c - what the preload library sees of the dynamic loader.
 *
 * dlclose: code that goes away may be replaced by other code at the same
 * addresses, which the stack walker's cached frame rules must not be taken
 * for (mf_recorder_code_unloaded).
 *
 * dlopen: a program that asks for the CUDA driver (libcuda.so*) uses CUDA,
 * even when no CUDA library is among its loaded objects: the CUDA runtime
 * linked in statically (nvcc's default) opens the driver at its first call.
 * The recorder is told (mf_cuda_driver_sought), and its exit check says so
 * when no driver was found (runtime/cuda_seen.c).  Nothing else changes:
 * the call goes on to libc's dlopen as a tail call, so that libc still
 * finds the program's own code as the caller (by the return address) and
 * looks for a bare name in the caller's RUNPATH, not in this library's
 * (tests/preload_dlopen.sh).
 */
#include <dlfcn.h>
#include <string.h>

#include "cuda_seen.h"
#include "recorder.h"

typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);

/* libc's own functions, looked up at load (dlopen also at a call that
 * comes before: another library's constructor may open one). */
static dlopen_fn libc_dlopen;
static dlclose_fn libc_dlclose;

__attribute__((constructor)) static void find_libc_loader(void)
{
    __atomic_store_n(&libc_dlopen, (dlopen_fn)dlsym(RTLD_NEXT, "dlopen"), __ATOMIC_RELAXED);
    libc_dlclose = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
}

/* The file name of the CUDA driver that file names, or NULL. */
static const char *cuda_driver(const char *file)
{
    if (!file)
        return NULL;
    const char *slash = strrchr(file, '/');
    const char *name = slash ? slash + 1 : file;
    return strncmp(name, "libcuda.so", 10) == 0 ? name : NULL;
}

/* dlopen's forward is a tail call at every optimisation level: musttail
 * where the compiler has it, else the function is optimised for it. */
#if defined(__has_attribute)
#if __has_attribute(musttail)
#define FORWARD __attribute__((musttail)) return
#define FORWARDS
#endif
#endif
#ifndef FORWARD
#define FORWARD return
#define FORWARDS __attribute__((optimize("O2", "optimize-sibling-calls")))
#endif

FORWARDS MF_EXPORT void *dlopen(const char *file, int mode)
{
    const char *driver = cuda_driver(file);
    if (MF_UNLIKELY(driver != NULL))
        mf_cuda_driver_sought(driver);
    dlopen_fn real = __atomic_load_n(&libc_dlopen, __ATOMIC_RELAXED);
    if (MF_UNLIKELY(!real)) {
        real = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
        __atomic_store_n(&libc_dlopen, real, __ATOMIC_RELAXED);
    }
    FORWARD real(file, mode);
}

MF_EXPORT int dlclose(void *handle)
{
    if (!libc_dlclose)
        return -1; /* not found at load: nothing to close with */
    int rc = libc_dlclose(handle);
    mf_recorder_code_unloaded();
    return rc;
}
