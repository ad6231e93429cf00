#!/bin/sh
# preload_dlopen.sh - the preload library interposes dlopen (alloc/loader.c,
# to see a program ask for the CUDA driver) without changing what dlopen
# finds: a plugin found only through the program's own RUNPATH loads under
# `memflow run` as it does alone (libc looks in the RUNPATH of the caller,
# which a wrapper that is not a tail call would make the preload library),
# and a name found nowhere fails with the same message.
. "$top_srcdir/tests/lib.sh"
needs_preload
P="$top_builddir/tests/dlopen_runpath"

expect_eq "the plugin, alone" "libdlprobe.so: 42" "$("$P")"
out=$("$MEMFLOW" run -o "$SCRATCH/run" --no-render --no-compact -- "$P" 2> "$SCRATCH/run.err") ||
    fail "dlopen_runpath under memflow run: $out $(cat "$SCRATCH/run.err")"
expect_eq "the plugin, under memflow run" "libdlprobe.so: 42" "$out"
expect_eq "stderr under memflow run" "" "$(cat "$SCRATCH/run.err")"
set -- "$SCRATCH"/run/memflow-*.mfl
[ $# -eq 1 ] && [ -f "$1" ] || fail "expected one log in $SCRATCH/run, found: $*"

alone=$("$P" libdlprobe-nowhere.so) && fail "libdlprobe-nowhere.so was found: $alone"
expect_eq "a missing library, alone" \
    "libdlprobe-nowhere.so: libdlprobe-nowhere.so: cannot open shared object file: No such file or directory" \
    "$alone"
status=0
profiled=$("$MEMFLOW" run -o "$SCRATCH/missing" --no-render --no-compact -- "$P" libdlprobe-nowhere.so \
    2> "$SCRATCH/missing.err") || status=$?
expect_eq "a missing library's status under memflow run" 1 "$status"
expect_eq "a missing library, under memflow run" "$alone" "$profiled"
exit 0
