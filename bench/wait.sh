#!/bin/bash
# bench/wait.sh - the user's whole wait: `memflow run -- PROG` with the
# defaults (the outputs rendered, the logs compacted), timed as a user
# waits for it, against PROG unprofiled; heaptrack (and memray, where it
# is installed) on the same programs for reference.  Each figure is the
# median of interleaved rounds (every tool once per round), so drift in
# the machine's load hits all alike.  Prints markdown tables.
#
#   1. the allocation churn (bench/churn -u 16-2063): WAIT_PAIRS malloc/free
#      pairs (default 2,000,000 and 20,000,000);
#   2. a PyTorch CPU training loop (bench/python_train.py, Debian's
#      /usr/bin/python3 and its torch) of about WAIT_PYTHON_SECONDS (30);
#   3. the time from the program's exit to memflow run's exit for the
#      churn of WAIT_TAIL_EVENTS events (4, 40 and 400 million; 400 million
#      only where the disk has room for its log);
#   3b. the same tail when the churn is paced at WAIT_PACE operations a
#      second (churn -r; default 2,000,000): a program that allocates
#      steadily for a long time, as a training loop does, so that the
#      analysis during the run can keep up (WAIT_PACED_EVENTS: 40 and 400
#      million; 400 million takes 200 s);
#   4. the small-block churn (bench/churn, glibc's fast case, WAIT_SMALL_OPS
#      operations): memflow's ratio, its cost per event over glibc, and the
#      floor one time stamp per event sets (bench/clockcost).
#
# With WAIT_BASE=OTHER_BUILD_DIR (another build of memflow, e.g. of an
# earlier commit), the churns of 1. also run that build's memflow run with
# the defaults, as the tool memflow-base, in the same interleaved rounds: a
# before-and-after comparison from one run.
#
# Usage: bench/wait.sh [BUILD_DIR]   (or: make bench-wait)
# Knobs: WAIT_RUNS=5 WAIT_SLOW_RUNS=3 (heaptrack, memray) WAIT_TAIL_RUNS=3
#   WAIT_PAIRS="2000000 20000000" WAIT_TAIL_EVENTS="4000000 40000000 400000000"
#   WAIT_PACE=2000000 WAIT_PACED_EVENTS="40000000 400000000"
#   WAIT_PYTHON_SECONDS=30 WAIT_PYTHON_THREADS=1 WAIT_PYTHON=/usr/bin/python3
#   WAIT_SMALL_OPS=20000000 WAIT_HEAPTRACK=1 WAIT_KEEP=1 (keep the scratch folder)
#   WAIT_BASE=OTHER_BUILD_DIR (memflow-base beside memflow in the churns)
#   an empty WAIT_TAIL_EVENTS or WAIT_PACED_EVENTS leaves that table empty
set -euo pipefail

BUILD=$(cd "${1:-.}" && pwd)
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
MEMFLOW="$BUILD/memflow"
CHURN="$BUILD/bench/churn"
TIMEIT="$BUILD/bench/timeit"
CLOCKCOST="$BUILD/bench/clockcost"
RUNS=${WAIT_RUNS:-5}
SLOW_RUNS=${WAIT_SLOW_RUNS:-3}
TAIL_RUNS=${WAIT_TAIL_RUNS:-3}
PAIRS=${WAIT_PAIRS:-"2000000 20000000"}
TAIL_EVENTS=${WAIT_TAIL_EVENTS-"4000000 40000000 400000000"}
PACE=${WAIT_PACE:-2000000}
PACED_EVENTS=${WAIT_PACED_EVENTS-"40000000 400000000"}
PY_SECONDS=${WAIT_PYTHON_SECONDS:-30}
PY_THREADS=${WAIT_PYTHON_THREADS:-1}
PYTHON=${WAIT_PYTHON:-/usr/bin/python3}
SMALL_OPS=${WAIT_SMALL_OPS:-20000000}
HEAPTRACK=${WAIT_HEAPTRACK:-1}
BASE_TOOL=""
if [ -n "${WAIT_BASE:-}" ]; then
    MEMFLOW_BASE="$(cd "$WAIT_BASE" && pwd)/memflow"
    [ -x "$MEMFLOW_BASE" ] || { echo "bench/wait.sh: WAIT_BASE: $MEMFLOW_BASE is not built" >&2; exit 1; }
    BASE_TOOL=memflow-base
