/*
 * api.c - the public control API of memflow.h: configuration, state, and
 * the record_* calls for custom allocators.  memflow_dump() and
 * memflow_dumps() ask `memflow serve` and live in runtime/dump.c.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memflow.h"
#include "config.h"
#include "error.h"
#include "device.h"
#include "recorder.h"

MF_EXPORT int memflow_set_config(int n, const char *const *keys, const char *const *vals)
{
    char err[1024];
    if (mf_config_apply(n, keys, vals, NULL, err, sizeof err) < 0) {
        mf_set_error("%s", err);
        return -1;
    }
    return 0;
}

/* Whether the program has the CUDA driver or runtime loaded already. */
static int cuda_is_loaded(void)
{
    static const char *const names[] = { "libcuda.so.1", "libcudart.so.13", "libcudart.so.12",
                                         "libcudart.so.11.0", "libcudart.so" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            dlclose(h);
            return 1;
        }
    }
    return 0;
}

/*
 * GPU capture for a program that links libmemflow: when it uses CUDA, load
 * the CUPTI plugin (the copy the driver would inject, if
 * CUDA_INJECTION64_PATH names one) and start it.  core knows only the
 * plugin's name and its one entry point, memflow_gpu_start.  A CPU-only
 * program loads nothing and prints nothing.
 */
static void start_gpu_plugin(void)
{
    static int tried;
    if (tried || !cuda_is_loaded())
        return;
    tried = 1;
    const char *path = getenv("CUDA_INJECTION64_PATH");
    MF_INTERNAL_BEGIN();
    void *h = dlopen(path && *path ? path : MEMFLOW_PKGLIBDIR "/libmemflow-cuda.so",
                     RTLD_NOW | RTLD_GLOBAL);
    int (*start)(void) = h ? (int (*)(void))dlsym(h, "memflow_gpu_start") : NULL;
    if (start)
        start();
    MF_INTERNAL_END();
}

MF_EXPORT int memflow_set_state(memflow_state state)
{
    if (state == MEMFLOW_RUN) {
        if (mf_recorder_start() < 0)
            return -1;
        start_gpu_plugin();
        return 0;
    }
    if (state == MEMFLOW_STOP) {
        mf_recorder_stop();
        return 0;
    }
    mf_set_error("memflow_set_state: bad state %d; accepted: MEMFLOW_RUN (1), "
                 "MEMFLOW_STOP (0)", (int)state);
    return -1;
}

MF_EXPORT int memflow_pause(void)
{
    mf_recorder_pause(1);
    return 0;
}

MF_EXPORT int memflow_resume(void)
{
    mf_recorder_pause(0);
    return 0;
}

static int device_of(const char *fn, const char *text, uint16_t *device)
{
    if (text && mf_device_parse(text, device) == 0)
        return 0;
    mf_set_error("%s: bad device '%s'; accepted: \"cpu/0\" or \"gpu/N\" (N < 256)", fn,
                 text ? text : "(null)");
    return -1;
}

MF_EXPORT int memflow_record_alloc(const char *device, const void *addr, size_t requested,
                                   size_t actual, const char *name, unsigned flags)
{
    uint16_t dev;
    if (device_of("memflow_record_alloc", device, &dev) < 0)
        return -1;
    if (!mf_recording_now())
        return 0;
    MF_INTERNAL_BEGIN();
    uint32_t name_id = name ? mf_recorder_intern(name, strlen(name)) : MF_STRING_UNKNOWN;
    unsigned f = MF_FLAG_EXPLICIT | (flags & MEMFLOW_ALLOC_REUSED ? MF_FLAG_REUSED : 0);
    if (MF_DEVICE_KIND(dev) == MF_DEVICE_GPU)
        f |= MF_MEM_DEVICE << MF_MEMKIND_SHIFT;
    MF_INTERNAL_END();
    uint32_t stack = mf_recorder_stack(0);
    mf_recorder_alloc_with_stack(dev, f, 0, (uintptr_t)addr, requested, actual, 0, name_id, 0,
                                 stack);
    return 0;
}

MF_EXPORT int memflow_record_free(const char *device, const void *addr)
{
    uint16_t dev;
    if (device_of("memflow_record_free", device, &dev) < 0)
        return -1;
    if (mf_recording_now())
        mf_recorder_free_event(dev, MF_FLAG_EXPLICIT, 0, (uintptr_t)addr);
    return 0;
}
