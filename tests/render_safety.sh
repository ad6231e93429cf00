#!/bin/sh
# render_safety.sh - outputs are written safely and atomically: a symlink
# planted at an output's name is replaced (its target untouched), a
# pre-made world-writable output is replaced by a new file with the umask's
# mode, and a render that fails (here: a file size limit) leaves the old
# file and no partial or temporary file.
. "$top_srcdir/tests/lib.sh"
LOG=$("$top_builddir/tests/render_gen" "$SCRATCH" big 100000)
OUT="$SCRATCH/out"
mkdir -p "$OUT"
umask 022

# 1. a planted symlink at out/memory_flow.svg pointing at a precious file
echo "precious" > "$SCRATCH/precious"
ln -s "$SCRATCH/precious" "$OUT/memory_flow.svg"
# 2. a pre-made world-writable profile.json
echo "planted" > "$OUT/profile.json"
chmod 666 "$OUT/profile.json"
old_inode=$(stat -c %i "$OUT/profile.json")
"$MEMFLOW" render "$LOG" -o "$OUT" 2>"$SCRATCH/err" || fail "render exited $?: $(cat "$SCRATCH/err")"
expect_eq "symlink target untouched" "precious" "$(cat "$SCRATCH/precious")"
[ ! -L "$OUT/memory_flow.svg" ] || fail "memory_flow.svg is still a symlink"
[ -f "$OUT/memory_flow.svg" ] || fail "memory_flow.svg is not a regular file"
"$PYTHON3" -c "import xml.etree.ElementTree as E,sys; E.parse(sys.argv[1])" "$OUT/memory_flow.svg" ||
    fail "memory_flow.svg is not the picture"
expect_eq "profile.json mode" 644 "$(stat -c %a "$OUT/profile.json")"
[ "$(stat -c %i "$OUT/profile.json")" != "$old_inode" ] || fail "profile.json was written in place"
json_get "$OUT/profile.json" "len(d['traceEvents']) > 0" | grep -q True || fail "profile.json is not the trace"
for f in memory_flow.svg profile.json stats.txt; do
    expect_eq "$f mode" 644 "$(stat -c %a "$OUT/$f")"
done

# 3. a failing render leaves the old files and nothing else
printf 'old trace\n' > "$OUT/profile.json"
printf 'old stats\n' > "$OUT/stats.txt"
before=$(ls -a "$OUT" | sort | tr '\n' ' ')
status=0
(ulimit -f 64; "$MEMFLOW" render "$LOG" -o "$OUT" --formats stats.txt,profile.json 2>"$SCRATCH/err") ||
    status=$?
expect_eq "render under a file size limit" 1 "$status"
grep -q "$OUT/profile.json: cannot write: File too large" "$SCRATCH/err" ||
    fail "the message does not name the file and the reason: $(cat "$SCRATCH/err")"
expect_eq "old trace kept" "old trace" "$(cat "$OUT/profile.json")"
after=$(ls -a "$OUT" | sort | tr '\n' ' ')
expect_eq "no partial or temporary file left" "$before" "$after"
grep -q "^memflow statistics" "$OUT/stats.txt" || fail "stats.txt (small) was not written"
echo "render_safety: ok"
