#!/bin/bash
# bench/faults.sh - memflow's reliability figures, printed as markdown
# (docs/RELIABILITY.md reports them).
#
# 1. Cost of a full disk: bench/churn (OPS malloc/free operations) timed
#    unprofiled, under `memflow run` with room for its log, and with the log
#    unable to grow - a file size limit (prlimit --fsize) and, when this runs
#    as root and may mount, a full tmpfs.  Per-event cost in CPU and wall
#    time, medians of ROUNDS runs.
# 2. Fault injection, TRIALS times each, random parameters (bash $RANDOM,
#    seeded), every run as users run it (`memflow run` with its defaults:
#    the outputs rendered, the logs compacted): SIGKILL at a random moment;
#    SIGTERM to memflow run at a random moment; a program that closes every
#    descriptor and reuses the log's; a random file size limit (the outputs
#    that do not fit named, the others written, no temporary file); a full
#    disk for a random window of the log's fallocate calls (strace error
#    injection); a 4 KiB page zeroed at a random place of a live log's
#    records; a compacted log cut at a random offset and, apart, a byte
#    flipped at a random place of a random frame (tests/compact_damage.py).
#    Each counts what the program did (acknowledged in a file that survives
#    SIGKILL, or known in advance), what the log holds (tests/logcheck),
#    what the header says was dropped, what the fault itself destroyed (the
#    records of the zeroed page, of the frames cut or flipped, by an
#    independent reading of the bytes), and what was lost: did - held -
#    dropped - destroyed.  (dropped counts every record that could not be
#    written, a few of which - a scope pop, a thread's name - are not
#    allocations: so "lost" could hide a loss of that many events in the
#    fsize and enospc rows, and only there.)
#
# Usage: bench/faults.sh [BUILDDIR]   (needs `make check` built: it uses
#        tests/alloc_workload, tests/logcheck and tests/logheader)
# Knobs: FAULTS_TRIALS (50; 0 times only), FAULTS_ROUNDS (5; 0 injects faults
#        only, timing nothing), FAULTS_OPS (2000000), FAULTS_SEED (1),
#        FAULTS_BASE=BUILDDIR also times another build's memflow (e.g. an
#        older commit) in part 1.
set -eu

BUILD=$(cd "${1:-${top_builddir:-.}}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
W=$BUILD/tests/alloc_workload
CHECK=$BUILD/tests/logcheck
HEADER=$BUILD/tests/logheader
CHURN=$BUILD/bench/churn
TIMEIT=$BUILD/bench/timeit
OUT=$BUILD/bench/faults-out
TRIALS=${FAULTS_TRIALS:-50}
ROUNDS=${FAULTS_ROUNDS:-5}
OPS=${FAULTS_OPS:-2000000}
RANDOM=${FAULTS_SEED:-1}
MIB=1048576
PYTHON3=${PYTHON3:-python3}

die() { echo "faults: $*" >&2; exit 1; }
note() { echo "faults: $*" >&2; }
for p in "$W" "$CHECK" "$HEADER" "$CHURN" "$TIMEIT"; do
    [ -x "$p" ] || die "$p is not built: run make check in $BUILD"
done

# The real memflow binary of a build folder (not libtool's wrapper script).
memflow_of() { # BUILDDIR -> sets the array MF
    if [ -x "$1/.libs/memflow" ] && [ "$(head -c 2 "$1/memflow")" = "#!" ]; then
        MF=(env "LD_LIBRARY_PATH=$1/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$1/.libs/memflow")
    else
        MF=("$1/memflow")
    fi
}
memflow_of "$BUILD"
rm -rf "$OUT"
mkdir -p "$OUT"

median() { sort -n | awk '{v[NR] = $1} END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
per_event() { awk -v ns="$1" -v n="$OPS" 'BEGIN { printf "%.1f", ns / n }'; }

# ---- 1. what a full disk costs per event ----------------------------------

TMPFS=$OUT/mnt
HAVE_TMPFS=0
mkdir -p "$TMPFS"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=2m memflow-faults "$TMPFS" 2>/dev/null; then
    HAVE_TMPFS=1
    trap 'umount "$TMPFS" 2>/dev/null || true' EXIT
fi

cost_cmd() { # CASE -> sets CMD
    case $1 in
    plain) CMD=("$CHURN" -n "$OPS") ;;
    room) CMD=("${MF[@]}" run --no-render -o "$OUT/room" -- "$CHURN" -n "$OPS") ;;
    fsize) CMD=(prlimit --fsize=$((2 * MIB)) "${MF[@]}" run --no-render -o "$OUT/fsize" -- "$CHURN" -n "$OPS") ;;
    tmpfs) CMD=("${MF[@]}" run --no-render -o "$TMPFS/run" -- "$CHURN" -n "$OPS") ;;
    base-room) CMD=("${BASE_MF[@]}" run --no-render -o "$OUT/base-room" -- "$CHURN" -n "$OPS") ;;
    base-fsize) CMD=(prlimit --fsize=$((2 * MIB)) "${BASE_MF[@]}" run --no-render \
                     -o "$OUT/base-fsize" -- "$CHURN" -n "$OPS") ;;
    base-tmpfs) CMD=("${BASE_MF[@]}" run --no-render -o "$TMPFS/run" -- "$CHURN" -n "$OPS") ;;
    esac
}

