# analyze/ and render/ - the offline half, private to the `memflow` program
# (and the tests): the streaming reader (chunk source, live or compact;
# header, scan, merge), the model the outputs read, the statistics, the
# compaction of finished logs, the symbolisation of recorded stacks
# (symbols.c: elfutils libdwfl and libstdc++'s demangler) and every output.
# Never loaded into a profiled program: memflow_dump() and memflow_dumps()
# ask `memflow serve` instead.  A convenience library, not installed.
noinst_LTLIBRARIES += libmemflow-analysis.la
libmemflow_analysis_la_SOURCES = $(COMMON_SOURCES) \
	analyze/grow.c analyze/grow.h \
	analyze/idmap.c analyze/idmap.h \
	analyze/string_pool.c analyze/string_pool.h \
	analyze/damage.c analyze/damage.h \
	analyze/event.h \
	analyze/chunk_source.c analyze/chunk_source.h \
	analyze/compact.c analyze/compact.h analyze/compact_source.c analyze/compact_layout.h \
	analyze/compact_codec.c analyze/compact_codec.h \
	analyze/log_header.c analyze/log_header.h \
	analyze/record.c analyze/record.h \
	analyze/reader_log.h analyze/log_scan.c \
	analyze/merge.c analyze/merge.h \
	analyze/reader.c analyze/reader.h \
	analyze/process_start.c analyze/process_start.h \
	analyze/log_reader.c analyze/log_reader.h \
	analyze/series.c analyze/series.h \
	analyze/ranges.c analyze/ranges.h \
	analyze/tiles.c analyze/tiles.h \
	analyze/topk.c analyze/topk.h \
	analyze/live_table.c analyze/live_table.h \
	analyze/model.c analyze/model.h analyze/model_state.h \
	analyze/model_blocks.c analyze/model_picture.c analyze/model_subblocks.c \
	analyze/model_trace.c \
	analyze/model_load.c \
	analyze/statistics.c analyze/statistics.h \
	analyze/symbols.c analyze/symbols.h \
	analyze/sites.c analyze/sites.h
libmemflow_analysis_la_CFLAGS = $(AM_CFLAGS) $(CAIRO_CFLAGS) $(LIBDW_CFLAGS) $(ZSTD_CFLAGS)
libmemflow_analysis_la_LIBADD = $(CAIRO_LIBS) $(LIBDW_LIBS) $(ZSTD_LIBS) -lstdc++ -lm
