#!/bin/sh
# fuzz.sh - the libFuzzer target (tests/fuzz/fuzz_reader.c: reader, model,
# every output, and a growing log under one reader) from a seed corpus of
# real logs and damaged copies (tests/fuzz/seeds.py), for a bounded number of
# runs: MEMFLOW_FUZZ_RUNS (default 1000, about 10 s here).  Any crash, leak,
# sanitizer report or timeout fails, and leaves its input in the scratch
# folder.  Skips (and says why) when configure found no compiler that links
# -fsanitize=fuzzer.
. "$top_srcdir/tests/lib.sh"
FUZZ="$top_builddir/tests/fuzz/fuzz_reader"
if [ ! -x "$FUZZ" ]; then
    echo "SKIP: $TEST_NAME: no libFuzzer target: configure found no C compiler that links" \
         "-fsanitize=fuzzer (install clang and libclang-rt-dev, or set FUZZ_CC)"
    exit 77
fi
G="$top_builddir/tests/render_gen"
for mode in basic escape kinds trace; do
    "$G" "$SCRATCH/logs/$mode" $mode > /dev/null
done
"$G" "$SCRATCH/logs/big" big 20 scoped > /dev/null
"$PYTHON3" "$top_srcdir/tests/fuzz/seeds.py" "$SCRATCH/seeds" "$SCRATCH"/logs/*/memflow-*.mfl
mkdir -p "$SCRATCH/corpus" "$SCRATCH/tmp"
status=0
TMPDIR="$SCRATCH/tmp" LSAN_OPTIONS="suppressions=$top_srcdir/tests/fuzz/lsan.supp" \
    "$FUZZ" -runs="${MEMFLOW_FUZZ_RUNS:-1000}" -seed=1 -max_len=65536 -timeout=60 \
    -rss_limit_mb=2048 -max_total_time=300 -artifact_prefix="$SCRATCH/" \
    "$SCRATCH/corpus" "$SCRATCH/seeds" > "$SCRATCH/fuzz.log" 2>&1 || status=$?

[ "$status" -eq 0 ] || fail "fuzz_reader exited $status: see $SCRATCH/fuzz.log and $SCRATCH/crash-*"
grep -q "^Done [0-9]* runs" "$SCRATCH/fuzz.log" || fail "fuzz_reader did not finish its runs"
echo "$TEST_NAME: ok ($(grep '^Done' "$SCRATCH/fuzz.log"))"