CASES="plain room fsize"
[ "$HAVE_TMPFS" = 1 ] && CASES="$CASES tmpfs"
if [ -n "${FAULTS_BASE:-}" ]; then
    memflow_of "$(cd "$FAULTS_BASE" && pwd)"
    BASE_MF=("${MF[@]}")
    memflow_of "$BUILD"
    CASES="$CASES base-room base-fsize"
    [ "$HAVE_TMPFS" = 1 ] && CASES="$CASES base-tmpfs"
fi
[ "$ROUNDS" -gt 0 ] || CASES=
for round in $(seq "$ROUNDS"); do
    for c in $CASES; do
        note "cost, round $round: $c"
        rm -rf "${OUT:?}/$c" "$TMPFS/run"
        cost_cmd "$c"
        status=0
        "$TIMEIT" "$OUT/times-$c" "${CMD[@]}" > /dev/null 2> "$OUT/$c.err" || status=$?
        echo "$status" >> "$OUT/status-$c"
    done
done
if [ "$ROUNDS" -gt 0 ]; then
echo "### What a log that cannot grow costs ($OPS malloc/free operations, medians of $ROUNDS runs)"
echo
echo "| case | exit status | wall ms | CPU ms | CPU ns per event | wall ns per event |"
echo "|---|---|---:|---:|---:|---:|"
for c in $CASES; do
    wall=$(cut -d' ' -f1 "$OUT/times-$c" | median)
    cpu=$(cut -d' ' -f3 "$OUT/times-$c" | median)
    printf "| %s | %s | %.1f | %.1f | %s | %s |\n" "$c" "$(sort -u "$OUT/status-$c" | tr '\n' ' ')" \
        "$(awk -v v="$wall" 'BEGIN{print v/1e6}')" \
        "$(awk -v v="$cpu" 'BEGIN{print v/1e6}')" "$(per_event "$cpu")" "$(per_event "$wall")"
done
echo
echo "plain: bench/churn alone; room: memflow run, the log on $(df --output=fstype "$BUILD" | tail -n 1);"
echo "fsize: a 2 MiB file size limit (the header and one chunk fit); tmpfs: the log on a full"
echo "2 MiB tmpfs (ENOSPC); base-*: the same with FAULTS_BASE's memflow."
echo
fi

# ---- 2. fault injection --------------------------------------------------

# scope_events DIR SCOPE: allocs + frees of SCOPE's blocks in DIR's logs,
# plus the frees of blocks whose allocation was dropped (tests/logcheck
# cannot know their scope; in these programs they are all SCOPE's)
scope_events() {
    local log
    for log in "$1"/memflow-*.mfl; do "$CHECK" "$log" || true; done |
        sed -n -e "s/^$2 allocs=\([0-9]*\) frees=\([0-9]*\) .*/\1 \2/p" \
               -e 's/^total allocs=.* unknown_frees=\([0-9]*\)$/\1 0/p' |
        awk '{s += $1 + $2} END {print s + 0}'
}
dropped() { "$HEADER" "$1"/memflow-*.mfl | sed -n 's/^dropped_events=//p' | awk '{s += $1} END {print s + 0}'; }
ack_of() { od -An -t u8 -N 8 "$1" | tr -d ' '; }
pid_of() { od -An -t u8 -j 8 -N 8 "$1" | tr -d ' '; }

