# runtime/ - what runs inside the profiled program: record format, clock,
# config, scopes, interning, recorder, log writer, the public API and the
# client of the analysis behind memflow_dump()/memflow_dumps().
# Knows nothing of Cairo, CUPTI, jemalloc or the analysis: libmemflow.so is
# what every profiled process loads (through the preload library), so it
# links nothing but libc; libunwind is dlopen'ed (RTLD_LOCAL) only when
# call stacks are on (runtime/stacks.c).  Its exports are the documented
# memflow_* API and a private node for the capture plugins
# (runtime/libmemflow.map).
lib_LTLIBRARIES += libmemflow.la
RUNTIME_SOURCES = \
	runtime/compiler.h runtime/log_format.h \
	runtime/checksum.c runtime/checksum.h \
	runtime/run_id.c runtime/run_id.h \
	runtime/clock.c runtime/clock.h runtime/clock_fast.h \
	runtime/device.c runtime/device.h \
	runtime/paths.c runtime/paths.h \
	runtime/error.c runtime/error.h \
	runtime/config.c runtime/config.h \
	runtime/intern.c runtime/intern.h \
	runtime/log_writer.c runtime/log_writer.h \
	runtime/descriptor.c runtime/descriptor.h \
	runtime/stage.c runtime/stage.h runtime/stage_slots.c runtime/stage_slots.h \
	runtime/recorder.c runtime/recorder.h runtime/thread_state.h \
	runtime/cuda_seen.c runtime/cuda_seen.h \
	runtime/scope.c runtime/scope.h \
	runtime/trace.c \
	runtime/stacks.c runtime/stacks.h \
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

# Sources the analysis and the memflow program share with the runtime: pure
# functions of the log format, the staging file's layout, paths and
# descriptors, no state.  Compiled into both; libmemflow.so does not
# export them.
RUNTIME_SHARED_SOURCES = runtime/checksum.c runtime/device.c runtime/paths.c runtime/run_id.c \
	runtime/descriptor.c runtime/stage_slots.c
# memflow run's side of the staging area (runtime/stage.h): compiled into
# the memflow program (and the runtime's tests), not into libmemflow.
STAGE_RUN_SOURCES = runtime/stage_run.c
