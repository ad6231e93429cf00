#!/bin/sh
# cli_no_recorder.sh - the memflow program never loads the recorder: its
# binary needs no libmemflow, and with MEMFLOW_AUTOSTART=1 and every
# MEMFLOW_ variable memflow knows set (as in the environment of a program
# under `memflow run`, or of a shell that exported them), `memflow stats`,
# `render`, `compact` and `serve` write exactly their own outputs: no log of
# their own, nothing in the folder the `path` key names, nothing in the
# folder they run in.
. "$top_srcdir/tests/lib.sh"
needs_preload

# The binary itself: a program, not a libtool wrapper (libtool writes one
# only for a program that needs an uninstalled shared library), with no
# libmemflow among the libraries it needs, directly or through another.
[ "$(head -c 4 "$MEMFLOW" | od -An -c | tr -d ' ')" = '177ELF' ] ||
    fail "$MEMFLOW is not an ELF program (a libtool wrapper: it links an uninstalled library)"
readelf -d "$MEMFLOW" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' > "$SCRATCH/needed"
[ -s "$SCRATCH/needed" ] || fail "readelf lists no NEEDED library of $MEMFLOW"
! grep -n memflow "$SCRATCH/needed" || fail "the memflow program needs libmemflow (NEEDED above)"
ldd "$MEMFLOW" > "$SCRATCH/ldd" || fail "ldd $MEMFLOW failed"
! grep -n libmemflow "$SCRATCH/ldd" || fail "the memflow program loads libmemflow (ldd above)"

# A real log to work on, made before the environment below is set.
"$MEMFLOW" run -o "$SCRATCH/run" --no-render --no-compact -- "$top_builddir/samples/mlp" \
    > /dev/null 2> "$SCRATCH/run.stderr" || fail "memflow run of samples/mlp: $(cat "$SCRATCH/run.stderr")"
set -- "$SCRATCH"/run/memflow-*.mfl
[ $# -eq 1 ] && [ -f "$1" ] || fail "expected one log in $SCRATCH/run, found: $*"
LOG=$1
LOGNAME_=$(basename "$LOG")

# Every configuration key, as memflow lists them, with a valid value each
# (a bad value would keep a recorder from starting, and prove nothing); no
# other MEMFLOW_ variable.
for var in $(env | sed -n 's/^\(MEMFLOW_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$var"; done
keys=$("$MEMFLOW" run --set no_such_key=1 -- true 2>&1 | sed -n 's/.*accepted keys: //p' | tr -d ,)
[ -n "$keys" ] || fail "memflow run --set lists no accepted keys"
LEAK="$SCRATCH/leak"
for key in $keys; do
    case $key in
    filename) value=leak.json ;;
    path) value=$LEAK ;;
    format | formats) value=stats.txt,profile.json ;;
    profile_all | profile_memory | profile_api | profile_device | continuous_dump | \
        aggregate_stats | torch_scopes | cupti) value=1 ;;
    dump_period) value=0.01 ;;
    gpu_memory_profile_filename_prefix) value=leak_gpu ;;
    sample_rate) value=1 ;;
    stacks) value=8 ;;
    python_stacks) value=2 ;;
    torch_history) value=1000 ;;
    *) fail "no value for the key '$key' in this test: give it one" ;;
    esac
    var=MEMFLOW_$(echo "$key" | tr '[:lower:]' '[:upper:]')
    export "$var=$value"
done
# memflow's own variables (common/config.c, internal_variables), all but
# MEMFLOW_TEST_COMPACT_KILL_AT (fault injection: it kills the compaction).
export MEMFLOW_AUTOSTART=1 MEMFLOW_RUN_ID=0123456789abcdef0123456789abcdef \
    MEMFLOW_STAGE=1 MEMFLOW_LIBDIR="$top_builddir/.libs" MEMFLOW_CLOCK=monotonic \
    MEMFLOW_PYTHONPATH="$top_builddir/python" MEMFLOW_BIN="$MEMFLOW" MEMFLOW_READ_THREADS=2
expect_eq "MEMFLOW_ variables set" $(($(echo $keys | wc -w) + 8)) "$(env | grep -c '^MEMFLOW_')"

# Each command runs in an empty folder of its own; what it writes there,
# into the path key's folder or next to the log is listed exactly.
listing() { (cd "$1" && find . -mindepth 1 | sort | tr '\n' ' '); }
run_in() {
    name=$1; shift
    mkdir "$SCRATCH/cwd_$name"
    (cd "$SCRATCH/cwd_$name" && "$@") > "$SCRATCH/$name.out" 2> "$SCRATCH/$name.err" ||
        fail "memflow $name exited $?: $(cat "$SCRATCH/$name.err")"
    expect_eq "files memflow $name wrote where it ran" "" "$(listing "$SCRATCH/cwd_$name")"
    [ ! -e "$LEAK" ] || fail "memflow $name wrote into the path key's folder: $(listing "$LEAK")"
}

run_in stats "$MEMFLOW" stats "$LOG"
grep -q '^Memory: cpu/0 ' "$SCRATCH/stats.out" || fail "memflow stats printed no cpu/0 row"
expect_eq "stderr of memflow stats" "" "$(cat "$SCRATCH/stats.err")"
expect_eq "the log's folder after stats" "./$LOGNAME_ " "$(listing "$SCRATCH/run")"

run_in render "$MEMFLOW" render -o "$SCRATCH/rendered" "$LOG"
expect_eq "what memflow render wrote" "./memory_flow.svg ./profile.json ./stats.txt " \
    "$(listing "$SCRATCH/rendered")"
expect_eq "stderr of memflow render" \
    "memflow render: into $SCRATCH/rendered: memory_flow.svg, profile.json, stats.txt" \
    "$(cat "$SCRATCH/render.err")"
expect_eq "the log's folder after render" "./$LOGNAME_ " "$(listing "$SCRATCH/run")"

# serve detaches (a grandchild answers): the pipe's reader ends when the
# last process holding its write end, the server, is gone.
printf 'stats\ttable\ttotal\t0\t0\n' > "$SCRATCH/requests"
run_in serve sh -c '"$1" serve "$2" < "$3" | cat' sh "$MEMFLOW" "$LOG" "$SCRATCH/requests"
expect_eq "serve's answer" "ok" "$(head -n 1 "$SCRATCH/serve.out" | cut -f 1)"
expect_eq "stderr of memflow serve" "" "$(cat "$SCRATCH/serve.err")"
expect_eq "the log's folder after serve" "./$LOGNAME_ " "$(listing "$SCRATCH/run")"

run_in compact "$MEMFLOW" compact "$LOG"
expect_eq "the log's folder after compact (the log, compact in place)" "./$LOGNAME_ " \
    "$(listing "$SCRATCH/run")"
expect_eq "the compact log's trailer magic" "MFCOMPCT" "$(tail -c 32 "$LOG" | head -c 8)"
expect_eq "stderr of memflow compact" "" "$(cat "$SCRATCH/compact.err")"
exit 0
