#!/bin/sh
# torch_profiler_cupti.sh - torch.profiler's CUDA activities need CUPTI,
# which memflow's GPU capture holds (one client per process before CUDA
# 13.2; seen on an H100: Kineto said CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_
# SUPPORTED and recorded no kernel).  When the program starts torch.profiler
# with CUDA activities while memflow holds CUPTI, memflow says so once, with
# the way out (--set cupti=0), and the analysis repeats it from the log's
# note; otherwise it says nothing, and the profiler's own set-up always runs
# (tests/torch_profiler_cupti.py).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
needs_torch
cd "$SCRATCH"
"$MEMFLOW" run --no-render --no-compact -o run -- "$PYTHON" "$top_srcdir/tests/torch_profiler_cupti.py" \
    > out.txt 2> err.txt || fail "torch_profiler_cupti.py exited $?: $(cat err.txt)"
expect_eq "what Kineto's set-up got" "[['CPU'], ['CPU', 'CUDA'], ['CPU'], ['CPU', 'CUDA'], ['CPU', 'CUDA']]" \
    "$(cat out.txt)"
expect_eq "memflow's lines" "memflow: torch.profiler asked for CUDA activities, but memflow's GPU capture holds CUPTI (one client per process before CUDA 13.2), so torch.profiler records no CUDA kernels; \`memflow run --set cupti=0\` leaves CUPTI to it (PyTorch's GPU memory then comes from its allocator's history)" \
    "$(grep '^memflow' err.txt)"
set -- run/memflow-*.mfl
pid=${1##*memflow-}
pid=${pid%.mfl}
"$MEMFLOW" stats "$@" > stats.txt 2> stats.err || fail "memflow stats exited $?: $(cat stats.err)"
expect_eq "the analysis's warning" "memflow: warning: pid $pid: torch.profiler recorded no CUDA kernels: memflow's GPU capture held CUPTI, which allows one client per process before CUDA 13.2 (\`memflow run --set cupti=0\` leaves CUPTI to torch.profiler)" \
    "$(grep 'torch.profiler' stats.err)"
exit 0
