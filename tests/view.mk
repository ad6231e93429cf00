# tests/view.mk - `memflow view`: its browser test (headless Chromium driven
# by playwright-core, installed into tests/view/node_modules by bootstrap.sh)
# on a real program's run, and its server's refusals.
check_PROGRAMS += tests/view_workload tests/view_lod_workload tests/view_roles_workload
tests_view_workload_SOURCES = tests/view_workload.c
tests_view_workload_CFLAGS = $(AM_CFLAGS) -fno-builtin -O1 -g
tests_view_workload_LDADD = libmemflow.la
tests_view_workload_LDFLAGS = $(TEST_LINK_FLAGS)
tests_view_lod_workload_SOURCES = tests/view_lod_workload.c
tests_view_lod_workload_CFLAGS = $(AM_CFLAGS) -fno-builtin -O1
tests_view_lod_workload_LDADD = libmemflow.la
tests_view_lod_workload_LDFLAGS = $(TEST_LINK_FLAGS)
tests_view_roles_workload_SOURCES = tests/view_roles_workload.c
tests_view_roles_workload_CFLAGS = $(AM_CFLAGS) -fno-builtin -O1
tests_view_roles_workload_LDADD = libmemflow.la
tests_view_roles_workload_LDFLAGS = $(TEST_LINK_FLAGS)
TESTS += tests/view_browser.sh tests/view_lod.sh tests/view_index.sh tests/view_lint.sh \
	tests/view_oom.sh
EXTRA_DIST += tests/view_browser.sh tests/view_browser.js tests/view_lod.sh tests/view_lod.js \
	tests/view_oom.sh tests/view_oom.js tests/view_lib.js \
	tests/view_index.sh tests/view_lint.sh tests/view/eslint.config.js \
	tests/view/package.json \
	tests/view/package-lock.json
