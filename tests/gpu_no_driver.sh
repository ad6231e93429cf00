#!/bin/sh
# gpu_no_driver.sh - a CUDA program on a machine without a driver never
# loads the CUDA plugin; memflow must still say, in one line, that the
# program used CUDA but its GPU memory was not recorded, and note it in the
# log.  The program is samples/cuda/alloc_loop (nvcc-built, dynamic cudart):
# here its first CUDA call fails, as it must; and the same program as plain
# `nvcc` builds it (tests/alloc_loop_static: the CUDA runtime linked in
# statically, nvcc's default), which loads no CUDA library at all but asks
# for the driver.  A program that does not use CUDA hears nothing.  And a
# CUDA_INJECTION64_PATH that is already set is kept, with one line saying so.
. "$top_srcdir/tests/lib.sh"
needs_preload
SUMMARY="$top_builddir/tests/gpu_log_summary"
CUDA_PROGRAM="$top_builddir/samples/cuda/alloc_loop"
[ -x "$CUDA_PROGRAM" ] || { echo "SKIP: no CUDA samples (nvcc not found)"; exit 77; }
[ ! -e /proc/driver/nvidia/version ] || { echo "SKIP: this machine has an NVIDIA driver"; exit 77; }

# no_driver NAME PROGRAM LINE: PROGRAM under memflow run ends with its first
# CUDA call's failure, memflow says LINE and nothing else, and the one log
# holds one no-driver note.
no_driver() {
    status=0
    "$MEMFLOW" run -o "$SCRATCH/$1" --no-render --no-compact -- "$2" 10 \
        >"$SCRATCH/$1.stdout" 2>"$SCRATCH/$1.stderr" || status=$?
    expect_eq "$1: the program's status (its first CUDA call fails)" 1 "$status"
    expect_eq "$1: memflow lines on stderr" "$3" "$(grep '^memflow' "$SCRATCH/$1.stderr")"
    set -- "$SCRATCH/$1"/memflow-*.mfl
    [ $# -eq 1 ] && [ -f "$1" ] || fail "expected one log, found: $*"
    expect_eq "log summary of $1" \
        "cpu_allocs_12345=0 frees_of_them=0 gpu_events=0 gpu_off_notes=0 gpu_off_result=none no_driver_notes=1 not_injected_notes=0" \
        "$("$SUMMARY" "$1")"
}
no_driver dynamic "$CUDA_PROGRAM" \
    "memflow: alloc_loop used CUDA (libcudart.so.13) but no CUDA driver or GPU was found, so its GPU memory was not recorded"

# The static CUDA runtime: no CUDA library among the program's; its dlopen
# of libcuda.so.1 (seen by the preload library) tells.
STATIC_PROGRAM="$top_builddir/tests/alloc_loop_static"
[ -x "$STATIC_PROGRAM" ] || fail "no $STATIC_PROGRAM (make check builds it with nvcc)"
! readelf -d "$STATIC_PROGRAM" | grep 'NEEDED.*cuda' || fail "alloc_loop_static needs a CUDA library"
no_driver static "$STATIC_PROGRAM" \
    "memflow: alloc_loop_static used CUDA (it looked for libcuda.so.1) but no CUDA driver or GPU was found, so its GPU memory was not recorded"

# No CUDA in the program: nothing is said.
"$MEMFLOW" run -o "$SCRATCH/cpu" --no-render --no-compact -- sh -c 'exit 0' 2>"$SCRATCH/cpu.stderr" ||
    fail "memflow run of sh exited $?"
expect_eq "stderr of a program without CUDA" "" "$(cat "$SCRATCH/cpu.stderr")"

# Another tool's injection is kept, and that is said once.
status=0
CUDA_INJECTION64_PATH=/opt/other-tool/lib/libinjection.so \
    "$MEMFLOW" run -o "$SCRATCH/other" --no-render --no-compact -- "$CUDA_PROGRAM" 10 \
    >"$SCRATCH/other.stdout" 2>"$SCRATCH/other.stderr" || status=$?
expect_eq "alloc_loop's status" 1 "$status"
expect_eq "memflow lines with another injection" \
    "memflow run: CUDA_INJECTION64_PATH is already set (/opt/other-tool/lib/libinjection.so): kept, so memflow records no GPU memory in this run
memflow: alloc_loop used CUDA (libcudart.so.13) but no CUDA driver or GPU was found, so its GPU memory was not recorded" \
    "$(grep '^memflow' "$SCRATCH/other.stderr")"

# cupti=0 leaves CUPTI to the program's own tools (torch.profiler's CUDA
# activities): memflow run injects no GPU plugin, and says nothing of it.
show_injection='echo "${CUDA_INJECTION64_PATH:-unset}"'
expect_eq "CUDA_INJECTION64_PATH by default" "$top_builddir/.libs/libmemflow-cuda.so" \
    "$("$MEMFLOW" run -o "$SCRATCH/inject_on" --no-render --no-compact -- sh -c "$show_injection")"
expect_eq "CUDA_INJECTION64_PATH with --set cupti=0" "unset" \
    "$("$MEMFLOW" run -o "$SCRATCH/inject_off" --no-render --no-compact --set cupti=0 -- \
        sh -c "$show_injection")"
expect_eq "CUDA_INJECTION64_PATH with MEMFLOW_CUPTI=0" "unset" \
    "$(MEMFLOW_CUPTI=0 "$MEMFLOW" run -o "$SCRATCH/inject_env" --no-render --no-compact -- \
        sh -c "$show_injection")"
status=0
"$MEMFLOW" run -o "$SCRATCH/cupti_off" --no-render --no-compact --set cupti=0 -- \
    "$CUDA_PROGRAM" 10 >"$SCRATCH/cupti_off.stdout" 2>"$SCRATCH/cupti_off.stderr" || status=$?
expect_eq "alloc_loop's status with cupti=0" 1 "$status"
expect_eq "memflow lines with cupti=0" "" "$(grep '^memflow' "$SCRATCH/cupti_off.stderr")"
