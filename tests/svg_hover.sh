#!/bin/sh
# svg_hover.sh - the hover layer of memory_flow.svg, read with a real XML
# parser (python3 xml.etree): one transparent <rect> with a <title> per block
# drawn one by one, at the block's position, giving scope, name, sizes,
# address range, times and thread; the program's strings are escaped
# (<"& newline, invalid UTF-8) and the file is valid UTF-8 XML.  Over the
# occupancy curve, hover rects give the live bytes every 4 pixel columns.
# The map's image is memflow's own PNG encoding (libpng, fast settings).
# When pdftoppm (poppler-utils) is installed, the PDF's pixels are checked too.
. "$top_srcdir/tests/lib.sh"
"$top_builddir/tests/svg_fixture" "$SCRATCH" || fail "svg_fixture could not write the pictures"
"$PYTHON3" - "$SCRATCH" <<'PY' || fail "hover layer wrong (see above)"
import json, sys, xml.etree.ElementTree as ET

out = sys.argv[1]
NS = "{http://www.w3.org/2000/svg}"

def check(cond, what):
    if not cond:
        print("svg_hover: " + what, file=sys.stderr)
        sys.exit(1)

raw = open(out + "/basic.svg", "rb").read()
raw.decode("utf-8")  # strict: the file is valid UTF-8
check(b"a&lt;b&quot;c&amp;d\\ne\xef\xbf\xbd" in raw, "weird scope not escaped as expected")
root = ET.fromstring(raw)
check(root.get("width") == "1280px", "width %r" % root.get("width"))
check(root.get("viewBox", "").startswith("0 0 1280 "), "viewBox %r" % root.get("viewBox"))
hover = [g for g in root.iter(NS + "g") if g.get("id") == "memflow-hover"]
check(len(hover) == 1, "%d hover groups" % len(hover))
check(list(root)[-1] is hover[0], "the hover group is not the last (topmost) element")
check(hover[0].get("fill-opacity") == "0" and hover[0].get("pointer-events") == "all",
      "hover group is not transparent and pointer-catching")
rects = hover[0].findall(NS + "rect")
titles = [r.find(NS + "title").text for r in rects]
blocks = [t for t in titles if t.startswith("scope: ")]
check(len(blocks) == 3, "expected 3 block titles, got %d: %r" % (len(blocks), blocks))
# The curve: one hover rect per 4 of its 888 pixel columns, with the live
# bytes (and the allocator's sample) there; then the peak marker.
curve = [t for t in titles if ": live " in t]
check(len(curve) == 222 and len(titles) == 1 + 1 + 3 + 222 + 1 + 3,
      "expected the title, the device line, 222 curve titles, a peak, 3 legend rows and "
      "3 blocks; got %d of %d" % (len(curve), len(titles)))
# The title's two lines and the panel's device line, whole.
check(titles[0].startswith("memflow: ") and "\nduration 1.00 s   |   cpu/0 peak " in titles[0],
      "title %r" % titles[0])
check(titles[1].startswith("cpu/0\n") and " allocations, " in titles[1],
      "device line %r" % titles[1])
check(curve[0] == "0 - 4.50 ms: live 0 B", "first curve title %r" % curve[0])
check("446 ms - 450 ms: live 1.50 MiB; allocator 1.76 MiB" in curve, "no curve title at 450 ms")
check("297 ms - 302 ms: live 512 KiB to 1.50 MiB; allocator 400 KiB" in curve,
      "no curve title over the rise to the peak")
check(curve[-1] == "995 ms - 1.00 s: live 256 KiB", "last curve title %r" % curve[-1])
# The legend's rows: the whole scope name (the legend shows 24 characters).
legend = [t for t in titles if "held at the peak" in t]
check(legend == ["a<b\"c&d\\ne\ufffd\n1.00 MiB held at the peak, 1.00 MiB allocated in all",
                 "net_dense0:\n256 KiB held at the peak, 256 KiB allocated in all",
                 "net_dense1:\n256 KiB held at the peak, 256 KiB allocated in all"],
      "legend titles %r" % legend)

