#!/bin/sh
# render_cli.sh - `memflow stats` and `memflow render` on a real log with
# known content (tests/render_gen basic): exact statistics in JSON and in
# the table, trace counters equal to live bytes at every alloc/free, the
# GPU CSV at the end and at --at TIME, and the exit codes of bad usage.
. "$top_srcdir/tests/lib.sh"
GEN="$top_builddir/tests/render_gen"
LOG=$("$GEN" "$SCRATCH" basic)
PID=$(basename "$LOG" .mfl | sed 's/^memflow-//')

# -- statistics as JSON ----------------------------------------------------
"$MEMFLOW" stats "$LOG" --format json >"$SCRATCH/stats.json" 2>"$SCRATCH/stats.err" ||
    fail "memflow stats --format json exited $?"
"$PYTHON3" - "$SCRATCH/stats.json" <<'PY' || fail "stats JSON values"
import json, sys
d = json.load(open(sys.argv[1]))
dev = {x["device"]: x for x in d["devices"]}
c = dev["cpu/0"]
want = dict(alloc_count=4, free_count=2, alloc_bytes=1450, peak_bytes=1150,
            live_bytes_end=1050, live_count_end=2, unknown_frees=1, min_size=50,
            max_size=1000, avg_size=362.5, snapshots=1)
for k, v in want.items():
    assert c[k] == v, (k, c[k], v)
# MXNet's usage counter: bytes held after each alloc and free (not the
# unknown one): 100 400 450 150 1150 1050; gpu/0: 4096 12288 8192
assert (c["use_count"], c["min_use"], c["max_use"], c["avg_use"]) == (6, 100, 1150, 550.0), c
g = dev["gpu/0"]
assert (g["use_count"], g["min_use"], g["max_use"], g["avg_use"]) == (3, 4096, 12288, 8192.0), g
assert (g["alloc_count"], g["free_count"], g["alloc_bytes"], g["peak_bytes"],
        g["live_bytes_end"]) == (2, 1, 12288, 12288, 8192), g
scopes = {(s["scope"], s["device"]): s for s in d["scopes"]}
net, relu = scopes[("net_dense0:", "cpu/0")], scopes[("relu:", "cpu/0")]
assert (net["alloc_count"], net["alloc_bytes"], net["peak_live_bytes"], net["live_bytes_end"]) == (2, 400, 400, 0), net
assert (relu["alloc_count"], relu["alloc_bytes"], relu["peak_live_bytes"], relu["live_bytes_end"]) == (2, 1050, 1050, 1050), relu
assert scopes[("layer1:", "gpu/0")]["live_bytes_end"] == 0
peak = {p["device"]: p for p in d["at_peak"]}
assert peak["cpu/0"]["peak_bytes"] == 1150
assert [(h["scope"], h["bytes"], h["blocks"]) for h in peak["cpu/0"]["holders"]] == \
    [("relu:", 1050, 2), ("net_dense0:", 100, 1)], peak["cpu/0"]
assert [(h["scope"], h["bytes"]) for h in peak["gpu/0"]["holders"]] == \
    [("layer2:", 8192), ("layer1:", 4096)], peak["gpu/0"]
assert peak["cpu/0"]["peak_time_ns"] == c["peak_time_ns"] > 0
leaks = [(l["device"], l["address"], l["requested"], l["actual"], l["scope"], l["name"]) for l in d["leaks"]]
assert leaks == [("gpu/0", "0x7f0000100000", 8192, 8192, "layer2:", "w"),
                 ("cpu/0", "0x4000", 1000, 1024, "relu:", "big"),
                 ("cpu/0", "0x3000", 50, 64, "relu:", "unknown")], leaks
assert d["unknown_frees"] == 1 and d["damaged"] is False
assert d["gpu_dropped"] == 5
assert any("5 CUPTI activity records were dropped" in w for w in d["warnings"]), d["warnings"]
assert d["processes"][0]["finished"] is True
PY

