#!/bin/sh
# svg_e2e.sh - memory_flow through the whole pipeline: a real program
# (svg_workload) under `memflow run`, its log through the model into
# memory_flow.svg/.png/.pdf.  The SVG is parsed as XML and its hover layer
# must show the program's three known allocations with their exact sizes,
# scopes (a hostile one restored exactly after escaping) and fates (two
# freed, one live at end); the PNG and PDF must be real files of the page's
# size; `memflow render --color-by lifetime|size` and `--device` work on the
# same log.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/svg_workload"
"$MEMFLOW" run -o "$SCRATCH/run" \
    --set formats=memory_flow.svg,memory_flow.png,memory_flow.pdf -- "$W" ||
    fail "memflow run exited $?"
for mode in lifetime size; do
    "$MEMFLOW" render -o "$SCRATCH/$mode" --formats memory_flow.svg --color-by "$mode" \
        "$SCRATCH"/run/memflow-*.mfl || fail "memflow render --color-by $mode exited $?"
done
"$MEMFLOW" render -o "$SCRATCH/cpu" --formats memory_flow.svg --device cpu/0 \
    "$SCRATCH"/run/memflow-*.mfl || fail "memflow render --device cpu/0 exited $?"
status=0
"$MEMFLOW" render -o "$SCRATCH/gpu" --formats memory_flow.svg --device gpu/5 \
    "$SCRATCH"/run/memflow-*.mfl 2>"$SCRATCH/gpu.err" || status=$?
[ "$status" -ne 0 ] || fail "--device gpu/5 (not in the log) succeeded"
grep -q "gpu/5" "$SCRATCH/gpu.err" || fail "the --device error does not name gpu/5: $(cat "$SCRATCH/gpu.err")"
"$PYTHON3" - "$SCRATCH" <<'PY' || fail "memory_flow of the workload wrong (see above)"
import struct, sys, xml.etree.ElementTree as ET

out = sys.argv[1]
NS = "{http://www.w3.org/2000/svg}"

def check(cond, what):
    if not cond:
        print("svg_e2e: " + what, file=sys.stderr)
        sys.exit(1)

def hover_titles(path):
    root = ET.parse(path).getroot()
    groups = [g for g in root.iter(NS + "g") if g.get("id") == "memflow-hover"]
    check(len(groups) == 1, "%s: %d hover groups" % (path, len(groups)))
    return [r.find(NS + "title").text for r in groups[0].findall(NS + "rect")]

def the_one(titles, needle):
    found = [t for t in titles if needle in t]
    check(len(found) == 1, "%d hover titles with %r" % (len(found), needle))
    return found[0].split("\n")

titles = hover_titles(out + "/run/memory_flow.svg")
leak = the_one(titles, "requested 123,457 B")
check(leak[0] == 'scope: e2e<w>&"q"\\n\ufffd:', "scope of the leak: %r" % leak[0])
check(leak[4].startswith("allocated at ") and
      "never freed: held until its process ended at " in leak[4],
      "the leak is not shown as never freed: %r" % leak)
check(leak[3].startswith("address 0x") and leak[3].endswith(" on cpu/0"), "address line: %r" % leak[3])
held = the_one(titles, "requested 54,321 B")
check(held[0] == leak[0] and "freed at" in held[4], "the freed block: %r" % held)
temp = the_one(titles, "requested 99,991 B")
check(temp[0] == "scope: e2e_temp:" and "freed at" in temp[4], "the temp block: %r" % temp)

png = open(out + "/run/memory_flow.png", "rb").read()
check(png[:8] == b"\x89PNG\r\n\x1a\n", "memory_flow.png is not a PNG")
width, height = struct.unpack(">II", png[16:24])
check((width, height) == (1280, 586), "PNG is %dx%d, expected one panel: 1280x586" % (width, height))
pdf = open(out + "/run/memory_flow.pdf", "rb").read()
check(pdf[:5] == b"%PDF-" and len(pdf) > 4000, "memory_flow.pdf is not a PDF")
for mode in ("lifetime", "size", "cpu"):
    check(len(the_one(hover_titles(out + "/" + mode + "/memory_flow.svg"), "requested 123,457 B")) == 6,
          "render %s: the leak's title" % mode)
PY
echo "svg_e2e: the workload's three blocks found in memory_flow.svg with exact sizes, scopes and fates"