fi
OUT=$(mktemp -d "${TMPDIR:-/tmp}/memflow-wait.XXXXXX")

die() { echo "bench/wait.sh: $*" >&2; exit 1; }
note() { echo "bench/wait.sh: $*" >&2; }
for f in "$MEMFLOW" "$CHURN" "$TIMEIT" "$CLOCKCOST"; do
    [ -x "$f" ] || die "$f is not built (make)"
done
command -v heaptrack >/dev/null 2>&1 || HEAPTRACK=0
cleanup() { [ "${WAIT_KEEP:-0}" = 1 ] || rm -rf "$OUT"; }
trap cleanup EXIT

# ---- timing -------------------------------------------------------------------

# time_cmd KEY CMD...: run CMD through bench/timeit -e, append "wall_ns
# max_rss_kib cpu_ns end_ns" to $OUT/times/KEY.
time_cmd() {
    local key=$1
    shift
    mkdir -p "$OUT/times"
    "$TIMEIT" -e "$OUT/times/$key" "$@" >"$OUT/last.out" 2>"$OUT/last.err" ||
        die "$* exited $?: $(tail -3 "$OUT/last.err")"
}

# The median of column COL (1 wall, 2 rss, 3 cpu, 5 tail) of FILE.
median() {
    sort -n -k"$2","$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END {
        if (NR == 0) { print 0; exit }
        print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ms() { awk -v ns="$1" 'BEGIN { printf "%.1f", ns / 1e6 }'; }
secs() { awk -v ns="$1" 'BEGIN { printf "%.2f", ns / 1e9 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# The last line of KEY's times with the program's end (END_FILE: its
# CLOCK_MONOTONIC ns) appended as the time from the program's exit to the
# command's exit: column 5.
add_tail() { # KEY END_FILE
    local f="$OUT/times/$1" end
    [ -s "$2" ] || die "$1: the program wrote no end time into $2"
    end=$(cat "$2")
    tail -n 1 "$f" | awk -v end="$end" '{ printf "%s %s %s %s %.0f\n", $1, $2, $3, $4, $4 - end }' \
        >>"$f.tail"
}

# ---- the tools ----------------------------------------------------------------

# run_tool TOOL KEY CMD...: CMD unprofiled (plain), under memflow run with the
# defaults (memflow), recording only (memflow-record: --no-render
# --no-compact), heaptrack, or memray; the program's end (END_FILE, written
# by CMD) gives the tail.
run_tool() { # TOOL KEY END_FILE CMD...
    local tool=$1 key=$2 end=$3
    shift 3
    local dir="$OUT/$tool"
    rm -rf "$dir" "$end"
    mkdir -p "$dir"
    case $tool in
    plain) time_cmd "$tool-$key" "$@" ;;
    memflow | memflow-base)
        time_cmd "$tool-$key" "$([ "$tool" = memflow ] && echo "$MEMFLOW" || echo "$MEMFLOW_BASE")" \
            run -o "$dir" -- "$@"
        [ -s "$dir/stats.txt" ] || die "memflow run wrote no stats.txt for $*" ;;
    memflow-record) time_cmd "$tool-$key" "$MEMFLOW" run --no-render --no-compact -o "$dir" -- "$@" ;;
    heaptrack) time_cmd "$tool-$key" heaptrack -o "$dir/prog" "$@" ;;
    memray) time_cmd "$tool-$key" "$PYTHON" -m memray run -q -o "$dir/prog.bin" "${@:2}" ;;
    esac
    add_tail "$tool-$key" "$end"
}

# rounds KEY END_FILE "TOOLS" CMD...: RUNS rounds, each tool once (the slow
# ones only in the first SLOW_RUNS).
rounds() {
    local key=$1 end=$2 tools=$3 round tool
    shift 3
    for round in $(seq "$RUNS"); do
        for tool in $tools; do
            case $tool in heaptrack | memray) [ "$round" -le "$SLOW_RUNS" ] || continue ;; esac
            note "$key round $round: $tool"
            run_tool "$tool" "$key" "$end" "$@"
        done
    done
}

