#!/bin/bash
# compact_run.sh - the compaction during `memflow run` (cli/run_compact.c):
# the logs it leaves read exactly as their live form and as `memflow
# compact` of it (the same counts, the same `memflow stats`, the same frames
# byte for byte); a full disk leaves the live log and no file behind; a
# SIGKILL to the program, to memflow run or to both, at random moments,
# loses nothing the program acknowledged, and the unfinished compact file
# is never read as a log and is removed by the next memflow command.
. "$top_srcdir/tests/lib.sh"
needs_preload
W=$top_builddir/tests/alloc_workload
CHECK=$top_builddir/tests/logcheck
export MEMFLOW_RUN_COMPACT=normal   # a busy machine: not only on idle cores
export MEMFLOW_RUN_REPORT=1

# first_log DIR: wait for the first log in DIR and print its path
first_log() {
    for _ in $(seq 4000); do
        for f in "$1"/memflow-*.mfl; do [ -e "$f" ] && { echo "$f"; return 0; }; done
        sleep 0.005
    done
    return 1
}
flags_of() { od -An -t u4 -j 20 -N 4 "$1" | tr -d ' '; }
no_temps() { [ -z "$(ls -A "$1" | grep '^\.')" ] || fail "$2: files left: $(ls -A "$1")"; }

# ---- the same log as the live form and as memflow compact --------------
# 2M operations on two threads, with stacks; a hard link keeps the live
# form (the rename replaces only the name).
d=$SCRATCH/same
"$MEMFLOW" run --no-render --stacks=8 -o "$d" -- "$W" threads 2 500000 > /dev/null \
    2> "$d.err" &
runner=$!
log=$(first_log "$d") || fail "no log appeared"
ln "$log" "$SCRATCH/same.live"
wait "$runner" || fail "memflow run: exit status $? ($(cat "$d.err"))"
expect_eq "compacted in the run" 4 $(( $(flags_of "$log") & 4 ))
expect_eq "the link kept the live form" 0 $(( $(flags_of "$SCRATCH/same.live") & 4 ))
grep -q "compaction during the run: [1-9][0-9]* chunks before the program's exit, 0 left.*; finished at the end" "$d.err" ||
    fail "no chunk compacted during the run: $(cat "$d.err")"
"$CHECK" "$log" > "$SCRATCH/same.check"
"$CHECK" "$SCRATCH/same.live" > "$SCRATCH/live.check"
cmp -s "$SCRATCH/same.check" "$SCRATCH/live.check" || fail "counts differ from the live form"
grep -qx "t0: allocs=500000 frees=500000 .*" "$SCRATCH/same.check" ||
    fail "t0: $(cat "$SCRATCH/same.check")"
grep -qx "t1: allocs=500000 frees=500000 .*" "$SCRATCH/same.check" ||
    fail "t1: $(cat "$SCRATCH/same.check")"
"$MEMFLOW" stats "$SCRATCH/same.live" > "$SCRATCH/live.stats"
"$MEMFLOW" compact "$SCRATCH/same.live" > /dev/null
"$MEMFLOW" stats "$log" > "$SCRATCH/same.stats"
"$MEMFLOW" stats "$SCRATCH/same.live" > "$SCRATCH/offline.stats"
cmp -s "$SCRATCH/same.stats" "$SCRATCH/live.stats" || fail "stats differ from the live form"
cmp -s "$SCRATCH/same.stats" "$SCRATCH/offline.stats" || fail "stats differ from memflow compact"
grep -q "^same frames [1-9]" <("$PYTHON3" "$top_srcdir/tests/compact_frames.py" "$log" \
    "$SCRATCH/same.live") || fail "frames differ from memflow compact"
no_temps "$d" same

# ---- compacted beside the rendering -----------------------------------------
# With the outputs (the default), the rest of the log is compacted on a
# thread of its own while the analysis reads it; the compact form replaces
# the log only once it is read: the outputs equal memflow render's of the
# compacted log, and of its live form (a hard link keeps it).
d=$SCRATCH/beside
"$MEMFLOW" run --stacks=4 -o "$d" -- "$W" threads 2 300000 > /dev/null 2> "$d.err" &
runner=$!
log=$(first_log "$d") || fail "no log appeared"
ln "$log" "$SCRATCH/beside.live"
wait "$runner" || fail "memflow run: exit status $? ($(cat "$d.err"))"
expect_eq "compacted beside the rendering" 4 $(( $(flags_of "$log") & 4 ))
grep -q "^memflow: 1 log compacted: " "$d.err" || fail "no compaction line: $(cat "$d.err")"
grep -q "after the program's exit: .* s to finish compacting" "$d.err" ||
    fail "no report of the compaction's end: $(cat "$d.err")"
