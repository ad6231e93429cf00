#!/bin/sh
# bench/gpu-remote.sh - capture GPU memory on a lent GPU machine, check and
# render it here.  See docs/GPU.md ("Getting real-GPU numbers").
#
# The GPU machine reaches no package registry, may lack the Debian packages
# memflow needs (Cairo, jemalloc, Check ...) and hands back at most 8 files
# of at most 16 MiB from one command of at most 10 minutes.  So memflow is
# built HERE from a clean copy of the working tree (both machines are
# x86-64), installed into a bundle with every library it links except the C
# runtime, carried there, run there under `timeout` with --no-render, and
# everything comes back as ONE archive, to be checked and rendered here:
#
#   1. here:     bench/gpu-remote.sh pack
#                  -> build-gpu/remote-bundle (git-ignored, ~20-40 MB)
#   2. GPU box:  the device tool, from the repository root:
#                  command: sh bench/gpu-remote.sh capture
#                  carry:   ["build-gpu/remote-bundle"]
#                  -> $OUT/gpu-capture.tar.gz (everything but the logs),
#                     $OUT/logs-N.tar (the logs, at most 15 MiB each, 60 MiB
#                     in all), $OUT/summary.txt when the GPU machine could
#                     run the checker itself: at most 8 files
#   3. here:     bench/gpu-remote.sh render FILES_AT/gpu-capture.tar.gz FILES_AT/logs-*.tar
#                  -> build-gpu/remote-rendered/: every log rendered
#                     (memory_flow.svg/.png, trace, stats, GPU CSV), and
#                     summary.txt, the probe-by-probe check (bench/gpu_check.py)
#
#   bench/gpu-remote.sh dry-run  does all three here (no GPU: every CUDA
#                  program stops at its first call; the procedure still runs
#                  end to end and says so probe by probe).
#
# The probes (capture): every memory kind (samples/cuda/memory_kinds), 100,000
# allocations with flushes while a kernel runs (alloc_stress), the clock
# against CLOCK_MONOTONIC (clock_probe), the seed's MLP with and without
# sample_rate, the caching-allocator sample, the cudaMalloc/cudaFree cost
# (alloc_loop, plain and profiled, interleaved), and - when python3 has a
# CUDA torch - a training step three ways (caching allocator, PYTORCH_NO_
# CUDA_MEMORY_CACHING=1, expandable_segments:True) beside
# torch.cuda.memory._record_memory_history, each timed plain and profiled,
# one inside torch.profiler (Kineto), once more there with --set cupti=0
# (CUPTI left to Kineto), and the injection alone (no memflow
# run: CUDA_INJECTION64_PATH and MEMFLOW_AUTOSTART only); then the tensor
# level: a step under memflow run with the caching allocator on, where
# memflow's live allocator history writes the tensors into the log
# (torch_tensors), and `memflow import` of the snapshot that step dumped
# (torch_import).  Without a CUDA torch (the dry run) torch_import imports
# the test suite's snapshot instead, so the import path still runs.
# Knob: CAPTURE_BUDGET (seconds, default 420): steps that would not fit are
# skipped and listed; rendering there gets 60 s more at most, the checker 30 s
# and the archives the rest (each written once, seconds), so the command ends
# about CAPTURE_BUDGET + 100 s after it starts, inside the device tool's 10
# minutes with its start counted.  CAPTURE_ONLY="NAME ...": only the steps
# so named (a second, shorter call).  On a GPU machine the capture ends with
# churn_wait: bench/wait.sh's churn rows on that machine's cores.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
bundle_rel="build-gpu/remote-bundle"
prefix=/opt/memflow
# Where things go (tests move them to a scratch folder): the build made from
# a clean copy of the tree, the bundle, the rendered capture.
build=${GPU_REMOTE_BUILD:-$here/build-gpu/remote-src}
bundle=${GPU_REMOTE_BUNDLE:-$here/$bundle_rel}
rendered=${GPU_REMOTE_RENDERED:-$here/build-gpu/remote-rendered}
archive_limit=$((15 * 1024 * 1024))

die() { echo "gpu-remote: $*" >&2; exit 1; }

# ---- step 1: pack (here) ---------------------------------------------------

# The install tree inside the bundle (its prefix is the build's: /opt/memflow
# for `pack`).
find_root() {
    memflow_bin=$(find "$bundle" -path '*/bin/memflow' -type f | head -n 1)
    [ -n "$memflow_bin" ] || die "no bin/memflow in $bundle"
    root=$(dirname "$(dirname "$memflow_bin")")
}

