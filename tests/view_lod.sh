#!/bin/sh
# view_lod.sh - `memflow view`'s level of detail on millions of small
# blocks: a real program (view_lod_workload) under `memflow run` keeps a
# million blocks of 24..40 bytes, churns a million more and frees the kept
# ones; headless Chromium (playwright-core, tests/view) opens the whole run,
# which the server answers with a picture of the page's pixels, and reads
# the map back: the band of addresses the kept blocks span, while they are
# all held, has no blank pixel, mostly lod_keep's colour and nothing but
# the scopes' colours (the program's other blocks lie between the
# allocator's extents); at 300 fixed
# pixels, every one where the server
# says a block was is drawn, and every one with no block within 3 pixels is
# blank.  Zoomed in on 4 KiB of the kept blocks, every block comes whole
# (the million long-lived ones are kept sorted by address).  Skips (77) only where chromium, node or playwright-core are missing.
. "$top_srcdir/tests/lib.sh"
needs_preload
needs_browser
"$MEMFLOW" run -o "$SCRATCH/run" -- "$top_builddir/tests/view_lod_workload" 1000000 1000000 \
    > "$SCRATCH/run.out" 2> "$SCRATCH/run.err" || fail "memflow run exited $?: $(tail -3 "$SCRATCH/run.err")"
read -r first last size < "$SCRATCH/run.out" || fail "the workload printed no addresses"
trap 'view_stop view' EXIT
view_serve "$SCRATCH/run" view
url=$(cat "$SCRATCH/view.url")
NODE_PATH="$top_srcdir/tests/view/node_modules" CHROMIUM="$CHROMIUM" SCRATCH="$SCRATCH" \
    "$NODE" "$top_srcdir/tests/view_lod.js" "$url" "$first" "$last" "$size" > "$SCRATCH/lod.json" \
    2> "$SCRATCH/lod.err" || fail "the browser test failed: $(tail -20 "$SCRATCH/lod.err")"
"$PYTHON3" - "$SCRATCH/lod.json" "$size" <<'PY' || fail "what the browser saw is wrong (see above)"
import json, sys
r = json.load(open(sys.argv[1]))
size = int(sys.argv[2])
def check(cond, what):
    if not cond:
        print("view_lod: " + what + ": " + json.dumps(r)[:3000], file=sys.stderr)
        sys.exit(1)
res = r["result"]
band = res["band"]
check("zoom in for every block" in r["status"], "the whole run is drawn from blocks whole")
check(all(t["raster"] for t in r["timings"]), "the whole run is no raster")
check(res["blocks"] >= 2000000, "fewer blocks than the program made")
check(band["first_size"] == 24 and band["last_size"] == size, "the first and last kept blocks")
check(band["pixels"] >= 20000, "the band is too small to say anything")
check(band["blank"] == 0, "blank pixels where the kept blocks were held")
check(band["other_colour"] == 0, "pixels of the band in no scope's colour")
check(band["kept"] * 2 > band["pixels"], "lod_keep does not dominate its band")
check(0.33 <= band["alpha_min"] and band["alpha_max"] <= 1.01, "the band's alpha")
held = [s for s in res["samples"] if s["held"]]
empty = [s for s in res["samples"] if not s["near"]]
check(len(held) >= 30 and len(empty) >= 30, "too few samples held or empty")
check(not [s for s in held if s["blank"]], "a pixel where a block was is blank")
check(not [s for s in empty if not s["blank"]], "a pixel with no block near is drawn")
z = r["zoomed"][0]
check(not z["raster"] and 50 <= z["blocks"] <= 20000, "zoomed in on 4 KiB of kept blocks: not every block whole")
print("view_lod: band of %d pixels, none blank (alpha %.2f..%.2f); %d held and %d empty samples right"
      % (band["pixels"], band["alpha_min"], band["alpha_max"], len(held), len(empty)))
PY
echo "$TEST_NAME: ok"