declare -A DID HELD DROP GONE LOST RUNS FAILED
record() { # FAULT did held dropped [destroyed by the fault]
    local lost=$(( $2 - $3 - $4 - ${5:-0} ))
    [ "$lost" -lt 0 ] && lost=0
    RUNS[$1]=$(( ${RUNS[$1]:-0} + 1 ))
    DID[$1]=$(( ${DID[$1]:-0} + $2 ))
    HELD[$1]=$(( ${HELD[$1]:-0} + $3 ))
    DROP[$1]=$(( ${DROP[$1]:-0} + $4 ))
    GONE[$1]=$(( ${GONE[$1]:-0} + ${5:-0} ))
    LOST[$1]=$(( ${LOST[$1]:-0} + lost ))
}
# the outputs memflow run writes by default, each there or said not to fit,
# and no temporary file left: check_outputs FAULT DIR STATUS
check_outputs() {
    local out missing=0
    for out in memory_flow.svg profile.json stats.txt; do
        [ -s "$2/$out" ] && continue
        missing=1
        NOFIT=$(( ${NOFIT:-0} + 1 ))
        grep -qxF "memflow run: $2/$out: cannot write: File too large" "$2.err" ||
            failed "$1" "$out neither written nor said why: $(tail -n 3 "$2.err")"
    done
    [ "$3" = "$missing" ] || failed "$1" "exit status $3 with outputs missing: $missing"
    [ -z "$(ls -A "$2" | grep '^\.')" ] || failed "$1" "temporary files left: $(ls -A "$2")"
}
# totals LOG: allocations + frees tests/logcheck reads in it
totals() { "$CHECK" "$1" 2> /dev/null | sed -n 's/^total allocs=\([0-9]*\) frees=\([0-9]*\) .*/\1 \2/p' |
    awk '{print $1 + $2}'; }
failed() { FAILED[$1]=$(( ${FAILED[$1]:-0} + 1 )); note "$1 trial failed: $2"; }

# Start `memflow run -- alloc_workload ack N FILE` in the background, wait
# until the program has written its pid.  Sets RUNNER and PROG.
start_ack() { # DIR ACKFILE N
    rm -f "$2"
    "${MF[@]}" run -o "$1" -- "$W" ack "$3" "$2" > /dev/null 2> "$1.err" &
    RUNNER=$!
    PROG=0
    for _ in $(seq 2000); do
        [ -s "$2" ] && PROG=$(pid_of "$2") && [ "$PROG" != 0 ] && return 0
        sleep 0.005
    done
    return 1
}
random_delay() { sleep "0.$(printf '%03d' $((RANDOM % 300)))"; }

