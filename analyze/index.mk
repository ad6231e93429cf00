# analyze/index.mk - the view index (analyze/index.h): built from the model's
# blocks in one streaming pass, kept beside the log, read by `memflow view`.
# Part of the analysis library.
libmemflow_analysis_la_SOURCES += analyze/index.h analyze/index_state.h analyze/index.c \
	analyze/index_build.c analyze/index_file.c analyze/index_query.c
