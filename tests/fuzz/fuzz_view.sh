#!/bin/sh
# fuzz_view.sh - the libFuzzer target of `memflow view`'s request parser
# (tests/fuzz/fuzz_view_request.c) from seeds of real requests, for a
# bounded number of runs (MEMFLOW_FUZZ_RUNS, default 20000: a few seconds).
# Skips (and says why) without a compiler that links -fsanitize=fuzzer.
. "$top_srcdir/tests/lib.sh"
FUZZ="$top_builddir/tests/fuzz/fuzz_view_request"
if [ ! -x "$FUZZ" ]; then
    echo "SKIP: $TEST_NAME: no libFuzzer target: configure found no C compiler that links" \
         "-fsanitize=fuzzer (install clang and libclang-rt-dev, or set FUZZ_CC)"
    exit 77
fi
mkdir -p "$SCRATCH/seeds" "$SCRATCH/corpus"
T=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
i=0
for uri in "/?token=$T" "/api/meta?token=$T" \
    "/api/window?token=$T&view=0&t0=0&t1=1000&y0=0&y1=18446744073709551615&w=1200&h=300" \
    "/api/window?view=0&t0=0&t1=9&y0=0&y1=9&w=4&h=2&hide=12,7,3&min=10&max=99&by=1&token=$T" \
    "/api/at?view=0&t0=0&t1=9&y0=3&y1=4&hide=&token=$T" \
    "/api/occupancy?view=1&t0=5&t1=9&cols=800&token=$T" "/api/stack?stack=3&token=$T" \
    "/api/range?token=$T&view=0&t0=1&t1=2" "/api/window?view=0&view=1" "/x%2e%2e/etc"; do
    printf '\000%s' "$uri" > "$SCRATCH/seeds/$i"
    i=$((i + 1))
done
status=0
"$FUZZ" -runs="${MEMFLOW_FUZZ_RUNS:-20000}" -seed=1 -max_len=4096 -timeout=30 \
    -artifact_prefix="$SCRATCH/" "$SCRATCH/corpus" "$SCRATCH/seeds" > "$SCRATCH/fuzz.log" 2>&1 ||
    status=$?
[ "$status" -eq 0 ] || fail "fuzz_view_request exited $status: see $SCRATCH/fuzz.log and $SCRATCH/crash-*"
grep -q "^Done [0-9]* runs" "$SCRATCH/fuzz.log" || fail "fuzz_view_request did not finish its runs"
echo "$TEST_NAME: ok ($(grep '^Done' "$SCRATCH/fuzz.log"))"
