#!/bin/sh
# compact_damage.sh - a compact log keeps what survives: cut at every frame
# boundary, inside every frame and at random offsets, or with a byte flipped
# in each frame, its index, its trailer or its header's COMPACT flag, every
# reader keeps exactly the events of every intact frame, names the offset of
# what is lost, and exits 3 (tests/compact_damage.py does the trials on the
# log of a real program, against its own reading of the bytes; runs in the
# sanitizer build too).  A compact
# log of layout 1 (an older memflow: bare zstd frames) is still read whole,
# a damaged frame of it is lost alone, and without its index it is refused
# with a message that says why.
. "$top_srcdir/tests/lib.sh"
W="$top_builddir/tests/alloc_workload"
CHECK="$top_builddir/tests/logcheck"

# -- the trials, on a log of 3 threads (9 frames); in a sanitizer build, where
# the preload cannot run, on a log tests/render_gen writes itself (5 frames)
if preload_works; then
    "$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/run" -- "$W" threads 3 30000 ||
        fail "run exited $?"
else
    "$top_builddir/tests/render_gen" "$SCRATCH/run" big 40000 scoped > /dev/null
fi
set -- "$SCRATCH"/run/memflow-*.mfl
cp "$1" "$SCRATCH/live.mfl"
"$MEMFLOW" compact "$1" > /dev/null || fail "compact exited $?"
"$PYTHON3" "$top_srcdir/tests/compact_damage.py" "$SCRATCH/live.mfl" "$1" "$SCRATCH" \
    > "$SCRATCH/trials.txt" || fail "$(cat "$SCRATCH/trials.txt")"
echo "compact_damage: $(cat "$SCRATCH/trials.txt")"

# -- layout 1 -------------------------------------------------------------------
# tests/compact_layout1.mfl: `render_gen DIR big 20000` compacted by memflow
# before frame headers (commit 5d20af0); its live log had chunk 1 (13406
# allocations, 12406 frees) and chunk 2 (6595, 6595); its index is at 15852,
# chunk 2's frame at 11164 (4688 bytes), its frames start at 227.
OLD="$top_srcdir/tests/compact_layout1.mfl"
"$CHECK" "$OLD" > "$SCRATCH/old.txt" || fail "layout 1: logcheck exited $?"
expect_eq "layout 1: events" "total allocs=20001 frees=19001 unknown_frees=0" \
    "$(grep '^total ' "$SCRATCH/old.txt")"
"$MEMFLOW" stats --format json "$OLD" > "$SCRATCH/old.json" || fail "layout 1: stats exited $?"
expect_eq "layout 1: stats" "20001 19001 12491316" "$(json_get "$SCRATCH/old.json" \
    '"%d %d %d" % (d["devices"][0]["alloc_count"], d["devices"][0]["free_count"], d["devices"][0]["peak_bytes"])')"
cp "$OLD" "$SCRATCH/old.mfl"
"$MEMFLOW" compact "$SCRATCH/old.mfl" > "$SCRATCH/old.out" || fail "layout 1: compact exited $?"
expect_eq "layout 1 is compact already" "$SCRATCH/old.mfl: already compact" "$(cat "$SCRATCH/old.out")"
# a flipped byte in chunk 2's frame: chunk 2 is lost, chunk 1 read
"$PYTHON3" -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(13164); b = f.read(1); f.seek(13164); f.write(bytes([b[0] ^ 0x40]))' \
    "$SCRATCH/old.mfl"
set +e
"$CHECK" "$SCRATCH/old.mfl" > "$SCRATCH/old-flip.txt"; rc=$?
set -e
expect_eq "layout 1, flipped: logcheck exit" 3 "$rc"
expect_eq "layout 1, flipped: events of chunk 1" "total allocs=13406 frees=12406 unknown_frees=0" \
    "$(grep '^total ' "$SCRATCH/old-flip.txt")"
grep -q "^damage: $SCRATCH/old.mfl: offset 11164: compact log: chunk 2: zstd: " "$SCRATCH/old-flip.txt" ||
    fail "layout 1, flipped: $(cat "$SCRATCH/old-flip.txt")"
# cut short, it has no index to find its frames by: refused, saying why
head -c 15000 "$OLD" > "$SCRATCH/old-cut.mfl"
set +e
"$MEMFLOW" stats "$SCRATCH/old-cut.mfl" > /dev/null 2> "$SCRATCH/old-cut.err"; rc=$?
set -e
expect_eq "layout 1, cut: stats exit" 1 "$rc"
expect_eq "layout 1, cut: message" "memflow: $SCRATCH/old-cut.mfl: offset 227: compact log: a compact log of layout 1 (an older memflow) whose index is lost: its frames cannot be found without it" \
    "$(cat "$SCRATCH/old-cut.err")"
echo "compact_damage: ok"
