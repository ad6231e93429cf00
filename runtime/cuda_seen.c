/*
 * cuda_seen.c - at exit, say so when a program used CUDA but memflow could
 * not record its GPU memory.
 *
 * On a machine without an NVIDIA driver, a CUDA program's first call fails
 * before cuInit, so the driver never loads the plugin named by
 * CUDA_INJECTION64_PATH and GPU capture would stay silent.  libmemflow is in
 * every profiled process, so it looks at exit: if the CUDA runtime or driver
 * library is loaded, or the program asked for the driver (the CUDA runtime
 * linked in statically, nvcc's default, does so at its first call; the
 * preload library sees the dlopen), but the plugin never reported that it
 * started, it tells why in one NOTE (for the analysis) and one stderr line
 * (for the person running `memflow run`).  See cuda_seen.h for the exact
 * conditions.
 */
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_seen.h"
#include "log_format.h"
#include "recorder.h"

static int plugin_started;
static int plugin_capturing;
static pid_t loading_pid; /* a forked copy has another pid: it stays silent */
/* The first name the program asked the loader for the driver by: 0 none,
 * 1 being copied, 2 in driver_sought. */
static int driver_asked;
static char driver_sought[64];

void mf_cuda_plugin_started(int capturing)
{
    __atomic_store_n(&plugin_started, 1, __ATOMIC_RELEASE);
    if (capturing)
        __atomic_store_n(&plugin_capturing, 1, __ATOMIC_RELEASE);
}

int mf_cuda_capture_on(void)
{
    return __atomic_load_n(&plugin_capturing, __ATOMIC_ACQUIRE);
}

void mf_cuda_driver_sought(const char *name)
{
    int none = 0;
    if (!__atomic_compare_exchange_n(&driver_asked, &none, 1, 0, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED))
        return;
    size_t n = strlen(name);
    if (n >= sizeof driver_sought)
        n = sizeof driver_sought - 1;
    memcpy(driver_sought, name, n);
    driver_sought[n] = 0;
    __atomic_store_n(&driver_asked, 2, __ATOMIC_RELEASE);
}

typedef struct cuda_libraries {
    char runtime[64]; /* e.g. libcudart.so.13, "" if not loaded */
    char driver[64];  /* libcuda.so.1 */
} cuda_libraries;

static int starts_with(const char *text, const char *prefix)
{
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

static int note_cuda_library(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    cuda_libraries *found = arg;
    const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    const char *name = slash ? slash + 1 : info->dlpi_name;
    if (!name)
        return 0;
    if (starts_with(name, "libcudart.so"))
        snprintf(found->runtime, sizeof found->runtime, "%s", name);
    else if (starts_with(name, "libcuda.so"))
        snprintf(found->driver, sizeof found->driver, "%s", name);
    return 0;
}

static int nvidia_driver_installed(void)
{
    return access("/proc/driver/nvidia/version", F_OK) == 0;
}

void mf_cuda_seen_at_exit(void)
{
    const char *injection = getenv("CUDA_INJECTION64_PATH");
    if (__atomic_load_n(&plugin_started, __ATOMIC_ACQUIRE) || getpid() != loading_pid ||
        !injection || !*injection || !mf_recorder_log_open())
        return;
    cuda_libraries found = { "", "" };
    dl_iterate_phdr(note_cuda_library, &found);
    const char *program = program_invocation_short_name;
    if (found.driver[0]) {
        mf_recorder_note(MF_NOTE_GPU_NOT_INJECTED, 0);
        fprintf(stderr, "memflow: %s loaded the CUDA driver (%s) but the driver never started "
                "memflow's GPU plugin (CUDA_INJECTION64_PATH=%s), so its GPU memory was not "
                "recorded\n", program, found.driver, injection);
    } else if (found.runtime[0] && !nvidia_driver_installed()) {
        mf_recorder_note(MF_NOTE_GPU_NO_DRIVER, 0);
        fprintf(stderr, "memflow: %s used CUDA (%s) but no CUDA driver or GPU was found, so "
                "its GPU memory was not recorded\n", program, found.runtime);
    } else if (__atomic_load_n(&driver_asked, __ATOMIC_ACQUIRE) == 2 &&
               !nvidia_driver_installed()) {
        mf_recorder_note(MF_NOTE_GPU_NO_DRIVER, 0);
        fprintf(stderr, "memflow: %s used CUDA (it looked for %s) but no CUDA driver or GPU "
                "was found, so its GPU memory was not recorded\n", program, driver_sought);
    }
}

__attribute__((constructor)) static void cuda_seen_init(void)
{
    loading_pid = getpid();
}
