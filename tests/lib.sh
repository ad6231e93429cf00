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
# check_stats LOG WHAT <<'PY' ... PY: `memflow stats --format json LOG`, then
# the Python on stdin with d (those statistics) and eq(what, want, got),
# which exits naming what differs; fail WHAT when it does
check_stats() {
    "$MEMFLOW" stats --format json "$1" > "$SCRATCH/check_stats.json" 2> "$SCRATCH/check_stats.err" ||
        fail "memflow stats of $1 exited $?: $(cat "$SCRATCH/check_stats.err")"
    { cat <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def eq(what, want, got):
    if want != got:
        sys.exit("%s: expected %r, got %r" % (what, want, got))
PY
      cat; } | "$PYTHON3" - "$SCRATCH/check_stats.json" || fail "$2"
}
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
# needs_browser: skip the whole test (exit 77) where chromium, node or
# playwright-core (tests/view/node_modules, from bootstrap.sh) are missing;
# sets CHROMIUM and NODE.
needs_browser() {
    CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}
    NODE=$(command -v node || true)
    [ -n "$CHROMIUM" ] && [ -n "$NODE" ] && [ -d "$top_srcdir/tests/view/node_modules/playwright-core" ] &&
        return 0
    echo "SKIP: $TEST_NAME: needs chromium, node and playwright-core (bootstrap.sh installs them)"
    exit 77
}
# view_serve PATH NAME: `memflow view PATH --no-open` in the background, its
# pid in $SCRATCH/NAME.pid and the URL it prints in $SCRATCH/NAME.url
# (waiting up to 30 s for it); view_stop NAME ends it.
view_serve() {
    "$MEMFLOW" view "$1" --no-open > "$SCRATCH/$2.out" 2> "$SCRATCH/$2.err" &
    echo $! > "$SCRATCH/$2.pid"
    for i in $(seq 1 300); do
        grep -q 'http://' "$SCRATCH/$2.out" 2>/dev/null && break
        sleep 0.1
    done
    grep -o 'http://[^ ]*' "$SCRATCH/$2.out" > "$SCRATCH/$2.url" ||
        fail "memflow view printed no URL: $(cat "$SCRATCH/$2.err")"
}
view_stop() { kill "$(cat "$SCRATCH/$1.pid")" 2>/dev/null || true; }
