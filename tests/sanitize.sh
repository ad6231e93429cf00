#!/bin/sh
# sanitize.sh - the unit suites of the reader, model, statistics, escaping
# and memory_flow (check_model, check_reader, check_parts, check_escape,
# check_svg) under AddressSanitizer, LeakSanitizer and UndefinedBehavior-
# Sanitizer: no undefined behaviour (a NULL array with a zero count passed
# to qsort or memcpy included) and no leak, in the library or the tests'
# own model builders.  Skips (and says why) without a compiler for it.
. "$top_srcdir/tests/lib.sh"
SAN="$top_builddir/tests/san"
if [ ! -x "$SAN/check_model" ]; then
    echo "SKIP: $TEST_NAME: no sanitizer build: configure found no C compiler that links" \
         "-fsanitize=fuzzer,address,undefined (install clang and libclang-rt-dev, or set FUZZ_CC)"
    exit 77
fi
for suite in check_model check_reader check_parts check_escape check_svg; do
    # their scratch files under this test's folder, apart from the plain suites';
    # memflow_dump() asks the memflow program built here (memflow serve)
    top_srcdir="$top_srcdir" top_builddir="$SCRATCH" MEMFLOW_BIN="$MEMFLOW" CK_DEFAULT_TIMEOUT=600 \
        LSAN_OPTIONS="suppressions=$top_srcdir/tests/fuzz/lsan.supp" \
        UBSAN_OPTIONS=print_stacktrace=1 "$SAN/$suite" > "$SCRATCH/$suite.log" 2>&1 ||
        fail "$suite under the sanitizers: $(grep -m3 -E 'ERROR|runtime error|Failures' "$SCRATCH/$suite.log")"
    grep -E "runtime error|ERROR: (Address|Leak)Sanitizer" "$SCRATCH/$suite.log" &&
        fail "$suite: a sanitizer report (see $SCRATCH/$suite.log)"
    echo "$suite: $(grep -E '^[0-9]+%: Checks' "$SCRATCH/$suite.log")"
done
echo "$TEST_NAME: ok"
