#!/bin/sh
# torch_import.sh - memflow import of PyTorch memory snapshots written by
# tests/torch_import_snapshots.py (its docstring has the scenario): every
# count, both peaks (reserved: the segments; allocated: the tensors), the
# sites, scopes, the OOM post-mortem, the GPU CSV at tensor level, the
# trace's counters and the picture's tensors, exactly, from the current
# format (time_us) and the old one (the event order as the axis); then the
# refusals: a global, a reduce, a cut file, plain data that is no snapshot,
# each with its message and exit status, and nothing of a hostile pickle
# runs.
. "$top_srcdir/tests/lib.sh"
S="$SCRATCH/snapshots"
"$PYTHON3" "$top_srcdir/tests/torch_import_snapshots.py" "$S"

# ---- the current format ----
"$MEMFLOW" import "$S/current.pickle" -o "$SCRATCH/cur" 2> "$SCRATCH/cur.err" ||
    fail "memflow import current.pickle exited $?: $(cat "$SCRATCH/cur.err")"
grep -q "current.pickle: 17 trace entries (5 tensors, 2 segments; live before the history: 3 tensors, 3 segments; 1 out-of-memory errors)" \
    "$SCRATCH/cur.err" || fail "import report: $(cat "$SCRATCH/cur.err")"
for f in memflow-import-1.mfl memory_flow.svg profile.json stats.txt gpu_memory_profile-pid_1.csv; do
    [ -s "$SCRATCH/cur/$f" ] || fail "memflow import wrote no $f"
done
check_stats "$SCRATCH/cur/memflow-import-1.mfl" "the imported statistics differ" <<'EOF'
MiB = 1 << 20
p = d["processes"][0]
eq("process", (1, "snapshot", False), (p["pid"], p["end"]["how"], p["abnormal"]))
dev = {x["device"]: x for x in d["devices"]}
# reserved: the segments (gpu/0: A, C, D live before, B at 10 us; gpu/1: the mapping)
g0, g1 = dev["gpu/0"], dev["gpu/1"]
eq("gpu/0 segments", (4, 2, 8 * MiB, 10000, 4 * MiB),
   (g0["alloc_count"], g0["free_count"], g0["peak_bytes"], g0["peak_time_ns"],
    g0["held_bytes_end"]))
eq("gpu/1 mappings", (2, 1, 6 * MiB, 5000, 4 * MiB, {"vmm"}),
   (g1["alloc_count"], g1["free_count"], g1["peak_bytes"], g1["peak_time_ns"],
    g1["held_bytes_end"], set(g1["kinds"])))
# allocated: the tensors
s0, s1 = g0["subblocks"], g1["subblocks"]
eq("gpu/0 tensors", (6, 3, 1840640, 1316352, 20000, 5632, 3, 2, 3, 266752),
   tuple(s0[k] for k in ("alloc_count", "free_count", "alloc_bytes", "peak_bytes",
                         "peak_time_ns", "live_bytes_end", "live_count_end", "reused_count",
                         "before_count", "before_bytes")))
eq("gpu/1 tensors", (2, 1, 4 * MiB, 4 * MiB, 25000, 2 * MiB, 1, 1, 0),
   tuple(s1[k] for k in ("alloc_count", "free_count", "alloc_bytes", "peak_bytes",
                         "peak_time_ns", "live_bytes_end", "live_count_end", "reused_count",
                         "before_count")))
eq("gpu/0 tensor scopes",
   {"<unk>:": (3, 266752), "net:dense0:": (1, 1024), "net:dense1:": (1, MiB),
    "backward:net:dense0:": (1, 512 * 1024)},
   {x["scope"]: (x["alloc_count"], x["peak_live_bytes"]) for x in s0["scopes"]})
# both peaks per scope and per site
eq("scopes, both peaks",
   [("<unk>:", "gpu/0", 6 * MiB, 266752), ("net:dense0:", "gpu/0", 0, 1024),
    ("net:dense1:", "gpu/0", 2 * MiB, MiB), ("backward:net:dense0:", "gpu/0", 0, 524288),
    ("net:", "gpu/1", 6 * MiB, 4 * MiB)],
   [(x["scope"], x["device"], x["reserved_peak_bytes"], x["allocated_peak_bytes"])
    for x in d["gpu_scopes"]])
eq("sites, both peaks",
   [("(no stack)", "gpu/0", 6 * MiB, 266752), ("forward (model.py:17)", "gpu/0", 2 * MiB, 1049600),
    ("forward (linear.py:114)", "gpu/0", 0, 524288),
    ("MyNet::forward(at::Tensor) (mynet.cpp:30)", "gpu/1", 6 * MiB, 4 * MiB)],
   [(x["site"], x["device"], x["reserved_peak_bytes"], x["allocated_peak_bytes"])
    for x in d["gpu_sites"]])
