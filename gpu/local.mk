# gpu/ - GPU capture through CUPTI: the CUDA plugin libmemflow-cuda.so that
# the driver loads through CUDA_INJECTION64_PATH (InitializeInjection) and a
# program may dlopen (memflow_gpu_start).  Built only when configure finds
# CUPTI.  gpu -> core: it links libmemflow and hands events to the recorder.
GPU_CAPTURE_SOURCES = \
	gpu/gpu.h \
	gpu/capture.c \
	gpu/api.c \
	gpu/origins.c \
	gpu/vmm.c \
	gpu/translate.c \
	gpu/names.c \
	gpu/sampler.c

if HAVE_CUPTI
pkglib_LTLIBRARIES += libmemflow-cuda.la
libmemflow_cuda_la_SOURCES = $(GPU_CAPTURE_SOURCES) gpu/inject.c
libmemflow_cuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUPTI_CFLAGS)
libmemflow_cuda_la_CFLAGS = $(AM_CFLAGS) -pthread
libmemflow_cuda_la_LIBADD = libmemflow.la $(CUPTI_LIBS) -ldl
# nodelete: the plugin's exit handler must outlive a dlclose.
libmemflow_cuda_la_LDFLAGS = -module -avoid-version -shared -pthread -Wl,-z,nodelete $(PLUGIN_NO_UNDEFINED)
endif

include samples/cuda/local.mk
