#!/bin/sh
# view_index.sh - `memflow view`'s index kept beside the log: built once and
# reused (the second open reads no log); a truncated index, a damaged
# directory and a symlink planted where the index goes are rebuilt or
# replaced, never followed; a damaged piece inside an index that still
# looks whole gets an error answer naming the index, and the server goes
# on answering.  The API's answers are read with python3 (json, struct):
# the window of the whole run holds the program's blocks whole, exactly.
# An imported PyTorch snapshot's OOM is in its lane, exactly, whether the
# index was built or reused; an index of the version before is rebuilt.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/view_workload"
"$MEMFLOW" run --stacks -o "$SCRATCH/run" -- "$W" > "$SCRATCH/run.log" 2>&1 ||
    fail "memflow run exited $?: $(tail -3 "$SCRATCH/run.log")"
log=$(ls "$SCRATCH/run"/memflow-*.mfl)
index="$log.mfi"

# built, then reused
"$MEMFLOW" view --index-only "$log" 2> "$SCRATCH/1.err" || fail "--index-only exited $?"
[ "$(cat "$SCRATCH/1.err")" = "memflow view: index $index" ] || fail "first open: $(cat "$SCRATCH/1.err")"
[ -f "$index" ] && [ ! -L "$index" ] || fail "no index beside the log"
"$MEMFLOW" view --index-only "$log" 2> "$SCRATCH/2.err" || fail "--index-only exited $?"
[ "$(cat "$SCRATCH/2.err")" = "memflow view: index $index (reused)" ] || fail "second open: $(cat "$SCRATCH/2.err")"
cp "$index" "$SCRATCH/good.mfi"
size=$(wc -c < "$index")

# truncated: rebuilt
head -c $((size / 2)) "$SCRATCH/good.mfi" > "$index"
"$MEMFLOW" view --index-only "$log" 2> "$SCRATCH/3.err" || fail "truncated index: exited $?"
[ "$(cat "$SCRATCH/3.err")" = "memflow view: index $index" ] || fail "truncated index: $(cat "$SCRATCH/3.err")"
[ "$(wc -c < "$index")" -eq "$size" ] || fail "the rebuilt index is not the same size"

# the directory (at the end) damaged: rebuilt
cp "$SCRATCH/good.mfi" "$index"
printf '\377\377\377\377\377\377\377\377' | dd of="$index" bs=1 seek=$((size - 40)) conv=notrunc 2> /dev/null
"$MEMFLOW" view --index-only "$log" 2> "$SCRATCH/4.err" || fail "damaged directory: exited $?"
[ "$(cat "$SCRATCH/4.err")" = "memflow view: index $index" ] || fail "damaged directory: $(cat "$SCRATCH/4.err")"

# a symlink where the index goes: replaced, its target untouched
rm -f "$index"
echo target > "$SCRATCH/target"
ln -s "$SCRATCH/target" "$index"
"$MEMFLOW" view --index-only "$log" 2> "$SCRATCH/5.err" || fail "planted symlink: exited $?"
[ "$(cat "$SCRATCH/target")" = target ] || fail "the symlink's target was written"
[ -f "$index" ] && [ ! -L "$index" ] || fail "the planted symlink is still there"

# serve LABEL: memflow view of the log in the background; its URL in $url
serve() {
    "$MEMFLOW" view "$log" --no-open > "$SCRATCH/$1.out" 2> "$SCRATCH/$1.err" &
    pid=$!
    for i in $(seq 1 100); do
        grep -q 'http://' "$SCRATCH/$1.out" 2>/dev/null && break
        sleep 0.1
    done
    url=$(grep -o 'http://[^ ]*' "$SCRATCH/$1.out") ||
        fail "memflow view printed no URL: $(cat "$SCRATCH/$1.err")"
}
trap 'kill $pid 2>/dev/null || true' EXIT
cat > "$SCRATCH/ask.py" <<'PY'
import json, struct, sys, urllib.error, urllib.request
base, token = sys.argv[1].split("/?token=")
def get(path, **params):
    q = "&".join("%s=%s" % kv for kv in list(params.items()) + [("token", token)])
    try:
        with urllib.request.urlopen(base + path + "?" + q) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
def check(cond, what):
    if not cond:
        print("view_index: " + what, file=sys.stderr)
        sys.exit(1)
