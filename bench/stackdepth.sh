#!/bin/bash
# bench/stackdepth.sh - what call stacks cost by stack depth (the table
# "Cost by depth" of docs/PERFORMANCE.md): bench/stackdepth D N (recursion D
# deep, then N malloc/free pairs of 32 bytes, built -O2 -fomit-frame-pointer)
# unprofiled, under `memflow run` without and with --stacks, and under
# heaptrack, for D = 0 and 30; rounds interleaved, medians; per event = per
# malloc or free, over the unprofiled run.
#
# Usage: bench/stackdepth.sh [BUILDDIR]   (`make bench-stacks`)
# Knobs: BENCH_RUNS (3), BENCH_DEPTH_OPS (2000000 pairs), BENCH_DEPTHS ("0 30").
set -eu
BUILD=$(cd "${1:-${top_builddir:-.}}" && pwd)
# the real binary, not libtool's wrapper script (as bench/run.sh does)
MEMFLOW=("$BUILD/memflow")
if [ -x "$BUILD/.libs/memflow" ] && [ "$(head -c 2 "$BUILD/memflow")" = "#!" ]; then
    MEMFLOW=(env "LD_LIBRARY_PATH=$BUILD/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$BUILD/.libs/memflow")
fi
PROG=$BUILD/bench/stackdepth
TIMEIT=$BUILD/bench/timeit
RUNS=${BENCH_RUNS:-3}
N=${BENCH_DEPTH_OPS:-2000000}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
command -v heaptrack > /dev/null || { echo "heaptrack is not installed" >&2; exit 1; }

run_tool() { # TOOL DEPTH: one timed run, appended to $OUT/TOOL-DEPTH
    local dir="$OUT/run"
    rm -rf "$dir" && mkdir -p "$dir"
    case $1 in
    plain) cmd=("$PROG" "$2" "$N") ;;
    memflow) cmd=("${MEMFLOW[@]}" run --no-render --no-compact -o "$dir" -- "$PROG" "$2" "$N") ;;
    memflow-stacks) cmd=("${MEMFLOW[@]}" run --no-render --no-compact --stacks -o "$dir" -- "$PROG" "$2" "$N") ;;
    heaptrack) cmd=(heaptrack -o "$dir/h" "$PROG" "$2" "$N") ;;
    esac
    "$TIMEIT" "$OUT/$1-$2" "${cmd[@]}" > /dev/null 2>&1
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { awk -v f="$2" '{ print $f }' "$OUT/$1"; }   # FILE FIELD (1 wall_ns, 3 cpu_ns)

TOOLS="plain memflow memflow-stacks heaptrack"
for depth in ${BENCH_DEPTHS:-0 30}; do
    for _ in $(seq "$RUNS"); do
        for tool in $TOOLS; do run_tool "$tool" "$depth"; done
    done
done
echo "| stack depth (D) | memflow CPU / wall ns | memflow --stacks CPU / wall ns | heaptrack CPU / wall ns | stacks / heaptrack CPU, wall |"
echo "|---|---|---|---|---|"
for depth in ${BENCH_DEPTHS:-0 30}; do
    base_cpu=$(field "plain-$depth" 3 | median) base_wall=$(field "plain-$depth" 1 | median)
    row="| $depth |"
    for tool in memflow memflow-stacks heaptrack; do
        cpu=$(field "$tool-$depth" 3 | median) wall=$(field "$tool-$depth" 1 | median)
        c=$(awk -v a="$cpu" -v b="$base_cpu" -v n="$N" 'BEGIN { printf "%.1f", (a - b) / (2 * n) }')
        w=$(awk -v a="$wall" -v b="$base_wall" -v n="$N" 'BEGIN { printf "%.1f", (a - b) / (2 * n) }')
        row="$row $c / $w |"
        eval "c_${tool//-/_}=$c w_${tool//-/_}=$w"
    done
    row="$row $(awk -v s="$c_memflow_stacks" -v h="$c_heaptrack" -v sw="$w_memflow_stacks" -v hw="$w_heaptrack" \
        'BEGIN { printf "%.2f, %.2f", s / h, sw / hw }') |"
    echo "$row"
done
