# analyze/ - the offline half that computes: the streaming reader (chunk
# source, header, scan, merge) and the model the outputs read.  Never loaded
# into a profiled program; the `memflow` command (and, for now,
# libmemflow-render) links it.
ANALYZE_SOURCES = \
	analyze/grow.c analyze/grow.h \
	analyze/idmap.c analyze/idmap.h \
	analyze/string_pool.c analyze/string_pool.h \
	analyze/damage.c analyze/damage.h \
	analyze/event.h \
	analyze/chunk_source.c analyze/chunk_source.h analyze/compact.h \
	analyze/log_header.c analyze/log_header.h \
	analyze/record.c analyze/record.h \
	analyze/reader_log.h analyze/log_scan.c \
	analyze/merge.c analyze/merge.h \
	analyze/reader.c analyze/reader.h \
	analyze/log_reader.c analyze/log_reader.h \
	analyze/series.c analyze/series.h \
	analyze/ranges.c analyze/ranges.h \
	analyze/tiles.c analyze/tiles.h \
	analyze/topk.c analyze/topk.h \
	analyze/live_table.c analyze/live_table.h \
	analyze/model.c analyze/model.h analyze/model_state.h \
	analyze/model_blocks.c analyze/model_picture.c analyze/model_trace.c \
	analyze/model_load.c \
	analyze/statistics.c analyze/statistics.h