eq("gpu memory rows", [("gpu/0", 8 * MiB, 10000, 1316352, 20000, 6, 2, 3),
                       ("gpu/1", 6 * MiB, 5000, 4 * MiB, 25000, 2, 1, 0)],
   [(x["device"], x["reserved_peak_bytes"], x["reserved_peak_time_ns"],
     x["allocated_peak_bytes"], x["allocated_peak_time_ns"], x["tensors"], x["from_cache"],
     x["before_recording"]) for x in d["gpu_memory"]])
t = d["pytorch"]
eq("pytorch", (True, "time", "user_metadata", 0), (t["history"], t["time_axis"], t["scopes"],
                                                   t["inconsistent"]))
# the OOM post-mortem
eq("ooms", 1, d["ooms_total"])
o = d["ooms"][0]
eq("oom", (70000, "gpu/0", 1, "torch_trace", 4 << 30, MiB, "net:dense1:",
           "forward (model.py:17)", 8 * MiB, 4, 529920, 4, True, 2 * MiB, 63000, 524288),
   tuple(o[k] for k in ("time_ns", "device", "pid", "route", "requested", "device_free",
                        "scope", "site", "reserved_bytes", "reserved_count", "allocated_bytes",
                        "allocated_count", "tensors", "largest_gap", "grew_since_ns",
                        "grew_bytes")))
eq("oom by scope", [("backward:net:dense0:", 524288, 1), ("<unk>:", 4608, 2),
                    ("net:dense0:", 1024, 1)],
   [(x["scope"], x["bytes"], x["count"]) for x in o["by_scope"]])
eq("oom by site", [("forward (linear.py:114)", 524288, 1), ("(no stack)", 4608, 2),
                   ("forward (model.py:17)", 1024, 1)],
   [(x["site"], x["bytes"], x["count"]) for x in o["by_site"]])
eq("oom grew", [("backward:net:dense0:", 524288, 1)],
   [(x["scope"], x["bytes"], x["count"]) for x in o["grew"]])
eq("warnings", [], d["warnings"])
eq("leaks", 0, len(d["leaks"]))
EOF
# The table leads with the post-mortem.
"$MEMFLOW" stats "$SCRATCH/cur/memflow-import-1.mfl" > "$SCRATCH/cur.txt"
expect_eq "first section" "Out of memory at 0.070000 ms" "$(sed -n 5p "$SCRATCH/cur.txt")"
# MXNet's CSV at tensor level: Reuse? 1 for A1 (from the cache)
expect_eq "GPU CSV" '"Attribute Name","Requested Size","Device","Actual Size","Reuse?"
"<unk>:unknown","512","0","512","0"
"<unk>:unknown","4096","0","4096","0"
"net:dense0:unknown","1024","0","1024","1"
"net:unknown","2097152","1","2097152","0"' "$(cat "$SCRATCH/cur/gpu_memory_profile-pid_1.csv")"
# The trace: reserved and allocated counters per GPU, the OOM instant.
"$PYTHON3" - "$SCRATCH/cur/profile.json" <<'EOF' || fail "the trace differs"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
def series(name):
    return [(e["ts"], e["args"][name]) for e in ev if e.get("ph") == "C" and e["name"] == name]
# one point per change, in the log's order at equal times (A1, then the
# tensors and segments live before the history)
want = {
    "Allocated: gpu/0": [(0.0, 1024), (0.0, 263168), (0.0, 263680), (0.0, 267776),
                         (20.0, 1316352), (40.0, 267776), (60.0, 5632), (65.0, 529920),
                         (90.0, 5632)],
    "Memory: gpu/0": [(0.0, 2097152), (0.0, 4194304), (0.0, 6291456), (10.0, 8388608),
                      (100.0, 6291456), (110.0, 4194304)],
    "Allocated: gpu/1": [(15.0, 2097152), (25.0, 4194304), (35.0, 2097152)],
    "Memory: gpu/1": [(5.0, 6291456), (45.0, 0), (45.0, 4194304)],
}
for name, points in want.items():
    got = series(name)
    if got != points:
        sys.exit("%s: expected %r, got %r" % (name, points, got))
oom = [e for e in ev if e.get("name") == "Out of memory"]
if len(oom) != 1 or oom[0]["ts"] != 70.0 or oom[0]["args"]["requested"] != 4 << 30 or \
        oom[0]["args"]["largest_gap"] != 2 << 20 or oom[0]["args"]["allocated"] != 529920:
    sys.exit("OOM instant: %r" % oom)
