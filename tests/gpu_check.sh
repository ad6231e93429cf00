#!/bin/sh
# gpu_check.sh - bench/gpu_check.py, the real-GPU procedure's checker, on a
# capture made up here: a probe of two processes (two logs, each with its
# own clock anchor) and PyTorch's trace of one segment.  The segment's
# CUPTI block, in the first log, has a time that is a whole Unix-epoch
# microsecond against the second log's anchor but not its own: it is still
# CUPTI's, and matches.  (Seen on an H100: checked against every log of an
# 18-process probe, one of 21 segments went unmatched.)  And with the
# caching allocator on, a tensor at a segment's start is no CUDA allocation
# of its own: no "alloc" matching is reported.
. "$top_srcdir/tests/lib.sh"
: "${PYTHON:=/usr/bin/python3}"
cap="$SCRATCH/gpu-capture"
mkdir -p "$cap/torch_caching"
"$PYTHON" - "$cap" <<'PY'
import json, sys
cap = sys.argv[1]
r1, r2 = 1700000000000000300, 1700000000000000000   # CLOCK_REALTIME - MONOTONIC
t = 5000000000                                      # on r2's grid, not on r1's
block = [0, 1, 0, 0x7f0000000000, 2097152, t, "net:", "unknown", 1]
logs = [{"path": "a.mfl", "pid": 1, "program": "python3", "start_mono_ns": 0,
         "start_real_ns": r1, "allocs": [block], "frees": [], "notes": [], "samples": [],
         "damage": None},
        {"path": "b.mfl", "pid": 2, "program": "python3", "start_mono_ns": 0,
         "start_real_ns": r2, "allocs": [], "frees": [], "notes": [], "samples": [],
         "damage": None}]
json.dump({"logs": logs}, open(cap + "/torch_caching.blocks.json", "w"))
us = (t + r1) // 1000 + 12                          # the history's entry, 11.7 us later
trace = [{"action": "segment_alloc", "addr": 0x7f0000000000, "size": 2097152, "time_us": us},
         {"action": "alloc", "addr": 0x7f0000000000, "size": 2097152, "time_us": us}]
json.dump({"clock_start": {"real_ns": r1, "mono_ns": 0}, "trace": trace},
          open(cap + "/torch_caching.json", "w"))
PY
: >"$cap/steps.txt"
"$PYTHON" "$top_srcdir/bench/gpu_check.py" "$cap" >"$SCRATCH/summary.txt" ||
    fail "gpu_check.py exited $?"
expect_eq "the segment against CUPTI's block" \
    "   segment_alloc: 1 in PyTorch's trace, 1 matched by address, size; memflow - PyTorch time: median -11.7 us (min -11.7, max -11.7)" \
    "$(grep 'segment_alloc:' "$SCRATCH/summary.txt")"
expect_eq "alloc lines with the cache on" "" "$(grep '   alloc:' "$SCRATCH/summary.txt")"
exit 0
