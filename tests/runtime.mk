# tests/runtime.mk - tests of runtime/ (scopes, recorder, log writer, the
# staging file's two sides), common/ (config) and alloc/ (the malloc family,
# dlopen under `memflow run`), and that the memflow program never loads
# libmemflow.
check_PROGRAMS += tests/alloc_workload tests/logcheck tests/logheader tests/cxx_new
tests_alloc_workload_SOURCES = tests/alloc_workload.c
tests_alloc_workload_LDADD = libmemflow.la -lpthread
tests_alloc_workload_LDFLAGS = $(TEST_LINK_FLAGS)
tests_cxx_new_SOURCES = tests/cxx_new.cc
tests_cxx_new_LDADD = libmemflow.la
tests_cxx_new_LDFLAGS = $(TEST_LINK_FLAGS)
tests_logcheck_SOURCES = tests/logcheck.c
tests_logcheck_LDADD = libmemflow-analysis.la libmemflow.la
tests_logcheck_LDFLAGS = $(TEST_LINK_FLAGS)
# A statically linked program, for memflow run's "cannot profile" message
# (when the C library can be linked statically; the test says SKIP if not).
if HAVE_STATIC_LINK
check_PROGRAMS += tests/static_prog
tests_static_prog_SOURCES = tests/static_prog.c
tests_static_prog_LDFLAGS = -all-static
endif
tests_logheader_SOURCES = tests/logheader.c
tests_logheader_LDADD = libmemflow-analysis.la
tests_logheader_LDFLAGS = $(TEST_LINK_FLAGS)
TESTS += tests/alloc_e2e.sh tests/cli_run.sh tests/samples_e2e.sh tests/log_faults.sh \
	tests/log_holes.sh tests/run_logs.sh tests/run_signals.sh tests/run_oom_kill.sh
EXTRA_DIST += tests/alloc_e2e.sh tests/cli_run.sh tests/samples_e2e.sh tests/log_faults.sh \
	tests/log_holes.sh tests/log_holes.py tests/run_logs.sh tests/run_signals.sh \
	tests/run_oom_kill.sh
# The recorder under ThreadSanitizer: the runtime's sources compiled again,
# instrumented, into one test program (libmemflow.so itself is not).
if HAVE_TSAN
check_PROGRAMS += tests/tsan_recorder
tests_tsan_recorder_SOURCES = tests/tsan_recorder.c $(RUNTIME_SOURCES)
tests_tsan_recorder_CPPFLAGS = $(RUNTIME_CPPFLAGS)
tests_tsan_recorder_CFLAGS = $(AM_CFLAGS) -fsanitize=thread -O1 -g -pthread
tests_tsan_recorder_LDFLAGS = -fsanitize=thread -pthread
tests_tsan_recorder_LDADD = -ldl
TESTS += tests/tsan_recorder
endif
if HAVE_CHECK
# check_runtime tests the runtime's internals (the log writer's counters), so
# the runtime's sources are built into it rather than reached through
# libmemflow.so, which exports only the API and the plugins' entry points.
check_PROGRAMS += tests/check_runtime
tests_check_runtime_SOURCES = tests/check_runtime.c $(RUNTIME_SOURCES) $(STAGE_DRAIN_SOURCES)
tests_check_runtime_CPPFLAGS = $(RUNTIME_CPPFLAGS) -I$(srcdir)/cli
tests_check_runtime_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) -pthread
tests_check_runtime_LDADD = libmemflow-analysis.la $(CHECK_LIBS) -lpthread -ldl
tests_check_runtime_LDFLAGS = $(TEST_LINK_FLAGS)
TESTS += tests/check_runtime
endif

# The memflow program never loads the recorder, whatever MEMFLOW_ variables
# it inherits (tests/cli_no_recorder.sh).
TESTS += tests/cli_no_recorder.sh
EXTRA_DIST += tests/cli_no_recorder.sh

# The preload library's dlopen leaves the program the caller: a plugin
# found only through the program's RUNPATH still loads under memflow run
# (tests/preload_dlopen.sh).  The plugin is a module in tests/.libs, which
# only dlopen_runpath's RUNPATH names.
check_LTLIBRARIES = tests/libdlprobe.la
tests_libdlprobe_la_SOURCES = tests/dlprobe.c
tests_libdlprobe_la_LDFLAGS = -module -avoid-version -rpath /nowhere
check_PROGRAMS += tests/dlopen_runpath
tests_dlopen_runpath_SOURCES = tests/dlopen_runpath.c
tests_dlopen_runpath_LDADD = -ldl
tests_dlopen_runpath_LDFLAGS = $(TEST_LINK_FLAGS) \
	-Wl,--enable-new-dtags,-rpath,$(abs_top_builddir)/tests/.libs
TESTS += tests/preload_dlopen.sh
EXTRA_DIST += tests/preload_dlopen.sh

# The runtime/analysis boundary (tests/boundary.sh): dump_client links only
# libmemflow, with --as-needed, as a distribution's program would.
check_PROGRAMS += tests/dump_client
tests_dump_client_SOURCES = tests/dump_client.c
tests_dump_client_LDADD = libmemflow.la
tests_dump_client_LDFLAGS = $(TEST_LINK_FLAGS) -Wl,--as-needed
TESTS += tests/boundary.sh
EXTRA_DIST += tests/boundary.sh
