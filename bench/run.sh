#!/bin/bash
# bench/run.sh - memflow's benchmark, in one session, printed as markdown.
#
# Times bench/churn (2,000,000 malloc/free operations, see bench/churn.c)
# unprofiled (glibc), with jemalloc alone (LD_PRELOAD, for reference), under
# `memflow run --no-render --no-compact` (the live log: bench/compact.sh
# measures compaction; the default, the program handing its log to memflow
# run through the staging file; with MEMFLOW_STAGE=0, the program writing
# its log file itself; and with --stacks), under heaptrack and under
# valgrind massif; with 1 and 2 threads; rounds interleave the tools so
# drift hits all alike.  Then the churn the capture-speed target names
# (2 M malloc/free pairs of 16..2063 bytes: churn -u 16-2063 -n 4000000).
# Checks that memflow kept every event (`memflow stats --format json`), then
# times `memflow render` of logs of 1 M, 10 M and 100 M events, and what
# `memflow serve` costs per request as a log grows.  The tables on stdout
# are what docs/PERFORMANCE.md reports; progress goes to stderr.
#
# Usage: bench/run.sh [BUILDDIR]   (default $top_builddir, else .)
#        `make bench` runs it on the build folder.  It builds nothing.
# Knobs (environment): BENCH_RUNS (5: fast tools), BENCH_SLOW_RUNS (3:
# heaptrack, massif), BENCH_THREADS ("1 2"), BENCH_SHM (1: also memflow
# with its log on /dev/shm), BENCH_LONG_OPS (20000000: the long run that
# separates per-event cost from start-up; 0 skips it), BENCH_CHURN (1; 0
# skips the profilers' comparison: render and serve only), BENCH_RENDER_EVENTS
# ("1000000 10000000 100000000": churn operations, one event each; "" skips),
# BENCH_SERVE_ROUNDS (20; 0 skips) of BENCH_SERVE_EVENTS (500000) events each,
# BENCH_TARGET_OPS (4000000; 0 skips) and BENCH_TARGET_SIZES (16-2063): the
# target's churn,
# BENCH_KEEP=1 keeps the scratch folder BUILDDIR/bench/out (the 100 M-event
# log is 2.4 GB; each log is deleted once timed otherwise).
set -eu

BUILD=$(cd "${1:-${top_builddir:-.}}" && pwd)
CHURN=$BUILD/bench/churn
TIMEIT=$BUILD/bench/timeit
MEMFLOW=$BUILD/memflow
OUT=$BUILD/bench/out
OPS=2000000
RUNS=${BENCH_RUNS:-5}
SLOW_RUNS=${BENCH_SLOW_RUNS:-3}
THREADS=${BENCH_THREADS:-1 2}
LONG_OPS=${BENCH_LONG_OPS:-20000000}
CHURN_PART=${BENCH_CHURN:-1}
RENDER_EVENTS=${BENCH_RENDER_EVENTS-1000000 10000000 100000000}
SERVE_ROUNDS=${BENCH_SERVE_ROUNDS:-20}
SERVE_EVENTS=${BENCH_SERVE_EVENTS:-500000}
SERVE_FEED=$BUILD/tests/serve_feed
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
JEMALLOC=libjemalloc.so.2
TARGET_OPS=${BENCH_TARGET_OPS:-4000000}
TARGET_SIZES=${BENCH_TARGET_SIZES:-16-2063}
CHURN_ARGS=()    # extra churn options of the part being timed
KEY=""           # and the suffix of its times files
TOOLS="plain jemalloc memflow memflow-direct memflow-stacks heaptrack massif"
# memflow-shm: memflow-direct with the log on tmpfs (/dev/shm), to show what
# the file system's page cache costs (BENCH_SHM=0 leaves it out).
SHM_DIR=/dev/shm/memflow-bench-$$
if [ "${BENCH_SHM:-1}" = 1 ] && [ -d /dev/shm ]; then
    TOOLS="plain jemalloc memflow memflow-direct memflow-shm memflow-stacks heaptrack massif"
fi
trap 'rm -rf "$SHM_DIR"' EXIT

die() { echo "bench: $*" >&2; exit 1; }
note() { echo "bench: $*" >&2; }

[ -x "$CHURN" ] && [ -x "$TIMEIT" ] && [ -x "$BUILD/bench/clockcost" ] ||
    die "bench/churn, bench/timeit, bench/clockcost not built: run make in $BUILD"
