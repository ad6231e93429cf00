#!/bin/sh
# log_faults.sh - the log under faults a real program causes, end to end under
# `memflow run`: a program that closes every descriptor and reuses the log's
# number; a file size limit smaller than the log.  Counts are exact.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/alloc_workload"
CHECK="$top_builddir/tests/logcheck"
HEADER="$top_builddir/tests/logheader"

# field LOGHEADER-OUTPUT KEY: one value of tests/logheader's output
field() { sed -n "s/^$2=//p" "$1"; }
# field_flags LOG: the header's flags (offset 20, little-endian u32)
field_flags() { od -An -tu4 -j20 -N4 "$1" | tr -d ' '; }
# kept_events LOGCHECK-OUTPUT: "allocs + frees" of the whole log (a free whose
# allocation was dropped counts too: it is not in its scope's line)
kept_events() { sed -n 's/^total allocs=\([0-9]*\) frees=\([0-9]*\) .*/\1 + \2/p' "$1"; }

# Descriptor reuse: the program closes everything, opens its own file until it
# has the log's old number, then allocates 100000 blocks (several chunks).
# memflow never writes into the program's file and loses nothing.
own="$SCRATCH/own-file"
status=0
"$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/fds" -- "$W" closefds 100000 "$own" || status=$?
expect_eq "closefds status (4: its file was written into, 5: no reuse)" 0 "$status"
expect_eq "the program's own file" "own data" "$(cat "$own")"
set -- "$SCRATCH"/fds/memflow-*.mfl
[ $# -eq 1 ] || fail "closefds: expected one log, got $#"
"$CHECK" "$1" > "$SCRATCH/fds.txt" || fail "closefds: logcheck exited $?: $(cat "$SCRATCH/fds.txt")"
expect_eq "events after the descriptors were closed" "after: allocs=100000 frees=100000 bytes=3200000" \
    "$(grep '^after: ' "$SCRATCH/fds.txt" | sed 's/ actual=.*//')"
grep -q "finished=1" "$SCRATCH/fds.txt" || fail "closefds: log not finished"

# memflow run keeps the next chunks of the log reserved and in the page cache
# while the program runs (cli/run_ahead.c); once the program is gone the log
# ends at its last claimed chunk again, with no disk blocks beyond it, and
# every event is in it.
"$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/ahead" -- "$W" threads 1 300000 ||
    fail "ahead: exited $?"
set -- "$SCRATCH"/ahead/memflow-*.mfl
"$HEADER" "$1" > "$SCRATCH/ahead.h" || fail "ahead: logheader exited $?"
claimed=$(field "$SCRATCH/ahead.h" chunks_claimed)
expect_eq "ahead: file size" $((claimed * 1048576)) "$(field "$SCRATCH/ahead.h" file_size)"
allocated=$(field "$SCRATCH/ahead.h" allocated)
[ "$allocated" -le $((claimed * 1048576 + 65536)) ] ||
    fail "ahead: $allocated bytes on disk for $claimed chunks"
"$CHECK" "$1" > "$SCRATCH/ahead.txt" || fail "ahead: logcheck exited $?"
expect_eq "ahead: events" "t0: allocs=300000 frees=300000" \
    "$(grep '^t0: ' "$SCRATCH/ahead.txt" | sed 's/ bytes=.*//')"

# A file size limit (ulimit -f) smaller than the log: the program runs to its
# own exit status (no SIGXFSZ), the header says DROPPED with the count, and
# one stderr line says how many.  Every event is either in the log or counted.
status=0
prlimit --fsize=$((4 * 1048576)) "$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/fsize" -- \
    "$W" threads 1 300000 2> "$SCRATCH/fsize.err" || status=$?
expect_eq "exit status under a 4 MiB file size limit" 0 "$status"
set -- "$SCRATCH"/fsize/memflow-*.mfl
"$HEADER" "$1" > "$SCRATCH/fsize.h" || fail "fsize: logheader exited $?"
dropped=$(field "$SCRATCH/fsize.h" dropped_events)
[ "$dropped" -gt 0 ] || fail "fsize: dropped_events is '$dropped'"
expect_eq "DROPPED flag" 2 $(( $(field "$SCRATCH/fsize.h" flags) & 2 ))
expect_eq "stderr lines about dropped events" 1 "$(grep -c 'events were dropped' "$SCRATCH/fsize.err")"
grep -q ": $dropped events were dropped" "$SCRATCH/fsize.err" ||
    fail "fsize: stderr does not give the header's count $dropped: $(cat "$SCRATCH/fsize.err")"
"$CHECK" "$1" > "$SCRATCH/fsize.txt" || true
kept=$(kept_events "$SCRATCH/fsize.txt")
accounted=$(( ${kept:-0} + dropped ))
[ "$accounted" -ge 600000 ] && [ "$accounted" -le 600010 ] ||
    fail "fsize: kept ($kept) + dropped ($dropped) = $accounted, expected 600000 events"
expect_eq "the log stays within the limit" $((4 * 1048576)) "$(field "$SCRATCH/fsize.h" file_size)"

# A full disk, then space again: strace makes the kernel refuse the
# fallocate calls 4 to 30 of each thread with ENOSPC (the header and two
# chunks fit first).  The program exits 0, every event is kept or counted,
# and once space is back the log grows again without a hole (failed claims
# used no chunk).  Twice: with the program writing its log file itself
# (MEMFLOW_STAGE=0), and through memflow run's staging file (the default),
# where memflow run reserves the log's space ahead of the program until the
# disk refuses it too (its own calls 4 to 30), and the program then
# reserves its chunks itself (OPS large enough to outgrow what memflow run
# reserved).
full_disk() { # NAME MEMFLOW_STAGE OPS
    name=$1 ops=$3
    status=0
    MEMFLOW_STAGE=$2 "$STRACE" -f -o /dev/null -e trace=fallocate \
        -e inject=fallocate:error=ENOSPC:when=4..30 \
        "$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/$name" -- "$W" threads 1 "$ops" \
        2> "$SCRATCH/$name.err" || status=$?
    expect_eq "$name: exit status on a full disk" 0 "$status"
    set -- "$SCRATCH/$name"/memflow-*.mfl
    "$HEADER" "$1" > "$SCRATCH/$name.h" || fail "$name: logheader exited $?"
    dropped=$(field "$SCRATCH/$name.h" dropped_events)
    claimed=$(field "$SCRATCH/$name.h" chunks_claimed)
    [ "$dropped" -gt 0 ] || fail "$name: nothing dropped: $(cat "$SCRATCH/$name.h")"
    [ "$claimed" -gt 3 ] || fail "$name: the log did not grow again once space was back ($claimed chunks)"
    expect_eq "$name: holes" 0 "$(field "$SCRATCH/$name.h" holes)"
    expect_eq "$name: file size" $((claimed * 1048576)) "$(field "$SCRATCH/$name.h" file_size)"
    # Every byte of the file is on disk (the file system may add a block of its
    # own, e.g. ext4's extent index, on top).
    allocated=$(field "$SCRATCH/$name.h" allocated)
    [ "$allocated" -ge $((claimed * 1048576)) ] && [ "$allocated" -le $((claimed * 1048576 + 65536)) ] ||
        fail "$name: $allocated bytes on disk for $claimed chunks"
    "$CHECK" "$1" > "$SCRATCH/$name.txt" || true
    kept=$(kept_events "$SCRATCH/$name.txt")
    accounted=$(( ${kept:-0} + dropped ))
    [ "$accounted" -ge $((2 * ops)) ] && [ "$accounted" -le $((2 * ops + 10)) ] ||
        fail "$name: kept ($kept) + dropped ($dropped) = $accounted, expected $((2 * ops)) events"
    grep -q ": $dropped events were dropped" "$SCRATCH/$name.err" ||
        fail "$name: stderr: $(cat "$SCRATCH/$name.err")"
}
if [ -n "${STRACE:-}" ] && "$STRACE" -o /dev/null true 2> /dev/null; then
    full_disk enospc 0 300000
    full_disk enospc-staged 1 1000000
else
    echo "log_faults: SKIP the full-disk part: no strace, or ptrace is not allowed here"
fi

# Rendering under a file size limit of 5 MiB (bash's ulimit -f 5120): the outputs that
# do not fit are named with why, the others written, no temporary file left,
# the log compacted; exit 1 after a program that exited 0, else the
# program's own status.  memflow ignores SIGXFSZ in itself, never in the
# program: a program writing past the limit is killed by it as without memflow.
limited() { # NAME CMD...: memflow run under the limit; its status in $status
    name=$1
    shift
    status=0
    prlimit --fsize=$((5 * 1048576)) "$MEMFLOW" run -o "$SCRATCH/$name" -- "$@" > /dev/null \
        2> "$SCRATCH/$name.err" || status=$?
}
limited limit "$W" threads 1 100000
expect_eq "render over the limit: exit status" 1 "$status"
set -- "$SCRATCH"/limit/memflow-*.mfl
log=$(basename "$1")
# profile.json (about 8 MB) does not fit; memory_flow.svg (0.3 MB: its
# blocks of a pixel are pixels) and stats.txt do
expect_eq "render over the limit: files" "$log memory_flow.svg stats.txt" \
    "$(ls -A "$SCRATCH/limit" | tr '\n' ' ' | sed 's/ $//')"
grep -qxF "memflow run: $SCRATCH/limit/profile.json: cannot write: File too large" \
    "$SCRATCH/limit.err" || fail "render over the limit: profile.json: $(cat "$SCRATCH/limit.err")"
grep -qxF "memflow: 1 log rendered into $SCRATCH/limit (memory_flow.svg, stats.txt)" \
    "$SCRATCH/limit.err" || fail "render over the limit: $(cat "$SCRATCH/limit.err")"
expect_eq "render over the limit: the log compacted" 6 $(( $(field_flags "$1") & 6 ))
# the program's own status comes first (its processes' logs are rendered
# over the limit too)
limited limit7 sh -c "\"$W\" threads 1 100000; exit 7"
expect_eq "render over the limit after a program that exited 7" 7 "$status"
grep -qxF "memflow run: $SCRATCH/limit7/profile.json: cannot write: File too large" \
    "$SCRATCH/limit7.err" || fail "limit7: $(cat "$SCRATCH/limit7.err")"
[ -z "$(ls -A "$SCRATCH/limit7" | grep '^\.')" ] || fail "limit7: left $(ls -A "$SCRATCH/limit7")"
# the program's own writes past the limit: SIGXFSZ, as without memflow
limited xfsz sh -c "head -c 6000000 /dev/zero > \"$SCRATCH/big\""
expect_eq "a program writing past the limit (SIGXFSZ kills its head)" 153 "$status"

echo "log_faults: ok"
