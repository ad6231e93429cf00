# analyze/ and render/ - the offline half, private to the `memflow` program
# (and the tests): the streaming reader (chunk source, live or compact;
# header, scan, merge), the model the outputs read, the statistics, the
# compaction of finished logs, the symbolisation of recorded stacks
# (symbols.c: elfutils libdwfl and libstdc++'s demangler) and every output.
# Never loaded into a profiled program: memflow_dump() and memflow_dumps()
# ask `memflow serve` instead.  A convenience library, not installed.
noinst_LTLIBRARIES += libmemflow-analysis.la
# Its folders, each on the include path (Makefile.am's AM_CPPFLAGS; headers
# are included by bare name): read/ the streaming reader (chunk sources,
# header, records, scan, merge, damage), compact/ the compact form at rest,
# model/ the model and its bounded parts, symbols/ stacks to sites,
# stats/ the statistics of a model, index/ the index `memflow view` answers
# from (built from the model's blocks in one streaming pass, kept beside the
# log); at the top, what all of them use and a
# whole log in memory for tests and tools (log_in_memory.c).
ANALYZE_INCLUDES = -I$(srcdir)/analyze -I$(srcdir)/analyze/read -I$(srcdir)/analyze/compact \
	-I$(srcdir)/analyze/model -I$(srcdir)/analyze/symbols -I$(srcdir)/analyze/stats \
	-I$(srcdir)/analyze/index
libmemflow_analysis_la_SOURCES = $(COMMON_SOURCES) \
	analyze/grow.c analyze/grow.h \
	analyze/idmap.c analyze/idmap.h \
	analyze/string_pool.c analyze/string_pool.h \
	analyze/log_in_memory.c analyze/log_in_memory.h \
	analyze/read/event.h \
	analyze/read/damage.c analyze/read/damage.h \
	analyze/read/chunk_source.c analyze/read/chunk_source.h \
	analyze/read/log_header.c analyze/read/log_header.h \
	analyze/read/record.c analyze/read/record.h \
	analyze/read/reader_internal.h analyze/read/log_scan.c \
	analyze/read/merge.c analyze/read/merge.h \
	analyze/read/reader.c analyze/read/reader.h \
	analyze/read/process_start.c analyze/read/process_start.h \
	analyze/compact/compact.c analyze/compact/compact.h analyze/compact/compact_source.c \
	analyze/compact/compact_layout.h \
	analyze/compact/compact_codec.c analyze/compact/compact_codec.h \
	analyze/model/series.c analyze/model/series.h \
	analyze/model/ranges.c analyze/model/ranges.h \
	analyze/model/tiles.c analyze/model/tiles.h \
	analyze/model/topk.c analyze/model/topk.h \
	analyze/model/live_table.c analyze/model/live_table.h \
	analyze/model/keyed.c analyze/model/keyed.h analyze/model/budget.h \
	analyze/model/steps.c analyze/model/steps.h \
	analyze/model/model.c analyze/model/model.h \
	analyze/model/model_blocks.c analyze/model/model_blocks.h \
	analyze/model/model_picture.c analyze/model/model_picture.h \
	analyze/model/worker.c analyze/model/worker.h \
	analyze/model/model_subblocks.c analyze/model/model_subblocks.h \
	analyze/model/model_oom.c analyze/model/model_oom.h \
	analyze/model/model_timeline.c analyze/model/model_timeline.h \
	analyze/model/model_load.c \
	analyze/stats/statistics.c analyze/stats/statistics.h \
	analyze/symbols/symbols.c analyze/symbols/symbols.h \
	analyze/symbols/sites.c analyze/symbols/sites.h \
	analyze/index/index.c analyze/index/index.h analyze/index/index_state.h \
	analyze/index/index_build.c analyze/index/index_cells.c analyze/index/index_file.c \
	analyze/index/index_query.c
libmemflow_analysis_la_CFLAGS = $(AM_CFLAGS) $(CAIRO_CFLAGS) $(LIBDW_CFLAGS) $(ZSTD_CFLAGS)
libmemflow_analysis_la_LIBADD = $(CAIRO_LIBS) $(LIBDW_LIBS) $(ZSTD_LIBS) -lstdc++ -lm
