#!/bin/sh
# view_oom.sh - `memflow view`'s OOMs and roles in a real browser.  The
# PyTorch snapshot of tests/torch_import_snapshots.py (an OOM at 70 us on
# gpu/0: 4 GiB asked, 1 MiB free) goes through `memflow import`; headless
# Chromium (playwright-core, tests/view) opens its view: the OOM button is
# enabled, `o` zooms to a tenth of the run around the OOM, its lane's curve
# and map have a red line 2 pixels wide there (the other lane none), and
# hovering the line on either says the post-mortem, exactly; a reload of
# the URL opens the same place and colouring.  A real program
# (view_roles_workload, under `memflow run`) names a parameter, an input,
# an activation, a gradient and an optimizer state, makes 600,000
# temporaries and leaves one block unnamed: coloured by role, the legend
# lists the roles with their bytes, each block shown whole has its role's
# colour at its centre, the whole run (a picture from the index's cells)
# has the parameter's colour in its band and the temporaries' over theirs,
# and hovering the parameter names its role.  Skips (77) only where
# chromium, node or playwright-core are missing.
. "$top_srcdir/tests/lib.sh"
needs_preload
needs_browser
"$PYTHON3" "$top_srcdir/tests/torch_import_snapshots.py" "$SCRATCH/snapshots"
"$MEMFLOW" import "$SCRATCH/snapshots/current.pickle" -o "$SCRATCH/oom" --no-render \
    2> "$SCRATCH/import.err" || fail "memflow import exited $?: $(cat "$SCRATCH/import.err")"
"$MEMFLOW" run --no-render -o "$SCRATCH/roles" -- "$top_builddir/tests/view_roles_workload" 600000 \
    > "$SCRATCH/roles.log" 2>&1 || fail "memflow run exited $?: $(tail -3 "$SCRATCH/roles.log")"

trap 'view_stop oom; view_stop roles' EXIT
view_serve "$SCRATCH/oom" oom
view_serve "$SCRATCH/roles" roles

NODE_PATH="$top_srcdir/tests/view/node_modules" CHROMIUM="$CHROMIUM" SCRATCH="$SCRATCH" \
    "$NODE" "$top_srcdir/tests/view_oom.js" "$(cat "$SCRATCH/oom.url")" "$(cat "$SCRATCH/roles.url")" \
    > "$SCRATCH/browser.json" 2> "$SCRATCH/browser.err" ||
    fail "the browser test failed: $(tail -20 "$SCRATCH/browser.err")"
"$PYTHON3" - "$SCRATCH/browser.json" <<'PY' || fail "what the browser saw is wrong (see above)"
import json, sys
r = json.load(open(sys.argv[1]))
def check(cond, what):
    if not cond:
        print("view_oom: " + what + ": " + json.dumps(r, indent=1)[:6000], file=sys.stderr)
        sys.exit(1)
RED = [255, 0, 0]
check(r["button"] == {"disabled": False, "title": "zoom to the first OOM (o)"}, "the OOM button")
a = r["after_o"]
# a tenth of the run (110 us) around 70 us
check((a["t0"], a["t1"]) == (64500, 75500), "the window after o")
check(a["hash"].startswith("#t0=64500&t1=75500"), "the URL after o")
check(sorted((l["device"], l["ooms"]) for l in a["lanes"]) == [("gpu/0", 1), ("gpu/1", 0)], "the lanes' OOMs")
p = r["pixels"]
check(p["curve"] == [RED, RED], "the red line on the curve")
check(p["map"] == [RED, RED], "the red line on the map")
check(RED not in p["map_beside"], "the line is 2 pixels wide")
check(RED not in p["other_lane"], "a red line in the lane with no OOM")
tip = """out of memory at 70.000 us on gpu/0, process 1
asked 4,294,967,296 B (4.00 GiB)
free 1,048,576 B (1.00 MiB) as recorded
route: PyTorch's allocator history
scope of the request: net:dense1:
tensors live then: 529,920 B (517.5 KiB) in 4, by scope:
  backward:net:dense0: 524,288 B (512.0 KiB) in 1
  <unk>: 4,608 B (4.50 KiB) in 2
  net:dense0: 1,024 B (1.00 KiB) in 1"""