expected = {
    "a": "scope: net_dense0:\nname: weight\n"
         "requested 262,144 B (256 KiB), actual 262,144 B (256 KiB)\n"
         "address 0x555555560000 - 0x5555555a0000 on cpu/0\n"
         "allocated at 100 ms, freed at 600 ms (lived 500 ms)\n"
         "thread 101 (main), pid 4242",
    "b": "scope: net_dense1:\nname: bias\n"
         "requested 262,136 B (256 KiB), actual 262,144 B (256 KiB)\n"
         "address 0x5555555a0000 - 0x5555555e0000 on cpu/0\n"
         "allocated at 200 ms, live at end (never freed; held 800 ms)\n"
         "thread 101 (main), pid 4242",
    "c": "scope: a<b\"c&d\\ne\ufffd\nname: x&y\n"
         "requested 1,048,576 B (1.00 MiB), actual 1,048,576 B (1.00 MiB)\n"
         "address 0x7f0000000000 - 0x7f0000100000 on cpu/0\n"
         "allocated at 300 ms, freed at 800 ms (lived 500 ms)\n"
         "thread 102 (worker <1>), pid 4242",
}
probes = json.load(open(out + "/probes.json"))
for key, title in expected.items():
    check(titles.count(title) == 1, "no hover title for %s; titles: %r" % (key, titles))
    r = rects[titles.index(title)]
    x, y = probes[key]["x"], probes[key]["y"]
    x0, y0 = float(r.get("x")), float(r.get("y"))
    x1, y1 = x0 + float(r.get("width")), y0 + float(r.get("height"))
    check(x0 <= x < x1 and y0 <= y < y1,
          "%s's hover rect %r does not cover where it is drawn (%s, %s)" % (key, r.attrib, x, y))
check("peak 1.50 MiB at 300 ms" in titles, "no peak marker title")

# Blocks of a pixel or two get no hover entry (nobody can point at one
# among its neighbours): tiny.svg's one large block has one, its 50 small
# ones none, and the note over the map says so.
root = ET.parse(out + "/tiny.svg").getroot()
tiny = [r.find(NS + "title").text for g in root.iter(NS + "g") if g.get("id") == "memflow-hover"
        for r in g.findall(NS + "rect")]
blocks = [t for t in tiny if t.startswith("scope: ")]
check(len(blocks) == 1 and blocks[0].startswith("scope: big:\nname: whole\n"),
      "tiny.svg: block titles %r" % blocks)
check(any(t.startswith("50 smaller allocations are drawn as pixels here (no details); hover "
                       "details are given for 1 of the largest (16 pixels or more)") for t in tiny),
      "tiny.svg: no note on the pixels: %r" % tiny)
# The map's pixels are one PNG image, encoded by memflow with libpng's fast
# settings, not by Cairo with libpng's defaults.
import base64, re, struct, zlib
href = [i.get("{http://www.w3.org/1999/xlink}href") or i.get("href")
        for i in root.iter(NS + "image")]
check(len(href) == 1 and href[0].startswith("data:image/png;base64,"),
      "tiny.svg: %d map images" % len(href))
png = base64.b64decode(href[0].split(",", 1)[1])
check(png[:8] == b"\x89PNG\r\n\x1a\n", "tiny.svg: the map image is not a PNG")
at, idat, ihdr = 8, b"", None
while at < len(png):
    n, kind = struct.unpack(">I4s", png[at:at + 8])
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBB", png[at + 8:at + 18])
    elif kind == b"IDAT":
        idat += png[at + 8:at + 8 + n]
    at += 12 + n
check(ihdr == (888, 340, 8, 6), "tiny.svg: map image header %r (want 888x340 RGBA)" % (ihdr,))
# zlib's header says how hard it compressed (FLEVEL, RFC 1950): 2 is zlib's
# default, which Cairo's encoding uses; memflow's asks for a fast level.
check(len(zlib.decompress(idat)) == 340 * (1 + 888 * 4), "tiny.svg: map image rows cut")
check(idat[1] >> 6 < 2, "tiny.svg: map image compressed at zlib level class %d (want a fast "
      "one: memflow's encoding, not Cairo's)" % (idat[1] >> 6))

