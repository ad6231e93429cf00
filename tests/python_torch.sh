#!/bin/sh
# python_torch.sh - memflow.torch in one process (tests/python_torch.py):
# module names, backward scopes, exceptions, threads; skipped without torch.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
needs_torch
SCRATCH="$SCRATCH" "$PYTHON" "$top_srcdir/tests/python_torch.py" > "$SCRATCH/out.txt" 2>&1 ||
    fail "python_torch.py: $(tail -40 "$SCRATCH/out.txt")"
echo "python_torch: ok"
