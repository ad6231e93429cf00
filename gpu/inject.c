/*
 * inject.c - the entry point the CUDA driver calls when it loads the plugin.
 *
 * `memflow run` sets CUDA_INJECTION64_PATH to libmemflow-cuda.so (next to
 * the preload library) and MEMFLOW_AUTOSTART=1.  At cuInit the driver loads
 * the plugin and calls InitializeInjection(); by then the preload library
 * has normally started the recorder.  If it has not (a program not under
 * `memflow run` that sets the variables itself), the recorder is started
 * here (with the MEMFLOW_<KEY> configuration) only when MEMFLOW_AUTOSTART
 * asks for it.  Then GPU capture starts.
 */
#include <stdio.h>
#include <stdlib.h>

#include "memflow.h"
#include "config.h"
#include "gpu.h"

static int autostart_requested(void)
{
    const char *v = getenv("MEMFLOW_AUTOSTART");
    return v && *v && *v != '0';
}

/* Called by the CUDA driver; returns 1 (success) even when GPU capture is off. */
__attribute__((visibility("default"))) int InitializeInjection(void);

/* Start the recorder with the MEMFLOW_<KEY> configuration, as the preload would. */
static void start_recorder(void)
{
    char err[1024];
    if (mf_config_apply_env(err, sizeof err) < 0)
        fprintf(stderr, "memflow: %s\n", err);
    else if (mf_recorder_start() < 0)
        fprintf(stderr, "memflow: cannot start recording from the CUDA injection: %s\n",
                memflow_last_error());
}

int InitializeInjection(void)
{
    if (!mf_recorder_log_open() && autostart_requested())
        start_recorder();
    memflow_gpu_start();
    return 1;
}
