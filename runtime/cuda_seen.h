/*
 * cuda_seen.h - telling the user when a program used CUDA but its GPU memory
 * was not recorded (no driver, or the driver never loaded the GPU plugin).
 * The check runs inside the profiled process at exit (recorder.c); the
 * plugin (gpu/) reports that it started.
 */
#ifndef MEMFLOW_CUDA_SEEN_H
#define MEMFLOW_CUDA_SEEN_H

#include "compiler.h"

/* Called by the GPU plugin when GPU capture starts (whether CUPTI agreed or
 * not): from then on it speaks for itself and the exit check is silent. */
MF_EXPORT void mf_cuda_plugin_started(void);

/*
 * At exit, before the log is marked finished: when CUDA_INJECTION64_PATH is
 * set, the plugin never started, and this process (not a forked copy of
 * one) loaded the CUDA runtime or driver, write one NOTE and one stderr
 * line:
 *   MF_NOTE_GPU_NO_DRIVER     libcudart loaded, no libcuda loaded and no
 *                             NVIDIA kernel driver (/proc/driver/nvidia):
 *     "memflow: PROG used CUDA (libcudart.so.N) but no CUDA driver or GPU was
 *      found, so its GPU memory was not recorded"
 *   MF_NOTE_GPU_NOT_INJECTED  libcuda loaded:
 *     "memflow: PROG loaded the CUDA driver (libcuda.so.1) but the driver never
 *      started memflow's GPU plugin (CUDA_INJECTION64_PATH=...), so its GPU
 *      memory was not recorded"
 * Otherwise nothing.  Only the dynamic CUDA libraries are seen (a program
 * linked with the static cudart is not).
 */
void mf_cuda_seen_at_exit(void);

#endif /* MEMFLOW_CUDA_SEEN_H */
