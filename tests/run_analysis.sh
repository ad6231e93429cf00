#!/bin/sh
# run_analysis.sh - memflow run analyses the logs while the program runs
# (cli/run_analysis.c) and writes its outputs from that model at the exit:
# they are byte for byte what `memflow render` of the finished logs writes,
# on real programs under memflow run with the default outputs:
#  - several processes: a shell running a program that holds memory, one
#    killed by SIGKILL (reaped by the shell: it ends with no end mark, at
#    its last event), a forked child freeing what it inherited, forks that
#    exec, and a churn;
#  - two threads of churn, 2,000,000 operations (staged chunks of both: one
#    thread's chunk reaches the log after the other's next one, and chunks
#    are read while memflow run copies them in; issue 22);
#  - call stacks (--stacks: sites, flame graph, folded stacks);
#  - GPU records stamped 300 ms before they are written, as CUPTI writes
#    them (tests/late_workload): the analysis starts over with a wider
#    margin, and stays exact;
#  - the same program killed with a last batch stamped at its start, which
#    reaches the log only when memflow run writes what the program left
#    staged: the model built during the run cannot be exact, memflow run
#    says so and builds the outputs from the finished logs - the same bytes
#    again (a batch stamped 2 s before the end was not late once a busy
#    machine had widened the margin past 2 s: a flaky test);
#  - Python (where memflow was built with it): a program whose stacks keep
#    branching (tests/run_analysis.py under --stacks: stack nodes, Python
#    frames merged with native ones, new nodes throughout the run); with
#    torch, a training loop's steps, names and roles
#    (tests/python_steps.py), and PyTorch's tensors from the allocator's
#    history, with its segments and two out-of-memory post-mortems
#    (tests/torch_live.py, no GPU needed).
# The analysis runs at normal priority here (MEMFLOW_RUN_ANALYSIS=normal),
# so that it keeps up on a machine busy with other tests; MEMFLOW_RUN_REPORT
# makes memflow run say what it did.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/proc_workload"
CHURN="$top_builddir/bench/churn"
LATE="$top_builddir/tests/late_workload"
STACKS="$top_builddir/tests/stacks_workload"
MEMFLOW_RUN_ANALYSIS=normal
MEMFLOW_RUN_REPORT=1
export MEMFLOW_RUN_ANALYSIS MEMFLOW_RUN_REPORT

