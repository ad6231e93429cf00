#!/bin/sh
# bench/gpu-remote.sh - capture GPU memory on a lent GPU machine, render here.
#
# The GPU machine reaches no package registry and may lack memflow's shared
# libraries, so memflow is built HERE (both machines are x86-64), installed
# into a bundle together with the libraries the GPU machine may miss, carried
# there, run there with --no-render, and the .mfl logs come back through
# $OUT to be rendered here.  Three steps, one command each:
#
#   1. here:     bench/gpu-remote.sh pack
#                  -> build-gpu/remote-bundle (git-ignored; ~20-40 MB)
#   2. GPU box:  the `device` tool's run, from the repository root:
#                  command: sh bench/gpu-remote.sh capture
#                  carry:   ["build-gpu/remote-bundle"]
#                  -> $OUT/gpu-capture/: logs, program output, nvidia-smi,
#                     timings of the cudaMalloc/cudaFree loop
#   3. here:     bench/gpu-remote.sh render FILES_AT/gpu-capture
#                  -> memory_flow.svg/.png, trace, stats, gpu_memory_profile
#                     CSV per run, and summary.txt (allocations counted vs
#                     made, overhead) to paste into docs/GPU.md
#
# What the bundle holds: the install tree (prefix /opt/memflow, DESTDIR'd
# into the bundle: bin/memflow, lib/libmemflow.so*, lib/memflow/ with the
# preload and CUDA plugins), the CUDA samples, the PyTorch step script, and
# deps/: every shared library ldd resolves for those files except the C
# runtime itself (libc, libm, ld.so, ...).  On the GPU machine only the deps
# it does NOT already have (by soname, ldconfig -p) are put on
# LD_LIBRARY_PATH, so python3/torch keep their own libstdc++ and friends.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
bundle_rel=build-gpu/remote-bundle
prefix=/opt/memflow

die() { echo "gpu-remote: $*" >&2; exit 1; }

# ---- step 1: pack (here) ---------------------------------------------------

# Shared libraries a file needs, except the C runtime every Linux has.
needed_libs() {
    ldd "$1" 2>/dev/null | awk '/=> \// { print $3 }' |
        grep -Ev '/(libc|libm|libdl|libpthread|librt|libutil|ld-linux[^/]*|libresolv)\.so' || true
}

pack() {
    bundle="$here/$bundle_rel"
    build="$here/build-gpu/remote-build"
    [ -x "$here/configure" ] || (cd "$here" && autoreconf -fi)
    mkdir -p "$build"
    (cd "$build" &&
        { [ -f Makefile ] || "$here/configure" -q --disable-werror --prefix="$prefix"; } &&
        make -j2 >/dev/null && make -j2 samples/cuda/mlp_gpu samples/cuda/caching_allocator \
        samples/cuda/alloc_loop >/dev/null) || die "build failed in $build"
    rm -rf "$bundle"
    (cd "$build" && make install DESTDIR="$bundle" >/dev/null) || die "make install failed"
    root="$bundle$prefix"
    [ -e "$root/lib/memflow/libmemflow-cuda.so" ] ||
        die "no libmemflow-cuda.so installed: configure did not find CUPTI"
    mkdir -p "$root/samples" "$bundle/deps"
    for s in mlp_gpu caching_allocator alloc_loop; do
        cp "$build/samples/cuda/$s" "$root/samples/$s"
    done
    cp "$here/bench/gpu-remote.sh" "$bundle/gpu-remote.sh"
    torch_step >"$root/samples/torch_step.py"
    for f in "$root/bin/memflow" "$root"/lib/libmemflow.so.* "$root"/lib/memflow/*.so \
        "$root"/samples/mlp_gpu "$root"/samples/caching_allocator "$root"/samples/alloc_loop; do
        needed_libs "$f"
    done | sort -u | while read -r lib; do
        case "$lib" in "$root"/* | */libmemflow*) continue ;; esac
        cp -L "$lib" "$bundle/deps/$(basename "$lib")"
    done
    echo "gpu-remote: bundle in $bundle_rel ($(du -sh "$bundle" | cut -f1)):"
    ls "$bundle/deps"
    echo "next: on the GPU machine run 'sh bench/gpu-remote.sh capture'" \
        "with carry [\"$bundle_rel\"]"
}

# The PyTorch training step profiled on the GPU machine: a small MLP, one
# forward/backward/step per iteration, every tensor a real cudaMalloc
# (PYTORCH_NO_CUDA_MEMORY_CACHING=1 is set by the capture step).
torch_step() {
    cat <<'PY'
import torch
torch.manual_seed(0)
dev = torch.device("cuda")
net = torch.nn.Sequential(torch.nn.Linear(10, 128), torch.nn.Tanh(), torch.nn.Dropout(0.5),
                          torch.nn.Linear(128, 64), torch.nn.Tanh(), torch.nn.Linear(64, 32),
                          torch.nn.ReLU()).to(dev)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(16, 10, device=dev)
y = torch.randn(16, 32, device=dev)
for step in range(3):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(net(x), y)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print("torch_step: loss %.6f" % loss.item())
PY
}

