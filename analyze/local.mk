# analyze/ - the offline half: the log reader and the model the outputs read.
# Never loaded into a profiled program; the `memflow` command (and, for now,
# libmemflow-render) links it.
ANALYZE_SOURCES = \
	analyze/grow.h \
	analyze/chunk_source.c analyze/chunk_source.h \
	analyze/compact.c analyze/compact.h analyze/compact_source.c analyze/compact_layout.h \
	analyze/compact_codec.c analyze/compact_codec.h \
	analyze/log_reader.c analyze/log_reader.h \
	analyze/model.c analyze/model.h
# What the analysis links beyond libc: zstd (compact logs).
ANALYZE_CFLAGS = $(ZSTD_CFLAGS)
ANALYZE_LIBS = $(ZSTD_LIBS)
