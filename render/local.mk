# render/ - the outputs, written from the model: the Cairo memory_flow
# renderer (render/svg.mk), the Chrome trace, the statistics (one
# computation, analyze/stats/statistics.c; one walk here, written as a table or
# JSON by an emitter),
# MXNet's CSV, through one sink and one escaping module, each written into
# a private new file renamed into place (outfile.c); outputs.c writes the
# rows of the one list of outputs, common/outputs_table.h (shared with the
# config check).  Part of the analysis library (analyze/local.mk).
libmemflow_analysis_la_SOURCES += render/svg.h render/outputs.h common/outputs_table.h \
	render/sink.c render/sink.h \
	render/escape.c render/escape.h render/units.c render/units.h \
	render/outfile.c render/outfile.h \
	render/stats.c render/stats.h render/stats_sections.c render/stats_gpu.c render/emitter.c render/emitter.h \
	render/chrome_trace.c render/chrome_trace.h \
	render/csv.c render/csv.h render/outputs.c \
	render/flamegraph.c render/flamegraph.h
include render/svg.mk
