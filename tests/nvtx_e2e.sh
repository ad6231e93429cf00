#!/bin/sh
# nvtx_e2e.sh - NVTX ranges become scopes and trace spans: a plain C program
# using the NVTX v3 headers (no memflow code in it, no GPU) runs under
# `memflow run`, which makes libmemflow-nvtx.so its NVTX injection library.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/nvtx_workload"
LOGCHECK="$top_builddir/tests/logcheck"
CHECK="$top_builddir/tests/stacks_check"

"$MEMFLOW" run --no-render -o "$SCRATCH/run" -- "$W" check > "$SCRATCH/run.out" 2> "$SCRATCH/run.err" ||
    fail "nvtx run exited $?: $(cat "$SCRATCH/run.err")"
grep -q '^injection=.*/libmemflow-nvtx\.so$' "$SCRATCH/run.out" ||
    fail "NVTX_INJECTION64_PATH not set by memflow run: $(cat "$SCRATCH/run.out")"
set -- "$SCRATCH"/run/memflow-*.mfl
[ $# -eq 1 ] || fail "expected one log, got $#"
log=$1
# Push/pop nesting in append mode, a domain with a registered string, a wide
# string, a second thread: every block in the scope NVTX named.
"$LOGCHECK" "$log" | grep -v '^<unk>:' | sed -n 's/ actual=.*//p' > "$SCRATCH/scopes.txt"
expect_eq "NVTX scopes" "encoder: allocs=2 frees=2 bytes=1000
encoder:layer0: allocs=3 frees=3 bytes=3000
attention:héad: allocs=4 frees=4 bytes=1000
decoder: allocs=5 frees=5 bytes=320" "$(cat "$SCRATCH/scopes.txt")"
# Start/end ranges are trace spans (the step starts on the main thread and
# ends on the worker), the mark an instant; the stray pop is counted.
"$CHECK" --events "$log" > "$SCRATCH/events.txt"
expect_eq "NVTX trace records" "range_begin id=1 name=load domain=mydomain thread=nvtx_workload
range_end id=1 name=- domain=mydomain thread=nvtx_workload
marker id=0 name=checkpoint domain=- thread=nvtx_workload
range_begin id=2 name=step domain=- thread=nvtx_workload
range_end id=2 name=- domain=- thread=worker
note 23 value=1" "$(cat "$SCRATCH/events.txt")"

# A program whose NVTX_INJECTION64_PATH is set keeps it (another tool owns
# NVTX), memflow says so in one line, and NVTX ranges are not scopes.
status=0
NVTX_INJECTION64_PATH=/nonexistent/libother-tool.so "$MEMFLOW" run --no-render -o "$SCRATCH/kept" \
    -- "$W" > "$SCRATCH/kept.out" 2> "$SCRATCH/kept.err" || status=$?
expect_eq "kept: status" 0 "$status"
expect_eq "kept: the program's variable" "injection=/nonexistent/libother-tool.so" "$(cat "$SCRATCH/kept.out")"
expect_eq "kept: one line" "memflow run: NVTX_INJECTION64_PATH is set (/nonexistent/libother-tool.so): kept, so NVTX ranges do not become memflow scopes" \
    "$(grep NVTX "$SCRATCH/kept.err")"
expect_eq "kept: no NVTX scope" "" \
    "$("$LOGCHECK" "$SCRATCH"/kept/memflow-*.mfl | grep -E '^(encoder|attention|decoder)')"
echo "nvtx_e2e: ok"
