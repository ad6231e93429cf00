# common/torch/ - the safe streaming pickle reader (pickle.c) and the
# PyTorch memory snapshot walker over it (torch_snapshot.c), and the
# conversion of a snapshot into memflow records (torch_convert.c): the base of
# `memflow import` (the memflow program) and of the live path of the
# Python extension (python/binding.c), which both link this convenience
# library.  Plain C over libc (and compiler.h, log_format.h): no runtime,
# no analysis.
noinst_LTLIBRARIES += libmemflow-torch.la
TORCH_SOURCES = common/torch/pickle.c common/torch/pickle.h \
	common/torch/torch_convert.c common/torch/torch_convert.h common/torch/torch_grow.h \
	common/torch/torch_snapshot.c common/torch/torch_snapshot.h
libmemflow_torch_la_SOURCES = $(TORCH_SOURCES)
