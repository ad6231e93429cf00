# tests/ - Check suites and end-to-end tests; `make check` runs them all.
# Every test gets this environment: the built memflow command, the source and
# build folders, python3 (a real JSON parser) and a scratch folder.
AM_TESTS_ENVIRONMENT = \
	MEMFLOW='$(abs_top_builddir)/memflow'; export MEMFLOW; \
	top_srcdir='$(abs_top_srcdir)'; export top_srcdir; \
	top_builddir='$(abs_top_builddir)'; export top_builddir; \
	PYTHON3='$(PYTHON3)'; export PYTHON3; \
	STRACE='$(STRACE)'; export STRACE; \
	CK_DEFAULT_TIMEOUT=120; export CK_DEFAULT_TIMEOUT; \
	CK_FORK=yes; export CK_FORK; \
	SANITIZED_BUILD='$(enable_sanitize)'; export SANITIZED_BUILD; \
	LSAN_OPTIONS='suppressions=$(abs_top_srcdir)/tests/lsan.supp:print_suppressions=0'; \
	export LSAN_OPTIONS;
# Each test runs through tests/clean_pass.sh: a test that passes removes its
# scratch folder tests/out/NAME (its logs and outputs: 2.1 GB for the whole
# suite otherwise); a failing one keeps it, and so does every test with
# KEEP_TEST_OUT=1.  `make clean` removes tests/out.
LOG_COMPILER = $(SHELL) $(srcdir)/tests/clean_pass.sh
EXTRA_DIST += tests/clean_pass.sh
# Test programs link the uninstalled libraries directly (no libtool wrapper
# scripts), so `memflow run -- tests/prog` profiles the program itself.
TEST_LINK_FLAGS = -no-install
EXTRA_DIST += tests/lib.sh tests/lsan.supp
include tests/runtime.mk
include tests/render.mk
include tests/svg.mk
include tests/gpu.mk
include tests/stacks.mk
include tests/python.mk
include tests/compact.mk
include tests/view.mk

# The README and the manual pages document every command, option, key and
# function (tests/docs.sh).
TESTS += tests/docs.sh
EXTRA_DIST += tests/docs.sh
