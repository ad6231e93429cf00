# core/ - event records, clock, config, scopes, interning, recorder, log
# writer and reader.  Knows nothing of Cairo, CUPTI or jemalloc: libmemflow.so
# is what every profiled process loads (through the preload library), so it
# links nothing but libc.
lib_LTLIBRARIES += libmemflow.la
libmemflow_la_SOURCES = \
	core/log_format.h \
	core/clock.c core/grow.h core/paths.c core/paths.h \
	core/error.c \
	core/config.c core/config.h \
	core/intern.c core/intern.h \
	core/log_writer.c core/log_writer.h \
	core/recorder.c core/recorder.h core/thread_state.h \
	core/scope.c \
	core/api.c \
	core/log_reader.c core/log_reader.h
libmemflow_la_CFLAGS = $(AM_CFLAGS) -pthread
libmemflow_la_LIBADD = -ldl
libmemflow_la_LDFLAGS = -version-info 0:0:0 -pthread
