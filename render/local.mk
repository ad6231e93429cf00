# render/ - model, Cairo memory_flow renderer, Chrome trace, stats and CSV.
# Sources are part of libmemflow (memflow_dump renders in-process).
libmemflow_la_SOURCES += render/model.h render/svg.h render/outputs.h
libmemflow_la_SOURCES += render/escape.c render/escape.h render/model.c \
	render/stats.c render/stats.h render/trace.c render/trace.h \
	render/csv.c render/csv.h render/outputs.c render/dump.c
include render/svg.mk
