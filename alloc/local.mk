# alloc/ - the preload library of `memflow run`, libmemflow-preload.so: the
# CPU capture (it interposes the malloc family and C++ new/delete and
# forwards to jemalloc: preload.c, cxx.cc, the occupancy sampler start.c),
# how the process ends (exit, _exit, exec: process_end.c) and what it asks
# the dynamic loader (dlopen, dlclose: loader.c).  It links libmemflow and
# hands everything to the recorder.  Installed in $(pkglibdir); `memflow
# run` puts it in LD_PRELOAD.
pkglib_LTLIBRARIES += libmemflow-preload.la
libmemflow_preload_la_SOURCES = alloc/preload.c alloc/cxx.cc alloc/start.c alloc/process_end.c \
	alloc/loader.c
libmemflow_preload_la_CFLAGS = $(AM_CFLAGS) $(JEMALLOC_CFLAGS) -fno-builtin -ftls-model=initial-exec
libmemflow_preload_la_CXXFLAGS = $(AM_CXXFLAGS) -fno-builtin
libmemflow_preload_la_LIBADD = libmemflow.la $(JEMALLOC_LIBS)
libmemflow_preload_la_LDFLAGS = -module -avoid-version -shared -Wl,-z,nodelete $(PLUGIN_NO_UNDEFINED)
