#!/bin/sh
# alloc_e2e.sh - CPU capture end to end: real programs under `memflow run`,
# exact counts and bytes per scope read back from the log.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/alloc_workload"
CHECK="$top_builddir/tests/logcheck"

# logline OUT SCOPE: the logcheck line of SCOPE
logline() { grep "^$2 " "$1" || echo "$2 (missing)"; }

# wait_gone PID NAME: until process PID (not our child) has ended, at most a minute.
wait_gone() {
    n=0
    while kill -0 "$1" 2>/dev/null; do
        n=$((n + 1))
        [ "$n" -lt 600 ] || fail "$2: the program did not end"
        sleep 0.1
    done
}

# Every malloc-family function once, in scope fns:
"$MEMFLOW" run --no-render -o "$SCRATCH/fns" -- "$W" fns || fail "fns run exited $?"
set -- "$SCRATCH"/fns/memflow-*.mfl
[ $# -eq 1 ] || fail "fns: expected one log, got $#"
"$CHECK" "$1" > "$SCRATCH/fns.txt" || fail "fns: logcheck exited $?"
expect_eq "fns scope" "fns: allocs=12 frees=12 bytes=6224" \
    "$(logline "$SCRATCH/fns.txt" fns: | sed 's/ actual=.*//')"
grep -q "finished=1" "$SCRATCH/fns.txt" || fail "fns: log not marked finished"
# Recording starts at the process's first malloc: no free is of an unknown block.
grep -q "unknown_frees=0" "$SCRATCH/fns.txt" || fail "fns: unknown frees: $(cat "$SCRATCH/fns.txt")"
# memflow stats --format json, parsed: the scope's numbers exact to the byte
# (peak: 100+300 -> 1300 -> 350 -> +64 -> -64 -> +100+200+256+48+10+4096+0 = 5060).
"$MEMFLOW" stats --format json "$1" > "$SCRATCH/fns.json" 2>/dev/null || fail "fns: stats exited $?"
expect_eq "fns stats json" \
    '{"scope": "fns:", "device": "cpu/0", "alloc_count": 12, "free_count": 12, "alloc_bytes": 6224, "min_size": 0, "max_size": 4096, "peak_live_bytes": 5060, "live_bytes_end": 0, "live_count_end": 0}' \
    "$(json_get "$SCRATCH/fns.json" "json.dumps([{k: v for k, v in s.items() if not k.endswith('_ns') and k != 'avg_size'} for s in d['scopes'] if s['scope'] == 'fns:'][0])")"
expect_eq "fns unknown frees" 0 "$(json_get "$SCRATCH/fns.json" "d['unknown_frees']")"

# Actual sizes: every block's recorded usable size is what jemalloc says of
# the block (malloc_usable_size looks it up), for every size class and
# alignment: the sums agree to the byte.
"$MEMFLOW" run --no-render -o "$SCRATCH/usable" -- "$W" usable > "$SCRATCH/usable.out" ||
    fail "usable run exited $?"
"$CHECK" "$SCRATCH"/usable/memflow-*.mfl > "$SCRATCH/usable.txt" || fail "usable: logcheck exited $?"
blocks=$(sed -n 's/^blocks \([0-9]*\) usable [0-9]*$/\1/p' "$SCRATCH/usable.out")
usable=$(sed -n 's/^blocks [0-9]* usable \([0-9]*\)$/\1/p' "$SCRATCH/usable.out")
[ -n "$blocks" ] && [ "$blocks" -gt 20000 ] || fail "usable: $(cat "$SCRATCH/usable.out")"
expect_eq "actual sizes" "usable: allocs=$blocks frees=$blocks actual=$usable" \
    "$(logline "$SCRATCH/usable.txt" usable: | sed 's/ bytes=[0-9]*//')"

# A realloc that fails records nothing: no phantom free + alloc, no size
# change.  (The realloc to 200 that succeeds is one free + one alloc.)
"$MEMFLOW" run --no-render -o "$SCRATCH/rf" -- "$W" reallocfail || fail "reallocfail run exited $?"
"$CHECK" "$SCRATCH"/rf/memflow-*.mfl > "$SCRATCH/rf.txt" || fail "reallocfail: logcheck exited $?"
expect_eq "failed realloc" "rf: allocs=2 frees=2 bytes=300" \
    "$(logline "$SCRATCH/rf.txt" rf: | sed 's/ actual=.*//')"

# C++: a throwing operator new that gets no memory throws std::bad_alloc
# (after the new_handler loop); nothrow forms return nullptr; what succeeds
# is recorded exactly (int 4 + char[1000] + a 64-byte aligned struct).
"$MEMFLOW" run --no-render -o "$SCRATCH/cxx" -- "$top_builddir/tests/cxx_new" > "$SCRATCH/cxx.out" 2>&1 ||
    fail "cxx_new under memflow run exited $?: $(cat "$SCRATCH/cxx.out")"
"$CHECK" "$SCRATCH"/cxx/memflow-*.mfl > "$SCRATCH/cxx.txt" || fail "cxx: logcheck exited $?"
expect_eq "C++ new/delete" "cxx: allocs=3 frees=3 bytes=1068" \
    "$(logline "$SCRATCH/cxx.txt" cxx: | sed 's/ actual=.*//')"

# 4 threads x 100k mallocs + 100k frees, each in its own scope, exact totals.
"$MEMFLOW" run --no-render -o "$SCRATCH/threads" -- "$W" threads 4 100000 ||
    fail "threads run exited $?"
"$CHECK" "$SCRATCH"/threads/memflow-*.mfl > "$SCRATCH/threads.txt"
# sizes 16 + (k % 64) * 8 for k < 100000: 1562 full rounds of 64 plus 32
bytes=$(( 1562 * (64 * 16 + 8 * 2016) + 32 * 16 + 8 * 496 ))
for t in 0 1 2 3; do
    expect_eq "thread $t" "t$t: allocs=100000 frees=100000 bytes=$bytes" \
        "$(logline "$SCRATCH/threads.txt" "t$t:" | sed 's/ actual=.*//')"
done

# 2000 short threads share chunks: every event kept, the log stays small.
"$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/short" -- "$W" manythreads 2000 ||
    fail "manythreads run exited $?"
"$CHECK" "$SCRATCH"/short/memflow-*.mfl > "$SCRATCH/short.txt"
expect_eq "short threads" "short: allocs=2000 frees=2000 bytes=200000" \
    "$(logline "$SCRATCH/short.txt" short: | sed 's/ actual=.*//')"
size=$(wc -c < "$(ls "$SCRATCH"/short/memflow-*.mfl)")
[ "$size" -le $((8 * 1048576)) ] || fail "2000 short threads made a $size-byte log"

# The log does not stay in the program's memory: 1.5 M malloc/free pairs make
# a ~70 MB log (3 M events), but the profiled process's peak RSS stays far
# below it, because filled chunks are unmapped.
"$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/rss" -- "$W" rss 1500000 > "$SCRATCH/rss.txt" ||
    fail "rss run exited $?"
hwm=$(sed -n 's/^hwm //p' "$SCRATCH/rss.txt")
log_kb=$(( $(wc -c < "$(ls "$SCRATCH"/rss/memflow-*.mfl)") / 1024 ))
[ "$log_kb" -gt 60000 ] || fail "rss: expected a log over 60 MB, got $log_kb KB"
[ "$hwm" -lt 16000 ] || fail "rss: peak RSS $hwm KB with a $log_kb KB log"

# fork: the child records into its own log, which names the parent.
"$MEMFLOW" run --no-render -o "$SCRATCH/fork" -- "$W" fork || fail "fork run exited $?"
n=0
for log in "$SCRATCH"/fork/memflow-*.mfl; do
    n=$((n + 1))
    "$CHECK" "$log" > "$SCRATCH/fork.$n.txt"
done
expect_eq "fork logs" 2 "$n"
cat "$SCRATCH"/fork.*.txt > "$SCRATCH/fork.txt"
expect_eq "parent scope" "parent: allocs=10 frees=10 bytes=10000" \
    "$(logline "$SCRATCH/fork.txt" parent: | sed 's/ actual=.*//')"
expect_eq "child scope" "child: allocs=7 frees=7 bytes=5439" \
    "$(logline "$SCRATCH/fork.txt" child: | sed 's/ actual=.*//')"
parent_pid=$(grep -l "^parent:" "$SCRATCH"/fork.*.txt | xargs grep -h '^pid=' | sed 's/pid=\([0-9]*\).*/\1/')
grep -q "ppid=$parent_pid " "$SCRATCH"/fork.*.txt || fail "fork: child log does not name parent $parent_pid"

# SIGKILL: every allocation made before the kill is in the log.
sigkill_loses_nothing() { # NAME
    start_ready "$1" "$MEMFLOW" run --no-render -o "$SCRATCH/$1" -- "$W" kill 5000
    kill -KILL "$READY_PID"
    status=0
    wait "$RUNNER" || status=$?
    expect_eq "$1: memflow run status after SIGKILL" 137 "$status"
    "$CHECK" "$SCRATCH/$1"/memflow-*.mfl > "$SCRATCH/$1.txt"
    expect_eq "$1: SIGKILL scope" "doomed: allocs=5000 frees=0 bytes=20000000" \
        "$(logline "$SCRATCH/$1.txt" doomed: | sed 's/ actual=.*//')"
    grep -q "finished=0" "$SCRATCH/$1.txt" || fail "$1: log should not be marked finished"
}
sigkill_loses_nothing kill

# abort() and _exit() lose nothing either.
status=0
"$MEMFLOW" run --no-render -o "$SCRATCH/abort" -- "$W" abort 3000 2>/dev/null || status=$?
expect_eq "abort status" 134 "$status"
"$CHECK" "$SCRATCH"/abort/memflow-*.mfl > "$SCRATCH/abort.txt"
expect_eq "abort scope" "doomed: allocs=3000 frees=0 bytes=12000000" \
    "$(logline "$SCRATCH/abort.txt" doomed: | sed 's/ actual=.*//')"
status=0
"$MEMFLOW" run --no-render -o "$SCRATCH/exit" -- "$W" exit 2000 || status=$?
expect_eq "_exit status" 3 "$status"
"$CHECK" "$SCRATCH"/exit/memflow-*.mfl > "$SCRATCH/exit.txt"
expect_eq "_exit scope" "doomed: allocs=2000 frees=0 bytes=8000000" \
    "$(logline "$SCRATCH/exit.txt" doomed: | sed 's/ actual=.*//')"
# Everything above ran staged (the default: runtime/stage.h).  The log
# written directly (MEMFLOW_STAGE=0) agrees: every function once gives what
# the staged run above gave, and a SIGKILL loses nothing either.
MEMFLOW_STAGE=0 "$MEMFLOW" run --no-render -o "$SCRATCH/direct" -- "$W" fns ||
    fail "direct fns run exited $?"
"$CHECK" "$SCRATCH"/direct/memflow-*.mfl > "$SCRATCH/direct.txt"
expect_eq "fns, log written directly" "$(logline "$SCRATCH/fns.txt" fns:)" \
    "$(logline "$SCRATCH/direct.txt" fns:)"
export MEMFLOW_STAGE=0
sigkill_loses_nothing kill-direct
[ -z "$(ls "$SCRATCH"/kill-direct/*.stage 2>/dev/null)" ] || fail "MEMFLOW_STAGE=0 made a stage file"
unset MEMFLOW_STAGE
status=0
MEMFLOW_STAGE=yes "$MEMFLOW" run --no-render -o "$SCRATCH/badstage" -- true 2> "$SCRATCH/badstage.err" ||
    status=$?
expect_eq "MEMFLOW_STAGE=yes: memflow's own error" 125 "$status"
grep -q "MEMFLOW_STAGE='yes'" "$SCRATCH/badstage.err" || fail "MEMFLOW_STAGE=yes: $(cat "$SCRATCH/badstage.err")"
[ -z "$(ls "$SCRATCH"/fns/*.stage "$SCRATCH"/badstage/*.stage 2>/dev/null)" ] ||
    fail "a stage file stayed after a run: $(ls "$SCRATCH"/fns "$SCRATCH"/badstage)"

# memflow run and the program killed together (kill -9 of the process
# group, as an OOM kill of a container does): the 5000 records of the
# chunk the program was filling were never copied into the log; they are
# in the stage file, and the next reader of the folder writes them into the
# log and removes the file.
group_kill() { # NAME: runs the kill workload in its own group, kills the group
    start_ready "$1" setsid "$MEMFLOW" run --no-render -o "$SCRATCH/$1" -- "$W" kill 5000
    kill -KILL "-$RUNNER"
    wait "$RUNNER" 2>/dev/null || true
    wait_gone "$READY_PID" "$1"
    set -- "$SCRATCH/$1"/memflow-*.stage
    [ -f "$1" ] || fail "group kill: no stage file left"
}
# A file system without fallocate or flock gives no stage (memflow run says
# so when MEMFLOW_STAGE=1 asks by name): nothing to recover there.
MEMFLOW_STAGE=1 "$MEMFLOW" run --no-render -o "$SCRATCH/probe" -- true 2> "$SCRATCH/probe.err" ||
    fail "stage probe exited $?"
if grep -q "no staging area" "$SCRATCH/probe.err"; then
    echo "alloc_e2e: SKIP the group kill: $(cat "$SCRATCH/probe.err")"
else
    group_kill group
    log=$(ls "$SCRATCH"/group/memflow-*.mfl)
    # read without the stage (logcheck does not recover): the chunk claimed and
    # never written is missing, and said so
    status=0
    "$CHECK" "$log" > "$SCRATCH/group-before.txt" || status=$?
    expect_eq "group kill, before a reader: logcheck exit" 3 "$status"
    expect_eq "group kill, before a reader" "doomed: (missing)" "$(logline "$SCRATCH/group-before.txt" doomed:)"
    grep -qxF "damage: $log: offset 1048576: chunk 1 was claimed, but it holds nothing: its header and records are zeros (a hole over its first page), or were never written; its records, if it had any, are lost (1 chunk like it)" \
        "$SCRATCH/group-before.txt" || fail "group kill, before a reader: $(cat "$SCRATCH/group-before.txt")"
    "$MEMFLOW" stats --format json "$log" > "$SCRATCH/group.json" 2> "$SCRATCH/group.err" ||
        fail "group kill: stats exited $?: $(cat "$SCRATCH/group.err")"
    grep -q "^memflow: wrote 1 chunk(s) that a killed run left in '.*/group/memflow-[0-9a-f]*\.stage' into its log '$log'\$" \
        "$SCRATCH/group.err" || fail "group kill: $(cat "$SCRATCH/group.err")"
    expect_eq "group kill, stats" "5000 0 20000000" \
        "$(json_get "$SCRATCH/group.json" "' '.join(str(s[k]) for s in d['scopes'] if s['scope'] == 'doomed:' for k in ('alloc_count', 'free_count', 'alloc_bytes'))")"
    [ -z "$(ls "$SCRATCH"/group/*.stage 2>/dev/null)" ] || fail "group kill: the stage file stayed"
    "$CHECK" "$log" > "$SCRATCH/group.txt"
    expect_eq "group kill, log" "doomed: allocs=5000 frees=0 bytes=20000000" \
        "$(logline "$SCRATCH/group.txt" doomed: | sed 's/ actual=.*//')"
    grep -q "finished=0" "$SCRATCH/group.txt" || fail "group kill: log should not be marked finished"
    "$MEMFLOW" stats "$log" > /dev/null 2> "$SCRATCH/group2.err" || fail "group kill: second stats"
    expect_eq "group kill, a second reader writes nothing back" 0 "$(grep -c "^memflow: wrote .* chunk" "$SCRATCH/group2.err")"

    # The log replaced by another file of its name (a copy: another inode): the
    # stage is not written into it, it stays, and the reader says why.
    group_kill replaced
    log=$(ls "$SCRATCH"/replaced/memflow-*.mfl)
    cp "$log" "$log.copy" && mv "$log.copy" "$log"
    status=0
    "$MEMFLOW" stats "$log" > /dev/null 2> "$SCRATCH/replaced.err" || status=$?
    expect_eq "replaced: stats exit (the staged chunk is missing from the log)" 3 "$status"
    grep -q "^memflow: warning: '.*\.stage' holds staged records of the log '$log', which cannot take them (another file has its name now); left as it is\$" \
        "$SCRATCH/replaced.err" || fail "replaced: $(cat "$SCRATCH/replaced.err")"
    grep -q "^memflow: warning: $log: offset 1048576: chunk 1 was claimed, but it holds nothing" \
        "$SCRATCH/replaced.err" || fail "replaced: $(cat "$SCRATCH/replaced.err")"
    [ -n "$(ls "$SCRATCH"/replaced/*.stage 2>/dev/null)" ] || fail "replaced: the stage file was removed"
fi

# The rest runs staged too.  More threads at once than staging slots: the
# threads beyond them write their chunks directly; every event is kept.
"$MEMFLOW" run --no-render -o "$SCRATCH/many" -- "$W" threads 48 30000 || fail "48 threads exited $?"
"$CHECK" "$SCRATCH"/many/memflow-*.mfl > "$SCRATCH/many.txt"
bytes=$(( 468 * (64 * 16 + 8 * 2016) + 48 * 16 + 8 * 1128 ))
t=0
while [ "$t" -lt 48 ]; do
    expect_eq "48 threads, thread $t" "t$t: allocs=30000 frees=30000 bytes=$bytes" \
        "$(logline "$SCRATCH/many.txt" "t$t:" | sed 's/ actual=.*//')"
    t=$((t + 1))
done
grep -q "unknown_frees=0" "$SCRATCH/many.txt" || fail "48 threads: unknown frees: $(cat "$SCRATCH/many.txt")"

# memflow_dumps() mid-run sees every record made so far, staged or not:
# 100000 allocations in "mid:", half of them freed.
"$MEMFLOW" run --no-render -o "$SCRATCH/dumps" -- "$W" dumps 100000 > "$SCRATCH/dumps.json" ||
    fail "dumps run exited $?"
expect_eq "dumps mid-run" "100000 50000 5000000" \
    "$(json_get "$SCRATCH/dumps.json" "' '.join(str(s[k]) for s in d['scopes'] if s['scope'] == 'mid:' for k in ('alloc_count', 'free_count', 'live_bytes_end'))")"

# The server memflow_dumps() starts under memflow run reads the log as one
# the stage copies into (MEMFLOW_SERVE_STAGED=1 in its environment): past a
# chunk's seal a record may be half copied (tests/check_reader.c,
# staged_log_opened_while_copied).
start_ready serving "$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/serving" -- \
    "$W" serving 1000
server=""
for cmdline in /proc/[0-9]*/cmdline; do
    if tr '\0' ' ' < "$cmdline" 2> /dev/null |
        grep -qF "serve $SCRATCH/serving/memflow-$READY_PID.mfl"; then
        server=${cmdline%/cmdline}
    fi
done
[ -n "$server" ] || fail "serving: no memflow serve of the run's log is running"
tr '\0' '\n' < "$server/environ" | grep -qx MEMFLOW_SERVE_STAGED=1 ||
    fail "serving: the server does not read the log as staged (its MEMFLOW_ variables:" \
        "$(tr '\0' '\n' < "$server/environ" | grep '^MEMFLOW_' | tr '\n' ' '))"
kill -USR1 "$READY_PID"
wait "$RUNNER" || fail "serving run exited $?"

# memflow run killed while the program goes on: the program writes what it
# staged itself, nothing is lost, and its exit is recorded.
start_ready outlive "$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/outlive" -- "$W" outlive 100000
kill -KILL "$RUNNER"
wait "$RUNNER" 2>/dev/null || true
kill -USR1 "$READY_PID"
wait_gone "$READY_PID" outlive
"$CHECK" "$SCRATCH"/outlive/memflow-*.mfl > "$SCRATCH/outlive.txt"
expect_eq "outlive, before" "before: allocs=100000 frees=100000 bytes=6400000" \
    "$(logline "$SCRATCH/outlive.txt" before: | sed 's/ actual=.*//')"
expect_eq "outlive, after" "after: allocs=100000 frees=100000 bytes=6400000" \
    "$(logline "$SCRATCH/outlive.txt" after: | sed 's/ actual=.*//')"
grep -q "finished=1" "$SCRATCH/outlive.txt" || fail "outlive: log not marked finished"

echo "alloc_e2e: ok"
