#!/bin/sh
# python_api.sh - the memflow Python package in one process, without memflow
# run (tests/python_api.py), with the system interpreter configure chose.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
SCRATCH="$SCRATCH" "$PYTHON" "$top_srcdir/tests/python_api.py" > "$SCRATCH/out.txt" 2>&1 ||
    fail "python_api.py: $(tail -40 "$SCRATCH/out.txt")"
echo "python_api: ok"
