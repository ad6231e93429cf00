#!/bin/sh
# run_logs.sh - what `memflow run` and the recorder write into log headers
# (run id, static check, how each process ended) and which logs a run
# renders: exactly its own, by run id.  Header fields are read with
# tests/logheader (plain pread, no reader).
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/alloc_workload"
HEADER="$top_builddir/tests/logheader"

# ends DIR: "how:status" of every log in DIR, sorted; also checks that each
# header's static_check is right and all share one run id (printed to $DIR.id)
ends() {
    : > "$1.ends"
    : > "$1.ids"
    for log in "$1"/memflow-*.mfl; do
        "$HEADER" "$log" > "$log.h" || fail "$log: logheader exited $?"
        grep -q '^check_ok=1$' "$log.h" || fail "$log: static_check does not match: $(cat "$log.h")"
        echo "$(sed -n 's/^end_how=//p' "$log.h"):$(sed -n 's/^end_status=//p' "$log.h")" >> "$1.ends"
        sed -n 's/^run_id=//p' "$log.h" >> "$1.ids"
    done
    [ "$(sort -u "$1.ids" | wc -l)" -eq 1 ] || fail "$1: logs of one run with different run ids: $(cat "$1.ids")"
    ! grep -q '^0\{32\}$' "$1.ids" || fail "$1: run id is zero"
    head -n 1 "$1.ids" > "$1.id"
    sort "$1.ends" | tr '\n' ' ' | sed 's/ $//'
}

# run_ends NAME EXPECTED-STATUS EXPECTED-ENDS ARGS...: run the workload, check both
run_ends() {
    name=$1 want_status=$2 want_ends=$3
    shift 3
    status=0
    "$MEMFLOW" run --no-render -o "$SCRATCH/$name" -- "$W" "$@" > /dev/null 2>&1 || status=$?
    expect_eq "$name: exit status" "$want_status" "$status"
    expect_eq "$name: how the processes ended (how:status)" "$want_ends" "$(ends "$SCRATCH/$name")"
}

# end_how: 1 exit(), 2 _exit()/_Exit()/quick_exit(), 3 exec, 4 signal (written by
# memflow run)
run_ends exit 0 "1:0" fns
run_ends exitcode 7 "1:7" exitcode 7
run_ends _exit 3 "2:3" exit 10
run_ends quick_exit 5 "2:5" quickexit 5
run_ends exec 0 "1:0 3:0" exec
run_ends execfail 0 "1:0" execfail
run_ends vfork 0 "1:0 1:0" vfork
run_ends abort 134 "4:6" abort 10
run_ends fork 0 "1:0 1:0" fork
# an orphan killed by a signal is reaped by memflow run (child subreaper)
run_ends orphan 0 "1:0 2:0 4:9" orphan 100

# The same pid wrote both logs of the exec; every run has an id of its own.
expect_eq "exec: one process" 1 "$(cat "$SCRATCH"/exec/*.mfl.h | sed -n 's/^pid=//p' | sort -u | wc -l)"
[ "$(cat "$SCRATCH/exit.id")" != "$(cat "$SCRATCH/fork.id")" ] || fail "two runs share run id $(cat "$SCRATCH/exit.id")"

# Without memflow run (the preload library by hand) a process tree gets a
# run id of its own, kept by the forked child.
for n in 1 2; do
    LD_PRELOAD="$top_builddir/.libs/libmemflow-preload.so" MEMFLOW_AUTOSTART=1 \
        MEMFLOW_PATH="$SCRATCH/bare$n" "$W" fork || fail "bare fork $n exited $?"
    expect_eq "bare run $n" "1:0 1:0" "$(ends "$SCRATCH/bare$n")"
done
[ "$(cat "$SCRATCH/bare1.id")" != "$(cat "$SCRATCH/bare2.id")" ] || fail "two bare runs share a run id"

# A forged log (a copy of another run's log, made to look as if it started
# later) in the output folder is not this run's: one log is rendered.
mkdir -p "$SCRATCH/forged"
cp "$(ls "$SCRATCH"/exit/memflow-*.mfl)" "$SCRATCH/forged/memflow-999999.mfl"
"$PYTHON3" - "$SCRATCH/forged/memflow-999999.mfl" <<'PY'
import struct, sys, time
with open(sys.argv[1], "r+b") as f:
    f.seek(56)   # start_real_ns: far in the future
    f.write(struct.pack("<Q", int((time.time() + 86400) * 1e9)))
PY
# A FIFO and a symlink planted under log names are skipped: never waited
# on, never followed.
mkfifo "$SCRATCH/forged/memflow-999998.mfl"
ln -s memflow-999999.mfl "$SCRATCH/forged/memflow-999997.mfl"
"$MEMFLOW" run -o "$SCRATCH/forged" --set formats=stats.json -- "$W" fns 2> "$SCRATCH/forged.err" ||
    fail "forged: exited $?: $(cat "$SCRATCH/forged.err")"
grep -q "memflow: 1 log rendered" "$SCRATCH/forged.err" || fail "forged: $(cat "$SCRATCH/forged.err")"
expect_eq "forged: fns allocations counted once" 12 \
    "$(json_get "$SCRATCH/forged/stats.json" "[s['alloc_count'] for s in d['scopes'] if s['scope'] == 'fns:'][0]")"

# Two runs into one folder at once: each renders its own log only.
fifo="$SCRATCH/ready"
mkfifo "$fifo"
"$MEMFLOW" run -o "$SCRATCH/shared" --set formats=stats.json -- "$W" kill 100 > "$fifo" 2> "$SCRATCH/long.err" &
long=$!
read -r word pid < "$fifo"
expect_eq "long run ready" ready "$word"
"$MEMFLOW" run -o "$SCRATCH/shared" --set formats=stats.json -- "$W" fns 2> "$SCRATCH/short.err" ||
    fail "short run exited $?"
kill -KILL "$pid"
status=0
wait "$long" || status=$?
expect_eq "long run status" 137 "$status"
grep -q "memflow: 1 log rendered" "$SCRATCH/short.err" || fail "short run: $(cat "$SCRATCH/short.err")"
grep -q "memflow: 1 log rendered" "$SCRATCH/long.err" || fail "long run: $(cat "$SCRATCH/long.err")"
expect_eq "two logs in the shared folder" 2 "$(ls "$SCRATCH"/shared/memflow-*.mfl | wc -l)"
echo "run_logs: ok"
