#!/bin/sh
# render_damage.sh - a damaged log (truncated in the middle; a record
# overwritten; cut exactly at a chunk boundary; a flipped bit in argv_len)
# still gives the statistics and outputs of everything that can be trusted,
# exit status 3, and a message naming the file and the offset.
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

# 3. cut exactly at a chunk boundary: every record left is whole, only the
#    header's chunks_claimed tells that chunks are missing
cp "$LOG" "$SCRATCH/boundary.mfl"
truncate -s $((3 * CHUNK)) "$SCRATCH/boundary.mfl"
claimed=$("$PYTHON3" -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1], "rb").read(32), 24)[0])' "$LOG")
[ "$claimed" -gt 3 ] || fail "the test log has only $claimed chunks"
check_damaged "$SCRATCH/boundary.mfl" \
    "$((3 * CHUNK)): the file ends after 3 chunks, but the header says $claimed were claimed"

# 4. one flipped bit in the header's argv_len (68) of a log with a
#    static_check: repaired by the checksum, said so, the log read whole
cp "$LOG" "$SCRATCH/argv.mfl"
"$PYTHON3" - "$SCRATCH/argv.mfl" <<'PY' || fail "sealing the header"
import struct, sys
def crc32c(data, crc=0):
    crc ^= 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xffffffff
f = open(sys.argv[1], "r+b")
h = bytearray(f.read(4096))
argv_len = struct.unpack_from("<I", h, 68)[0]
# static_check (152): CRC-32C of version..host and run_id (8..152), then argv
struct.pack_into("<I", h, 152, crc32c(bytes(h[184:184 + argv_len]), crc32c(bytes(h[8:152]))))
struct.pack_into("<I", h, 68, argv_len ^ 0x40)          # the flip
f.seek(0)
f.write(h)
PY
"$MEMFLOW" stats "$LOG" --format json >"$SCRATCH/whole.json" 2>/dev/null
set +e
"$MEMFLOW" stats "$SCRATCH/argv.mfl" --format json >"$SCRATCH/argv.json" 2>"$SCRATCH/argv.err"; rc=$?
set -e
expect_eq "stats exit on a repaired header" 3 "$rc"
grep -q "argv.mfl: offset 68: argv_len says [0-9]* bytes, the program's arguments are" \
    "$SCRATCH/argv.err" || fail "argv_len repair message: $(cat "$SCRATCH/argv.err")"
expect_eq "program after the repair" "$(json_get "$SCRATCH/whole.json" 'd["processes"][0]["program"]')" \
    "$(json_get "$SCRATCH/argv.json" 'd["processes"][0]["program"]')"
expect_eq "events after the repair" "$(json_get "$SCRATCH/whole.json" 'd["devices"][0]["alloc_count"]')" \
    "$(json_get "$SCRATCH/argv.json" 'd["devices"][0]["alloc_count"]')"

# render still writes its outputs, with exit status 3
set +e
"$MEMFLOW" render "$SCRATCH/bad.mfl" -o "$SCRATCH/out" --formats profile.json,stats.txt 2>"$SCRATCH/r.err"
rc=$?
set -e
expect_eq "render exit on a damaged log" 3 "$rc"
json_get "$SCRATCH/out/profile.json" 'len(d["traceEvents"])' >/dev/null || fail "trace of a damaged log"
grep -q "bad.mfl: offset" "$SCRATCH/out/stats.txt" || fail "stats.txt carries the damage warning"
echo "render_damage: ok"
