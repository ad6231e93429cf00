#!/bin/sh
# gpu_remote.sh - the GPU-machine procedure (bench/gpu-remote.sh) on this
# machine, without its clean rebuild (`pack` builds a copy of the tree; here
# the bundle is made from this build):
#  - the bundle carries the renderer's libraries (Cairo): ldd must see past
#    the installed RUNPATH, which points at /opt/memflow;
#  - capture runs every probe under timeout and hands back ONE archive (and
#    the device-side summary), well inside the device tool's limits (8
#    files of 16 MiB);
#  - render, here, unpacks it, renders and checks it probe by probe: on a
#    machine without a driver each CUDA program says it found none.
. "$top_srcdir/tests/lib.sh"
needs_preload
[ -x "$top_builddir/samples/cuda/alloc_stress" ] || { echo "SKIP: no CUDA samples (nvcc)"; exit 77; }
[ ! -e /proc/driver/nvidia/version ] || { echo "SKIP: a real GPU machine: run the procedure"; exit 77; }
unset MAKEFLAGS MFLAGS
GPU_REMOTE_BUILD=$(cd "$top_builddir" && pwd)
GPU_REMOTE_BUNDLE="$SCRATCH/bundle"
GPU_REMOTE_RENDERED="$SCRATCH/rendered"
export GPU_REMOTE_BUILD GPU_REMOTE_BUNDLE GPU_REMOTE_RENDERED
REMOTE="$top_srcdir/bench/gpu-remote.sh"

sh "$REMOTE" bundle >"$SCRATCH/bundle.out" 2>&1 || fail "bundle: $(cat "$SCRATCH/bundle.out")"
for lib in libcairo.so.2 libjemalloc.so.2 libcupti.so.13 libcudart.so.13; do
    [ -e "$SCRATCH/bundle/deps/$lib" ] || fail "the bundle lacks $lib: $(ls "$SCRATCH/bundle/deps")"
done

OUT="$SCRATCH/out" CAPTURE_BUDGET=200 sh "$REMOTE" capture >"$SCRATCH/capture.out" 2>&1 ||
    fail "capture: $(tail -5 "$SCRATCH/capture.out")"
expect_eq "what comes back" "gpu-capture.tar.gz logs-1.tar summary.txt" \
    "$(cd "$SCRATCH/out" && echo *)"
for f in "$SCRATCH"/out/*; do
    size=$(wc -c <"$f")
    [ "$size" -lt $((15 * 1024 * 1024)) ] || fail "$f: $size bytes"
done
expect_eq "logs outside the logs' archive" 0 \
    "$(tar -tzf "$SCRATCH/out/gpu-capture.tar.gz" | grep -c '\.mfl$')"
expect_eq "the first logs packed" "gpu-capture/memory_kinds/ gpu-capture/clock_probe/" \
    "$(tar -tf "$SCRATCH/out/logs-1.tar" | sed -n '1p;2p' | sed 's/memflow-[0-9]*\.mfl$//' | tr '\n' ' ' | sed 's/ $//')"
steps=$(tar -xzf "$SCRATCH/out/gpu-capture.tar.gz" -O gpu-capture/steps.txt)
expect_eq "probes that ran under timeout" 17 "$(echo "$steps" | grep -c ' exit 1 [0-9]* s$')"

sh "$REMOTE" render "$SCRATCH/out/gpu-capture.tar.gz" "$SCRATCH/out/logs-1.tar" \
    >"$SCRATCH/render.out" 2>&1 ||
    fail "render: $(tail -5 "$SCRATCH/render.out")"
summary="$SCRATCH/rendered/summary.txt"
expect_eq "profiled probes that found no driver" 11 \
    "$(grep -c 'GPU blocks 0, frees 0, snapshots 0, notes: GPU_NO_DRIVER 1$' "$summary")"
for probe in memory_kinds alloc_stress clock_probe mlp_gpu mlp_gpu_sampled caching_allocator; do
    grep -q "^== $probe\$" "$summary" || fail "no $probe in the summary"
    [ -s "$SCRATCH/rendered/gpu-capture/$probe/render/memory_flow.svg" ] ||
        [ "$probe" = alloc_stress ] || fail "$probe was not rendered"
done
[ -s "$SCRATCH/rendered/gpu-capture/alloc_stress/render/memory_flow.png" ] ||
    fail "alloc_stress (rendered here, not there) has no PNG"
# the tensor level's dry run: memflow import of the suite's snapshot, there
expect_eq "torch_import step" 1 "$(echo "$steps" | grep -c '^torch_import exit 0 ')"
grep -q "^   gpu/0: 6 tensors (2 from the cache, 3 live before), peaks: reserved 8388608 bytes, allocated 1316352 bytes$" \
    "$summary" || fail "the imported snapshot's tensors: $(sed -n '/^== torch_import/,/^==/p' "$summary")"

# A budget too small for most steps: they are skipped and listed, and the
# capture still ends with its archives (seen on an H100: the alloc_loop
# summary read a skipped step's output and the capture stopped there).
OUT="$SCRATCH/short" CAPTURE_BUDGET=59 sh "$REMOTE" capture >"$SCRATCH/short.out" 2>&1 ||
    fail "a short capture: $(tail -5 "$SCRATCH/short.out")"
steps=$(tar -xzf "$SCRATCH/short/gpu-capture.tar.gz" -O gpu-capture/steps.txt)
expect_eq "steps skipped by the budget" 18 "$(echo "$steps" | grep -c ' skipped (budget: ')"