# Copy the working tree as git sees it (tracked and new files, not ignored
# ones) so the build never meets an in-tree configure or old objects.
copy_source() {
    rm -rf "$1"
    mkdir -p "$1"
    (cd "$here" && git ls-files -z --cached --others --exclude-standard |
        tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$1"
}

# Shared libraries a file needs (resolved with the bundle's own libraries on
# the path, since installed RUNPATHs point at /opt/memflow, which does not
# exist here), except the C runtime every Linux has.  A library that cannot
# be found is an error: the bundle would be incomplete.
needed_libs() {
    lib_path="$root/lib:$root/lib/memflow${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    found=$(LD_LIBRARY_PATH="$lib_path" ldd "$1" 2>&1) || return 0 # not dynamic
    if echo "$found" | grep -q 'not found'; then
        die "$1: $(echo "$found" | grep 'not found' | tr -s ' \t' ' ')"
    fi
    echo "$found" | awk '/=> \// { print $3 }' |
        grep -Ev '/(libc|libm|libdl|libpthread|librt|libutil|ld-linux[^/]*|libresolv)\.so' || true
}

# The Python the memflow package is built for: the lent machines' python3
# is 3.12 (a 3.11 extension module does not load there).  GPU_REMOTE_PYTHON
# names another; none found: configure's default.
device_python() {
    if [ -n "${GPU_REMOTE_PYTHON:-}" ]; then
        echo "$GPU_REMOTE_PYTHON"
        return
    fi
    for py in /usr/bin/python3.12 /usr/local/bin/python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3; do
        [ -x "$py" ] && "$py" -c 'import sysconfig; assert sysconfig.get_config_h_filename()' \
            2>/dev/null && { echo "$py"; return; }
    done
}

# Build memflow from a clean copy of the working tree in $build.
build_copy() {
    copy_source "$build"
    py=$(device_python)
    echo "gpu-remote: the Python package is built for ${py:-configure's python}"
    (cd "$build" && autoreconf -fi >/dev/null 2>&1 &&
        ./configure -q --prefix="$prefix" ${py:+PYTHON="$py"} >/dev/null &&
        make -j2 >/dev/null) || die "build failed in $build"
}

# Install the build in $build into $bundle with the CUDA samples, the probes
# and every library they link (deps/).
make_bundle() {
    [ -x "$build/samples/cuda/alloc_stress" ] || die "no CUDA samples built: configure found no nvcc"
    rm -rf "$bundle"
    (cd "$build" && make install DESTDIR="$bundle" >/dev/null 2>&1) || die "make install failed"
    find_root
    [ -e "$root/lib/memflow/libmemflow-cuda.so" ] ||
        die "no libmemflow-cuda.so installed: configure did not find CUPTI"
    mkdir -p "$root/samples" "$root/bench" "$bundle/deps"
    for s in mlp_gpu caching_allocator alloc_loop memory_kinds alloc_stress clock_probe; do
        cp "$build/samples/cuda/$s" "$root/samples/$s"
    done
    cp "$build/bench/gpu_blocks" "$build/bench/churn" "$build/bench/timeit" "$root/bench/"
    cp "$here/bench/gpu_check.py" "$here/bench/torch_probe.py" "$root/bench/"
    python3 "$here/tests/torch_import_snapshots.py" "$root/bench/snapshots" >/dev/null &&
        mv "$root/bench/snapshots/current.pickle" "$root/bench/torch_snapshot_sample.pickle" &&
        rm -rf "$root/bench/snapshots" || die "cannot write the sample snapshot"
    for f in "$root/bin/memflow" "$root"/lib/libmemflow*.so.* "$root"/lib/memflow/*.so \
        "$root"/samples/* "$root/bench/gpu_blocks" "$root/bench/churn" "$root/bench/timeit"; do
        needed_libs "$f"
    done | sort -u | while read -r lib; do
        case "$lib" in "$root"/* | */libmemflow*) continue ;; esac
        cp -L "$lib" "$bundle/deps/$(basename "$lib")"
    done
    echo "gpu-remote: bundle in $bundle ($(du -sh "$bundle" | cut -f1)), libraries:" \
        "$(cd "$bundle/deps" && echo *)"
}

