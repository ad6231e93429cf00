#!/bin/sh
# fuzz.sh - the libFuzzer targets (tests/fuzz/fuzz_reader.c: fuzz_reader,
# reader, model, every output, and a growing log under one reader;
# fuzz_compact, whole compact logs through the reader and every chunk;
# tests/fuzz/fuzz_codec.c: the dense encoding's round trips) from a seed
# corpus of real logs, compact logs of them and damaged copies
# (tests/fuzz/seeds.py), for a bounded number of runs: MEMFLOW_FUZZ_RUNS of
# fuzz_reader (default 1000) and ten times as many of fuzz_codec,
# MEMFLOW_FUZZ_COMPACT_RUNS of fuzz_compact (default 200); about a minute
# here.  Any crash,
# leak, sanitizer report or timeout fails, and leaves its input in the
# scratch folder.  Skips (and says why) when configure found no compiler
# that links -fsanitize=fuzzer.
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
# the same logs compacted, and compact logs of realistic size: 40,000
# records and (where the preload runs) a real program's 80,000 events
mkdir -p "$SCRATCH/small"
for log in "$SCRATCH"/logs/*/memflow-*.mfl; do
    cp "$log" "$SCRATCH/small/$(basename "$(dirname "$log")").mfl"
done
"$G" "$SCRATCH/compact/big" big 20000 scoped > /dev/null
if preload_works; then
    "$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/compact/prog" -- \
        "$top_builddir/tests/alloc_workload" threads 2 20000 > /dev/null
fi
"$MEMFLOW" compact "$SCRATCH"/small/*.mfl "$SCRATCH"/compact/*/memflow-*.mfl > /dev/null
"$PYTHON3" "$top_srcdir/tests/fuzz/seeds.py" "$SCRATCH/seeds-fuzz_reader" \
    "$SCRATCH"/logs/*/memflow-*.mfl "$SCRATCH"/small/*.mfl
"$PYTHON3" "$top_srcdir/tests/fuzz/seeds.py" "$SCRATCH/seeds-fuzz_compact" \
    "$SCRATCH"/small/*.mfl "$SCRATCH"/compact/*/memflow-*.mfl
"$PYTHON3" "$top_srcdir/tests/fuzz/seeds.py" --codec "$SCRATCH/seeds-fuzz_codec" \
    "$SCRATCH"/logs/*/memflow-*.mfl "$SCRATCH"/compact/*/memflow-*.mfl
status=0
for target in fuzz_reader fuzz_compact fuzz_codec; do
    runs=${MEMFLOW_FUZZ_RUNS:-1000} max_len=65536
    [ $target = fuzz_compact ] && runs=${MEMFLOW_FUZZ_COMPACT_RUNS:-200} max_len=1048576
    [ $target = fuzz_codec ] && runs=$((10 * ${MEMFLOW_FUZZ_RUNS:-1000})) max_len=1048576
    mkdir -p "$SCRATCH/corpus-$target" "$SCRATCH/tmp"
    TMPDIR="$SCRATCH/tmp" LSAN_OPTIONS="suppressions=$top_srcdir/tests/fuzz/lsan.supp" \
        MEMFLOW_READ_THREADS=1 "$top_builddir/tests/fuzz/$target" -runs="$runs" -seed=1 \
        -max_len=$max_len -timeout=60 -rss_limit_mb=2048 -max_total_time=300 \
        -artifact_prefix="$SCRATCH/$target-" "$SCRATCH/corpus-$target" "$SCRATCH/seeds-$target" \
        > "$SCRATCH/$target.log" 2>&1 || status=$?
    [ "$status" -eq 0 ] ||
        fail "$target exited $status: see $SCRATCH/$target.log and $SCRATCH/$target-crash-*"
    grep -q "^Done [0-9]* runs" "$SCRATCH/$target.log" || fail "$target did not finish its runs"
    echo "$TEST_NAME: $target ok ($(grep '^Done' "$SCRATCH/$target.log"))"
done