# run NAME STATUS ARGS...: memflow run ARGS (default outputs) into
# $SCRATCH/NAME, exiting STATUS; then memflow render of its logs into
# $SCRATCH/NAME.again: every output of the run must be there, the same bytes.
run() {
    name=$1 want=$2
    shift 2
    rc=0
    "$MEMFLOW" run -o "$SCRATCH/$name" "$@" >"$SCRATCH/$name.out" 2>"$SCRATCH/$name.err" || rc=$?
    expect_eq "$name: exit status ($(cat "$SCRATCH/$name.err"))" "$want" "$rc"
    grep -q '^memflow run: analysis during the run: ' "$SCRATCH/$name.err" ||
        fail "$name: no report of the analysis: $(cat "$SCRATCH/$name.err")"
    "$MEMFLOW" render "$SCRATCH/$name"/memflow-*.mfl -o "$SCRATCH/$name.again" \
        >/dev/null 2>"$SCRATCH/$name.render.err" ||
        fail "$name: render exited $?: $(cat "$SCRATCH/$name.render.err")"
    outputs=0
    for f in "$SCRATCH/$name"/*; do
        case $f in *.mfl) continue ;; esac
        [ -f "$f" ] || continue
        cmp "$f" "$SCRATCH/$name.again/$(basename "$f")" ||
            fail "$name: $(basename "$f") differs from memflow render's"
        outputs=$((outputs + 1))
    done
    expect_eq "$name: outputs of memflow render" "$outputs" \
        "$(ls "$SCRATCH/$name.again" | wc -l | tr -d ' ')"
}

# exact NAME: the model of the run was exact (no note that it was rebuilt)
exact() {
    grep -q '^memflow run: analysis during the run: exact; ' "$SCRATCH/$1.err" ||
        fail "$1: the analysis during the run was not exact: $(cat "$SCRATCH/$1.err")"
    if grep -q 'built from the finished logs' "$SCRATCH/$1.err"; then
        fail "$1: rebuilt from the finished logs"
    fi
}

# The default (SCHED_IDLE): the thread's last steps, after the program's
# exit, run at normal priority (on a saturated machine an idle thread could
# keep the user waiting for many seconds); "normal" stays normal.
MEMFLOW_RUN_ANALYSIS=idle run idle 0 -- "$CHURN" -q -n 100000
grep -q '; its last steps at normal priority$' "$SCRATCH/idle.err" ||
    fail "idle: $(cat "$SCRATCH/idle.err")"
run normal 0 -- "$CHURN" -q -n 100000
grep -q '; its last steps at normal priority$' "$SCRATCH/normal.err" ||
    fail "normal: $(cat "$SCRATCH/normal.err")"

run procs 0 -- sh -c "'$W' hold 1000; '$W' killed 5000; '$W' forkfree 300; \
'$W' spawn 2 '$W' hold 77; '$CHURN' -q -n 200000"
expect_eq "procs: outputs" "memory_flow.svg profile.json stats.txt" \
    "$(cd "$SCRATCH/procs" && ls -- *.svg *.json *.txt | tr '\n' ' ' | sed 's/ $//')"
grep -q 'killed 5000 (not finished: ' "$SCRATCH/procs/stats.txt" ||
    fail "procs: the killed process is not said to be unfinished"

run threads 0 -- "$CHURN" -q -t 2 -n 2000000
exact threads

run stacks 0 --stacks -- "$STACKS" "$top_builddir/tests"
[ -s "$SCRATCH/stacks/flamegraph.svg" ] && [ -s "$SCRATCH/stacks/stacks.folded" ] ||
    fail "stacks: no flame graph or folded stacks"
grep -q '^direct_alloc' "$SCRATCH/stacks/stacks.folded" ||
    grep -q 'direct_alloc' "$SCRATCH/stacks/stacks.folded" || fail "stacks: direct_alloc not named"

run late 0 -- "$LATE" 20 300 0
exact late
[ -s "$SCRATCH/late/gpu_memory_profile-pid_"*.csv ] || fail "late: no GPU CSV"

run killed 137 -- "$LATE" 20 0 0 kill
grep -q '^memflow run: analysis during the run: not exact; ' "$SCRATCH/killed.err" ||
    fail "killed: the analysis during the run says it was exact: $(cat "$SCRATCH/killed.err")"
grep -q '^memflow run: records reached the logs up to [0-9.]* s after their time stamps; the outputs are built from the finished logs$' \
    "$SCRATCH/killed.err" || fail "killed: no note of the rebuild: $(cat "$SCRATCH/killed.err")"

# Python: the build's extension, the interpreter configure chose
if [ -e "$top_builddir/python/memflow/_memflow.abi3.so" ]; then
    : "${PYTHON:=/usr/bin/python3}"
    PYTHONPATH="$top_builddir/python"
    export PYTHONPATH
    P="$top_srcdir/tests/run_analysis.py"
    run pystacks 0 --stacks -- "$PYTHON" "$P"
    exact pystacks
    leaf="step (run_analysis.py:$(grep -n '# LEAF$' "$P" | cut -d: -f1))"
    "$MEMFLOW" stats --format json "$SCRATCH/pystacks"/memflow-*.mfl >"$SCRATCH/pystacks.json" \
        2>/dev/null || fail "pystacks: stats exited $?"
    # 300,000 blocks of 1000 + i % 7 bytes (and bytearray's NUL)
    expect_eq "pystacks: the leaf's site" "300000 301199997" "$(json_get "$SCRATCH/pystacks.json" "
' '.join(str(s[k]) for s in d['sites'] if s['site'] == '$leaf' for k in ('alloc_count', 'alloc_bytes'))")"
    if "$PYTHON" -c 'import torch' 2>/dev/null; then
        run pysteps 0 -- "$PYTHON" "$top_srcdir/tests/python_steps.py"
        exact pysteps
        grep -q '^cpu/0: 6 steps, ' "$SCRATCH/pysteps/stats.txt" || fail "pysteps: no 6 steps"
        grep -q ' linear:weight\.grad$' "$SCRATCH/pysteps/stats.txt" ||
            fail "pysteps: no gradient named"
        run torch 0 -- "$PYTHON" "$top_srcdir/tests/torch_live.py"
        exact torch
        expect_eq "torch: out-of-memory post-mortems" 2 \
            "$(grep -c '^Out of memory at ' "$SCRATCH/torch/stats.txt")"
        [ -s "$SCRATCH/torch/gpu_memory_profile-pid_"*.csv ] || fail "torch: no GPU CSV"
    fi
fi
exit 0
