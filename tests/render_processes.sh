#!/bin/sh
# render_processes.sh - several processes, the truth about each: real
# programs under `memflow run`, their logs read together.
#  - a program run three times one after another, each holding 50,000,000
#    bytes when it exits: the device's peak is what the processes alive at
#    one time held (one of them and the parent), exactly, not the sum of all
#    three (143 MiB); the same through `sh -c 'a; a; a'`;
#  - a forked child freeing the blocks it inherited: "inherited", not
#    "frees of addresses never seen allocated";
#  - only a process that really ended abnormally is "not finished", and the
#    statistics say which (pid, program, how);
#  - logs of different runs are refused unless --merge-runs;
#  - the GPU CSV of a CPU-only log: nothing written, and said so.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/proc_workload"
N=50000000

# -- three runs of `hold 50000000` one after another, from a parent --------
"$MEMFLOW" run --no-render -o "$SCRATCH/seq" -- "$W" spawn 3 "$W" hold $N ||
    fail "spawn run exited $?"
"$MEMFLOW" stats --format json "$SCRATCH"/seq/memflow-*.mfl > "$SCRATCH/seq.json" 2>"$SCRATCH/seq.err" ||
    fail "stats exited $?: $(cat "$SCRATCH/seq.err")"
"$PYTHON3" - "$SCRATCH/seq.json" "$N" <<'PY' || fail "peak of sequential processes"
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
cpu = [x for x in d["devices"] if x["device"] == "cpu/0"][0]
holders = [p for p in cpu["by_process"] if p["peak_bytes"] >= n]
others = [p for p in cpu["by_process"] if p["peak_bytes"] < n]
assert len(holders) == 3, cpu["by_process"]
# what the parent (and any forked image before its exec) held all along
# the way, plus the most one of the three held: not the three together
expected = max(p["peak_bytes"] for p in holders) + sum(p["peak_bytes"] for p in others)
assert cpu["peak_bytes"] == expected, (cpu["peak_bytes"], expected, cpu["by_process"])
assert cpu["peak_bytes"] < 2 * n, cpu["peak_bytes"]
# each held its 50,000,000 bytes to its end: never freed, and counted so
assert all(p["live_bytes_end"] >= n for p in holders), holders
assert cpu["held_bytes_end"] == 0, cpu["held_bytes_end"]
# nobody ended abnormally; the exec'd-over images ended by exec
assert not any(p["abnormal"] for p in d["processes"]), d["processes"]
assert sum(p["end"]["how"] == "exec" for p in d["processes"]) == 3, d["processes"]
print("peak %d bytes (%.1f MiB): one 'hold' and the parent" % (cpu["peak_bytes"], cpu["peak_bytes"] / 2**20))
PY
"$MEMFLOW" stats "$SCRATCH"/seq/memflow-*.mfl > "$SCRATCH/seq.txt" 2>/dev/null
grep -q "not finished" "$SCRATCH/seq.txt" && fail "a process is called not finished: $(grep 'not finished' "$SCRATCH/seq.txt")"
peak=$(json_get "$SCRATCH/seq.json" '[x["peak_bytes"] for x in d["devices"] if x["device"] == "cpu/0"][0]')
grep -q "^cpu/0: peak $peak bytes (47.[0-9] MiB)" "$SCRATCH/seq.txt" ||
    fail "the table's peak line: $(grep '^cpu/0: peak' "$SCRATCH/seq.txt")"

# -- the same through sh -c --------------------------------------------------
"$MEMFLOW" run --no-render -o "$SCRATCH/sh" -- sh -c "'$W' hold $N; '$W' hold $N; '$W' hold $N" ||
    fail "sh run exited $?"
"$MEMFLOW" stats --format json "$SCRATCH"/sh/memflow-*.mfl > "$SCRATCH/sh.json" 2>/dev/null ||
    fail "stats (sh) exited $?"
"$PYTHON3" - "$SCRATCH/sh.json" "$N" <<'PY' || fail "peak through sh -c"
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
cpu = [x for x in d["devices"] if x["device"] == "cpu/0"][0]
holders = [p for p in cpu["by_process"] if p["peak_bytes"] >= n]
assert len(holders) == 3, cpu["by_process"]
assert n <= cpu["peak_bytes"] < n + (4 << 20), cpu["peak_bytes"]   # 48 MiB, not 143
# the three ran to their exit; (dash itself leaves through _exit: whether it
# is called finished depends on the runtime's _exit mark, MF_END_EXIT_NOW)
assert not any(p["abnormal"] for p in d["processes"] if "hold" in p["program"] and
               not p["program"].startswith("sh ")), d["processes"]
PY

