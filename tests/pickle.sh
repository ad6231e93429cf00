#!/bin/sh
# pickle.sh - memflow's pickle reader (common/torch/pickle.c) against CPython's:
# random plain data pickled by pickle.dumps and pickle._dumps with
# protocols 2 to 5 reads exactly as pickle.loads reads it
# (tests/pickle_roundtrip.py), with a short look-ahead too (then the same
# data, or a refusal, never other data); check_pickle under the sanitizers;
# hostile snapshots from tests/torch_snapshots.py run their payload in
# Python and nothing in memflow, which refuses them with the exact message
# and exit status; and the reader's programs do not link libpython.
# The sanitizer builds (tests/san/) are used where configure found them.
. "$top_srcdir/tests/lib.sh"
PY=${PYTHON:-$PYTHON3}
DUMP="$top_builddir/tests/san/pickle_dump"
[ -x "$DUMP" ] || DUMP="$top_builddir/tests/pickle_dump"
"$PY" "$top_srcdir/tests/pickle_roundtrip.py" "$DUMP" "$SCRATCH/roundtrip" \
    "${MEMFLOW_PICKLE_CASES:-300}" || fail "pickle_roundtrip"

if [ -x "$top_builddir/tests/san/check_pickle" ]; then
    top_builddir="$SCRATCH" UBSAN_OPTIONS=print_stacktrace=1 \
        "$top_builddir/tests/san/check_pickle" > "$SCRATCH/check_pickle.log" 2>&1 ||
        fail "check_pickle under the sanitizers: $(grep -m3 -E 'ERROR|runtime error|Failures' "$SCRATCH/check_pickle.log")"
    grep -E "runtime error|ERROR: (Address|Leak)Sanitizer" "$SCRATCH/check_pickle.log" &&
        fail "check_pickle: a sanitizer report (see $SCRATCH/check_pickle.log)"
    echo "check_pickle under the sanitizers: $(grep -E '^[0-9]+%: Checks' "$SCRATCH/check_pickle.log")"
fi

# the payload is live: Python's unpickler runs it
FX="$SCRATCH/fixtures"
"$PY" "$top_srcdir/tests/torch_snapshots.py" "$FX"
"$PY" -c "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))" "$FX/refused-global-2.pickle" ||
    true
[ -e "$FX/payload-ran" ] || fail "the payload did not run in Python: not a test of anything"
rm "$FX/payload-ran"
# memflow's reader refuses it, with the message and exit status of MF_PICKLE_REFUSED
n=0
while IFS="$(printf '\t')" read -r name msg; do
    status=0
    "$DUMP" "$FX/$name.pickle" > /dev/null 2> "$SCRATCH/$name.err" || status=$?
    expect_eq "$name: exit status" 11 "$status"
    expect_eq "$name: message" "error 1: $msg" "$(head -1 "$SCRATCH/$name.err")"
    n=$((n + 1))
done < "$FX/refused.txt"
expect_eq "hostile pickles" 3 "$n"
[ ! -e "$FX/payload-ran" ] || fail "a payload ran under memflow's reader"

# C over libc: no Python in the programs that read pickles
for prog in "$top_builddir/tests/pickle_dump" "$top_builddir/tests/torch_walk"; do
    if readelf -d "$prog" | grep -i "NEEDED.*python"; then
        fail "$prog links libpython"
    fi
    if nm -u "$prog" | grep -E " U _?Py"; then
        fail "$prog calls Python"
    fi
done
echo "$TEST_NAME: ok"
