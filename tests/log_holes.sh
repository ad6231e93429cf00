#!/bin/sh
# log_holes.sh - a zeroed page inside a live log (a torn write, a bad sector,
# a sparse hole after a crash) is damage, not the end of a chunk's records:
# every reader says where the hole is and exits 3, and keeps every record
# before it and after it.  The writer seals each chunk it is done with (its
# header says how far its records reach: docs/FORMAT.md), so zeros before
# the seal are a hole even when nothing follows them; in a chunk that was
# never sealed (its writer was killed) records after zeros tell a hole.  A
# record the writer was killed in the middle of storing is no hole.  Counts
# are exact, from tests/log_holes.py's own reading of the bytes, and
# tests/logcheck, memflow stats and memflow compact agree.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/alloc_workload"
CHECK="$top_builddir/tests/logcheck"
HOLES="$PYTHON3 $top_srcdir/tests/log_holes.py"
CHUNK=1048576

# value LINE KEY: KEY=VALUE out of log_holes.py's line
value() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# totals LOGCHECK-OUTPUT: "ALLOCS FREES"
totals() { sed -n 's/^total allocs=\([0-9]*\) frees=\([0-9]*\) .*/\1 \2/p' "$1"; }
# stats_totals LOG: "ALLOCS FREES" of memflow stats --format json; its exit status in stats.rc
stats_totals() {
    set +e
    "$MEMFLOW" stats --format json "$1" > "$SCRATCH/s.json" 2> "$SCRATCH/s.err"
    echo $? > "$SCRATCH/stats.rc"
    set -e
    json_get "$SCRATCH/s.json" \
        '"%d %d" % (d["devices"][0]["alloc_count"], d["devices"][0]["free_count"] + d["devices"][0]["unknown_frees"])'
}
# expect_read NAME LOG ALLOCS FREES DAMAGE: logcheck and memflow stats read
# exactly ALLOCS and FREES, exit 3, and say DAMAGE (a fixed string)
expect_read() {
    set +e
    "$CHECK" "$2" > "$SCRATCH/$1.txt"; rc=$?
    set -e
    expect_eq "$1: logcheck exit" 3 "$rc"
    expect_eq "$1: logcheck counts" "$3 $4" "$(totals "$SCRATCH/$1.txt")"
    expect_eq "$1: logcheck damage" "damage: $2: offset $5" "$(sed -n 's/^damage: //p' "$SCRATCH/$1.txt" | sed 's/^/damage: /')"
    expect_eq "$1: stats counts" "$3 $4" "$(stats_totals "$2")"
    expect_eq "$1: stats exit" 3 "$(cat "$SCRATCH/stats.rc")"
    grep -qxF "memflow: warning: $2: offset $5" "$SCRATCH/s.err" ||
        fail "$1: stats says: $(cat "$SCRATCH/s.err")"
}

# -- 200,002 events, chunks sealed as they filled ----------------------------
"$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/run" -- "$W" threads 1 100000 ||
    fail "run exited $?"
set -- "$SCRATCH"/run/memflow-*.mfl
LOG=$1
"$CHECK" "$LOG" > "$SCRATCH/whole.txt" || fail "the undamaged log: logcheck exited $?"
expect_eq "undamaged counts" "100002 100000" "$(totals "$SCRATCH/whole.txt")"

# one page zeroed in the middle of the worker's second chunk (chunk 3)
cp "$LOG" "$SCRATCH/mid.mfl"
line=$($HOLES "$SCRATCH/mid.mfl" 3 zero 100)
sealed=$(value "$line" sealed); hole=$(value "$line" hole); resume=$(value "$line" resume)
expect_eq "chunk 3 is sealed where its records end" "$(value "$line" end)" "$sealed"
[ "$resume" -gt 0 ] || fail "no record after the page: $line"
lost_a=$(value "$line" lost_allocs); lost_f=$(value "$line" lost_frees)
[ $((lost_a + lost_f)) -gt 100 ] || fail "the page held too few records: $line"
expect_read mid "$SCRATCH/mid.mfl" $((100002 - lost_a)) $((100000 - lost_f)) \
    "$((3 * CHUNK + hole)): a hole: $((resume - hole)) bytes of zeros inside the chunk's records (its seal says they reach further); the records in it are lost, reading resumes at offset $((3 * CHUNK + resume))"
# memflow compact keeps the damaged chunk byte for byte: the same reading
cp "$SCRATCH/mid.mfl" "$SCRATCH/midc.mfl"
"$MEMFLOW" compact "$SCRATCH/midc.mfl" > /dev/null || fail "compact of the damaged log exited $?"
expect_eq "compacted: stats counts" "$((100002 - lost_a)) $((100000 - lost_f))" \
    "$(stats_totals "$SCRATCH/midc.mfl")"
expect_eq "compacted: stats exit" 3 "$(cat "$SCRATCH/stats.rc")"
grep -qF "midc.mfl: offset $((3 * CHUNK + hole)): a hole: $((resume - hole)) bytes" "$SCRATCH/s.err" ||
    fail "compacted: $(cat "$SCRATCH/s.err")"

