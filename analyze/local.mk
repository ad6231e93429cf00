# analyze/ and render/ - the offline half, private to the `memflow` program
# (and the tests): the log reader, the model, the statistics and every
# output.  Never loaded into a profiled program: memflow_dump() and
# memflow_dumps() ask `memflow serve` instead.  A convenience library, not
# installed.
noinst_LTLIBRARIES += libmemflow-analysis.la
libmemflow_analysis_la_SOURCES = $(RUNTIME_SHARED_SOURCES) \
	analyze/grow.h \
	analyze/chunk_source.c analyze/chunk_source.h analyze/compact.h \
	analyze/log_reader.c analyze/log_reader.h \
	analyze/model.c analyze/model.h
libmemflow_analysis_la_CFLAGS = $(AM_CFLAGS) $(CAIRO_CFLAGS)
libmemflow_analysis_la_LIBADD = $(CAIRO_LIBS) -lm