table_header() {
    echo "| tool | runs | median wall (s) | wall vs unprofiled | median CPU (s) | CPU vs unprofiled | max RSS (MiB) | program's exit to the tool's exit (s) |"
    echo "|---|---|---|---|---|---|---|---|"
}

rows() { # KEY TOOLS
    local key=$1 tool f base base_cpu
    base=$(median "$OUT/times/plain-$key" 1)
    base_cpu=$(median "$OUT/times/plain-$key" 3)
    for tool in $2; do
        f="$OUT/times/$tool-$key"
        [ -s "$f" ] || continue
        printf '| %s | %s | %s | %sx | %s | %sx | %s | %s |\n' "$tool" "$(wc -l <"$f")" \
            "$(secs "$(median "$f" 1)")" "$(ratio "$(median "$f" 1)" "$base")" \
            "$(secs "$(median "$f" 3)")" "$(ratio "$(median "$f" 3)" "$base_cpu")" \
            "$(awk -v k="$(median "$f" 2)" 'BEGIN { printf "%.0f", k / 1024 }')" \
            "$(secs "$(median "$f.tail" 5)")"
    done
}

# ---- the machine ----------------------------------------------------------------

echo "# memflow: the user's whole wait (bench/wait.sh)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
echo "- memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
echo "- kernel: $(uname -r); $(ldd --version | head -n 1)"
[ "$HEAPTRACK" = 1 ] && echo "- $(heaptrack --version 2>&1 | head -n 1)"
[ -n "$BASE_TOOL" ] && echo "- memflow-base: $MEMFLOW_BASE"
echo "- time stamps: $("$CLOCKCOST")"
echo "- load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

SLOW=""
[ "$HEAPTRACK" = 1 ] && SLOW=heaptrack

# ---- 1. the allocation churn ----------------------------------------------------------

for pairs in $PAIRS; do
    ops=$((2 * pairs))
    echo "## Churn: $pairs malloc/free pairs of 16-2063 bytes (\`churn -u 16-2063 -n $ops\`)"
    echo
    echo "\`memflow\`: \`memflow run -o DIR -- churn ...\` with the defaults (outputs rendered, logs"
    echo "compacted); \`memflow-record\`: \`--no-render --no-compact\`.  Median of $RUNS rounds"
    echo "(heaptrack: $SLOW_RUNS)."
    [ -n "$BASE_TOOL" ] && echo "\`memflow-base\`: the same with $MEMFLOW_BASE."
    echo
    rounds "churn$pairs" "$OUT/end" "plain memflow $BASE_TOOL memflow-record $SLOW" \
        "$CHURN" -q -u 16-2063 -n "$ops" -e "$OUT/end"
    table_header
    rows "churn$pairs" "plain memflow $BASE_TOOL memflow-record $SLOW"
    echo
done

# ---- 2. PyTorch ---------------------------------------------------------------------

echo "## PyTorch CPU training loop (bench/python_train.py, $PY_THREADS thread(s))"
echo
if "$PYTHON" -c 'import torch' 2>/dev/null; then
    # steps for about PY_SECONDS unprofiled
    "$TIMEIT" "$OUT/calibrate" "$PYTHON" "$SRCDIR/bench/python_train.py" 200 "$OUT/end" \
        "$PY_THREADS" >/dev/null 2>&1 || die "python_train.py failed"
    per_step=$(awk '{ print $1 / 200 }' "$OUT/calibrate")
    steps=$(awk -v s="$PY_SECONDS" -v p="$per_step" 'BEGIN { n = int(s * 1e9 / p); print (n > 1 ? n : 1) }')
    echo "$("$PYTHON" --version 2>&1), torch $("$PYTHON" -c 'import torch; print(torch.__version__)'); $steps steps."
    PY_TOOLS="plain memflow $SLOW"
    if "$PYTHON" -c 'import memray' 2>/dev/null; then
        PY_TOOLS="$PY_TOOLS memray"
    else
        echo "memray is not installed for $PYTHON: left out."
    fi
    echo
    rounds python "$OUT/end" "$PY_TOOLS" "$PYTHON" "$SRCDIR/bench/python_train.py" "$steps" \
        "$OUT/end" "$PY_THREADS"
    table_header
    rows python "$PY_TOOLS"