check(r["hover_map"] == tip, "the OOM's hover text on the map")
check(r["hover_curve"] == tip, "the OOM's hover text on the curve")
check("color=role" in r["hash_before_reload"], "colour by role is not in the URL")
rl = r["reloaded"]
check((rl["t0"], rl["t1"], rl["by"]) == (64500, 75500, "role") and rl["hash"] == r["hash_before_reload"],
      "the reloaded URL's place")

ro = r["roles"]
colors = [[int(c[i:i + 2], 16) for i in (1, 3, 5)] for c in ro["colors"]]
check(ro["colors"] == ["#bdbdbd", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                       "#bcbd22"], "the roles' palette")
check(ro["legend"] == ["temporary 2.29 GiB", "optimizer_state 3.00 MiB", "parameter 1.00 MiB",
                       "gradient 1.00 MiB", "activation 512.0 KiB", "input 256.0 KiB", "other 128.0 KiB"],
      "the legend of roles")
check("color=role" in ro["hash"], "colour by role is not in the URL")
check(ro["raster"] and ro["raster"]["by"] == "role" and ro["raster"]["level"] >= 0 and
      set(ro["raster"]["layers"]) <= set(range(8)), "the whole run is no picture of roles from cells")
b = ro["blocks"]
check([(k, b[k]["requested"], b[k]["role"]) for k in "PGIATOX"] ==
      [("P", 1 << 20, "parameter"), ("G", 1 << 20, "gradient"), ("I", 256 << 10, "input"),
       ("A", 512 << 10, "activation"), ("T", 4096, "temporary"), ("O", 3 << 20, "optimizer_state"),
       ("X", 128 << 10, "other")], "the blocks' roles")
ooms = ro["ooms"]
check(len(ooms) == 1 and [ooms[0][k] for k in ("requested", "free", "limit", "route", "scope", "known",
                                               "tensors", "live_bytes", "live_count")] ==
      [64 << 20, 3 << 20, 16 << 20, "cuda_api", "net:fc:", True, False, 5373952, 4] and
      [(t["scope"], t["bytes"], t["count"]) for t in ooms[0]["top"]] ==
      [("adam:", 3 << 20, 1), ("net:fc:", 2 << 20, 2), ("net:", 128 << 10, 1)], "the run's OOM")
check(r["whole"]["P"] == colors[1], "the whole run: the parameter's band")
BG = [244, 244, 244]
def blend(c, color):
    """How much of color over the background pixel c shows (0 .. 1), or -1."""
    k = max(range(3), key=lambda i: abs(color[i] - BG[i]))
    a = (c[k] - BG[k]) / (color[k] - BG[k])
    return a if all(abs(c[i] - (BG[i] + a * (color[i] - BG[i]))) <= 3 for i in range(3)) else -1
# The temporaries' band: the temporary's colour at some moment of the churn.
# A temporary is "other" until its free says it was one (freed in the step
# it was made in), and a column of the index that closes while it is live
# keeps it as it stood then: a program stopped between an allocation and
# its free (a loaded machine) leaves a moment in "other"'s colour.  No
# moment shows any colour but those two.
moments = r["whole"]["moments"]
check(len(moments) == 24 and any(0.34 <= blend(m, colors[6]) <= 1.01 for m in moments),
      "the whole run: the temporaries' band is not in the temporary's colour")
check(all(blend(m, colors[6]) >= 0 or blend(m, colors[7]) >= 0 for m in moments),
      "the whole run: the temporaries' band shows a colour of neither the temporaries nor other")
z = r["zoomed"]
check(not z["raster"] and sorted(z["blocks"]) == sorted([[1 << 20, 1 | 8], [1 << 20, 2 | 8], [256 << 10, 5 | 8],
                                                         [512 << 10, 4 | 8], [3 << 20, 3 | 8], [128 << 10, 7]]),
      "zoomed in: the blocks whole, with their roles")
zp = r["zoomed_pixels"]
check([zp[k] for k in "PGIAOX"] == [colors[i] for i in (1, 2, 5, 4, 3, 7)], "zoomed in: the blocks' colours")
h = r["hover_param"].split("\n")
check(h[1:4] == ["scope: net:fc:", "name: net:fc:weight", "role: parameter"], "the parameter's hover text")
PY
echo "$TEST_NAME: OOM button, key, lines, hover and URL; roles' legend, colours and hover as expected"
