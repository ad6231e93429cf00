#!/bin/sh
# bench/view.sh [OPS...] - `memflow view` at scale, on logs of bench/churn
# -n OPS made by `memflow run --no-render` (default sizes: 1000 10000000;
# 100000000 too where the disk has room: its log is 2.4 GB before it is
# compacted to about 0.22 GB, its index about 0.7 GB).  Per size:
#   render     `memflow render` of the log (default outputs): CPU s, peak RSS
#   index      `memflow view --index-only --rebuild`: CPU s, peak RSS, bytes
#   browser    bench/view_browser.js (headless Chromium): the first picture
#              from a reused index (ms from starting memflow view), then
#              BENCH_VIEW_ROUNDS (100) rounds of zoom, pan and hover, each
#              timed from the input to the answer drawn: p50/p95 ms; the
#              page's largest JS heap; the server's peak RSS.
# CPU and RSS come from bench/timeit (user + system of the command).  Run
# from the build folder after `make`; needs node, chromium and
# tests/view/node_modules (bootstrap.sh).  Prints one line per size and the
# browser's JSON; the figures are this machine's at this moment: publish
# only quiet-machine runs.  BENCH_KEEP=1 keeps the logs (bench-view-out/).
set -eu
OPS=${*:-"1000 10000000"}
OUT=${BENCH_OUT:-bench-view-out}
ROUNDS=${BENCH_VIEW_ROUNDS:-100}
M=./memflow
src=$(dirname "$0")
rm -rf "$OUT" && mkdir -p "$OUT"
cpu() { awk '{printf "%.2f", $3 / 1e9}' "$1"; }
rss() { awk '{printf "%d", $2 / 1024}' "$1"; }
printf '%-10s %9s %10s %9s %10s %10s\n' events render_cpu render_mib index_cpu index_mib index_mb
for n in $OPS; do
    d="$OUT/$n"
    "$M" run --no-render -o "$d" -- ./bench/churn -q -n "$n" > /dev/null 2>&1
    log=$(ls "$d"/memflow-*.mfl | head -1)
    ./bench/timeit "$d/render.time" "$M" render -o "$d/r" "$log" > /dev/null 2>&1
    ./bench/timeit "$d/index.time" "$M" view --index-only --rebuild "$log" 2> /dev/null
    printf '%-10s %9s %10s %9s %10s %10s\n' "$n" "$(cpu "$d/render.time")" "$(rss "$d/render.time")" \
        "$(cpu "$d/index.time")" "$(rss "$d/index.time")" \
        "$(($(wc -c < "$log.mfi") / 1000000))"
    NODE_PATH="$src/../tests/view/node_modules" CHROMIUM=${CHROMIUM:-/usr/bin/chromium} \
        node "$src/view_browser.js" "$M" "$log" "$ROUNDS"
    [ -n "${BENCH_KEEP:-}" ] || rm -rf "$d"
done
[ -n "${BENCH_KEEP:-}" ] || rm -rf "$OUT"
