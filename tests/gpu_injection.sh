#!/bin/sh
# gpu_injection.sh - with no GPU or driver, memflow says ONCE on stderr that
# GPU capture is off and why, and CPU capture goes on.
#
# `memflow run` must point CUDA_INJECTION64_PATH at the built plugin; the
# probe then does what the driver does at cuInit (dlopen it, call
# InitializeInjection) and makes 3 malloc(12345), 2 of them freed.  The log
# must hold those CPU blocks and one GPU-off note, and stderr exactly one
# "GPU capture is off" line naming the CUPTI result.  Then the same without
# `memflow run`: InitializeInjection starts the recorder itself (MEMFLOW_AUTOSTART).
. "$top_srcdir/tests/lib.sh"
PROBE="$top_builddir/tests/gpu_inject_probe"

"$MEMFLOW" run -o "$SCRATCH/out" --no-render --no-compact -- "$PROBE" \
    >"$SCRATCH/stdout" 2>"$SCRATCH/stderr" || fail "memflow run exited $? ($(cat "$SCRATCH/stderr"))"
expect_eq "probe output" "InitializeInjection returned 1" "$(cat "$SCRATCH/stdout")"

off_lines=$(grep -c '^memflow: GPU capture is off: ' "$SCRATCH/stderr" || true)
expect_eq "GPU-off lines on stderr" 1 "$off_lines"
line=$(grep '^memflow: GPU capture is off: ' "$SCRATCH/stderr")
case "$line" in
"memflow: GPU capture is off: CUPTI_ERROR_"*" (cuptiActivityRegisterTimestampCallback failed; no usable CUDA driver or GPU?); CPU capture goes on") ;;
*) fail "unexpected GPU-off line: $line" ;;
esac
expect_eq "stderr lines" 1 "$(wc -l <"$SCRATCH/stderr" | tr -d ' ')"

set -- "$SCRATCH"/out/memflow-*.mfl
[ $# -eq 1 ] && [ -f "$1" ] || fail "expected one log in $SCRATCH/out, found: $*"
summary=$("$PROBE" --summary "$1")
result=$(echo "$line" | sed 's/^memflow: GPU capture is off: \(CUPTI_ERROR_[A-Z_]*\) .*/\1/')
expect_eq "log summary" \
    "cpu_allocs_12345=3 frees_of_them=2 gpu_events=0 gpu_off_notes=1 gpu_off_result=$result" \
    "$summary"

# Not under `memflow run` (no preload library): InitializeInjection starts the
# recorder itself when MEMFLOW_AUTOSTART asks, into MEMFLOW_PATH.
mkdir -p "$SCRATCH/direct"
MEMFLOW_AUTOSTART=1 MEMFLOW_PATH="$SCRATCH/direct" \
    CUDA_INJECTION64_PATH="$top_builddir/.libs/libmemflow-cuda.so" \
    "$PROBE" >"$SCRATCH/direct.stdout" 2>"$SCRATCH/direct.stderr" || fail "direct probe exited $?"
expect_eq "direct probe output" "InitializeInjection returned 1" "$(cat "$SCRATCH/direct.stdout")"
expect_eq "direct stderr" "$line" "$(cat "$SCRATCH/direct.stderr")"
set -- "$SCRATCH"/direct/memflow-*.mfl
[ $# -eq 1 ] && [ -f "$1" ] || fail "expected one log in $SCRATCH/direct, found: $*"
expect_eq "direct log summary" \
    "cpu_allocs_12345=0 frees_of_them=0 gpu_events=0 gpu_off_notes=1 gpu_off_result=$result" \
    "$("$PROBE" --summary "$1")"