EOF
# The picture: tensors in their scope's colour inside their segment (B0' in
# backward:net:dense0:'s over SEG_B's net:dense1:), framed in white; the
# title leads with the post-mortem.
if [ -x "$top_builddir/tests/svg_pixel" ]; then
    rect=$("$PYTHON3" - "$SCRATCH/cur/memory_flow.svg" <<'EOF'
import sys, xml.etree.ElementTree as ET
S = "{http://www.w3.org/2000/svg}"
for r in ET.parse(sys.argv[1]).iter(S + "rect"):
    t = r.find(S + "title")
    if t is not None and t.text.startswith("scope: backward:net:dense0:\n"):
        assert "served from the allocator's cache, a tensor inside its segment" in t.text
        assert "let go at 80.0 us; the allocator took it back 10.0 us later" in t.text
        print(r.get("x"), r.get("y"), r.get("width"), r.get("height"))
EOF
)
    set -- $rect
    [ $# -eq 4 ] || fail "no hover entry of the tensor B0': '$rect'"
    expect_eq "B0' fill" "#17becf backward:net:dense0:: yes (#17becf)" \
        "$("$top_builddir/tests/svg_pixel" "$SCRATCH/cur/memory_flow.svg" $(($1 + $3 / 2)) $(($2 + $4 / 2)) backward:net:dense0:)"
    expect_eq "B0' frame" "#ffffff" \
        "$("$top_builddir/tests/svg_pixel" "$SCRATCH/cur/memory_flow.svg" "$1" $(($2 + $4 / 2)))"
    expect_eq "SEG_B after B0'" "#ff7f0e net:dense1:: yes (#ff7f0e)" \
        "$("$top_builddir/tests/svg_pixel" "$SCRATCH/cur/memory_flow.svg" $(($1 + $3 + 20)) $(($2 + $4 / 2)) net:dense1:)"
fi

# ---- the old format: no time_us, the event order is the axis ----
"$MEMFLOW" import "$S/old.pickle" -o "$SCRATCH/old" --no-render 2> "$SCRATCH/old.err" ||
    fail "memflow import old.pickle exited $?: $(cat "$SCRATCH/old.err")"
grep -q "old.pickle: no time_us (PyTorch < 2.2): times are the order of the allocator's events" \
    "$SCRATCH/old.err" || fail "no word of the event order: $(cat "$SCRATCH/old.err")"
check_stats "$SCRATCH/old/memflow-import-1.mfl" "the old format's statistics differ" <<'EOF'
MiB = 1 << 20
eq("time axis", ("event_order", "none"), (d["pytorch"]["time_axis"], d["pytorch"]["scopes"]))
eq("warning", ["pid 1: the time axis is the order of PyTorch's allocator events, 1 us apart "
               "(the snapshot has no time_us: PyTorch < 2.2)"], d["warnings"])
eq("gpu memory rows", [("gpu/0", 8 * MiB, 1000, 1316352, 2000, 6, 2, 3),
                       ("gpu/1", 4 * MiB, 0, 4 * MiB, 2000, 2, 1, 0)],
   [(x["device"], x["reserved_peak_bytes"], x["reserved_peak_time_ns"],
     x["allocated_peak_bytes"], x["allocated_peak_time_ns"], x["tensors"], x["from_cache"],
     x["before_recording"]) for x in d["gpu_memory"]])
eq("scopes", ["<unk>:", "<unk>:"], [x["scope"] for x in d["gpu_scopes"]])
o = d["ooms"][0]
eq("oom", (7000, 4 << 30, 529920, 2 * MiB), (o["time_ns"], o["requested"],
                                             o["allocated_bytes"], o["largest_gap"]))
EOF
"$MEMFLOW" stats "$SCRATCH/old/memflow-import-1.mfl" 2> /dev/null | grep -q "^Time axis: the order of PyTorch's allocator events" ||
    fail "the table does not say its time axis is the event order"

# ---- refusals: message with the offset, a distinct exit status, nothing runs ----
refused() { # FILE STATUS MESSAGE
    rc=0
    "$MEMFLOW" import "$S/$1" -o "$SCRATCH/refused" --no-render 2> "$SCRATCH/refused.err" || rc=$?
    expect_eq "$1: exit status" "$2" "$rc"
    expect_eq "$1: message" "memflow import: $S/$1: $3" "$(cat "$SCRATCH/refused.err")"
}
refused refused-global.pickle 11 \
    "offset 1514: opcode STACK_GLOBAL refused: it names a Python object (memflow reads plain data only)"
refused refused-system.pickle 11 \
    "offset 50: opcode GLOBAL refused: it names a Python object (memflow reads plain data only)"
refused refused-reduce.pickle 11 \
    "offset 5: opcode REDUCE refused: it calls Python code (memflow reads plain data only)"
refused cut.pickle 13 "offset 1618: the data ends before STOP"
refused not-snapshot.pickle 20 \
    "offset 42: not a PyTorch memory snapshot (a dict with neither 'segments' nor 'device_traces')"
[ ! -e "$S/pwned" ] || fail "a hostile pickle ran code"
[ -z "$(ls "$SCRATCH/refused")" ] || fail "a refused snapshot left $(ls "$SCRATCH/refused")"
# One refused snapshot among others: the others are imported and rendered.
rc=0
"$MEMFLOW" import "$S/current.pickle" "$S/cut.pickle" "$S/old.pickle" -o "$SCRATCH/mixed" \
    2> "$SCRATCH/mixed.err" || rc=$?
expect_eq "mixed: exit status" 13 "$rc"
expect_eq "mixed: logs" "memflow-import-1.mfl memflow-import-3.mfl" \
    "$(cd "$SCRATCH/mixed" && echo memflow-import-*.mfl)"
[ -s "$SCRATCH/mixed/memory_flow.svg" ] || fail "mixed: nothing rendered"
rc=0
"$MEMFLOW" import -o "$SCRATCH/none" 2> /dev/null || rc=$?
expect_eq "no snapshot: usage" 2 "$rc"

# ---- a damaged snapshot: each bad entry named at the offset of its dict
# (found here by pickletools, apart from memflow's reader), exit 21, the rest
# imported and rendered ----
rc=0
"$MEMFLOW" import "$S/damaged.pickle" -o "$SCRATCH/damaged" 2> "$SCRATCH/damaged.err" || rc=$?
expect_eq "damaged: exit status" 21 "$rc"
set -- $("$PYTHON3" -c "import pickletools, sys
print(*[p for op, a, p in pickletools.genops(open(sys.argv[1], 'rb').read())
        if op.name == 'EMPTY_DICT'][1:])" "$S/damaged.pickle")
expect_eq "damaged: entry dicts" 8 $#
D="memflow import: $S/damaged.pickle"
expect_eq "damaged: messages" "$D: offset $3: device 0, entry 2: an alloc without an integer size: skipped
$D: offset $4: device 0, entry 3: an alloc at 0x7f0000200000, where a tensor is live: that tensor ends here
$D: offset $5: device 0, entry 4: a free_completed without an integer addr: skipped
$D: offset $6: device 0, entry 5: a segment_alloc at 0x7f0000200000, where a segment is live: that segment ends here
$D: 6 trace entries (2 tensors, 2 segments) in X s
$D: the snapshot is damaged: 2 entries without the fields their action needs were skipped, 2 contradict what was live; the rest is imported" \
    "$(grep '^memflow import:' "$SCRATCH/damaged.err" | sed 's/ in [0-9.]* s$/ in X s/')"
for f in memflow-import-1.mfl memory_flow.svg profile.json stats.txt; do
    [ -s "$SCRATCH/damaged/$f" ] || fail "damaged: memflow import wrote no $f"
done
check_stats "$SCRATCH/damaged/memflow-import-1.mfl" "the damaged snapshot's statistics differ" <<'EOF'
MiB = 1 << 20
g = d["devices"][0]
# SEG_B twice (the first ends at 40 when the second begins), 2 MiB from 10 us
eq("segments", ("gpu/0", 2, 2, 2 * MiB, 0, 0),
   (g["device"], g["alloc_count"], g["free_count"], g["peak_bytes"], g["peak_time_ns"],
    g["held_bytes_end"]))
# B0 (1 MiB at 20, fresh, ended at 30) and the 4096 bytes (30 .. 50, from the cache)
s = g["subblocks"]
eq("tensors", (2, 2, MiB + 4096, MiB, 10000, 0, 1, 0),
   tuple(s[k] for k in ("alloc_count", "free_count", "alloc_bytes", "peak_bytes",
                        "peak_time_ns", "live_bytes_end", "reused_count", "before_count")))
eq("inconsistent", 2, d["pytorch"]["inconsistent"])
EOF
"$MEMFLOW" stats "$SCRATCH/damaged/memflow-import-1.mfl" |
    grep -qx "History entries that contradict its state: 2" ||
    fail "the table does not count the contradictory entries"
# among sound snapshots: they are imported too, the status is the damaged one's
rc=0
"$MEMFLOW" import "$S/current.pickle" "$S/damaged.pickle" -o "$SCRATCH/mixed2" --no-render \
    2> /dev/null || rc=$?
expect_eq "mixed with damaged: exit status" 21 "$rc"
expect_eq "mixed with damaged: logs" "memflow-import-1.mfl memflow-import-2.mfl" \
    "$(cd "$SCRATCH/mixed2" && echo memflow-import-*.mfl)"
exit 0
