#!/bin/sh
# fuzz_pickle.sh - the libFuzzer target of the pickle reader and the
# snapshot walker (tests/fuzz/fuzz_pickle.c) from a seed corpus: every
# snapshot tests/torch_snapshots.py writes (each format, protocols 2 to 5,
# hostile ones) and a small one from tests/torch_snapshot_gen, inputs of
# at most 16 KiB, for a bounded number of runs: MEMFLOW_FUZZ_RUNS (default
# 5000, about 10 s here).  Any crash, leak, sanitizer report or timeout fails and leaves its
# input in the scratch folder.  Skips (and says why) when configure found no
# compiler that links -fsanitize=fuzzer.
. "$top_srcdir/tests/lib.sh"
FUZZ="$top_builddir/tests/fuzz/fuzz_pickle"
if [ ! -x "$FUZZ" ]; then
    echo "SKIP: $TEST_NAME: no libFuzzer target: configure found no C compiler that links" \
         "-fsanitize=fuzzer (install clang and libclang-rt-dev, or set FUZZ_CC)"
    exit 77
fi
"${PYTHON:-$PYTHON3}" "$top_srcdir/tests/torch_snapshots.py" "$SCRATCH/fixtures"
mkdir -p "$SCRATCH/seeds" "$SCRATCH/corpus"
cp "$SCRATCH"/fixtures/*.pickle "$SCRATCH/seeds/"
"$top_builddir/tests/torch_snapshot_gen" "$SCRATCH/seeds/gen.pickle" 8 2 1 > /dev/null
status=0
"$FUZZ" -runs="${MEMFLOW_FUZZ_RUNS:-5000}" -seed=1 -max_len=16384 -timeout=60 \
    -rss_limit_mb=2048 -max_total_time=300 -artifact_prefix="$SCRATCH/" \
    "$SCRATCH/corpus" "$SCRATCH/seeds" > "$SCRATCH/fuzz.log" 2>&1 || status=$?
[ "$status" -eq 0 ] || fail "fuzz_pickle exited $status: see $SCRATCH/fuzz.log and $SCRATCH/crash-*"
grep -q "^Done [0-9]* runs" "$SCRATCH/fuzz.log" || fail "fuzz_pickle did not finish its runs"
echo "$TEST_NAME: ok ($(grep '^Done' "$SCRATCH/fuzz.log"))"
