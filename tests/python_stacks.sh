#!/bin/sh
# python_stacks.sh - Python call stacks under memflow run, with no memflow in
# the program (tests/python_stacks.py): every allocation at a known line has
# that file:line as its site, with exact bytes and frames - nested calls, a
# call through C (map), a generator, a frame left by an exception, another
# thread, the module, a torch tensor; by the frame walker (CPython 3.11) and
# by the profile function (other CPythons, python_stacks=2); with --stacks
# the Python frames stand where the eval loop runs them; python_stacks=0
# records none and loads nothing at start-up.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
unset PYTHONPATH
cd "$SCRATCH"
P="$top_srcdir/tests/python_stacks.py"
SITES="$PYTHON3 $top_srcdir/tests/stats_sites.py"
at() { grep -n "# SITE $1\$" "$P" | cut -d: -f1; }

# sites NAME: the marked sites of run NAME, with their frames
sites() {
    "$MEMFLOW" stats --format json "$1"/memflow-*.mfl > "$1.json" || fail "$1: stats exited $?"
    lines="$(at module)|$(at gen)|$(at make)|$(at raiser)|$(at worker)|$(at torch)"
    $SITES --frames "$1.json" | grep -E -A1 "^[^ ]* \(python_stacks\.py:($lines)\)" | grep -v '^--$'
}
expected() {
    cat <<EXPECTED
<module> ($1:$(at module)) allocs=1 bytes=900001 peak_live=900001 live_end=0 at_peak=900001/1
frames <module> ($1:$(at module)): <module>@$1:$(at module)
gen ($1:$(at gen)) allocs=2 bytes=600003 peak_live=600003 live_end=0 at_peak=600003/2
frames gen ($1:$(at gen)): gen@$1:$(at gen) < <module>@$1:$(at "call gen")
make ($1:$(at make)) allocs=5 bytes=7000009 peak_live=7000009 live_end=0 at_peak=7000009/5
frames make ($1:$(at make)): make@$1:$(at make) < outer.<locals>.<listcomp>@$1:$(at outer) < outer@$1:$(at outer) < <module>@$1:$(at "call outer")
raiser ($1:$(at raiser)) allocs=1 bytes=500001 peak_live=500001 live_end=0 at_peak=0/0
frames raiser ($1:$(at raiser)): raiser@$1:$(at raiser) < <module>@$1:$(at "call raiser")
worker ($1:$(at worker)) allocs=1 bytes=700001 peak_live=700001 live_end=0 at_peak=700001/1
frames worker ($1:$(at worker)): worker@$1:$(at worker) < Thread.run@threading.py:LINE < Thread._bootstrap_inner@threading.py:LINE < Thread._bootstrap@threading.py:LINE
EXPECTED
}
# make's two callers (a comprehension, map through C) share the site; its
# frames are its first stack's
normalise() { sed 's/threading\.py:[0-9]*/threading.py:LINE/g'; }

"$MEMFLOW" run --no-render -o walk -- "$PYTHON" "$P" || fail "walk: exited $?"
got=$(sites walk | normalise)
expect_eq "walker" "$(expected python_stacks.py)" "$got"

# the profile function, where the interpreter has no walker (pyenv's)
PYENV_ROOT=${PYENV_ROOT:-$HOME/.pyenv}
for py in "$PYENV_ROOT"/versions/3.9*/bin/python3 "$PYENV_ROOT"/versions/3.13*/bin/python3; do
    [ -x "$py" ] || continue
    name=$(basename "$(dirname "$(dirname "$py")")")
    "$MEMFLOW" run --no-render --set python_stacks=2 -o "$name" -- "$py" "$P" || fail "$name: exited $?"
    want=$(expected python_stacks.py)
    case $name in
    3.9*) want=$(echo "$want" | sed 's/outer\.<locals>\.<listcomp>/<listcomp>/; s/Thread\._bootstrap_inner/_bootstrap_inner/; s/Thread\.run/run/; s/Thread\._bootstrap@/_bootstrap@/') ;;  # no co_qualname
    3.13*) want=$(echo "$want" | sed 's/ < outer\.<locals>\.<listcomp>@[^ ]*//') ;;  # inlined comprehensions
    esac
    expect_eq "profile function ($name)" "$want" "$(sites "$name" | normalise)"
    # python_stacks=1 (the default) there: none
    "$MEMFLOW" run --no-render -o "$name-default" -- "$py" "$P" || fail "$name default: exited $?"
    expect_eq "default ($name)" "" "$(sites "$name-default")"
done

# --stacks: Python frames replace the eval loop call that runs them
"$MEMFLOW" run --no-render --stacks -o native -- "$PYTHON" "$P" || fail "native: exited $?"
"$MEMFLOW" stats --format json native/memflow-*.mfl > native.json || fail "native stats: $?"
frames=$($SITES --frames native.json | grep "^frames make (python_stacks.py:$(at make))")
python=$(echo "$frames" | sed 's/^frames [^:]*:[0-9]*): //; s/ < /\n/g' | grep 'python_stacks\.py')
expect_eq "merged python frames" "make@python_stacks.py:$(at make)
outer.<locals>.<listcomp>@python_stacks.py:$(at outer)
outer@python_stacks.py:$(at outer)
<module>@python_stacks.py:$(at "call outer")" "$python"
echo "$frames" | grep -q '_PyEval_EvalFrameDefault' && fail "an eval loop frame left: $frames"
echo "$frames" | grep -q '< PyEval_EvalCode@' || fail "no native frames outside: $frames"

# a torch tensor's site is the program's line, not c10::alloc_cpu
if "$PYTHON" -c 'import torch' 2> /dev/null; then
    "$MEMFLOW" run --no-render -o torch -- "$PYTHON" "$P" torch || fail "torch: exited $?"
    sites torch > /dev/null
    expect_eq "torch tensor: the line's largest block" "4000000" "$($PYTHON3 -c "
import json, sys
sites = json.load(open('torch.json'))['sites']
print([s['max_size'] for s in sites if s['site'] == '<module> (python_stacks.py:$(at torch))'][0])")"
fi

# off: no Python frames, nothing of memflow's loaded at start-up
"$MEMFLOW" run --no-render --set python_stacks=0 -o off -- "$PYTHON" "$P" || fail "off: exited $?"
expect_eq "off" "" "$(sites off)"
"$MEMFLOW" run --no-render -o lazy -- "$PYTHON" -c \
    "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('memflow', 'torch')))" \
    > lazy.out || fail "lazy: exited $?"
expect_eq "loaded at start-up" "['memflow._memflow']" "$(cat lazy.out)"
echo "python_stacks: ok"
