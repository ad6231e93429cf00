#!/bin/sh
# gpu_injection.sh - with no GPU or driver, memflow says ONCE on stderr that
# GPU capture is off and why, and CPU capture goes on.
#
# The probe does what the CUDA driver does at cuInit (dlopen the plugin named
# by CUDA_INJECTION64_PATH, call InitializeInjection), then makes
# 3 malloc(12345), 2 of them freed.  It links neither libmemflow nor CUPTI.
# Under `memflow run` (which must point CUDA_INJECTION64_PATH at the built
# plugin) the log must hold those CPU blocks and one GPU-off note, and
# stderr exactly one "GPU capture is off" line naming the CUPTI result.
# Then the injection alone: no `memflow run`, InitializeInjection starts the
# recorder itself (MEMFLOW_AUTOSTART), with glibc's reserve for
# initial-exec TLS of late-loaded libraries cut to what a big process
# (Python + torch) has left - a 1 KiB TLS buffer in libmemflow once made
# that dlopen fail ("cannot allocate memory in static TLS block").
. "$top_srcdir/tests/lib.sh"
needs_preload
PROBE="$top_builddir/tests/gpu_inject_probe"
SUMMARY="$top_builddir/tests/gpu_log_summary"

# expect_one_log DIR SUMMARY: DIR holds exactly one log, summed up so.
expect_one_log() {
    set -- "$1"/memflow-*.mfl "$2"
    [ $# -eq 2 ] && [ -f "$1" ] || fail "expected one log, found: $*"
    expect_eq "summary of $1" "$2" "$("$SUMMARY" "$1")"
}

"$MEMFLOW" run -o "$SCRATCH/out" --no-render --no-compact -- "$PROBE" \
    >"$SCRATCH/stdout" 2>"$SCRATCH/stderr" || fail "memflow run exited $? ($(cat "$SCRATCH/stderr"))"
expect_eq "probe output" "InitializeInjection returned 1" "$(cat "$SCRATCH/stdout")"
expect_eq "stderr lines" 1 "$(wc -l <"$SCRATCH/stderr" | tr -d ' ')"
line=$(cat "$SCRATCH/stderr")
case "$line" in
"memflow: GPU capture is off: CUPTI_ERROR_"*" (cuptiSubscribe_v2 failed; no usable CUDA driver or GPU?); CPU capture goes on") ;;
*) fail "unexpected GPU-off line: $line" ;;
esac
result=$(echo "$line" | sed 's/^memflow: GPU capture is off: \(CUPTI_ERROR_[A-Z_]*\) .*/\1/')
expect_one_log "$SCRATCH/out" \
    "cpu_allocs_12345=3 frees_of_them=2 gpu_events=0 gpu_off_notes=1 gpu_off_result=$result no_driver_notes=0 not_injected_notes=0"

mkdir -p "$SCRATCH/alone"
GLIBC_TUNABLES=glibc.rtld.nns=1:glibc.rtld.optional_static_tls=512 \
    MEMFLOW_AUTOSTART=1 MEMFLOW_PATH="$SCRATCH/alone" \
    CUDA_INJECTION64_PATH="$top_builddir/.libs/libmemflow-cuda.so" \
    "$PROBE" >"$SCRATCH/alone.stdout" 2>"$SCRATCH/alone.stderr" ||
    fail "injection alone: $(cat "$SCRATCH/alone.stdout" "$SCRATCH/alone.stderr")"
expect_eq "alone output" "InitializeInjection returned 1" "$(cat "$SCRATCH/alone.stdout")"
expect_eq "alone stderr" "$line" "$(cat "$SCRATCH/alone.stderr")"
expect_one_log "$SCRATCH/alone" \
    "cpu_allocs_12345=0 frees_of_them=0 gpu_events=0 gpu_off_notes=1 gpu_off_result=$result no_driver_notes=0 not_injected_notes=0"