[ -x "$MEMFLOW" ] || die "$MEMFLOW not built: run make in $BUILD first"
# In a build folder libtool leaves `memflow` as a wrapper shell script that
# costs ~0.2 s per call here; time the real binary, as an installed one runs.
MEMFLOW_CMD=("$MEMFLOW")
if [ -x "$BUILD/.libs/memflow" ] && [ "$(head -c 2 "$MEMFLOW")" = "#!" ]; then
    MEMFLOW_CMD=(env "LD_LIBRARY_PATH=$BUILD/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
                 "$BUILD/.libs/memflow")
fi
for tool in python3 $([ "$CHURN_PART" = 1 ] && echo heaptrack valgrind); do
    command -v "$tool" >/dev/null || die "$tool is not installed"
done
rm -rf "$OUT"
mkdir -p "$OUT"

# The command line of TOOL running churn with THREADS threads and OPS ops.
tool_cmd() { # TOOL THREADS OPS -> sets the array CMD
    local churn=("$CHURN" -t "$2" -n "$3" ${CHURN_ARGS[@]+"${CHURN_ARGS[@]}"})
    case $1 in
    plain) CMD=("${churn[@]}") ;;
    jemalloc) CMD=(env LD_PRELOAD=$JEMALLOC "${churn[@]}") ;;
    memflow) CMD=("${MEMFLOW_CMD[@]}" run --no-render --no-compact -o "$OUT/memflow" -- "${churn[@]}") ;;
    memflow-shm) CMD=(env MEMFLOW_STAGE=0 "${MEMFLOW_CMD[@]}" run --no-render --no-compact
                      -o "$SHM_DIR" -- "${churn[@]}") ;;
    memflow-direct) CMD=(env MEMFLOW_STAGE=0 "${MEMFLOW_CMD[@]}" run --no-render --no-compact
                         -o "$OUT/memflow-direct" -- "${churn[@]}") ;;
    memflow-stacks) CMD=("${MEMFLOW_CMD[@]}" run --no-render --no-compact --stacks -o "$OUT/memflow-stacks"
                         -- "${churn[@]}") ;;
    heaptrack) CMD=(heaptrack -o "$OUT/heaptrack/churn" "${churn[@]}") ;;
    massif) CMD=(valgrind --tool=massif --massif-out-file="$OUT/massif/massif.out"
                 "${churn[@]}") ;;
    *) die "unknown tool $1" ;;
    esac
}

# Run TOOL once; bench/timeit appends "wall_ns max_rss_kib cpu_ns" (cpu =
# user + system, which waiting for a busy core does not inflate) to
# OUT/times/TOOL-THREADS-OPS.
time_once() { # TOOL THREADS OPS
    local tool=$1 log="$OUT/logs/$1-$2-$3$KEY"
    rm -rf "${OUT:?}/$tool" "$SHM_DIR"
    mkdir -p "$OUT/$tool" "$OUT/logs" "$OUT/times"
    tool_cmd "$@"
    "$TIMEIT" "$OUT/times/$tool-$2-$3$KEY" "${CMD[@]}" >"$log.out" 2>"$log.err" ||
        die "$tool (threads $2, ops $3) failed: see $log.err"
}

