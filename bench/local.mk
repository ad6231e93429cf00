# bench/ - the benchmark: a malloc/free churn (bench/churn, a plain program
# with no memflow in it) timed unprofiled, with jemalloc alone, under
# `memflow run`, heaptrack and valgrind massif, plus `memflow render` of big
# logs.  Not part of `make check` (no timed tests): `make bench` runs it and
# prints the markdown tables that docs/PERFORMANCE.md reports.
noinst_PROGRAMS += bench/churn bench/timeit
bench_churn_SOURCES = bench/churn.c
bench_churn_CFLAGS = $(AM_CFLAGS) -pthread
bench_churn_LDFLAGS = -pthread
# The stopwatch run.sh times every command with (wall, CPU, max RSS).
bench_timeit_SOURCES = bench/timeit.c
# Sizes of the compact form's candidates and read speed of both forms
# (bench/compact.sh, `make bench-compact`).
noinst_PROGRAMS += bench/compact_bench
bench_compact_bench_SOURCES = bench/compact_bench.c
bench_compact_bench_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS)
bench_compact_bench_LDADD = libmemflow-render.la libmemflow.la $(ZSTD_LIBS)

# gpu-remote.sh captures the CUDA samples on a GPU machine (see docs/GPU.md).
EXTRA_DIST += bench/run.sh bench/gpu-remote.sh bench/compact.sh

bench: all
	bash $(srcdir)/bench/run.sh $(abs_top_builddir)

# The log size at rest: bytes per event live and compact, the candidate
# forms, read speed of both (docs/PERFORMANCE.md "Log size at rest").
bench-compact: all
	bash $(srcdir)/bench/compact.sh $(abs_top_builddir)

.PHONY: bench bench-compact
