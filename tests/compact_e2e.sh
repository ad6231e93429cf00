#!/bin/sh
# compact_e2e.sh - the compact form at rest, end to end, on logs of real
# programs: `memflow stats` and `memflow render` give byte-identical outputs
# (and the same exit status and damage messages) before and after
# `memflow compact`; `memflow run` compacts its logs unless --no-compact; a
# log whose process still runs is refused until the process is gone; links
# and non-logs are refused; a SIGKILL at every step of a compaction (and at
# moments picked from a list) leaves either the live log byte for byte or a
# compact log with the same statistics, and the next compaction cleans up.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/alloc_workload"
GEN="$top_builddir/tests/render_gen"
CHECK="$top_builddir/tests/logcheck"
CHUNK=1048576

# The header's flags (offset 20, little-endian u32) of a log.
flags_of() { od -An -tu4 -j20 -N4 "$1" | tr -d ' '; }
is_compact() { [ $(( $(flags_of "$1") & 4 )) -ne 0 ]; }

# Everything memflow derives from LOG..., with exit statuses, into DIR.
outputs() { # DIR LOG...
    dir=$1; shift
    mkdir -p "$dir"
    set +e
    "$MEMFLOW" stats "$@" >"$dir/stats.txt" 2>"$dir/stats.err"; echo $? >"$dir/stats.rc"
    "$MEMFLOW" stats "$@" --format json >"$dir/stats.json" 2>/dev/null
    "$MEMFLOW" render "$@" -o "$dir/render" >/dev/null 2>"$dir/render.err"; echo $? >"$dir/render.rc"
    set -e
    sed -i "s|$dir/render|OUT|" "$dir/render.err" # where it went is not what it says
}

# NAME LOG...: compact the logs; every output is the same as before.
same_after_compact() {
    name=$1; shift
    outputs "$SCRATCH/$name.live" "$@"
    for log in "$@"; do
        "$MEMFLOW" compact "$log" >"$SCRATCH/$name.compact.out" ||
            fail "$name: memflow compact $log exited $?"
        is_compact "$log" || fail "$name: $log is not marked compact"
    done
    outputs "$SCRATCH/$name.compact" "$@"
    [ -s "$SCRATCH/$name.live/stats.json" ] || fail "$name: no statistics"
    diff -r "$SCRATCH/$name.live" "$SCRATCH/$name.compact" >"$SCRATCH/$name.diff" ||
        fail "$name: outputs differ after compaction: $(head -c 600 "$SCRATCH/$name.diff")"
}

# -- the existing logs of the render tests, compacted ----------------------
same_after_compact basic "$("$GEN" "$SCRATCH/basic" basic)"
same_after_compact escape "$("$GEN" "$SCRATCH/escape" escape)"
same_after_compact kinds "$("$GEN" "$SCRATCH/kinds" kinds)"
BIG=$("$GEN" "$SCRATCH/big" big 100000 scoped)
cp "$BIG" "$SCRATCH/big.mfl"
same_after_compact big "$BIG"
expect_eq "big: stats exit" 0 "$(cat "$SCRATCH/big.compact/stats.rc")"

# damaged logs (render_damage.sh's): same events, same message, exit 3
cp "$SCRATCH/big.mfl" "$SCRATCH/cut.mfl"
truncate -s $((3 * CHUNK + 5000)) "$SCRATCH/cut.mfl"
same_after_compact cut "$SCRATCH/cut.mfl"
expect_eq "cut: stats exit" 3 "$(cat "$SCRATCH/cut.compact/stats.rc")"
grep -q "cut.mfl: offset $((3 * CHUNK + 4984)): file truncated" "$SCRATCH/cut.compact/stats.err" ||
    fail "cut: damage message: $(cat "$SCRATCH/cut.compact/stats.err")"
cp "$SCRATCH/big.mfl" "$SCRATCH/bad.mfl"
printf '\377\377\377\377\377\377\377\377' |
    dd of="$SCRATCH/bad.mfl" bs=1 seek=$((2 * CHUNK + 16)) conv=notrunc 2>/dev/null
same_after_compact bad "$SCRATCH/bad.mfl"
expect_eq "bad: render exit" 3 "$(cat "$SCRATCH/bad.compact/render.rc")"
grep -q "bad.mfl: offset $((2 * CHUNK + 16)): unknown record type" "$SCRATCH/bad.compact/stats.err" ||
    fail "bad: damage message: $(cat "$SCRATCH/bad.compact/stats.err")"

# logs of real programs: threads sharing chunks, a fork (two logs merged)
"$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/threads" -- "$W" threads 4 50000 ||
    fail "threads run exited $?"
same_after_compact threads "$SCRATCH"/threads/memflow-*.mfl
"$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/fork" -- "$W" fork ||
    fail "fork run exited $?"
