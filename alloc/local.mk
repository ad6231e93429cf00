# alloc/ - the CPU capture: libmemflow-preload.so interposes the malloc
# family (and C++ new/delete) and forwards to jemalloc.  Installed in
# $(pkglibdir); `memflow run` puts it in LD_PRELOAD.
pkglib_LTLIBRARIES += libmemflow-preload.la
libmemflow_preload_la_SOURCES = alloc/preload.c alloc/cxx.cc alloc/start.c alloc/process_end.c
libmemflow_preload_la_CFLAGS = $(AM_CFLAGS) $(JEMALLOC_CFLAGS) -fno-builtin -ftls-model=initial-exec
libmemflow_preload_la_CXXFLAGS = $(AM_CXXFLAGS) -fno-builtin
libmemflow_preload_la_LIBADD = libmemflow.la $(JEMALLOC_LIBS)
libmemflow_preload_la_LDFLAGS = -module -avoid-version -shared -Wl,-z,nodelete $(PLUGIN_NO_UNDEFINED)
