# tests/compact.mk - tests of the compact form at rest (analyze/compact*.c,
# `memflow compact`, the compaction at the end of `memflow run`).
if HAVE_CHECK
check_PROGRAMS += tests/check_compact
TESTS += tests/check_compact
tests_check_compact_SOURCES = tests/check_compact.c
tests_check_compact_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_compact_LDADD = libmemflow-analysis.la libmemflow.la $(CHECK_LIBS)
tests_check_compact_LDFLAGS = $(TEST_LINK_FLAGS)
endif
TESTS += tests/compact_e2e.sh tests/compact_damage.sh tests/compact_run.sh
EXTRA_DIST += tests/compact_e2e.sh tests/compact_damage.sh tests/compact_damage.py tests/compact_run.sh tests/compact_frames.py \
	tests/compact_layout1.mfl