for trial in $(seq "$TRIALS"); do
    note "fault injection, trial $trial of $TRIALS"
    # SIGKILL to the program at a random moment
    d="$OUT/kill/$trial"; mkdir -p "$d"
    if start_ack "$d" "$d.ack" 3000000; then
        random_delay
        kill -KILL "$PROG"
        wait "$RUNNER" || true
        ack=$(ack_of "$d.ack")
        record kill "$ack" "$(scope_events "$d" ack:)" "$(dropped "$d")"
    else failed kill "the program did not start"; fi
    # SIGTERM to memflow run at a random moment: forwarded, outputs written
    d="$OUT/term/$trial"; mkdir -p "$d"
    if start_ack "$d" "$d.ack" 3000000; then
        random_delay
        kill -TERM "$RUNNER"
        status=0; wait "$RUNNER" || status=$?
        ack=$(ack_of "$d.ack")
        [ "$status" = 143 ] && [ -s "$d/stats.txt" ] && [ -s "$d/memory_flow.svg" ] ||
            failed term "status $status, outputs $(ls "$d")"
        record term "$ack" "$(scope_events "$d" ack:)" "$(dropped "$d")"
    else failed term "the program did not start"; fi
    # every descriptor closed, the log's number reused by the program
    d="$OUT/fds/$trial"; n=$(( 10000 + RANDOM * 6 ))
    "${MF[@]}" run -o "$d" -- "$W" closefds "$n" "$d.own" 2> /dev/null ||
        failed fds "exit status $?"
    [ "$(cat "$d.own")" = "own data" ] || failed fds "the program's file was written into"
    record fds $((2 * n)) "$(scope_events "$d" after:)" "$(dropped "$d")"
    # a file size limit of 1..16 MiB (the log may not even get its header)
    d="$OUT/fsize/$trial"; limit=$(( (1 + RANDOM % 16) * MIB )); n=$(( 50000 + RANDOM * 10 ))
    mkdir -p "$OUT/fsize"
    status=0
    prlimit --fsize="$limit" "${MF[@]}" run -o "$d" -- "$W" threads 1 "$n" 2> "$d.err" || status=$?
    [ "$status" = 0 ] || [ "$status" = 1 ] || failed fsize "exit status $status under a $limit-byte limit"
    check_outputs fsize "$d" "$status"
    if ls "$d"/memflow-*.mfl > /dev/null 2>&1; then
        record fsize $((2 * n)) "$(scope_events "$d" t0:)" "$(dropped "$d")"
    fi
    # a full disk for a random window of the log's fallocate calls
    if command -v strace > /dev/null; then
        d="$OUT/enospc/$trial"; first=$(( 2 + RANDOM % 8 )); last=$(( first + RANDOM % 60 ))
        n=$(( 100000 + RANDOM * 10 ))
        status=0
        strace -f -o /dev/null -e trace=fallocate -e inject=fallocate:error=ENOSPC:when=$first..$last \
            "${MF[@]}" run -o "$d" -- "$W" threads 1 "$n" 2> /dev/null || status=$?
        [ "$status" = 0 ] || failed enospc "exit status $status"
        "$HEADER" "$d"/memflow-*.mfl | grep -q '^holes=0$' || failed enospc "a hole in the log"
        record enospc $((2 * n)) "$(scope_events "$d" t0:)" "$(dropped "$d")"
    fi
    # a 4 KiB page zeroed at a random place of a live log's records (a torn
    # write, a bad sector): the records after it are kept, the hole named
    d="$OUT/zero/$trial"; n=$(( 50000 + RANDOM * 5 ))
    "${MF[@]}" run --no-render --no-compact -o "$d" -- "$W" threads 1 "$n" 2> /dev/null ||
        failed zero "exit status $?"
    set -- "$d"/memflow-*.mfl
    did=$(totals "$1")
    chunks=$(( $(stat -c %s "$1") / 1048576 - 1 ))
    chunk=$(( 1 + RANDOM % chunks ))
    end=$("$PYTHON3" "$SRC/tests/log_holes.py" "$1" "$chunk" info | sed 's/.* end=\([0-9]*\) .*/\1/')
    [ "$end" -gt 64 ] || chunk=1 end=$("$PYTHON3" "$SRC/tests/log_holes.py" "$1" 1 info |
                                       sed 's/.* end=\([0-9]*\) .*/\1/')
    line=$("$PYTHON3" "$SRC/tests/log_holes.py" "$1" "$chunk" zero $(( RANDOM % ((end - 8) / 4096 + 1) )))
    gone=$(echo "$line" | sed 's/.*lost_allocs=\([0-9]*\) lost_frees=\([0-9]*\)/\1 + \2/')
    status=0
    "$CHECK" "$1" > "$d.check" 2>&1 || status=$?
    held=$(sed -n 's/^total allocs=\([0-9]*\) frees=\([0-9]*\) .*/\1 + \2/p' "$d.check")
    [ "$status" = 3 ] && grep -q "^damage: .*: offset [0-9]*: \(a hole\|the chunk's\|chunk [0-9]* was claimed\)" "$d.check" ||
        failed zero "logcheck exit $status: $(grep damage "$d.check")"
    record zero "$did" $(( held )) 0 $(( gone ))
    # a compacted log (memflow run's default) cut at a random offset, and a
    # byte flipped at a random place of a random frame
    d="$OUT/compact/$trial"; n=$(( 20000 + RANDOM * 3 ))
    mkdir -p "$d.work"
    "${MF[@]}" run --no-render --no-compact -o "$d" -- "$W" threads 2 "$n" 2> /dev/null ||
        failed compact "exit status $?"
    set -- "$d"/memflow-*.mfl
    cp "$1" "$d.live.mfl"
    "${MF[@]}" compact "$1" > /dev/null || failed compact "memflow compact exited $?"
    read -r _ did _ held _ gone _ bad < <(MEMFLOW="${MF[*]}" top_builddir="$BUILD" \
        "$PYTHON3" "$SRC/tests/compact_damage.py" "$d.live.mfl" "$1" "$d.work" "$RANDOM" 1)
    for _ in $(seq "$bad"); do failed compact "a cut or flip read wrong (see above)"; done
    record compact "$did" "$held" 0 "$gone"
done

[ "$TRIALS" -gt 0 ] || exit 0
echo "### Fault injection ($TRIALS trials each, seed ${FAULTS_SEED:-1})"
echo
echo "| fault | trials | events the program made | in the log | counted as dropped | destroyed by the fault | lost | failed checks |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for f in kill term fds fsize enospc zero compact; do
    [ -n "${RUNS[$f]:-}" ] || continue
    echo "| $f | ${RUNS[$f]} | ${DID[$f]} | ${HELD[$f]} | ${DROP[$f]} | ${GONE[$f]} | ${LOST[$f]} | ${FAILED[$f]:-0} |"
done
echo
echo "Under the file size limits, ${NOFIT:-0} outputs did not fit: each was named with its reason,"
echo "the others written, no temporary file left, exit status 1 (checked in every fsize trial)."
