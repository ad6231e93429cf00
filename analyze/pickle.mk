# analyze/pickle.mk - the safe streaming pickle reader (analyze/pickle.c)
# and the PyTorch memory snapshot walker over it (analyze/torch_snapshot.c),
# the base of `memflow import` and of the live path of the Python
# extension.  Plain C over libc (and compiler.h): both the memflow program
# and the extension compile the same two files.  A convenience library.
noinst_LTLIBRARIES += libmemflow-pickle.la
libmemflow_pickle_la_SOURCES = analyze/pickle.c analyze/pickle.h \
	analyze/torch_snapshot.c analyze/torch_snapshot.h