same_after_compact fork "$SCRATCH"/fork/memflow-*.mfl
"$CHECK" "$SCRATCH"/threads/memflow-*.mfl >"$SCRATCH/threads.txt"
grep -q "finished=1" "$SCRATCH/threads.txt" || fail "logcheck reads the compact log"

# -- memflow run compacts (one line says so), --no-compact does not --------
"$MEMFLOW" run -o "$SCRATCH/run" -- "$W" threads 2 20000 2>"$SCRATCH/run.err" >/dev/null ||
    fail "run exited $?"
expect_eq "compaction lines" 1 "$(grep -c '^memflow: 1 log compacted: .* -> .* (.*x smaller)$' "$SCRATCH/run.err")"
set -- "$SCRATCH"/run/memflow-*.mfl
is_compact "$1" || fail "memflow run left its log live"
"$MEMFLOW" run --no-compact -o "$SCRATCH/live" -- "$W" threads 2 20000 2>"$SCRATCH/live.err" >/dev/null ||
    fail "run --no-compact exited $?"
grep -q compacted "$SCRATCH/live.err" && fail "--no-compact still compacted"
set -- "$SCRATCH"/live/memflow-*.mfl
is_compact "$1" && fail "--no-compact: log is compact"
"$CHECK" "$SCRATCH"/run/memflow-*.mfl | grep '^t[0-9]:' | sed 's/ actual=.*//' | sort >"$SCRATCH/run.scopes"
"$CHECK" "$SCRATCH"/live/memflow-*.mfl | grep '^t[0-9]:' | sed 's/ actual=.*//' | sort >"$SCRATCH/live.scopes"
expect_eq "scopes of the compacted run" 2 "$(wc -l <"$SCRATCH/run.scopes" | tr -d ' ')"
cmp -s "$SCRATCH/run.scopes" "$SCRATCH/live.scopes" || fail "compacted run lost events"

# -- a log still being written is refused; once its process is gone, not ---
PRELOAD="$top_builddir/.libs/libmemflow-preload.so"
fifo="$SCRATCH/ready"
mkfifo "$fifo"
mkdir "$SCRATCH/busy"
MEMFLOW_PATH="$SCRATCH/busy" MEMFLOW_AUTOSTART=1 LD_PRELOAD="$PRELOAD" "$W" kill 5000 >"$fifo" &
read -r word pid <"$fifo"
expect_eq "kill handshake" ready "$word"
set -- "$SCRATCH"/busy/memflow-*.mfl
cp "$1" "$SCRATCH/busy.copy"
set +e
"$MEMFLOW" compact "$1" 2>"$SCRATCH/busy.err"; rc=$?
set -e
expect_eq "compact a log being written" 3 "$rc"
grep -q "$1: still being written: process $pid has it open" "$SCRATCH/busy.err" ||
    fail "busy message: $(cat "$SCRATCH/busy.err")"
cmp -s "$1" "$SCRATCH/busy.copy" || fail "a refused log changed"
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
"$MEMFLOW" compact "$1" >/dev/null || fail "compact after the writer was killed exited $?"
is_compact "$1" || fail "killed process's log not compacted"
"$CHECK" "$1" >"$SCRATCH/busy.txt"
expect_eq "killed writer's events" "doomed: allocs=5000 frees=0 bytes=20000000" \
    "$(grep '^doomed:' "$SCRATCH/busy.txt" | sed 's/ actual=.*//')"

# a file size limit: the write fails, the log stays, nothing is left behind
mkdir "$SCRATCH/limit"
cp "$SCRATCH/big.mfl" "$SCRATCH/limit/l.mfl"
set +e
(ulimit -f 64; "$MEMFLOW" compact "$SCRATCH/limit/l.mfl") 2>"$SCRATCH/limit.err"; rc=$?
set -e
expect_eq "compact over a file size limit" 1 "$rc"
grep -q "l.mfl: cannot write .*: File too large" "$SCRATCH/limit.err" ||
    fail "file size limit message: $(cat "$SCRATCH/limit.err")"
cmp -s "$SCRATCH/limit/l.mfl" "$SCRATCH/big.mfl" || fail "the log changed under a file size limit"
expect_eq "files after a failed compaction" "l.mfl" "$(ls -A "$SCRATCH/limit")"

# a compact log cut short keeps its intact frames, says what is lost, exit 3
# (tests/compact_damage.sh cuts and flips every frame)
set -- "$SCRATCH"/threads/memflow-*.mfl
head -c 5000 "$1" >"$SCRATCH/cutcompact.mfl"
set +e
"$MEMFLOW" stats "$SCRATCH/cutcompact.mfl" >/dev/null 2>"$SCRATCH/cutcompact.err"; rc=$?
set -e
expect_eq "stats of a compact log cut short" 3 "$rc"
grep -q "cutcompact.mfl: offset 5000: compact log: no MFCOMPCT trailer" "$SCRATCH/cutcompact.err" ||
    fail "cut compact log message: $(cat "$SCRATCH/cutcompact.err")"

