# tests/runtime.mk - tests of runtime/ (config, scopes, recorder, log writer) and
# alloc/ (the malloc family under `memflow run`).
check_PROGRAMS += tests/alloc_workload tests/logcheck
tests_alloc_workload_SOURCES = tests/alloc_workload.c
tests_alloc_workload_LDADD = libmemflow.la -lpthread
tests_alloc_workload_LDFLAGS = $(TEST_LINK_FLAGS)
tests_logcheck_SOURCES = tests/logcheck.c
tests_logcheck_LDADD = libmemflow-analysis.la libmemflow.la
tests_logcheck_LDFLAGS = $(TEST_LINK_FLAGS)
TESTS += tests/alloc_e2e.sh tests/cli_run.sh tests/samples_e2e.sh
EXTRA_DIST += tests/alloc_e2e.sh tests/cli_run.sh tests/samples_e2e.sh
if HAVE_CHECK
check_PROGRAMS += tests/check_runtime
tests_check_runtime_SOURCES = tests/check_runtime.c
tests_check_runtime_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_runtime_LDADD = libmemflow-analysis.la libmemflow.la $(CHECK_LIBS) -lpthread
tests_check_runtime_LDFLAGS = $(TEST_LINK_FLAGS)
TESTS += tests/check_runtime
endif

# The runtime/analysis boundary (tests/boundary.sh): dump_client links only
# libmemflow, with --as-needed, as a distribution's program would.
check_PROGRAMS += tests/dump_client
tests_dump_client_SOURCES = tests/dump_client.c
tests_dump_client_LDADD = libmemflow.la
tests_dump_client_LDFLAGS = $(TEST_LINK_FLAGS) -Wl,--as-needed
TESTS += tests/boundary.sh
EXTRA_DIST += tests/boundary.sh