# the page that holds the end of the worker's last chunk (sealed when the
# thread ended): nothing follows the zeros, the seal tells they are a hole
last=$("$PYTHON3" -c 'import struct,sys; d=open(sys.argv[1],"rb").read(); print(len(d)//1048576-1)' "$LOG")
cp "$LOG" "$SCRATCH/end.mfl"
end=$(value "$($HOLES "$LOG" "$last" info)" end)
line=$($HOLES "$SCRATCH/end.mfl" "$last" zero $(( (end - 8) / 4096 )))
sealed=$(value "$line" sealed); hole=$(value "$line" hole)
expect_eq "the last chunk is sealed where its records end" "$end" "$sealed"
expect_eq "nothing after the page" 0 "$(value "$line" resume)"
expect_read end "$SCRATCH/end.mfl" $((100002 - $(value "$line" lost_allocs))) \
    $((100000 - $(value "$line" lost_frees))) \
    "$((last * CHUNK + hole)): the chunk's records stop at a zero word, but its seal says they reach offset $((last * CHUNK + sealed)): the $((sealed - hole)) bytes between are zeros (a hole: a torn write, a bad sector) and their records are lost"

# the page that holds a chunk's header (chunk 4): the chunk reads as never
# written but holds data, which every reader reports; compaction keeps it
cp "$LOG" "$SCRATCH/head.mfl"
line=$($HOLES "$SCRATCH/head.mfl" 4 zero 0)
expect_read head "$SCRATCH/head.mfl" $((100002 - $(value "$line" lost_allocs))) \
    $((100000 - $(value "$line" lost_frees))) \
    "$((4 * CHUNK)): the chunk's header is zeros (a hole: a torn write, a bad sector), but the chunk holds data: its records are lost"
"$MEMFLOW" compact "$SCRATCH/head.mfl" > /dev/null || fail "compact of head.mfl exited $?"
expect_read headc "$SCRATCH/head.mfl" $((100002 - $(value "$line" lost_allocs))) \
    $((100000 - $(value "$line" lost_frees))) \
    "$((4 * CHUNK)): the chunk's header is zeros (a hole: a torn write, a bad sector), but the chunk holds data: its records are lost"

# the main thread's chunk (chunk 1) holds less than a page: zeroing its first
# page leaves the chunk all zeros, which only chunks_claimed tells from a
# chunk never claimed
cp "$LOG" "$SCRATCH/empty.mfl"
line=$($HOLES "$SCRATCH/empty.mfl" 1 zero 0)
expect_eq "chunk 1 fits in a page" 1 $(( $(value "$line" end) < 4096 ))
expect_read empty "$SCRATCH/empty.mfl" $((100002 - $(value "$line" lost_allocs))) \
    $((100000 - $(value "$line" lost_frees))) \
    "$CHUNK: chunk 1 was claimed, but it holds nothing: its header and records are zeros (a hole over its first page), or were never written; its records, if it had any, are lost (1 chunk like it)"

# -- a killed program's chunk, never sealed -----------------------------------
killed() { # NAME: memflow run of `kill 5000`, the program killed; LOG its log
    start_ready "$1" "$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/$1" -- "$W" kill 5000
    kill -KILL "$READY_PID"
    status=0
    wait "$RUNNER" || status=$?
    expect_eq "$1: memflow run status" 137 "$status"
    set -- "$SCRATCH/$1"/memflow-*.mfl
    LOG=$1
}
export MEMFLOW_STAGE=0
killed direct
unset MEMFLOW_STAGE
"$CHECK" "$LOG" > "$SCRATCH/direct.txt" || fail "killed: logcheck exited $?"
whole=$(totals "$SCRATCH/direct.txt")
cp "$LOG" "$SCRATCH/killed.mfl"
line=$($HOLES "$SCRATCH/killed.mfl" 1 zero 10)
expect_eq "the killed program's chunk is not sealed" 0 "$(value "$line" sealed)"
hole=$(value "$line" hole); resume=$(value "$line" resume)
[ "$resume" -gt 0 ] || fail "killed: no record after the page: $line"
expect_read killed "$SCRATCH/killed.mfl" $(( ${whole% *} - $(value "$line" lost_allocs) )) \
    $(( ${whole#* } - $(value "$line" lost_frees) )) \
    "$((CHUNK + hole)): a hole: $((resume - hole)) bytes of zeros inside the chunk's records; the records in it are lost, reading resumes at offset $((CHUNK + resume))"
# a record whose word the killed writer never stored is the end, not a hole
cp "$LOG" "$SCRATCH/torn.mfl"
$HOLES "$SCRATCH/torn.mfl" 1 garbage > /dev/null
"$CHECK" "$SCRATCH/torn.mfl" > "$SCRATCH/torn.txt" || fail "torn record: logcheck exited $?"
expect_eq "torn record: counts" "$whole" "$(totals "$SCRATCH/torn.txt")"
grep -q '^damage' "$SCRATCH/torn.txt" && fail "torn record reported: $(cat "$SCRATCH/torn.txt")"

# staged (the default), memflow run writes the killed program's chunk itself
# and seals it where its records end
killed staged
line=$($HOLES "$LOG" 1 info)
expect_eq "staged: the killed program's chunk is sealed by memflow run" \
    "$(value "$line" end)" "$(value "$line" sealed)"
echo "log_holes: ok"
