#!/bin/sh
# bench/instructions.sh - instruction counts (valgrind's callgrind) of the
# recording and of the render, for one build tree or several, so two
# commits compare exactly on any machine, busy or not: callgrind counts
# instructions, the same for the same binary, input and environment.
#
# Usage: bench/instructions.sh [-n OPS] TREE...
#   TREE: a built memflow source tree (default: this one).
# Per tree, two lines:
#   record TREE N  - instructions of bench/churn -n OPS -u 16-2063 under
#                    memflow run --no-render --no-compact (the program only)
#   render TREE N  - instructions of memflow render of that log (defaults;
#                    its largest process: the program, not a wrapper)
set -eu
ops=400000
if [ "${1:-}" = "-n" ]; then ops=$2; shift 2; fi
[ $# -gt 0 ] || set -- "$(cd "$(dirname "$0")/.." && pwd)"
command -v valgrind > /dev/null || { echo "bench/instructions.sh: needs valgrind" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# total FILE: the "summary:" (or "totals:") line of a callgrind file
total() { sed -n 's/^\(summary\|totals\): *//p' "$1" | head -1; }
for tree in "$@"; do
    d="$scratch/$(basename "$tree")"
    mkdir -p "$d/cg"
    (cd "$tree" && valgrind --tool=callgrind --trace-children=yes \
        --callgrind-out-file="$d/cg/record.%p" ./memflow run -o "$d/out" --no-render \
        --no-compact -- bench/churn -n "$ops" -u 16-2063 -q > "$d/record.log" 2>&1)
    for f in "$d"/cg/record.*; do
        if grep -q '^cmd: *bench/churn' "$f"; then echo "record $tree $(total "$f")"; fi
    done
    # children traced: ./memflow may be libtool's wrapper script (older trees)
    (cd "$tree" && valgrind --tool=callgrind --trace-children=yes \
        --callgrind-out-file="$d/cg/render.%p" \
        ./memflow render "$d"/out/memflow-*.mfl -o "$d/render" > "$d/render.log" 2>&1)
    for f in "$d"/cg/render.*; do total "$f"; done | sort -n | tail -1 | sed "s|^|render $tree |"
done
