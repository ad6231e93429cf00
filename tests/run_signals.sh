#!/bin/sh
# run_signals.sh - `memflow run` as a process among others: signals sent to
# it reach the program and the outputs are still written; a program it
# cannot profile (statically linked) is named as such; an install whose
# path has a space still preloads.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/alloc_workload"
HEADER="$top_builddir/tests/logheader"

# SIGTERM, SIGINT, SIGHUP sent to memflow run (not to the program): the
# program gets it and dies of it, memflow run renders and exits 128+N, and
# the program's log says which signal ended it.
for pair in TERM:15 INT:2 HUP:1; do
    sig=${pair%:*} num=${pair#*:}
    fifo="$SCRATCH/ready-$sig"
    mkfifo "$fifo"
    # every signal at its default, whatever this shell inherited (under nohup,
    # SIGHUP is ignored, and an ignored signal stays ignored in the program)
    env --default-signal "$MEMFLOW" run -o "$SCRATCH/$sig" -- "$W" kill 100 > "$fifo" \
        2> "$SCRATCH/$sig.err" &
    runner=$!
    read -r word pid < "$fifo"
    expect_eq "SIG$sig: ready" ready "$word"
    kill -s "$sig" "$runner"
    status=0
    wait "$runner" || status=$?
    expect_eq "SIG$sig: memflow run status" $((128 + num)) "$status"
    kill -0 "$pid" 2> /dev/null && fail "SIG$sig: the program $pid still runs"
    test -s "$SCRATCH/$sig/memory_flow.svg" || fail "SIG$sig: no memory_flow.svg: $(cat "$SCRATCH/$sig.err")"
    "$HEADER" "$SCRATCH"/$sig/memflow-*.mfl > "$SCRATCH/$sig.h"
    expect_eq "SIG$sig: end recorded" "end_how=4 end_status=$num" \
        "$(grep -E '^end_(how|status)=' "$SCRATCH/$sig.h" | tr '\n' ' ' | sed 's/ $//')"
done

# A statically linked program runs (its status is kept) but leaves no log:
# memflow run says why.
if [ -x "$top_builddir/tests/static_prog" ]; then
    status=0
    "$MEMFLOW" run -o "$SCRATCH/static" -- "$top_builddir/tests/static_prog" > /dev/null \
        2> "$SCRATCH/static.err" || status=$?
    expect_eq "static program: status" 1 "$status"
    grep -q "static_prog' wrote no log into .* (it is statically linked" "$SCRATCH/static.err" ||
        fail "static program: $(cat "$SCRATCH/static.err")"
else
    echo "run_signals: SKIP static program part: this C library cannot be linked statically"
fi

# memflow installed under a path with a space (bin/, lib/, lib/memflow/ as
# make install lays them out): the program is still recorded.
inst="$SCRATCH/inst dir"
mkdir -p "$inst/bin" "$inst/lib/memflow"
cp "$MEMFLOW" "$inst/bin/memflow" # a program: it links no uninstalled library
cp "$top_builddir/.libs/libmemflow.so.0" "$inst/lib/"
cp "$top_builddir/.libs/libmemflow-preload.so" "$inst/lib/memflow/"
status=0
LD_LIBRARY_PATH="$inst/lib" "$inst/bin/memflow" run --no-render -o "$SCRATCH/space out" \
    -- "$W" fns 2> "$SCRATCH/space.err" || status=$?
expect_eq "install path with a space: status" 0 "$status"
"$top_builddir/tests/logcheck" "$SCRATCH/space out"/memflow-*.mfl > "$SCRATCH/space.txt" ||
    fail "install path with a space: logcheck exited $?"
expect_eq "install path with a space: allocations captured" "fns: allocs=12 frees=12" \
    "$(grep '^fns: ' "$SCRATCH/space.txt" | sed 's/ bytes=.*//')"
echo "run_signals: ok"
