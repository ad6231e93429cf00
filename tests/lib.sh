# tests/lib.sh - shared helpers of the end-to-end test scripts (sourced).
# Each script gets a fresh scratch folder and fails loudly on the first error.
set -eu
: "${top_srcdir:?run through make check}" "${top_builddir:?}" "${MEMFLOW:?}"
PYTHON3=${PYTHON3:-python3}
TEST_NAME=$(basename "$0" .sh)
SCRATCH="$top_builddir/tests/out/$TEST_NAME"
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
fail() { echo "FAIL: $TEST_NAME: $*" >&2; exit 1; }
# expect_eq WHAT EXPECTED ACTUAL
expect_eq() { [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"; }
# json_get FILE PYTHON-EXPRESSION-ON-d : print a value from a JSON file
json_get() { "$PYTHON3" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
# preload_works: false in a sanitizer build (configure --enable-sanitize,
# make check-sanitize), where libmemflow-preload.so cannot run: ASan must be
# the first library of a process, and its malloc would win over memflow's.
preload_works() { [ "${SANITIZED_BUILD:-no}" != yes ]; }
# needs_preload: skip the whole test (exit 77) where the preload cannot run
needs_preload() {
    preload_works && return 0
    echo "SKIP: $TEST_NAME: profiles programs through libmemflow-preload.so, which cannot run in a sanitizer build"
    exit 77
}
# start_ready NAME CMD...: start CMD in the background, its stdout a fifo,
# and wait for its "ready PID" line; sets RUNNER (CMD's pid) and READY_PID
start_ready() {
    fifo="$SCRATCH/$1.ready"
    mkfifo "$fifo"
    name=$1
    shift
    "$@" > "$fifo" &
    RUNNER=$!
    read -r word READY_PID < "$fifo"
    expect_eq "$name handshake" ready "$word"
}
