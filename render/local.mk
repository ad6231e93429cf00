# render/ - the outputs, written from the model: the Cairo memory_flow
# renderer (render/svg.mk), the Chrome trace, the statistics (one
# computation, analyze/stats/statistics.c; a table and a JSON formatter here),
# MXNet's CSV, through one sink and one escaping module, each written into
# a private new file renamed into place (outfile.c); outputs.c says which.
# Part of the analysis library (analyze/local.mk).
libmemflow_analysis_la_SOURCES += render/svg.h render/outputs.h \
	render/sink.c render/sink.h \
	render/escape.c render/escape.h render/units.c render/units.h \
	render/outfile.c render/outfile.h \
	render/stats.c render/stats.h render/stats_table.c render/stats_json.c \
	render/trace.c render/trace.h \
	render/csv.c render/csv.h render/outputs.c \
	render/flamegraph.c render/flamegraph.h
include render/svg.mk