pack() {
    build_copy
    make_bundle
    echo "next: on the GPU machine run 'sh bench/gpu-remote.sh capture'" \
        "with carry [\"$bundle_rel\"]"
}

# ---- step 2: capture (on the GPU machine) ---------------------------------

# Put the bundled libraries this machine lacks (by soname) on LD_LIBRARY_PATH.
use_missing_deps() {
    mkdir -p "$bundle/needed"
    for lib in "$bundle"/deps/*; do
        [ -e "$lib" ] || continue
        name=$(basename "$lib")
        ldconfig -p 2>/dev/null | grep -q "^[[:space:]]$name " ||
            ln -sf "../deps/$name" "$bundle/needed/$name"
    done
    LD_LIBRARY_PATH="$root/lib:$bundle/needed${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
    echo "bundled libraries used here: $(cd "$bundle/needed" && echo *)"
}

left() { echo $((deadline - $(date +%s))); }

# step NAME LIMIT CMD...: CMD under timeout, output in $cap/NAME.out, a line
# in steps.txt; skipped when the budget has less than LIMIT left, or when
# CAPTURE_ONLY (names, space-separated) does not name it.
step() {
    name=$1 limit=$2
    shift 2
    case " ${CAPTURE_ONLY:-$name} " in *" $name "*) ;; *) return 0 ;; esac
    if [ "$(left)" -lt "$limit" ]; then
        echo "$name skipped (budget: $(left) s left, needs up to $limit s)" >>"$cap/steps.txt"
        return 0
    fi
    t0=$(date +%s)
    rc=0
    timeout -k 5 "$limit" "$@" >"$cap/$name.out" 2>&1 </dev/null || rc=$?
    echo "$name exit $rc$([ "$rc" = 124 ] && echo ' (timed out)') $(($(date +%s) - t0)) s" \
        >>"$cap/steps.txt"
    tail -n 3 "$cap/$name.out" | sed "s/^/  $name: /"
}

# profiled NAME LIMIT CMD...: CMD under `memflow run -o $cap/NAME --no-render`.
profiled() {
    name=$1 limit=$2
    shift 2
    step "$name" "$limit" "$MEMFLOW" run -o "$cap/$name" --no-render -- "$@"
}

environment() {
    { uname -a
      nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version,mig.mode.current \
          --format=csv 2>&1 || echo "no nvidia-smi"
      nvidia-smi -L 2>&1 || true
      timeout 60 python3 -c 'import torch; print("torch", torch.__version__, "cuda",
torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 || echo "python3: no torch"
      echo "CUDA_INJECTION64_PATH before memflow: ${CUDA_INJECTION64_PATH:-unset}"
    } >>"$cap/environment.txt" 2>&1
}

torch_probes() {
    probe="$root/bench/torch_probe.py"
    for mode in caching no_caching expandable_segments; do
        case $mode in
        caching) set -- env ;;
        no_caching) set -- env PYTORCH_NO_CUDA_MEMORY_CACHING=1 ;;
        expandable_segments) set -- env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True ;;
        esac
        step "torch_${mode}_plain" 120 "$@" python3 "$probe" "$cap/torch_${mode}_plain.json" \
            --steps 12
        profiled "torch_${mode}_timed" 120 "$@" python3 "$probe" \
            "$cap/torch_${mode}_timed.json" --steps 12
        profiled "torch_$mode" 150 "$@" python3 "$probe" "$cap/torch_$mode.json" --steps 6 \
            --history
    done
    profiled torch_kineto 150 python3 "$probe" "$cap/torch_kineto.json" --steps 6 --kineto
    # the same with cupti=0: CUPTI left to Kineto, the GPU memory from the
    # allocator's history (segments and tensors)
    step torch_kineto_cupti_off 150 "$MEMFLOW" run -o "$cap/torch_kineto_cupti_off" \
        --no-render --set cupti=0 -- python3 "$probe" "$cap/torch_kineto_cupti_off.json" \
        --steps 6 --kineto
    # the tensor level: memflow's live history under memflow run (caching on),
    # then the import of the snapshot the same step dumped
    profiled torch_tensors 150 python3 "$probe" "$cap/torch_tensors.json" --steps 6 \
        --dump-snapshot "$cap/torch_tensors.pickle"
    torch_import "$cap/torch_tensors.pickle"
    mkdir -p "$cap/torch_alone"
    step torch_alone 120 env CUDA_INJECTION64_PATH="$root/lib/memflow/libmemflow-cuda.so" \
        MEMFLOW_AUTOSTART=1 MEMFLOW_PATH="$cap/torch_alone" \
        python3 "$probe" "$cap/torch_alone.json" --steps 3
}

# torch_import SNAPSHOT: memflow import of it into $cap/torch_import (the
# snapshot itself stays there only while small: the log has it all).
torch_import() {
    [ -s "$1" ] || { echo "torch_import skipped: no snapshot $1" >>"$cap/steps.txt"; return 0; }
    step torch_import 120 "$MEMFLOW" import "$1" -o "$cap/torch_import" --no-render
    [ "$(wc -c <"$1")" -le 4194304 ] || rm -f "$1"
}

# Render where the renderer's libraries load, for 60 s past the budget at
# most (each render gets what is left, 120 s at most), then the checker (30
# s); the logs come back either way, and `render` here does the rest.
render_there() {
    deadline=$((deadline + 60))
    for dir in "$cap"/*/; do
        set -- "$dir"memflow-*.mfl
        [ -e "$1" ] && [ "$(left)" -gt 10 ] || continue
        name=$(basename "$dir")
        limit=$(left)
        [ "$limit" -le 120 ] || limit=120
        timeout "$limit" "$root/bench/gpu_blocks" "$@" >"$cap/$name.blocks.json" 2>/dev/null ||
            rm -f "$cap/$name.blocks.json"
        limit=$(left)
        if [ "$name" = alloc_stress ] || [ "$limit" -le 10 ]; then
            continue # big: rendered here
        fi
        [ "$limit" -le 120 ] || limit=120
        timeout "$limit" "$MEMFLOW" render "$@" -o "$dir/render" \
            --formats memory_flow.svg,profile.json,stats.txt,stats.json,gpu_memory_profile.csv \
            >"$dir/render.out" 2>&1 || echo "render of $name failed there (done here)" \
            >>"$cap/steps.txt"
    done
    timeout 30 python3 "$root/bench/gpu_check.py" "$cap" >"$cap/summary.txt" 2>&1 || true
}

