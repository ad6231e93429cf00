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
expect_eq "what comes back" "gpu-capture.tar.gz summary.txt" "$(cd "$SCRATCH/out" && echo *)"
size=$(wc -c <"$SCRATCH/out/gpu-capture.tar.gz")
[ "$size" -lt $((15 * 1024 * 1024)) ] || fail "archive of $size bytes"
steps=$(tar -xzf "$SCRATCH/out/gpu-capture.tar.gz" -O gpu-capture/steps.txt)
expect_eq "probes that ran under timeout" 16 "$(echo "$steps" | grep -c ' exit 1 [0-9]* s$')"

sh "$REMOTE" render "$SCRATCH/out/gpu-capture.tar.gz" >"$SCRATCH/render.out" 2>&1 ||
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
