# tests/python_lib.sh - shared set-up of the Python tests (sourced after
# lib.sh): the interpreter configure chose ($PYTHON, the system python3
# normally) and the build tree's package on PYTHONPATH; skipped (77) when
# memflow was built without Python.
: "${PYTHON:=/usr/bin/python3}"
# A sanitizer build's extension needs ASan first in the interpreter, and
# the tests profile Python under memflow run (the preload): skipped there.
needs_preload
if [ ! -e "$top_builddir/python/memflow/_memflow.abi3.so" ]; then
    echo "SKIP: memflow was built without Python"
    exit 77
fi
PYTHONPATH="$top_builddir/python"
export PYTHONPATH top_builddir
# needs_torch: skip (77) when the interpreter has no torch.
needs_torch() {
    if ! "$PYTHON" -c "import torch" 2> /dev/null; then
        echo "SKIP: no torch for $PYTHON (Debian: python3-torch)"
        exit 77
    fi
}