# ---- step 2: capture (on the GPU machine) ---------------------------------

# Put the bundled libraries this machine lacks on LD_LIBRARY_PATH.
use_missing_deps() {
    bundle=$1
    mkdir -p "$bundle/needed"
    for lib in "$bundle"/deps/*; do
        [ -e "$lib" ] || continue
        name=$(basename "$lib")
        ldconfig -p 2>/dev/null | grep -q "^[[:space:]]$name " ||
            ln -sf "../deps/$name" "$bundle/needed/$name"
    done
    LD_LIBRARY_PATH="$bundle$prefix/lib:$bundle/needed${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
    echo "bundled libraries used: $(ls "$bundle/needed" | tr '\n' ' ')"
}

# run_profiled NAME [MEMFLOW-RUN-OPTION...] -- CMD...: CMD under memflow run
# into $out/NAME, its output kept in $out/NAME.out.
run_profiled() {
    name=$1
    shift
    "$MEMFLOW" run -o "$out/$name" --no-render "$@" >"$out/$name.out" 2>&1 ||
        echo "gpu-remote: $name exited $?" >>"$out/$name.out"
    cat "$out/$name.out"
}

capture() {
    bundle="$here/$bundle_rel"
    [ -d "$bundle" ] || die "no $bundle_rel here: run 'pack' first and carry it"
    out="${OUT:-/tmp}/gpu-capture"
    mkdir -p "$out"
    use_missing_deps "$bundle" >"$out/environment.txt"
    cat "$out/environment.txt"
    root="$bundle$prefix"
    MEMFLOW="$root/bin/memflow"
    { nvidia-smi || true; uname -a; } >>"$out/environment.txt" 2>&1
    run_profiled mlp_gpu -- "$root/samples/mlp_gpu"
    run_profiled caching_allocator -- "$root/samples/caching_allocator"
    run_profiled mlp_gpu_sampled --sample-rate 4 -- "$root/samples/mlp_gpu"
    # capture overhead: the same loop plainly and profiled, three times each
    for i in 1 2 3; do
        "$root/samples/alloc_loop" 20000 1048576 >>"$out/alloc_loop.plain" 2>&1 || true
        run_profiled "alloc_loop_$i" -- "$root/samples/alloc_loop" 20000 1048576
        cat "$out/alloc_loop_$i.out" >>"$out/alloc_loop.profiled"
    done
    if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
        PYTORCH_NO_CUDA_MEMORY_CACHING=1
        export PYTORCH_NO_CUDA_MEMORY_CACHING
        run_profiled torch_step -- python3 "$root/samples/torch_step.py"
        unset PYTORCH_NO_CUDA_MEMORY_CACHING
    else
        echo "python3 with CUDA torch not available" >"$out/torch_step.out"
    fi
    echo "gpu-remote: logs in $out"
    ls -R "$out" | head -50
}

# ---- step 3: render (here) -------------------------------------------------

render() {
    captured=${1:?usage: bench/gpu-remote.sh render DIR (the fetched gpu-capture folder)}
    [ -d "$captured" ] || die "$captured: no such folder"
    build="$here/build-gpu/remote-build"
    MEMFLOW="$build/memflow"
    [ -x "$MEMFLOW" ] || MEMFLOW=$(command -v memflow) || die "no memflow built: run 'pack' first"
    rendered="$here/build-gpu/remote-rendered"
    rm -rf "$rendered"
    mkdir -p "$rendered"
    summary="$rendered/summary.txt"
    : >"$summary"
    for dir in "$captured"/*/; do
        name=$(basename "$dir")
        set -- "$dir"memflow-*.mfl
        [ -e "$1" ] || continue
        formats=memory_flow.svg,memory_flow.png,profile.json,stats.txt,gpu_memory_profile.csv
        "$MEMFLOW" render "$@" -o "$rendered/$name" --formats "$formats" ||
            echo "render of $name failed ($?)" >>"$summary"
        { echo "== $name"; cat "$captured/$name.out" 2>/dev/null
          "$MEMFLOW" stats "$@" 2>&1 | head -40; } >>"$summary"
    done
    { echo "== cudaMalloc/cudaFree loop, plain"; cat "$captured/alloc_loop.plain" 2>/dev/null
      echo "== the same under memflow run"; cat "$captured/alloc_loop.profiled" 2>/dev/null
      echo "== environment"; cat "$captured/environment.txt" 2>/dev/null; } >>"$summary"
    echo "gpu-remote: outputs in build-gpu/remote-rendered/, summary in $summary"
}

case "${1:-}" in
pack) pack ;;
capture) capture ;;
render) shift; render "$@" ;;
*) echo "usage: bench/gpu-remote.sh pack | capture | render DIR   (see the comment at the top)" >&2
   exit 2 ;;
esac
