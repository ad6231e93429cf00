# render/ - the outputs, written from the model: the Cairo memory_flow
# renderer (render/svg.mk), the Chrome trace, the statistics, MXNet's CSV
# and the one place that writes them into a folder (outputs.c).  Part of
# the analysis library (analyze/local.mk).
libmemflow_analysis_la_SOURCES += render/svg.h render/outputs.h \
	render/escape.c render/escape.h \
	render/stats.c render/stats.h render/trace.c render/trace.h \
	render/csv.c render/csv.h render/outputs.c
include render/svg.mk
