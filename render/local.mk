# render/ - model, Cairo memory_flow renderer, Chrome trace, stats and CSV.
# Sources are part of libmemflow (memflow_dump renders in-process).
libmemflow_la_SOURCES += render/model.h render/svg.h render/outputs.h
libmemflow_la_SOURCES += render/escape.c render/escape.h
include render/svg.mk
