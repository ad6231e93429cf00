#!/bin/sh
# python_samples.sh - the Python samples as their headers say: under memflow
# run every scope holds exactly the blocks listed there (blocks of at least
# 1 or 2 KiB; smaller ones are interpreter and library bookkeeping), the
# outputs are written; run in-process, the MXNet example's profiler objects
# are TRACE records with exact values; the MegEngine sample run as
# docs/PYTHON.md says (python3 alone) writes its outputs, whose titles say the
# CPU heap was not recorded.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
if ! "$PYTHON" -c "import numpy" 2> /dev/null; then
    echo "SKIP: no numpy for $PYTHON (Debian: python3-numpy)"
    exit 77
fi
samples="$top_srcdir/samples/python"
BLOCKS="$top_builddir/tests/blocks"

# blocks MIN DIR: "SCOPE BYTES" of DIR's logs, <unk>: left out
blocks() { "$BLOCKS" "$1" "$2"/memflow-*.mfl | grep -v '^<unk>:' || true; }

# --- MXNet's tutorial example under memflow run ---------------------------
cd "$SCRATCH"
"$MEMFLOW" run -o mxnet -- "$PYTHON" "$samples/mxnet_profiler.py" > mxnet.out 2> mxnet.err ||
    fail "mxnet_profiler.py exited $?: $(cat mxnet.err)"
expect_eq "mxnet loss" "loss 10.739861" "$(head -1 mxnet.out)"
grep -q "^net_dense0: .*cpu/0 " mxnet.out || fail "dumps() printed no net_dense0: row: $(cat mxnet.out)"
grep -q "not its CPU heap" mxnet.err && fail "the CPU heap warning under memflow run"
for f in memory_flow.svg profile_output.json stats.txt; do
    test -s "mxnet/$f" || fail "mxnet: no $f"
done
expected="net_dense0: 102400
net_dense0: 1024
net_dense1: 10240
net_dense0: 65536
net_dense0: 3000001
net_relu0: 65536
net_dense1: 2560
backward: 2560
backward:net_dense1: 10240
backward:net_dense1: 65536
backward:net_relu0: 65536
backward:net_dense0: 102400
backward:net_dense0: 1024"
expect_eq "mxnet blocks" "$expected" "$(blocks 1024 mxnet)"

# --- the same in-process: profiler objects as TRACE records ------------------
mkdir inproc && cd inproc
"$PYTHON" "$samples/mxnet_profiler.py" > ../inproc.out 2> ../inproc.err ||
    fail "mxnet_profiler.py in-process exited $?: $(cat ../inproc.err)"
cd ..
test -s inproc/profile_output.json || fail "in-process: no profile_output.json"
grep -c "not its CPU heap" inproc.err | grep -qx 1 || fail "in-process: no CPU heap warning"
"$top_builddir/tests/tracecheck" inproc/memflow-*.mfl > inproc.trace || fail "tracecheck"
# (the counter's first value was set before recording started: not kept)
expected="trace task_begin MyDomain training 1
trace frame_begin MyDomain iteration 3
trace counter MyDomain batches 1
trace frame_end MyDomain iteration 3
trace task_end MyDomain training 1
trace marker MyDomain done 0 process"
expect_eq "mxnet trace records" "$expected" "$(cat inproc.trace)"

# --- MegEngine's decorator example under memflow run ---------------------
"$MEMFLOW" run -o megengine -- "$PYTHON" "$samples/megengine_profiler.py" > megengine.out \
    2> megengine.err || fail "megengine_profiler.py exited $?: $(cat megengine.err)"
expect_eq "megengine losses" "step 0 loss 1.369555
step 1 loss 0.632324
block loss 0.365458" "$(cat megengine.out)"
for f in profile/memory_flow.svg profile/chrome_timeline.json profile/stats.txt \
         profile_block/memory_flow.svg profile_block/chrome_timeline.json; do
    test -s "$f" || fail "megengine: no $f"
done
json_get profile_block/chrome_timeline.json "len(d['traceEvents']) > 0" | grep -qx True ||
    fail "megengine: empty chrome_timeline.json"
one="linear0: 65536
linear1: 8192
backward:linear1: 131072
backward:linear1: 65536
backward:linear0: 262144"
expect_eq "megengine blocks" "$one
$one
$one" "$(blocks 1024 megengine)"

# --- the same as docs/PYTHON.md runs it: python3 alone ----------------------
# (no CPU heap: the pictures' titles say so, stderr gives the command)
mkdir direct && cd direct
PYTHONPATH="$top_builddir/python" "$PYTHON" "$samples/megengine_profiler.py" > ../direct.out \
    2> ../direct.err || fail "megengine_profiler.py alone exited $?: $(cat ../direct.err)"
cd ..
expect_eq "megengine alone: losses" "$(cat megengine.out)" "$(cat direct.out)"
for f in profile/memory_flow.svg profile/chrome_timeline.json profile_block/memory_flow.svg; do
    test -s "direct/$f" || fail "megengine alone: no $f"
done
grep -q "not its CPU heap: for that, run it as \`memflow run -- python3" direct.err ||
    fail "megengine alone: no command on stderr: $(cat direct.err)"
"$PYTHON3" "$top_srcdir/tests/flame_frames.py" direct/profile_block/memory_flow.svg |
    grep -q '^12 6 [0-9]* 40|memflow: .* - CPU heap not recorded (use memflow run)|' ||
    fail "megengine alone: the title does not say the CPU heap was not recorded"
"$PYTHON3" "$top_srcdir/tests/flame_frames.py" profile_block/memory_flow.svg > run.hover ||
    fail "memory_flow.svg of the run does not parse"
grep -q '^12 6 [0-9]* 40|memflow: ' run.hover || fail "under memflow run: no title"
grep -q 'CPU heap not recorded' run.hover && fail "under memflow run: the title says the CPU heap was not recorded"

# --- the PyTorch MLP: module scopes with no code change -------------------
if "$PYTHON" -c "import torch" 2> /dev/null; then
    "$MEMFLOW" run -o torch -- "$PYTHON" "$samples/torch_mlp.py" > torch.out 2> torch.err ||
        fail "torch_mlp.py exited $?: $(cat torch.err)"
    expect_eq "torch loss" "loss 1.043514" "$(cat torch.out)"
    expected="net:dense0: 65536
net:relu0: 65536
net:dense1: 2560
mseloss: 2560
mseloss: 2560
backward:mseloss: 2560
backward:net:dense1: 65536
backward:net:dense1: 10240
backward:net:relu0: 65536
backward:net:dense0: 102400"
    expect_eq "torch blocks" "$expected" "$(blocks 2048 torch)"
    # the switch: torch_scopes off, no module scopes
    "$MEMFLOW" run --set torch_scopes=0 -o torch_off -- "$PYTHON" "$samples/torch_mlp.py" \
        > /dev/null 2>&1 || fail "torch_mlp.py with torch_scopes=0 exited $?"
    expect_eq "torch_scopes=0" "" "$(blocks 1 torch_off)"
    "$MEMFLOW" run --set torch_scopes=maybe -o torch_bad -- true 2> bad.err &&
        fail "torch_scopes=maybe accepted"
    grep -q "bad value 'maybe' for key 'torch_scopes'" bad.err || fail "$(cat bad.err)"
else
    echo "python_samples: no torch for $PYTHON: the PyTorch sample is not checked"
fi
echo "python_samples: ok"
