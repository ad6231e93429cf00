#!/bin/sh
# bench/import.sh - the speed and memory of `memflow import` of big PyTorch
# memory snapshots (docs/PERFORMANCE.md, "memflow import: PyTorch
# snapshots"), tree against tree, with pickle.load of the same file as the
# yardstick, and a check that the trees' imports are the same.
#
# Usage: bench/import.sh [-e "1000000 4000000"] [-r RUNS] [-c] TREE...
#   TREE: a built memflow source tree (default: this one); the first one's
#   tests/torch_snapshot_gen (make check builds it) writes the snapshots.
#   -e: the sizes in trace entries (default 1000000 4000000);
#   -r: runs per measure, the median printed (default 5);
#   -c: also callgrind's instruction count of each import (exact on a busy
#       machine; about 40 s per million entries).
# Per size, one line per tree and one for python3:
#   import ENTRIES TREE cpu_s=MEDIAN (all runs) entries_per_s=N maxrss_kib=MAX [instructions=N]
#   pickle.load ENTRIES cpu_s=MEDIAN (all runs) maxrss_kib=MAX
#   same ENTRIES: memflow stats --format json of every tree's log, byte for byte
# CPU is user + sys of `memflow import FILE -o DIR --no-render --no-compact`.
set -eu
sizes="1000000 4000000"
runs=5
cg=0
while [ $# -gt 0 ]; do
    case $1 in
    -e) sizes=$2; shift 2 ;;
    -r) runs=$2; shift 2 ;;
    -c) cg=1; shift ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || set -- "$(cd "$(dirname "$0")/.." && pwd)"
gen="$1/tests/torch_snapshot_gen"
[ -x "$gen" ] || { echo "bench/import.sh: no $gen (run make check, or make tests/torch_snapshot_gen)" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# timed CMD...: "cpu_s maxrss_kib" of one run
timed() { /usr/bin/time -f '%U %S %M' -o "$scratch/time" "$@" > /dev/null 2>&1; awk '{printf "%.2f %d\n", $1 + $2, $3}' "$scratch/time"; }
# summary FILE: "MEDIAN (ALL) MAXRSS" of the "cpu rss" lines in FILE
summary() {
    sort -n "$1" | awk '{c[NR] = $1; if ($2 > m) m = $2} END {
        s = ""; for (i = 1; i <= NR; i++) s = s (i > 1 ? " " : "") c[i];
        printf "%s (%s) %d\n", c[int((NR + 1) / 2)], s, m }'
}

for n in $sizes; do
    snap="$scratch/snapshot-$n.pickle"
    "$gen" "$snap" "$n" 2 > /dev/null
    for tree in "$@"; do : > "$scratch/runs-$(echo "$tree" | tr / _)"; done
    : > "$scratch/runs-python"
    i=0
    while [ $i -lt "$runs" ]; do           # interleaved: the machine's load hits all alike
        for tree in "$@"; do
            rm -rf "$scratch/out"
            timed "$tree/memflow" import "$snap" -o "$scratch/out" --no-render --no-compact \
                >> "$scratch/runs-$(echo "$tree" | tr / _)"
        done
        timed /usr/bin/python3 -c "import pickle; pickle.load(open('$snap', 'rb'))" \
            >> "$scratch/runs-python"
        i=$((i + 1))
    done
    ref=""
    for tree in "$@"; do
        s=$(summary "$scratch/runs-$(echo "$tree" | tr / _)")
        med=${s%% *}
        line="import $n $tree cpu_s=${s% *} entries_per_s=$(awk -v n="$n" -v c="$med" 'BEGIN {printf "%d", n / c}') maxrss_kib=${s##* }"
        rm -rf "$scratch/out"
        if [ "$cg" = 1 ]; then
            valgrind --tool=callgrind --callgrind-out-file="$scratch/cg" "$tree/memflow" import \
                "$snap" -o "$scratch/out" --no-render --no-compact > /dev/null 2>&1
            line="$line instructions=$(sed -n 's/^\(summary\|totals\): *//p' "$scratch/cg" | head -1)"
        else
            "$tree/memflow" import "$snap" -o "$scratch/out" --no-render --no-compact 2> /dev/null
        fi
        echo "$line"
        # the log path is in the JSON: every tree's log is read from the same place
        "$tree/memflow" stats --format json "$scratch/out/memflow-import-1.mfl" > "$scratch/stats"
        if [ -z "$ref" ]; then
            ref=$tree
            cp "$scratch/stats" "$scratch/stats-ref"
        elif ! cmp -s "$scratch/stats" "$scratch/stats-ref"; then
            echo "DIFFERENT $n: memflow stats of $tree's import differs from $ref's" >&2
            exit 1
        fi
    done
    s=$(summary "$scratch/runs-python")
    echo "pickle.load $n cpu_s=${s% *} maxrss_kib=${s##* }"
    echo "same $n: memflow stats --format json of every tree's log, byte for byte"
    rm -f "$snap"
done