# What comes back: at most 8 files of at most 15 MiB, 60 MiB in all (the
# device tool's limits).  gpu-capture.tar.gz holds everything but the logs
# (outputs, JSON, each log's GPU blocks as gpu_blocks wrote them there, the
# renders); the logs follow in logs-N.tar (compacted logs do not compress),
# the probes in $log_priority first; a log that does not fit is named in
# steps.txt - its blocks came back anyway.  Each file is written once.
log_priority="memory_kinds clock_probe mlp_gpu mlp_gpu_sampled caching_allocator torch_tensors
torch_caching torch_no_caching torch_expandable_segments torch_kineto alloc_stress torch_import
torch_alone torch_kineto_cupti_off alloc_loop_1 python_front"
file_limit=$((15 * 1024 * 1024))
total_limit=$((60 * 1024 * 1024))

# The capture's logs, one "size path" line each, priority probes first.
logs_in_order() {
    for name in $log_priority; do
        find "$cap/$name" -name '*.mfl' -printf '%s %p\n' 2>/dev/null | sort -k2
    done
    find "$cap" -name '*.mfl' -printf '%s %p\n' | sort -k2 | while read -r size path; do
        probe=$(basename "$(dirname "$path")")
        case " $(echo $log_priority) " in *" $probe "*) ;; *) echo "$size $path" ;; esac
    done
}