# -- statistics as a table -------------------------------------------------
"$MEMFLOW" stats "$LOG" >"$SCRATCH/stats.txt" || fail "memflow stats exited $?"
grep -q '^Name  *Total Count    Min Use  (kB)    Max Use  (kB)    Avg Use  (kB)$' "$SCRATCH/stats.txt" ||
    fail "Device Storage header with MXNet's column names"
# the usage counter, as MXNet's table: updates, its smallest, largest (the
# peak) and mean value in kB
row=$(grep '^Memory: cpu/0 ' "$SCRATCH/stats.txt" | tr -s ' ')
expect_eq "cpu/0 row" "Memory: cpu/0 6 0.1000 1.1500 0.5500" "$row"
row=$(grep '^Memory: gpu/0 ' "$SCRATCH/stats.txt" | tr -s ' ')
expect_eq "gpu/0 row" "Memory: gpu/0 3 4.0960 12.2880 8.1920" "$row"
grep -q "Max Use is the peak; Avg is their mean, not MXNet's (max - min) / 2" "$SCRATCH/stats.txt" ||
    fail "the table says what Use and Avg are"
grep -q '^cpu/0: peak 1150 bytes' "$SCRATCH/stats.txt" || fail "peak line"
# --sort-by count --ascending: gpu/0 (3 updates) before cpu/0 (6)
"$MEMFLOW" stats "$LOG" --sort-by count --ascending >"$SCRATCH/asc.txt"
first=$(grep -m1 '^Memory: ' "$SCRATCH/asc.txt" | cut -c1-13)
expect_eq "ascending by count" "Memory: gpu/0" "$first"
"$MEMFLOW" stats "$LOG" --sort-by=count >"$SCRATCH/desc.txt"
first=$(grep -m1 '^Memory: ' "$SCRATCH/desc.txt" | cut -c1-13)
expect_eq "descending by count" "Memory: cpu/0" "$first"

# -- bad usage and unreadable logs -----------------------------------------
set +e
"$MEMFLOW" stats "$LOG" --sort-by median 2>"$SCRATCH/err"; rc=$?
expect_eq "bad --sort-by exit" 2 "$rc"
grep -q 'total, avg, min, max, count' "$SCRATCH/err" || fail "bad --sort-by names the accepted keys"
"$MEMFLOW" stats 2>/dev/null; expect_eq "no log exit" 2 "$?"
"$MEMFLOW" stats "$SCRATCH/missing.mfl" 2>"$SCRATCH/err"; rc=$?
expect_eq "missing log exit" 1 "$rc"
grep -q "missing.mfl" "$SCRATCH/err" || fail "missing log message names the file"
"$MEMFLOW" stats "$top_srcdir/tests/lib.sh" 2>"$SCRATCH/err"; rc=$?
expect_eq "not a log exit" 1 "$rc"
grep -q "not a memflow log" "$SCRATCH/err" || fail "not-a-log message"
"$MEMFLOW" render "$LOG" --formats profile.json,bogus.txt 2>"$SCRATCH/err"; rc=$?
expect_eq "bad --formats exit" 2 "$rc"
grep -q "bogus.txt" "$SCRATCH/err" || fail "bad --formats message names the value"
"$MEMFLOW" render "$LOG" --at 12parsecs 2>/dev/null; expect_eq "bad --at exit" 2 "$?"
"$MEMFLOW" render "$LOG" --device tpu/0 2>/dev/null; expect_eq "bad --device exit" 2 "$?"
"$MEMFLOW" render "$LOG" --color-by mood 2>/dev/null; expect_eq "bad --color-by exit" 2 "$?"
set -e
"$MEMFLOW" stats --help | grep -q -- '--sort-by' || fail "stats --help"
"$MEMFLOW" render --help | grep -q -- '--at TIME' || fail "render --help"

# -- render: trace, chrome_timeline, stats, CSV ----------------------------
OUT="$SCRATCH/out"
"$MEMFLOW" render "$LOG" -o "$OUT" \
    --formats profile.json,chrome_timeline.json,stats.json,stats.txt,gpu_memory_profile.csv \
    2>"$SCRATCH/render.err" || fail "memflow render exited $?"
