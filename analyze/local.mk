# analyze/ - the offline half: the log reader and the model the outputs read.
# Never loaded into a profiled program; the `memflow` command (and, for now,
# libmemflow-render) links it.  symbols.c symbolises recorded stacks with
# elfutils libdwfl (LIBDW) and libstdc++'s demangler.
ANALYZE_SOURCES = \
	analyze/grow.h \
	analyze/chunk_source.c analyze/chunk_source.h analyze/compact.h \
	analyze/log_reader.c analyze/log_reader.h \
	analyze/model.c analyze/model.h \
	analyze/symbols.c analyze/symbols.h