pack_logs() {
    n=0 in_file=0 total=0
    logs_in_order >"$cap.logs"
    while read -r size path; do
        rel=${path#"$(dirname "$cap")"/}
        if [ "$size" -gt "$file_limit" ] || [ $((total + size)) -gt "$total_limit" ]; then
            echo "left out of what comes back (size limits): $rel" >>"$cap/steps.txt"
            continue
        fi
        if [ "$n" = 0 ] || [ $((in_file + size)) -gt "$file_limit" ]; then
            if [ "$n" -ge 7 ]; then
                echo "left out of what comes back (8 files): $rel" >>"$cap/steps.txt"
                continue
            fi
            n=$((n + 1)) in_file=0
        fi
        echo "$rel" >>"$cap.logs-$n"
        in_file=$((in_file + size)) total=$((total + size))
    done <"$cap.logs"
    for list in "$cap".logs-*; do
        [ -e "$list" ] || continue
        tar -cf "$out_dir/logs-${list##*.logs-}.tar" -C "$(dirname "$cap")" -T "$list"
    done
}

pack_archive() {
    pack_logs
    tar -czf "$out_dir/gpu-capture.tar.gz" --exclude='*.mfl' -C "$(dirname "$cap")" gpu-capture
    if [ "$(wc -c <"$out_dir/gpu-capture.tar.gz")" -gt "$file_limit" ]; then
        echo "renders left out of what comes back (size limits)" >>"$cap/steps.txt"
        tar -czf "$out_dir/gpu-capture.tar.gz" --exclude='*.mfl' --exclude='render' \
            -C "$(dirname "$cap")" gpu-capture
    fi
    if [ -s "$cap/summary.txt" ]; then
        cp "$cap/summary.txt" "$out_dir/summary.txt"
    fi
    ls -l "$out_dir"
}

# The install's compiled-in folders (the Python front's, the CUDA plugin's
# fallback) are under $prefix: point $prefix at the carried install when the
# machine has no $prefix of its own: only on a GPU machine (it runs commands
# as root and is given back bare), never on a dry run.
place_prefix() {
    [ -e /proc/driver/nvidia/version ] || return 0
    if [ "$root" != "$prefix" ] && [ ! -e "$prefix" ] && [ -w "$(dirname "$prefix")" ]; then
        ln -s "$root" "$prefix" && echo "$prefix -> $root"
    fi
}

capture() {
    [ -d "$bundle" ] || die "no $bundle here: run 'pack' first and carry it"
    find_root
    place_prefix
    MEMFLOW="$root/bin/memflow"
    out_dir="${OUT:-$here/build-gpu/out}"
    cap="$(mktemp -d)/gpu-capture"
    mkdir -p "$cap" "$out_dir"
    deadline=$(($(date +%s) + ${CAPTURE_BUDGET:-420}))
    use_missing_deps >"$cap/environment.txt"
    environment
    # the Python front loads (the package was built for this python3)
    profiled python_front 60 python3 -c 'import sys, memflow; print(sys.version, memflow.__file__)'
    samples="$root/samples"
    profiled memory_kinds 60 "$samples/memory_kinds"
    profiled alloc_stress 180 "$samples/alloc_stress"
    profiled clock_probe 60 "$samples/clock_probe"
    profiled mlp_gpu 60 "$samples/mlp_gpu"
    step mlp_gpu_sampled 60 "$MEMFLOW" run -o "$cap/mlp_gpu_sampled" --no-render \
        --sample-rate 4 -- "$samples/mlp_gpu"
    profiled caching_allocator 60 "$samples/caching_allocator"
    for i in 1 2 3 4 5; do # interleaved, so drift hits both alike
        step "alloc_loop_plain_$i" 60 "$samples/alloc_loop" 20000 1048576
        profiled "alloc_loop_$i" 60 "$samples/alloc_loop" 20000 1048576
        # a skipped step leaves no output
        [ ! -e "$cap/alloc_loop_plain_$i.out" ] ||
            cat "$cap/alloc_loop_plain_$i.out" >>"$cap/alloc_loop.plain"
        [ ! -e "$cap/alloc_loop_$i.out" ] || cat "$cap/alloc_loop_$i.out" >>"$cap/alloc_loop.profiled"
    done
    if timeout 60 python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
        torch_probes
    else
        echo "torch probes skipped: python3 has no CUDA torch" >>"$cap/steps.txt"
        torch_import "$root/bench/torch_snapshot_sample.pickle"
    fi
    # the whole wait (docs/PERFORMANCE.md) on the GPU machine's cores: last,
    # as it matters least there (never on a dry run)
    if [ -e /proc/driver/nvidia/version ]; then
        step churn_wait 120 sh "$here/bench/gpu-remote.sh" churn-wait "$cap"
    fi
    render_there
    pack_archive
}

# churn-wait CAP: bench/wait.sh's first rows on the GPU machine's cores
# (docs/PERFORMANCE.md, "The whole wait"): the churn of 2M and 20M pairs of
# 16-2063 bytes, unprofiled and under `memflow run` with the defaults, three
# interleaved rounds, timed by bench/timeit; the time from the program's exit
# (churn -e) to memflow run's; MEMFLOW_RUN_REPORT's lines.  The logs are
# deleted after each run: only the figures come back.
# middle: the middle of the numbers on stdin (the lower one of an even count).
middle() {
    sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

churn_wait() {
    cap=$1
    find_root
    t="$cap/churn_wait"
    mkdir -p "$t"
    for ops in 4000000 40000000; do
        for i in 1 2 3; do
            "$root/bench/timeit" -e "$t/plain.$ops" "$root/bench/churn" -q -u 16-2063 \
                -n "$ops" -e "$t/end" >/dev/null || echo "churn failed: $?" >>"$t/report.$ops"
            rm -rf "$t/run"
            MEMFLOW_RUN_REPORT=1 "$root/bench/timeit" -e "$t/memflow.$ops" "$root/bin/memflow" \
                run -o "$t/run" -- "$root/bench/churn" -q -u 16-2063 -n "$ops" -e "$t/end" \
                >>"$t/report.$ops" 2>&1 || echo "memflow run failed: $?" >>"$t/report.$ops"
            echo "$(tail -n 1 "$t/memflow.$ops") $(cat "$t/end")" >>"$t/exit.$ops"
        done
    done
    rm -rf "$t/run"
    for ops in 4000000 40000000; do
        p=$(cut -d' ' -f1 "$t/plain.$ops" | middle)
        m=$(cut -d' ' -f1 "$t/memflow.$ops" | middle)
        e=$(awk '{ printf "%.0f\n", $4 - $5 }' "$t/exit.$ops" | middle)
        echo "churn $((ops / 2)) pairs: plain $p ns, memflow run $m ns," \
            "ratio $(awk -v m="$m" -v p="$p" 'BEGIN { printf "%.2f", m / p }'), exit to exit $e ns"
    done
}

# ---- step 3: render (here) -------------------------------------------------

render() {
    [ $# -gt 0 ] || die "usage: bench/gpu-remote.sh render ARCHIVE|FOLDER..."
    rm -rf "$rendered"
    mkdir -p "$rendered"
    for given in "$@"; do
        if [ -d "$given" ]; then
            mkdir -p "$rendered/gpu-capture" && cp -r "$given/." "$rendered/gpu-capture/"
        else
            case "$given" in
            *.tar.gz) tar -xzf "$given" -C "$rendered" ;;
            *) tar -xf "$given" -C "$rendered" ;;
            esac || die "$given: not a capture archive"
        fi
    done
    cap="$rendered/gpu-capture"
    [ -d "$cap" ] || die "no gpu-capture folder in $*"
    MEMFLOW="$build/memflow"
    [ -x "$MEMFLOW" ] || die "no memflow built in $build: run 'pack' first"
    for dir in "$cap"/*/; do
        set -- "$dir"memflow-*.mfl
        [ -e "$1" ] || continue
        name=$(basename "$dir")
        "$build/bench/gpu_blocks" "$@" >"$cap/$name.blocks.json" ||
            echo "gpu_blocks of $name failed ($?)" >>"$cap/steps.txt"
        [ -e "$dir/render/memory_flow.svg" ] && continue
        "$MEMFLOW" render "$@" -o "$dir/render" --formats \
            memory_flow.svg,memory_flow.png,profile.json,stats.txt,stats.json,gpu_memory_profile.csv \
            >"$dir/render.out" 2>&1 || echo "render of $name failed ($?)" >>"$cap/steps.txt"
    done
    python3 "$here/bench/gpu_check.py" "$cap" >"$rendered/summary.txt"
    cat "$rendered/summary.txt"
    echo "gpu-remote: outputs in $rendered/gpu-capture/*/render, summary in" \
        "$rendered/summary.txt"
}

dry_run() {
    pack
    OUT="$here/build-gpu/dry-run" CAPTURE_BUDGET=${CAPTURE_BUDGET:-300} capture
    render "$here"/build-gpu/dry-run/gpu-capture.tar.gz "$here"/build-gpu/dry-run/logs-*.tar
}

case "${1:-}" in
pack) pack ;;
bundle) make_bundle ;; # from GPU_REMOTE_BUILD as it is (tests)
capture) capture ;;
churn-wait) churn_wait "$2" ;;
render) shift; render "$@" ;;
dry-run) dry_run ;;
*) echo "usage: bench/gpu-remote.sh pack | capture | render ARCHIVE|FOLDER... | dry-run" \
       "(see the comment at the top)" >&2
   exit 2 ;;
esac