cmp -s "$OUT/profile.json" "$OUT/chrome_timeline.json" || fail "chrome_timeline.json = profile.json"
cmp -s "$OUT/stats.json" "$SCRATCH/stats.json" || fail "stats.json output = memflow stats --format json"
# what the model builds follows the outputs asked for (stats: no picture, no
# trace), and the numbers do not depend on it
"$MEMFLOW" render "$LOG" -o "$SCRATCH/all" --formats memory_flow.svg,profile.json,stats.json \
    2>/dev/null || fail "memflow render (all) exited $?"
cmp -s "$SCRATCH/all/stats.json" "$SCRATCH/stats.json" || fail "stats.json with the picture built"
cmp -s "$SCRATCH/all/profile.json" "$OUT/profile.json" || fail "profile.json with the picture built"
"$PYTHON3" - "$OUT/profile.json" "$PID" <<'PY' || fail "trace values"
import json, sys
d = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
assert d["displayTimeUnit"] == "ms"
ev = d["traceEvents"]
def counter(name):
    pts = [e for e in ev if e["ph"] == "C" and e["name"] == name]
    assert all(e["cat"] == "Device Storage" for e in pts)
    return [(e["ts"], e["args"][name]) for e in pts]
cpu = counter("Memory: cpu/0")
# render_gen ended (at its last event) holding 1050 bytes: its memory goes with it
assert [v for _, v in cpu] == [100, 400, 450, 150, 1150, 1050, 0], cpu
assert all(a[0] <= b[0] for a, b in zip(cpu, cpu[1:]))
assert [v for _, v in counter("Memory: gpu/0")] == [4096, 12288, 8192, 0]
snap = [e for e in ev if e["ph"] == "C" and e["name"] == "Allocator: cpu/0"]
assert len(snap) == 1 and snap[0]["args"] == {"allocated": 11, "active": 22, "resident": 33,
    "mapped": 44, "rss": 55, "events": 1150}, snap
# the snapshot sits between the counter points of 1150 and 1050
assert cpu[4][0] <= snap[0]["ts"] <= cpu[5][0]
spans = [(e["name"], e["args"]["depth"]) for e in ev if e["ph"] == "X" and e["cat"] == "scope"]
assert spans == [("net_dense0:", 1), ("relu:", 1), ("layer1:", 1), ("layer2:", 1)], spans
assert all(e["pid"] == pid and e["dur"] >= 0 for e in ev if e["ph"] == "X" and e["cat"] == "scope")
meta = {(e["name"], e["pid"]): e["args"] for e in ev if e["ph"] == "M"}
assert meta[("process_name", pid)]["name"].endswith("(pid %d)" % pid)
assert meta[("process_name", (1 << 24) + 256)]["name"] == "gpu/0"
assert any(e["name"] == "thread_name" and e["pid"] == pid for e in ev if e["ph"] == "M")
assert min(e["ts"] for e in ev if "ts" in e) >= 0
gpu_pid = (1 << 24) + 256
acts = [(e["cat"], e["name"], e["dur"], e["tid"], e["args"]["bytes"], e["args"]["correlation"])
        for e in ev if e["ph"] == "X" and e["pid"] == gpu_pid]
assert acts == [("kernel", "sgemm<float>", 2.5, 7, 0, 42), ("memcpy", "HtoD", 1.0, 13, 65536, 43)], acts
k = [e for e in ev if e["ph"] == "X" and e["pid"] == gpu_pid]
assert round(k[1]["ts"] - k[0]["ts"], 3) == 3.0
tracks = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["pid"] == gpu_pid and e["name"] == "thread_name"}
assert tracks == {7: "stream 7 (pid %d)" % pid, 13: "stream 13 (pid %d)" % pid}, tracks
PY
cat >"$SCRATCH/want_end.csv" <<'CSV'
"Attribute Name","Requested Size","Device","Actual Size","Reuse?"
"layer2:w","8192","0","8192","1"
CSV
cmp "$SCRATCH/want_end.csv" "$OUT/gpu_memory_profile-pid_$PID.csv" || fail "CSV at the end"