# -- links, non-logs, usage --------------------------------------------------
cp "$SCRATCH/big.mfl" "$SCRATCH/target.mfl"
ln -s target.mfl "$SCRATCH/link.mfl"
set +e
"$MEMFLOW" compact "$SCRATCH/link.mfl" 2>"$SCRATCH/link.err"; rc=$?
expect_eq "compact a symlink" 4 "$rc"
grep -q "link.mfl: is a symbolic link" "$SCRATCH/link.err" || fail "link message: $(cat "$SCRATCH/link.err")"
[ -L "$SCRATCH/link.mfl" ] || fail "the link was replaced"
cmp -s "$SCRATCH/target.mfl" "$SCRATCH/big.mfl" || fail "the link's target changed"
"$MEMFLOW" compact "$top_srcdir/tests/lib.sh" 2>"$SCRATCH/err"; expect_eq "compact a non-log" 4 "$?"
grep -q "not a memflow log" "$SCRATCH/err" || fail "non-log message"
"$MEMFLOW" compact "$SCRATCH/missing.mfl" 2>"$SCRATCH/err"; expect_eq "compact a missing log" 1 "$?"
grep -q "missing.mfl: cannot open" "$SCRATCH/err" || fail "missing-log message"
"$MEMFLOW" compact 2>/dev/null; expect_eq "compact without a log" 2 "$?"
"$MEMFLOW" compact --level 3 x 2>/dev/null; expect_eq "compact unknown option" 2 "$?"
"$MEMFLOW" compact --help >/dev/null; expect_eq "compact --help" 0 "$?"
set -e

# -- SIGKILL at every step, then at moments from a list ----------------------
"$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/kill" -- "$W" threads 3 100000 ||
    fail "kill run exited $?"
set -- "$SCRATCH"/kill/memflow-*.mfl
ORIG="$SCRATCH/kill.orig"
WORK="$SCRATCH/kill/work.mfl"
mv "$1" "$ORIG"
cp "$ORIG" "$WORK"
"$MEMFLOW" stats "$WORK" --format json >"$SCRATCH/kill.json"
# the live log byte for byte, or a compact log with the same statistics
whole() { # WHAT
    cmp -s "$WORK" "$ORIG" && return 0
    is_compact "$WORK" || fail "$1: neither the live log nor a compact one"
    "$MEMFLOW" stats "$WORK" --format json >"$SCRATCH/kill.now.json" ||
        fail "$1: stats of the compact log exited $?"
    cmp -s "$SCRATCH/kill.now.json" "$SCRATCH/kill.json" || fail "$1: statistics changed"
}
# steps: one per frame written, then "synced", then "renamed"
states=""
n=1
while :; do
    cp "$ORIG" "$WORK"
    set +e
    MEMFLOW_TEST_COMPACT_KILL_AT=$n "$MEMFLOW" compact "$WORK" >/dev/null 2>&1; rc=$?
    set -e
    [ "$rc" -eq 0 ] && break
    expect_eq "exit when killed at step $n" 137 "$rc"
    whole "kill at step $n"
    if cmp -s "$WORK" "$ORIG"; then
        states="${states}L"
        [ -n "$(ls -A "$SCRATCH/kill" | grep '^\.work\.mfl\.compact-')" ] ||
            fail "step $n: the killed compaction left nothing to clean (killed too late?)"
    else
        states="${states}C"
    fi
    n=$((n + 1))
    [ $n -lt 1000 ] || fail "the compaction never finished"
done
whole "not killed"
is_compact "$WORK" || fail "not compact when not killed"
[ $n -ge 6 ] || fail "only $((n - 1)) steps: the log is too small to test"
expect_eq "live until the rename, compact after it" \
    "$(printf '%*s' $((n - 2)) '' | tr ' ' L)C" "$states"
for delay in 0 0.002 0.005 0.01 0.02 0.04 0.08 0.15; do
    cp "$ORIG" "$WORK"
    "$MEMFLOW" compact "$WORK" >/dev/null 2>&1 &
    compactor=$!
    sleep "$delay"
    kill -KILL "$compactor" 2>/dev/null || true
    wait "$compactor" 2>/dev/null || true
    whole "kill after $delay s"
done
# the next compaction completes and removes what the killed ones left
cp "$ORIG" "$WORK"
"$MEMFLOW" compact "$WORK" >/dev/null || fail "compact after the kills exited $?"
whole "after the kills"
is_compact "$WORK" || fail "not compact after the kills"
expect_eq "files left in the folder" "work.mfl" "$(ls -A "$SCRATCH/kill")"
echo "compact_e2e: ok"
