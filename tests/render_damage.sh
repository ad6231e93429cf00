#!/bin/sh
# render_damage.sh - a damaged log (truncated in the middle; a record
# overwritten) still gives the statistics and outputs of everything before
# the damage, exit status 3, and a message naming the file and the offset.
# The counts are checked against tests/logcheck, an independent reading of
# the same damaged file with the reader only.
. "$top_srcdir/tests/lib.sh"
LOG=$("$top_builddir/tests/render_gen" "$SCRATCH" big 100000)
CHUNK=1048576

# stats of a damaged log = logcheck's counts; exit 3; message names the offset
check_damaged() { # FILE OFFSET-TEXT
    set +e
    "$MEMFLOW" stats "$1" --format json >"$SCRATCH/s.json" 2>"$SCRATCH/s.err"; rc=$?
    "$top_builddir/tests/logcheck" "$1" >"$SCRATCH/lc.txt" 2>/dev/null
    set -e
    expect_eq "stats exit on $1" 3 "$rc"
    grep -qF "$1: offset $2" "$SCRATCH/s.err" || fail "message names $1 and offset $2: $(cat "$SCRATCH/s.err")"
    allocs=$(sed -n 's/^total allocs=\([0-9]*\) .*/\1/p' "$SCRATCH/lc.txt")
    frees=$(sed -n 's/^total .*frees=\([0-9]*\) unknown.*/\1/p' "$SCRATCH/lc.txt")
    [ "$allocs" -gt 1000 ] || fail "logcheck read too little: $allocs"
    expect_eq "alloc_count before the damage" "$allocs" "$(json_get "$SCRATCH/s.json" 'd["devices"][0]["alloc_count"]')"
    expect_eq "frees before the damage" "$frees" "$(json_get "$SCRATCH/s.json" 'd["devices"][0]["free_count"]+d["devices"][0]["unknown_frees"]')"
    expect_eq "damaged flag" True "$(json_get "$SCRATCH/s.json" 'd["damaged"]')"
}

# 1. truncated in the middle of chunk 3
cp "$LOG" "$SCRATCH/cut.mfl"
truncate -s $((3 * CHUNK + 5000)) "$SCRATCH/cut.mfl"
check_damaged "$SCRATCH/cut.mfl" ""
grep -q "truncated" "$SCRATCH/s.err" || fail "truncation is named"

# 2. the first record word of chunk 2 overwritten with 0xff bytes
cp "$LOG" "$SCRATCH/bad.mfl"
printf '\377\377\377\377\377\377\377\377' |
    dd of="$SCRATCH/bad.mfl" bs=1 seek=$((2 * CHUNK + 16)) conv=notrunc 2>/dev/null
check_damaged "$SCRATCH/bad.mfl" "$((2 * CHUNK + 16)): unknown record type"

# render still writes its outputs, with exit status 3
set +e
"$MEMFLOW" render "$SCRATCH/bad.mfl" -o "$SCRATCH/out" --formats profile.json,stats.txt 2>"$SCRATCH/r.err"
rc=$?
set -e
expect_eq "render exit on a damaged log" 3 "$rc"
json_get "$SCRATCH/out/profile.json" 'len(d["traceEvents"])' >/dev/null || fail "trace of a damaged log"
grep -q "bad.mfl: offset" "$SCRATCH/out/stats.txt" || fail "stats.txt carries the damage warning"
echo "render_damage: ok"
