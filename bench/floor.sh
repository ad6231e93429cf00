#!/bin/bash
# bench/floor.sh - whether the whole wait's goals (docs/PERFORMANCE.md, "The
# whole wait") can be met on this machine by an exact analysis of memflow's
# logs: the CPU a goal leaves per event, against the least that reading the
# log, pairing each free with its allocation and compacting the log cost
# per event here.
#
# For each churn (bench/churn -u 16-2063, FLOOR_PAIRS malloc/free pairs):
#   - its wall time unprofiled, and under `memflow run --no-render
#     --no-compact` (the capture alone: the program and memflow run's copy
#     of its staged chunks), wall and CPU; medians of FLOOR_RUNS, interleaved;
#   - under `memflow run` with the defaults (the same rounds), for reference;
#   - bench/floor of the captured log: memflow's reader alone (read), and
#     with the pairing (read + pair), CPU ns per event;
#   - `memflow compact` of a copy of that log, CPU ns per event.
# A goal allows a wall time T: a ratio to the unprofiled wall (FLOOR_GOALS,
# "PAIRS:RATIO ...", the issue's 2.0 and 1.3), or the capture's wall plus
# 1 s (outputs within a second of the program's exit).  What is left per
# event is T times the cores (nproc), minus the capture's CPU, over the
# events: the CPU everything after the capture may take (reading, the
# model, the outputs, the compaction), even with every core kept busy.
#
# Usage: bench/floor.sh [BUILD_DIR]   (or: make bench-floor)
# Knobs: FLOOR_PAIRS="2000000 20000000" FLOOR_RUNS=5
#   FLOOR_GOALS="2000000:2.0 20000000:1.3"
set -euo pipefail

BUILD=$(cd "${1:-.}" && pwd)
MEMFLOW="$BUILD/memflow"
CHURN="$BUILD/bench/churn"
TIMEIT="$BUILD/bench/timeit"
FLOOR="$BUILD/bench/floor"
PAIRS=${FLOOR_PAIRS:-"2000000 20000000"}
RUNS=${FLOOR_RUNS:-5}
GOALS=${FLOOR_GOALS:-"2000000:2.0 20000000:1.3"}
CORES=$(nproc)
for f in "$MEMFLOW" "$CHURN" "$TIMEIT" "$FLOOR"; do
    [ -x "$f" ] || { echo "bench/floor.sh: $f is not built (make all bench/floor)" >&2; exit 1; }
done
OUT=$(mktemp -d "${TMPDIR:-/tmp}/memflow-floor.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

# median FILE COL: the median of column COL (1 wall ns, 3 CPU ns) of FILE.
median() {
    awk -v c="$2" '{ print $c }' "$1" | sort -n |
        awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# goal_of PAIRS: the issue's ratio for that churn, or nothing.
goal_of() {
    for g in $GOALS; do
        [ "${g%%:*}" = "$1" ] && { echo "${g#*:}"; return; }
    done
    return 0
}

row() {   # row LABEL ALLOWED_NS CAPTURE_CPU_NS EVENTS FLOOR_NS NOW_NS
    awk -v l="$1" -v t="$2" -v c="$3" -v n="$4" -v fl="$5" -v now="$6" -v k="$CORES" 'BEGIN {
        left = (t * k - c) / n
        printf "| %s | %.2f | %.1f | %.1f | %.1f | %s |\n", l, t / 1e9, left, fl, now,
            (left >= fl ? sprintf("yes: %.1f left for the model and the outputs", left - fl) : sprintf("no: the floor alone is %.1fx what is left", (left > 0 ? fl / left : 999)))
    }'
}

echo "Cores: $CORES.  Medians of $RUNS interleaved runs; CPU in ns per event."
echo
echo "| churn pairs | events | unprofiled wall (s) | capture wall (s) | capture CPU (s) | defaults wall (s) | read | read + pair | compaction | floor: read + pair + compaction | memflow run now, after the capture |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for pairs in $PAIRS; do
    events=$((2 * pairs))
    args=(-u 16-2063 -n "$events" -q)
    for r in $(seq "$RUNS"); do
        "$TIMEIT" "$OUT/plain-$pairs" "$CHURN" "${args[@]}"
        rm -rf "$OUT/capture"
        "$TIMEIT" "$OUT/capture-$pairs" "$MEMFLOW" run --no-render --no-compact -o "$OUT/capture" \
            -- "$CHURN" "${args[@]}"
        rm -rf "$OUT/defaults"
        "$TIMEIT" "$OUT/defaults-$pairs" "$MEMFLOW" run -o "$OUT/defaults" -- "$CHURN" "${args[@]}" \
            > /dev/null 2>&1
    done
    rm -rf "$OUT/defaults"
    log=$(ls "$OUT"/capture/memflow-*.mfl)
    read -r _ n _ read_ns _ pair_ns _ < <("$FLOOR" -r "$RUNS" "$log")
    for r in $(seq "$RUNS"); do
        cp "$log" "$OUT/copy.mfl"
        "$TIMEIT" "$OUT/compact-$pairs" "$MEMFLOW" compact "$OUT/copy.mfl" > /dev/null 2>&1
        rm -f "$OUT/copy.mfl"
    done
    rm -rf "$OUT/capture"
    w0=$(median "$OUT/plain-$pairs" 1)
    wc=$(median "$OUT/capture-$pairs" 1)
    cc=$(median "$OUT/capture-$pairs" 3)
    wd=$(median "$OUT/defaults-$pairs" 1)
    cd=$(median "$OUT/defaults-$pairs" 3)
    comp=$(awk -v c="$(median "$OUT/compact-$pairs" 3)" -v n="$n" 'BEGIN { printf "%.1f", c / n }')
    fl=$(awk -v a="$pair_ns" -v b="$comp" 'BEGIN { printf "%.1f", a + b }')
    now=$(awk -v d="$cd" -v c="$cc" -v n="$n" 'BEGIN { printf "%.1f", (d - c) / n }')
    echo "| $pairs | $n | $(awk -v w="$w0" 'BEGIN { printf "%.2f", w / 1e9 }') |" \
        "$(awk -v w="$wc" 'BEGIN { printf "%.2f", w / 1e9 }') |" \
        "$(awk -v w="$cc" 'BEGIN { printf "%.2f", w / 1e9 }') |" \
        "$(awk -v w="$wd" 'BEGIN { printf "%.2f", w / 1e9 }') |" \
        "$read_ns | $pair_ns | $comp | $fl | $now |"
    echo "$pairs $n $w0 $wc $cc $fl $now" >> "$OUT/rows"
done
echo
echo "What a goal leaves per event (CPU ns): the wall time it allows times $CORES cores, minus the"
echo "capture's CPU, over the events."
echo
echo "| goal | wall allowed (s) | CPU left per event | floor per event | memflow run now | the floor fits in what is left |"
echo "|---|---|---|---|---|---|"
while read -r pairs n w0 wc cc fl now; do
    goal=$(goal_of "$pairs")
    if [ -n "$goal" ]; then
        row "churn $pairs pairs <= ${goal}x unprofiled" \
            "$(awk -v w="$w0" -v g="$goal" 'BEGIN { printf "%.0f", w * g }')" "$cc" "$n" "$fl" "$now"
    fi
    row "churn $pairs pairs: outputs <= 1 s after the exit" "$((wc + 1000000000))" "$cc" "$n" \
        "$fl" "$now"
done < "$OUT/rows"
