# tests/render.mk - tests of the model, statistics, trace, CSV and the
# `memflow stats` / `memflow render` commands.
if HAVE_CHECK
check_PROGRAMS += tests/check_escape
TESTS += tests/check_escape
tests_check_escape_SOURCES = tests/check_escape.c
tests_check_escape_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_escape_LDADD = libmemflow.la $(CHECK_LIBS)
tests_check_escape_LDFLAGS = $(TEST_LDFLAGS)
endif