# GPU blocks: the memory kind and flags close the title.
root = ET.parse(out + "/gpu.svg").getroot()
gpu = [r.find(NS + "title").text for g in root.iter(NS + "g") if g.get("id") == "memflow-hover"
       for r in g.findall(NS + "rect")]
gpu = sorted(t for t in gpu if t.startswith("scope: "))
check(len(gpu) == 2, "gpu.svg: %d block titles" % len(gpu))
check(gpu[0].startswith("scope: net:\nname: w\nrequested 5,120 B (5.00 KiB), actual 8,192 B (8.00 KiB)\n"
                        "address 0x7f5000000000 - 0x7f5000002000 on gpu/0\n")
      and gpu[0].endswith("\nthread 7, pid 4242\nmemory pool, stream-ordered, reused from a pool cache"),
      "pool block title %r" % gpu[0])
check(gpu[1].endswith("live at end (never freed; held 80.0 ms)\nthread 7, pid 4242\npinned host memory"),
      "pinned block title %r" % gpu[1])
for r in rects:
    x, y = probes["empty"]["x"], probes["empty"]["y"]
    x0, y0 = float(r.get("x")), float(r.get("y"))
    check(not (x0 <= x < x0 + float(r.get("width")) and y0 <= y < y0 + float(r.get("height"))),
          "a hover rect covers the empty spot")
PY
# The PDF shows the same picture: rasterised at 72 dpi (1 pt = 1 pixel) by
# pdftoppm when it is installed, block A has its scope's colour and the
# empty spot the background.
if command -v pdftoppm >/dev/null 2>&1; then
    pdftoppm -r 72 -singlefile "$SCRATCH/basic.pdf" "$SCRATCH/basic-pdf" ||
        fail "pdftoppm cannot read memory_flow.pdf"
    "$PYTHON3" - "$SCRATCH" <<'PY' || fail "memory_flow.pdf pixels wrong (see above)"
import json, sys
out = sys.argv[1]
data = open(out + "/basic-pdf.ppm", "rb").read()
fields, pos = [], 0
while len(fields) < 4:                      # P6 width height maxval, then pixels
    while data[pos:pos + 1].isspace():
        pos += 1
    end = pos
    while not data[end:end + 1].isspace():
        end += 1
    fields.append(data[pos:end])
    pos = end
pos += 1
width, height = int(fields[1]), int(fields[2])
probes = json.load(open(out + "/probes.json"))
def rgb(key):
    x, y = int(probes[key]["x"]), int(probes[key]["y"])
    i = pos + 3 * (y * width + x)
    return "%02x%02x%02x" % tuple(data[i:i + 3])
for key, want in (("a", "17becf"), ("c", "ffbb78"), ("empty", "f8f8f8")):
    if fields[0] != b"P6" or width != 1280 or rgb(key) != want:
        print("svg_hover: PDF %s %dx%d: %s is #%s, expected #%s"
              % (fields[0], width, height, key, rgb(key), want), file=sys.stderr)
        sys.exit(1)
PY
    echo "svg_hover: memory_flow.pdf rasterised by pdftoppm shows the same blocks"
fi
# ... and the small blocks are still drawn, in their scope's colour.
xy=$("$PYTHON3" -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["x"], p["y"])' \
    "$SCRATCH/tiny.json")
pixel=$("$top_builddir/tests/svg_pixel" "$SCRATCH/tiny.svg" $xy "tiny:") ||
    fail "svg_pixel cannot read tiny.svg"
case $pixel in
    *"tiny:: yes"*) ;;
    *) fail "tiny.svg: the first small block at $xy is $pixel" ;;
esac
echo "svg_hover: 3 block titles exact, escaped and in place; 222 curve titles; blocks of a pixel drawn as pixels, without titles"
