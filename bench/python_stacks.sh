#!/bin/sh
# bench/python_stacks.sh - what Python call stacks cost under memflow run:
# each workload under `memflow run` with python_stacks=0 and with the
# default (and =2 for the profile function), best of REPEATS CPU times.
# Usage: bench/python_stacks.sh MEMFLOW [PYTHON] [REPEATS]
MEMFLOW=${1:?usage: python_stacks.sh MEMFLOW [PYTHON] [REPEATS]}
PYTHON=${2:-/usr/bin/python3}
REPEATS=${3:-3}
here=$(dirname "$0")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for prog in python_stacks_allocs.py python_stacks_torch.py; do
    for setting in 0 1 2; do
        best=
        for _ in $(seq "$REPEATS"); do
            rm -rf "$out/run"
            t=$("$MEMFLOW" run --no-render --no-compact --set python_stacks=$setting -o "$out/run" \
                -- "$PYTHON" "$here/$prog" 2> /dev/null | sed -n 's/^loop_cpu \([0-9.]*\).*/\1/p')
            [ -n "$t" ] || continue
            best=$(echo "$best $t" | awk '{ if ($1 == "" || $2 < $1) print $2; else print $1 }')
        done
        echo "$prog python_stacks=$setting loop_cpu_best=$best"
    done
done