# Median of column COL (1 = wall ns, 2 = rss KiB, 3 = cpu ns) of a times file.
median() { # FILE COL
    cut -d' ' -f"$2" "$1" | sort -n | awk '{v[NR] = $1}
        END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
minimum() { cut -d' ' -f1 "$1" | sort -n | head -n 1; }
ms() { awk -v ns="$1" 'BEGIN { printf "%.1f", ns / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# A tool's cost per event (ns) over glibc in column COL (1 wall, 3 CPU).
per_event() { # TOOL OPS COL
    awk -v a="$(median "$OUT/times/$1-1-$2$KEY" "$3")" -v b="$(median "$OUT/times/plain-1-$2$KEY" "$3")" \
        -v n="$2" 'BEGIN { printf "%.1f", (a - b) / n }'
}

# Per-event costs over glibc of the 1-thread rows of OPS, and memflow
# with stacks against heaptrack.
per_event_lines() { # OPS
    local tool
    for tool in jemalloc memflow memflow-direct memflow-stacks heaptrack; do
        echo "- $tool: $(per_event "$tool" "$1" 1) ns wall, $(per_event "$tool" "$1" 3)" \
            "ns CPU per event over glibc"
    done
    echo "- memflow-stacks / heaptrack: $(awk -v a="$(per_event memflow-stacks "$1" 1)" \
        -v b="$(per_event heaptrack "$1" 1)" 'BEGIN { printf "%.2f", a / b }') wall," \
        "$(awk -v a="$(per_event memflow-stacks "$1" 3)" \
        -v b="$(per_event heaptrack "$1" 3)" 'BEGIN { printf "%.2f", a / b }') CPU"
    echo
}

# Rounds: every tool once per round, slow tools only in the first rounds.
bench_rounds() { # THREADS OPS TOOLS...
    local t=$1 n=$2 round tool
    shift 2
    for round in $(seq "$RUNS"); do
        for tool in "$@"; do
            case $tool in heaptrack | massif) [ "$round" -le "$SLOW_RUNS" ] || continue ;; esac
            note "threads $t, ops $n, round $round: $tool"
            time_once "$tool" "$t" "$n"
        done
    done
}

# One markdown table row per tool.
print_rows() { # THREADS OPS TOOLS...
    local t=$1 n=$2 tool f base base_cpu
    shift 2
    base=$(median "$OUT/times/plain-$t-$n$KEY" 1)
    base_cpu=$(median "$OUT/times/plain-$t-$n$KEY" 3)
    for tool in "$@"; do
        f="$OUT/times/$tool-$t-$n$KEY"
        [ -s "$f" ] || continue
        local med
        med=$(median "$f" 1)
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$tool" "$t" "$n" \
            "$(wc -l <"$f")" "$(ms "$med")" "$(ms "$(minimum "$f")")" \
            "$(ratio "$med" "$base")x" "$(ms "$(median "$f" 3)")" \
            "$(ratio "$(median "$f" 3)" "$base_cpu")x" "$(median "$f" 2)"
    done
}

table_header() {
    echo "| tool | threads | ops | runs | median wall (ms) | min wall (ms) | wall vs glibc | median CPU (ms) | CPU vs glibc | max RSS (KiB) |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
}

# Check the last memflow log of THREADS/OPS kept every event; print a row.
verify_memflow() { # THREADS OPS
    local log stats
    log=$(ls "$OUT"/memflow/memflow-*.mfl 2>/dev/null | head -n 1)
    [ -n "$log" ] || die "memflow run left no log in $OUT/memflow"
    stats="$OUT/stats-$1-$2.json"
    "${MEMFLOW_CMD[@]}" stats --format json "$OUT"/memflow/memflow-*.mfl >"$stats" ||
        die "memflow stats failed on $log"
    python3 - "$stats" "$1" "$2" "$(stat -c %s "$log")" <<'EOF'
import json, sys
path, threads, ops, log_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
d = json.load(open(path))
cpu = [x for x in d["devices"] if x["device"] == "cpu/0"]
if not cpu:
    sys.exit("bench: %s: no cpu/0 device" % path)
c = cpu[0]
want = ops // 2
if c["alloc_count"] < want or c["free_count"] < want:
    sys.exit("bench: %s: memflow lost events: alloc_count %d, free_count %d, churn made %d of each"
             % (path, c["alloc_count"], c["free_count"], want))
print("| %d | %d | %d (+%d) | %d (+%d) | %d | %d | %.1f |" % (
    threads, ops, c["alloc_count"], c["alloc_count"] - want, c["free_count"],
    c["free_count"] - want, c["live_count_end"], c["peak_bytes"],
    log_bytes / (c["alloc_count"] + c["free_count"])))
EOF
}

# Sizes of the files each profiler left after its last run.
output_sizes() {
    local f
    for f in "$OUT"/memflow/* "$OUT"/memflow-stacks/* "$OUT"/heaptrack/* "$OUT"/massif/*; do
        [ -f "$f" ] && printf '| %s | %s |\n' "${f#"$OUT"/}" "$(stat -c %s "$f")"
    done
    return 0
}

machine() {
    echo "## Machine and tools"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
    echo "- memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "- kernel: $(uname -r); $(ldd --version | head -n 1)"
    [ "$CHURN_PART" = 1 ] &&
        echo "- jemalloc $(pkg-config --modversion jemalloc 2>/dev/null || echo '?');" \
            "$(heaptrack --version 2>&1 | head -n 1); $(valgrind --version)"
    echo "- churn: $("$CHURN" -t 1 -n "$OPS")"
    echo "- time stamps: $("$BUILD/bench/clockcost")"
    echo "- load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
}

machine
if [ "$CHURN_PART" = 1 ]; then
echo "## malloc/free churn, $OPS operations"
echo
echo "Median of $RUNS runs (heaptrack, massif: $SLOW_RUNS), rounds interleaved."
echo
table_header
verify_rows=""
for t in $THREADS; do
    bench_rounds "$t" "$OPS" $TOOLS
    print_rows "$t" "$OPS" $TOOLS
    verify_rows+=$(verify_memflow "$t" "$OPS")$'\n'
    sizes=$(output_sizes)
done
echo
echo "### Every event kept (last memflow run of each row, \`memflow stats --format json\`)"
echo
echo "| threads | ops | cpu/0 alloc_count (+ beyond churn) | free_count (+) | live at end | peak bytes | log bytes/event |"
echo "|---|---|---|---|---|---|---|"
printf '%s' "$verify_rows"
echo
# What memflow run records in any program (the loader and memflow's own
# libraries at start-up): /bin/true has no malloc of its own.
rm -rf "$OUT/true"
"${MEMFLOW_CMD[@]}" run --no-render --no-compact -o "$OUT/true" -- /bin/true || die "memflow run -- /bin/true failed"
"${MEMFLOW_CMD[@]}" stats --format json "$OUT"/true/memflow-*.mfl 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = [x for x in d["devices"] if x["device"] == "cpu/0"][0]
print("Baseline: `memflow run -- /bin/true` records %d allocation(s) (%d bytes) and %d free(s);"
      " churn itself adds 2 callocs per thread (its tables) and stdio'"'"'s buffer."
      % (c["alloc_count"], c["alloc_bytes"], c["free_count"]))'
echo
echo "### Files left by the last run of each profiler ($t threads)"
echo
echo "| file | bytes |"
echo "|---|---|"
echo "$sizes"
echo

if [ "$LONG_OPS" != 0 ]; then
    echo "## Long churn, $LONG_OPS operations, 1 thread (start-up cost amortised)"
    echo
    table_header
    RUNS_SAVED=$RUNS
    RUNS=$SLOW_RUNS
    bench_rounds 1 "$LONG_OPS" plain jemalloc memflow memflow-direct memflow-stacks heaptrack
    RUNS=$RUNS_SAVED
    print_rows 1 "$LONG_OPS" plain jemalloc memflow memflow-direct memflow-stacks heaptrack
    echo
    per_event_lines "$LONG_OPS"
    echo "| threads | ops | cpu/0 alloc_count (+ beyond churn) | free_count (+) | live at end | peak bytes | log bytes/event |"
    echo "|---|---|---|---|---|---|---|"
    verify_memflow 1 "$LONG_OPS"
    echo
fi
if [ "$TARGET_OPS" != 0 ]; then
    echo "## The target's churn: $((TARGET_OPS / 2)) malloc/free pairs of $TARGET_SIZES bytes, 1 thread"
    echo
    echo "\`churn -u $TARGET_SIZES -n $TARGET_OPS\`: the churn the capture-speed target names."
    echo "Median of $RUNS runs (heaptrack: $SLOW_RUNS), rounds interleaved."
    echo
    table_header
    CHURN_ARGS=(-u "$TARGET_SIZES")
    KEY=-u
    bench_rounds 1 "$TARGET_OPS" plain jemalloc memflow memflow-direct memflow-stacks heaptrack
    print_rows 1 "$TARGET_OPS" plain jemalloc memflow memflow-direct memflow-stacks heaptrack
    echo
    per_event_lines "$TARGET_OPS"
    echo "| threads | ops | cpu/0 alloc_count (+ beyond churn) | free_count (+) | live at end | peak bytes | log bytes/event |"
    echo "|---|---|---|---|---|---|---|"
    verify_memflow 1 "$TARGET_OPS"
    echo
    CHURN_ARGS=()
    KEY=""
fi
fi   # CHURN_PART

# Render: a log of N events (churn under memflow run with N operations: N/2
# mallocs, N/2 frees), then `memflow render` of it with the default outputs,
# timed once; the log is deleted after (BENCH_KEEP=1 keeps it).
if [ -n "$RENDER_EVENTS" ]; then
    echo "## memflow render"
    echo
    echo "Default outputs (memory_flow.svg, profile.json, stats.txt); CPU = user + system."
    echo
    echo "| churn ops | events in log | log bytes | render wall (s) | render CPU (s) | CPU s per M events | max RSS (MiB) | outputs (bytes) |"
    echo "|---|---|---|---|---|---|---|---|"
    for ops in $RENDER_EVENTS; do
        dir="$OUT/render-$ops"
        note "render: generating a log of $ops events"
        "${MEMFLOW_CMD[@]}" run --no-render --no-compact -o "$dir" -- "$CHURN" -q -n "$ops" ||
            die "memflow run of churn -n $ops failed"
        log=$(ls "$dir"/memflow-*.mfl | head -n 1)
        events=$("${MEMFLOW_CMD[@]}" stats --format json "$log" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(x["alloc_count"] + x["free_count"] for x in d["devices"]))')
        note "render: rendering $log"
        "$TIMEIT" "$dir/time" "${MEMFLOW_CMD[@]}" render "$log" -o "$dir/out" \
            >"$dir/render.out" 2>"$dir/render.err" || die "memflow render failed: see $dir/render.err"
        read -r wall rss cpu <"$dir/time"
        outputs=$(cd "$dir/out" && for f in *; do printf '%s %s, ' "$f" "$(stat -c %s "$f")"; done)
        printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$ops" "$events" "$(stat -c %s "$log")" \
            "$(awk -v ns="$wall" 'BEGIN { printf "%.2f", ns / 1e9 }')" \
            "$(awk -v ns="$cpu" 'BEGIN { printf "%.2f", ns / 1e9 }')" \
            "$(awk -v ns="$cpu" -v e="$events" 'BEGIN { printf "%.3f", ns / 1e9 / (e / 1e6) }')" \
            "$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }')" \
            "${outputs%, }"
        [ "${BENCH_KEEP:-0}" = 1 ] || rm -f "$log"
    done
    echo
fi

# Serve: a program records rounds of SERVE_EVENTS events (half allocations,
# half frees; tests/serve_feed) into its live log while one `memflow serve`
# answers a stats request after each round; each request is timed, with the
# records it read (the server's status), and now and then the whole log is
# read again by `memflow stats` (what each dump cost before serve).
if [ "$SERVE_ROUNDS" != 0 ]; then
    echo "## memflow serve: dumps during a long run"
    echo
    if [ ! -x "$SERVE_FEED" ]; then
        echo "Skipped: $SERVE_FEED is not built (make builds it)."
    else
        rm -rf "$OUT/serve"
        mkdir -p "$OUT/serve"
        note "serve: $SERVE_ROUNDS rounds of $SERVE_EVENTS events"
        python3 - "${MEMFLOW_CMD[@]}" -- "$SERVE_FEED" "$OUT/serve" "$SERVE_ROUNDS" \
            "$SERVE_EVENTS" "$SRCDIR/tests" <<'PY' || die "serve benchmark failed"
import subprocess, sys, time

args = sys.argv[1:]
memflow = args[:args.index("--")]
feed_prog, scratch, rounds, per_round, tests = args[args.index("--") + 1:]
rounds, half = int(rounds), int(per_round) // 2
sys.dont_write_bytecode = True
sys.path.insert(0, tests)
from serve_client import Session

session = Session(memflow, feed_prog, scratch)
log = session.log

def stats():
    status, body = session.ask("stats", "table", "total", "0", "0")
    assert status == "ok", body

print("| round | events in log | stats request (ms) | records read by it | whole log again: memflow stats (ms) |")
print("|---|---|---|---|---|")
total = 0
before = session.counts()["records_scanned"]
for r in range(1, rounds + 1):
    session.record("alloc %d" % half)
    session.record("free %d" % half)
    total += 2 * half
    t = time.perf_counter()
    stats()                                    # reads what the round added, then answers
    ms = (time.perf_counter() - t) * 1e3
    after = session.counts()["records_scanned"]   # (nothing new since: reads nothing)
    read, before = after - before, after
    again = ""
    if r in (1, rounds // 2, rounds):
        t = time.perf_counter()
        subprocess.run(memflow + ["stats", log], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        again = "%.0f" % ((time.perf_counter() - t) * 1e3)
    print("| %d | %d | %.1f | %d | %s |" % (r, total, ms, read, again))
session.close()
PY
    fi
    echo
fi
rm -rf "$SHM_DIR"
[ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$OUT"
echo "Load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)."
note "done"
