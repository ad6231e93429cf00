#!/bin/sh
# fuzz_pickle.sh - the libFuzzer target of the pickle reader and the
# snapshot walker (tests/fuzz/fuzz_pickle.c) from a seed corpus: every
# snapshot tests/torch_snapshots.py writes (each format, protocols 2 to 5,
# hostile ones), a small one from tests/torch_snapshot_gen and the inputs it
# once failed on (tests/fuzz/pickle_regressions.txt, each also replayed on
# its own first, so a regression fails whatever the campaign does), inputs of
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
mkdir -p "$SCRATCH/seeds" "$SCRATCH/corpus" "$SCRATCH/regressions"
cp "$SCRATCH"/fixtures/*.pickle "$SCRATCH/seeds/"
"$top_builddir/tests/torch_snapshot_gen" "$SCRATCH/seeds/gen.pickle" 8 2 1 > /dev/null
# the regressions: NAME BASE64 lines, each to NAME.pickle, replayed once each
grep -v '^#' "$top_srcdir/tests/fuzz/pickle_regressions.txt" | while read -r name data; do
    [ -n "$name" ] && printf '%s' "$data" | base64 -d > "$SCRATCH/regressions/$name.pickle"
done
n=$(ls "$SCRATCH/regressions" | wc -l)
[ "$n" -eq 2 ] || fail "expected 2 regression inputs, found $n"
"$FUZZ" "$SCRATCH"/regressions/*.pickle > "$SCRATCH/regressions.log" 2>&1 ||
    fail "fuzz_pickle fails on a regression input again: see $SCRATCH/regressions.log"
[ "$(grep -c '^Executed ' "$SCRATCH/regressions.log")" -eq 2 ] ||
    fail "fuzz_pickle did not replay the 2 regression inputs: see $SCRATCH/regressions.log"
cp "$SCRATCH"/regressions/*.pickle "$SCRATCH/seeds/"
status=0
"$FUZZ" -runs="${MEMFLOW_FUZZ_RUNS:-5000}" -seed=1 -max_len=16384 -timeout=60 \
    -rss_limit_mb=2048 -max_total_time=300 -artifact_prefix="$SCRATCH/" \
    "$SCRATCH/corpus" "$SCRATCH/seeds" > "$SCRATCH/fuzz.log" 2>&1 || status=$?
[ "$status" -eq 0 ] || fail "fuzz_pickle exited $status: see $SCRATCH/fuzz.log and $SCRATCH/crash-*"
grep -q "^Done [0-9]* runs" "$SCRATCH/fuzz.log" || fail "fuzz_pickle did not finish its runs"
echo "$TEST_NAME: ok (2 regression inputs replayed; $(grep '^Done' "$SCRATCH/fuzz.log"))"
