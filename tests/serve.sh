#!/bin/sh
# serve.sh - `memflow serve` on a log that a real program keeps writing:
# requests are answered in the protocol's framing (ok/error, a byte count,
# exactly that many bytes), every answer sees what was recorded before it,
# RESET starts the statistics afresh, render writes the outputs (of the
# whole log, built at the first render and kept up after), and the
# cost of a request follows what the log gained since the last one: the
# records read by the second request are exactly the records added.
. "$top_srcdir/tests/lib.sh"
"$PYTHON3" - "$MEMFLOW" "$top_builddir/tests/serve_feed" "$SCRATCH" "$top_srcdir" <<'PY' || fail "serve (see above)"
import json, os, sys

memflow, feed_prog, scratch, srcdir = sys.argv[1:5]
sys.dont_write_bytecode = True      # nothing written into the source tree
sys.path.insert(0, os.path.join(srcdir, "tests"))
from serve_client import Session

session = Session([memflow], feed_prog, scratch)
record, ask, counts = session.record, session.ask, session.counts

def stats():
    status, body = ask("stats", "json", "total", "0", "0")
    assert status == "ok", body
    return json.loads(body)

def cpu(d):
    return [x for x in d["devices"] if x["device"] == "cpu/0"][0]

record("alloc 1000")
d = stats()
assert cpu(d)["alloc_count"] == 1000 and cpu(d)["live_bytes_end"] == 100000, cpu(d)
assert d["processes"][0]["end"]["how"] == "running", d["processes"]
# the program still runs: its blocks are live now, not leaks (20 listed,
# the largest first, then the oldest)
assert d["leaks"] == [] and len(d["live_now"]) == 20, (d["leaks"], len(d["live_now"]))
assert [(b["address"], b["requested"]) for b in d["live_now"][:2]] == \
    [("0x100000", 100), ("0x100080", 100)], d["live_now"][:2]
before = counts()

record("alloc 500")
record("free 200")
d = stats()
after = counts()
assert cpu(d)["alloc_count"] == 1500 and cpu(d)["free_count"] == 200, cpu(d)
assert cpu(d)["peak_bytes"] == 150000 and cpu(d)["live_bytes_end"] == 130000, cpu(d)
# the second request read what was added, and only that: 700 records
added = {k: after[k] - before[k] for k in before if k != "staged"}
assert added == {"records_scanned": 700, "events_decoded": 700, "events_fed": 700}, added
# the program writes its log itself: no stage copies into it
assert after["staged"] == 0, after
print("second request: %(records_scanned)d records scanned, %(events_decoded)d decoded" % added)

# the table, sorted as asked; the live blocks under "Live now", none leaked
status, table = ask("stats", "table", "count", "1", "0")
assert status == "ok" and "Device Storage" in table and "Memory: cpu/0" in table, table
lines = table.splitlines()
at = lines.index("Leaks (largest blocks never freed, up to 20)")
assert lines[at + 2:at + 5] == ["none", "", "Live now (largest blocks of processes still "
                                "running, up to 20)"], lines[at:at + 5]
assert len([l for l in lines[at + 7:] if l.startswith("cpu/0 ")]) == 20, lines[at:]

# RESET: later statistics count only what happens after this answer
status, _ = ask("stats", "json", "total", "0", "1")
assert status == "ok"
record("alloc 7")
record("free 1500")
d = stats()
assert cpu(d)["alloc_count"] == 7, cpu(d)
# 1300 of the frees release blocks allocated before the reset: unknown to it
assert cpu(d)["free_count"] == 7 and d["unknown_frees"] == 1300, (cpu(d), d["unknown_frees"])

# render: the outputs of everything, into a folder
out = os.path.join(scratch, "out")
status, body = ask("render", out, "stats.json,profile.json", "trace.json", "gpu_prefix")
assert (status, body) == ("ok", ""), (status, body)
s = json.load(open(os.path.join(out, "stats.json")))
assert cpu(s)["alloc_count"] == 1507 and cpu(s)["free_count"] == 1507, cpu(s)
json.load(open(os.path.join(out, "trace.json")))
# the whole model (built at the first render) keeps up from then on
record("alloc 3")
out2 = os.path.join(scratch, "out2")
status, body = ask("render", out2, "stats.json", "", "")
assert (status, body) == ("ok", ""), (status, body)
s = json.load(open(os.path.join(out2, "stats.json")))
assert cpu(s)["alloc_count"] == 1510 and cpu(s)["live_bytes_end"] == 300, cpu(s)

# errors come framed too, and the server goes on
status, body = ask("stats", "xml", "total", "0", "0")
assert status == "error" and "bad format 'xml'" in body and "table, json" in body, body
status, body = ask("frobnicate")
assert status == "error" and "unknown request 'frobnicate'" in body, body
status, body = ask("render", os.path.join(scratch, "x"), "bogus.txt", "", "")
assert status == "error" and "unknown output 'bogus.txt'" in body, body
assert stats()["processes"][0]["pid"] > 0

# EOF ends the server
session.close()
PY
echo "serve: ok"