# -- a forked child frees what it inherited ------------------------------------
"$MEMFLOW" run --no-render -o "$SCRATCH/fork" -- "$W" forkfree 10 || fail "forkfree exited $?"
"$MEMFLOW" stats --format json "$SCRATCH"/fork/memflow-*.mfl > "$SCRATCH/fork.json" 2>"$SCRATCH/fork.err" ||
    fail "stats (fork) exited $?"
expect_eq "inherited frees" 10 "$(json_get "$SCRATCH/fork.json" 'd["inherited_frees"]')"
expect_eq "unknown frees" 0 "$(json_get "$SCRATCH/fork.json" 'd["unknown_frees"]')"
grep -q "never seen allocated" "$SCRATCH/fork.err" && fail "inherited frees are warned about as unknown"

# -- only a process that ended abnormally is "not finished" --------------------
status=0
"$MEMFLOW" run --no-render -o "$SCRATCH/killed" -- "$W" killed 1000 || status=$?
expect_eq "killed run exit" 137 "$status"
log=$(ls "$SCRATCH"/killed/memflow-*.mfl)
pid=$(basename "$log" .mfl | sed 's/^memflow-//')
status=0
"$MEMFLOW" stats "$log" > "$SCRATCH/killed.txt" 2>"$SCRATCH/killed.err" || status=$?
expect_eq "stats of a killed process's log" 0 "$status"
expect_eq "not finished, said once, with pid and program" \
    "process $pid: $W killed 1000 (not finished: killed by signal 9)" \
    "$(grep 'not finished' "$SCRATCH/killed.txt" | grep '^process')"
grep -q "^memflow: warning: pid $pid ($W killed 1000): not finished" "$SCRATCH/killed.err" ||
    fail "no warning naming the killed process: $(cat "$SCRATCH/killed.err")"

# -- logs of different runs are refused unless --merge-runs --------------------
mkdir -p "$SCRATCH/runs"
cp "$SCRATCH"/seq/memflow-*.mfl "$SCRATCH/runs/"
a=$(ls "$SCRATCH"/runs/*.mfl | head -1)
b="$SCRATCH/runs/other.mfl"
cp "$log" "$b"
# give each its run id and a header checksum as the format defines them
"$PYTHON3" - "$a" "$b" <<'PY'
import struct, sys
def crc32c(data, crc=0):
    crc ^= 0xffffffff
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 & -(crc & 1))
    return crc ^ 0xffffffff
for path, run in ((sys.argv[1], b"\x11" * 16), (sys.argv[2], b"\x22" * 16)):
    with open(path, "r+b") as f:
        h = bytearray(f.read(184))
        h[136:152] = run
        argv_len = struct.unpack_from("<I", h, 68)[0]
        f.seek(184)
        argv = f.read(argv_len)
        fixed = bytearray(h[8:152])
        fixed[12:24] = bytes(12)  # flags and chunks_claimed count as zero
        struct.pack_into("<I", h, 152, crc32c(bytes(fixed) + argv))
        f.seek(0)
        f.write(h)
PY
status=0
"$MEMFLOW" stats "$a" "$b" > /dev/null 2>"$SCRATCH/runs.err" || status=$?
expect_eq "stats of two runs' logs" 4 "$status"
grep -qF "memflow: $a (run 11111111111111111111111111111111) and $b (run 22222222222222222222222222222222) are logs of different runs" \
    "$SCRATCH/runs.err" || fail "the refusal does not name both logs and say why: $(cat "$SCRATCH/runs.err")"
grep -q -- "--merge-runs" "$SCRATCH/runs.err" || fail "the refusal does not name --merge-runs"
status=0
"$MEMFLOW" render "$a" "$b" -o "$SCRATCH/runs/out" --formats stats.json 2>/dev/null || status=$?
expect_eq "render of two runs' logs" 4 "$status"
"$MEMFLOW" stats "$a" "$b" --merge-runs > /dev/null 2>&1 || fail "--merge-runs did not merge"

# -- the GPU CSV of a CPU-only log ---------------------------------------------
"$MEMFLOW" render "$SCRATCH"/fork/memflow-*.mfl -o "$SCRATCH/csv" --formats stats.txt,gpu_memory_profile.csv \
    2>"$SCRATCH/csv.err" || fail "render --formats ...,gpu_memory_profile.csv exited $?"
grep -q "no gpu_memory_profile-pid_N.csv (no process had GPU memory)" "$SCRATCH/csv.err" ||
    fail "render does not say that it wrote no CSV: $(cat "$SCRATCH/csv.err")"
ls "$SCRATCH"/csv/*.csv 2>/dev/null && fail "a CSV was written for a CPU-only log"
echo "render_processes: ok"
