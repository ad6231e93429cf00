# bench/ - the benchmark: a malloc/free churn (bench/churn, a plain program
# with no memflow in it) timed unprofiled, with jemalloc alone, under
# `memflow run`, heaptrack and valgrind massif, plus `memflow render` of big
# logs.  Not part of `make check` (no timed tests): `make bench` runs it and
# prints the markdown tables that docs/PERFORMANCE.md reports.
noinst_PROGRAMS += bench/churn bench/timeit bench/clockcost
bench_churn_SOURCES = bench/churn.c
bench_churn_CFLAGS = $(AM_CFLAGS) -pthread
bench_churn_LDFLAGS = -pthread
# The stopwatch run.sh times every command with (wall, CPU, max RSS).
bench_timeit_SOURCES = bench/timeit.c
# What a time stamp costs here (the machine section).
bench_clockcost_SOURCES = bench/clockcost.c
# The cost of call stacks by depth (docs/PERFORMANCE.md, "Call stacks").
noinst_PROGRAMS += bench/stackdepth
bench_stackdepth_SOURCES = bench/stackdepth.c
bench_stackdepth_CFLAGS = $(AM_CFLAGS) -O2 -fomit-frame-pointer

# gpu-remote.sh captures the CUDA samples and PyTorch probes on a GPU machine
# and checks them here (see docs/GPU.md): gpu_blocks lists the GPU side of
# logs as JSON for gpu_check.py.
noinst_PROGRAMS += bench/gpu_blocks
bench_gpu_blocks_SOURCES = bench/gpu_blocks.c
bench_gpu_blocks_LDADD = libmemflow-analysis.la
bench_gpu_blocks_LDFLAGS = -no-install
# floor.sh: the least an exact analysis costs per event here (bench/floor:
# memflow's reader, and each free paired with its allocation), against
# what the whole wait's goals leave per event (docs/PERFORMANCE.md).
noinst_PROGRAMS += bench/floor
bench_floor_SOURCES = bench/floor.c
bench_floor_LDADD = libmemflow-analysis.la
bench_floor_LDFLAGS = -no-install
EXTRA_DIST += bench/floor.sh
bench-floor: all
	bash $(srcdir)/bench/floor.sh $(abs_top_builddir)

EXTRA_DIST += bench/run.sh bench/gpu-remote.sh bench/gpu_check.py bench/torch_probe.py \
	bench/faults.sh

# The Python front: a scope push + pop from Python (extension vs ctypes) and
# PyTorch module scopes per module call; `make bench-python` prints the
# tables of docs/PERFORMANCE.md.
EXTRA_DIST += bench/python_bench.py bench/python_scope.py bench/python_torch.py \
	bench/python_stacks.sh bench/python_stacks_allocs.py bench/python_stacks_torch.py
bench-python: all
	PYTHONPATH=$(abs_top_builddir)/python $(PYTHON) $(srcdir)/bench/python_scope.py
	PYTHONPATH=$(abs_top_builddir)/python $(PYTHON) $(srcdir)/bench/python_torch.py
	$(srcdir)/bench/python_stacks.sh $(abs_top_builddir)/memflow $(PYTHON)

# Sizes of the compact form's candidates and read speed of both forms
# (bench/compact.sh, `make bench-compact`).
noinst_PROGRAMS += bench/compact_bench
bench_compact_bench_SOURCES = bench/compact_bench.c
bench_compact_bench_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS)
bench_compact_bench_LDADD = libmemflow-analysis.la $(ZSTD_LIBS)
EXTRA_DIST += bench/compact.sh

bench: all
	bash $(srcdir)/bench/run.sh $(abs_top_builddir)

# `make bench-wait`: the user's whole wait under memflow run with the
# defaults (bench/wait.sh; docs/PERFORMANCE.md "The whole wait").
EXTRA_DIST += bench/wait.sh bench/python_train.py
bench-wait: all
	bash $(srcdir)/bench/wait.sh $(abs_top_builddir)

# `make bench-faults`: docs/RELIABILITY.md's figures (cost of a full disk,
# fault injection); it needs the test programs `make check` builds.
bench-faults: all
	$(MAKE) $(AM_MAKEFLAGS) $(check_PROGRAMS)
	bash $(srcdir)/bench/faults.sh $(abs_top_builddir)


# Call stacks by stack depth (bench/stackdepth.sh, `make bench-stacks`).
EXTRA_DIST += bench/stackdepth.sh
bench-stacks: all
	bash $(srcdir)/bench/stackdepth.sh $(abs_top_builddir)

# The log size at rest: bytes per event live and compact, the candidate
# forms, read speed of both (docs/PERFORMANCE.md "Log size at rest").
bench-compact: all
	bash $(srcdir)/bench/compact.sh $(abs_top_builddir)

# Instruction counts of the recording and the render (valgrind's callgrind):
# `make bench-instructions` for this tree, or bench/instructions.sh TREE...
# to compare commits (docs/PERFORMANCE.md "Instruction counts across commits").
EXTRA_DIST += bench/instructions.sh
bench-instructions: all
	sh $(srcdir)/bench/instructions.sh $(abs_top_builddir)

.PHONY: bench bench-python bench-faults bench-compact bench-stacks bench-wait bench-floor \
	bench-instructions \
	bench-import
EXTRA_DIST += bench/view.sh bench/view_browser.js bench/view_screenshot.sh bench/view_screenshot.js

# `make bench-import`: memflow import of generated PyTorch snapshots of 1 M
# and 4 M trace entries against pickle.load (bench/import.sh; docs/PERFORMANCE.md
# "memflow import: PyTorch snapshots").
EXTRA_DIST += bench/import.sh
bench-import: all
	$(MAKE) $(AM_MAKEFLAGS) tests/torch_snapshot_gen
	sh $(srcdir)/bench/import.sh $(abs_top_builddir)
