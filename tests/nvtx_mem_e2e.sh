#!/bin/sh
# nvtx_mem_e2e.sh - the NVTX memory API: a plain C program (no memflow code,
# no GPU) registers a malloc'ed 1 MiB arena as an NVTX heap and regions
# inside it (tests/nvtx_mem_workload.c lists them); under `memflow run` the
# regions become sub-blocks, counted apart from the arena that holds them.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/nvtx_mem_workload"
LOGCHECK="$top_builddir/tests/logcheck"
CHECK="$top_builddir/tests/stacks_check"

"$MEMFLOW" run --no-render -o "$SCRATCH/run" -- "$W" check > "$SCRATCH/run.out" 2> "$SCRATCH/run.err" ||
    fail "run exited $?: $(cat "$SCRATCH/run.err")"
set -- "$SCRATCH"/run/memflow-*.mfl
[ $# -eq 1 ] || fail "expected one log, got $#"
log=$1

# The log, read by the core reader alone: five regions, four ended (one by
# unregister, one by resize, two by the heap's reset), one live at the end;
# none of them in the scopes' counts, which see the arena once.
"$LOGCHECK" "$log" > "$SCRATCH/logcheck.txt" || fail "logcheck exited $?"
expect_eq "sub-blocks in the log" "subblocks allocs=5 frees=4 bytes=160744 peak=151552 live=1000 live_count=1" \
    "$(grep '^subblocks ' "$SCRATCH/logcheck.txt")"
expect_eq "the arena" "pool: allocs=1 frees=0 bytes=1048576 actual=1048576" \
    "$(grep '^pool: ' "$SCRATCH/logcheck.txt")"
expect_eq "no scope of a region among the blocks" "" \
    "$(grep -E '^(layer1|layer2|grow|tail):' "$SCRATCH/logcheck.txt" || true)"
"$CHECK" --events "$log" > "$SCRATCH/events.txt"
arena=$(sed -n 's/^arena=0x//p' "$SCRATCH/run.out")
expect_eq "the region's name" "region_name id=$(printf %d $((0x$arena + 65536))) name=weights domain=pools" \
    "$(grep '^region_name' "$SCRATCH/events.txt" | sed 's/ thread=.*//')"
echo "nvtx_mem_e2e: ok"