# -- --at TIME: the CSV lists what was live then ---------------------------
at=$(json_get "$SCRATCH/stats.json" '[x["peak_time_ns"] for x in d["devices"] if x["device"]=="gpu/0"][0]')
"$MEMFLOW" render "$LOG" -o "$SCRATCH/at" --formats gpu_memory_profile.csv --at "${at}ns" 2>/dev/null ||
    fail "render --at exited $?"
cat >"$SCRATCH/want_at.csv" <<'CSV'
"Attribute Name","Requested Size","Device","Actual Size","Reuse?"
"layer1:unknown","4096","0","4096","0"
"layer2:w","8192","0","8192","1"
CSV
cmp "$SCRATCH/want_at.csv" "$SCRATCH/at/gpu_memory_profile-pid_$PID.csv" || fail "CSV at --at"
# 1 ns after the start no process had a GPU block yet: no CSV file
"$MEMFLOW" render "$LOG" -o "$SCRATCH/at0" --formats stats.json,gpu_memory_profile.csv --at 0.000001ms 2>/dev/null
[ -f "$SCRATCH/at0/stats.json" ] || fail "stats.json at --at 1ns"
[ ! -e "$SCRATCH/at0/gpu_memory_profile-pid_$PID.csv" ] || fail "no CSV before any GPU block"
expect_eq "no allocation 1 ns after the start" 0 "$(json_get "$SCRATCH/at0/stats.json" 'sum(x["alloc_count"] for x in d["devices"])')"
# -- default formats: the picture, the trace, the table, and the CSV (GPU) --
DEF="$SCRATCH/default"
mkdir -p "$DEF" && cp "$LOG" "$DEF/"
"$MEMFLOW" render "$DEF/$(basename "$LOG")" 2>/dev/null || fail "render with default formats exited $?"
for f in memory_flow.svg profile.json stats.txt "gpu_memory_profile-pid_$PID.csv"; do
    [ -s "$DEF/$f" ] || fail "default output $f missing in the log's folder"
done
"$MEMFLOW" render "$LOG" -o "$SCRATCH/dev" --device gpu/0 --color-by size \
    --formats memory_flow.png 2>/dev/null || fail "render --device --color-by exited $?"
[ -s "$SCRATCH/dev/memory_flow.png" ] || fail "memory_flow.png"
# -- memory kinds in the statistics, pool changes in the trace --------------
KLOG=$("$GEN" "$SCRATCH/kinds" kinds)
"$MEMFLOW" render "$KLOG" -o "$SCRATCH/kinds" --formats stats.json,stats.txt,profile.json 2>/dev/null ||
    fail "render (kinds) exited $?"
"$PYTHON3" - "$SCRATCH/kinds/stats.json" "$SCRATCH/kinds/profile.json" <<'PY' || fail "kinds and pools"
import json, sys
s = json.load(open(sys.argv[1]))
g = s["devices"][0]
assert g["device"] == "gpu/0" and g["alloc_bytes"] == 1230 and g["live_bytes_end"] == 1200, g
assert g["kinds"] == {"device": {"alloc_count": 1, "alloc_bytes": 1000, "live_bytes_end": 1000},
                      "pinned": {"alloc_count": 1, "alloc_bytes": 200, "live_bytes_end": 200},
                      "managed": {"alloc_count": 1, "alloc_bytes": 30, "live_bytes_end": 0}}, g["kinds"]
t = json.load(open(sys.argv[2]))
pools = [(e["name"], e["args"]["address"], e["args"]["size"], e["args"]["release_threshold"])
         for e in t["traceEvents"] if e["ph"] == "i"]
assert pools == [("pool created", "0x7e0000000000", 2097152, 1048576),
                 ("pool trimmed", "0x7e0000000000", 1048576, 1048576)], pools
assert all(e["pid"] == (1 << 24) + 256 and e["s"] == "p" for e in t["traceEvents"] if e["ph"] == "i")
PY
grep -q '^gpu/0 by memory kind: device 1 allocations, 1000 B (1000 B never freed); pinned 1 allocations, 200 B (200 B never freed); managed 1 allocations, 30 B (0 B never freed);$' \
    "$SCRATCH/kinds/stats.txt" || fail "memory kinds line in the table"
echo "render_cli: ok"
