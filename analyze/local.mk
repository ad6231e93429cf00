# analyze/ and render/ - the offline half, private to the `memflow` program
# (and the tests): the log reader, the model, the statistics, the
# symbolisation of recorded stacks (symbols.c: elfutils libdwfl and
# libstdc++'s demangler) and every output.  Never loaded into a profiled
# program: memflow_dump() and memflow_dumps() ask `memflow serve` instead.
# A convenience library, not installed.
noinst_LTLIBRARIES += libmemflow-analysis.la
libmemflow_analysis_la_SOURCES = $(RUNTIME_SHARED_SOURCES) \
	analyze/grow.h \
	analyze/chunk_source.c analyze/chunk_source.h \
	analyze/compact.c analyze/compact.h analyze/compact_source.c analyze/compact_layout.h \
	analyze/compact_codec.c analyze/compact_codec.h \
	analyze/log_reader.c analyze/log_reader.h \
	analyze/model.c analyze/model.h \
	analyze/symbols.c analyze/symbols.h
libmemflow_analysis_la_CFLAGS = $(AM_CFLAGS) $(CAIRO_CFLAGS) $(LIBDW_CFLAGS) $(ZSTD_CFLAGS)
libmemflow_analysis_la_LIBADD = $(CAIRO_LIBS) $(LIBDW_LIBS) $(ZSTD_LIBS) -lstdc++ -lm
