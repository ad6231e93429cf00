# runtime/ - what runs inside the profiled program: record format, clock,
# config, scopes, interning, recorder, log writer and the public API.
# Knows nothing of Cairo, CUPTI, jemalloc or the analysis: libmemflow.so is
# what every profiled process loads (through the preload library), so it
# links nothing but libc.
lib_LTLIBRARIES += libmemflow.la
libmemflow_la_SOURCES = \
	runtime/compiler.h runtime/log_format.h \
	runtime/checksum.c runtime/checksum.h \
	runtime/run_id.c runtime/run_id.h \
	runtime/clock.c runtime/clock.h \
	runtime/device.c runtime/device.h \
	runtime/paths.c runtime/paths.h \
	runtime/error.c runtime/error.h \
	runtime/config.c runtime/config.h \
	runtime/intern.c runtime/intern.h \
	runtime/log_writer.c runtime/log_writer.h \
	runtime/recorder.c runtime/recorder.h runtime/thread_state.h \
	runtime/scope.c \
	runtime/api.c
libmemflow_la_CFLAGS = $(AM_CFLAGS) -pthread
libmemflow_la_LIBADD = -ldl
libmemflow_la_LDFLAGS = -version-info 0:0:0 -pthread
