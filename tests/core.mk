# tests/core.mk - tests of core/ (config, scopes, recorder, log reader) and
# alloc/ (the malloc family under `memflow run`).
check_PROGRAMS += tests/alloc_workload tests/logcheck
tests_alloc_workload_SOURCES = tests/alloc_workload.c
tests_alloc_workload_LDADD = libmemflow.la -lpthread
tests_alloc_workload_LDFLAGS = $(TEST_LINK_FLAGS)
tests_logcheck_SOURCES = tests/logcheck.c
tests_logcheck_LDADD = libmemflow.la
tests_logcheck_LDFLAGS = $(TEST_LINK_FLAGS)
TESTS += tests/alloc_e2e.sh tests/cli_run.sh tests/samples_e2e.sh
EXTRA_DIST += tests/alloc_e2e.sh tests/cli_run.sh tests/samples_e2e.sh
if HAVE_CHECK
check_PROGRAMS += tests/check_core
tests_check_core_SOURCES = tests/check_core.c
tests_check_core_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_core_LDADD = libmemflow.la $(CHECK_LIBS) -lpthread
tests_check_core_LDFLAGS = $(TEST_LINK_FLAGS)
TESTS += tests/check_core
endif
