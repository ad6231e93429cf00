#!/bin/sh
# render_escape.sh - strings from the program (scope, block name, thread
# name) holding < " & a newline and invalid UTF-8 (\xff\xfe) survive every
# output: JSON statistics and the trace parse with python3's json and give
# the string back (invalid bytes as U+FFFD), the CSV quotes and doubles,
# the text table shows the newline as \n.
. "$top_srcdir/tests/lib.sh"
LOG=$("$top_builddir/tests/render_gen" "$SCRATCH" escape)
PID=$(basename "$LOG" .mfl | sed 's/^memflow-//')
OUT="$SCRATCH/out"
"$MEMFLOW" render "$LOG" -o "$OUT" --formats profile.json,stats.json,stats.txt,gpu_memory_profile.csv \
    2>/dev/null || fail "memflow render exited $?"
"$PYTHON3" - "$OUT/stats.json" "$OUT/profile.json" <<'PY' || fail "escaped strings in JSON"
import json, sys
scope = 'a<b"c&d\ne\ufffd\ufffd:'
name = 'n<&"\n\ufffd'
s = json.load(open(sys.argv[1], encoding="utf-8"))
assert sorted({x["scope"] for x in s["scopes"]}) == [scope], s["scopes"]
assert [l["name"] for l in s["leaks"]] == [name, name]
assert {l["thread_name"] for l in s["leaks"]} == {'w<&"\ufffd'}, s["leaks"]
t = json.load(open(sys.argv[2], encoding="utf-8"))
ev = t["traceEvents"]
assert [e["name"] for e in ev if e["ph"] == "X"] == [scope]
assert 'w<&"\ufffd' in [e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]
PY
printf '"Attribute Name","Requested Size","Device","Actual Size","Reuse?"\n"a<b""c&d\ne\357\277\275\357\277\275:n<&""\n\357\277\275","20","0","32","0"\n' \
    >"$SCRATCH/want.csv"
cmp "$SCRATCH/want.csv" "$OUT/gpu_memory_profile-pid_$PID.csv" || fail "CSV quoting"
grep -qF 'a<b"c&d\ne' "$OUT/stats.txt" || fail "table shows the newline as \\n"
if grep -q "$(printf '\377')" "$OUT/stats.txt" "$OUT/stats.json" "$OUT/profile.json"; then
    fail "a raw invalid byte reached an output"
fi
echo "render_escape: ok"
