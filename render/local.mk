# render/ - model, Cairo memory_flow renderer, Chrome trace, stats and CSV,
# and memflow_dump()/memflow_dumps().  libmemflow-render.so is a library of
# its own so that a profiled process loads Cairo only when it renders
# in-process: `memflow run` profiles with libmemflow.so alone, the memflow
# command renders with this library.
lib_LTLIBRARIES += libmemflow-render.la
libmemflow_render_la_SOURCES = $(ANALYZE_SOURCES) render/svg.h render/outputs.h
libmemflow_render_la_SOURCES += render/sink.c render/sink.h \
	render/escape.c render/escape.h render/units.c render/units.h \
	render/outfile.c render/outfile.h \
	render/stats.c render/stats.h render/stats_table.c render/stats_json.c \
	render/trace.c render/trace.h \
	render/csv.c render/csv.h render/outputs.c render/dump.c
libmemflow_render_la_CFLAGS = $(AM_CFLAGS) -pthread $(CAIRO_CFLAGS)
libmemflow_render_la_LIBADD = libmemflow.la $(CAIRO_LIBS) -lm
libmemflow_render_la_LDFLAGS = -version-info 0:0:0 -pthread
include render/svg.mk
