#!/bin/sh
# python_interpreters.sh - `memflow run` makes `import memflow` work whatever
# the interpreter: the system python3, a venv's, pyenv's shim (a shell script
# that execs the real one) and pyenv's versions from 3.9 on, each with a
# scope's bytes exact; older ones (memflow needs 3.9) run unharmed; the API
# tests pass in pyenv's oldest and newest supported CPython.  The
# sitecustomize memflow run's start-up hides still runs, and a program that
# never imports torch loads neither torch nor the memflow package (only the
# extension memflow._memflow, for Python stacks).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
unset PYTHONPATH  # memflow run alone must make memflow importable
cd "$SCRATCH"
PROGRAM="import sys
from memflow import profiler
with profiler.scope('net_dense0'):
    x = bytearray(3_000_000)
print('%d.%d' % sys.version_info[:2], 'torch' in sys.modules)"

# profile NAME INTERPRETER...: the program under memflow run, its scope exact
profile() {
    name=$1
    shift
    "$MEMFLOW" run --no-render -o "$name" -- "$@" -c "$PROGRAM" > "$name.out" 2> "$name.err" ||
        fail "$name: exited $?: $(cat "$name.err")"
    blocks=$("$top_builddir/tests/blocks" 1024 "$name"/memflow-*.mfl | grep -v '^<unk>:' || true)
    expect_eq "$name: blocks" "net_dense0: 3000001" "$blocks"
    grep -q " False$" "$name.out" || fail "$name: printed $(cat "$name.out")"
    echo "python_interpreters: $name ($(cut -d' ' -f1 "$name.out")): ok"
}

profile system "$PYTHON"
# a venv of the system interpreter (no pip needed)
if "$PYTHON" -m venv --without-pip venv > /dev/null 2>&1; then
    profile venv venv/bin/python
fi

PYENV_ROOT=${PYENV_ROOT:-$HOME/.pyenv}
if [ -x "$PYENV_ROOT/shims/python3" ]; then
    # python3 found on PATH is pyenv's shim, a bash script: its whole
    # process tree runs under memflow run; the Python process still works
    PATH="$PYENV_ROOT/shims:$PATH" profile shim python3
fi
for py in "$PYENV_ROOT"/versions/3.9*/bin/python3 "$PYENV_ROOT"/versions/3.11.7/bin/python3 \
          "$PYENV_ROOT"/versions/3.13*/bin/python3; do
    [ -x "$py" ] || continue
    profile "pyenv-$(basename "$(dirname "$(dirname "$py")")")" "$py"
done

# the whole API (tests/python_api.py) in the oldest and newest CPython at hand
for py in "$PYENV_ROOT"/versions/3.9*/bin/python3 "$PYENV_ROOT"/versions/3.13*/bin/python3; do
    [ -x "$py" ] || continue
    name="api-$(basename "$(dirname "$(dirname "$py")")")"
    mkdir "$name"
    SCRATCH="$SCRATCH/$name" PYTHONPATH="$top_builddir/python" "$py" \
        "$top_srcdir/tests/python_api.py" > "$name.out" 2>&1 || fail "$name: $(tail -30 "$name.out")"
    echo "python_interpreters: $name: ok"
done

# nothing of memflow's or torch's is imported unless the program does
"$MEMFLOW" run --no-render -o lazy -- "$PYTHON" -c \
    "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('memflow', 'torch')))" \
    > lazy.out 2> lazy.err || fail "lazy: exited $?: $(cat lazy.err)"
expect_eq "modules loaded at start-up" "['memflow._memflow']" "$(cat lazy.out)"

# A sitecustomize of the user's, hidden by memflow run's, still runs: for
# every interpreter, also those memflow does not support.
mkdir site
cat > site/sitecustomize.py <<'PY'
import sys
sys.memflow_test_hidden_sitecustomize = True
PY
check_hidden() {
    name=$1
    shift
    PYTHONPATH="${SITE_PATH:-$SCRATCH/site}" "$MEMFLOW" run --no-render -o "hidden-$name" -- "$@" -c \
        "import sys; print(getattr(sys, 'memflow_test_hidden_sitecustomize', False))" \
        > "hidden-$name.out" 2> "hidden-$name.err" || fail "hidden $name: exited $?: $(cat "hidden-$name.err")"
    expect_eq "hidden sitecustomize ($name)" "True" "$(cat "hidden-$name.out")"
}
check_hidden system "$PYTHON"
# memflow's start-up folder twice on the path (once through a link): it does
# not run itself again
ln -s "$top_builddir/python/startup" startup-link
SITE_PATH="$SCRATCH/startup-link:$SCRATCH/site" check_hidden twice "$PYTHON"
for py in "$PYENV_ROOT"/versions/2.7*/bin/python "$PYENV_ROOT"/versions/3.6*/bin/python3 \
          "$PYENV_ROOT"/versions/3.8*/bin/python3; do
    [ -x "$py" ] || continue
    check_hidden "$(basename "$(dirname "$(dirname "$py")")")" "$py"
done
echo "python_interpreters: ok"
