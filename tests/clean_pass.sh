#!/bin/sh
# clean_pass.sh TEST - how `make check` runs each test (LOG_COMPILER,
# tests/local.mk): run TEST, then, when it passed or was skipped, remove its
# scratch folder tests/out/NAME (NAME: TEST's file name without .sh), where
# its logs and outputs are; a failing test keeps them to be looked at, and
# so does every test with KEEP_TEST_OUT=1 in the environment.  Exits with
# TEST's status.
"$@"
rc=$?
name=$(basename "$1" .sh)
if [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ]; then
    [ -n "${KEEP_TEST_OUT:-}" ] || rm -rf "${top_builddir:?}/tests/out/$name"
fi
exit "$rc"
