# runtime/ - exactly libmemflow.so, what runs inside the profiled program:
# clock, scopes, interning, recorder, log writer, the program's side of the
# staging file (stage.c; memflow run's is cli/stage_drain.c), call stacks,
# trace objects (objects.c), the public API and the client of `memflow
# serve` behind memflow_dump()/memflow_dumps(); plus what it compiles from
# common/ (log format, configuration ...).  Knows nothing of Cairo, CUPTI,
# jemalloc or the analysis: libmemflow.so is what every profiled process
# loads (through the preload library), so it links nothing but libc;
# libunwind is dlopen'ed (RTLD_LOCAL) only when call stacks are on
# (runtime/stacks.c).  Its exports are the documented memflow_* API and a
# private node for the capture plugins (runtime/libmemflow.map).  The
# memflow program does not link it.
lib_LTLIBRARIES += libmemflow.la
RUNTIME_SOURCES = $(COMMON_SOURCES) $(CONFIG_SOURCES) \
	runtime/clock.c runtime/clock.h runtime/clock_fast.h \
	runtime/error.c runtime/error.h \
	runtime/intern.c runtime/intern.h \
	runtime/log_writer.c runtime/log_writer.h \
	runtime/stage.c runtime/stage.h \
	runtime/recorder.c runtime/recorder.h runtime/thread_state.h \
	runtime/cuda_seen.c runtime/cuda_seen.h \
	runtime/scope.c runtime/scope.h \
	runtime/objects.c \
	runtime/stacks.c runtime/stacks.h \
	runtime/frames.c runtime/frames.h \
	runtime/slots.c runtime/slots.h \
	runtime/unwind.c runtime/unwind.h \
	runtime/api.c \
	runtime/dump.c
RUNTIME_CPPFLAGS = $(AM_CPPFLAGS) $(LIBUNWIND_CFLAGS) -DMF_LIBUNWIND_SONAME='"$(LIBUNWIND_SONAME)"'
libmemflow_la_SOURCES = $(RUNTIME_SOURCES)
libmemflow_la_CPPFLAGS = $(RUNTIME_CPPFLAGS)
libmemflow_la_CFLAGS = $(AM_CFLAGS) -pthread
libmemflow_la_LIBADD = -ldl
libmemflow_la_LDFLAGS = -version-info 0:0:0 -pthread -no-undefined \
	-Wl,--version-script=$(srcdir)/runtime/libmemflow.map
EXTRA_libmemflow_la_DEPENDENCIES = runtime/libmemflow.map
EXTRA_DIST += runtime/libmemflow.map