status, body = get("/api/meta")
check(status == 200, "meta: %d" % status)
meta = json.loads(body)
v = [v for v in meta["views"] if any(s["name"] == "view_big:" for s in v["scopes"])][0]
total = sum(e - s for s, e in v["ranges"])
status, body = get("/api/window", view=v["id"], t0=0, t1=meta["t1"], y0=0, y1=total, w=400, h=100)
if sys.argv[2] == "good":
    check(status == 200, "window: %d %r" % (status, body[:200]))
    mode, n = struct.unpack_from("<II", body)
    check(mode == 0 and n == v["blocks"] and len(body) == 8 + 64 * n, "window: every block whole")
    blocks = [struct.unpack_from("<5d6I", body, 8 + 64 * i) for i in range(n)]
    names = {s["id"]: s["name"] for s in v["scopes"]}
    big = [b for b in blocks if b[3] == 777777]
    small = sorted(b[3] for b in blocks if names[b[5]] == "view_small:")
    check(len(big) == 1 and names[big[0][5]] == "view_big:" and big[0][1] > big[0][0],
          "the 777777-byte block: %r" % big)
    check(small == list(range(64, 114)), "the 50 small blocks: %r" % small)
    # the index was reused: the stacks come from a reader of their own, soon
    import time
    for i in range(100):
        b = big[0]
        status, body = get("/api/at", view=v["id"], t0=int(b[0]), t1=int(b[0]) + 1,
                           y0=0, y1=total)
        site = json.loads(body)["block"]["site"] or ""
        if site.startswith("make_big (view_workload.c:"):
            break
        time.sleep(0.1)
    check(site.startswith("make_big (view_workload.c:"), "the big block's site: %r" % site)
else:
    err = json.loads(body).get("error", "") if status != 200 else ""
    check(status == 500 and err.startswith(sys.argv[3] + ": a ") and err.endswith(" is damaged"),
          "the damaged piece: %d %r" % (status, body[:200]))
    check(get("/api/meta")[0] == 200, "the server stopped answering")
print("view_index: %s: ok" % sys.argv[2])
PY
serve good
"$PYTHON3" "$SCRATCH/ask.py" "$url" good || fail "the whole run's window is wrong"
kill $pid

# every piece damaged (from 4096 to the directory, whose offset the header
# has at byte 56): the window says so, the server lives on
cp "$SCRATCH/good.mfi" "$index"
"$PYTHON3" - "$index" <<'PY'
import struct, sys
with open(sys.argv[1], "r+b") as f:
    dir_offset = struct.unpack_from("<Q", f.read(64), 56)[0]
    f.seek(4096)
    f.write(b"\xff" * (dir_offset - 4096))
PY
touch -r "$SCRATCH/good.mfi" "$index"
serve damaged
grep -q "(reused)" "$SCRATCH/damaged.err" || fail "the index with a damaged piece was not reused"
"$PYTHON3" "$SCRATCH/ask.py" "$url" damaged "$index" || fail "the damaged piece was not reported"
kill $pid

# OOMs: the imported PyTorch snapshot's (tests/torch_import_snapshots.py),
# in the lane of its process on gpu/0, exactly, from the index as built and
# as reused; an index of the version before is rebuilt
"$PYTHON3" "$top_srcdir/tests/torch_import_snapshots.py" "$SCRATCH/snapshots"
"$MEMFLOW" import "$SCRATCH/snapshots/current.pickle" -o "$SCRATCH/imp" --no-render \
    2> "$SCRATCH/imp.err" || fail "memflow import exited $?: $(cat "$SCRATCH/imp.err")"
log="$SCRATCH/imp/memflow-import-1.mfl"
index="$log.mfi"
cat > "$SCRATCH/ooms.py" <<'PY'
import json, sys, urllib.request
base, token = sys.argv[1].split("/?token=")
meta = json.load(urllib.request.urlopen(base + "/api/meta?token=" + token))
got = sorted((v["device"], v["pid"], v["ooms_total"], v["ooms"]) for v in meta["views"])
MiB = 1 << 20
want = [("gpu/0", 1, 1, [{
    "time": 70000, "device": "gpu/0", "requested": 4 << 30, "free": MiB, "limit": None, "route": "torch_trace",
    "route_name": "PyTorch's allocator history", "scope": "net:dense1:", "known": True,
    "tensors": True, "live_bytes": 529920, "live_count": 4,
    "top": [{"scope": "backward:net:dense0:", "bytes": 524288, "count": 1},
            {"scope": "<unk>:", "bytes": 4608, "count": 2},
            {"scope": "net:dense0:", "bytes": 1024, "count": 1}]}]),
        ("gpu/1", 1, 0, [])]
if got != want or meta["reused"] != (sys.argv[2] == "reused"):
    sys.exit("view_index: %s: the OOMs: %r, reused %r" % (sys.argv[2], got, meta["reused"]))
PY
for how in built reused; do
    serve "$how"
    grep -q "(reused)" "$SCRATCH/$how.err" && [ "$how" = built ] && fail "the new index was reused"
    "$PYTHON3" "$SCRATCH/ooms.py" "$url" "$how" || fail "the OOMs of the index $how"
    kill $pid
done
# the version (bytes 8..11 of the header) made 2: rebuilt, not reused
printf '\002\000\000\000' | dd of="$index" bs=1 seek=8 conv=notrunc 2> /dev/null
"$MEMFLOW" view --index-only "$log" 2> "$SCRATCH/old.err" || fail "an old index: exited $?"
[ "$(cat "$SCRATCH/old.err")" = "memflow view: index $index" ] || fail "an old index: $(cat "$SCRATCH/old.err")"
echo "$TEST_NAME: built, reused, rebuilt when truncated, damaged or old, symlink replaced, damage reported, OOMs exact"
