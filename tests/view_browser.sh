#!/bin/sh
# view_browser.sh - `memflow view` in a real browser: a real program
# (view_workload) runs under `memflow run --stacks`; `memflow view` serves
# its run; headless Chromium, driven by playwright-core (tests/view), opens
# the page and zooms to the program's 777777-byte block and reads its hover
# text (exact size, scope, site), toggles that scope off and checks the
# pixels there, selects a range and checks the flame graph's leaf frame,
# and follows a second run while its program still allocates; the run's
# blocks on cpu/0, gpu/0 and gpu/1 get one lane per device, and a run of
# three processes one lane each, titled with its program.  The server
# must refuse a wrong token and a foreign Host.  Skips (77) only where
# chromium, node or playwright-core are missing.
. "$top_srcdir/tests/lib.sh"
needs_preload
needs_browser
W="$top_builddir/tests/view_workload"
"$MEMFLOW" run --stacks -o "$SCRATCH/run" -- "$W" > "$SCRATCH/run.log" 2>&1 ||
    fail "memflow run exited $?: $(tail -3 "$SCRATCH/run.log")"

trap 'view_stop done; view_stop grow; view_stop procs; kill "$grow_pid" 2>/dev/null || true' EXIT

view_serve "$SCRATCH/run" done
# several processes: a parent that runs proc_workload hold twice
P="$top_builddir/tests/proc_workload"
"$MEMFLOW" run -o "$SCRATCH/procs" -- "$P" spawn 2 "$P" hold 123456 > "$SCRATCH/procs.log" 2>&1 ||
    fail "memflow run of proc_workload exited $?: $(tail -3 "$SCRATCH/procs.log")"
view_serve "$SCRATCH/procs" procs
[ -f "$SCRATCH/run/$(cd "$SCRATCH/run" && ls memflow-*.mfl | head -1).mfi" ] ||
    fail "no index beside the log"
# the growing run: its program waits for $SCRATCH/go before its last allocation
"$MEMFLOW" run -o "$SCRATCH/grow" -- "$W" "$SCRATCH/go" > "$SCRATCH/grow.log" 2>&1 &
grow_pid=$!
for i in $(seq 1 100); do
    ls "$SCRATCH/grow"/memflow-*.mfl > /dev/null 2>&1 && break
    sleep 0.1
done
sleep 0.5
view_serve "$SCRATCH/grow" grow

NODE_PATH="$top_srcdir/tests/view/node_modules" CHROMIUM="$CHROMIUM" SCRATCH="$SCRATCH" \
    "$NODE" "$top_srcdir/tests/view_browser.js" "$(cat "$SCRATCH/done.url")" \
    "$(cat "$SCRATCH/grow.url")" "$SCRATCH/go" "$(cat "$SCRATCH/procs.url")" > "$SCRATCH/browser.json" \
    2> "$SCRATCH/browser.err" || fail "the browser test failed: $(tail -20 "$SCRATCH/browser.err")"
wait "$grow_pid" || fail "the growing run exited $?"
pids=$(cd "$SCRATCH/procs" && ls memflow-*.mfl | sed 's/memflow-\([0-9]*\).*/\1/' | sort -un | tr '\n' ' ')
"$PYTHON3" - "$SCRATCH/browser.json" "$pids" <<'PY' || fail "what the browser saw is wrong (see above)"
import json, sys
r = json.load(open(sys.argv[1]))
pids = [int(p) for p in sys.argv[2].split()]
def check(cond, what):
    if not cond:
        print("view_browser: " + what + ": " + json.dumps(r, indent=1), file=sys.stderr)
        sys.exit(1)
tip = r["hover"].split("\n")
check(tip[0] == "requested 777,777 B (759.5 KiB), actual %s B" % format(r["big"]["actual"], ","),
      "hover size")
check(tip[1] == "scope: view_big:", "hover scope")
check(tip[2].startswith("site: make_big (view_workload.c:"), "hover site")
check(r["pixel_on"] == r["big_color"], "the block's pixel before the toggle")
check(r["pixel_off"] == [244, 244, 244], "the block's pixel with its scope off")
check(r["flame_leaf"] == "make_big: 777,777 B", "the flame graph's leaf")
check(r["grew_top"] == ["view_big:", "777,777"], "the scope that grew in the range")
check(r["wrong_token"] == 403 and r["bad_token"] == 400, "a wrong token is refused")
check(r["foreign_host"] == 403 and r["foreign_origin"] == 403, "a foreign Host/Origin is refused")
check(r["page_no_token"] == 403, "the page without its token")
check(any(s.startswith("view_late: ") for s in r["followed_scopes"]), "the growing log was not followed")
check(sorted(l[0] for l in r["done_lanes"]) == ["cpu/0", "gpu/0", "gpu/1"], "one lane per device")
check(sorted(l[1:] for l in r["done_lanes"] if l[0] != "cpu/0") == [[1, 1 << 20], [1, 2 << 20]],
      "the GPU lanes' blocks and peaks")
lanes = r["lanes"]
check(len(pids) == 3 and sorted(l["pid"] for l in lanes) == pids, "one lane per process")
check(all(l["device"] == "cpu/0" for l in lanes), "the lanes' device")
kids = [l for l in lanes if " spawn 2 " not in l["title"]]
check(len(kids) == 2 and all(l["leak"] == 123456 and "proc_workload hold 123456" in l["title"] for l in kids),
      "each child's lane: its program after exec and its 123456 bytes never freed")
PY
echo "$TEST_NAME: hover, scope toggle, flame graph, following and refusals as expected"
