# tests/render.mk - tests of the model, statistics, trace, CSV, in-process
# dump and the `memflow stats` / `memflow render` commands.
EXTRA_DIST += tests/render_gpu_expected.csv
if HAVE_CHECK
check_PROGRAMS += tests/check_escape tests/check_model tests/check_reader tests/check_parts
TESTS += tests/check_escape tests/check_model tests/check_reader tests/check_parts
tests_check_parts_SOURCES = tests/check_parts.c analyze/model/tiles.c analyze/model/topk.c \
	analyze/grow.c
tests_check_parts_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_parts_LDADD = $(CHECK_LIBS)
tests_check_reader_SOURCES = tests/check_reader.c
tests_check_reader_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_reader_LDADD = libmemflow-analysis.la libmemflow.la $(CHECK_LIBS)
tests_check_reader_LDFLAGS = $(TEST_LINK_FLAGS)
tests_check_escape_SOURCES = tests/check_escape.c
tests_check_escape_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_escape_LDADD = libmemflow-analysis.la libmemflow.la $(CHECK_LIBS)
tests_check_escape_LDFLAGS = $(TEST_LINK_FLAGS)
tests_check_model_SOURCES = tests/check_model.c
tests_check_model_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_model_LDADD = libmemflow-analysis.la libmemflow.la $(CHECK_LIBS)
tests_check_model_LDFLAGS = $(TEST_LINK_FLAGS)
endif
check_PROGRAMS += tests/render_gen tests/proc_workload
# built by make: bench/run.sh's serve part uses it too
noinst_PROGRAMS += tests/serve_feed
tests_proc_workload_SOURCES = tests/proc_workload.c
tests_serve_feed_SOURCES = tests/serve_feed.c
tests_serve_feed_LDADD = libmemflow.la
tests_serve_feed_LDFLAGS = $(TEST_LINK_FLAGS)
tests_render_gen_SOURCES = tests/render_gen.c
tests_render_gen_LDADD = libmemflow-analysis.la libmemflow.la
tests_render_gen_LDFLAGS = $(TEST_LINK_FLAGS) -pthread
TESTS += tests/render_cli.sh
EXTRA_DIST += tests/render_cli.sh
TESTS += tests/render_escape.sh tests/render_damage.sh tests/render_big.sh tests/render_safety.sh \
	tests/render_processes.sh tests/serve.sh tests/render_trace.sh
EXTRA_DIST += tests/render_escape.sh tests/render_damage.sh tests/render_big.sh \
	tests/render_safety.sh tests/render_processes.sh tests/serve.sh tests/serve_client.py \
	tests/render_trace.sh
# memflow run's analysis during the run: its outputs are those of memflow
# render of the finished logs (tests/run_analysis.sh)
check_PROGRAMS += tests/late_workload
tests_late_workload_SOURCES = tests/late_workload.c
tests_late_workload_LDADD = libmemflow.la
tests_late_workload_LDFLAGS = $(TEST_LINK_FLAGS) -pthread
TESTS += tests/run_analysis.sh tests/progress.sh
EXTRA_DIST += tests/run_analysis.sh tests/run_analysis.py tests/progress.sh
include $(srcdir)/tests/fuzz/fuzz.mk
include $(srcdir)/tests/sanitize.mk
