# gpu/nvtx.mk - libmemflow-nvtx.so, the NVTX injection library that makes
# NVTX ranges memflow scopes (gpu/nvtx.c) and regions of the NVTX memory
# API sub-blocks (gpu/nvtx_mem.c).  Built whenever configure finds
# the NVTX v3 headers: it needs neither CUPTI nor a GPU.  `memflow run` sets
# NVTX_INJECTION64_PATH to it unless the user set the variable.
if HAVE_NVTX
pkglib_LTLIBRARIES += libmemflow-nvtx.la
libmemflow_nvtx_la_SOURCES = gpu/nvtx.h gpu/nvtx.c gpu/nvtx_mem.c
libmemflow_nvtx_la_CPPFLAGS = $(AM_CPPFLAGS) $(NVTX_CFLAGS)
libmemflow_nvtx_la_CFLAGS = $(AM_CFLAGS) -pthread
libmemflow_nvtx_la_LIBADD = libmemflow.la
libmemflow_nvtx_la_LDFLAGS = -module -avoid-version -shared -pthread
endif
