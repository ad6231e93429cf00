#!/bin/sh
# svg_browser.sh - memory_flow.svg in a real browser: headless Chromium opens
# the SVG (inline in an XHTML page), and document.elementFromPoint at a
# known block's position must find that block's hover title (scope, name,
# sizes...), at a hostile scope's block its escaped-and-restored text,
# nothing where no block lived, and over the curve the live bytes there.  Skips (77) only when Chromium is missing.
. "$top_srcdir/tests/lib.sh"
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
    echo "SKIP: chromium is not installed"
    exit 77
fi
"$top_builddir/tests/svg_fixture" "$SCRATCH" || fail "svg_fixture could not write the pictures"
"$PYTHON3" - "$SCRATCH" "$top_srcdir/tests/svg_browser.js" <<'PY' || fail "cannot build the page"
import sys
out, script = sys.argv[1], sys.argv[2]
svg = open(out + "/basic.svg", encoding="utf-8").read()
svg = svg[svg.index("<svg"):]
probes = open(out + "/probes.json").read()
js = open(script).read()
page = ('<?xml version="1.0" encoding="UTF-8"?>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>memflow hover test</title>'
        '<style>body { margin: 0; } svg { display: block; }</style></head><body>\n'
        + svg +
        '<pre id="memflow-result"></pre>\n'
        '<script><![CDATA[\nvar PROBES = ' + probes + ';\n' + js + '\n]]></script>'
        '</body></html>\n')
open(out + "/page.xhtml", "w", encoding="utf-8").write(page)
PY
profile=$(mktemp -d "$SCRATCH/profile.XXXXXX")
"$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --window-size=1400,1000 --virtual-time-budget=5000 \
    --dump-dom "file://$SCRATCH/page.xhtml" >"$SCRATCH/dom.html" 2>"$SCRATCH/chromium.log" ||
    fail "chromium failed: $(tail -5 "$SCRATCH/chromium.log")"
"$PYTHON3" - "$SCRATCH/dom.html" <<'PY' || fail "hover in the browser wrong (see above)"
import json, sys
from html.parser import HTMLParser

class Result(HTMLParser):
    def __init__(self):
        super().__init__()
        self.inside, self.text = False, ""
    def handle_starttag(self, tag, attrs):
        self.inside = self.inside or (tag == "pre" and ("id", "memflow-result") in attrs)
    def handle_endtag(self, tag):
        if tag == "pre":
            self.inside = False
    def handle_data(self, data):
        if self.inside:
            self.text += data

def check(cond, what):
    if not cond:
        print("svg_browser: " + what, file=sys.stderr)
        sys.exit(1)

p = Result()
p.feed(open(sys.argv[1], encoding="utf-8").read())
check(p.text.strip() != "", "the page's script wrote no result")
r = json.loads(p.text)
check(r["a"]["tag"] == "rect", "under block A: %r" % r["a"])
check(r["a"]["title"] is not None and r["a"]["title"].startswith(
    "scope: net_dense0:\nname: weight\nrequested 262,144 B (256 KiB), actual 262,144 B (256 KiB)\n"
    "address 0x555555560000 - 0x5555555a0000 on cpu/0\n"), "hover of A: %r" % r["a"])
check(r["a"]["title"].endswith("thread 101 (main), pid 4242"), "hover of A: %r" % r["a"])
check(r["c"]["title"] is not None and r["c"]["title"].startswith("scope: a<b\"c&d\\ne\ufffd\nname: x&y\n"),
      "hover of C: %r" % r["c"])
check(r["b"]["title"] is not None and "live at end" in r["b"]["title"], "hover of B: %r" % r["b"])
check(r["empty"]["title"] is None, "hover where nothing lived: %r" % r["empty"])
check(r["curve"]["title"] == "450 ms - 455 ms: live 1.50 MiB; allocator 1.76 MiB",
      "hover over the curve at 450 ms: %r" % r["curve"])
PY
echo "svg_browser: Chromium finds the hover details of blocks A, B and C"