for form in "$log" "$SCRATCH/beside.live"; do
    rm -rf "$d.offline"
    "$MEMFLOW" render "$form" -o "$d.offline" 2> /dev/null || fail "render of $form"
    for f in stats.txt profile.json memory_flow.svg; do
        cmp -s "$d/$f" "$d.offline/$f" || fail "$f differs from memflow render of $form"
    done
done
no_temps "$d" beside

# ---- killed while compacting beside the rendering ---------------------------
# memflow run SIGKILLs itself at the first step of the compaction after the
# program's exit (MEMFLOW_TEST_COMPACT_KILL_AT=1), while it renders: the live
# log stays whole (every event of the run), the unfinished compact file is
# no log, and the next memflow command removes it and reads the whole run.
d=$SCRATCH/tailkill
status=0
MEMFLOW_TEST_COMPACT_KILL_AT=1 "$MEMFLOW" run --stacks=4 -o "$d" -- "$W" threads 2 300000 \
    > /dev/null 2> "$d.err" || status=$?
expect_eq "killed in the compaction after the exit: status" 137 "$status"
set -- "$d"/memflow-*.mfl
[ -e "$1" ] && [ $# = 1 ] || fail "killed in the tail: logs $*"
expect_eq "killed in the tail: the log stays live" 0 $(( $(flags_of "$1") & 4 ))
"$CHECK" "$1" > "$SCRATCH/tailkill.check" || fail "killed in the tail: logcheck $?"
grep -qx "t0: allocs=300000 frees=300000 .*" "$SCRATCH/tailkill.check" &&
    grep -qx "t1: allocs=300000 frees=300000 .*" "$SCRATCH/tailkill.check" ||
    fail "killed in the tail: $(cat "$SCRATCH/tailkill.check")"
"$MEMFLOW" render "$1" -o "$d.out" --formats stats.json 2> /dev/null ||
    fail "render after the kill exited $?"
no_temps "$d" tailkill
# the same counts as the run of the same program that was not killed
"$MEMFLOW" render "$SCRATCH"/beside/memflow-*.mfl -o "$d.beside" --formats stats.json \
    2> /dev/null || fail "render of the run not killed exited $?"
"$PYTHON3" - "$d.out/stats.json" "$d.beside/stats.json" <<'PY' || fail "killed in the tail: counts"
import json, sys
k, b = (json.load(open(f))["devices"][0] for f in sys.argv[1:3])
assert (k["alloc_count"], k["free_count"]) == (b["alloc_count"], b["free_count"]), (k, b)
assert k["alloc_count"] >= 600000 and k["free_count"] >= 600000, k
PY

# ---- several processes: fork, exec, a killed child ------------------------
d=$SCRATCH/procs
"$MEMFLOW" run --no-render --stacks=4 -o "$d" -- sh -c '
    "$1" threads 2 150000 > /dev/null &
    "$1" kill 300 > "$2" & k=$!
    until grep -q ready "$2" 2> /dev/null; do sleep 0.01; done
    kill -KILL $k; wait
    exec "$1" fork' sh "$W" "$SCRATCH/procs.ready" > /dev/null 2> "$d.err" ||
    fail "memflow run: $? ($(cat "$d.err"))"
for log in "$d"/memflow-*.mfl; do
    expect_eq "$log compacted" 4 $(( $(flags_of "$log") & 4 ))
    "$CHECK" "$log"
done > "$SCRATCH/procs.check"
for want in "t0: allocs=150000 frees=150000" "t1: allocs=150000 frees=150000" \
            "doomed: allocs=300 frees=0" "parent: allocs=10 " "child: allocs=7 "; do
    grep -q "^$want" "$SCRATCH/procs.check" || fail "$want: $(cat "$SCRATCH/procs.check")"
done
no_temps "$d" procs

# ---- a full disk while compacting: the live log stays ---------------------
# A tmpfs of 64 MiB (the stage takes 32) is filled up while the program
# waits; the chunks of the log were reserved before, the compact file's
# frames of the chunks that follow find no room.
if [ "$(id -u)" = 0 ] && unshare -m true 2> /dev/null; then
    d=$SCRATCH/full
    mkdir -p "$d"
    status=0
    unshare -m bash -c '
        mount -t tmpfs -o size=64m tmpfs "$1" || exit 77
        MEMFLOW_RUN_COMPACT=normal "$2" run --no-render -o "$1/out" -- "$3" linger 60000 > "$1.ready" &
        r=$!
        until grep -q ready "$1.ready" 2> /dev/null; do sleep 0.01; done
        sleep 0.3
        dd if=/dev/zero of="$1/filler" bs=64k 2> /dev/null
        kill -USR1 $(cut -d" " -f2 "$1.ready")
        until grep -q done "$1.ready" 2> /dev/null; do sleep 0.01; done
        sleep 0.5
        kill -USR1 $(cut -d" " -f2 "$1.ready")
        wait $r; s=$?
        rm -f "$1/filler"
        for f in "$1"/out/memflow-*.mfl; do "$4" "$f"; od -An -t u4 -j 20 -N 4 "$f"; done
        ls -A "$1/out"
        exit $s' sh "$d" "$MEMFLOW" "$W" "$CHECK" > "$SCRATCH/full.out" 2> "$d.err" || status=$?
    if [ "$status" != 77 ]; then
        expect_eq "full disk: exit status" 0 "$status"
        grep -q "^memflow run: compact: .*: No space left on device.*live form" "$d.err" ||
            fail "full disk: no clear line: $(cat "$d.err")"
        grep -q "^before: allocs=60000 frees=60000" "$SCRATCH/full.out" &&
            grep -q "^after: allocs=60000 frees=60000" "$SCRATCH/full.out" ||
            fail "full disk: $(cat "$SCRATCH/full.out")"
        flags=$(sed -n 's/^ *\([0-9][0-9]*\)$/\1/p' "$SCRATCH/full.out")
        expect_eq "full disk: the log stays live" 0 $(( flags & 4 ))
        grep -q '^\.' "$SCRATCH/full.out" && fail "full disk: files left: $(cat "$SCRATCH/full.out")"
    fi
fi

# ---- compacted chunks leave the page cache ---------------------------------
# A compacted chunk's writeback starts at once and its pages are given back
# MEMFLOW_RUN_DROP_AFTER seconds later (by default as the run's age and the
# kernel's writeback delay say).  The program pauses long enough for its
# first half's chunks to be given back; then none of the chunks memflow run
# says it gave back may still be cached (chunks the program wrote itself,
# when the drain fell behind on a busy machine, are compacted at the end
# instead and stay cached; the second half's are not due before the exit).
d=$SCRATCH/drop
MEMFLOW_RUN_DROP_AFTER=5 "$MEMFLOW" run --no-render -o "$d" -- "$W" outlive 2000000 \
    > "$d.ready" 2> "$d.err" &
runner=$!
for _ in $(seq 6000); do grep -q ready "$d.ready" 2> /dev/null && break; sleep 0.01; done
grep -q ready "$d.ready" || fail "drop: the program did not get ready"
log=$(first_log "$d") || fail "drop: no log appeared"
sleep 8    # the drop delay, and a margin for a busy machine
size=$(stat -c %s "$log")
res=$(fincore --bytes --noheadings --output RES "$log" | tr -d ' ')
kill -USR1 "$(cut -d" " -f2 "$d.ready")"
wait "$runner" || fail "drop: memflow run: exit status $? ($(cat "$d.err"))"
given=$(sed -n 's/.*; the pages of \([0-9]*\) compacted chunks given back$/\1/p' "$d.err")
[ "${given:-0}" -ge 40 ] || fail "drop: $(grep 'compaction during' "$d.err")"
# the header chunk (the program maps it) besides the chunks not given back
[ "$res" -le $(( size - (given << 20) + (1 << 20) )) ] ||
    fail "drop: $res of the paused program's $size log bytes cached, though $given chunks were given back"
"$CHECK" "$log" > "$d.check"
grep -q "^before: allocs=2000000 frees=2000000" "$d.check" || fail "drop: $(cat "$d.check")"
grep -q "^after: allocs=2000000 frees=2000000" "$d.check" || fail "drop: $(cat "$d.check")"
no_temps "$d" drop

# ---- a large replaced log is freed after memflow run's exit ---------------
# Freeing the blocks of the live log the compact form replaced takes time
# that grows with its size; above 256 MiB a child process takes that last
# close after memflow run has exited.  It holds neither the output nor the
# folder: a command substitution ends with memflow run, and soon no process
# holds a deleted file of the folder.
d=$SCRATCH/freed
out=$("$MEMFLOW" run --no-render -o "$d" -- "$W" threads 1 6000000 2>&1) ||
    fail "freed: memflow run: exit status $? ($out)"
grep -q "the live log the compact form replaced (.* MB) is freed by process [0-9]* after memflow run's exit" <<< "$out" ||
    fail "freed: no background close: $out"
log=$(first_log "$d") || fail "freed: no log"
expect_eq "freed: compacted" 4 $(( $(flags_of "$log") & 4 ))
"$CHECK" "$log" > "$d.check"
grep -q "^t0: allocs=6000000 frees=6000000" "$d.check" || fail "freed: $(cat "$d.check")"
held() { ls -l /proc/[0-9]*/fd 2> /dev/null | grep -c "$d/.*(deleted)" || true; }
for _ in $(seq 100); do [ "$(held)" = 0 ] && break; sleep 0.1; done
expect_eq "freed: deleted files of the folder still open after 10 s" 0 "$(held)"
no_temps "$d" freed

# ---- SIGKILL at random moments ------------------------------------------
# alloc_workload ack counts in a shared file every call that returned; the
# logs must hold at least those (one more at most: a call recorded but
# killed before it returned).  Whom: the program, memflow run, both.
RANDOM=${COMPACT_RUN_SEED:-22}
trials=${COMPACT_RUN_TRIALS:-6}
ack_of() { od -An -t u8 -N 8 "$1" | tr -d ' '; }
pid_of() { od -An -t u8 -j 8 -N 8 "$1" | tr -d ' '; }
for trial in $(seq "$trials"); do
    for whom in program runner both; do
        d=$SCRATCH/kill-$whom-$trial; ack=$d.ack
        "$MEMFLOW" run --no-render -o "$d" -- "$W" ack 2000000 "$ack" > /dev/null 2> "$d.err" &
        runner=$!
        prog=0
        for _ in $(seq 4000); do
            [ -s "$ack" ] && prog=$(pid_of "$ack") && [ "$prog" != 0 ] && break
            sleep 0.005
        done
        [ "$prog" != 0 ] || fail "$whom $trial: the program did not start"
        sleep "0.$(printf '%03d' $((RANDOM % 400)))"
        case $whom in
            program) kill -KILL "$prog" ;;
            runner) kill -KILL "$runner"; sleep "0.$(printf '%03d' $((RANDOM % 200)))"
                    kill -KILL "$prog" ;;
            both) kill -KILL "$runner" "$prog" ;;
        esac
        wait "$runner" 2> /dev/null || true
        while kill -0 "$prog" 2> /dev/null; do sleep 0.01; done
        did=$(ack_of "$ack")
        for f in "$d"/.memflow-*.compact-*; do   # no temporary file is a log
            [ -e "$f" ] || continue
            st=0; "$CHECK" "$f" > /dev/null 2> "$d.tmpcheck" || st=$?
            [ "$st" = 1 ] && grep -q "not a memflow log" "$d.tmpcheck" ||
                fail "$whom $trial: $f read as a log (status $st)"
        done
        "$MEMFLOW" stats "$d"/memflow-*.mfl > /dev/null 2> "$d.stats.err" ||
            fail "$whom $trial: stats: $(cat "$d.stats.err")"
        no_temps "$d" "$whom $trial"
        held=$(for log in "$d"/memflow-*.mfl; do "$CHECK" "$log"; done |
            sed -n 's/^ack: allocs=\([0-9]*\) frees=\([0-9]*\) .*/\1 \2/p' |
            awk '{s += $1 + $2} END {print s + 0}')
        # a call recorded but killed before it returned is held, not acknowledged
        [ "$held" -ge "$did" ] && [ "$held" -le $((did + 1)) ] ||
            fail "$whom $trial: the program did $did, the logs hold $held"
    done
done
