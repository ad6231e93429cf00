#!/bin/sh
# log_faults.sh - the log under faults a real program causes, end to end under
# `memflow run`: a program that closes every descriptor and reuses the log's
# number; a file size limit smaller than the log.  Counts are exact.
. "$top_srcdir/tests/lib.sh"
W="$top_builddir/tests/alloc_workload"
CHECK="$top_builddir/tests/logcheck"
HEADER="$top_builddir/tests/logheader"

# field LOGHEADER-OUTPUT KEY: one value of tests/logheader's output
field() { sed -n "s/^$2=//p" "$1"; }

# Descriptor reuse: the program closes everything, opens its own file until it
# has the log's old number, then allocates 100000 blocks (several chunks).
# memflow never writes into the program's file and loses nothing.
own="$SCRATCH/own-file"
status=0
"$MEMFLOW" run --no-render -o "$SCRATCH/fds" -- "$W" closefds 100000 "$own" || status=$?
expect_eq "closefds status (4: its file was written into, 5: no reuse)" 0 "$status"
expect_eq "the program's own file" "own data" "$(cat "$own")"
set -- "$SCRATCH"/fds/memflow-*.mfl
[ $# -eq 1 ] || fail "closefds: expected one log, got $#"
"$CHECK" "$1" > "$SCRATCH/fds.txt" || fail "closefds: logcheck exited $?: $(cat "$SCRATCH/fds.txt")"
expect_eq "events after the descriptors were closed" "after: allocs=100000 frees=100000 bytes=3200000" \
    "$(grep '^after: ' "$SCRATCH/fds.txt" | sed 's/ actual=.*//')"
grep -q "finished=1" "$SCRATCH/fds.txt" || fail "closefds: log not finished"

echo "log_faults: ok"
