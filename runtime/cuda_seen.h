/*
 * cuda_seen.h - telling the user when a program used CUDA but its GPU memory
 * was not recorded (no driver, or the driver never loaded the GPU plugin).
 * The check runs inside the profiled process at exit (recorder.c); the
 * plugin (gpu/) reports that it started.
 */
#ifndef MEMFLOW_CUDA_SEEN_H
#define MEMFLOW_CUDA_SEEN_H

#include "compiler.h"

/* Called by the GPU plugin when GPU capture starts, capturing 0 (whether
 * CUPTI agrees or not: from then on it speaks for itself and the exit check
 * is silent), and again with capturing 1 once CUPTI records this process's
 * GPU memory (not when CUPTI refused or is held by another tool). */
MF_EXPORT void mf_cuda_plugin_started(int capturing);

/* 1 once the GPU plugin said it records this process's GPU memory, else 0.
 * For the other plugins (the Python extension's PyTorch history): the CUDA
 * driver loads the GPU plugin with RTLD_LOCAL, so its own symbols
 * (memflow_gpu_active) cannot be looked up from outside it. */
MF_EXPORT int mf_cuda_capture_on(void);

/* Called by the preload library when the program asks the dynamic loader
 * for the CUDA driver (dlopen of libcuda.so*; name: the file name without
 * its folder), as the CUDA runtime linked in statically does at its first
 * call.  The first name is kept.  Async-signal-safe, no malloc. */
MF_EXPORT void mf_cuda_driver_sought(const char *name);

/*
 * At exit, before the log is marked finished: when CUDA_INJECTION64_PATH is
 * set, the plugin never started, and this process (not a forked copy of
 * one) loaded the CUDA runtime or driver, or asked for the driver, write
 * one NOTE and one stderr line:
 *   MF_NOTE_GPU_NO_DRIVER     libcudart loaded, no libcuda loaded and no
 *                             NVIDIA kernel driver (/proc/driver/nvidia):
 *     "memflow: PROG used CUDA (libcudart.so.N) but no CUDA driver or GPU was
 *      found, so its GPU memory was not recorded"
 *                             or no libcudart loaded (a static one) but the
 *                             program asked for libcuda, in vain:
 *     "memflow: PROG used CUDA (it looked for libcuda.so.1) but no CUDA
 *      driver or GPU was found, so its GPU memory was not recorded"
 *   MF_NOTE_GPU_NOT_INJECTED  libcuda loaded:
 *     "memflow: PROG loaded the CUDA driver (libcuda.so.1) but the driver never
 *      started memflow's GPU plugin (CUDA_INJECTION64_PATH=...), so its GPU
 *      memory was not recorded"
 * Otherwise nothing.  A program with the static cudart is seen by its
 * dlopen of the driver (under `memflow run`, whose preload library sees
 * dlopen; a program that links libmemflow without the preload is not).
 */
void mf_cuda_seen_at_exit(void);

#endif /* MEMFLOW_CUDA_SEEN_H */
