#!/bin/sh
# render_big.sh - a log of one million allocations (and as many frees)
# renders a trace under the 64 MB bound that python3's json parses, whose
# memory counter keeps the exact peak and the last value, and statistics
# with exact counts.  Prints the time taken (no speed assertion).
. "$top_srcdir/tests/lib.sh"
N=1000000
LOG=$("$top_builddir/tests/render_gen" "$SCRATCH" big $N)
start=$(date +%s.%N)
"$MEMFLOW" render "$LOG" -o "$SCRATCH/out" --formats profile.json,stats.json 2>/dev/null ||
    fail "memflow render exited $?"
end=$(date +%s.%N)
size=$(stat -c %s "$SCRATCH/out/profile.json")
echo "render of $N allocations: $(echo "$end - $start" | bc) s, profile.json $size bytes"
[ "$size" -lt $((64 * 1024 * 1024)) ] || fail "profile.json is $size bytes"
"$PYTHON3" - "$SCRATCH/out/stats.json" "$SCRATCH/out/profile.json" "$N" <<'PY' || fail "big trace"
import json, sys
n = int(sys.argv[3])
s = json.load(open(sys.argv[1]))
c = s["devices"][0]
assert c["alloc_count"] == n + 1 and c["free_count"] == n - 1000 + 1, c
window = sum(1 + (i * 7919) % 4096 for i in range(n - 1000, n))
assert c["live_bytes_end"] == window and c["live_count_end"] == 1000, c
t = json.load(open(sys.argv[2]))
pts = [e["args"]["Memory: cpu/0"] for e in t["traceEvents"]
       if e["ph"] == "C" and e["name"] == "Memory: cpu/0"]
assert len(pts) <= 250000 + 1, len(pts)
assert max(pts) == c["peak_bytes"] and c["peak_bytes"] > 10 << 20, (max(pts), c["peak_bytes"])
# the process ended holding the last 1000 blocks (never freed), then held nothing
assert pts[-1] == c["held_bytes_end"] == 0, (pts[-1], c["held_bytes_end"])
# one point after every alloc and free, and one when the process ended
assert int(t["otherData"]["counter_points_dropped"]) == c["alloc_count"] + c["free_count"] + 1 - len(pts)
print("counter points kept:", len(pts))
PY

# 200000 allocations, each in its own scope: 200000 spans, more than the
# trace's share for spans; the longest are kept and the file stays bounded
LOG2=$("$top_builddir/tests/render_gen" "$SCRATCH/scoped" big 200000 scoped)
"$MEMFLOW" render "$LOG2" -o "$SCRATCH/out2" --formats profile.json 2>/dev/null ||
    fail "memflow render (scoped) exited $?"
"$PYTHON3" - "$SCRATCH/out2/profile.json" <<'PY' || fail "scoped trace"
import json, sys
t = json.load(open(sys.argv[1]))
spans = [e for e in t["traceEvents"] if e["ph"] == "X"]
dropped = int(t["otherData"]["spans_dropped"])
assert len(spans) + dropped == 200000 and dropped > 0, (len(spans), dropped)
assert all(e["name"] == "layer:" for e in spans)
print("spans kept:", len(spans), "dropped:", dropped)
PY
[ "$(stat -c %s "$SCRATCH/out2/profile.json")" -lt $((64 * 1024 * 1024)) ] || fail "scoped trace size"
# The picture kept on a second core (the default where there is one) is the
# picture kept on the model's thread: every output the same, byte for byte,
# for the million blocks and for the 200000 scopes (and --color-by role).
for log in "$LOG" "$LOG2"; do
    for color in scope role; do
        rm -rf "$SCRATCH/thread" "$SCRATCH/inline"
        "$MEMFLOW" render "$log" -o "$SCRATCH/thread" --color-by $color 2>/dev/null ||
            fail "render with the picture's thread exited $?"
        MEMFLOW_MODEL_THREAD=0 "$MEMFLOW" render "$log" -o "$SCRATCH/inline" --color-by $color \
            2>/dev/null || fail "render with the picture inline exited $?"
        for f in memory_flow.svg profile.json stats.txt; do
            cmp -s "$SCRATCH/thread/$f" "$SCRATCH/inline/$f" ||
                fail "$f differs with the picture on its own thread ($log, --color-by $color)"
        done
    done
done
echo "render_big: ok"
