#!/bin/sh
# bench/view.sh [OPS...] - `memflow view` at scale: for each size (events;
# default 1000 and 10000000; 100000000 too where disk and time allow) a log
# of bench/churn -n OPS made by `memflow run --no-render`, then
#   render_s   `memflow render` of the log (memory_flow.svg), wall seconds;
#   index_s    `memflow view --rebuild` from start to its URL (the index built);
#   first_s    a reused index: start to URL plus the page's first answers
#              (meta, occupancy, window of the whole run), wall seconds;
#   p50/p95_ms 100 window requests at random zooms and places, and 100
#              range (hover/flame) requests, answered by the server (curl);
#   rss_mb     the server's peak resident memory (VmHWM) after them.
# Run from the build folder after `make`.  Prints one line per size; the
# figures are this machine's at this moment: quiet-machine runs only.
set -eu
OPS=${*:-"1000 10000000"}
OUT=${BENCH_OUT:-bench-view-out}
M=./memflow
now() { date +%s.%N; }
rm -rf "$OUT" && mkdir -p "$OUT"
printf '%-10s %9s %9s %9s %8s %8s %8s %8s\n' events render_s index_s first_s p50_ms p95_ms \
    range_ms rss_mb
for n in $OPS; do
    d="$OUT/$n"
    "$M" run --no-render -o "$d" -- ./bench/churn -n "$n" > /dev/null 2>&1
    log=$(ls "$d"/memflow-*.mfl | head -1)
    t=$(now); "$M" render -o "$d/r" --formats memory_flow.svg "$log" > /dev/null 2>&1; t2=$(now)
    render_s=$(echo "$t2 - $t" | bc)
    for pass in build reuse; do
        extra=; [ $pass = build ] && extra=--rebuild
        t=$(now)
        "$M" view "$log" --no-open $extra > "$d/$pass.out" 2> "$d/$pass.err" &
        pid=$!
        while ! grep -q http "$d/$pass.out" 2>/dev/null; do sleep 0.01; done
        t_url=$(now)
        url=$(grep -o 'http://[^ ]*' "$d/$pass.out")
        base=${url%%/?token=*}
        tok=${url#*token=}
        if [ $pass = build ]; then
            index_s=$(echo "$t_url - $t" | bc)
            kill $pid; wait $pid 2>/dev/null || true
            continue
        fi
        t1=$(curl -s "$base/api/meta?token=$tok" | python3 -c 'import json,sys; print(json.load(sys.stdin)["t1"])')
        curl -s -o /dev/null "$base/api/occupancy?token=$tok&view=0&t0=0&t1=$t1&cols=1200"
        curl -s -o /dev/null "$base/api/window?token=$tok&view=0&level=20&t0=0&t1=$t1&a0=0&a1=18446744073709551615"
        first_s=$(echo "$(now) - $t" | bc)
        python3 - "$base" "$tok" "$t1" "$d" <<'PY'
import json, random, sys, time, urllib.request
base, tok, t1, d = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
random.seed(1)
def get(path):
    t = time.perf_counter()
    urllib.request.urlopen(base + path + "&token=" + tok).read()
    return (time.perf_counter() - t) * 1000
meta = json.loads(urllib.request.urlopen(base + "/api/meta?token=" + tok).read())
w, g = meta["wshift"], meta["gshift"]
win, rng = [], []
for i in range(100):
    span = max(1000, int(t1 / 2 ** random.uniform(0, 20)))
    t0 = random.randint(0, max(0, t1 - span))
    lvl = 0
    while lvl < 39 and 2 ** (w + lvl) < span / 600:
        lvl += 1
    win.append(get("/api/window?view=0&level=%d&t0=%d&t1=%d&a0=0&a1=18446744073709551615"
                   % (-1 if lvl == 0 else lvl, t0, t0 + span)))
    rng.append(get("/api/range?view=0&t0=%d&t1=%d" % (t0, t0 + span)))
win.sort(); rng.sort()
open(d + "/lat", "w").write("%.1f %.1f %.1f\n" % (win[49], win[94], rng[94]))
PY
        rss=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
        kill $pid; wait $pid 2>/dev/null || true
    done
    read p50 p95 r95 < "$d/lat"
    printf '%-10s %9.2f %9.2f %9.2f %8s %8s %8s %8d\n' "$n" "$render_s" "$index_s" "$first_s" \
        "$p50" "$p95" "$r95" $((rss / 1024))
done
[ -n "${BENCH_KEEP:-}" ] || rm -rf "$OUT"
