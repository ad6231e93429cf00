#!/bin/sh
# progress.sh - reading logs that takes more than a second shows progress
# on a terminal (events read of the total, the rate) and nothing when stderr
# is not a terminal.  MEMFLOW_PROGRESS_AFTER=0 makes any reading "long";
# script(1) gives the command a terminal.
#  - memflow render on a terminal: the redrawn line, then "memflow: read N
#    events in S s (R M events/s)", N every event record of the log;
#  - the same with stderr in a file: not a byte of it;
#  - memflow run reading the logs at the program's exit (no analysis during
#    the run): the same last line on a terminal;
#  - memflow import rendering what it imported (tests/torch_import_snapshots.py's
#    current.pickle: 25 events): the same line, from the same progress module.
. "$top_srcdir/tests/lib.sh"
command -v script >/dev/null 2>&1 || { echo "SKIP: $TEST_NAME: no script(1)"; exit 77; }
LOG=$("$top_builddir/tests/render_gen" "$SCRATCH" big 100000)
MEMFLOW_PROGRESS_AFTER=0
export MEMFLOW_PROGRESS_AFTER

# on_terminal OUT CMD...: run CMD with a terminal for stdin, stdout and
# stderr; what the terminal showed (lines split at \r too) into OUT.
on_terminal() {
    out=$1
    shift
    script -qec "$*" /dev/null </dev/null | tr '\r' '\n' >"$out" || fail "on a terminal: $* exited $?"
}

# 100,001 allocations, 99,001 frees and the recorder's two STATE records
"$MEMFLOW" stats --format json "$LOG" >"$SCRATCH/stats.json"
events=$(json_get "$SCRATCH/stats.json" \
    'sum(x["alloc_count"] + x["free_count"] for x in d["devices"]) + 2')
expect_eq "events of the log" 199004 "$events"

on_terminal "$SCRATCH/render.tty" "'$MEMFLOW' render '$LOG' -o '$SCRATCH/out'"
grep -q '^memflow: reading the logs: [0-9,]* of 199,004 events ([0-9]*%), [0-9.]* M events/s' \
    "$SCRATCH/render.tty" || fail "render: no progress line: $(cat "$SCRATCH/render.tty")"
grep -q '^memflow: read 199,004 events in [0-9.]* s ([0-9.]* M events/s) *$' "$SCRATCH/render.tty" ||
    fail "render: no last line: $(cat "$SCRATCH/render.tty")"

"$MEMFLOW" render "$LOG" -o "$SCRATCH/out2" >"$SCRATCH/render.out" 2>"$SCRATCH/render.err" ||
    fail "render exited $?"
expect_eq "render's stderr in a file" "memflow render: into $SCRATCH/out2: memory_flow.svg, profile.json, stats.txt" \
    "$(cat "$SCRATCH/render.err")"

if preload_works; then
    on_terminal "$SCRATCH/run.tty" "MEMFLOW_RUN_ANALYSIS=0 '$MEMFLOW' run --no-compact -o '$SCRATCH/run' -- '$top_builddir/bench/churn' -q -n 20000"
    grep -q '^memflow: read [0-9,]* events in [0-9.]* s ([0-9.]* M events/s) *$' \
        "$SCRATCH/run.tty" || fail "run: no last line: $(cat "$SCRATCH/run.tty")"
    n=$(sed -n 's/^memflow: read \([0-9,]*\) events in .*/\1/p' "$SCRATCH/run.tty" | tr -d ,)
    [ "$n" -ge 20000 ] || fail "run: read $n events, the churn made 20,000"
fi

"$PYTHON3" "$top_srcdir/tests/torch_import_snapshots.py" "$SCRATCH/snapshots"
on_terminal "$SCRATCH/import.tty" "'$MEMFLOW' import '$SCRATCH/snapshots/current.pickle' -o '$SCRATCH/import'"
grep -q '^memflow: read 25 events in [0-9.]* s ([0-9.]* M events/s) *$' "$SCRATCH/import.tty" ||
    fail "import: no last line: $(cat "$SCRATCH/import.tty")"
exit 0
