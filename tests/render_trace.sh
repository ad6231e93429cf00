#!/bin/sh
# render_trace.sh - TRACE and DEVICE records through `memflow render`: each
# trace object in the Chrome trace where and when it was recorded (times in
# microseconds from the first GPU counter point, which render_gen records at
# its t0): a task (b/e with its id and domain), an NVTX range ended on
# another thread, a frame, a begin/end event (B/E), a counter's values
# (negative kept), markers of the three scopes; the DEVICE record named in
# the statistics (table and JSON) and in the trace's process name.
. "$top_srcdir/tests/lib.sh"
LOG=$("$top_builddir/tests/render_gen" "$SCRATCH" trace)
"$MEMFLOW" render "$LOG" -o "$SCRATCH/out" --formats profile.json,stats.txt,stats.json \
    2>"$SCRATCH/err" || fail "memflow render exited $?: $(cat "$SCRATCH/err")"
"$PYTHON3" - "$SCRATCH/out/profile.json" <<'PY' || fail "trace objects"
import json, sys
t = json.load(open(sys.argv[1]))["traceEvents"]
gpu = [e for e in t if e["ph"] == "C" and e["name"] == "Memory: gpu/0"]
t0 = gpu[0]["ts"]
def at(e):
    return round(e["ts"] - t0, 3)
objs = [e for e in t if e.get("cat") == "train"]
def one(ph, name, **kw):
    got = [e for e in objs if e["ph"] == ph and e["name"] == name and
           all(e.get(k) == v for k, v in kw.items())]
    assert len(got) == 1, (ph, name, kw, got, objs)
    return got[0]
main = one("b", "load")["tid"]
assert at(one("b", "load", id="0x7")) == 1 and at(one("e", "load", id="0x7")) == 5
rb, re = one("b", "nvtx", id="0x63"), one("e", "nvtx", id="0x63")
assert at(rb) == 1.5 and at(re) == 4.5, (rb, re)
assert rb["tid"] == main and re["tid"] != main and re["pid"] == rb["pid"], (rb, re)
assert at(one("b", "frame", id="0x1")) == 2 and at(one("e", "frame", id="0x1")) == 6
assert at(one("B", "step")) == 2 and at(one("E", "step")) == 3
loss = sorted((at(e), e["args"]["loss"]) for e in objs if e["ph"] == "C")
assert loss == [(2.5, 10), (3.5, -3)], loss
marks = sorted(e["s"] for e in objs if e["ph"] == "i" and e["name"] == "epoch" and at(e) == 4)
assert marks == ["g", "p", "t"], marks
names = [e["args"]["name"] for e in t if e["ph"] == "M" and e["name"] == "process_name"]
assert "gpu/0 (NVIDIA H100 80GB HBM3)" in names, names
PY
grep -qx "gpu/0: NVIDIA H100 80GB HBM3, GPU-1a2b3c4d, MIG 1/0, 74.5 GiB" "$SCRATCH/out/stats.txt" ||
    fail "device line: $(grep '^gpu/0:' "$SCRATCH/out/stats.txt")"
"$PYTHON3" - "$SCRATCH/out/stats.json" <<'PY' || fail "device info in JSON"
import json, sys
d = json.load(open(sys.argv[1]))
g = [x for x in d["devices"] if x["device"] == "gpu/0"][0]
assert g["info"] == {"name": "NVIDIA H100 80GB HBM3", "uuid": "1a2b3c4d05060708090a0b0c0d0e0f10",
                     "total_bytes": 80000000000, "pci_bus": 0x1a00, "mig": [1, 0]}, g["info"]
PY
echo "render_trace: ok"