else
    echo "Skipped: $PYTHON has no torch."
fi
echo

# ---- 3. from the program's exit to memflow run's exit --------------------------------

# tail_rows "EVENTS..." [CHURN OPTIONS]: a table row per event count, with
# the events memflow run's analysis read after the program's exit (from
# MEMFLOW_RUN_REPORT's line); the live log must fit on the disk.
tail_rows() {
    local events need free runs round bytes after f
    for events in $1; do
        need=$((events * 24 * 2))
        free=$(df -B1 --output=avail "$OUT" | tail -n 1)
        if [ "$free" -lt "$need" ]; then
            echo "| $events | - | 0 | skipped: $free bytes free in $OUT, the live log needs $need |  |  |"
            continue
        fi
        runs=$TAIL_RUNS
        [ "$events" -ge 400000000 ] && runs=1
        f="$OUT/times/memflow-tail$events${2:+-paced}"
        for round in $(seq "$runs"); do
            note "tail $events ${2:+paced }round $round"
            MEMFLOW_RUN_REPORT=1 run_tool memflow "tail$events${2:+-paced}" "$OUT/end" \
                "$CHURN" -q -u 16-2063 -n "$events" "${@:2}" -e "$OUT/end"
            bytes=$(du -cb "$OUT/memflow"/memflow-*.mfl | tail -n 1 | cut -f1)
            sed -n 's/.* events before the program.s exit, \([0-9]*\) after.*/\1/p' \
                "$OUT/last.err" >>"$f.after"
            rm -rf "$OUT/memflow"
        done
        after=$(sort -n "$f.after" | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }')
        echo "| $events | $bytes | $runs | $(secs "$(median "$f" 1)") | $(secs "$(median "$f.tail" 5)") | $after |"
    done
}

echo "## From the program's exit to memflow run's exit"
echo
echo "\`memflow run\` with the defaults of \`churn -u 16-2063 -n EVENTS\`; median of $TAIL_RUNS"
echo "runs (one at 400 million and above).  The program writes its CLOCK_MONOTONIC at exit"
echo "(\`churn -e\`); bench/timeit notes memflow run's."
echo
echo "| events | log bytes (compact) | runs | memflow run wall (s) | program's exit to memflow run's exit (s) | events the analysis read after the exit |"
echo "|---|---|---|---|---|---|"
tail_rows "$TAIL_EVENTS"
echo
echo "The same churn paced at $PACE operations a second (\`churn -r $PACE\`): a program that"
echo "allocates steadily, so that the analysis during the run (on the core the program leaves"
echo "idle) can keep up with it."
echo
echo "| events | log bytes (compact) | runs | memflow run wall (s) | program's exit to memflow run's exit (s) | events the analysis read after the exit |"
echo "|---|---|---|---|---|---|"
tail_rows "$PACED_EVENTS" -r "$PACE"
echo

# ---- 4. the small-block churn --------------------------------------------------------------

echo "## Small-block churn (\`churn -n $SMALL_OPS\`, glibc's fast case)"
echo
echo "\`memflow-record\`: the capture alone; \`memflow\`: with the defaults."
echo
rounds small "$OUT/end" "plain memflow-record memflow" "$CHURN" -q -n "$SMALL_OPS" -e "$OUT/end"
table_header
rows small "plain memflow-record memflow"
echo
for tool in memflow-record memflow; do
    echo "- $tool: $(awk -v a="$(median "$OUT/times/$tool-small" 1)" \
        -v b="$(median "$OUT/times/plain-small" 1)" -v n="$SMALL_OPS" \
        'BEGIN { printf "%.1f", (a - b) / n }') ns wall per event over glibc"
done
echo "- the floor: one time stamp per event, $("$CLOCKCOST" | sed 's/,.*//')"
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
