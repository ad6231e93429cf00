#!/bin/sh
# samples_e2e.sh - the README's main job on the bundled samples: `memflow run`
# with the default outputs, every scope's numbers exact (the samples' header
# comments list their allocations), the outputs parse.
. "$top_srcdir/tests/lib.sh"
needs_preload

"$MEMFLOW" run -o "$SCRATCH/mlp" -- "$top_builddir/samples/mlp" > "$SCRATCH/mlp.out" 2> "$SCRATCH/mlp.err" ||
    fail "mlp under memflow run exited $?: $(cat "$SCRATCH/mlp.err")"
grep -q "loss 1.495790" "$SCRATCH/mlp.out" || fail "mlp printed: $(cat "$SCRATCH/mlp.out")"
for f in memory_flow.svg profile.json stats.txt; do
    test -s "$SCRATCH/mlp/$f" || fail "mlp: no $f"
done
"$PYTHON3" -c "import xml.etree.ElementTree as E,sys; E.parse(sys.argv[1])" "$SCRATCH/mlp/memory_flow.svg" ||
    fail "memory_flow.svg is not well-formed XML"
json_get "$SCRATCH/mlp/profile.json" "len(d['traceEvents']) > 0" | grep -q True || fail "empty trace"
"$MEMFLOW" stats --format json "$SCRATCH"/mlp/memflow-*.mfl > "$SCRATCH/mlp.json" 2>/dev/null ||
    fail "stats exited $?"

# scope alloc_count alloc_bytes live_bytes_end, per samples/mlp.c's header
scopes=$(json_get "$SCRATCH/mlp.json" "'\n'.join('%s %d %d %d' % (s['scope'], s['alloc_count'], s['alloc_bytes'], s['live_bytes_end']) for s in sorted(d['scopes'], key=lambda s: s['scope']) if s['scope'] != '<unk>:')")
expected="backward: 1 2048 0
backward:net_dense0: 2 5632 0
backward:net_dense1: 3 41216 0
backward:net_dense2: 3 12416 0
backward:net_dropout0: 1 8192 0
backward:net_relu0: 1 2048 0
net_dense0: 3 13824 0
net_dense1: 3 37120 0
net_dense2: 3 10368 0
net_dropout0: 2 10240 0
net_relu0: 1 2048 2048"
expect_eq "mlp scopes" "$expected" "$scopes"
# the deliberate leak is listed among the leaks, with its scope
leak=$(json_get "$SCRATCH/mlp.json" "[l['requested'] for l in d['leaks'] if l['scope'] == 'net_relu0:']")
expect_eq "mlp leak" "[2048]" "$leak"

"$MEMFLOW" run --no-render -o "$SCRATCH/trace" -- "$top_builddir/samples/trace" > /dev/null 2>&1 ||
    fail "trace under memflow run exited $?"
"$MEMFLOW" stats --format json "$SCRATCH"/trace/memflow-*.mfl > "$SCRATCH/trace.json" 2>/dev/null
scopes=$(json_get "$SCRATCH/trace.json" "'\n'.join('%s %d %d %d' % (s['scope'], s['alloc_count'], s['alloc_bytes'], s['live_bytes_end']) for s in sorted(d['scopes'], key=lambda s: s['scope']) if s['scope'].startswith('trace'))")
expected="trace0:diag: 3 65804 0
trace0:sum: 1 4 0
trace1:diag: 1 12 0
trace1:sum: 1 4 0"
expect_eq "trace scopes" "$expected" "$scopes"
echo "samples_e2e: ok"
